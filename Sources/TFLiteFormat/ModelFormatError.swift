/// An error reading a `.tflite` file: the file could not be read, or its bytes are not a valid model.
///
/// Every violation found by the verifier is one of these, never a crash: the ``code`` says which
/// kind of problem it is, the ``message`` says what was wrong and, where useful, at which byte offset.
public struct ModelFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem. A struct over a private enum, so that codes can be added later.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Value: Sendable, Hashable {
            case io, outOfBounds, invalidStructure, unsupported, invalidMetadata, invalidArchive
            case invalidFlexBuffer, resourceLimit
        }
        let value: Value

        /// The file could not be opened or read.
        public static let io = Code(value: .io)
        /// An offset, length or size points outside the buffer (a truncated or corrupt file).
        public static let outOfBounds = Code(value: .outOfBounds)
        /// The bytes are in bounds but do not form a valid model (bad vtable, wrong identifier,
        /// index out of range, unknown enum value, ...).
        public static let invalidStructure = Code(value: .invalidStructure)
        /// A valid file uses something this version cannot read (schema version, metadata parser version).
        public static let unsupported = Code(value: .unsupported)
        /// The `TFLITE_METADATA` buffer is not valid model metadata.
        public static let invalidMetadata = Code(value: .invalidMetadata)
        /// The ZIP archive of associated files is corrupt.
        public static let invalidArchive = Code(value: .invalidArchive)
        /// A FlexBuffer (custom op options) is corrupt.
        public static let invalidFlexBuffer = Code(value: .invalidFlexBuffer)
        /// The file asks for more than the configured limits allow.
        public static let resourceLimit = Code(value: .resourceLimit)

        public var description: String {
            switch value {
            case .io: return "io"
            case .outOfBounds: return "outOfBounds"
            case .invalidStructure: return "invalidStructure"
            case .unsupported: return "unsupported"
            case .invalidMetadata: return "invalidMetadata"
            case .invalidArchive: return "invalidArchive"
            case .invalidFlexBuffer: return "invalidFlexBuffer"
            case .resourceLimit: return "resourceLimit"
            }
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension ModelFormatError {
    static func bounds(_ what: String, offset: Int, size: Int, limit: Int) -> ModelFormatError {
        ModelFormatError(.outOfBounds,
            "The model is not a valid FlatBuffer buffer: \(what) at byte offset \(offset) (size \(size)) lies outside the \(limit)-byte buffer; the file is truncated or corrupt. Download or export the model again.")
    }

    static func structure(_ what: String) -> ModelFormatError {
        ModelFormatError(.invalidStructure, "The model is not a valid TFLite model: \(what). Check that the file is a .tflite model, and download or export it again.")
    }
}
