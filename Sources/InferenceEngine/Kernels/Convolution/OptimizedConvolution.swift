import CKernels
import TFLiteFormat
import TensorCore

/// How an implicit-GEMM convolution's work (output pixels × output-channel blocks, per image) is
/// cut into pieces. Channel blocks are grouped so one group's packed weights stay in L2 while a
/// piece walks its pixels, and pixels are cut into runs of whole micro-tiles until there are enough
/// pieces to balance two or more threads, the tiles spread as evenly as they go. An image of fewer
/// tiles than pieces wanted (7×7 pixels are 5 tiles of 12, the last holding one pixel) is cut
/// along the channels instead: every piece walks all pixels for an equal share of the block pairs
/// (5 pixel pieces put 3 tiles on one thread and 2 on the other; 8 channel pieces put 4 on each).
/// Groups of blocks are spread evenly too, in pairs (the float tiles' width), so no group is a
/// short remainder. The split depends only on shapes, never on the thread count, and every output
/// element is computed by exactly one tile over the whole reduction, so results are identical for
/// every thread count.
struct GemmSplit: Sendable {
    let pixels: Int, blocks: Int, bytesPerBlock: Int
    let tileRows: Int, tiles: Int, pixelChunks: Int
    let blockChunks: Int
    /// Blocks per unit of the channel split (2, or 1 when one block's weights fill the L2 group).
    let blockUnit: Int

    /// - Parameter bytesPerBlock: packed weight bytes of one channel block.
    init(pixels: Int, blocks: Int, bytesPerBlock: Int, minimumPieces: Int = 8, tileRows: Int = 12) {
        self.pixels = pixels
        self.blocks = blocks
        self.bytesPerBlock = bytesPerBlock
        let groupBytes = 192 << 10
        let largestGroup = max(1, min(blocks, groupBytes / max(bytesPerBlock, 1)))
        blockUnit = largestGroup >= 2 ? 2 : 1
        let units = max(1, (blocks + blockUnit - 1) / blockUnit)
        let cacheChunks = min(units, max(1, (blocks + largestGroup - 1) / largestGroup))
        self.tileRows = max(1, tileRows)
        tiles = max(1, (pixels + self.tileRows - 1) / self.tileRows)
        if pixels > 0, tiles < minimumPieces, units > tiles {
            pixelChunks = 1
            blockChunks = max(cacheChunks, min(units, minimumPieces))
        } else {
            blockChunks = cacheChunks
            let wanted = max(1, (minimumPieces + blockChunks - 1) / blockChunks)
            pixelChunks = pixels > 0 ? min(tiles, wanted) : 0  // an empty image has no pieces
        }
    }

    var piecesPerImage: Int { pixelChunks * blockChunks }

    /// The same work cut for `threads` pieces wanted instead of 8: a short operator's split at run
    /// time (``ParallelRunner/isShort(work:)``).
    func cut(forThreads threads: Int) -> GemmSplit {
        GemmSplit(pixels: pixels, blocks: blocks, bytesPerBlock: bytesPerBlock, minimumPieces: threads, tileRows: tileRows)
    }

    /// Pixel and block ranges of piece `index` (of one image).
    func ranges(_ index: Int) -> (pixels: Range<Int>, blocks: Range<Int>) {
        let p = index / blockChunks, b = index % blockChunks
        let pixelStart = min(pixels, p * tiles / pixelChunks * tileRows)
        let pixelEnd = min(pixels, (p + 1) * tiles / pixelChunks * tileRows)
        let units = (blocks + blockUnit - 1) / blockUnit
        let blockStart = min(blocks, b * units / blockChunks * blockUnit)
        let blockEnd = min(blocks, (b + 1) * units / blockChunks * blockUnit)
        return (pixelStart..<pixelEnd, blockStart..<blockEnd)
    }
}

extension KernelIO {
    /// Runs `body(image, pixels, blocks)` for every piece of `split` in each of `batches` images.
    func forEachGemmPiece(_ split: GemmSplit, batches: Int, _ body: (_ image: Int, _ pixels: Range<Int>, _ blocks: Range<Int>) -> Void) {
        let perImage = split.piecesPerImage
        parallel.forEach(perImage * batches) { piece in
            let (pixels, blocks) = split.ranges(piece % perImage)
            body(piece / perImage, pixels, blocks)
        }
    }

