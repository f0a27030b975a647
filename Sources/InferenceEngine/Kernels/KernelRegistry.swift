import TFLiteFormat

/// Maps operator codes to kernel factories. Each group of kernels (one op per file) contributes its
/// table here; to add an op, write `Kernels/<Group>/<Op>.swift` with a factory and list it in its
/// group's table.
enum KernelRegistry {
    static let builtins: [BuiltinOperator: KernelFactory] = {
        var table: [BuiltinOperator: KernelFactory] = [:]
        for group in [ConvolutionKernels.builtins, ElementwiseKernels.builtins, ActivationKernels.builtins,
                      ShapeKernels.builtins, PoolingKernels.builtins, QuantizeKernels.builtins] {
            table.merge(group) { first, _ in first }
        }
        return table
    }()

    static let customs: [String: KernelFactory] = {
        var table: [String: KernelFactory] = [:]
        for group in [ConvolutionKernels.customs, DetectionKernels.customs] {
            table.merge(group) { first, _ in first }
        }
        return table
    }()

    static func factory(for code: OperatorCode) -> KernelFactory? {
        if code.builtinCode == .custom {
            return code.customCode.flatMap { customs[$0] }
        }
        return builtins[code.builtinCode]
    }
}
