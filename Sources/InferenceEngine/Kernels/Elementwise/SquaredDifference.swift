import TFLiteFormat
import TensorCore

/// SQUARED_DIFFERENCE (squared_difference.cc): float32, int32, and int8 with TFLite's quantized
/// arithmetic (left shift 7, inputs rescaled to twice the larger input scale, the squared
/// difference rescaled to the output; no fused activation).
enum SquaredDifference {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let (a, b, plan) = try BinaryOp.prepareOperands(&context, types: [.float32, .int32, .int8])
        switch a.type {
        case .float32:
            return BroadcastBinaryKernel(plan: plan, function: FloatSquaredDifference())
        case .int32:
            return BroadcastBinaryKernel(plan: plan, function: IntegerSquaredDifference())
        default:
            try BinaryOp.expectQuantized(context, a, b)
            return BroadcastBinaryKernel(plan: plan, function: QuantizedSquaredDifference(a, b, context.outputs[0]))
        }
    }
}

struct FloatSquaredDifference: BinaryElementFunction {
    @inline(__always)
    func callAsFunction(_ a: Float, _ b: Float) -> Float {
        let d = a - b
        return d * d
    }
}

struct IntegerSquaredDifference: BinaryElementFunction {
    @inline(__always)
    func callAsFunction(_ a: Int32, _ b: Int32) -> Int32 {
        let d = a &- b
        return d &* d
    }
}

struct QuantizedSquaredDifference: BinaryElementFunction {
    let input1Offset: Int32, input2Offset: Int32, outputOffset: Int32
    let input1Multiplier: Int32, input1Shift: Int
    let input2Multiplier: Int32, input2Shift: Int
    let outputMultiplier: Int32, outputShift: Int
    static let leftShift: Int32 = 7

    init(_ a: TensorInfo, _ b: TensorInfo, _ output: TensorInfo) {
        input1Offset = -a.zeroPoint
        input2Offset = -b.zeroPoint
        outputOffset = output.zeroPoint
        let twiceMaxInputScale = Double(2 * Swift.max(a.scale, b.scale))
        let realInput1 = Double(a.scale) / twiceMaxInputScale
        let realInput2 = Double(b.scale) / twiceMaxInputScale
        let realOutput = (twiceMaxInputScale * twiceMaxInputScale) / Double(Float(1 << 14) * output.scale)
        (input1Multiplier, input1Shift) = FixedPoint.quantizeMultiplier(realInput1)
        (input2Multiplier, input2Shift) = FixedPoint.quantizeMultiplier(realInput2)
        (outputMultiplier, outputShift) = FixedPoint.quantizeMultiplier(realOutput)
    }

    @inline(__always)
    func callAsFunction(_ x: Int8, _ y: Int8) -> Int8 {
        let shifted1 = (input1Offset &+ Int32(x)) &<< Self.leftShift
        let shifted2 = (input2Offset &+ Int32(y)) &<< Self.leftShift
        let scaled1 = FixedPoint.multiply(shifted1, by: input1Multiplier, shift: input1Shift)
        let scaled2 = FixedPoint.multiply(shifted2, by: input2Multiplier, shift: input2Shift)
        let diff = scaled1 &- scaled2
        let output = Int64(FixedPoint.multiplySaturating(diff &* diff, by: outputMultiplier, shift: outputShift)) + Int64(outputOffset)
        return Int8(clampLikeTFLite(output, -128, 127))
    }
}