    /// Runs `body(image, rows)` for the output rows of each of `batches` images, each image's
    /// `rowCount` rows cut into `pieces` ranges (a split by shape only, so results do not depend on
    /// the thread count).
    func forEachImageRows(batches: Int, rowCount: Int, pieces: Int, _ body: (_ image: Int, _ rows: Range<Int>) -> Void) {
        parallel.forEach(pieces * batches) { piece in
            body(piece / pieces, ConvolutionSupport.range(piece: piece % pieces, of: pieces, count: rowCount))
        }
    }
}

extension ck_conv_geometry {
    /// The geometry of one image. Values are clamped into Int32 (never trapping on hostile shapes);
    /// check ``fitsImageKernels`` / ``fitsOptimizedKernels`` before using it, so shapes beyond the C
    /// kernels' 32-bit arithmetic fall back to the reference kernels.
    init(inputHeight: Int, inputWidth: Int, inputChannels: Int, outputHeight: Int, outputWidth: Int, outputChannels: Int,
         filterHeight: Int, filterWidth: Int, strideHeight: Int, strideWidth: Int, dilationHeight: Int, dilationWidth: Int,
         padTop: Int, padLeft: Int) {
        self.init(in_h: Int32(clamping: inputHeight), in_w: Int32(clamping: inputWidth), in_c: Int32(clamping: inputChannels),
                  out_h: Int32(clamping: outputHeight), out_w: Int32(clamping: outputWidth), out_c: Int32(clamping: outputChannels),
                  k_h: Int32(clamping: filterHeight), k_w: Int32(clamping: filterWidth),
                  stride_h: Int32(clamping: strideHeight), stride_w: Int32(clamping: strideWidth),
                  dil_h: Int32(clamping: dilationHeight), dil_w: Int32(clamping: dilationWidth),
                  pad_top: Int32(clamping: padTop), pad_left: Int32(clamping: padLeft))
    }

    /// Whether every value was representable (none clamped) and one image's input and output
    /// element counts stay below 2^31, as the C kernels' index arithmetic needs.
    var fitsImageKernels: Bool {
        let values = [in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left]
        guard values.allSatisfy({ $0 >= 0 && $0 < Int32.max }) else { return false }
        let inputElements = Int(in_h) * Int(in_w) * Int(in_c)
        let outputElements = Int(out_h) * Int(out_w) * Int(out_c)
        return inputElements < Int(Int32.max) && outputElements < Int(Int32.max)
    }

    /// ``fitsImageKernels`` and a filter the implicit-GEMM tap table holds (1...256 taps).
    var fitsOptimizedKernels: Bool {
        let taps = Int(k_h) * Int(k_w)
        return fitsImageKernels && taps > 0 && taps <= 256
    }
}

/// Float32 CONV_2D (and FULLY_CONNECTED, as a 1×1 convolution over a 1×batches image) through the
/// CKernels implicit GEMM: weights and bias packed once at load in blocks of 16 output channels,
/// no im2col buffer, the clamp of the fused activation in the epilogue.
struct OptimizedConvFloatKernel: Kernel {
    let isa: Int32
    let geometry: ck_conv_geometry
    let batches: Int
    let packed: PackedBuffer<Float>
    let zeros: [Float]
    /// ck_conv_offsets' table (empty for 1×1 stride-1 convolutions and row-tap first layers,
    /// which need none, and for tables beyond 2M entries, which the kernel replaces by per-tile
    /// arithmetic).
    let offsets: [Int32]
    let split: GemmSplit
    /// Multiply-accumulates of one invoke (all images).
    let work: Int
    let floatMin: Float, floatMax: Float
    /// A residual ADD folded into the epilogue (``ResidualFusion``), nil for a plain convolution.
    var residual: ResidualAdd?
    /// A first layer ck_conv_c3s2_f32 runs (3 input channels, stride 2 along x; AVX2 or AVX-512): the op's
    /// own weights and bias, copied; nil otherwise.
    let firstLayer: (filter: [Float], bias: [Float]?)?
    /// The packed weights of a later layer this one brings into L2 as it runs (``WeightPrefetch``;
    /// the same storage as that layer's, shared), nil for none.
    var prefetch: PackedBuffer<Float>?

