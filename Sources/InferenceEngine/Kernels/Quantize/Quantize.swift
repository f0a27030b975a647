import TFLiteFormat
import TensorCore

/// QUANTIZE (quantize.cc).
///
/// - float32 -> uint8/int8/int16, per-tensor or per-channel: `zero_point + round(x / scale)`
///   (float division, rounding half away from zero), clamped to the type. Values beyond the int32
///   range saturate (TFLite's cast is undefined there); NaN gives the zero point.
/// - Requantize uint8/int8 -> uint8/int8/int16 and int16 -> int8/int16: multiplier
///   input_scale / output_scale (in double), `MultiplyByQuantizedMultiplier(q - zp_in) + zp_out`,
///   clamped. 8-bit inputs go through a 256-entry table.
enum Quantize {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 1, outputs: 1)
        let input = try context.input(0)
        try context.expect(input, type: [.float32, .uint8, .int8, .int16], "input")
        let output = context.outputs[0]
        context.outputs[0].shape = input.shape
        guard let q = output.quantization, q.isQuantized else {
            throw context.fail("output must carry quantization parameters", code: .invalidQuantization)
        }
        guard q.scales.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw context.fail("output has quantization scales \(q.scales)", code: .invalidQuantization)
        }
        if input.type == .float32 {
            try context.expect(output, type: [.uint8, .int8, .int16], "output")
            let (qmin, qmax) = FixedPoint.integerRange(output.type)
            let zeroPoints = q.zeroPoints.isEmpty ? [Int64](repeating: 0, count: q.scales.count)
                : q.zeroPoints.count == q.scales.count ? q.zeroPoints : [Int64](repeating: q.zeroPoints[0], count: q.scales.count)
            let channels: Int, inner: Int
            if q.scales.count > 1 {
                let axis = q.quantizedDimension
                guard axis >= 0, axis < input.rank, input.shape[axis] == q.scales.count else {
                    throw context.fail("output has \(q.scales.count) per-channel scales along dimension \(axis), input shape is \(Shape(input.shape))", code: .invalidQuantization)
                }
                channels = q.scales.count
                inner = input.shape[(axis + 1)...].reduce(1, *)
            } else {
                channels = 1
                inner = 1
            }
            let plan = QuantizePlan(count: input.elementCount, channels: channels, inner: inner, scales: q.scales,
                                    zeroPoints: zeroPoints.map { Int32(clamping: $0) }, min: qmin, max: qmax)
            switch output.type {
            case .uint8: return SpecializedKernel(QuantizeFloatKernel<UInt8>(plan: plan))
            case .int8: return SpecializedKernel(QuantizeFloatKernel<Int8>(plan: plan))
            default: return SpecializedKernel(QuantizeFloatKernel<Int16>(plan: plan))
            }
        }
        // Requantize.
        if input.type == .int16 {
            try context.expect(output, type: [.int8, .int16], "output of an int16 input")
        } else {
            try context.expect(output, type: [.uint8, .int8, .int16], "output")
        }
        try Unary.expectQuantized(context, input, "input")
        try Unary.expectQuantized(context, output, "output")
        if input.type == .int16 && output.type == .int16 && (input.zeroPoint != 0 || output.zeroPoint != 0) {
            throw context.fail("int16 -> int16 requantization needs zero points 0", code: .invalidQuantization)
        }
        let requantize = Requantize(input: input, output: output)
        switch (input.type, output.type) {
        case (.uint8, .uint8), (.int8, .uint8):
            return LookupTableKernel(count: input.elementCount, table: table(input.type, UInt8.self, requantize), isa: context.instructionSet)
        case (.uint8, .int8), (.int8, .int8):
            return LookupTableKernel(count: input.elementCount, table: table(input.type, Int8.self, requantize), isa: context.instructionSet)
        case (.uint8, _): return SpecializedKernel(RequantizeKernel<UInt8, Int16>(count: input.elementCount, requantize: requantize))
        case (.int8, _): return SpecializedKernel(RequantizeKernel<Int8, Int16>(count: input.elementCount, requantize: requantize))
        case (_, .int8): return SpecializedKernel(RequantizeKernel<Int16, Int8>(count: input.elementCount, requantize: requantize))
        default: return SpecializedKernel(RequantizeKernel<Int16, Int16>(count: input.elementCount, requantize: requantize))
        }
    }

    /// A 256-entry table indexed by the 8-bit input's bit pattern, with outputs of type `T`.
    private static func table<T: FixedWidthInteger>(_ inputType: ElementType, _ type: T.Type, _ f: Requantize) -> [T] {
        var table = [T](repeating: 0, count: 256)
        let (imin, imax) = FixedPoint.integerRange(inputType)
        for q in imin...imax {
            table[Int(UInt8(truncatingIfNeeded: q))] = T(truncatingIfNeeded: f(q))
        }
        return table
    }
}

