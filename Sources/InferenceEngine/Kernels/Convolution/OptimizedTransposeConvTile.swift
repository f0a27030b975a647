import CKernels

/// Float32 TRANSPOSE_CONV / Convolution2DTransposeBias whose windows tile the output exactly
/// (filter = stride, no padding: MediaPipe's 2×2 stride-2 upsampling that ends the selfie
/// segmenters): each output pixel is one dot product of an input pixel with one filter tap plus the
/// bias (ck_tconv_tile_f32). No column buffer, no col2im pass: the GEMM form padded this op's 4
/// columns to 16 and then copied every output once more.
struct OptimizedTransposeConvTileKernel: Kernel {
    let isa: Int32
    let geometry: ck_conv_geometry
    let batches: Int
    let inputIndex: Int, biasIndex: Int
    /// Filter rearranged to [tap * out_c + oc][in_c].
    let weights: [Float]
    let pieces: Int
    let floatMin: Float, floatMax: Float

    /// Nil unless the op tiles its output exactly and has at most CK_TCONV_TILE_MAX_J filter
    /// values per input pixel. `filter` is the op's [out_c][k_h][k_w][in_c] constant.
    init?(isa: Int32, geometry: ck_conv_geometry, batches: Int, filter: UnsafeRawBufferPointer,
          inputIndex: Int, biasIndex: Int, floatMin: Float, floatMax: Float) {
        let g = geometry
        let taps = Int(g.k_h) * Int(g.k_w), outputChannels = Int(g.out_c), inputChannels = Int(g.in_c)
        guard g.fitsImageKernels, batches > 0, g.k_h > 0, g.k_w > 0, g.stride_h == g.k_h, g.stride_w == g.k_w,
              g.pad_top == 0, g.pad_left == 0, Int(g.out_h) == Int(g.in_h) * Int(g.k_h), Int(g.out_w) == Int(g.in_w) * Int(g.k_w),
              inputChannels > 0, outputChannels > 0, taps * outputChannels <= Int(CK_TCONV_TILE_MAX_J),
              let base = filter.baseAddress, filter.count >= outputChannels * taps * inputChannels * 4 else { return nil }
        let source = base.assumingMemoryBound(to: Float.self)
        var rearranged = [Float](repeating: 0, count: taps * outputChannels * inputChannels)
        for oc in 0..<outputChannels {
            for t in 0..<taps {
                for ic in 0..<inputChannels {
                    rearranged[(t * outputChannels + oc) * inputChannels + ic] = source[(oc * taps + t) * inputChannels + ic]
                }
            }
        }
        self.isa = isa
        self.geometry = g
        self.batches = batches
        self.inputIndex = inputIndex
        self.biasIndex = biasIndex
        weights = rearranged
        pieces = max(1, min(Int(g.in_h), 16))
        self.floatMin = floatMin
        self.floatMax = floatMax
    }

    func run(_ io: KernelIO) {
        let input = io.input(inputIndex, as: Float.self)
        let bias: UnsafePointer<Float>? = io.hasInput(biasIndex) ? io.input(biasIndex, as: Float.self) : nil
        let output = io.output(0, as: Float.self)
        let inputStride = Int(geometry.in_h) * Int(geometry.in_w) * Int(geometry.in_c)
        let outputStride = Int(geometry.out_h) * Int(geometry.out_w) * Int(geometry.out_c)
        weights.withUnsafeBufferPointer { w in
            guard let wt = w.baseAddress else { return }
            io.forEachImageRows(batches: batches, rowCount: Int(geometry.in_h), pieces: pieces) { n, rows in
                var g = geometry
                ck_tconv_tile_f32(isa, &g, input + n * inputStride, wt, bias, output + n * outputStride,
                                  Int32(rows.lowerBound), Int32(rows.upperBound), floatMin, floatMax)
            }
        }
    }
}
