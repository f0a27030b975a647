import TFLiteFormat

/// Binary element-wise ops with broadcasting: ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE.
enum ElementwiseKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [
        .add: Add.prepare,
        .sub: Sub.prepare,
        .mul: Mul.prepare,
        .div: Div.prepare,
        .maximum: MaximumMinimum.prepareMaximum,
        .minimum: Minimum.prepare,
        .squaredDifference: SquaredDifference.prepare,
    ]
}
