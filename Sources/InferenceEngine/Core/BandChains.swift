import CKernels
import TFLiteFormat

/// Runs a MobileNet v2 inverted residual block — float 1×1 expansion, depthwise convolution, 1×1
/// projection (its residual ADD folded in or not) — as one operator that goes down the image in
/// bands of ``bandRows`` output rows: for each band, every layer computes the rows the next layer's
/// band reads, then the next layer, the two inner tensors kept in small windows of their memory
/// (``BandChainKernel/ringRows``). With several threads each takes an equal share of the output
/// pixels, in windows of its own (see ``BandChainKernel/run(_:)``). And a short depthwise layer
/// (float, or 8-bit with the 1×1 layer on the byte path reading its input in place) with the 1×1
/// convolution after it (under ``ParallelRunner/shortOperatorWork``
/// together) as one operator whose threads each run their rows of both: the 1×1 layer reads only
/// its own pixels, so there is no join between the two and no depthwise output crosses cores
/// (2 threads: mobilenet_v1_0.25 float 0.437 → 0.422 ms, BlazeFace 0.452 → 0.430 ms, selfie
/// segmentation 1.19 → 1.17 ms; at 1 thread the two run one after the other as before). Likewise a
/// run of 1×1 layers each reading the one before, split by pixels (DeepLab's head, 160→256→256→21
/// with the image-pooling projection folded in, at 2 threads: 0.821 → 0.806 ms, two joins and the
/// waits at them gone). The 8-bit pairs and runs take tf2_mobilenet_v2 at 2 threads from 67
/// operators to 54 (13 joins fewer); on this noisy machine that measured 1–3% faster in the
/// fastest invokes of 30–60 alternating pairs of runs, within the noise in their medians
/// (docs/PERFORMANCE.md, session 21). The 3-layer windowed blocks stay float-only.
///
/// Run one after the other, the layers pass whole tensors through memory (DeepLab's 33 × 33 × 480:
/// 2 MB each, as large as this core's L2), and each layer reads its input back from L3. In bands,
/// each tensor is read while its band is still in L2, and in windows the bands write the same few
/// hundred kilobytes over and over instead of fetching every line of two 2 MB tensors before
/// writing it (deeplabv3 at 1 thread 10.44 → 9.74 ms with the depthwise changes of the same
/// session; the 80→480→80 blocks 1.28 → 1.19 ms). Every output is computed by the same kernels
/// over the same values, so results are bitwise those of the layers run one after the other, at
/// any thread count.
///
/// Planned after the other folds, on three consecutive prepared operators where each reads the
/// previous one's only output and nothing else reads it, when the expanded tensor is at least
/// ``minimumLinkBytes``. Measured in a C harness of DeepLab's blocks (median of 400 runs):
/// 80→480→80 with dilation 2 1343 → 1261 µs and dilation 4 1347 → 1266 µs, 48→288→48 520 → 506 µs,
/// 32→192→32 (836 KB passed along) unchanged there; in the whole model, with the per-thread
/// windows of later sessions, banding the 32→192→32 blocks too made deeplabv3 0.6% faster at
/// 1 thread (9.998 → 9.934 ms) and 0.8% at 2 (5.339 → 5.297 ms), medians of 6–8 interleaved rounds;
/// the selfie and BlazeFace models unchanged (their blocks are smaller or already banded).
enum BandChains {
    /// Smallest expanded tensor that makes a block worth banding.
    static let minimumLinkBytes = 800 << 10
    /// Output rows of the block's last layer per band.
    static let bandRows = 4

