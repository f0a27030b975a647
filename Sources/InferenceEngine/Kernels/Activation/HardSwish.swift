import CKernels
import TFLiteFormat
import TensorCore

/// HARD_SWISH: float32 `x * min(6, max(0, x + 3)) / 6` (as TFLite's optimized kernel:
/// `* (1.0f / 6.0f)`), and uint8/int8 with TFLite's fixed-point reference_ops::HardSwish
/// (16-bit "hires" input, relu-ish multiplier), evaluated for all 256 inputs at prepare time.
enum HardSwish {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let input = try Unary.prepareOperands(&context, types: [.float32, .uint8, .int8])
        if input.type == .float32 {
            if let isa = context.instructionSet {
                return OptimizedUnaryFloatKernel(isa: isa, count: input.elementCount, function: ck_hardswish_f32)
            }
            return Unary.floatKernel(count: input.elementCount, function: HardSwishFunction())
        }
        try Unary.expectQuantized(context, input)
        let output = context.outputs[0]
        let params = QuantizedHardSwish(input: input, output: output)
        guard params.outputMultiplierExponent <= 0 else {
            throw context.fail("input scale \(input.scale) is too large for output scale \(output.scale) (TFLite requires input_scale / output_scale < 128)",
                               code: .invalidQuantization)
        }
        return Unary.lookupKernel(input) { params($0) }
    }
}

struct HardSwishFunction: UnaryFloatFunction {
    @inline(__always)
    func callAsFunction(_ x: Float) -> Float {
        let reluish = Swift.min(6, Swift.max(0, x + 3))
        return x * reluish * (1.0 / 6.0)
    }
}

/// TFLite's HardSwishParams (activations.cc HardSwishPrepare) and reference_ops::HardSwish.
struct QuantizedHardSwish: Sendable {
    let inputZeroPoint: Int32
    let outputZeroPoint: Int32
    let outputMultiplierFixedpoint: Int16
    let outputMultiplierExponent: Int
    let reluishMultiplierFixedpoint: Int16
    let reluishMultiplierExponent: Int
    let outputMin: Int32
    let outputMax: Int32

    init(input: TensorInfo, output: TensorInfo) {
        inputZeroPoint = input.zeroPoint
        outputZeroPoint = output.zeroPoint
        let hiresInputScale: Float = (1.0 / 128.0) * input.scale
        let reluishScale: Float = 3.0 / 32768.0
        let outputMultiplier = hiresInputScale / output.scale
        let (om, oe) = FixedPoint.quantizeMultiplier(Double(outputMultiplier))
        outputMultiplierFixedpoint = Self.downScale(om)
        outputMultiplierExponent = oe
        let reluishMultiplier = hiresInputScale / reluishScale
        let (rm, re) = FixedPoint.quantizeMultiplier(Double(reluishMultiplier))
        reluishMultiplierFixedpoint = Self.downScale(rm)
        reluishMultiplierExponent = re
        (outputMin, outputMax) = FixedPoint.integerRange(output.type)
    }

    /// DownScaleInt32ToInt16Multiplier.
    static func downScale(_ m: Int32) -> Int16 {
        let rounding: Int32 = 1 << 15
        if m >= Int32.max - rounding { return Int16.max }
        return Int16(truncatingIfNeeded: (m + rounding) >> 16)
    }

    /// gemmlowp's int16 SaturatingRoundingDoublingHighMul.
    @inline(__always)
    static func srdhm(_ a: Int16, _ b: Int16) -> Int16 {
        if a == b && a == Int16.min { return Int16.max }
        let ab = Int32(a) * Int32(b)
        let nudge: Int32 = ab >= 0 ? (1 << 14) : (1 - (1 << 14))
        return Int16(truncatingIfNeeded: (ab + nudge) / (1 << 15))
    }

    /// SaturatingDoublingHighMul (rounding toward zero).
    @inline(__always)
    static func sdhm(_ a: Int16, _ b: Int16) -> Int16 {
        if a == b && a == Int16.min { return Int16.max }
        return Int16(truncatingIfNeeded: (Int32(a) * Int32(b)) / (1 << 15))
    }

    @inline(__always)
    static func saturatingLeftShift(_ value: Int16, _ amount: Int) -> Int16 {
        Int16(clamping: Int64(value) * (Int64(1) << Int64(amount)))
    }

    /// gemmlowp's RoundingDivideByPOT on int16 values.
    @inline(__always)
    static func roundingDivideByPOT(_ x: Int16, _ exponent: Int) -> Int16 {
        guard exponent > 0 else { return x }
        let mask = Int16(truncatingIfNeeded: (Int64(1) << Int64(Swift.min(exponent, 62))) - 1)
        let remainder = x & mask
        let threshold = (mask >> 1) &+ (x < 0 ? 1 : 0)
        return Int16(truncatingIfNeeded: (Int32(x) >> Int32(Swift.min(exponent, 31))) + (remainder > threshold ? 1 : 0))
    }

    func callAsFunction(_ q: Int32) -> Int32 {
        let inputValue = Int16(truncatingIfNeeded: q - inputZeroPoint)
        let hires = inputValue &* (1 << 7)
        let preshiftOutput = Self.srdhm(hires, outputMultiplierFixedpoint)
        var reluish = hires
        if reluishMultiplierExponent > 0 {
            reluish = Self.saturatingLeftShift(reluish, reluishMultiplierExponent - 1)
        }
        reluish = Self.srdhm(reluish, reluishMultiplierFixedpoint)
        if reluishMultiplierExponent > 0 {
            reluish = Self.saturatingLeftShift(reluish, 1)
        }
        if reluishMultiplierExponent < 0 {
            reluish = Self.roundingDivideByPOT(reluish, -reluishMultiplierExponent)
        }
        reluish = Int16(truncatingIfNeeded: (Int32(reluish) + (1 << 15)) >> 1)
        let preshift = Self.sdhm(reluish, preshiftOutput)
        var out = Self.roundingDivideByPOT(preshift, -outputMultiplierExponent)
        out = out &+ Int16(truncatingIfNeeded: outputZeroPoint)
        return Swift.max(outputMin, Swift.min(outputMax, Int32(out)))
    }
}
