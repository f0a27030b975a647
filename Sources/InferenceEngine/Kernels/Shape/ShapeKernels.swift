import TFLiteFormat

/// Data movement: RESHAPE, SQUEEZE, EXPAND_DIMS, CONCATENATION, SPLIT, SPLIT_V, SLICE, STRIDED_SLICE,
/// PAD, PADV2, TRANSPOSE, GATHER, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR.
enum ShapeKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [:]
}