    /// Replaces each inverted residual block of `prepared` that qualifies by one banded operator.
    /// `names`: each operator's name by its index in the subgraph.
    ///
    /// Only whole blocks (1×1, depthwise, 1×1) are banded. Other chains measured no better or
    /// worse (deeplabv3 at 1 thread, 40-run medians): DeepLab's 1×1 head (160→256→256→21) 1.635 ms
    /// either way; chains of up to 3 layers taken greedily from the first layer (which cut the
    /// first block in two) 0.09 ms slower over the first two blocks; longer chains (up to 6
    /// layers: every band goes through all their weights) 10.95–11.04 → 11.07–11.08 ms.
    static func plan(_ prepared: inout [ResidualFusion.Entry], tensors: [TensorInfo], readers: ReaderCounts,
                     graphOutputs: Set<Int>, graph: Subgraph, names: (Int) -> String) {
        func isPrivate(_ tensor: Int) -> Bool {
            tensor >= 0 && tensor < tensors.count && readers[tensor] == 1 && !graphOutputs.contains(tensor)
                && !graph.tensors[tensor].isVariable
        }
        func stage(_ entry: ResidualFusion.Entry) -> BandStage? {
            guard entry.scratch == 0, entry.outputs.count == 1 else { return nil }
            if let conv = entry.kernel as? OptimizedConvFloatKernel, conv.isPointwise { return .pointwise(conv) }
            if let depthwise = entry.kernel as? OptimizedDepthwiseFloatKernel, depthwise.batches == 1 { return .depthwise(depthwise) }
            if let conv = entry.kernel as? OptimizedQuantizedConvKernel, conv.isPointwise { return .quantizedPointwise(conv) }
            if let depthwise = entry.kernel as? OptimizedQuantizedDepthwiseKernel, depthwise.batches == 1 {
                return .quantizedDepthwise(depthwise)
            }
            return nil
        }
        // Each entry's stage, once (the casts and the entries' copies were a third of the pass's
        // time), kept in step with `prepared` below.
        var stages = prepared.map(stage)
        var i = 0
        while i + 2 < prepared.count {
            let chain = prepared[i...i + 2]
            // (A layer that prefetches a later layer's weights at 1 thread is not banded: the bands
            // run without the prefetch.)
            guard let expand = stages[i], case .pointwise(let e) = expand, e.prefetch == nil,
                  let depthwise = stages[i + 1], case .depthwise = depthwise,
                  let project = stages[i + 2], case .pointwise(let p) = project, p.prefetch == nil,
                  zip(chain.dropLast(), chain.dropFirst()).allSatisfy({ $1.inputs.first == $0.outputs[0] && isPrivate($0.outputs[0]) }),
                  tensors[prepared[i].outputs[0]].byteCount >= minimumLinkBytes
            else {
                i += 1
                continue
            }
            let kernel = BandChainKernel(stages: [expand, depthwise, project], operands: chain.flatMap { [$0.inputs, $0.outputs] },
                                         operatorNames: chain.map { names($0.op) })
            // The node reads what the layers read from outside the block and writes every layer's output.
            let inputs = chain.enumerated().flatMap { $0.offset == 0 ? $0.element.inputs : Array($0.element.inputs.dropFirst()) }
            prepared[i] = (op: prepared[i].op, inputs: inputs, outputs: chain.flatMap(\.outputs), kernel: kernel, scratch: 0)
            prepared.removeSubrange(i + 1...i + 2)
            stages[i] = nil
            stages.removeSubrange(i + 1...i + 2)
            i += 1
        }
        // Short depthwise → 1×1 pairs: at 2 or more threads each thread runs its rows of both, with
        // no join between them (the 1×1 layer reads only its own pixels of the depthwise output);
        // at 1 thread each layer runs whole, a weight prefetch included.
        i = 0
        while i + 1 < prepared.count {
            let pair = prepared[i...i + 1]
            guard let depthwise = stages[i], depthwise.isDepthwise,
                  let pointwise = stages[i + 1], pointwise.isPointwise,
                  prepared[i + 1].inputs.first == prepared[i].outputs[0], isPrivate(prepared[i].outputs[0]),
                  depthwise.work + pointwise.work < ParallelRunner.shortOperatorWork
            else {
                i += 1
                continue
            }
            let kernel = BandChainKernel(stages: [depthwise, pointwise], operands: pair.flatMap { [$0.inputs, $0.outputs] },
                                         operatorNames: pair.map { names($0.op) }, rowsPerThread: true)
            let inputs = prepared[i].inputs + prepared[i + 1].inputs.dropFirst()
            prepared[i] = (op: prepared[i].op, inputs: inputs, outputs: pair.flatMap(\.outputs), kernel: kernel, scratch: 0)
            prepared.remove(at: i + 1)
            stages[i] = nil
            stages.remove(at: i + 1)
            i += 1
        }
        // Runs of 1×1 layers, each reading the one before it: at 2 or more threads each thread
        // runs its share of the pixels through all of them, with no join between the layers (each
        // reads only its own pixels of the one before); at 1 thread each layer runs whole.
        i = 0
        while i + 1 < prepared.count {
            var end = i
            while end + 1 < prepared.count, let a = stages[end], a.isPointwise,
                  let b = stages[end + 1], b.isPointwise,
                  prepared[end + 1].inputs.first == prepared[end].outputs[0], isPrivate(prepared[end].outputs[0]) {
                end += 1
            }
            guard end > i else {
                i += 1
                continue
            }
            let run = prepared[i...end]
            let kernel = BandChainKernel(stages: stages[i...end].compactMap { $0 }, operands: run.flatMap { [$0.inputs, $0.outputs] },
                                         operatorNames: run.map { names($0.op) }, rowsPerThread: true)
            let inputs = run.enumerated().flatMap { $0.offset == 0 ? $0.element.inputs : Array($0.element.inputs.dropFirst()) }
            prepared[i] = (op: prepared[i].op, inputs: inputs, outputs: run.flatMap(\.outputs), kernel: kernel, scratch: 0)
            prepared.removeSubrange(i + 1...end)
            stages[i] = nil
            stages.removeSubrange(i + 1...end)
            i += 1
        }
    }
}

