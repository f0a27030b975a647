import CKernels
import TFLiteFormat
import TensorCore

/// ADD: float32, int32, int64, and uint8/int8 with TFLite's quantized arithmetic (add.cc Prepare:
/// left shift 20, input multipliers relative to twice the larger input scale, output multiplier).
enum Add {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let activation = try BinaryOp.activation(context)
        let (a, b, plan) = try BinaryOp.prepareOperands(&context, types: [.float32, .int32, .int64, .uint8, .int8])
        switch a.type {
        case .float32:
            let (lo, hi) = BinaryOp.floatRange(activation)
            if let fast = OptimizedBinaryFloatKernel(isa: context.instructionSet, op: Int32(CK_BINARY_ADD), plan: plan, lo: lo, hi: hi) {
                return fast
            }
            return BroadcastBinaryKernel(plan: plan, function: FloatArithmetic<AddOperation>(min: lo, max: hi))
        case .int32:
            let (lo, hi) = BinaryOp.integerRange(activation, as: Int32.self)
            return BroadcastBinaryKernel(plan: plan, function: IntegerArithmetic<AddOperation, Int32>(min: lo, max: hi))
        case .int64:
            let (lo, hi) = BinaryOp.integerRange(activation, as: Int64.self)
            return BroadcastBinaryKernel(plan: plan, function: IntegerArithmetic<AddOperation, Int64>(min: lo, max: hi))
        case .uint8:
            try BinaryOp.expectQuantized(context, a, b)
            let f = QuantizedAddSub<UInt8>(a, b, context.outputs[0], activation: activation, subtract: false)
            return f.optimizedKernel(isa: context.instructionSet, context, a, b) ?? BroadcastBinaryKernel(plan: plan, function: f)
        default:
            try BinaryOp.expectQuantized(context, a, b)
            let f = QuantizedAddSub<Int8>(a, b, context.outputs[0], activation: activation, subtract: false)
            return f.optimizedKernel(isa: context.instructionSet, context, a, b) ?? BroadcastBinaryKernel(plan: plan, function: f)
        }
    }
}

/// The arithmetic of ADD/SUB/MUL/DIV as a type, so each kernel is specialized for its operation.
protocol ArithmeticOperation: Sendable {
    static func apply(_ a: Float, _ b: Float) -> Float
    /// Integer version (wrapping like TFLite's int32/int64 kernels on two's-complement hardware).
    static func apply<T: FixedWidthInteger & SignedInteger>(_ a: T, _ b: T) -> T
}

enum AddOperation: ArithmeticOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a + b }
    @inline(__always) static func apply<T: FixedWidthInteger & SignedInteger>(_ a: T, _ b: T) -> T { a &+ b }
}

enum SubOperation: ArithmeticOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a - b }
    @inline(__always) static func apply<T: FixedWidthInteger & SignedInteger>(_ a: T, _ b: T) -> T { a &- b }
}

enum MulOperation: ArithmeticOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a * b }
    @inline(__always) static func apply<T: FixedWidthInteger & SignedInteger>(_ a: T, _ b: T) -> T { a &* b }
}

/// Division truncates toward zero; a zero integer divisor (which TFLite reports at run time) gives
/// 0, and `min / -1` wraps.
enum DivOperation: ArithmeticOperation {
    @inline(__always) static func apply(_ a: Float, _ b: Float) -> Float { a / b }
    @inline(__always) static func apply<T: FixedWidthInteger & SignedInteger>(_ a: T, _ b: T) -> T {
        b == 0 ? 0 : a.dividedReportingOverflow(by: b).partialValue
    }
}

/// Float ADD/SUB/MUL/DIV followed by the fused activation clamp.
struct FloatArithmetic<Op: ArithmeticOperation>: BinaryElementFunction {
    let min: Float
    let max: Float

    @inline(__always)
    func callAsFunction(_ a: Float, _ b: Float) -> Float {
        clampLikeTFLite(Op.apply(a, b), min, max)
    }
}

/// Integer ADD/SUB/MUL/DIV followed by the fused activation clamp.
struct IntegerArithmetic<Op: ArithmeticOperation, T: FixedWidthInteger & SignedInteger & Sendable>: BinaryElementFunction {
    let min: T
    let max: T

    @inline(__always)
    func callAsFunction(_ a: T, _ b: T) -> T {
        clampLikeTFLite(Op.apply(a, b), min, max)
    }
}

/// TFLite's 8-bit quantized ADD/SUB (reference_ops::AddElementwise / SubElementwise and the
/// integer_ops variants): both inputs are rescaled to a common scale with 20 bits of headroom, summed
/// (or subtracted), and rescaled to the output.
///
/// The rescaled inputs depend on one 8-bit value each, so they are tabulated at prepare time with
/// TFLite's exact arithmetic; only the output rescaling runs per element.
struct QuantizedAddSub<T: FixedWidthInteger & Sendable>: BinaryElementFunction {
    let scaled1: Int32Table
    let scaled2: Int32Table
    let outputOffset: Int32
    let outputMultiplier: Int32, outputShift: Int
    let activationMin: Int32, activationMax: Int32

