import TFLiteFormat
import TensorCore

/// LEAKY_RELU (options `.leakyRelu(alpha:)`): float32 `x > 0 ? x : alpha * x`, and uint8/int8 with
/// TFLite's reference QuantizeLeakyRelu (identity and alpha multipliers, negative alpha allowed).
enum LeakyRelu {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let alpha: Float
        switch context.options {
        case .leakyRelu(let a): alpha = a
        case .none: alpha = 0
        default: throw context.fail("has options \(context.options), expected LeakyReluOptions")
        }
        let input = try Unary.prepareOperands(&context, types: [.float32, .uint8, .int8])
        if input.type == .float32 {
            return Unary.floatKernel(count: input.elementCount, function: LeakyReluFunction(alpha: alpha))
        }
        try Unary.expectQuantized(context, input)
        let output = context.outputs[0]
        let inputOffset = input.zeroPoint, outputOffset = output.zeroPoint
        // Both multipliers are float expressions in TFLite.
        let alphaReal = input.scale * alpha / output.scale
        let (alphaMagnitude, alphaShift) = FixedPoint.quantizeMultiplier(Double(abs(alphaReal)))
        let alphaNegative = alphaReal < 0
        let (identityMultiplier, identityShift) = FixedPoint.quantizeMultiplier(Double(input.scale / output.scale))
        return Unary.lookupKernel(input) { q in
            let value = q - inputOffset
            var result = Int64(outputOffset)
            if value >= 0 {
                result += Int64(FixedPoint.multiplySaturating(value, by: identityMultiplier, shift: identityShift))
            } else {
                let scaled = Int64(FixedPoint.multiplySaturating(value, by: alphaMagnitude, shift: alphaShift))
                result += alphaNegative ? -scaled : scaled
            }
            return Int32(clamping: result)
        }
    }
}

struct LeakyReluFunction: UnaryFloatFunction {
    let alpha: Float
    @inline(__always)
    func callAsFunction(_ x: Float) -> Float { x > 0 ? x : x * alpha }
}
