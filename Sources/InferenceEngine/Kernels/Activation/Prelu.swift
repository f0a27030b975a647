import TFLiteFormat
import TensorCore

/// PRELU: `x >= 0 ? x : alpha * x` with the alpha tensor broadcast against the input (the output
/// has the input's shape). float32, and uint8/int8 (alpha of the same type) with TFLite's
/// reference Prelu: multiplier 1 = input_scale / output_scale for x >= 0, multiplier 2 =
/// input_scale * alpha_scale / output_scale for the product of offset input and alpha.
enum Prelu {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        let input = try context.input(0), alpha = try context.input(1)
        try context.expect(input, type: [.float32, .uint8, .int8], "input")
        guard alpha.type == input.type else {
            throw context.fail("alpha has type \(alpha.type) but the input has type \(input.type)", code: .unsupportedOperator)
        }
        guard context.outputs[0].type == input.type else {
            throw context.fail("output has type \(context.outputs[0].type) but the input has type \(input.type)")
        }
        let plan = try BroadcastPlan.make(input, alpha, context, names: ("input", "alpha"))
        guard plan.outputShape == input.shape else {
            throw context.fail("alpha shape \(Shape(alpha.shape)) broadcasts the input shape \(Shape(input.shape)) to \(Shape(plan.outputShape)); the output must keep the input's shape")
        }
        context.outputs[0].shape = input.shape
        if input.type == .float32 {
            return BroadcastBinaryKernel(plan: plan, function: PreluFloat())
        }
        try Unary.expectQuantized(context, input)
        try Unary.expectQuantized(context, alpha, "alpha")
        let output = context.outputs[0]
        if input.type == .uint8 {
            return BroadcastBinaryKernel(plan: plan, function: PreluQuantized<UInt8>(input: input, alpha: alpha, output: output))
        }
        return BroadcastBinaryKernel(plan: plan, function: PreluQuantized<Int8>(input: input, alpha: alpha, output: output))
    }
}

struct PreluFloat: BinaryElementFunction {
    @inline(__always)
    func callAsFunction(_ x: Float, _ alpha: Float) -> Float { x >= 0 ? x : x * alpha }
}

struct PreluQuantized<T: FixedWidthInteger & Sendable>: BinaryElementFunction {
    let inputOffset: Int32, alphaOffset: Int32, outputOffset: Int32
    let multiplier1: Int32, shift1: Int
    let multiplier2: Int32, shift2: Int
    let outputMin: Int64, outputMax: Int64

    init(input: TensorInfo, alpha: TensorInfo, output: TensorInfo) {
        inputOffset = -input.zeroPoint
        alphaOffset = -alpha.zeroPoint
        outputOffset = output.zeroPoint
        // Float expressions in TFLite's PreluPrepare.
        (multiplier1, shift1) = FixedPoint.quantizeMultiplier(Double(input.scale / output.scale))
        (multiplier2, shift2) = FixedPoint.quantizeMultiplier(Double(input.scale * alpha.scale / output.scale))
        outputMin = Int64(T.min)
        outputMax = Int64(T.max)
    }

    @inline(__always)
    func callAsFunction(_ x: T, _ a: T) -> T {
        let value = inputOffset &+ Int32(x)
        let scaled: Int32
        if value >= 0 {
            scaled = FixedPoint.multiplySaturating(value, by: multiplier1, shift: shift1)
        } else {
            scaled = FixedPoint.multiplySaturating(value &* (alphaOffset &+ Int32(a)), by: multiplier2, shift: shift2)
        }
        let result = Int64(scaled) + Int64(outputOffset)
        return T(truncatingIfNeeded: Swift.min(outputMax, Swift.max(outputMin, result)))
    }
}
