import CKernels
import TFLiteFormat
import TensorCore

/// NumPy-style broadcasting of two operands onto an output shape (TFLite's
/// CalculateShapeForBroadcast + BroadcastBinaryFunction6DSlow), precomputed at prepare time.
///
/// Dimensions of size 1 in the output are dropped and neighbouring dimensions that broadcast the
/// same way are merged, so the run-time loop is a short list of "rows" with a contiguous (or
/// repeated) innermost run for each operand.
struct BroadcastPlan: Sendable {
    /// Highest rank TFLite's broadcasting kernels accept.
    static let maximumRank = 6

    /// The broadcast output shape (rank = max of the operand ranks).
    let outputShape: [Int]
    /// Output element count.
    let elementCount: Int
    /// Merged dimensions, outermost first, without the innermost one.
    let outerDimensions: [Int]
    /// Element strides of each operand along `outerDimensions` (0 where it is broadcast).
    let outerStrides1: [Int]
    let outerStrides2: [Int]
    /// Length of the innermost merged dimension.
    let inner: Int
    /// Stride of each operand along the innermost dimension: 1, or 0 when it is repeated.
    let innerStride1: Int
    let innerStride2: Int

    /// The broadcast shape of `a` and `b`, or nil when a dimension pair is neither equal nor 1.
    static func shape(_ a: [Int], _ b: [Int]) -> [Int]? {
        let rank = Swift.max(a.count, b.count)
        var out = [Int](repeating: 1, count: rank)
        for i in 0..<rank {
            let da = i < rank - a.count ? 1 : a[i - (rank - a.count)]
            let db = i < rank - b.count ? 1 : b[i - (rank - b.count)]
            if da == db {
                out[i] = da
            } else if da == 1 {
                out[i] = db
            } else if db == 1 {
                out[i] = da
            } else {
                return nil
            }
        }
        return out
    }

    /// Plans the broadcast of two operands; throws a typed error naming the op when the shapes do
    /// not broadcast or the rank is above 6.
    static func make(_ a: TensorInfo, _ b: TensorInfo, _ context: OpContext, names: (String, String) = ("input 0", "input 1")) throws -> BroadcastPlan {
        guard let out = shape(a.shape, b.shape) else {
            throw context.fail("\(names.0) shape \(Shape(a.shape)) and \(names.1) shape \(Shape(b.shape)) do not broadcast")
        }
        if a.shape != b.shape && out.count > maximumRank {
            throw context.fail("broadcasting is supported up to rank \(maximumRank), got shapes \(Shape(a.shape)) and \(Shape(b.shape))",
                               code: .unsupportedOperator)
        }
        return BroadcastPlan(a.shape, b.shape, output: out)
    }

    /// A plan for two operands whose shapes broadcast to `output` (callers check that first).
    init(_ shape1: [Int], _ shape2: [Int], output: [Int]) {
        outputShape = output
        elementCount = output.reduce(1, *)
        let rank = output.count
        func padded(_ s: [Int]) -> [Int] { [Int](repeating: 1, count: rank - s.count) + s }
        let p1 = padded(shape1), p2 = padded(shape2)
        // Keep output dimensions larger than 1; note whether each operand spans them.
        var dims: [Int] = [], spans1: [Bool] = [], spans2: [Bool] = []
        for i in 0..<rank where output[i] != 1 {
            let s1 = p1[i] == output[i], s2 = p2[i] == output[i]
            if let last = dims.indices.last, spans1[last] == s1, spans2[last] == s2 {
                dims[last] *= output[i]
            } else {
                dims.append(output[i]); spans1.append(s1); spans2.append(s2)
            }
        }
        if dims.isEmpty {
            dims = [1]; spans1 = [true]; spans2 = [true]
        }
        func strides(_ spans: [Bool]) -> [Int] {
            var result = [Int](repeating: 0, count: dims.count)
            var running = 1
            for i in stride(from: dims.count - 1, through: 0, by: -1) where spans[i] {
                result[i] = running
                running *= dims[i]
            }
            return result
        }
        let st1 = strides(spans1), st2 = strides(spans2)
        inner = dims[dims.count - 1]
        innerStride1 = spans1[dims.count - 1] ? 1 : 0
        innerStride2 = spans2[dims.count - 1] ? 1 : 0
        outerDimensions = Array(dims.dropLast())
        outerStrides1 = Array(st1.dropLast())
        outerStrides2 = Array(st2.dropLast())
    }