/// A layer of a ``BandChains`` chain.
enum BandStage: Sendable {
    case pointwise(OptimizedConvFloatKernel)
    case depthwise(OptimizedDepthwiseFloatKernel)
    /// An 8-bit 1×1 layer on the byte path that reads its input in place (no scratch).
    case quantizedPointwise(OptimizedQuantizedConvKernel)
    case quantizedDepthwise(OptimizedQuantizedDepthwiseKernel)

    /// A 1×1 layer (float or 8-bit).
    var isPointwise: Bool {
        switch self {
        case .pointwise, .quantizedPointwise: true
        case .depthwise, .quantizedDepthwise: false
        }
    }

    /// A depthwise layer (float or 8-bit).
    var isDepthwise: Bool { !isPointwise }

    /// Multiply-accumulates of one invoke (float or 8-bit alike, as the kernels' own
    /// ``ParallelRunner/isShort(work:)`` counts them).
    var work: Int {
        let g = geometry
        switch self {
        case .pointwise(let k): return k.work
        case .quantizedPointwise: return Int(g.out_h) * Int(g.out_w) * Int(g.out_c) * Int(g.in_c)
        case .depthwise, .quantizedDepthwise: return Int(g.out_h) * Int(g.out_w) * Int(g.out_c) * Int(g.k_h) * Int(g.k_w)
        }
    }

    var geometry: ck_conv_geometry {
        switch self {
        case .pointwise(let k): k.geometry
        case .depthwise(let k): k.geometry
        case .quantizedPointwise(let k): k.geometry
        case .quantizedDepthwise(let k): k.geometry
        }
    }

    var outputRows: Int { Int(geometry.out_h) }
    var outputWidth: Int { Int(geometry.out_w) }
    var outputPixels: Int { outputRows * outputWidth }
    /// Bytes of one output element.
    var elementBytes: Int {
        switch self {
        case .pointwise, .depthwise: 4
        case .quantizedPointwise, .quantizedDepthwise: 1
        }
    }
    /// Bytes of one output row.
    var outputRowBytes: Int { elementBytes * outputWidth * Int(geometry.out_c) }

