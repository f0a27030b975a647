import CKernels
import TFLiteFormat
import TensorCore

/// MEAN (tensorflow/lite/kernels/reduce.cc EvalMean, as registered by LiteRT):
/// - float32: sum in input order, divided by the element count (float). (For a reduction over the
///   last axis only, TFLite sums with Eigen's vectorized column sum, so the last bits can differ.)
/// - int32 / int64: sum in int64, divided with truncation.
/// - uint8 / int8 with keep_dims, rank 4 and axes exactly {1, 2} (global average pooling, e.g.
///   mobilenet): optimized Mean4D: `MultiplyByQuantizedMultiplier(Σq, QuantizeMultiplier(s_in /
///   (N s_out))) + z_out - round(z_in s_in / s_out)`, saturated. TFLite builds this kernel's NEON
///   path on ARM and, through NEON_2_SSE, on x86 with SSE4.1: channels in whole blocks of 16 use
///   MultiplyByQuantizedMultiplier4Rows (vqrdmulh then vrshl, both rounding half up), the
///   remaining channels the scalar MultiplyByQuantizedMultiplier (half away from zero). This is
///   reproduced (single-threaded partition), and matches LiteRT 2.3.0 bit for bit.
/// - other uint8 / int8 / int16: reference QuantizedMeanOrSum: the multiplier of s_in / s_out
///   absorbs 1/N (shift up to log2 N), applied to `Σq - z_in N`, plus z_out, saturated.
/// An empty reduction (no input element) gives NaN for float and 0 otherwise.
struct Mean: Kernel {
    enum Mode: Sendable {
        case float
        case integer
        /// Optimized Mean4D formula; `neonChannels` leading channels use the NEON rounding.
        case quantizedSpatial(multiplier: Int32, shift: Int, bias: Int32, depth: Int, neonChannels: Int)
        /// Reference QuantizedMeanOrSum.
        case quantized(multiplier: Int32, shift: Int, inputZeroPoint: Int32, outputZeroPoint: Int32)
    }

    let plan: ReductionPlan
    let type: ElementType
    let mode: Mode
    let inputCount: Int
    /// Float sums of many rows through ck_sum_rows_f32 (nil with the reference selection).
    var instructionSet: Int32?

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        let input = try context.input(0)
        let output = context.outputs[0]
        try context.expect(input, type: [.float32, .uint8, .int8, .int16, .int32, .int64], "input")
        guard output.type == input.type else {
            throw context.fail("output has type \(output.type) but the input has type \(input.type)")
        }
        var keepDims = false
        if case .reducer(let k) = context.options { keepDims = k }
        let plan = try ReductionPlan(context, input: input, axisTensor: try context.input(1), keepDims: keepDims)

