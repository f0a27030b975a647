/// The element type of a tensor.
///
/// The cases mirror TFLite's `TensorType` (schema.fbs); `TFLiteFormat` maps the schema codes.
public enum ElementType: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case float32, float16, bfloat16, float64
    case int4, int8, int16, int32, int64
    case uint8, uint16, uint32, uint64
    case bool, string, complex64, complex128, resource, variant

    /// Bytes per element, or `nil` for types without a fixed size (string, resource, variant)
    /// and for sub-byte types (int4).
    public var byteSize: Int? {
        switch self {
        case .bool, .int8, .uint8: return 1
        case .float16, .bfloat16, .int16, .uint16: return 2
        case .float32, .int32, .uint32: return 4
        case .float64, .int64, .uint64, .complex64: return 8
        case .complex128: return 16
        case .int4, .string, .resource, .variant: return nil
        }
    }

    /// The lower-case numpy name (`uint8`, `float32`, ...), as used by the goldens and the CLI's JSON.
    public var numpyName: String {
        switch self {
        case .float32: return "float32"
        case .float16: return "float16"
        case .bfloat16: return "bfloat16"
        case .float64: return "float64"
        case .int4: return "int4"
        case .int8: return "int8"
        case .int16: return "int16"
        case .int32: return "int32"
        case .int64: return "int64"
        case .uint8: return "uint8"
        case .uint16: return "uint16"
        case .uint32: return "uint32"
        case .uint64: return "uint64"
        case .bool: return "bool"
        case .string: return "string"
        case .complex64: return "complex64"
        case .complex128: return "complex128"
        case .resource: return "resource"
        case .variant: return "variant"
        }
    }

    /// Parses a numpy name as produced by ``numpyName``.
    public init?(numpyName: String) {
        guard let match = ElementType.allCases.first(where: { $0.numpyName == numpyName }) else { return nil }
        self = match
    }

    /// Whether values of this type are quantized integers when the tensor carries quantization parameters.
    public var isInteger: Bool {
        switch self {
        case .int4, .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64: return true
        default: return false
        }
    }

    public var description: String { numpyName }
}
