import TFLiteFormat
import TensorCore

/// Helpers shared by the convolution-family kernels: TFLite's output-size and padding rules
/// (tensorflow/lite/kernels/padding.h), quantized output multipliers
/// (PopulateConvolutionQuantizationParams / GetQuantizedConvolutionMultipler in kernel_util.cc),
/// and the requantization step of the reference integer kernels.
enum ConvolutionSupport {
    /// TFLite's ComputeOutSize: SAME = ceil(image / stride), VALID = (image - effective filter + stride) / stride
    /// (C integer division, truncating toward zero).
    static func outputSize(padding: Padding, imageSize: Int, filterSize: Int, stride: Int, dilation: Int) -> Int {
        let effectiveFilter = (filterSize - 1) * dilation + 1
        switch padding {
        case .same: return (imageSize + stride - 1) / stride
        case .valid: return (imageSize + stride - effectiveFilter) / stride
        }
    }

    /// TFLite's ComputePaddingWithOffset: the padding before the first element (the odd unit of
    /// the total padding goes after the last one, and the reference kernels ignore it).
    static func padding(stride: Int, dilation: Int, inputSize: Int, filterSize: Int, outputSize: Int) -> Int {
        let effectiveFilter = (filterSize - 1) * dilation + 1
        let total = (outputSize - 1) * stride + effectiveFilter - inputSize
        return total > 0 ? total / 2 : 0
    }

    /// The float clamp of a fused activation; activations the convolution ops cannot fuse throw.
    static func floatActivation(_ activation: FusedActivation, _ context: OpContext) throws -> (min: Float, max: Float) {
        try checkActivation(activation, context)
        return FixedPoint.activationRange(activation)
    }

    /// The operand checks CONV_2D and DEPTHWISE_CONV_2D share: float32/uint8/int8 rank-4 input and
    /// filter of the input's type, output of the input's type, positive strides and dilations, and a
    /// supported fused activation.
    static func checkOperands(input: TensorInfo, filter: TensorInfo, output: TensorInfo,
                              strides: (height: Int, width: Int), dilations: (height: Int, width: Int),
                              activation: FusedActivation, _ context: OpContext) throws {
        try context.expect(input, type: [.float32, .uint8, .int8], "input")
        try context.expect(input, rank: 4, "input")
        try context.expect(filter, rank: 4, "filter")
        guard filter.type == input.type else {
            throw context.fail("filter has type \(filter.type) but input has type \(input.type) (hybrid or mixed-type convolution is not supported)",
                               code: .unsupportedOperator)
        }
        guard output.type == input.type else {
            throw context.fail("output has type \(output.type) but input has type \(input.type)", code: .unsupportedOperator)
        }
        guard strides.width > 0, strides.height > 0 else {
            throw context.fail("strides must be positive, are \(strides.height)x\(strides.width)")
        }
        guard dilations.width > 0, dilations.height > 0 else {
            throw context.fail("dilation factors must be positive, are \(dilations.height)x\(dilations.width)")
        }
        try checkActivation(activation, context)
    }

    /// Output size and leading padding of a convolution window sliding over the input, with
    /// TFLite's ComputeOutSize / ComputePaddingHeightWidth rules; a filter larger than the input
    /// with VALID padding is an error.
    static func geometry(padding: Padding, input: (height: Int, width: Int), filter: (height: Int, width: Int),
                         strides: (height: Int, width: Int), dilations: (height: Int, width: Int),
                         _ context: OpContext) throws -> (outHeight: Int, outWidth: Int, padTop: Int, padLeft: Int) {
        let outHeight = outputSize(padding: padding, imageSize: input.height, filterSize: filter.height,
                                   stride: strides.height, dilation: dilations.height)
        let outWidth = outputSize(padding: padding, imageSize: input.width, filterSize: filter.width,
                                  stride: strides.width, dilation: dilations.width)
        guard outHeight >= 0, outWidth >= 0 else {
            throw context.fail("the \(filter.height)x\(filter.width) filter (dilation \(dilations.height)x\(dilations.width)) is larger than the \(input.height)x\(input.width) input with VALID padding")
        }
        let padTop = self.padding(stride: strides.height, dilation: dilations.height,
                                  inputSize: input.height, filterSize: filter.height, outputSize: outHeight)
        let padLeft = self.padding(stride: strides.width, dilation: dilations.width,
                                   inputSize: input.width, filterSize: filter.width, outputSize: outWidth)
        return (outHeight, outWidth, padTop, padLeft)
    }

    static func checkActivation(_ activation: FusedActivation, _ context: OpContext) throws {
        switch activation {
        case .none, .relu, .relu6, .reluN1To1: return
        default:
            throw context.fail("fused activation \(activation) is not supported (only NONE, RELU, RELU_N1_TO_1, RELU6)",
                               code: .unsupportedOperator)
        }
    }

