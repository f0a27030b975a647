import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport

/// The 3×3 quantized DEPTHWISE_CONV_2D kernels (on AVX-512-VNNI: vpdpbusd over quads of input rows,
/// two output rows per pass at vertical stride 1, groups of 64 channels, 32 channels as pixel pairs,
/// 16-channel blocks with a partial last one, output chunks of 64 pixels, the plain and the general
/// requantization) must equal the reference kernel byte for byte for every selection at 1 and 2
/// threads (the rows split into pieces of one or two rows, so passes start at odd rows and end with
/// a single row).
extension OptimizedQuantizedKernelTests {
    /// A 3×3 depthwise filter [1, 3, 3, channels]: int8 per-channel symmetric, or uint8 with
    /// `zeroPoint` (and `bytes` when given).
    func filter(_ q: inout Quantized, channels: Int, zeroPoint: Int64? = nil, bytes: [UInt8]? = nil) -> TensorValue {
        var value = q.weights(shape: [1, 3, 3, channels], channels: channels, dimension: 3)
        if let zeroPoint, q.type == .uint8 {
            value.quantization = QuantizationParameters(scale: 0.01, zeroPoint: zeroPoint)
        }
        if let bytes { value.bytes = bytes }
        return value
    }

    // MARK: Shapes

    /// Channel counts around the groups of 64, the pixel-pair layout (32) and partial blocks;
    /// strides and dilations of every compiled shape plus the asymmetric ones (one output row per
    /// pass, the generic kernel); widths across the 64-pixel chunks and narrower than a window.
    func testDepthwiseShapesMatchReference() throws {
        struct Shape {
            var height, width, channels: Int
            var stride: (Int, Int), dilation: (Int, Int)
            var padding: Padding
        }
        let shapes: [Shape] = [
            Shape(height: 9, width: 10, channels: 64, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 8, width: 7, channels: 144, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 7, width: 9, channels: 96, stride: (2, 2), dilation: (1, 1), padding: .same),
            Shape(height: 10, width: 11, channels: 200, stride: (2, 2), dilation: (1, 1), padding: .valid),
            Shape(height: 9, width: 9, channels: 130, stride: (1, 1), dilation: (2, 2), padding: .same),
            Shape(height: 11, width: 12, channels: 32, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 6, width: 4, channels: 32, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 5, width: 6, channels: 32, stride: (1, 1), dilation: (1, 1), padding: .valid),
            Shape(height: 5, width: 5, channels: 32, stride: (2, 2), dilation: (1, 1), padding: .same),
            Shape(height: 5, width: 3, channels: 32, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 7, width: 8, channels: 8, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 9, width: 8, channels: 16, stride: (2, 2), dilation: (1, 1), padding: .same),
            Shape(height: 6, width: 9, channels: 24, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 8, width: 6, channels: 48, stride: (2, 2), dilation: (1, 1), padding: .valid),
            Shape(height: 5, width: 7, channels: 5, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 4, width: 3, channels: 77, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 3, width: 3, channels: 64, stride: (1, 1), dilation: (1, 1), padding: .valid),
            Shape(height: 1, width: 1, channels: 40, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 2, width: 2, channels: 70, stride: (2, 2), dilation: (1, 1), padding: .same),
            Shape(height: 7, width: 7, channels: 66, stride: (2, 1), dilation: (1, 1), padding: .same),
            Shape(height: 7, width: 9, channels: 33, stride: (1, 2), dilation: (1, 1), padding: .same),
            Shape(height: 9, width: 7, channels: 64, stride: (1, 1), dilation: (2, 1), padding: .same),
            Shape(height: 8, width: 10, channels: 20, stride: (1, 1), dilation: (1, 2), padding: .same),
            Shape(height: 9, width: 9, channels: 18, stride: (2, 2), dilation: (2, 2), padding: .same),
            Shape(height: 5, width: 70, channels: 16, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 4, width: 131, channels: 32, stride: (1, 1), dilation: (1, 1), padding: .same),
            Shape(height: 3, width: 141, channels: 17, stride: (2, 2), dilation: (1, 1), padding: .same),
            Shape(height: 4, width: 73, channels: 64, stride: (1, 1), dilation: (2, 2), padding: .same),
        ]
        var rng = SeededGenerator(seed: 0xD3_33_5EED)
        for (index, shape) in shapes.enumerated() {
            for type in [ElementType.int8, .uint8] {
                var q = Quantized(type: type, rng: rng)
                let batches = index % 3 == 0 ? 2 : 1
                let inputScale: Float = 0.02
                let input = q.tensor(shape: [batches, shape.height, shape.width, shape.channels], scale: inputScale, zeroPoint: q.zeroPoint())
                let weights = filter(&q, channels: shape.channels)
                let output = q.outputSpec(accumulatorScale: inputScale * 0.01 * 3)
                let options = ConvolutionKernelTests.depthwise(shape.padding, stride: shape.stride, dilation: shape.dilation,
                                                               activation: q.activation())
                try assertMatchesReference(.depthwiseConv2D, options, [input, weights, q.bias(shape.channels)], output,
                                           "#\(index) \(type) \(batches)x\(shape.height)x\(shape.width)x\(shape.channels) s\(shape.stride) d\(shape.dilation) \(shape.padding)")
                rng = q.rng
            }
        }
    }

    // MARK: Requantization