    /// Weights [out_c][k_h][k_w][in_c] (and the bias, or zeros) packed for the implicit-GEMM kernels
    /// by `work`. (No filter: zeros.) The filter and bias must outlive the work (the model's
    /// weights do; a temporary array needs ``CompileWork/immediate``).
    static func pack(_ geometry: ck_conv_geometry, filter: UnsafePointer<Float>?, bias: UnsafePointer<Float>?,
                     work: CompileWork = .immediate) -> PackedBuffer<Float> {
        var g = geometry
        let count = ck_conv_f32_packed_count(&g)
        let packed = PackedBuffer<Float>(uninitializedCount: count)
        work.submit {
            var g = geometry
            if let filter { ck_conv_f32_pack(&g, filter, bias, packed.unsafeBase) } else { packed.unsafeBase.initialize(repeating: 0, count: count) }
        }
        return packed
    }

    /// Nil when the shapes do not fit the optimized kernel (the caller keeps the reference kernel).
    init?(isa: Int32, geometry: ck_conv_geometry, batches: Int, filter: UnsafeRawBufferPointer, bias: UnsafeRawBufferPointer?,
          floatMin: Float, floatMax: Float, work compileWork: CompileWork = .immediate) {
        guard geometry.fitsOptimizedKernels, batches > 0 else { return nil }
        let outputChannels = Int(geometry.out_c)
        let weightCount = outputChannels * Int(geometry.k_h) * Int(geometry.k_w) * Int(geometry.in_c)
        guard let filterBase = filter.baseAddress, filter.count >= weightCount * 4 else { return nil }
        var biasBase: UnsafePointer<Float>?
        if let bias {
            guard let base = bias.baseAddress, bias.count >= outputChannels * 4 else { return nil }
            biasBase = base.assumingMemoryBound(to: Float.self)
        }
        var g = geometry
        packed = OptimizedConvFloatKernel.pack(geometry, filter: filterBase.assumingMemoryBound(to: Float.self), bias: biasBase, work: compileWork)
        let count = packed.count
        self.isa = isa
        self.geometry = geometry
        self.batches = batches
        zeros = [Float](repeating: 0, count: Int(geometry.in_c) * max(1, Int(geometry.k_w)))
        let pixels = Int(geometry.out_h) * Int(geometry.out_w), taps = Int(geometry.k_h) * Int(geometry.k_w)
        let direct = taps == 1 && geometry.stride_h == 1 && geometry.stride_w == 1 && geometry.pad_top == 0 && geometry.pad_left == 0
            && geometry.in_h == geometry.out_h && geometry.in_w == geometry.out_w
        if !direct, ck_conv_f32_row_taps(&g) == 0, pixels * taps <= 1 << 21 {
            offsets = [Int32](unsafeUninitializedCapacity: pixels * taps) { buffer, initialized in
                if let base = buffer.baseAddress { ck_conv_offsets(&g, base) }
                initialized = pixels * taps
            }
        } else {
            offsets = []
        }
        let blocks = (outputChannels + Int(CK_F32_NR) - 1) / Int(CK_F32_NR)
        split = GemmSplit(pixels: Int(geometry.out_h) * Int(geometry.out_w), blocks: blocks,
                          bytesPerBlock: count / max(blocks, 1) * 4)
        work = Int(geometry.out_h) * Int(geometry.out_w) * weightCount * batches
        self.floatMin = floatMin
        self.floatMax = floatMax
        if isa >= Int32(CK_ISA_AVX2), ck_conv_c3s2_supported(&g) != 0 {
            let filterCopy = Array(UnsafeBufferPointer(start: filterBase.assumingMemoryBound(to: Float.self), count: weightCount))
            let biasCopy = biasBase.map { Array(UnsafeBufferPointer(start: $0, count: outputChannels)) }
            firstLayer = (filterCopy, biasCopy)
        } else {
            firstLayer = nil
        }
    }