    /// Checks that a quantized tensor has usable parameters: finite positive scales.
    static func checkQuantized(_ tensor: TensorInfo, _ what: String, _ context: OpContext) throws -> QuantizationParameters {
        guard let q = tensor.quantization, q.isQuantized else {
            throw context.fail("\(what) (\(tensor.type)) has no quantization parameters", code: .invalidQuantization)
        }
        for scale in q.scales where !(scale.isFinite && scale > 0) {
            throw context.fail("\(what) has quantization scale \(scale); scales must be finite and positive", code: .invalidQuantization)
        }
        guard q.zeroPoints.isEmpty || q.zeroPoints.count == q.scales.count else {
            throw context.fail("\(what) has \(q.scales.count) scales but \(q.zeroPoints.count) zero points", code: .invalidQuantization)
        }
        return q
    }

    /// Per-tensor zero point of a quantized tensor, checked to lie in its type's range.
    static func zeroPoint(_ tensor: TensorInfo, _ what: String, _ context: OpContext) throws -> Int32 {
        let zp = tensor.quantization?.zeroPoint ?? 0
        let (lo, hi) = FixedPoint.integerRange(tensor.type)
        guard zp >= Int64(lo), zp <= Int64(hi) else {
            throw context.fail("\(what) has zero point \(zp), outside the range of \(tensor.type)", code: .invalidQuantization)
        }
        return Int32(zp)
    }

    /// The output multipliers of a quantized convolution-like op, one per output channel.
    ///
    /// - uint8 (per-tensor weights only): TFLite's legacy scalar path, GetQuantizedConvolutionMultipler:
    ///   `double(input_scale * filter_scale)` (product in float) / `double(output_scale)`, after checking
    ///   that a quantized bias has scale ≈ input_scale * filter_scale (|diff| / output_scale <= 0.02).
    /// - int8: `double(input_scale) * double(filter_scale[c]) / double(output_scale)` per channel
    ///   (a single filter scale is broadcast), filter zero points must be 0 (the reference integer
    ///   kernels ignore them).
    ///
    /// `channelDimension` is the filter dimension that indexes output channels. FULLY_CONNECTED
    /// passes `fullyConnected: true`: per-tensor int8 weights then also take the scalar path (with
    /// their zero point, as TFLite's integer FC kernel subtracts it).
    static func outputMultipliers(input: TensorInfo, filter: TensorInfo, bias: TensorInfo?, output: TensorInfo,
                                  channels: Int, channelDimension: Int, fullyConnected: Bool = false,
                                  _ context: OpContext) throws -> (multipliers: [Int32], shifts: [Int32]) {
        let inputQ = try checkQuantized(input, "input", context)
        let filterQ = try checkQuantized(filter, "filter", context)
        let outputQ = try checkQuantized(output, "output", context)
        guard inputQ.scales.count == 1 else {
            throw context.fail("input must be quantized per-tensor (one scale), has \(inputQ.scales.count)", code: .invalidQuantization)
        }
        guard outputQ.scales.count == 1 else {
            throw context.fail("output must be quantized per-tensor (one scale), has \(outputQ.scales.count)", code: .invalidQuantization)
        }
        let inputScale = inputQ.scale, outputScale = outputQ.scale
        if filterQ.scales.count > 1 {
            guard filter.type == .int8 else {
                throw context.fail("per-channel quantized weights are only supported for int8, not \(filter.type)", code: .unsupportedOperator)
            }
            guard filterQ.scales.count == channels, filterQ.quantizedDimension == channelDimension else {
                throw context.fail("filter has \(filterQ.scales.count) per-channel scales along dimension \(filterQ.quantizedDimension); expected \(channels) along dimension \(channelDimension)",
                                   code: .invalidQuantization)
            }
        }
        let scalarPath = filter.type == .uint8 || (fullyConnected && filterQ.scales.count == 1)
        if !scalarPath {
            guard filterQ.zeroPoints.allSatisfy({ $0 == 0 }) else {
                throw context.fail("int8 filter must be symmetric (zero points 0), has zero points \(Array(filterQ.zeroPoints.prefix(4)))", code: .invalidQuantization)
            }
            var multipliers = [Int32](repeating: 0, count: channels), shifts = [Int32](repeating: 0, count: channels)
            for c in 0..<channels {
                let filterScale = filterQ.scales.count > 1 ? filterQ.scales[c] : filterQ.scales[0]
                let (m, s) = FixedPoint.quantizeMultiplier(Double(inputScale) * Double(filterScale) / Double(outputScale))
                multipliers[c] = m
                shifts[c] = Int32(s)
            }
            return (multipliers, shifts)
        }
        // The scalar (per-tensor) path.
        let filterScale = filterQ.scale
        if let bias, let biasQ = bias.quantization, biasQ.isQuantized {
            let productScale = Double(inputScale) * Double(filterScale)
            let difference = abs(productScale - Double(biasQ.scale))
            guard difference / Double(outputScale) <= 0.02 else {
                throw context.fail("bias scale \(biasQ.scale) does not match input scale × filter scale (\(productScale))", code: .invalidQuantization)
            }
        }
        let (m, s) = FixedPoint.quantizeMultiplier(Double(inputScale * filterScale) / Double(outputScale))
        return ([Int32](repeating: m, count: channels), [Int32](repeating: Int32(s), count: channels))
    }

