import TFLiteFormat
import TensorCore

/// AVERAGE_POOL_2D (tensorflow/lite/kernels/pooling.cc; reference/pooling.h,
/// reference/integer_ops/pooling.h). The average covers only the window positions inside the
/// input (padding is excluded from the count). float32: sum in window order divided by the
/// count; uint8: `(sum + count/2) / count`; int8/int16: the same with the sign handled
/// (`(sum - count/2) / count` for non-positive sums). Then the fused activation clamps.
struct AveragePool2D: Kernel {
    let geometry: Pool2DGeometry
    let type: ElementType
    let floatMin: Float, floatMax: Float
    let quantizedMin: Int32, quantizedMax: Int32

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let geometry = try Pool2DGeometry(&context, types: [.float32, .uint8, .int8, .int16])
        guard geometry.everyWindowNonEmpty else { throw context.fail("a pooling window lies entirely in the padding") }
        let input = try context.input(0), output = context.outputs[0]
        let (fmin, fmax) = FixedPoint.activationRange(geometry.activation)
        let (qmin, qmax) = input.type == .float32 ? (0, 0)
            : output.quantization?.isQuantized == true
            ? FixedPoint.activationRange(geometry.activation, scale: output.scale, zeroPoint: output.zeroPoint, type: input.type)
            : FixedPoint.integerRange(input.type)
        if let isa = context.instructionSet, input.type == .float32,
           let kernel = geometry.optimizedFloatKernel(isa: isa, average: true, floatMin: fmin, floatMax: fmax) {
            context.scratchByteCount = kernel.scratchByteCount
            return kernel
        }
        return AveragePool2D(geometry: geometry, type: input.type, floatMin: fmin, floatMax: fmax, quantizedMin: qmin, quantizedMax: qmax)
    }

    func run(_ io: KernelIO) {
        let g = geometry
        let src = io.input(0), dst = io.output(0)
        io.parallel.forEach(g.batches * g.outputHeight) { row in
            switch type {
            case .float32: floatRow(row, src.assumingMemoryBound(to: Float.self), dst.assumingMemoryBound(to: Float.self))
            case .uint8: integerRow(row, src.assumingMemoryBound(to: UInt8.self), dst.assumingMemoryBound(to: UInt8.self))
            case .int8: integerRow(row, src.assumingMemoryBound(to: Int8.self), dst.assumingMemoryBound(to: Int8.self))
            default: integerRow(row, src.assumingMemoryBound(to: Int16.self), dst.assumingMemoryBound(to: Int16.self))
            }
        }
    }

    private func floatRow(_ row: Int, _ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        let g = geometry
        let b = row / g.outputHeight, y = row % g.outputHeight
        for x in 0..<g.outputWidth {
            let w = window(y, x)
            // The output pixel accumulates the window in row-major order, like TFLite.
            let out = output + ((b * g.outputHeight + y) * g.outputWidth + x) * g.depth
            out.update(repeating: 0, count: g.depth)
            for iy in w.y0..<w.y1 {
                for ix in w.x0..<w.x1 {
                    let p = input + ((b * g.inputHeight + iy) * g.inputWidth + ix) * g.depth
                    for c in 0..<g.depth { out[c] += p[c] }
                }
            }
            let count = Float((w.y1 - w.y0) * (w.x1 - w.x0))
            for c in 0..<g.depth {
                out[c] = Swift.min(Swift.max(out[c] / count, floatMin), floatMax)
            }
        }
    }

    private func integerRow<T: FixedWidthInteger>(_ row: Int, _ input: UnsafePointer<T>, _ output: UnsafeMutablePointer<T>) {
        let g = geometry
        let b = row / g.outputHeight, y = row % g.outputHeight
        let tranche = 256
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: tranche) { acc in
            guard let accumulator = acc.baseAddress else { return }
            for x in 0..<g.outputWidth {
                let w = window(y, x)
                let count = Int32((w.y1 - w.y0) * (w.x1 - w.x0))
                let out = output + ((b * g.outputHeight + y) * g.outputWidth + x) * g.depth
                var base = 0
                while base < g.depth {
                    let n = Swift.min(tranche, g.depth - base)
                    accumulator.update(repeating: 0, count: n)
                    for iy in w.y0..<w.y1 {
                        for ix in w.x0..<w.x1 {
                            let p = input + ((b * g.inputHeight + iy) * g.inputWidth + ix) * g.depth + base
                            for c in 0..<n { accumulator[c] &+= Int32(p[c]) }
                        }
                    }
                    for c in 0..<n {
                        let sum = accumulator[c]
                        let average = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count
                        out[base + c] = T(truncatingIfNeeded: Swift.min(Swift.max(average, quantizedMin), quantizedMax))
                    }
                    base += n
                }
            }
        }
    }

    @inline(__always)
    private func window(_ y: Int, _ x: Int) -> (y0: Int, y1: Int, x0: Int, x1: Int) { geometry.window(y, x) }
}
