import CKernels
import TFLiteFormat
import TensorCore

/// MAX_POOL_2D (tensorflow/lite/kernels/pooling.cc; reference/pooling.h,
/// reference/integer_ops/pooling.h): the maximum over the window positions inside the input, then
/// the fused activation's clamp (quantized: the activation's range in the output's parameters).
struct MaxPool2D: Kernel {
    let geometry: Pool2DGeometry
    let type: ElementType
    let floatMin: Float, floatMax: Float
    let quantizedMin: Int32, quantizedMax: Int32

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let geometry = try Pool2DGeometry(&context, types: [.float32, .uint8, .int8, .int16])
        let input = try context.input(0), output = context.outputs[0]
        let (fmin, fmax) = FixedPoint.activationRange(geometry.activation)
        let (qmin, qmax) = input.type == .float32 ? (0, 0)
            : output.quantization?.isQuantized == true
            ? FixedPoint.activationRange(geometry.activation, scale: output.scale, zeroPoint: output.zeroPoint, type: input.type)
            : FixedPoint.integerRange(input.type)
        if let isa = context.instructionSet, input.type == .float32,
           let kernel = geometry.optimizedFloatKernel(isa: isa, average: false, floatMin: fmin, floatMax: fmax) {
            return kernel
        }
        return MaxPool2D(geometry: geometry, type: input.type, floatMin: fmin, floatMax: fmax, quantizedMin: qmin, quantizedMax: qmax)
    }

    func run(_ io: KernelIO) {
        let g = geometry
        let src = io.input(0), dst = io.output(0)
        io.parallel.forEach(g.batches * g.outputHeight) { row in
            switch type {
            case .float32:
                pool(row, src.assumingMemoryBound(to: Float.self), dst.assumingMemoryBound(to: Float.self),
                     lowest: -Float.greatestFiniteMagnitude, min: floatMin, max: floatMax)
            case .uint8:
                pool(row, src.assumingMemoryBound(to: UInt8.self), dst.assumingMemoryBound(to: UInt8.self),
                     lowest: UInt8.min, min: UInt8(clamping: quantizedMin), max: UInt8(clamping: quantizedMax))
            case .int8:
                pool(row, src.assumingMemoryBound(to: Int8.self), dst.assumingMemoryBound(to: Int8.self),
                     lowest: Int8.min, min: Int8(clamping: quantizedMin), max: Int8(clamping: quantizedMax))
            default:
                pool(row, src.assumingMemoryBound(to: Int16.self), dst.assumingMemoryBound(to: Int16.self),
                     lowest: Int16.min, min: Int16(clamping: quantizedMin), max: Int16(clamping: quantizedMax))
            }
        }
    }

    /// The output pixel holds the running maximum (C++ std::max: a NaN input is skipped).
    private func pool<T: Comparable>(_ row: Int, _ input: UnsafePointer<T>, _ output: UnsafeMutablePointer<T>,
                                     lowest: T, min lo: T, max hi: T) {
        let g = geometry
        let b = row / g.outputHeight, y = row % g.outputHeight
        for x in 0..<g.outputWidth {
            let w = g.window(y, x)
            let out = output + ((b * g.outputHeight + y) * g.outputWidth + x) * g.depth
            out.update(repeating: lowest, count: g.depth)
            for iy in w.y0..<w.y1 {
                for ix in w.x0..<w.x1 {
                    let p = input + ((b * g.inputHeight + iy) * g.inputWidth + ix) * g.depth
                    for c in 0..<g.depth where out[c] < p[c] { out[c] = p[c] }
                }
            }
            for c in 0..<g.depth {
                var v = out[c]
                if v < lo { v = lo }
                if hi < v { v = hi }
                out[c] = v
            }
        }
    }
}

