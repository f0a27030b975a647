import TFLiteFormat

/// AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SUM, ARG_MAX.
enum PoolingKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [
        .averagePool2D: AveragePool2D.prepare,
        .maxPool2D: MaxPool2D.prepare,
        .mean: Mean.prepare,
        .sum: Sum.prepare,
        .argMax: ArgMax.prepare,
    ]
}