    /// Input rows that output rows [0, rows) read.
    func inputRows(forOutputRows rows: Int) -> Int {
        guard isDepthwise else { return rows }
        let g = geometry
        guard rows > 0 else { return 0 }
        return min(Int(g.in_h), max(0, (rows - 1) * Int(g.stride_h) - Int(g.pad_top) + (Int(g.k_h) - 1) * Int(g.dil_h) + 1))
    }

    /// The first input row output row `row` reads (at most).
    func firstInputRow(forOutputRow row: Int) -> Int {
        guard isDepthwise else { return row }
        return max(0, row * Int(geometry.stride_h) - Int(geometry.pad_top))
    }

    /// Output rows `rows` on the calling thread (`prefetchShare`: see
    /// ``OptimizedConvFloatKernel/runPixels(_:_:prefetchShare:)``; `ringRows`: a float depthwise
    /// layer's input holds row y at y mod ringRows, see ``ck_dwconv_f32_ring``; 8-bit chains run
    /// without windows).
    func run(_ io: KernelIO, rows: Range<Int>, prefetchShare: (piece: Int, pieces: Int)? = nil, ringRows: Int = 0) {
        let width = Int(geometry.out_w)
        switch self {
        case .pointwise(let k):
            k.runPixels(io, rows.lowerBound * width..<rows.upperBound * width, prefetchShare: prefetchShare)
        case .depthwise(let k): k.runRows(io, rows, ringRows: ringRows)
        case .quantizedPointwise(let k): k.runPixels(io, rows.lowerBound * width..<rows.upperBound * width)
        case .quantizedDepthwise(let k): k.runRows(io, rows)
        }
    }

    /// Output pixels `pixels` of a 1×1 layer on the calling thread (nothing for a depthwise layer).
    func runPixels(_ io: KernelIO, _ pixels: Range<Int>, prefetchShare: (piece: Int, pieces: Int)? = nil) {
        switch self {
        case .pointwise(let k): k.runPixels(io, pixels, prefetchShare: prefetchShare)
        case .quantizedPointwise(let k): k.runPixels(io, pixels)
        case .depthwise, .quantizedDepthwise: return
        }
    }

    /// The whole layer, split over the interpreter's threads.
    func run(_ io: KernelIO) {
        switch self {
        case .pointwise(let k): k.run(io)
        case .depthwise(let k): k.run(io)
        case .quantizedPointwise(let k): k.run(io)
        case .quantizedDepthwise(let k): k.run(io)
        }
    }
}

/// The layers of a ``BandChains`` chain, each run with its own operands (tensor indices kept from
/// their nodes).
///
/// A class: run by both threads at once, the struct it was got copied several times per piece, a
/// retain of each of its arrays on the same counters from both threads (mobilenet_v1_0.25 float
/// at 2 threads 0.4154 → 0.4126 ms, docs/PERFORMANCE.md, session 28).
final class BandChainKernel: Kernel, FusedKernel {
    let stages: [BandStage]
    /// Tensor indices: each layer's inputs, then its outputs, layer after layer.
    let operands: ContiguousArray<Int32>
    /// Per layer: input count, output count.
    let counts: [Int]
    let operatorNames: [String]
    /// Each layer after the first reads only the same rows of the layer before (a depthwise layer
    /// and the 1×1 after it): with several threads, each runs its rows of every layer, no join
    /// between the layers; with one, the layers run one after the other. Otherwise (an inverted
    /// residual block): bands (see ``run(_:)``).
    let rowsPerThread: Bool
    /// Every stage is a 1×1 layer (a run of them, split by pixels instead of rows).
    let pointwiseOnly: Bool
    /// An inverted residual block's window: the rows of the expanded tensor a band (of each thread)
    /// keeps in that tensor's memory, row y at y mod ringRows; 0: no windows (the whole tensor, row
    /// y at y).
    let ringRows: Int
    /// Expanded rows the depthwise layer reads beyond a band's own (per piece of rows at several
    /// threads, each piece computes these again).
    let haloRows: Int

