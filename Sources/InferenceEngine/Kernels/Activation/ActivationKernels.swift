import TFLiteFormat

/// Unary activations and SOFTMAX: LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, PRELU, HARD_SWISH, SOFTMAX.
enum ActivationKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [:]
}
