import TFLiteFormat
import TensorCore

/// CAST (cast.cc) between float32, float16 (as a source), int64, int32, int16, int8, uint8 and bool
/// with C++ semantics as LiteRT implements them:
///
/// - float -> integer: truncation toward zero, saturating at the type's bounds, NaN -> the type's
///   maximum (TFLite's SafeCast with `nan_result = max`).
/// - integer -> narrower integer: two's-complement wrap-around (`static_cast`).
/// - anything -> bool: `value != 0` (NaN is true); bool -> number: 0 or 1.
/// - integer -> float: nearest float.
enum Cast {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 1, outputs: 1)
        let input = try context.input(0)
        let types: Set<ElementType> = [.float32, .int64, .int32, .int16, .int8, .uint8, .bool]
        try context.expect(input, type: types.union([.float16]), "input")
        try context.expect(context.outputs[0], type: types, "output")
        context.outputs[0].shape = input.shape
        let count = input.elementCount
        switch input.type {
        case .float32: return kernel(FloatSource.self, count, context.outputs[0].type)
        case .float16: return kernel(HalfSource.self, count, context.outputs[0].type)
        case .int64: return kernel(IntegerSource<Int64>.self, count, context.outputs[0].type)
        case .int32: return kernel(IntegerSource<Int32>.self, count, context.outputs[0].type)
        case .int16: return kernel(IntegerSource<Int16>.self, count, context.outputs[0].type)
        case .int8: return kernel(IntegerSource<Int8>.self, count, context.outputs[0].type)
        case .uint8: return kernel(IntegerSource<UInt8>.self, count, context.outputs[0].type)
        default: return kernel(BoolSource.self, count, context.outputs[0].type)
        }
    }

    private static func kernel<S: CastSource>(_ source: S.Type, _ count: Int, _ output: ElementType) -> any Kernel {
        switch output {
        case .float32: return SpecializedKernel(CastKernel<S, FloatTarget>(count: count))
        case .int64: return SpecializedKernel(CastKernel<S, IntegerTarget<Int64>>(count: count))
        case .int32: return SpecializedKernel(CastKernel<S, IntegerTarget<Int32>>(count: count))
        case .int16: return SpecializedKernel(CastKernel<S, IntegerTarget<Int16>>(count: count))
        case .int8: return SpecializedKernel(CastKernel<S, IntegerTarget<Int8>>(count: count))
        case .uint8: return SpecializedKernel(CastKernel<S, IntegerTarget<UInt8>>(count: count))
        default: return SpecializedKernel(CastKernel<S, BoolTarget>(count: count))
        }
    }
}

/// A value read from a CAST input: an exact integer or a float.
enum CastScalar {
    case integer(Int64)
    case float(Float)
}

protocol CastSource {
    associatedtype Storage
    static func read(_ value: Storage) -> CastScalar
}

protocol CastTarget {
    associatedtype Storage
    static func make(_ value: CastScalar) -> Storage
}

enum FloatSource: CastSource {
    @inline(__always) static func read(_ value: Float) -> CastScalar { .float(value) }
}

enum HalfSource: CastSource {
    @inline(__always) static func read(_ value: UInt16) -> CastScalar { .float(Float16Bits.float(value)) }
}

enum IntegerSource<T: FixedWidthInteger>: CastSource {
    @inline(__always) static func read(_ value: T) -> CastScalar { .integer(Int64(value)) }
}

enum BoolSource: CastSource {
    @inline(__always) static func read(_ value: UInt8) -> CastScalar { .integer(value != 0 ? 1 : 0) }
}

enum FloatTarget: CastTarget {
    @inline(__always)
    static func make(_ value: CastScalar) -> Float {
        switch value {
        case .integer(let i): return Float(i)
        case .float(let f): return f
        }
    }
}

enum IntegerTarget<T: FixedWidthInteger>: CastTarget {
    @inline(__always)
    static func make(_ value: CastScalar) -> T {
        switch value {
        case .integer(let i): return T(truncatingIfNeeded: i)
        case .float(let f):
            if f.isNaN { return T.max }
            if f < Float(T.min) { return T.min }
            // T.max + 1 is a power of two, exactly representable.
            if f >= Float(T.max / 2 + 1) * 2 { return T.max }
            return T(f.rounded(.towardZero))
        }
    }
}

enum BoolTarget: CastTarget {
    @inline(__always)
    static func make(_ value: CastScalar) -> UInt8 {
        switch value {
        case .integer(let i): return i != 0 ? 1 : 0
        case .float(let f): return f != 0 ? 1 : 0
        }
    }
}

struct CastKernel<S: CastSource, D: CastTarget>: SpecializedKernelBody {
    let count: Int

    func execute(_ io: KernelIO) {
        let input = io.input(0, as: S.Storage.self)
        let output = io.output(0, as: D.Storage.self)
        forEachChunk(count, io.parallel) { start, end in
            for i in start..<end { output[i] = D.make(S.read(input[i])) }
        }
    }
}