    init(stages: [BandStage], operands: [[Int]], operatorNames: [String], rowsPerThread: Bool = false) {
        self.stages = stages
        self.operands = ContiguousArray(operands.joined().map { Int32($0) })
        counts = operands.map(\.count)
        self.operatorNames = operatorNames
        self.rowsPerThread = rowsPerThread
        pointwiseOnly = stages.allSatisfy(\.isPointwise)
        ringRows = rowsPerThread ? 0 : Self.ringRows(stages)
        if case .depthwise(let k) = stages[1] { haloRows = (Int(k.geometry.k_h) - 1) * Int(k.geometry.dil_h) } else { haloRows = 0 }
    }

    /// Short pairs and runs of 1×1 layers: at several threads, one forEach (see ``run(_:)``).
    var runsInOneSplit: Bool { rowsPerThread }

    /// Bytes of one thread's window (``ParallelRunner/window(_:bytes:)``): ``ringRows`` expanded
    /// rows, then one band of depthwise output rows (0 without windows; a short pair's are
    /// ``pairWindowBytes``).
    var windowSlabBytes: Int {
        guard ringRows > 0, stages.count == 3 else { return 0 }
        return ConvolutionSupport.align(ringRows * stages[0].outputRowBytes) + BandChains.bandRows * stages[1].outputRowBytes
    }

    /// Most output rows of a depthwise → 1×1 pair whose rows do not split evenly between the
    /// threads that run it in equal shares of the pixels (runPairPiece; taller ones split by rows
    /// lose little to the odd row).
    static let pairSplitMaxRows = 16

    /// Whether a pair of `rows` rows run by `threads` threads splits by pixels (its rows do not
    /// divide among the pieces) rather than by rows.
    static func pairSplitsByPixels(rows: Int, threads: Int) -> Bool {
        threads > 1 && rows > 0 && rows % min(rows, threads) != 0
    }

    /// A depthwise → 1×1 pair of at most ``pairSplitMaxRows`` rows: the depthwise rows of a share
    /// of half the pixels or less (at 2 or more threads), plus the row it shares with the share
    /// before; else 0.
    var pairWindowBytes: Int {
        guard rowsPerThread, stages.count == 2, stages[0].isDepthwise, stages[1].isPointwise else { return 0 }
        let rows = stages[0].outputRows
        guard rows > 1, rows <= Self.pairSplitMaxRows else { return 0 }
        return ConvolutionSupport.align(((rows + 1) / 2 + 1) * stages[0].outputRowBytes)
    }

    /// The most rows of the expanded tensor one band of `stages` (1×1, depthwise, 1×1) reads: from
    /// the first its depthwise rows read to the last the expansion has computed, or 0 when that is
    /// the whole tensor.
    static func ringRows(_ stages: [BandStage]) -> Int {
        guard stages.count == 3, case .pointwise = stages[0], case .depthwise(let k) = stages[1], case .pointwise = stages[2]
        else { return 0 }
        let g = k.geometry
        let window = (BandChains.bandRows - 1) * Int(g.stride_h) + (Int(g.k_h) - 1) * Int(g.dil_h) + 1
        return window < stages[0].outputRows ? window : 0
    }

