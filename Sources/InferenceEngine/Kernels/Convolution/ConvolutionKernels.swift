import TFLiteFormat

/// CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias.
enum ConvolutionKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [
        .conv2D: Conv2DKernel.prepare,
        .depthwiseConv2D: DepthwiseConv2DKernel.prepare,
        .fullyConnected: FullyConnectedKernel.prepare,
        .transposeConv: TransposeConvKernel.prepare,
    ]
    static let customs: [String: KernelFactory] = [
        "Convolution2DTransposeBias": TransposeConvKernel.prepareMediaPipe,
    ]
}
