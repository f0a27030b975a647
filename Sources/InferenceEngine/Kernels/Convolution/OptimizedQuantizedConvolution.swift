import CKernels
import TFLiteFormat
import TensorCore

extension ck_conv_geometry {
    /// The geometry for the quantized CKernels, or nil when a value (or a window's extent,
    /// (kernel − 1) × dilation, or a padding) does not fit the kernels' 32-bit arithmetic: such
    /// shapes keep the reference kernel instead of trapping on a conversion.
    static func quantized(inputHeight: Int, inputWidth: Int, inputChannels: Int, outputHeight: Int, outputWidth: Int,
                          outputChannels: Int, filterHeight: Int, filterWidth: Int, strideHeight: Int, strideWidth: Int,
                          dilationHeight: Int, dilationWidth: Int, padTop: Int, padLeft: Int) -> ck_conv_geometry? {
        let limit = Int(Int32.max) / 4
        let values = [inputHeight, inputWidth, inputChannels, outputHeight, outputWidth, outputChannels, filterHeight, filterWidth,
                      strideHeight, strideWidth, dilationHeight, dilationWidth, padTop, padLeft]
        guard values.allSatisfy({ (0...limit).contains($0) }) else { return nil }
        // Window extents, tap offsets (in pixels) and window origins stay below 2^29.
        let (spanHeight, overflowHeight) = (filterHeight - 1).multipliedReportingOverflow(by: dilationHeight)
        let (spanWidth, overflowWidth) = (filterWidth - 1).multipliedReportingOverflow(by: dilationWidth)
        guard !overflowHeight, !overflowWidth, spanHeight <= limit, spanWidth <= limit else { return nil }
        let (tapRows, overflowRows) = spanHeight.multipliedReportingOverflow(by: inputWidth)
        guard !overflowRows, tapRows <= limit - spanWidth,
              outputHeight <= limit / max(strideHeight, 1), outputWidth <= limit / max(strideWidth, 1) else { return nil }
        let g = ck_conv_geometry(inputHeight: inputHeight, inputWidth: inputWidth, inputChannels: inputChannels,
                                 outputHeight: outputHeight, outputWidth: outputWidth, outputChannels: outputChannels,
                                 filterHeight: filterHeight, filterWidth: filterWidth, strideHeight: strideHeight, strideWidth: strideWidth,
                                 dilationHeight: dilationHeight, dilationWidth: dilationWidth, padTop: padTop, padLeft: padLeft)
        return g.fitsOptimizedKernels ? g : nil
    }
}

/// Requantization of a quantized convolution-like op in the CKernels layout: per-channel bias,
/// multipliers and shifts packed in blocks of 16 channels, plus the output zero point, the
/// activation clamp and the rounding of the op's reference kernel (bit-exact with
/// ``ConvRequantizer``).
struct QuantizedOutputParameters {
    /// Int32s of the packed records.
    let count: Int
    let output: ck_q8_output
    private let channels: Int
    private let requantizer: ConvRequantizer
    /// The constant bias (in the model's memory), nil for none.
    private let bias: UnsafePointer<Int32>?
    private let rounding: ck_q8_rounding

    /// Nil when the constant bias is too short.
    init?(channels: Int, requantizer: ConvRequantizer, bias: UnsafeRawBufferPointer?) {
        guard channels > 0, requantizer.multipliers.count >= channels, requantizer.shifts.count >= channels else { return nil }
        if let bias {
            guard let base = bias.baseAddress, bias.count >= channels * 4 else { return nil }
            self.bias = base.assumingMemoryBound(to: Int32.self)
        } else {
            self.bias = nil
        }
        self.channels = channels
        self.requantizer = requantizer
        count = ck_q8_params_count(Int32(channels))
        rounding = requantizer.rounding == .gemmHalfUp ? CK_Q8_ROUND_HALF_UP : CK_Q8_ROUND_REFERENCE
        output = ck_q8_output(zero_point: requantizer.outputZeroPoint, act_min: requantizer.activationMin,
                              act_max: requantizer.activationMax, rounding: Int32(rounding.rawValue))
    }