    /// An inverted residual block with a window (``ringRows``) runs in bands: at one thread over
    /// the whole image; at several, each thread over an equal share of the output pixels with
    /// windows of its own in the inner tensors' memory. A thread computes the expanded rows its
    /// depthwise rows read beyond its share again (its halo) when those are few (at most 1/16 of the
    /// image per thread: DeepLab's 129-row block at 2 threads 0.18–0.19 → 0.13 ms, the 65-row one
    /// 0.16 → 0.14–0.15 ms); otherwise the expansion first runs whole, each thread its share of the
    /// pixels, and the bands then read it (the 33-row blocks, dilated by 2 and 4: computing their
    /// halo again was 2–5% slower than the layers run one after the other, this as fast or slightly
    /// faster).
    /// Exchanging the halo rows between the threads instead (each computing the rows the other
    /// reads first, then copying them) measured no faster.
    func run(_ io: KernelIO) {
        let n = stages.count
        guard counts.count == 2 * n else { return }
        operands.withUnsafeBufferPointer { indices in
            guard let base = indices.baseAddress else { return }
            withUnsafeTemporaryAllocation(of: Int.self, capacity: 3 * n) { scratch in
                guard let s = scratch.baseAddress else { return }
                let starts = s, done = s + n, needed = s + 2 * n
                var at = 0
                for k in 0..<n {
                    starts[k] = at
                    at += counts[2 * k] + counts[2 * k + 1]
                    done[k] = 0
                }
                func part(_ k: Int) -> KernelIO {
                    let inputs = base + starts[k]
                    return KernelIO(tensors: io.tensors, inputIndices: inputs, inputCount: counts[2 * k],
                                    outputIndices: inputs + counts[2 * k], outputCount: counts[2 * k + 1], scratch: nil,
                                    parallel: io.parallel)
                }
                if rowsPerThread {
                    guard io.parallel.threadCount > 1 else {
                        for k in 0..<n { stages[k].run(part(k)) }
                        return
                    }
                    if pointwiseOnly {
                        // 1×1 layers: equal shares of the pixels (each layer's tiles compute every
                        // pixel the same way whatever the share).
                        let pixels = stages[0].outputPixels, pieces = min(pixels, io.parallel.threadCount)
                        io.parallel.forEach(pieces) { piece in
                            let range = ConvolutionSupport.range(piece: piece, of: pieces, count: pixels)
                            for k in 0..<n {
                                stages[k].runPixels(part(k), range, prefetchShare: (piece, pieces))
                            }
                        }
                        return
                    }
                    let rows = stages[0].outputRows, pieces = min(rows, io.parallel.threadCount)
                    if n == 2, Self.pairSplitsByPixels(rows: rows, threads: io.parallel.threadCount), pairWindowBytes > 0,
                       io.parallel.window(0, bytes: pairWindowBytes) != nil {
                        // Rows that do not split evenly (7 at 2 threads: 4 and 3): equal shares of
                        // the pixels instead (see runPairPiece).
                        let pixels = stages[1].outputPixels
                        io.parallel.forEach(pieces) { piece in
                            runPairPiece(io, indices: base, starts: starts,
                                         pixels: ConvolutionSupport.range(piece: piece, of: pieces, count: pixels), piece: piece, of: pieces)
                        }
                        return
                    }
                    // A 1×1 layer that prefetches a later layer's weights (WeightPrefetch) brings in the
                    // share of them this piece's thread computes there: each thread starts with its
                    // own share of that layer's pieces, in order (mobilenet_v1's classifier at 2
                    // threads 11 → 7 µs, the model 0.416 → 0.409 ms).
                    io.parallel.forEach(pieces) { piece in
                        let range = ConvolutionSupport.range(piece: piece, of: pieces, count: rows)
                        for k in 0..<n { stages[k].run(part(k), rows: range, prefetchShare: (piece, pieces)) }
                    }
                    return
                }
                let threads = io.parallel.threadCount
                if ringRows > 0, threads == 1 || threads * haloRows * 16 <= stages[0].outputRows,
                   threads * ringRows <= stages[0].outputRows, threads * BandChains.bandRows <= stages[1].outputRows {
                    let pixels = stages[n - 1].outputPixels
                    guard threads > 1 else {
                        runInWindows(io, indices: base, starts: starts, pixels: 0..<pixels, slab: 0)
                        return
                    }
                    io.parallel.forEach(threads) { piece in
                        runInWindows(io, indices: base, starts: starts, pixels: ConvolutionSupport.range(piece: piece, of: threads, count: pixels),
                                     slab: piece)
                    }
                    return
                }
                if ringRows > 0, threads > 1, threads * BandChains.bandRows <= stages[1].outputRows,
                   case .pointwise(let expansion) = stages[0] {
                    // Each piece's halo would cost too much to compute twice: the expansion runs
                    // whole, each thread its share of the pixels, then each thread takes its share
                    // of the output pixels in bands, the depthwise output in a window of its own.
                    let expandedPixels = stages[0].outputPixels, pixels = stages[n - 1].outputPixels
                    io.parallel.forEach(threads) { piece in
                        expansion.runPixels(part(0), ConvolutionSupport.range(piece: piece, of: threads, count: expandedPixels))
                    }
                    io.parallel.forEach(threads) { piece in
                        runInWindows(io, indices: base, starts: starts, pixels: ConvolutionSupport.range(piece: piece, of: threads, count: pixels),
                                     slab: piece, expanded: true)
                    }
                    return
                }
                guard threads == 1 else {
                    for k in 0..<n { stages[k].run(part(k)) }
                    return
                }
                let rows = stages[n - 1].outputRows
                var end = 0
                while end < rows {
                    end = min(rows, end + BandChains.bandRows)
                    needed[n - 1] = end
                    for k in stride(from: n - 2, through: 0, by: -1) { needed[k] = stages[k + 1].inputRows(forOutputRows: needed[k + 1]) }
                    for k in 0..<n where needed[k] > done[k] {
                        stages[k].run(part(k), rows: done[k]..<needed[k])
                        done[k] = needed[k]
                    }
                }
            }
        }
    }
}

