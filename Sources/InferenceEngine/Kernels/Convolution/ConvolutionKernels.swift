import TFLiteFormat

/// CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias.
enum ConvolutionKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [:]
    static let customs: [String: KernelFactory] = [:]
}