    /// Writes the `count` Int32s of the records at `destination` (the kernels' packing then
    /// completes them in place).
    func pack(into destination: UnsafeMutablePointer<Int32>) {
        requantizer.multipliers.withUnsafeBufferPointer { m in
            requantizer.shifts.withUnsafeBufferPointer { s in
                if let mb = m.baseAddress, let sb = s.baseAddress {
                    ck_q8_params_pack(Int32(channels), bias, mb, sb, Int32(rounding.rawValue), requantizer.outputZeroPoint, destination)
                } else {
                    destination.initialize(repeating: 0, count: count)
                }
            }
        }
    }
}

/// Quantized CONV_2D (uint8 with per-tensor weights, int8 with per-channel symmetric weights) and
/// FULLY_CONNECTED (as a 1×1 convolution over a 1×batches image) through a CKernels implicit GEMM:
/// weights packed once at load, the input (where needed) converted once per run into scratch,
/// requantization fused into the epilogue.
///
/// Two exact schemes: on AVX-512-VNNI the byte path (vpdpbusd on the raw activations and weights
/// shifted by 128, with zero-point corrections folded into the bias and a per-pixel input sum;
/// the input is read in place when its channel count is a multiple of 4, else copied padded);
/// elsewhere int16 operands (input − zero point, weight − zero point) with vpmaddwd or plain C.
/// Few input channels (not a multiple of 4, k_w × in_c ≤ 32, dilation 1 along x: first layers) take
/// the byte path's row variant (ck_conv_q8r_fits): each filter row's k_w × in_c contiguous bytes are
/// one reduction, read from a padded copy of the input. Below AVX-512-VNNI, first layers with 3 input
/// channels and stride 2 along x take ck_conv_q8_c3s2: the float first-layer kernel's planes and
/// FMAs, exact because every sum is an integer below 2^24, on the raw input (no converted copy).
struct OptimizedQuantizedConvKernel: Kernel {
    let isa: Int32
    let geometry: ck_conv_geometry
    let batches: Int
    let isSigned: Bool
    let inputZeroPoint: Int32, filterZeroPoint: Int32
    /// vpdpbusd (AVX-512-VNNI) rather than the int16 path.
    let bytePath: Bool
    /// The byte path's row variant (ck_conv_q8r): `packed8` holds its weights, the scratch its padded image.
    let rowPath: Bool
    let packed16: PackedBuffer<Int16>
    let packed8: PackedBuffer<Int8>
    /// ck_conv_q8_c3s2's weights, nil when the layer takes another path.
    let firstLayer: PackedBuffer<Float>?
    let params: PackedBuffer<Int32>
    let output: ck_q8_output
    /// What taps outside the image read: int16 zeros, or (byte path) the input zero point.
    let zeros16: PackedBuffer<Int16>
    let pad8: PackedBuffer<UInt8>
    let split: GemmSplit
    /// Scratch bytes per image: converted input, then (byte path) the int32 pixel sums; 0 when the
    /// byte path reads the input in place.
    let convertedBytes: Int, sumsBytes: Int

