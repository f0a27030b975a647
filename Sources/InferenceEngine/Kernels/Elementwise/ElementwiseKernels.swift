import TFLiteFormat

/// Binary element-wise ops with broadcasting: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE.
enum ElementwiseKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [:]
}
