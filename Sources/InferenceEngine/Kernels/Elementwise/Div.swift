import CKernels
import TFLiteFormat
import TensorCore

/// DIV (div.cc): float32, int32, and uint8/int8 with TFLite's quantized arithmetic
/// (reference_ops::DivElementwise: a Newton-Raphson reciprocal of the divisor, output multiplier
/// = input1_scale / (input2_scale * output_scale)).
///
/// TFLite fails at run time on a zero integer divisor; a kernel here cannot fail, so a constant
/// divisor containing zero is rejected when the model is compiled, and a zero divisor computed at
/// run time gives 0 (int32) or the activation bound in the dividend's direction (quantized).
enum Div {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let activation = try BinaryOp.activation(context)
        let (a, b, plan) = try BinaryOp.prepareOperands(&context, types: [.float32, .int32, .uint8, .int8])
        switch a.type {
        case .float32:
            let (lo, hi) = BinaryOp.floatRange(activation)
            if let fast = OptimizedBinaryFloatKernel(isa: context.instructionSet, op: Int32(CK_BINARY_DIV), plan: plan, lo: lo, hi: hi) {
                return fast
            }
            return BroadcastBinaryKernel(plan: plan, function: FloatArithmetic<DivOperation>(min: lo, max: hi))
        case .int32:
            if let data = b.constant {
                for i in 0..<b.elementCount where data.loadUnaligned(fromByteOffset: i * 4, as: Int32.self) == 0 {
                    throw context.fail("input 1 (the divisor) is a constant containing 0")
                }
            }
            let (lo, hi) = BinaryOp.integerRange(activation, as: Int32.self)
            return BroadcastBinaryKernel(plan: plan, function: IntegerArithmetic<DivOperation, Int32>(min: lo, max: hi))
        case .uint8:
            try BinaryOp.expectQuantized(context, a, b)
            try checkConstantDivisor(b, UInt8.self, context)
            return BroadcastBinaryKernel(plan: plan, function: QuantizedDiv<UInt8>(a, b, context.outputs[0], activation: activation))
        default:
            try BinaryOp.expectQuantized(context, a, b)
            try checkConstantDivisor(b, Int8.self, context)
            return BroadcastBinaryKernel(plan: plan, function: QuantizedDiv<Int8>(a, b, context.outputs[0], activation: activation))
        }
    }

    private static func checkConstantDivisor<T: FixedWidthInteger>(_ b: TensorInfo, _ type: T.Type, _ context: OpContext) throws {
        guard let data = b.constant else { return }
        for i in 0..<b.elementCount where Int32(data.load(fromByteOffset: i, as: T.self)) == b.zeroPoint {
            throw context.fail("input 1 (the divisor) is a constant containing the value 0 (its zero point)")
        }
    }
}

/// TFLite's quantized DIV element function.
struct QuantizedDiv<T: FixedWidthInteger & Sendable>: BinaryElementFunction {
    let input1Offset: Int32, input2Offset: Int32, outputOffset: Int32
    let outputMultiplier: Int32, outputShift: Int
    let activationMin: Int32, activationMax: Int32

    init(_ a: TensorInfo, _ b: TensorInfo, _ output: TensorInfo, activation: FusedActivation) {
        input1Offset = -a.zeroPoint
        input2Offset = -b.zeroPoint
        outputOffset = output.zeroPoint
        let real = a.scale / (b.scale * output.scale)
        (outputMultiplier, outputShift) = FixedPoint.quantizeMultiplier(Double(real))
        (activationMin, activationMax) = FixedPoint.activationRange(activation, scale: output.scale, zeroPoint: output.zeroPoint, type: output.type)
    }