    /// Nil when the shapes or operands do not fit the optimized kernel (the caller keeps the
    /// reference kernel). The weights and requantization records are packed by `work`.
    init?(isa: Int32, geometry: ck_conv_geometry, batches: Int, isSigned: Bool, inputZeroPoint: Int32, filterZeroPoint: Int32,
          filter: UnsafeRawBufferPointer, bias: UnsafeRawBufferPointer?, requantizer: ConvRequantizer,
          work: CompileWork = .immediate) {
        guard geometry.fitsOptimizedKernels, batches > 0, geometry.in_c > 0, geometry.out_c > 0 else { return nil }
        let outputChannels = Int(geometry.out_c)
        let weightCount = outputChannels * Int(geometry.k_h) * Int(geometry.k_w) * Int(geometry.in_c)
        guard let filterBase = filter.baseAddress, filter.count >= weightCount,
              let requant = QuantizedOutputParameters(channels: outputChannels, requantizer: requantizer, bias: bias) else { return nil }
        let bytePath = isa >= Int32(CK_ISA_AVX512VNNI)
        let paddedChannels = Int(bytePath ? ck_q8b_padded_channels(geometry.in_c) : ck_q8_padded_channels(geometry.in_c))
        let imagePixels = Int(geometry.in_h) * Int(geometry.in_w)
        guard imagePixels * paddedChannels * 2 < Int(Int32.max) else { return nil }
        var g = geometry
        let signed: Int32 = isSigned ? 1 : 0
        // The records, which every path's packing completes (or marks) in place.
        let params = PackedBuffer<Int32>(uninitializedCount: requant.count)
        let imageBytes = bytePath ? ck_conv_q8r_image_bytes(&g) : 0
        let blocks = (outputChannels + Int(CK_Q8_NR) - 1) / Int(CK_Q8_NR)
        let none16 = PackedBuffer<Int16>(count: 0) { _ in }, none8 = PackedBuffer<Int8>(count: 0) { _ in }
        // The first-layer kernel's float sums are exact while |x − zero point| and |w − zero point|
        // stay within 255: zero points inside the type's range (real models' always are).
        let typeRange = isSigned ? -128...127 : 0...255
        let zeroPointsFit = typeRange.contains(Int(inputZeroPoint)) && typeRange.contains(Int(filterZeroPoint))
        if !bytePath, zeroPointsFit, ck_conv_q8_c3s2_supported(isa, &g) != 0 {
            let count = ck_conv_q8_c3s2_packed_count(&g)
            let weights = PackedBuffer<Float>(uninitializedCount: count)
            // (The int16 path and the first layers mark the blocks whose shorter exact
            // requantization applies; the byte path's packing marks its own.)
            work.submit {
                var g = geometry
                requant.pack(into: params.unsafeBase)
                ck_conv_q8_c3s2_pack(&g, filterBase, signed, filterZeroPoint, weights.unsafeBase)
                ck_q8_mark_plain(&g, filterBase, signed, filterZeroPoint, inputZeroPoint, params.unsafeBase)
            }
            firstLayer = weights
            packed16 = none16
            packed8 = none8
            rowPath = false
            split = GemmSplit(pixels: Int(geometry.out_h) * Int(geometry.out_w), blocks: blocks, bytesPerBlock: count * 4 / max(blocks, 1))
            convertedBytes = 0
            sumsBytes = 0
        } else if bytePath, imageBytes < Int(Int32.max), ck_conv_q8r_fits(&g, filterBase, signed, filterZeroPoint) != 0 {
            let count = ck_conv_q8r_packed_count(&g)
            let weights = PackedBuffer<Int8>(uninitializedCount: count)
            work.submit {
                var g = geometry
                requant.pack(into: params.unsafeBase)
                ck_conv_q8r_pack(&g, filterBase, signed, filterZeroPoint, inputZeroPoint, weights.unsafeBase, params.unsafeBase)
            }
            packed8 = weights
            packed16 = none16
            firstLayer = nil
            rowPath = true
            split = GemmSplit(pixels: Int(geometry.out_h) * Int(geometry.out_w), blocks: blocks,
                              bytesPerBlock: count / max(blocks, 1), tileRows: 8)
            convertedBytes = ConvolutionSupport.align(imageBytes)
            sumsBytes = 0
        } else if bytePath {
            rowPath = false
            firstLayer = nil
            let count = ck_conv_q8b_packed_count(&g)
            let weights = PackedBuffer<Int8>(uninitializedCount: count)
            work.submit {
                var g = geometry
                requant.pack(into: params.unsafeBase)
                ck_conv_q8b_pack(isa, &g, filterBase, signed, filterZeroPoint, inputZeroPoint, weights.unsafeBase, params.unsafeBase)
            }
            packed8 = weights
            packed16 = none16
            split = GemmSplit(pixels: Int(geometry.out_h) * Int(geometry.out_w), blocks: blocks,
                              bytesPerBlock: count / max(blocks, 1), tileRows: 8)
            let inPlace = paddedChannels == Int(geometry.in_c)
            convertedBytes = inPlace ? 0 : ConvolutionSupport.align(imagePixels * paddedChannels)
            sumsBytes = inPlace ? 0 : ConvolutionSupport.align(imagePixels * 4)
        } else {
            let count = ck_conv_q8_packed_count(&g)
            let weights = PackedBuffer<Int16>(uninitializedCount: count)
            work.submit {
                var g = geometry
                requant.pack(into: params.unsafeBase)
                ck_conv_q8_pack(isa, &g, filterBase, signed, filterZeroPoint, weights.unsafeBase)
                ck_q8_mark_plain(&g, filterBase, signed, filterZeroPoint, inputZeroPoint, params.unsafeBase)
            }
            packed16 = weights
            packed8 = none8
            firstLayer = nil
            rowPath = false
            split = GemmSplit(pixels: Int(geometry.out_h) * Int(geometry.out_w), blocks: blocks,
                              bytesPerBlock: count / max(blocks, 1) * 2, tileRows: 8)
            convertedBytes = ConvolutionSupport.align(imagePixels * paddedChannels * 2)
            sumsBytes = 0
        }
        self.isa = isa
        self.geometry = geometry
        self.batches = batches
        self.isSigned = isSigned
        self.inputZeroPoint = inputZeroPoint
        self.filterZeroPoint = filterZeroPoint
        self.bytePath = bytePath
        self.params = params
        output = requant.output
        zeros16 = PackedBuffer(repeating: 0, count: paddedChannels)
        // A tap outside the image reads the input zero point (contributing 0); padding channels 0.
        pad8 = PackedBuffer(copying: (0..<paddedChannels).map { $0 < Int(geometry.in_c) ? UInt8(truncatingIfNeeded: inputZeroPoint) : 0 })
    }

