import CKernels
import TFLiteFormat
import TensorCore

/// SUB: float32, int32, int64, and uint8/int8 with TFLite's quantized arithmetic (sub.cc
/// PrepareGeneralSubOp: the same rescaling as ADD, the second input subtracted).
enum Sub {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let activation = try BinaryOp.activation(context)
        let (a, b, plan) = try BinaryOp.prepareOperands(&context, types: [.float32, .int32, .int64, .uint8, .int8])
        switch a.type {
        case .float32:
            let (lo, hi) = BinaryOp.floatRange(activation)
            if let fast = OptimizedBinaryFloatKernel(isa: context.instructionSet, op: Int32(CK_BINARY_SUB), plan: plan, lo: lo, hi: hi) {
                return fast
            }
            return BroadcastBinaryKernel(plan: plan, function: FloatArithmetic<SubOperation>(min: lo, max: hi))
        case .int32:
            let (lo, hi) = BinaryOp.integerRange(activation, as: Int32.self)
            return BroadcastBinaryKernel(plan: plan, function: IntegerArithmetic<SubOperation, Int32>(min: lo, max: hi))
        case .int64:
            let (lo, hi) = BinaryOp.integerRange(activation, as: Int64.self)
            return BroadcastBinaryKernel(plan: plan, function: IntegerArithmetic<SubOperation, Int64>(min: lo, max: hi))
        case .uint8:
            try BinaryOp.expectQuantized(context, a, b)
            let f = QuantizedAddSub<UInt8>(a, b, context.outputs[0], activation: activation, subtract: true)
            return f.optimizedKernel(isa: context.instructionSet, context, a, b) ?? BroadcastBinaryKernel(plan: plan, function: f)
        default:
            try BinaryOp.expectQuantized(context, a, b)
            let f = QuantizedAddSub<Int8>(a, b, context.outputs[0], activation: activation, subtract: true)
            return f.optimizedKernel(isa: context.instructionSet, context, a, b) ?? BroadcastBinaryKernel(plan: plan, function: f)
        }
    }
}