        let mode: Mode
        switch input.type {
        case .float32: mode = .float
        case .int32, .int64: mode = .integer
        default:
            try context.expectPerTensor(input, "input")
            try context.expectPerTensor(output, "output")
            if input.type == .int16 && (input.zeroPoint != 0 || output.zeroPoint != 0) {
                throw context.fail("int16 input and output must have zero point 0", code: .invalidQuantization)
            }
            let spatial = keepDims && input.rank == 4 && plan.axes.count == 2 && Set(plan.axes) == [1, 2]
            if spatial && input.type != .int16 {
                // optimized_integer_ops::Mean / optimized_ops::Mean (float arithmetic as in TFLite).
                let count = Float(input.shape[1] * input.shape[2])
                var temp = Float(input.zeroPoint) * input.scale / output.scale
                temp = temp > 0 ? temp + 0.5 : temp - 0.5
                let bias = output.zeroPoint &- Self.int32(temp)
                let realScale = input.scale / (count * output.scale)
                let (m, s) = FixedPoint.quantizeMultiplier(Double(realScale))
                let depth = input.shape[3]
                mode = .quantizedSpatial(multiplier: m, shift: s, bias: bias, depth: depth, neonChannels: depth / 16 * 16)
            } else {
                var (m, s) = FixedPoint.quantizeMultiplier(Double(input.scale) / Double(output.scale))
                let n = plan.reducedCount
                if n > 0 {
                    var shift = Int.bitWidth - 1 - n.leadingZeroBitCount
                    shift = max(0, min(shift, 32, 31 + s))
                    m = Int32(truncatingIfNeeded: (Int64(m) << Int64(shift)) / Int64(n))
                    s -= shift
                }
                mode = .quantized(multiplier: m, shift: s, inputZeroPoint: input.zeroPoint, outputZeroPoint: output.zeroPoint)
            }
        }
        context.outputs[0].shape = plan.outputShape
        switch mode {
        case .float: break
        case .integer: context.scratchByteCount = plan.outputCount * 8
        default: context.scratchByteCount = plan.outputCount * 4
        }
        return Mean(plan: plan, type: input.type, mode: mode, inputCount: input.elementCount, instructionSet: context.instructionSet)
    }

    /// TFLite's NEON MultiplyByQuantizedMultiplier4Rows (double-rounding build) for one lane:
    /// `vrshlq_s32(vqrdmulhq_s32(x << max(shift, 0), multiplier), min(shift, 0))`. Both the
    /// doubling high multiply and the rounding shift round half toward +infinity.
    @inline(__always)
    static func multiplyNeon(_ x: Int32, by multiplier: Int32, shift: Int) -> Int32 {
        let left = max(shift, 0), right = -min(shift, 0)
        let a = x << Int32(left)
        // vqrdmulhq_s32: (2ab + 2^31) >> 32, saturating only for INT32_MIN * INT32_MIN.
        let high: Int64 = (a == Int32.min && multiplier == Int32.min)
            ? Int64(Int32.max) : (Int64(a) * Int64(multiplier) + (1 << 30)) >> 31
        // vrshlq_s32 by a negative amount: rounding shift right.
        let rounded = right > 0 ? (high + (Int64(1) << Int64(right - 1))) >> Int64(right) : high
        return Int32(truncatingIfNeeded: rounded)
    }

    /// C++ `static_cast<int32_t>` of a float, saturating instead of undefined behaviour.
    static func int32(_ v: Float) -> Int32 {
        guard !v.isNaN else { return 0 }
        return Int32(max(min(v, 2_147_483_520), -2_147_483_648))
    }

    func run(_ io: KernelIO) {
        let src = io.input(0), dst = io.output(0)
        let n = plan.outputCount
        if inputCount == 0 || plan.reducedCount == 0 {
            // TFLite fills the output with quiet NaN (0 for integer types).
            if type == .float32 {
                dst.assumingMemoryBound(to: Float.self).update(repeating: .nan, count: n)
            } else if let size = type.byteSize {
                dst.initializeMemory(as: UInt8.self, repeating: 0, count: n * size)
            }
            return
        }
        switch mode {
        case .float:
            let input = src.assumingMemoryBound(to: Float.self), output = dst.assumingMemoryBound(to: Float.self)
            output.update(repeating: 0, count: n)
            plan.forEachRun { i, o, count, intoOne, rows in
                let source = input + i, destination = output + o
                if intoOne {
                    var s = destination[0]
                    for j in 0..<count { s += source[j] }
                    destination[0] = s
                } else {
                    Self.addRows(source, rows: rows, count: count, into: destination, instructionSet: instructionSet)
                }
            }
            let divisor = Float(plan.reducedCount)
            for j in 0..<n { output[j] = output[j] / divisor }
        case .integer:
            guard let scratch = io.scratch else { return }
            let sums = scratch.assumingMemoryBound(to: Int64.self)
            if type == .int32 {
                Self.sum(src.assumingMemoryBound(to: Int32.self), into: sums, plan: plan)
                let output = dst.assumingMemoryBound(to: Int32.self)
                for j in 0..<n { output[j] = Int32(truncatingIfNeeded: sums[j] / Int64(plan.reducedCount)) }
            } else {
                Self.sum(src.assumingMemoryBound(to: Int64.self), into: sums, plan: plan)
                let output = dst.assumingMemoryBound(to: Int64.self)
                for j in 0..<n { output[j] = sums[j] / Int64(plan.reducedCount) }
            }
        case .quantizedSpatial, .quantized:
            guard let scratch = io.scratch else { return }
            let sums = scratch.assumingMemoryBound(to: Int32.self)
            switch type {
            case .uint8: finishQuantized(src.assumingMemoryBound(to: UInt8.self), sums, dst.assumingMemoryBound(to: UInt8.self))
            case .int8: finishQuantized(src.assumingMemoryBound(to: Int8.self), sums, dst.assumingMemoryBound(to: Int8.self))
            default: finishQuantized(src.assumingMemoryBound(to: Int16.self), sums, dst.assumingMemoryBound(to: Int16.self))
            }
        }
    }

    /// destination[j] += source[r * count + j] for r = 0, 1, ..., rows - 1 in that order (float
    /// MEAN's and SUM's runs; ck_sum_rows_f32 in registers when an instruction set is given).
    static func addRows(_ source: UnsafePointer<Float>, rows: Int, count: Int, into destination: UnsafeMutablePointer<Float>,
                        instructionSet: Int32?) {
        if let isa = instructionSet {
            ck_sum_rows_f32(isa, source, rows, count, destination)
            return
        }
        for r in 0..<rows {
            let row = source + r * count
            for j in 0..<count { destination[j] += row[j] }
        }
    }

    /// Sums of the raw input values per output (wrapping, like TFLite's accumulators). With an
    /// instruction set, runs of rows of 8-bit values into int32 go through ck_sum_rows_8 (the
    /// Swift loop, built for baseline x86-64, widens bytes with SSE2: tf2_mobilenet_v2's
    /// 7 × 7 × 1280 MEAN took 0.011 ms).
    static func sum<T: FixedWidthInteger, A: FixedWidthInteger>(_ input: UnsafePointer<T>, into sums: UnsafeMutablePointer<A>, plan: ReductionPlan,
                                                                instructionSet: Int32? = nil) {
        sums.update(repeating: 0, count: plan.outputCount)
        let bytes = T.bitWidth == 8 && A.self == Int32.self ? instructionSet : nil
        plan.forEachRun { i, o, count, intoOne, rows in
            // Pointers offset once: the loops carry no checked index arithmetic and vectorize.
            let source = input + i, destination = sums + o
            if intoOne {
                var s = destination[0]
                for j in 0..<count { s &+= A(truncatingIfNeeded: source[j]) }
                destination[0] = s
            } else if let isa = bytes {
                UnsafeMutableRawPointer(destination).withMemoryRebound(to: Int32.self, capacity: count) {
                    ck_sum_rows_8(isa, UnsafeRawPointer(source), T.isSigned ? 1 : 0, rows, count, $0)
                }
            } else {
                for r in 0..<rows {
                    let row = source + r * count
                    for j in 0..<count { destination[j] &+= A(truncatingIfNeeded: row[j]) }
                }
            }
        }
    }

    private func finishQuantized<T: FixedWidthInteger>(_ input: UnsafePointer<T>, _ sums: UnsafeMutablePointer<Int32>, _ output: UnsafeMutablePointer<T>) {
        Self.sum(input, into: sums, plan: plan, instructionSet: instructionSet)
        let lo = Int32(truncatingIfNeeded: T.min), hi = Int32(truncatingIfNeeded: T.max)
        switch mode {
        case .quantizedSpatial(let m, let s, let bias, let depth, let neonChannels):
            // Output layout [batch, 1, 1, depth]: channel = j % depth.
            for j in 0..<plan.outputCount {
                let scaled = j % depth < neonChannels
                    ? Self.multiplyNeon(sums[j], by: m, shift: s)
                    : FixedPoint.multiply(sums[j], by: m, shift: s)
                let v = scaled &+ bias
                output[j] = T(truncatingIfNeeded: min(max(v, lo), hi))
            }
        case .quantized(let m, let s, let zpIn, let zpOut):
            let offset = zpIn &* Int32(truncatingIfNeeded: plan.reducedCount)
            for j in 0..<plan.outputCount {
                let v = FixedPoint.multiply(sums[j] &- offset, by: m, shift: s) &+ zpOut
                output[j] = T(truncatingIfNeeded: min(max(v, lo), hi))
            }
        default: break
        }
    }
}
