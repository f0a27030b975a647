import CKernels
import TFLiteFormat
import TensorCore

/// Shared pieces of the one-input activations: contract checks, float kernels, and 256-entry
/// lookup tables for 8-bit types (computed at prepare time with TFLite's exact arithmetic for
/// every possible input value, so running is a table lookup).
enum Unary {
    /// Checks one input and one output of the same allowed type; sets the output shape.
    @discardableResult
    static func prepareOperands(_ context: inout OpContext, types: Set<ElementType>) throws -> TensorInfo {
        try context.expect(inputs: 1, outputs: 1)
        let input = try context.input(0)
        try context.expect(input, type: types, "input")
        guard context.outputs[0].type == input.type else {
            throw context.fail("output has type \(context.outputs[0].type) but the input has type \(input.type)")
        }
        context.outputs[0].shape = input.shape
        return input
    }

    /// Checks usable per-tensor quantization of the input and the output.
    static func expectQuantized(_ context: OpContext, _ input: TensorInfo) throws {
        try expectQuantized(context, input, "input")
        try expectQuantized(context, context.outputs[0], "output")
    }

    static func expectQuantized(_ context: OpContext, _ t: TensorInfo, _ what: String) throws {
        try context.expectPerTensor(t, what)
        guard t.scale > 0, t.scale.isFinite else {
            throw context.fail("\(what) has quantization scale \(t.scale)", code: .invalidQuantization)
        }
        let (qmin, qmax) = FixedPoint.integerRange(t.type)
        guard let zp = t.quantization?.zeroPoint, zp >= Int64(qmin), zp <= Int64(qmax) else {
            throw context.fail("\(what) has zero point \(t.quantization?.zeroPoint ?? 0) outside the \(t.type) range", code: .invalidQuantization)
        }
    }

    /// A 256-entry table indexed by the input's bit pattern, filled by `f(q)` for every value `q`
    /// of the 8-bit type (the result is clamped to the type's range).
    static func table<T: FixedWidthInteger>(_ type: T.Type, _ f: (Int32) -> Int32) -> [T] {
        var table = [T](repeating: 0, count: 256)
        let (qmin, qmax) = (Int32(T.min), Int32(T.max))
        for q in qmin...qmax {
            let value = Swift.max(qmin, Swift.min(qmax, f(q)))
            table[Int(UInt8(truncatingIfNeeded: q))] = T(truncatingIfNeeded: value)
        }
        return table
    }

    /// An 8-bit lookup-table kernel for uint8 or int8 tensors.
    static func lookupKernel(_ input: TensorInfo, _ f: (Int32) -> Int32) -> any Kernel {
        input.type == .uint8 ? LookupTableKernel(count: input.elementCount, table: table(UInt8.self, f))
                             : LookupTableKernel(count: input.elementCount, table: table(Int8.self, f))
    }

    /// TFLite's LUTPopulate<uint8/int8>: dequantize in float, apply `transform`, requantize with
    /// `round(y * (1 / output_scale))` (half away from zero) plus the zero point, clamp.
    static func floatTable(input: TensorInfo, output: TensorInfo, _ transform: @escaping (Float) -> Float) -> (Int32) -> Int32 {
        let inputScale = input.scale, inputZeroPoint = input.zeroPoint
        let inverseScale = 1 / output.scale
        let outputZeroPoint = Float(output.zeroPoint)
        return { q in
            let dequantized = inputScale * Float(q - inputZeroPoint)
            let transformed = transform(dequantized)
            let rescaled = (transformed * inverseScale).rounded(.toNearestOrAwayFromZero)
            return saturatingInt32(rescaled + outputZeroPoint)
        }
    }

    /// `static_cast<int32_t>(x)` made total: truncation toward zero, saturating, NaN -> 0.
    @inline(__always)
    static func saturatingInt32(_ x: Float) -> Int32 {
        if x.isNaN { return 0 }
        if x >= 2147483648 { return Int32.max }
        if x < -2147483648 { return Int32.min }
        return Int32(x)
    }
}

/// The body of a kernel whose loop is generic over element types or functions.
protocol SpecializedKernelBody: Sendable {
    func execute(_ io: KernelIO)
}

/// Wraps a generic kernel body in a closure formed where its types are concrete (the generic
/// initializer is specialized at a call site in a prepare function), so that `run`, reached through
/// `any Kernel`, executes specialized code instead of unspecialized generic code.
struct SpecializedKernel: Kernel {
    private let body: @Sendable (KernelIO) -> Void

    init<K: SpecializedKernelBody>(_ kernel: K) {
        body = { io in kernel.execute(io) }
    }

    func run(_ io: KernelIO) { body(io) }
}

/// Maps every element through a 256-entry table indexed by its bit pattern.
struct LookupTableKernel: Kernel {
    let count: Int
    /// Output bit patterns (uint8 values or int8 two's complement).
    let table: [UInt8]
    /// The CKernels level for ck_lut_8 (nil: the portable loop).
    let isa: Int32?

    init<T: FixedWidthInteger>(count: Int, table: [T], isa: Int32? = nil) {
        self.count = count
        self.table = table.map { UInt8(truncatingIfNeeded: $0) }
        self.isa = isa
    }

    func run(_ io: KernelIO) {
        let input = io.input(0, as: UInt8.self)
        let output = io.output(0, as: UInt8.self)
        table.withUnsafeBufferPointer { t in
            guard let lut = t.baseAddress else { return }
            forEachChunk(count, io.parallel) { start, end in
                ck_lut_8(isa ?? Int32(CK_ISA_PORTABLE), lut, input, output, start, end)
            }
        }
    }
}

/// A float function applied element-wise.
protocol UnaryFloatFunction: Sendable {
    func callAsFunction(_ x: Float) -> Float
}

extension Unary {
    /// A float kernel applying `function` to every element.
    static func floatKernel<F: UnaryFloatFunction>(count: Int, function: F) -> any Kernel {
        SpecializedKernel(UnaryFloatKernelBody(count: count, function: function))
    }
}

struct UnaryFloatKernelBody<F: UnaryFloatFunction>: SpecializedKernelBody {
    let count: Int
    let function: F

    func execute(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
        let f = function
        forEachChunk(count, io.parallel) { start, end in
            for i in start..<end { output[i] = f(input[i]) }
        }
    }
}

/// Splits `count` elements into contiguous chunks spread over `parallel`.
@inline(__always)
func forEachChunk(_ count: Int, _ parallel: ParallelScope, _ body: (Int, Int) -> Void) {
    guard count > 0 else { return }
    let pieces = parallel.threadCount > 1 && count >= 16384 ? Swift.min(parallel.threadCount * 4, count / 4096) : 1
    parallel.forEach(pieces) { piece in
        let start = count / pieces * piece + Swift.min(piece, count % pieces)
        let end = start + count / pieces + (piece < count % pieces ? 1 : 0)
        body(start, end)
    }
}
