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

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
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
}