    @inline(__always)
    func callAsFunction(_ x: T, _ y: T) -> T {
        var input1 = input1Offset &+ Int32(x)
        var input2 = input2Offset &+ Int32(y)
        if input2 == 0 {
            let bound = input1 > 0 ? activationMax : input1 < 0 ? activationMin : clampLikeTFLite(outputOffset, activationMin, activationMax)
            return T(truncatingIfNeeded: bound)
        }
        if input2 < 0 {
            input1 = -input1
            input2 = -input2
        }
        let (inverse, recipShift) = GemmlowpDivision.reciprocal(input2, integerDigits: 31)
        let headroom = GemmlowpDivision.countLeadingSignBits(input1)
        // MultiplyByQuantizedMultiplierGreaterThanOne: x * 2^headroom cannot overflow.
        let unscaled = FixedPoint.saturatingRoundingDoublingHighMul(Int32(truncatingIfNeeded: Int64(input1) << Int64(headroom)), inverse)
        let totalShift = outputShift - recipShift - headroom
        let output = Int64(FixedPoint.multiplySaturating(unscaled, by: outputMultiplier, shift: totalShift)) + Int64(outputOffset)
        return T(truncatingIfNeeded: clampLikeTFLite(output, Int64(activationMin), Int64(activationMax)))
    }
}

/// gemmlowp fixed-point pieces used by TFLite's GetReciprocal.
enum GemmlowpDivision {
    /// TFLite's CountLeadingSignBits for int32.
    @inline(__always)
    static func countLeadingSignBits(_ x: Int32) -> Int {
        if x >= 0 { return UInt32(x).leadingZeroBitCount - 1 }
        if x == Int32.min { return 0 }
        return (2 &* UInt32(-x) &- 1).leadingZeroBitCount
    }

    /// gemmlowp's SaturatingRoundingMultiplyByPOT<exponent> for a positive exponent.
    @inline(__always)
    static func saturatingShiftLeft(_ x: Int32, _ exponent: Int32) -> Int32 {
        let threshold = (Int32(1) << (31 - exponent)) - 1
        if x > threshold { return Int32.max }
        if x < -threshold { return Int32.min }
        return x << exponent
    }

    /// gemmlowp's one_over_one_plus_x_for_x_in_0_1 on Q0.31 raw values.
    @inline(__always)
    static func oneOverOnePlusX(_ a: Int32) -> Int32 {
        // RoundingHalfSum(a, One) with One = Int32.max for Q0.31.
        let sum = Int64(a) + Int64(Int32.max)
        let halfDenominator = Int32(truncatingIfNeeded: (sum + (sum >= 0 ? 1 : -1)) / 2)
        let constant48Over17: Int32 = 1_515_870_810      // Q2.29
        let constantNeg32Over17: Int32 = -1_010_580_540  // Q2.29
        let oneQ2: Int32 = 1 << 29
        var x = constant48Over17 &+ FixedPoint.saturatingRoundingDoublingHighMul(halfDenominator, constantNeg32Over17)
        for _ in 0..<3 {
            let halfDenominatorTimesX = FixedPoint.saturatingRoundingDoublingHighMul(halfDenominator, x)
            let oneMinus = oneQ2 &- halfDenominatorTimesX
            x = x &+ saturatingShiftLeft(FixedPoint.saturatingRoundingDoublingHighMul(x, oneMinus), 2)
        }
        // ExactMulByPot<-1> (reinterpretation as Q1.30), then Rescale<0>: saturating shift by 1.
        return saturatingShiftLeft(x, 1)
    }

    /// TFLite's GetReciprocal(x, x_integer_digits): a Q0.31 reciprocal and the bits above unit.
    @inline(__always)
    static func reciprocal(_ x: Int32, integerDigits: Int) -> (Int32, Int) {
        let headroomPlusOne = UInt32(x).leadingZeroBitCount
        let bitsOverUnit = integerDigits - headroomPlusOne
        let shiftedSumMinusOne = Int32(bitPattern: (UInt32(x) << UInt32(headroomPlusOne)) &- (UInt32(1) << 31))
        return (oneOverOnePlusX(shiftedSumMinusOne), bitsOverUnit)
    }
}