    /// Scratch bytes `run` needs: the converted input of every image.
    var scratchByteCount: Int { batches * (convertedBytes + sumsBytes) }

    func run(_ io: KernelIO) {
        let input = io.input(0)
        let outputBase = io.output(0)
        let inputStride = Int(geometry.in_h) * Int(geometry.in_w) * Int(geometry.in_c)
        let outputStride = Int(geometry.out_h) * Int(geometry.out_w) * Int(geometry.out_c)
        let pixels = Int(geometry.in_h) * Int(geometry.in_w)
        let imageScratch = convertedBytes + sumsBytes
        let bytePath = self.bytePath
        let paddedChannels = Int(bytePath ? ck_q8b_padded_channels(geometry.in_c) : ck_q8_padded_channels(geometry.in_c))
        let scratch = io.scratch
        if rowPath {
            runRows(io, input: input, outputBase: outputBase, inputStride: inputStride, outputStride: outputStride)
            return
        }
        if let firstLayer {
            let rows = Int(geometry.out_h)
            // One call per image at one thread (each call fills its ring of input planes again).
            let pieces = io.parallel.threadCount == 1 ? 1 : min(rows, io.parallel.isShort(work: runWork) ? io.parallel.threadCount : 16)
            params.withUnsafeBufferPointer { params in
                firstLayer.withUnsafeBufferPointer { weights in
                    guard let p = params.baseAddress, let w = weights.baseAddress else { return }
                    io.forEachImageRows(batches: batches, rowCount: rows, pieces: pieces) { n, range in
                        var g = geometry
                        var out = output
                        ck_conv_q8_c3s2(isa, &g, input + n * inputStride, isSigned ? 1 : 0, inputZeroPoint, w, p, &out,
                                        outputBase + n * outputStride, Int32(range.lowerBound), Int32(range.upperBound))
                    }
                }
            }
            return
        }
        if imageScratch > 0 {
            guard let scratch else { return }
            // Conversion: pieces of whole pixels (any split gives the same values).
            let conversionPieces = max(1, min(8, pixels * Int(geometry.in_c) / 16384))
            io.parallel.forEach(conversionPieces * batches) { piece in
                let n = piece / conversionPieces
                let range = ConvolutionSupport.range(piece: piece % conversionPieces, of: conversionPieces, count: pixels)
                let source = input + n * inputStride + range.lowerBound * Int(geometry.in_c)
                let image = scratch + n * imageScratch
                if bytePath {
                    ck_q8b_convert_input(source, isSigned ? 1 : 0, Int32(range.count), geometry.in_c,
                                         image.assumingMemoryBound(to: UInt8.self) + range.lowerBound * paddedChannels,
                                         (image + convertedBytes).assumingMemoryBound(to: Int32.self) + range.lowerBound)
                } else {
                    ck_q8_convert_input(source, isSigned ? 1 : 0, inputZeroPoint, Int32(range.count), geometry.in_c,
                                        image.assumingMemoryBound(to: Int16.self) + range.lowerBound * paddedChannels)
                }
            }
        }
        params.withUnsafeBufferPointer { params in
            guard let p = params.baseAddress else { return }
            if bytePath {
                packed8.withUnsafeBufferPointer { weights in
                    pad8.withUnsafeBufferPointer { pad in
                        guard let w = weights.baseAddress, let z = pad.baseAddress else { return }
                        io.forEachGemmPiece(runSplit(io), batches: batches) { n, pixels, blocks in
                            var image = (input + n * inputStride).assumingMemoryBound(to: UInt8.self)
                            var sums: UnsafePointer<Int32>?
                            if imageScratch > 0, let scratch {
                                let base = scratch + n * imageScratch
                                image = UnsafeRawPointer(base).assumingMemoryBound(to: UInt8.self)
                                sums = UnsafeRawPointer(base + convertedBytes).assumingMemoryBound(to: Int32.self)
                            }
                            var g = geometry
                            var out = output
                            ck_conv_q8b(&g, image, sums, w, p, &out, isSigned ? 1 : 0, filterZeroPoint, inputZeroPoint,
                                        outputBase + n * outputStride, Int32(pixels.lowerBound), Int32(pixels.upperBound),
                                        Int32(blocks.lowerBound), Int32(blocks.upperBound), z)
                        }
                    }
                }
            } else {
                guard let scratch else { return }
                packed16.withUnsafeBufferPointer { weights in
                    zeros16.withUnsafeBufferPointer { zeros in
                        guard let w = weights.baseAddress, let z = zeros.baseAddress else { return }
                        io.forEachGemmPiece(runSplit(io), batches: batches) { n, pixels, blocks in
                            var g = geometry
                            var out = output
                            ck_conv_q8(isa, &g, (scratch + n * imageScratch).assumingMemoryBound(to: Int16.self), w, p, &out,
                                       outputBase + n * outputStride, Int32(pixels.lowerBound), Int32(pixels.upperBound),
                                       Int32(blocks.lowerBound), Int32(blocks.upperBound), z)
                        }
                    }
                }
            }
        }
    }

