import TFLiteFormat
import TensorCore

/// SUM (tensorflow/lite/kernels/reduce.cc EvalSum, as registered by LiteRT):
/// - uint8 / int8 whose output parameters differ from the input's: optimized QuantizedMeanOrSum
///   with compute_sum: `round(Σq * s + b) + z_out` in float (s = s_in / s_out,
///   b = -z_in * s * N; half away from zero), saturated.
/// - everything else (float32, int32, int64, and quantized tensors with equal parameters, which
///   int16 requires): the plain sum in the element type (integers wrap, like TFLite).
struct Sum: Kernel {
    let plan: ReductionPlan
    let type: ElementType
    /// Rescaling 8-bit sum: (scale, bias, output zero point).
    let rescale: (scale: Float, bias: Float, zeroPoint: Int32)?

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        let input = try context.input(0)
        let output = context.outputs[0]
        try context.expect(input, type: [.float32, .uint8, .int8, .int16, .int32, .int64], "input")
        guard output.type == input.type else {
            throw context.fail("output has type \(output.type) but the input has type \(input.type)")
        }
        var keepDims = false
        if case .reducer(let k) = context.options { keepDims = k }
        let plan = try ReductionPlan(context, input: input, axisTensor: try context.input(1), keepDims: keepDims)
        var rescale: (Float, Float, Int32)?
        let sameParameters = input.scale == output.scale && input.zeroPoint == output.zeroPoint
        switch input.type {
        case .uint8, .int8:
            if !sameParameters {
                try context.expectPerTensor(input, "input")
                try context.expectPerTensor(output, "output")
                let scale = input.scale / output.scale
                let bias = Float(-input.zeroPoint) * scale * Float(plan.reducedCount)
                rescale = (scale, bias, output.zeroPoint)
                context.scratchByteCount = plan.outputCount * 4
            }
        case .int16:
            guard sameParameters else {
                throw context.fail("int16 input and output must have the same quantization parameters", code: .invalidQuantization)
            }
        default: break
        }
        context.outputs[0].shape = plan.outputShape
        return Sum(plan: plan, type: input.type, rescale: rescale)
    }

    func run(_ io: KernelIO) {
        let src = io.input(0), dst = io.output(0)
        if let rescale {
            guard let scratch = io.scratch else { return }
            let sums = scratch.assumingMemoryBound(to: Int32.self)
            if type == .uint8 {
                finishRescaled(src.assumingMemoryBound(to: UInt8.self), sums, dst.assumingMemoryBound(to: UInt8.self), rescale)
            } else {
                finishRescaled(src.assumingMemoryBound(to: Int8.self), sums, dst.assumingMemoryBound(to: Int8.self), rescale)
            }
            return
        }
        switch type {
        case .float32:
            let input = src.assumingMemoryBound(to: Float.self), output = dst.assumingMemoryBound(to: Float.self)
            output.update(repeating: 0, count: plan.outputCount)
            plan.forEachRun { i, o, count, intoOne, rows in
                let source = input + i, destination = output + o
                if intoOne {
                    var s = destination[0]
                    for j in 0..<count { s += source[j] }
                    destination[0] = s
                } else {
                    Mean.addRows(source, rows: rows, count: count, into: destination, instructionSet: nil)
                }
            }
        case .uint8: Mean.sum(src.assumingMemoryBound(to: UInt8.self), into: dst.assumingMemoryBound(to: UInt8.self), plan: plan)
        case .int8: Mean.sum(src.assumingMemoryBound(to: Int8.self), into: dst.assumingMemoryBound(to: Int8.self), plan: plan)
        case .int16: Mean.sum(src.assumingMemoryBound(to: Int16.self), into: dst.assumingMemoryBound(to: Int16.self), plan: plan)
        case .int32: Mean.sum(src.assumingMemoryBound(to: Int32.self), into: dst.assumingMemoryBound(to: Int32.self), plan: plan)
        default: Mean.sum(src.assumingMemoryBound(to: Int64.self), into: dst.assumingMemoryBound(to: Int64.self), plan: plan)
        }
    }

    private func finishRescaled<T: FixedWidthInteger>(_ input: UnsafePointer<T>, _ sums: UnsafeMutablePointer<Int32>,
                                                      _ output: UnsafeMutablePointer<T>, _ r: (scale: Float, bias: Float, zeroPoint: Int32)) {
        Mean.sum(input, into: sums, plan: plan)
        let lo = Int32(truncatingIfNeeded: T.min), hi = Int32(truncatingIfNeeded: T.max)
        for j in 0..<plan.outputCount {
            let rounded = (Float(sums[j]) * r.scale + r.bias).rounded(.toNearestOrAwayFromZero)
            let v = Mean.int32(rounded) &+ r.zeroPoint
            output[j] = T(truncatingIfNeeded: min(max(v, lo), hi))
        }
    }
}