    /// Checks a bias operand: `count` elements of float32 (float ops) or int32 (quantized ops).
    static func checkBias(_ bias: TensorInfo, inputType: ElementType, count: Int, _ context: OpContext) throws {
        let expected: ElementType = inputType == .float32 ? .float32 : .int32
        guard bias.type == expected else {
            throw context.fail("bias has type \(bias.type), expected \(expected) for \(inputType) input", code: .unsupportedOperator)
        }
        guard bias.elementCount == count else {
            throw context.fail("bias has shape \(Shape(bias.shape)) (\(bias.elementCount) elements), expected \(count) (one per output channel)")
        }
        if inputType == .int8, let q = bias.quantization, q.zeroPoints.contains(where: { $0 != 0 }) {
            throw context.fail("int32 bias of an int8 op must have zero point 0", code: .invalidQuantization)
        }
    }

    /// Splits `count` units of work into at most `maxPieces` contiguous ranges.
    @inline(__always)
    static func range(piece: Int, of pieces: Int, count: Int) -> Range<Int> {
        let base = count / pieces, extra = count % pieces
        let start = piece * base + Swift.min(piece, extra)
        return start..<(start + base + (piece < extra ? 1 : 0))
    }

    /// Rounds a byte count up to 64.
    @inline(__always)
    static func align(_ bytes: Int) -> Int { (bytes + 63) & ~63 }
}

/// The requantization step of TFLite's integer convolution kernels, with per-channel multipliers
/// (for uint8 all channels share TFLite's single multiplier): acc (+ bias) → MultiplyByQuantizedMultiplier
/// → + output zero point → clamp to the activation range.
struct ConvRequantizer: Sendable {
    /// How MultiplyByQuantizedMultiplier rounds exact halves.
    enum Rounding: Sendable {
        /// The reference kernels (reference_ops / reference_integer_ops): SaturatingRoundingDoublingHighMul
        /// and RoundingDivideByPOT both round half away from zero. LiteRT's builtin DEPTHWISE_CONV_2D on
        /// x86 matches this (checked node by node on the shared models).
        case reference
        /// LiteRT's builtin kernels that go through cpu_backend_gemm (CONV_2D uint8 optimized_ops::Conv
        /// and int8 optimized_integer_ops::ConvPerChannel: im2col + GEMM), which on x86 with AVX run
        /// ruy's AVX2/AVX-512 kernels: the high multiply and the final rounding right shift both round
        /// half UP (ARM sqrdmulh/srshl semantics); see ``FixedPoint/multiplyRoundingHalfUp(_:by:shift:)``.
        case gemmHalfUp
    }

    let multipliers: [Int32]
    let shifts: [Int32]
    let outputZeroPoint: Int32
    let activationMin: Int32
    let activationMax: Int32
    var rounding: Rounding = .reference

    /// Writes `count` output channels from int32 accumulators (channel `c` = `firstChannel + i`).
    @inline(__always)
    func store<T: FixedWidthInteger>(_ acc: UnsafePointer<Int32>, bias: UnsafePointer<Int32>?, count: Int,
                                     firstChannel: Int = 0, to out: UnsafeMutablePointer<T>) {
        multipliers.withUnsafeBufferPointer { m in
            shifts.withUnsafeBufferPointer { s in
                for i in 0..<count {
                    let c = firstChannel + i
                    var a = acc[i]
                    if let bias { a = a &+ bias[c] }
                    var v = (rounding == .reference
                             ? FixedPoint.multiply(a, by: m[c], shift: Int(s[c]))
                             : FixedPoint.multiplyRoundingHalfUp(a, by: m[c], shift: Int(s[c]))) &+ outputZeroPoint
                    v = Swift.max(v, activationMin)
                    v = Swift.min(v, activationMax)
                    out[i] = T(truncatingIfNeeded: v)
                }
            }
        }
    }
}

extension ConvolutionSupport {
    /// Builds a repacked copy of constant weights: `body` reads `count` elements of `S` and writes
    /// `count` elements of `D`. Empty for empty weights.
    static func packed<S, D>(_ data: UnsafeRawBufferPointer, as type: S.Type, count: Int,
                             _ body: (UnsafePointer<S>, UnsafeMutablePointer<D>) -> Void) -> [D] {
        guard count > 0, let base = data.baseAddress, data.count >= count * MemoryLayout<S>.stride else { return [] }
        return [D](unsafeUninitializedCapacity: count) { buffer, initialized in
            if let destination = buffer.baseAddress {
                body(base.assumingMemoryBound(to: S.self), destination)
                initialized = count
            }
        }
    }
}