    /// A 1×1 layer on the byte path that reads its input in place (no scratch), for ``BandChains``.
    var isPointwise: Bool {
        bytePath && !rowPath && firstLayer == nil && convertedBytes == 0 && sumsBytes == 0 && batches == 1
            && geometry.k_h == 1 && geometry.k_w == 1 && geometry.stride_h == 1 && geometry.stride_w == 1
            && geometry.pad_top == 0 && geometry.pad_left == 0 && geometry.in_h == geometry.out_h && geometry.in_w == geometry.out_w
    }

    /// Output pixels `pixels` of image 0, every channel, on the calling thread (an ``isPointwise``
    /// layer): the values ``run(_:)`` computes for them.
    func runPixels(_ io: KernelIO, _ pixels: Range<Int>) {
        guard isPointwise, !pixels.isEmpty else { return }
        let input = io.input(0).assumingMemoryBound(to: UInt8.self), outputBase = io.output(0)
        let blocks = Int32((Int(geometry.out_c) + Int(CK_Q8_NR) - 1) / Int(CK_Q8_NR))
        params.withUnsafeBufferPointer { params in
            packed8.withUnsafeBufferPointer { weights in
                pad8.withUnsafeBufferPointer { pad in
                    guard let p = params.baseAddress, let w = weights.baseAddress, let z = pad.baseAddress else { return }
                    var g = geometry
                    var out = output
                    ck_conv_q8b(&g, input, nil, w, p, &out, isSigned ? 1 : 0, filterZeroPoint, inputZeroPoint, outputBase,
                                Int32(pixels.lowerBound), Int32(pixels.upperBound), 0, blocks, z)
                }
            }
        }
    }

