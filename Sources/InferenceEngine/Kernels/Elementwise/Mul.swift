import CKernels
import TFLiteFormat
import TensorCore

/// MUL: float32, int32, int64, and uint8/int8 with TFLite's quantized arithmetic (mul.cc: output
/// multiplier = input1_scale * input2_scale / output_scale, computed in float as TFLite does).
enum Mul {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let activation = try BinaryOp.activation(context)
        let (a, b, plan) = try BinaryOp.prepareOperands(&context, types: [.float32, .int32, .int64, .uint8, .int8])
        switch a.type {
        case .float32:
            let (lo, hi) = BinaryOp.floatRange(activation)
            if let fast = OptimizedBinaryFloatKernel(isa: context.instructionSet, op: Int32(CK_BINARY_MUL), plan: plan, lo: lo, hi: hi) {
                return fast
            }
            return BroadcastBinaryKernel(plan: plan, function: FloatArithmetic<MulOperation>(min: lo, max: hi))
        case .int32:
            let (lo, hi) = BinaryOp.integerRange(activation, as: Int32.self)
            return BroadcastBinaryKernel(plan: plan, function: IntegerArithmetic<MulOperation, Int32>(min: lo, max: hi))
        case .int64:
            let (lo, hi) = BinaryOp.integerRange(activation, as: Int64.self)
            return BroadcastBinaryKernel(plan: plan, function: IntegerArithmetic<MulOperation, Int64>(min: lo, max: hi))
        case .uint8:
            try BinaryOp.expectQuantized(context, a, b)
            return BroadcastBinaryKernel(plan: plan, function: QuantizedMul<UInt8>(a, b, context.outputs[0], activation: activation))
        default:
            try BinaryOp.expectQuantized(context, a, b)
            return BroadcastBinaryKernel(plan: plan, function: QuantizedMul<Int8>(a, b, context.outputs[0], activation: activation))
        }
    }
}

/// TFLite's 8-bit quantized MUL (reference_ops::MulElementwise): the product of the offset inputs,
/// rescaled by one fixed-point multiplier.
struct QuantizedMul<T: FixedWidthInteger & Sendable>: BinaryElementFunction {
    let input1Offset: Int32, input2Offset: Int32, outputOffset: Int32
    let outputMultiplier: Int32, outputShift: Int
    let activationMin: Int32, activationMax: Int32

    init(_ a: TensorInfo, _ b: TensorInfo, _ output: TensorInfo, activation: FusedActivation) {
        input1Offset = -a.zeroPoint
        input2Offset = -b.zeroPoint
        outputOffset = output.zeroPoint
        // `input1->params.scale * input2->params.scale / output->params.scale` is float arithmetic
        // in TFLite; tiny scales (1e-35) flush the multiplier to 0 (output = zero point).
        let real = a.scale * b.scale / output.scale
        (outputMultiplier, outputShift) = FixedPoint.quantizeMultiplier(Double(real))
        (activationMin, activationMax) = FixedPoint.activationRange(activation, scale: output.scale, zeroPoint: output.zeroPoint, type: output.type)
    }

    @inline(__always)
    func callAsFunction(_ x: T, _ y: T) -> T {
        let product = (input1Offset &+ Int32(x)) &* (input2Offset &+ Int32(y))
        let output = Int64(FixedPoint.multiplySaturating(product, by: outputMultiplier, shift: outputShift)) + Int64(outputOffset)
        return T(truncatingIfNeeded: clampLikeTFLite(output, Int64(activationMin), Int64(activationMax)))
    }
}
