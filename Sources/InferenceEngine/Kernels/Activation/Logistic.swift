import CKernels
import Foundation
import TFLiteFormat
import TensorCore

/// LOGISTIC (sigmoid): float32, and uint8/int8 through TFLite's 256-entry table computed in float
/// from the dequantized input (activations.cc SigmoidPrepare, kGenericOptimized), which requires
/// an output scale of exactly 1/256.
enum Logistic {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let input = try Unary.prepareOperands(&context, types: [.float32, .uint8, .int8])
        if input.type == .float32 {
            if let isa = context.instructionSet {
                return OptimizedUnaryFloatKernel(isa: isa, count: input.elementCount, function: ck_logistic_f32)
            }
            return Unary.floatKernel(count: input.elementCount, function: LogisticFunction())
        }
        try Unary.expectQuantized(context, input)
        let output = context.outputs[0]
        guard Double(output.scale) == 1.0 / 256 else {
            throw context.fail("\(output.type) output must have scale 1/256, has \(output.scale)", code: .invalidQuantization)
        }
        return Unary.lookupKernel(input, Unary.floatTable(input: input, output: output) { 1 / (1 + Foundation.exp(-$0)) })
    }
}

struct LogisticFunction: UnaryFloatFunction {
    @inline(__always)
    func callAsFunction(_ x: Float) -> Float { 1 / (1 + Foundation.exp(-x)) }
}

/// Float LOGISTIC through CKernels' vectorized exp (within 5e-7 relative of the reference).
/// A float32 element-wise function by a CKernels kernel (`ck_logistic_f32`, `ck_hardswish_f32`):
/// contiguous chunks spread over the threads.
struct OptimizedUnaryFloatKernel: Kernel {
    typealias Function = @convention(c) (Int32, UnsafePointer<Float>?, UnsafeMutablePointer<Float>?, Int, Int) -> Void
    let isa: Int32
    let count: Int
    let function: Function

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
        forEachChunk(count, io.parallel) { start, end in
            function(isa, input, output, start, end)
        }
    }
}