    /// The split of this run: one piece per thread for a short convolution (``ParallelRunner/isShort(work:)``).
    private func runSplit(_ io: KernelIO) -> GemmSplit {
        io.parallel.isShort(work: runWork) ? split.cut(forThreads: io.parallel.threadCount) : split
    }

    /// Multiply-accumulates of one run (all images).
    private var runWork: Int {
        Int(geometry.out_h) * Int(geometry.out_w) * Int(geometry.out_c) * Int(geometry.k_h) * Int(geometry.k_w) * Int(geometry.in_c) * batches
    }

    /// The row variant: each image's padded copy (pieces of whole rows), then the convolution.
    private func runRows(_ io: KernelIO, input: UnsafeRawPointer, outputBase: UnsafeMutableRawPointer, inputStride: Int,
                         outputStride: Int) {
        guard let scratch = io.scratch else { return }
        var g = geometry
        let rows = Int(ck_conv_q8r_image_rows(&g))
        let imageScratch = convertedBytes
        let conversionPieces = max(1, min(8, rows, convertedBytes / 16384))
        io.parallel.forEach(conversionPieces * batches) { piece in
            let n = piece / conversionPieces
            let range = ConvolutionSupport.range(piece: piece % conversionPieces, of: conversionPieces, count: rows)
            var g = geometry
            ck_conv_q8r_convert_input(&g, input + n * inputStride, isSigned ? 1 : 0, inputZeroPoint, Int32(range.lowerBound),
                                      Int32(range.upperBound), (scratch + n * imageScratch).assumingMemoryBound(to: UInt8.self))
        }
        params.withUnsafeBufferPointer { params in
            packed8.withUnsafeBufferPointer { weights in
                guard let p = params.baseAddress, let w = weights.baseAddress else { return }
                io.forEachGemmPiece(runSplit(io), batches: batches) { n, pixels, blocks in
                    var g = geometry
                    var out = output
                    ck_conv_q8r(&g, UnsafeRawPointer(scratch + n * imageScratch).assumingMemoryBound(to: UInt8.self), w, p, &out, isSigned ? 1 : 0,
                                outputBase + n * outputStride, Int32(pixels.lowerBound), Int32(pixels.upperBound),
                                Int32(blocks.lowerBound), Int32(blocks.upperBound))
                }
            }
        }
    }
}

/// Quantized DEPTHWISE_CONV_2D with depth multiplier 1 through CKernels: weights minus their zero
/// point packed once at load as int32 lanes, the raw uint8/int8 input read in place, output rows
/// split into pieces. On AVX2 and AVX-512 the input zero point's share is folded into the bias at load
/// (ck_dwconv_q8_prepare) and taps outside the image read `pad`, so every pixel runs the same taps;
/// on AVX-512-VNNI, 3×3 filters (stride 1 or 2, dilation 1 or 2) get their own packing at load:
/// vpdpbusd over quads of input rows, two output rows per pass at stride 1 (see conv_q8.c).
struct OptimizedQuantizedDepthwiseKernel: Kernel {
    let isa: Int32
    let geometry: ck_conv_geometry
    let batches: Int
    let isSigned: Bool
    let inputZeroPoint: Int32
    let packed: PackedBuffer<Int32>
    let params: PackedBuffer<Int32>
    let output: ck_q8_output
    /// in_c bytes of the input zero point: what the AVX2 and AVX-512 variants read outside the image.
    let pad: PackedBuffer<UInt8>
    let pieces: Int
    /// Output rows per unit of the split: 2 where the 3×3 variant computes two rows per pass (a
    /// piece of odd rows would compute one row for nothing).
    let rowUnit: Int

