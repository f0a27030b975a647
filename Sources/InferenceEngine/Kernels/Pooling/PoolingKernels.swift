import TFLiteFormat

/// AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SUM, ARG_MAX.
enum PoolingKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [:]
}