    /// At several threads every path is one forEach (the prefetching one runs at one thread only).
    var runsInOneSplit: Bool { true }

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
        let inputStride = Int(geometry.in_h) * Int(geometry.in_w) * Int(geometry.in_c)
        let outputStride = Int(geometry.out_h) * Int(geometry.out_w) * Int(geometry.out_c)
        let short = io.parallel.isShort(work: work)
        if let firstLayer, residual == nil {
            let rows = Int(geometry.out_h)
            // One call per image at one thread: each call packs the weights and fills its ring of
            // input planes again (16 pieces were 1% of BlazeFace's invoke in the packing alone).
            let pieces = io.parallel.threadCount == 1 ? 1 : min(rows, short ? io.parallel.threadCount : 16)
            firstLayer.filter.withUnsafeBufferPointer { filter in
                let run = { (bias: UnsafePointer<Float>?) in
                    io.forEachImageRows(batches: batches, rowCount: rows, pieces: pieces) { n, range in
                        var g = geometry
                        _ = ck_conv_c3s2_f32(isa, &g, input + n * inputStride, filter.baseAddress, bias, output + n * outputStride,
                                             Int32(range.lowerBound), Int32(range.upperBound), floatMin, floatMax)
                    }
                }
                if let bias = firstLayer.bias { bias.withUnsafeBufferPointer { run($0.baseAddress) } } else { run(nil) }
            }
            return
        }
        let split = short ? self.split.cut(forThreads: io.parallel.threadCount) : self.split
        packed.withUnsafeBufferPointer { weights in
            zeros.withUnsafeBufferPointer { zeros in
                offsets.withUnsafeBufferPointer { offsets in
                    guard let w = weights.baseAddress, let z = zeros.baseAddress else { return }
                    let table = offsets.baseAddress
                    if let residual {
                        let source = io.input(residual.input, as: Float.self)
                        let residualStride = (residual.broadcast ? 1 : Int(geometry.out_h) * Int(geometry.out_w)) * residual.channels
                        io.forEachGemmPiece(split, batches: batches) { n, pixels, blocks in
                            var g = geometry
                            var r = ck_residual_f32(data: source + n * residualStride, channels: Int32(residual.channels),
                                                    pixel_stride: residual.broadcast ? 0 : Int32(residual.channels),
                                                    before: Int32(residual.before), lo: residual.lo, hi: residual.hi)
                            ck_conv_f32_residual(isa, &g, input + n * inputStride, w, output + n * outputStride,
                                                 Int32(pixels.lowerBound), Int32(pixels.upperBound),
                                                 Int32(blocks.lowerBound), Int32(blocks.upperBound), floatMin, floatMax, z, table, &r)
                        }
                        return
                    }
                    if let prefetch, io.parallel.threadCount == 1 {
                        // One thread runs the pieces in order: piece i prefetches the i-th share of the lines.
                        prefetch.withUnsafeBytes { lines in
                            let pieces = split.piecesPerImage * batches
                            for piece in 0..<pieces {
                                let (pixels, blocks) = split.ranges(piece % split.piecesPerImage), n = piece / split.piecesPerImage
                                let start = lines.count * piece / pieces, end = lines.count * (piece + 1) / pieces
                                var g = geometry
                                ck_conv_f32_prefetching(isa, &g, input + n * inputStride, w, output + n * outputStride,
                                                        Int32(pixels.lowerBound), Int32(pixels.upperBound),
                                                        Int32(blocks.lowerBound), Int32(blocks.upperBound), floatMin, floatMax, z, table,
                                                        lines.baseAddress.map { $0 + start }, end - start)
                            }
                        }
                        return
                    }
                    io.forEachGemmPiece(split, batches: batches) { n, pixels, blocks in
                        var g = geometry
                        ck_conv_f32(isa, &g, input + n * inputStride, w, output + n * outputStride,
                                    Int32(pixels.lowerBound), Int32(pixels.upperBound),
                                    Int32(blocks.lowerBound), Int32(blocks.upperBound), floatMin, floatMax, z, table)
                    }
                }
            }
        }
    }
}

