/// An error from loading or running a model in the engine.
///
/// ``code`` says what kind of problem it is; ``message`` says what was wrong, where (operator name
/// and node index), and what to do about it.
public struct EngineError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Value: Sendable, Hashable { case unsupportedOperator, invalidModel, invalidQuantization, resourceLimit, invalidArgument }
        let value: Value
        /// The model uses a builtin or custom operator (or a variant of one) that the engine does not implement.
        public static let unsupportedOperator = Code(value: .unsupportedOperator)
        /// The model is structurally valid but inconsistent: shapes, types or operands do not fit an op's contract.
        public static let invalidModel = Code(value: .invalidModel)
        /// Quantization parameters are unusable (non-positive or non-finite scale, wrong per-channel counts).
        public static let invalidQuantization = Code(value: .invalidQuantization)
        /// The model asks for more memory than the configured limits.
        public static let resourceLimit = Code(value: .resourceLimit)
        /// A caller passed a wrong input (size, index, name).
        public static let invalidArgument = Code(value: .invalidArgument)

        public var description: String {
            switch value {
            case .unsupportedOperator: return "unsupportedOperator"
            case .invalidModel: return "invalidModel"
            case .invalidQuantization: return "invalidQuantization"
            case .resourceLimit: return "resourceLimit"
            case .invalidArgument: return "invalidArgument"
            }
        }
    }

    public let code: Code
    public let message: String
    /// The node (operator index in execution order of the main subgraph) the error is about, if any.
    public let nodeIndex: Int?
    /// The operator name (`CONV_2D`, `CUSTOM:name`), if any.
    public let operatorName: String?

    public init(_ code: Code, _ message: String, nodeIndex: Int? = nil, operatorName: String? = nil) {
        self.code = code
        self.message = message
        self.nodeIndex = nodeIndex
        self.operatorName = operatorName
    }

    public var description: String { message }
}