/// Per-tensor or per-channel float -> integer quantization parameters.
struct QuantizePlan: Sendable {
    let count: Int
    let channels: Int
    let inner: Int
    let scales: [Float]
    let zeroPoints: [Int32]
    let min: Int32
    let max: Int32

    /// `static_cast<int32_t>(TfLiteRound(x / scale)) + zero_point`, clamped (saturating beyond int32).
    @inline(__always)
    static func quantize(_ x: Float, scale: Float, zeroPoint: Int32, min: Int32, max: Int32) -> Int32 {
        let r = (x / scale).rounded(.toNearestOrAwayFromZero)
        if r.isNaN { return clampLikeTFLite(zeroPoint, min, max) }
        let wide = r >= 4e9 ? Int64(4e9) : r <= -4e9 ? Int64(-4e9) : Int64(r)
        return Int32(clampLikeTFLite(wide + Int64(zeroPoint), Int64(min), Int64(max)))
    }
}

struct QuantizeFloatKernel<T: FixedWidthInteger & Sendable>: SpecializedKernelBody {
    let plan: QuantizePlan

    func execute(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: T.self)
        let plan = plan
        let lo = plan.min, hi = plan.max
        if plan.channels == 1 {
            let scale = plan.scales[0], zeroPoint = plan.zeroPoints[0]
            forEachChunk(plan.count, io.parallel) { start, end in
                for i in start..<end {
                    output[i] = T(truncatingIfNeeded: QuantizePlan.quantize(input[i], scale: scale, zeroPoint: zeroPoint, min: lo, max: hi))
                }
            }
            return
        }
        plan.scales.withUnsafeBufferPointer { scales in
            plan.zeroPoints.withUnsafeBufferPointer { zeroPoints in
                let blocks = plan.count / (plan.channels * plan.inner)
                for block in 0..<blocks {
                    for c in 0..<plan.channels {
                        let base = (block * plan.channels + c) * plan.inner
                        let scale = scales[c], zeroPoint = zeroPoints[c]
                        for i in base..<(base + plan.inner) {
                            output[i] = T(truncatingIfNeeded: QuantizePlan.quantize(input[i], scale: scale, zeroPoint: zeroPoint, min: lo, max: hi))
                        }
                    }
                }
            }
        }
    }
}

/// TFLite's reference_ops::Requantize for one value.
struct Requantize: Sendable {
    let inputZeroPoint: Int32
    let outputZeroPoint: Int32
    let multiplier: Int32
    let shift: Int
    let min: Int64
    let max: Int64

    init(input: TensorInfo, output: TensorInfo) {
        inputZeroPoint = input.zeroPoint
        outputZeroPoint = output.zeroPoint
        (multiplier, shift) = FixedPoint.quantizeMultiplier(Double(input.scale) / Double(output.scale))
        let range = FixedPoint.integerRange(output.type)
        (min, max) = (Int64(range.min), Int64(range.max))
    }

    @inline(__always)
    func callAsFunction(_ q: Int32) -> Int32 {
        let value = Int64(FixedPoint.multiplySaturating(q &- inputZeroPoint, by: multiplier, shift: shift)) + Int64(outputZeroPoint)
        return Int32(Swift.max(Swift.min(value, max), min))
    }
}

struct RequantizeKernel<Input: FixedWidthInteger & Sendable, Output: FixedWidthInteger & Sendable>: SpecializedKernelBody {
    let count: Int
    let requantize: Requantize

    func execute(_ io: KernelIO) {
        let input = io.input(0, as: Input.self)
        let output = io.output(0, as: Output.self)
        let f = requantize
        forEachChunk(count, io.parallel) { start, end in
            for i in start..<end { output[i] = Output(truncatingIfNeeded: f(Int32(input[i]))) }
        }
    }
}
