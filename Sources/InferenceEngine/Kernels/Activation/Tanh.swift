import Foundation
import TFLiteFormat
import TensorCore

/// TANH: float32, and uint8/int8 through TFLite's 256-entry table computed in float from the
/// dequantized input (activations.cc TanhPrepare, kGenericOptimized).
enum Tanh {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let input = try Unary.prepareOperands(&context, types: [.float32, .uint8, .int8])
        if input.type == .float32 {
            return Unary.floatKernel(count: input.elementCount, function: TanhFunction())
        }
        try Unary.expectQuantized(context, input)
        return Unary.lookupKernel(input, Unary.floatTable(input: input, output: context.outputs[0]) { Foundation.tanh($0) })
    }
}

struct TanhFunction: UnaryFloatFunction {
    @inline(__always)
    func callAsFunction(_ x: Float) -> Float { Foundation.tanh(x) }
}
