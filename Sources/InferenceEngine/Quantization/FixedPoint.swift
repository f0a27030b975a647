import TFLiteFormat
import TensorCore

/// TFLite's integer arithmetic for quantized kernels (tensorflow/lite/kernels/internal/common.h and
/// quantization_util.cc semantics): fixed-point multipliers with the same rounding and saturation.
enum FixedPoint {
    /// Splits a positive real multiplier into a Q31 fixed-point multiplier and a power-of-two shift
    /// (positive = left), like TFLite's `QuantizeMultiplier`. Multipliers too small to represent
    /// (e.g. from scales of 1e-35) become 0, so the result is the zero point, never inf or NaN.
    static func quantizeMultiplier(_ realMultiplier: Double) -> (multiplier: Int32, shift: Int) {
        guard realMultiplier.isFinite, realMultiplier > 0 else { return (0, 0) }
        var shift = 0
        let fraction = frexp(realMultiplier, &shift)
        // fraction · 2^31 lies in [2^30, 2^31): adding 0.5 is exact there and the conversion
        // truncates, so this rounds halves away from zero as `.rounded()` does, without libm's
        // round (a call per channel: 4% of a compile).
        var q = Int64(fraction * 2147483648.0 + 0.5)
        if q == Int64(1) << 31 {
            q /= 2
            shift += 1
        }
        if shift < -31 {
            return (0, 0)
        }
        if shift > 30 {
            // Saturate: larger multipliers are not representable.
            return (Int32.max, 30)
        }
        return (Int32(q), shift)
    }

    /// `frexp` without Foundation: value = fraction * 2^exponent, fraction in [0.5, 1).
    @inline(__always)
    static func frexp(_ value: Double, _ exponent: inout Int) -> Double {
        guard value != 0, value.isFinite else { exponent = 0; return value }
        exponent = Int(value.exponent) + 1
        return value.significand / 2 * (value.sign == .minus ? -1 : 1)
    }

    /// gemmlowp's SaturatingRoundingDoublingHighMul.
    @inline(__always)
    static func saturatingRoundingDoublingHighMul(_ a: Int32, _ b: Int32) -> Int32 {
        if a == b && a == Int32.min { return Int32.max }
        let ab = Int64(a) * Int64(b)
        let nudge: Int64 = ab >= 0 ? (1 << 30) : (1 - (1 << 30))
        return Int32(truncatingIfNeeded: (ab + nudge) / (Int64(1) << 31))
    }

    /// gemmlowp's RoundingDivideByPOT (round half away from zero).
    @inline(__always)
    static func roundingDivideByPOT(_ x: Int32, _ exponent: Int) -> Int32 {
        guard exponent > 0 else { return x }
        // Shifting an Int32 by 31 or more leaves only the sign; the rounded quotient is 0.
        guard exponent < 31 else { return 0 }
        let mask = Int32((Int64(1) << exponent) - 1)
        let remainder = x & mask
        let threshold = (mask >> 1) + (x < 0 ? 1 : 0)
        return (x >> Int32(exponent)) + (remainder > threshold ? 1 : 0)
    }

    /// TFLite's MultiplyByQuantizedMultiplier (double-rounding variant, the reference default).
    @inline(__always)
    static func multiply(_ x: Int32, by multiplier: Int32, shift: Int) -> Int32 {
        let leftShift = shift > 0 ? shift : 0
        let rightShift = shift > 0 ? 0 : -shift
        let shifted = Int32(truncatingIfNeeded: Int64(x) << leftShift)
        return roundingDivideByPOT(saturatingRoundingDoublingHighMul(shifted, multiplier), rightShift)
    }

    /// MultiplyByQuantizedMultiplier as LiteRT's builtin GEMM-based kernels compute it on this
    /// machine (x86-64 with AVX): cpu_backend_gemm runs ruy's AVX2/AVX-512 kernels, which emulate
    /// ARM's `sqrdmulh` + `srshl`: the doubling high multiply adds 2^30 and shifts right by 31 (round
    /// half UP, toward +inf), and the final rounding right shift adds 2^(exponent-1) and shifts
    /// arithmetically (round half UP as well). The reference kernels (``multiply(_:by:shift:)``)
    /// round both halves away from zero; the two differ by 1 on negative exact halves.
    @inline(__always)
    static func multiplyRoundingHalfUp(_ x: Int32, by multiplier: Int32, shift: Int) -> Int32 {
        let leftShift = shift > 0 ? shift : 0
        let rightShift = shift > 0 ? 0 : -shift
        let shifted = Int64(Int32(truncatingIfNeeded: Int64(x) << leftShift))
        let high = Int64(Int32(clamping: (shifted * Int64(multiplier) + (1 << 30)) >> 31))
        guard rightShift > 0 else { return Int32(high) }
        // ruy saturates an overflowing (x + nudge) to 1 << (31 - exponent): the same as in 64 bits.
        return Int32(truncatingIfNeeded: (high + (Int64(1) << (rightShift - 1))) >> Int64(rightShift))
    }

    /// The quantized range [min, max] of a fused activation for an output with `scale`/`zeroPoint`
    /// stored in `type` (TFLite's CalculateActivationRangeQuantized).
    static func activationRange(_ activation: FusedActivation, scale: Float, zeroPoint: Int32, type: ElementType) -> (min: Int32, max: Int32) {
        let (qmin, qmax) = integerRange(type)
        // TFLite: zero_point + TfLiteRound(f / scale), in float.
        func quantize(_ v: Float) -> Int32 {
            let q = Double(zeroPoint) + Double((v / scale).rounded(.toNearestOrAwayFromZero))
            guard q.isFinite else { return q > 0 ? Int32.max : Int32.min }
            return Int32(clamping: Int64(Swift.max(Swift.min(q, 2e9), -2e9)))
        }
        switch activation {
        case .relu: return (Swift.max(qmin, quantize(0)), qmax)
        case .relu6: return (Swift.max(qmin, quantize(0)), Swift.min(qmax, quantize(6)))
        case .reluN1To1: return (Swift.max(qmin, quantize(-1)), Swift.min(qmax, quantize(1)))
        default: return (qmin, qmax)
        }
    }

    /// The float range of a fused activation.
    static func activationRange(_ activation: FusedActivation) -> (min: Float, max: Float) {
        switch activation {
        case .relu: return (0, .greatestFiniteMagnitude)
        case .relu6: return (0, 6)
        case .reluN1To1: return (-1, 1)
        default: return (-.greatestFiniteMagnitude, .greatestFiniteMagnitude)
        }
    }

    /// Representable range of an integer element type.
    static func integerRange(_ type: ElementType) -> (min: Int32, max: Int32) {
        switch type {
        case .uint8: return (0, 255)
        case .int8: return (-128, 127)
        case .int16: return (-32768, 32767)
        default: return (Int32.min, Int32.max)
        }
    }
}