extension OptimizedConvFloatKernel {
    /// A 1×1, stride-1, unpadded convolution of one image, nothing folded in but a residual (and a
    /// weight prefetch, which only ``run(_:)`` at 1 thread issues): what ``BandChains`` runs in
    /// pieces of rows.
    var isPointwise: Bool {
        geometry.k_h == 1 && geometry.k_w == 1 && geometry.stride_h == 1 && geometry.stride_w == 1 && geometry.pad_top == 0
            && geometry.pad_left == 0 && geometry.in_h == geometry.out_h && geometry.in_w == geometry.out_w && batches == 1
            && firstLayer == nil
    }

    /// Output pixels `pixels` of image 0 (every channel, the residual included) on the calling
    /// thread: the values ``run(_:)`` computes for them (without its weight prefetch).
    ///
    /// `prefetchShare` (piece, pieces): also bring that share of the prefetch target's weights
    /// into L2 (``WeightPrefetch``), for a thread that will compute that share of the target.
    func runPixels(_ io: KernelIO, _ pixels: Range<Int>, prefetchShare: (piece: Int, pieces: Int)? = nil) {
        guard !pixels.isEmpty else { return }
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
        let blocks = Int32((Int(geometry.out_c) + Int(CK_F32_NR) - 1) / Int(CK_F32_NR))
        packed.withUnsafeBufferPointer { weights in
            zeros.withUnsafeBufferPointer { zeros in
                guard let w = weights.baseAddress, let z = zeros.baseAddress else { return }
                var g = geometry
                if let residual {
                    var r = ck_residual_f32(data: io.input(residual.input, as: Float.self), channels: Int32(residual.channels),
                                            pixel_stride: residual.broadcast ? 0 : Int32(residual.channels),
                                            before: Int32(residual.before), lo: residual.lo, hi: residual.hi)
                    ck_conv_f32_residual(isa, &g, input, w, output, Int32(pixels.lowerBound), Int32(pixels.upperBound), 0, blocks,
                                         floatMin, floatMax, z, nil, &r)
                } else if let prefetch, let share = prefetchShare, share.pieces > 0 {
                    prefetch.withUnsafeBytes { lines in
                        let start = lines.count * share.piece / share.pieces, end = lines.count * (share.piece + 1) / share.pieces
                        ck_conv_f32_prefetching(isa, &g, input, w, output, Int32(pixels.lowerBound), Int32(pixels.upperBound), 0, blocks,
                                                floatMin, floatMax, z, nil, lines.baseAddress.map { $0 + start }, end - start)
                    }
                } else {
                    ck_conv_f32(isa, &g, input, w, output, Int32(pixels.lowerBound), Int32(pixels.upperBound), 0, blocks,
                                floatMin, floatMax, z, nil)
                }
            }
        }
    }
}

extension OptimizedDepthwiseFloatKernel {
    /// Output rows `rows` of image 0 on the calling thread.
    /// `ringRows`: the input holds row y at y mod ringRows (see ``ck_dwconv_f32_ring``); 0: the whole input.
    func runRows(_ io: KernelIO, _ rows: Range<Int>, ringRows: Int = 0) {
        guard !rows.isEmpty else { return }
        var g = geometry
        ck_dwconv_f32_ring(isa, &g, io.input(0, as: Float.self), Int32(ringRows), io.input(1, as: Float.self),
                           hasBias ? io.input(2, as: Float.self) : nil, io.output(0, as: Float.self), Int32(rows.lowerBound),
                           Int32(rows.upperBound), floatMin, floatMax)
    }
}

/// Float32 DEPTHWISE_CONV_2D with depth multiplier 1 through CKernels: weights read in place,
/// output rows split into at most `pieces` pieces of whole row pairs (the kernel computes two
/// neighbouring rows per pass, sharing their input rows). Every output element is computed the same
/// way whatever rows a piece holds, so results do not depend on the split or the thread count.
struct OptimizedDepthwiseFloatKernel: Kernel {
    let isa: Int32
    let geometry: ck_conv_geometry
    let batches: Int
    let pieces: Int
    let floatMin: Float, floatMax: Float
    let hasBias: Bool