    init(_ a: TensorInfo, _ b: TensorInfo, _ output: TensorInfo, activation: FusedActivation, subtract: Bool) {
        let leftShift: Int32 = 20
        // TFLite computes `2 * max(scale1, scale2)` in float, the ratios in double.
        let twiceMaxInputScale = Double(2 * Swift.max(a.scale, b.scale))
        let realInput1 = Double(a.scale) / twiceMaxInputScale
        let realInput2 = Double(b.scale) / twiceMaxInputScale
        let realOutput = twiceMaxInputScale / Double(Float(1 << 20) * output.scale)
        let (m1, s1) = FixedPoint.quantizeMultiplier(realInput1)
        let (m2, s2) = FixedPoint.quantizeMultiplier(realInput2)
        let offset1 = -a.zeroPoint, offset2 = -b.zeroPoint
        scaled1 = Int32Table(T.self) { q in FixedPoint.multiply((offset1 &+ q) &<< leftShift, by: m1, shift: s1) }
        scaled2 = Int32Table(T.self) { q in
            let v = FixedPoint.multiply((offset2 &+ q) &<< leftShift, by: m2, shift: s2)
            return subtract ? -v : v
        }
        outputOffset = output.zeroPoint
        (outputMultiplier, outputShift) = FixedPoint.quantizeMultiplier(realOutput)
        (activationMin, activationMax) = FixedPoint.activationRange(activation, scale: output.scale, zeroPoint: output.zeroPoint, type: output.type)
    }

    @inline(__always)
    func callAsFunction(_ x: T, _ y: T) -> T {
        let raw = scaled1[x] &+ scaled2[y]
        let output = Int64(FixedPoint.multiplySaturating(raw, by: outputMultiplier, shift: outputShift)) + Int64(outputOffset)
        return T(truncatingIfNeeded: clampLikeTFLite(output, Int64(activationMin), Int64(activationMax)))
    }
}

/// A 256-entry Int32 table indexed by the bit pattern of an 8-bit value, in memory owned by the
/// table (immutable after creation, so it can be shared by threads).
final class Int32Table: @unchecked Sendable {
    private let values: UnsafeMutablePointer<Int32>

    /// Fills entry `q` with `f(q)` for every value `q` of the 8-bit type `T`.
    init<T: FixedWidthInteger>(_ type: T.Type, _ f: (Int32) -> Int32) {
        values = .allocate(capacity: 256)
        values.initialize(repeating: 0, count: 256)
        for q in Int32(T.min)...Int32(T.max) {
            values[Int(UInt8(truncatingIfNeeded: q))] = f(q)
        }
    }

    deinit { values.deallocate() }

    @inline(__always)
    subscript<T: FixedWidthInteger>(_ q: T) -> Int32 {
        values[Int(UInt8(truncatingIfNeeded: q))]
    }

    /// The 256 entries, for the C kernels (valid while the table lives).
    var pointer: UnsafePointer<Int32> { UnsafePointer(values) }
}

extension QuantizedAddSub {
    /// The same arithmetic through CKernels for same-shape operands (the residual connections of
    /// MobileNet-style models), or nil where it does not apply (broadcasting, a left-shifting
    /// output multiplier): then the generic kernel runs.
    func optimizedKernel(isa: Int32?, _ context: OpContext, _ a: TensorInfo, _ b: TensorInfo) -> (any Kernel)? {
        guard let isa, a.shape == b.shape, a.shape == context.outputs[0].shape, outputShift <= 0, outputShift >= -31 else { return nil }
        return OptimizedQuantizedAddKernel(isa: isa, count: a.elementCount, function: self)
    }
}

/// 8-bit quantized ADD/SUB of same-shape tensors through CKernels (bit-exact with ``QuantizedAddSub``).
struct OptimizedQuantizedAddKernel: Kernel {
    let isa: Int32
    let count: Int
    let table1: Int32Table, table2: Int32Table
    let multiplier: Int32, shift: Int32
    let outputZeroPoint: Int32, activationMin: Int32, activationMax: Int32
    let isSigned: Bool

    init<T>(isa: Int32, count: Int, function f: QuantizedAddSub<T>) {
        self.isa = isa
        self.count = count
        (table1, table2, multiplier, shift) = (f.scaled1, f.scaled2, f.outputMultiplier, Int32(f.outputShift))
        (outputZeroPoint, activationMin, activationMax) = (f.outputOffset, f.activationMin, f.activationMax)
        isSigned = T.isSigned
    }

    func run(_ io: KernelIO) {
        let a = io.input(0, as: UInt8.self), b = io.input(1, as: UInt8.self)
        let out = io.output(0, as: UInt8.self)
        var params = ck_qadd_params(table1: table1.pointer, table2: table2.pointer, multiplier: multiplier, shift: shift,
                                    output_zero_point: outputZeroPoint, act_min: activationMin, act_max: activationMax,
                                    is_signed: isSigned ? 1 : 0)
        withExtendedLifetime((table1, table2)) {
            forEachChunk(count, io.parallel) { start, end in
                ck_qadd_8(isa, &params, a, b, out, start, end)
            }
        }
    }
}