    /// Calls `body(offset1, stride1, offset2, stride2, outputOffset, count)` for runs of output
    /// elements, in pieces spread over `parallel` (each output element is visited exactly once).
    @inline(__always)
    func forEachRun(_ parallel: ParallelScope, _ body: (Int, Int, Int, Int, Int, Int) -> Void) {
        let total = elementCount
        guard total > 0 else { return }
        let pieces = parallel.threadCount > 1 && total >= 16384 ? Swift.min(parallel.threadCount * 4, total / 4096) : 1
        parallel.forEach(pieces) { piece in
            let start = total / pieces * piece + Swift.min(piece, total % pieces)
            let end = start + total / pieces + (piece < total % pieces ? 1 : 0)
            var position = start
            while position < end {
                var row = position / inner
                let column = position - row * inner
                var o1 = 0, o2 = 0
                var d = outerDimensions.count - 1
                while d >= 0 {
                    let size = outerDimensions[d]
                    let c = row % size
                    row /= size
                    o1 += c * outerStrides1[d]
                    o2 += c * outerStrides2[d]
                    d -= 1
                }
                let count = Swift.min(inner - column, end - position)
                body(o1 + column * innerStride1, innerStride1, o2 + column * innerStride2, innerStride2, position, count)
                position += count
            }
        }
    }
}

/// An element-wise function of two operands (possibly of different types).
protocol BinaryElementFunction: Sendable {
    associatedtype Input1
    associatedtype Input2
    associatedtype Output
    func callAsFunction(_ a: Input1, _ b: Input2) -> Output
}

/// A kernel applying a binary element-wise function with broadcasting.
///
/// The loop is captured in a closure formed in the generic initializer: called from a prepare
/// function with concrete types, the initializer (and so the loop) is specialized, whereas a
/// generic `run` reached through `any Kernel` would execute unspecialized generic code.
struct BroadcastBinaryKernel: Kernel {
    private let body: @Sendable (KernelIO) -> Void

    init<F: BinaryElementFunction>(plan: BroadcastPlan, function: F) {
        body = { io in Self.execute(io, plan, function) }
    }

    func run(_ io: KernelIO) { body(io) }

    @inline(__always)
    private static func execute<F: BinaryElementFunction>(_ io: KernelIO, _ plan: BroadcastPlan, _ f: F) {
        let a = io.input(0, as: F.Input1.self)
        let b = io.input(1, as: F.Input2.self)
        let out = io.output(0, as: F.Output.self)
        plan.forEachRun(io.parallel) { o1, s1, o2, s2, o, n in
            var pa = a + o1, pb = b + o2
            let po = out + o
            if s1 == 1 && s2 == 1 {
                for i in 0..<n { po[i] = f(pa[i], pb[i]) }
            } else if s1 == 1 {
                let vb = pb.pointee
                for i in 0..<n { po[i] = f(pa[i], vb) }
            } else if s2 == 1 {
                let va = pa.pointee
                for i in 0..<n { po[i] = f(va, pb[i]) }
            } else {
                for i in 0..<n {
                    po[i] = f(pa.pointee, pb.pointee)
                    pa += s1; pb += s2
                }
            }
        }
    }
}

/// Shared checks and helpers of the binary element-wise ops.
enum BinaryOp {
    /// The fused activation of ADD/SUB/MUL/DIV options (`.none` options = no activation, as
    /// TFLite's parser defaults them).
    static func activation(_ context: OpContext) throws -> FusedActivation {
        let activation: FusedActivation
        switch context.options {
        case .none: activation = .none
        case .add(let a), .sub(let a), .mul(let a), .div(let a): activation = a
        default: throw context.fail("has options \(context.options), expected arithmetic options")
        }
        switch activation {
        case .none, .relu, .relu6, .reluN1To1: return activation
        default: throw context.fail("fused activation \(activation) is not supported", code: .unsupportedOperator)
        }
    }

    /// Checks two inputs of the same type and one output of that type, and plans the broadcast
    /// (setting the output shape).
    static func prepareOperands(_ context: inout OpContext, types: Set<ElementType>) throws -> (TensorInfo, TensorInfo, BroadcastPlan) {
        try context.expect(inputs: 2, outputs: 1)
        let a = try context.input(0), b = try context.input(1)
        try context.expect(a, type: types, "input 0")
        guard a.type == b.type else {
            throw context.fail("input 1 has type \(b.type) but input 0 has type \(a.type)")
        }
        guard context.outputs[0].type == a.type else {
            throw context.fail("output has type \(context.outputs[0].type) but the inputs have type \(a.type)")
        }
        let plan = try BroadcastPlan.make(a, b, context)
        context.outputs[0].shape = plan.outputShape
        return (a, b, plan)
    }

    /// Checks per-tensor quantization of both inputs and the output (8-bit and 16-bit ops).
    static func expectQuantized(_ context: OpContext, _ a: TensorInfo, _ b: TensorInfo) throws {
        try context.expectPerTensor(a, "input 0")
        try context.expectPerTensor(b, "input 1")
        try context.expectPerTensor(context.outputs[0], "output")
        let (qmin, qmax) = FixedPoint.integerRange(a.type)
        for (t, what) in [(a, "input 0"), (b, "input 1"), (context.outputs[0], "output")] {
            guard t.scale > 0, t.scale.isFinite else {
                throw context.fail("\(what) has quantization scale \(t.scale)", code: .invalidQuantization)
            }
            guard (qmin...qmax).contains(t.zeroPoint), Int64(t.zeroPoint) == t.quantization?.zeroPoint ?? 0 else {
                throw context.fail("\(what) has zero point \(t.quantization?.zeroPoint ?? 0) outside the \(t.type) range", code: .invalidQuantization)
            }
        }
    }

