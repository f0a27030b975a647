/// An error from a vision task: an incompatible model, bad options, a bad image or call.
///
/// ``code`` says what kind of problem it is; ``message`` says what was wrong and what to do.
public struct VisionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of vision task error.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Value: Sendable, Hashable { case incompatibleModel, invalidOptions, invalidImage, invalidCall, modelNotFound }
        let value: Value
        /// The model does not meet the task's input/output contract.
        public static let incompatibleModel = Code(value: .incompatibleModel)
        /// An option value is invalid (e.g. maxResults 0, both allow and deny lists).
        public static let invalidOptions = Code(value: .invalidOptions)
        /// The image or region of interest cannot be used.
        public static let invalidImage = Code(value: .invalidImage)
        /// A method was called in the wrong running mode or with a non-increasing timestamp.
        public static let invalidCall = Code(value: .invalidCall)
        /// A model file (e.g. a default model) was not found.
        public static let modelNotFound = Code(value: .modelNotFound)

        /// The code's name, e.g. "invalidOptions".
        public var description: String {
            switch value {
            case .incompatibleModel: return "incompatibleModel"
            case .invalidOptions: return "invalidOptions"
            case .invalidImage: return "invalidImage"
            case .invalidCall: return "invalidCall"
            case .modelNotFound: return "modelNotFound"
            }
        }
    }

    /// What kind of problem it is.
    public let code: Code
    /// What was wrong and what to do (ML Kit's or MediaPipe's text where they define one).
    public let message: String

    /// An error of kind `code` explained by `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
