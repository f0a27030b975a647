import TFLiteFormat

/// Unary activations and SOFTMAX: LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LEAKY_RELU, PRELU, HARD_SWISH, SOFTMAX.
enum ActivationKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [
        .logistic: Logistic.prepare,
        .tanh: Tanh.prepare,
        .relu: Relu.prepareRelu,
        .relu6: Relu.prepareRelu6,
        .reluN1To1: Relu.prepareReluN1To1,
        .relu0To1: Relu.prepareRelu0To1,
        .leakyRelu: LeakyRelu.prepare,
        .prelu: Prelu.prepare,
        .hardSwish: HardSwish.prepare,
        .softmax: Softmax.prepare,
    ]
}