    init?(isa: Int32, geometry: ck_conv_geometry, batches: Int, isSigned: Bool, inputZeroPoint: Int32, filterZeroPoint: Int32,
          filter: UnsafeRawBufferPointer, bias: UnsafeRawBufferPointer?, requantizer: ConvRequantizer,
          work: CompileWork = .immediate) {
        guard geometry.fitsOptimizedKernels, batches > 0, geometry.in_c > 0, geometry.out_c == geometry.in_c else { return nil }
        // The AVX2 and AVX-512 variants read a pad of the input zero point as input bytes: it must
        // fit the type (else the portable kernel, which reads valid taps only).
        let zeroPointFits = isSigned ? (-128...127).contains(inputZeroPoint) : (0...255).contains(inputZeroPoint)
        let kernelISA = zeroPointFits ? isa : Int32(CK_ISA_PORTABLE)
        let channels = Int(geometry.in_c)
        let weightCount = Int(geometry.k_h) * Int(geometry.k_w) * channels
        guard let filterBase = filter.baseAddress, filter.count >= weightCount,
              let requant = QuantizedOutputParameters(channels: channels, requantizer: requantizer, bias: bias) else { return nil }
        var g = geometry
        let packed = PackedBuffer<Int32>(uninitializedCount: Int(ck_dwconv_q8_packed_count(&g)))
        let params = PackedBuffer<Int32>(uninitializedCount: requant.count)
        let signed: Int32 = isSigned ? 1 : 0
        work.submit {
            var g = geometry
            requant.pack(into: params.unsafeBase)
            ck_dwconv_q8_pack(&g, filterBase, signed, filterZeroPoint, packed.unsafeBase)
            ck_dwconv_q8_prepare(kernelISA, &g, signed, inputZeroPoint, packed.unsafeBase, params.unsafeBase)
        }
        self.packed = packed
        self.params = params
        output = requant.output
        pad = PackedBuffer(repeating: UInt8(truncatingIfNeeded: inputZeroPoint), count: channels)
        self.isa = kernelISA
        self.geometry = geometry
        self.batches = batches
        self.isSigned = isSigned
        self.inputZeroPoint = inputZeroPoint
        // About 8 pieces per image of enough work each (the split does not change the results).
        let rows = Int(geometry.out_h)
        let rowWork = Int(geometry.out_w) * channels * Int(geometry.k_h) * Int(geometry.k_w)
        rowUnit = geometry.k_h == 3 && geometry.k_w == 3 && geometry.stride_h == 1 && geometry.dil_h == 1
            && geometry.stride_w == 1 && geometry.dil_w == 1 ? 2 : 1
        pieces = max(1, min((rows + rowUnit - 1) / rowUnit, 8, rows * rowWork / 8192))
    }

    /// Output rows `rows` of image 0 on the calling thread: the values ``run(_:)`` computes for them.
    func runRows(_ io: KernelIO, _ rows: Range<Int>) {
        guard !rows.isEmpty else { return }
        packed.withUnsafeBufferPointer { weights in
            params.withUnsafeBufferPointer { params in
                pad.withUnsafeBufferPointer { pad in
                    guard let w = weights.baseAddress, let p = params.baseAddress, let z = pad.baseAddress else { return }
                    var g = geometry
                    var out = output
                    ck_dwconv_q8(isa, &g, io.input(0), isSigned ? 1 : 0, inputZeroPoint, w, p, &out, io.output(0),
                                 Int32(rows.lowerBound), Int32(rows.upperBound), z)
                }
            }
        }
    }

    func run(_ io: KernelIO) {
        let input = io.input(0)
        let output = io.output(0)
        let rows = Int(geometry.out_h)
        let inputStride = Int(geometry.in_h) * Int(geometry.in_w) * Int(geometry.in_c)
        let outputStride = rows * Int(geometry.out_w) * Int(geometry.out_c)
        packed.withUnsafeBufferPointer { weights in
            params.withUnsafeBufferPointer { params in
                pad.withUnsafeBufferPointer { pad in
                    guard let w = weights.baseAddress, let p = params.baseAddress, let z = pad.baseAddress else { return }
                    let rowUnit = self.rowUnit
                    io.parallel.forEach(pieces * batches) { piece in
                        let n = piece / pieces
                        let units = ConvolutionSupport.range(piece: piece % pieces, of: pieces, count: (rows + rowUnit - 1) / rowUnit)
                        let range = units.lowerBound * rowUnit..<min(rows, units.upperBound * rowUnit)
                        var g = geometry
                        var out = self.output
                        ck_dwconv_q8(isa, &g, input + n * inputStride, isSigned ? 1 : 0, inputZeroPoint, w, p, &out,
                                     output + n * outputStride, Int32(range.lowerBound), Int32(range.upperBound), z)
                    }
                }
            }
        }
    }
}