    /// Both paths are one forEach.
    var runsInOneSplit: Bool { true }

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let weights = io.input(1, as: Float.self)
        let bias: UnsafePointer<Float>? = hasBias ? io.input(2, as: Float.self) : nil
        let output = io.output(0, as: Float.self)
        let rows = Int(geometry.out_h), pairs = (rows + 1) / 2
        let inputStride = Int(geometry.in_h) * Int(geometry.in_w) * Int(geometry.in_c)
        let outputStride = rows * Int(geometry.out_w) * Int(geometry.out_c)
        if io.parallel.isShort(work: rows * Int(geometry.out_w) * Int(geometry.out_c) * Int(geometry.k_h) * Int(geometry.k_w) * batches) {
            // One piece of rows per thread, cut at rows (not pairs) like the surrounding 1×1
            // convolutions' pixels, so each thread reads the rows it wrote.
            io.forEachImageRows(batches: batches, rowCount: rows, pieces: min(rows, io.parallel.threadCount)) { n, range in
                var g = geometry
                ck_dwconv_f32(isa, &g, input + n * inputStride, weights, bias, output + n * outputStride,
                              Int32(range.lowerBound), Int32(range.upperBound), floatMin, floatMax)
            }
            return
        }
        io.forEachImageRows(batches: batches, rowCount: pairs, pieces: max(1, min(pieces, pairs))) { n, range in
            var g = geometry
            ck_dwconv_f32(isa, &g, input + n * inputStride, weights, bias, output + n * outputStride,
                          Int32(2 * range.lowerBound), Int32(min(rows, 2 * range.upperBound)), floatMin, floatMax)
        }
    }
}

/// Float32 TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias through CKernels, computed per
/// output pixel (gather) with weights read in place; output rows split into pieces.
struct OptimizedTransposeConvFloatKernel: Kernel {
    let isa: Int32
    let geometry: ck_conv_geometry
    let batches: Int
    let inputIndex: Int, weightsIndex: Int, biasIndex: Int
    let pieces: Int
    let floatMin: Float, floatMax: Float

    func run(_ io: KernelIO) {
        let input = io.input(inputIndex, as: Float.self)
        let weights = io.input(weightsIndex, as: Float.self)
        let bias: UnsafePointer<Float>? = io.hasInput(biasIndex) ? io.input(biasIndex, as: Float.self) : nil
        let output = io.output(0, as: Float.self)
        let rows = Int(geometry.out_h)
        let inputStride = Int(geometry.in_h) * Int(geometry.in_w) * Int(geometry.in_c)
        let outputStride = rows * Int(geometry.out_w) * Int(geometry.out_c)
        io.forEachImageRows(batches: batches, rowCount: rows, pieces: pieces) { n, range in
            var g = geometry
            ck_tconv_f32(isa, &g, input + n * inputStride, weights, bias, output + n * outputStride,
                         Int32(range.lowerBound), Int32(range.upperBound), floatMin, floatMax)
        }
    }
}

/// Float32 TRANSPOSE_CONV / Convolution2DTransposeBias with constant weights as a GEMM plus col2im:
/// every input pixel times every filter tap (a 1×1 convolution to k_h·k_w·out_c channels, through
/// the implicit-GEMM micro-kernels) into scratch, then each output pixel sums its contributions and
/// adds the bias (``ck_tconv_col2im_f32``).
struct OptimizedTransposeConvGemmKernel: Kernel {
    let isa: Int32
    /// The transposed op's geometry (input → output).
    let geometry: ck_conv_geometry
    /// The 1×1 convolution input → columns.
    let columns: ck_conv_geometry
    let batches: Int
    let inputIndex: Int, biasIndex: Int
    let packed: PackedBuffer<Float>
    let split: GemmSplit
    let rowPieces: Int
    let floatMin: Float, floatMax: Float

    /// Scratch bytes for the columns of one image.
    var scratchBytes: Int { Int(columns.out_h) * Int(columns.out_w) * Int(columns.out_c) * 4 }

