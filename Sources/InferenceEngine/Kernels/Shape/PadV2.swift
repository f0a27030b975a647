import TFLiteFormat
import TensorCore

/// PADV2 (tensorflow/lite/kernels/pad.cc): PAD with a third input holding the padding value (one
/// element of the input's type; for quantized tensors it must share the output's parameters and
/// is used as is). Without the third input it behaves like PAD.
enum PadV2 {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2...3, outputs: 1...1)
        return try Pad.prepare(&context, constantValue: context.optionalInput(2))
    }
}
