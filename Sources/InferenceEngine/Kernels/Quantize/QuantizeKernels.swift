import TFLiteFormat

/// QUANTIZE (incl. requantize), DEQUANTIZE (incl. float16), CAST.
enum QuantizeKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [
        .quantize: Quantize.prepare,
        .dequantize: Dequantize.prepare,
        .cast: Cast.prepare,
    ]
}