    /// The float range of a fused activation (TFLite's CalculateActivationRange<float>).
    static func floatRange(_ activation: FusedActivation) -> (min: Float, max: Float) {
        FixedPoint.activationRange(activation)
    }

    /// The integer range of a fused activation for non-quantized integer outputs (TFLite's
    /// CalculateActivationRange<int32/int64>).
    static func integerRange<T: FixedWidthInteger>(_ activation: FusedActivation, as type: T.Type) -> (min: T, max: T) {
        switch activation {
        case .relu: return (0, T.max)
        case .relu6: return (0, 6)
        case .reluN1To1: return (T.isSigned ? T(truncatingIfNeeded: -1) : 0, 1)
        default: return (T.min, T.max)
        }
    }
}

/// `std::min(std::max(x, lo), hi)` with C++'s comparison order (NaN passes through, infinities
/// clamp to the activation range like TFLite's ActivationFunctionWithMinMax).
@inline(__always)
func clampLikeTFLite(_ x: Float, _ lo: Float, _ hi: Float) -> Float {
    let a = x < lo ? lo : x
    return hi < a ? hi : a
}

@inline(__always)
func clampLikeTFLite<T: Comparable>(_ x: T, _ lo: T, _ hi: T) -> T {
    let a = x < lo ? lo : x
    return hi < a ? hi : a
}

extension FixedPoint {
    /// TFLite's MultiplyByQuantizedMultiplier, except that the left shift (multipliers above 1,
    /// e.g. from output scales like 1e-35) saturates instead of wrapping around. Identical to
    /// ``multiply(_:by:shift:)`` whenever TFLite's own arithmetic does not overflow.
    @inline(__always)
    static func multiplySaturating(_ x: Int32, by multiplier: Int32, shift: Int) -> Int32 {
        if shift <= 0 {
            // A right shift of 32 or more leaves |value| / 2^shift <= 1/2: 0 (gemmlowp's
            // RoundingDivideByPOT is only defined up to 31; composite shifts such as DIV's can exceed it).
            guard shift >= -31 else { return 0 }
            return roundingDivideByPOT(saturatingRoundingDoublingHighMul(x, multiplier), -shift)
        }
        let wide = Int64(x) << Int64(shift)
        let shifted = Int32(clamping: wide)
        return saturatingRoundingDoublingHighMul(shifted, multiplier)
    }
}

/// Float32 ADD/SUB/MUL/DIV through CKernels when the broadcast merges to at most one outer
/// dimension (same shapes, or a per-channel operand such as squeeze-and-excitation scales):
/// IEEE arithmetic and TFLite's clamp, bit-identical to ``FloatArithmetic``.
struct OptimizedBinaryFloatKernel: Kernel {
    let isa: Int32
    let op: Int32
    let outer: Int, inner: Int
    let aOuter: Int, aInner: Int, bOuter: Int, bInner: Int
    let lo: Float, hi: Float

    /// Nil when the plan has more than one outer dimension (the generic kernel handles those).
    init?(isa: Int32?, op: Int32, plan: BroadcastPlan, lo: Float, hi: Float) {
        guard let isa, plan.elementCount > 0, plan.outerDimensions.count <= 1 else { return nil }
        self.isa = isa
        self.op = op
        var outer = plan.outerDimensions.first ?? 1
        var inner = plan.inner
        var aOuter = plan.outerStrides1.first ?? 0, bOuter = plan.outerStrides2.first ?? 0
        if outer == 1, plan.innerStride1 == 1, plan.innerStride2 == 1, inner % 4096 == 0, inner > 4096 {
            // One long same-shape run: cut it into rows so threads can share it.
            outer = inner / 4096
            inner = 4096
            aOuter = 4096
            bOuter = 4096
        }
        (self.outer, self.inner, self.aOuter, self.bOuter) = (outer, inner, aOuter, bOuter)
        (aInner, bInner) = (plan.innerStride1, plan.innerStride2)
        (self.lo, self.hi) = (lo, hi)
    }

    func run(_ io: KernelIO) {
        let a = io.input(0, as: Float.self), b = io.input(1, as: Float.self)
        let out = io.output(0, as: Float.self)
        let total = outer * inner
        let pieces = io.parallel.threadCount > 1 && total >= 16384 ? Swift.min(io.parallel.threadCount * 4, outer) : 1
        io.parallel.forEach(pieces) { piece in
            let range = ConvolutionSupport.range(piece: piece, of: pieces, count: outer)
            ck_binary_f32(isa, op, a, b, out, range.lowerBound, range.upperBound, inner, aOuter, aInner, bOuter, bInner, lo, hi)
        }
    }
}