    /// Nil when the shapes do not suit this form (the caller uses the gather kernel).
    init?(isa: Int32, geometry: ck_conv_geometry, batches: Int, weights: UnsafeRawBufferPointer,
          inputIndex: Int, biasIndex: Int, floatMin: Float, floatMax: Float) {
        let taps = Int(geometry.k_h) * Int(geometry.k_w)
        let inputChannels = Int(geometry.in_c), outputChannels = Int(geometry.out_c)
        let pixels = Int(geometry.in_h) * Int(geometry.in_w)
        let columnChannels = taps * outputChannels
        guard geometry.fitsImageKernels, batches > 0, geometry.k_h <= 64, inputChannels > 0, columnChannels > 0,
              pixels * columnChannels <= 4 << 20,
              let base = weights.baseAddress, weights.count >= columnChannels * inputChannels * 4 else { return nil }
        columns = ck_conv_geometry(inputHeight: Int(geometry.in_h), inputWidth: Int(geometry.in_w), inputChannels: inputChannels,
                                   outputHeight: Int(geometry.in_h), outputWidth: Int(geometry.in_w), outputChannels: columnChannels,
                                   filterHeight: 1, filterWidth: 1, strideHeight: 1, strideWidth: 1, dilationHeight: 1, dilationWidth: 1,
                                   padTop: 0, padLeft: 0)
        guard columns.fitsOptimizedKernels else { return nil }
        // Filter [out_c][tap][in_c] → 1×1 filter [tap * out_c + oc][in_c].
        let source = base.assumingMemoryBound(to: Float.self)
        var filter = [Float](repeating: 0, count: columnChannels * inputChannels)
        for oc in 0..<outputChannels {
            for t in 0..<taps {
                for ic in 0..<inputChannels {
                    filter[(t * outputChannels + oc) * inputChannels + ic] = source[(oc * taps + t) * inputChannels + ic]
                }
            }
        }
        let columnGeometry = columns
        packed = filter.withUnsafeBufferPointer { OptimizedConvFloatKernel.pack(columnGeometry, filter: $0.baseAddress, bias: nil) }
        let count = packed.count
        let blocks = (columnChannels + Int(CK_F32_NR) - 1) / Int(CK_F32_NR)
        split = GemmSplit(pixels: pixels, blocks: blocks, bytesPerBlock: count / max(blocks, 1) * 4)
        self.isa = isa
        self.geometry = geometry
        self.batches = batches
        self.inputIndex = inputIndex
        self.biasIndex = biasIndex
        rowPieces = max(1, min(Int(geometry.out_h), 16))
        self.floatMin = floatMin
        self.floatMax = floatMax
    }

    func run(_ io: KernelIO) {
        guard let scratch = io.scratch else { return }
        let cols = scratch.assumingMemoryBound(to: Float.self)
        let input = io.input(inputIndex, as: Float.self)
        let bias: UnsafePointer<Float>? = io.hasInput(biasIndex) ? io.input(biasIndex, as: Float.self) : nil
        let output = io.output(0, as: Float.self)
        let inputStride = Int(geometry.in_h) * Int(geometry.in_w) * Int(geometry.in_c)
        let outputStride = Int(geometry.out_h) * Int(geometry.out_w) * Int(geometry.out_c)
        let rows = Int(geometry.out_h)
        packed.withUnsafeBufferPointer { weights in
            guard let w = weights.baseAddress else { return }
            for n in 0..<batches {
                io.parallel.forEach(split.piecesPerImage) { piece in
                    let (pixels, blocks) = split.ranges(piece)
                    var g = columns
                    // 1×1, stride 1, unpadded: no tap outside the image, so no zeros buffer is read.
                    ck_conv_f32(isa, &g, input + n * inputStride, w, cols,
                                Int32(pixels.lowerBound), Int32(pixels.upperBound),
                                Int32(blocks.lowerBound), Int32(blocks.upperBound), -.infinity, .infinity, input, nil)
                }
                io.parallel.forEach(rowPieces) { piece in
                    let range = ConvolutionSupport.range(piece: piece, of: rowPieces, count: rows)
                    var g = geometry
                    ck_tconv_col2im_f32(&g, cols, bias, output + n * outputStride,
                                        Int32(range.lowerBound), Int32(range.upperBound), floatMin, floatMax)
                }
            }
        }
    }
}
