import TFLiteFormat
import TensorCore

/// MAXIMUM and MINIMUM (maximum_minimum.cc): float32, int32, int64, int16, and uint8/int8 compared
/// as raw values, which requires both inputs and the output to share quantization parameters.
enum MaximumMinimum {
    static func prepareMaximum(_ context: inout OpContext) throws -> any Kernel {
        try prepare(&context, maximum: true)
    }

    static func prepareMinimum(_ context: inout OpContext) throws -> any Kernel {
        try prepare(&context, maximum: false)
    }

    static func prepare(_ context: inout OpContext, maximum: Bool) throws -> any Kernel {
        let (a, b, plan) = try BinaryOp.prepareOperands(&context, types: [.float32, .int32, .int64, .int16, .uint8, .int8])
        if a.type == .uint8 || a.type == .int8 || a.type == .int16 {
            let output = context.outputs[0]
            func params(_ t: TensorInfo) -> (Float, Int64) { (t.quantization?.scale ?? 0, t.quantization?.zeroPoint ?? 0) }
            guard params(a) == params(b), params(a) == params(output), !(a.quantization?.isPerChannel ?? false) else {
                throw context.fail("quantized \(a.type) inputs and output must share one scale and zero point (got \(params(a)), \(params(b)) and \(params(output)))",
                                   code: .invalidQuantization)
            }
        }
        switch a.type {
        case .float32: return kernel(plan, Float.self, maximum)
        case .int32: return kernel(plan, Int32.self, maximum)
        case .int64: return kernel(plan, Int64.self, maximum)
        case .int16: return kernel(plan, Int16.self, maximum)
        case .uint8: return kernel(plan, UInt8.self, maximum)
        default: return kernel(plan, Int8.self, maximum)
        }
    }

    private static func kernel<T: Comparable & Sendable>(_ plan: BroadcastPlan, _ type: T.Type, _ maximum: Bool) -> any Kernel {
        maximum ? BroadcastBinaryKernel(plan: plan, function: MaximumFunction<T>())
                : BroadcastBinaryKernel(plan: plan, function: MinimumFunction<T>())
    }
}

/// `el1 > el2 ? el1 : el2`, as TFLite's MaximumOp.
struct MaximumFunction<T: Comparable & Sendable>: BinaryElementFunction {
    @inline(__always)
    func callAsFunction(_ a: T, _ b: T) -> T { a > b ? a : b }
}

/// `el1 < el2 ? el1 : el2`, as TFLite's MinimumOp.
struct MinimumFunction<T: Comparable & Sendable>: BinaryElementFunction {
    @inline(__always)
    func callAsFunction(_ a: T, _ b: T) -> T { a < b ? a : b }
}