    /// Multipliers with a right shift of 1 to 22 (the plain requantization), in [0.5, 1) (no
    /// shift), above 1 (left shifts), tiny ones (a right shift past 22: zero point not folded);
    /// biases beyond 2^28; every activation and extreme zero points (the general one).
    func testDepthwiseRequantizationMatchesReference() throws {
        var rng = SeededGenerator(seed: 0x2E_0A_47)
        let cases: [(factor: Float, bias: Int32, activation: FusedActivation)] = [
            (200, 20000, .none), (200, 20000, .relu6), (60, 20000, .relu), (0.7, 300, .none), (1.6, 300, .relu6),
            (3_000_000, 20000, .none), (100, 1 << 29, .none), (100, Int32.max / 2, .relu),
        ]
        for (index, c) in cases.enumerated() {
            for type in [ElementType.int8, .uint8] {
                var q = Quantized(type: type, rng: rng)
                for channels in [32, 64 + 32 + 5] {
                    let inputScale: Float = 0.02
                    let input = q.tensor(shape: [1, 7, 9, channels], scale: inputScale, zeroPoint: q.zeroPoint())
                    let weights = filter(&q, channels: channels)
                    let bias = TensorValue.int32((0..<channels).map { _ in Int32.random(in: -c.bias...c.bias, using: &q.rng) }, shape: [channels])
                    let outputZeroPoint: Int64 = [type == .int8 ? -128 : 0, type == .int8 ? 127 : 255, q.zeroPoint()][index % 3]
                    let output = OutputSpec(type: type, quantization: QuantizationParameters(scale: inputScale * 0.01 * c.factor,
                                                                                             zeroPoint: outputZeroPoint))
                    for stride in [1, 2] {
                        let options = ConvolutionKernelTests.depthwise(.same, stride: (stride, stride), activation: c.activation)
                        try assertMatchesReference(.depthwiseConv2D, options, [input, weights, bias], output,
                                                   "requantization #\(index) \(type) \(channels) s\(stride) factor \(c.factor) bias \(c.bias) \(c.activation)")
                    }
                }
                rng = q.rng
            }
        }
    }

    /// Few small products and multipliers 0.3 / 0.375 / 0.75 / 1.5 make exact halves frequent at
    /// both roundings of the reference (the doubling high product and the final shift).
    func testDepthwiseExactHalvesRoundLikeReference() throws {
        for type in [ElementType.uint8, .int8] {
            var q = Quantized(type: type, rng: SeededGenerator(seed: type == .uint8 ? 31 : 32))
            for multiplier: Float in [0.3, 0.375, 0.75, 1.5] {
                for channels in [32, 64, 16] {
                    let zp: Int64 = type == .uint8 ? 128 : 0
                    let inputBytes = (0..<(2 * 6 * 7 * channels)).map { _ in
                        UInt8(truncatingIfNeeded: Int.random(in: -3...3, using: &q.rng) + (type == .uint8 ? 128 : 0))
                    }
                    let input = TensorValue(type: type, shape: [2, 6, 7, channels], quantization: QuantizationParameters(scale: 1, zeroPoint: zp),
                                            bytes: inputBytes)
                    let weightBytes = (0..<(9 * channels)).map { _ in
                        UInt8(truncatingIfNeeded: Int.random(in: -3...3, using: &q.rng) + (type == .uint8 ? 128 : 0))
                    }
                    let quantization = type == .uint8 ? QuantizationParameters(scale: 1, zeroPoint: 128)
                                                      : QuantizationParameters(scales: [Float](repeating: 1, count: channels),
                                                                               zeroPoints: [Int64](repeating: 0, count: channels), quantizedDimension: 3)
                    let weights = TensorValue(type: type, shape: [1, 3, 3, channels], quantization: quantization, bytes: weightBytes, isConstant: true)
                    let output = OutputSpec(type: type, quantization: QuantizationParameters(scale: 1 / multiplier, zeroPoint: zp))
                    for stride in [1, 2] {
                        try assertMatchesReference(.depthwiseConv2D, ConvolutionKernelTests.depthwise(.same, stride: (stride, stride)), [input, weights, nil], output,
                                                   "halves \(type) \(multiplier) \(channels) s\(stride)")
                    }
                }
            }
        }
    }

    // MARK: uint8 filter zero points

    /// uint8 weights: a zero point whose differences all fit int8 (one vpdpbusd per quad), others
    /// (a per-channel offset d and a second vpdpbusd), and 0 with weights up to 255 (no d fits: the
    /// kernel keeps the generic variant).
    func testDepthwiseFilterZeroPointsMatchReference() throws {
        var q = Quantized(type: .uint8, rng: SeededGenerator(seed: 0xF11_7E2))
        for (index, zeroPoint) in ([128, 0, 255, 1, 77, 200] as [Int64]).enumerated() {
            for channels in [32, 100] {
                var bytes = q.values(9 * channels)
                if zeroPoint == 0 || index % 2 == 0 {
                    // Both extremes in every channel.
                    for c in 0..<channels { bytes[c] = 0; bytes[8 * channels + c] = 255 }
                }
                let weights = filter(&q, channels: channels, zeroPoint: zeroPoint, bytes: bytes)
                let input = q.tensor(shape: [1, 6, 9, channels], scale: 0.02, zeroPoint: q.zeroPoint())
                let output = q.outputSpec(accumulatorScale: 0.02 * 0.01 * 3)
                for stride in [1, 2] {
                    try assertMatchesReference(.depthwiseConv2D, ConvolutionKernelTests.depthwise(.same, stride: (stride, stride), activation: q.activation()),
                                               [input, weights, q.bias(channels)], output, "filter zero point \(zeroPoint) \(channels) s\(stride)")
                }
            }
        }
    }
}
