import CKernels

/// Loads the weights of a memory-bound float layer into L2 while an earlier, compute-bound one runs.
///
/// A classifier at the end of a network (MobileNet's 1×1 convolution of 256 features to 1,001
/// classes over a single pixel) reads every one of its weights once per invoke and does one
/// multiply–add per weight: 1 MB streamed from L3 at about 30 GB/s on this machine, 34 µs of a
/// 0.72 ms invoke at 1 thread, while the 1×1 layers a few operators earlier keep their 64 KB of
/// weights and activations in L2 and are bound by their FMAs. Each reduction step of such a
/// layer's AVX-512 tiles then issues one prefetch of the classifier's packed weights
/// (``ck_conv_f32_prefetching``), so the lines arrive while the FMAs run.
///
/// The host's own pieces prefetch only at 1 thread: with several, its pieces (split by pixels) would
/// pull the lines into the L2 of whichever core ran them, and the target's pieces (split by channel
/// blocks) would read them from there. At 2 or more threads the host prefetches when it runs as
/// half of a depthwise → 1×1 pair (``BandChains``): each thread then brings in the share of the
/// target's weights it computes there. Prefetches change no result.
enum WeightPrefetch {
    /// A target's packed weights are at least this large (smaller ones come from L2 or L3 quickly).
    static let minimumTargetBytes = 256 << 10
    /// A target computes at most this many output pixels per invoke (it streams its weights).
    static let maximumTargetPixels = 4
    /// A host's packed weights fit in L2 beside its activations.
    static let maximumHostBytes = 128 << 10
    /// A host is at least this many operators before its target (the lines need time to arrive),
    /// and at most `maximumDistance`.
    static let minimumDistance = 3
    static let maximumDistance = 12

    /// Gives each target in `prepared` the nearest host before it that has enough reduction steps
    /// to prefetch all of the target's weights; returns the pairs' node indices.
    static func plan(_ prepared: inout [ResidualFusion.Entry]) -> [(host: Int, target: Int)] {
        var pairs: [(host: Int, target: Int)] = []
        for target in prepared.indices {
            guard let t = prepared[target].kernel as? OptimizedConvFloatKernel, t.firstLayer == nil,
                  t.batches * Int(t.geometry.out_h) * Int(t.geometry.out_w) <= maximumTargetPixels,
                  t.packed.count * 4 >= minimumTargetBytes else { continue }
            let lines = (t.packed.count * 4 + 63) / 64
            let nearest = target - minimumDistance, farthest = max(0, target - maximumDistance)
            guard nearest >= farthest else { continue }
            for host in stride(from: nearest, through: farthest, by: -1) {
                guard var h = prepared[host].kernel as? OptimizedConvFloatKernel, h.prefetch == nil,
                      h.packed.count * 4 <= maximumHostBytes, h.prefetchSteps >= lines else { continue }
                h.prefetch = t.packed
                prepared[host].kernel = h
                pairs.append((prepared[host].op, prepared[target].op))
                break
            }
        }
        return pairs
    }
}

extension OptimizedConvFloatKernel {
    /// Reduction steps of this convolution's AVX-512 wide 1×1 tiles per invoke (each can prefetch
    /// one line): 0 when it does not run them (a first layer, a residual epilogue, filters larger than
    /// 1×1, short reductions that take the register-held path, or fewer than 2 channel blocks).
    var prefetchSteps: Int {
        let g = geometry
        let direct = g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 && g.pad_left == 0
            && g.in_h == g.out_h && g.in_w == g.out_w
        let k = Int(g.in_c), pixels = Int(g.out_h) * Int(g.out_w)
        guard isa >= Int32(CK_ISA_AVX512), firstLayer == nil, residual == nil, direct, k > 16, k <= 256, pixels >= 12
        else { return 0 }
        let pairs = Int(g.out_c) / Int(CK_F32_NR) / 2
        return batches * (pixels / 6) * pairs * k
    }
}
