import TensorCore

extension ElementType {
    /// Maps a TFLite `TensorType` code (schema.fbs) to an element type.
    public init?(tfliteCode code: Int8) {
        switch code {
        case 0: self = .float32
        case 1: self = .float16
        case 2: self = .int32
        case 3: self = .uint8
        case 4: self = .int64
        case 5: self = .string
        case 6: self = .bool
        case 7: self = .int16
        case 8: self = .complex64
        case 9: self = .int8
        case 10: self = .float64
        case 11: self = .complex128
        case 12: self = .uint64
        case 13: self = .resource
        case 14: self = .variant
        case 15: self = .uint32
        case 16: self = .uint16
        case 17: self = .int4
        case 18: self = .bfloat16
        default: return nil
        }
    }
}