/// Float32 MAX_POOL_2D (NaN inputs skipped like std::max) and AVERAGE_POOL_2D through CKernels,
/// channels vectorized.
struct OptimizedPoolFloatKernel: Kernel {
    let isa: Int32
    let geometry: ck_conv_geometry
    let batches: Int
    let pieces: Int
    let floatMin: Float, floatMax: Float
    /// AVERAGE_POOL_2D (ck_avgpool_f32) instead of MAX_POOL_2D.
    var average = false

    /// A global average pool of a large image (``globalSumPieces``) sums its pixels in this many
    /// fixed ranges, whatever the thread count (0: the windows are summed as the reference does).
    var globalPieces: Int {
        guard average, geometry.out_h == 1, geometry.out_w == 1, geometry.pad_top == 0, geometry.pad_left == 0,
              geometry.k_h >= geometry.in_h, geometry.k_w >= geometry.in_w else { return 0 }
        let pixels = Int(geometry.in_h) * Int(geometry.in_w)
        guard pixels * Int(geometry.in_c) >= Self.globalSumFloats else { return 0 }
        return min(Self.globalSumPieces, pixels)
    }

    /// A global average pool over at least this many floats is summed in ``globalSumPieces``
    /// ranges of pixels, each thread its ranges (a smaller one, such as the selfie model's
    /// squeeze-excite pools, is summed on one thread in the reference's order: bit-identical).
    static let globalSumFloats = 1 << 16
    /// Pixel ranges of a large global average pool: at 2 threads each thread's half of the image
    /// is the half of the pixels a pixel-split producer (``BandChainKernel``) computed on that
    /// thread, so each sums what is in its own cache. DeepLab's 33×33×160 pool at 2 threads read
    /// half its input from the other core, on one thread: 0.024 ms, slower than at one thread
    /// (0.018 ms).
    static let globalSumPieces = 8

    /// Scratch bytes ``run(_:)`` needs: the partial sums of a global pool.
    var scratchByteCount: Int { globalPieces * Int(geometry.in_c) * batches * 4 }

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
        if globalPieces > 0, let scratch = io.scratch {
            runGlobal(io, input, output, scratch.assumingMemoryBound(to: Float.self))
            return
        }
        let rows = Int(geometry.out_h)
        let inputStride = Int(geometry.in_h) * Int(geometry.in_w) * Int(geometry.in_c)
        let outputStride = rows * Int(geometry.out_w) * Int(geometry.out_c)
        io.forEachImageRows(batches: batches, rowCount: rows, pieces: pieces) { n, range in
            var g = geometry
            if average {
                ck_avgpool_f32(isa, &g, input + n * inputStride, output + n * outputStride,
                               Int32(range.lowerBound), Int32(range.upperBound), floatMin, floatMax)
            } else {
                ck_maxpool_f32(isa, &g, input + n * inputStride, output + n * outputStride,
                               Int32(range.lowerBound), Int32(range.upperBound), floatMin, floatMax)
            }
        }
    }

    /// A global average pool: per image, the channel sums of ``globalPieces`` fixed pixel ranges
    /// (in parallel), then added in range order, divided by the pixel count and clamped.
    private func runGlobal(_ io: KernelIO, _ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>,
                           _ partial: UnsafeMutablePointer<Float>) {
        let pieces = globalPieces, channels = Int(geometry.in_c)
        let pixels = Int(geometry.in_h) * Int(geometry.in_w)
        let body = { (piece: Int) in
            let n = piece / pieces, range = ConvolutionSupport.range(piece: piece % pieces, of: pieces, count: pixels)
            ck_sum_pixels_f32(isa, input + n * pixels * channels, Int32(channels), Int32(range.lowerBound),
                              Int32(range.upperBound), partial + piece * channels)
        }
        io.parallel.forEach(pieces * batches, body)
        let count = Float(pixels)
        for n in 0..<batches {
            let sums = partial + n * pieces * channels
            for c in 0..<channels {
                var s = sums[c]
                for k in 1..<pieces { s += sums[k * channels + c] }
                s = s / count
                if s < floatMin { s = floatMin }
                if floatMax < s { s = floatMax }
                output[n * channels + c] = s
            }
        }
    }
}
