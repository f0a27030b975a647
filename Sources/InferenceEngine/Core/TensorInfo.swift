import TensorCore

/// Public description of a model input or output.
public struct TensorDescription: Sendable, Hashable {
    public let name: String
    public let type: ElementType
    public let shape: Shape
    public let quantization: QuantizationParameters?
    /// Bytes of the tensor's data.
    public let byteCount: Int
}

/// What a kernel sees of one tensor while it is being prepared: type, (propagated) shape,
/// quantization, and the data if the tensor is constant.
struct TensorInfo: @unchecked Sendable {
    var name: String
    var type: ElementType
    var shape: [Int]
    var quantization: QuantizationParameters?
    /// Constant data (weights, shape operands), valid for the life of the compiled model. Aligned
    /// to the element type.
    var constant: UnsafeRawBufferPointer?

    var isConstant: Bool { constant != nil }
    var rank: Int { shape.count }
    /// Element count (shapes are validated to be non-negative and not to overflow).
    var elementCount: Int { shape.reduce(1, *) }
    var byteCount: Int { elementCount * (type.byteSize ?? 0) }

    /// Per-tensor scale (first), 0 if not quantized.
    var scale: Float { quantization?.scale ?? 0 }
    /// Per-tensor zero point (first), 0 if not quantized.
    var zeroPoint: Int32 { Int32(truncatingIfNeeded: quantization?.zeroPoint ?? 0) }

    /// Reads a constant integer tensor (int32 or int64) as [Int], e.g. shape operands.
    func constantIntegers() -> [Int]? {
        guard let data = constant else { return nil }
        switch type {
        case .int32: return (0..<elementCount).map { Int(data.loadUnaligned(fromByteOffset: $0 * 4, as: Int32.self)) }
        case .int64: return (0..<elementCount).map { Int(truncatingIfNeeded: data.loadUnaligned(fromByteOffset: $0 * 8, as: Int64.self)) }
        default: return nil
        }
    }

    /// Reads a constant float32 tensor.
    func constantFloats() -> [Float]? {
        guard let data = constant, type == .float32 else { return nil }
        return (0..<elementCount).map { data.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
    }
}