extension BandChainKernel {
    /// Runs `body` with a table of its own of the stages' operand memory (entry i: operand i's,
    /// which the body may move) and `part(k)`, stage k's KernelIO over that table.
    fileprivate func withOperandTable(_ io: KernelIO, indices: UnsafePointer<Int32>, starts: UnsafeMutablePointer<Int>,
                                      _ body: (_ table: UnsafeMutablePointer<UnsafeMutableRawPointer>, _ part: (Int) -> KernelIO) -> Void) {
        let count = operands.count
        withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer.self, capacity: count) { table in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: count) { local in
                guard let t = table.baseAddress, let l = local.baseAddress else { return }
                for i in 0..<count {
                    t[i] = io.tensors[Int(indices[i])]
                    l[i] = Int32(i)
                }
                body(t) { k in
                    KernelIO(tensors: UnsafePointer(t), inputIndices: l + starts[k], inputCount: counts[2 * k],
                             outputIndices: l + starts[k] + counts[2 * k], outputCount: counts[2 * k + 1], scratch: nil,
                             parallel: io.parallel)
                }
            }
        }
    }

    /// One share of a depthwise → 1×1 pair split by pixels (`pixels` of the 1×1 output, the
    /// share `piece` of `pieces`): the depthwise rows those pixels read, then the 1×1 layer over
    /// them. A share that starts within a row has that row computed by the share before it too:
    /// it computes its rows into its own window (the thread's, ``ParallelRunner/window(_:bytes:)``)
    /// and its 1×1 pixels read them there, so no two threads write the same row of the depthwise
    /// output, and every value is that of the layers run whole (the same kernels over the same
    /// rows and pixels). mobilenet_v1_0.25 float at 2 threads: its two 7 × 7 pairs took 4 rows of
    /// 7 on one thread, 57% of the work.
    fileprivate func runPairPiece(_ io: KernelIO, indices: UnsafePointer<Int32>, starts: UnsafeMutablePointer<Int>,
                                  pixels: Range<Int>, piece: Int, of pieces: Int) {
        let width = stages[1].outputWidth
        guard !pixels.isEmpty, width > 0 else { return }
        let rows = pixels.lowerBound / width..<(pixels.upperBound + width - 1) / width
        let shared = pixels.lowerBound % width != 0
        // (The caller has checked that every thread has a window of pairWindowBytes.)
        let window = shared ? io.parallel.window(piece, bytes: pairWindowBytes) : nil
        withOperandTable(io, indices: indices, starts: starts) { t, part in
            if let window {
                // Row y of the depthwise output at window + (y - first row) rows.
                let shifted = window - rows.lowerBound * stages[0].outputRowBytes
                t[starts[0] + counts[0]] = shifted
                t[starts[1]] = shifted
            }
            stages[0].run(part(0), rows: rows)
            stages[1].runPixels(part(1), pixels, prefetchShare: (piece, pieces))
        }
    }

    /// The block in bands (at one thread, or one thread's share) with its two inner tensors kept
    /// small (windows `slab` of their memory, one per thread): the expansion writes
    /// row y of the expanded tensor at y mod ``ringRows`` of that tensor's memory, and the depthwise
    /// layer writes each band at the start of its output's memory, where the projection reads it.
    /// The bands then write and read the same few hundred kilobytes over and over, which stay in L2,
    /// instead of walking two 2 MB tensors whose lines have to be fetched before being written
    /// (DeepLab's 80→480→80 blocks: see ``BandChains``). Only the block's output is complete after
    /// the node; its inner tensors are private to it (read by nothing else, not model outputs).
    ///
    /// `pixels`: the block's output pixels this call computes; their rows' depthwise rows are
    /// computed whole (a row shared with another thread's pixels by both), so threads can split the
    /// projection at any pixel and take equal shares.
    fileprivate func runInWindows(_ io: KernelIO, indices: UnsafePointer<Int32>, starts: UnsafeMutablePointer<Int>,
                                  pixels: Range<Int>, slab: Int, expanded alreadyExpanded: Bool = false) {
        let width = stages[2].outputWidth
        guard !pixels.isEmpty, width > 0, case .pointwise(let projection) = stages[2] else { return }
        let rows = pixels.lowerBound / width..<(pixels.upperBound + width - 1) / width
        // The stages' operands through a table of their own: the expanded and filtered tensors'
        // entries moved per band.
        withOperandTable(io, indices: indices, starts: starts) { t, part in
            let expandedOut = starts[0] + counts[0], expandedIn = starts[1]
            let filteredOut = starts[1] + counts[2], filteredIn = starts[2]
            let expandedRow = stages[0].outputRowBytes, filteredRow = stages[1].outputRowBytes
            let ring = alreadyExpanded ? 0 : ringRows
            // The thread's own window when the runner has one (an interpreter's), else windows
            // in the inner tensors' memory.
            let own = ring > 0 ? io.parallel.window(slab, bytes: windowSlabBytes) : nil
            let expanded = own ?? t[expandedOut] + slab * ring * expandedRow
            let filtered = own.map { $0 + ConvolutionSupport.align(ring * expandedRow) }
                ?? t[filteredOut] + slab * BandChains.bandRows * filteredRow
            t[expandedIn] = expanded
            var end = rows.lowerBound, filteredDone = rows.lowerBound, expandedDone = 0
            while end < rows.upperBound {
                end = min(rows.upperBound, end + BandChains.bandRows)
                let filteredNeeded = end
                let expandedNeeded = stages[1].inputRows(forOutputRows: filteredNeeded)
                expandedDone = max(expandedDone, stages[1].firstInputRow(forOutputRow: filteredDone))
                // Expanded rows, in runs that do not wrap around the window: row y at y mod ring.
                while ring > 0, expandedDone < expandedNeeded {
                    let lap = expandedDone / ring
                    let stop = min(expandedNeeded, (lap + 1) * ring)
                    t[expandedOut] = expanded - lap * ring * expandedRow
                    stages[0].run(part(0), rows: expandedDone..<stop)
                    expandedDone = stop
                }
                guard filteredNeeded > filteredDone else { continue }
                // The band's filtered rows at the start of the filtered tensor's memory.
                let shifted = filtered - filteredDone * filteredRow
                t[filteredOut] = shifted
                t[filteredIn] = shifted
                stages[1].run(part(1), rows: filteredDone..<filteredNeeded, ringRows: ring)
                projection.runPixels(part(2), max(pixels.lowerBound, filteredDone * width)..<min(pixels.upperBound, end * width))
                filteredDone = filteredNeeded
            }
        }
    }
}
