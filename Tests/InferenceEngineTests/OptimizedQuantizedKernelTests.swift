import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport

/// The quantized CKernels paths of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED (uint8 with
/// per-tensor weights, int8 with per-channel symmetric weights) must equal the reference kernels
/// byte for byte, for every instruction-set variant and at 1, 2 and 3 threads: randomized small shapes
/// (channel counts that are not multiples of 4 or 16, 1×1 / 3×3 / 5×5 filters, strides 1–2,
/// dilation 2, SAME / VALID, extreme zero points, RELU / RELU6, 2 batches).
final class OptimizedQuantizedKernelTests: XCTestCase {
    static let selections: [KernelSelection] = [.portable, .avx2, .avx512, .optimized]

    /// Runs the op with every selection and thread count and compares with `.reference`.
    func assertMatchesReference(_ op: BuiltinOperator, _ options: BuiltinOptions, _ inputs: [TensorValue?], _ output: OutputSpec,
                                _ label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let expected = try KernelRunner.run(op, options: options, inputs: inputs, outputs: [output], kernels: .reference)[0]
        XCTAssertFalse(expected.bytes.isEmpty, label, file: file, line: line)
        for selection in Self.selections {
            // 3 threads: short convolutions run as one piece per thread (ParallelRunner.isShort).
            for threads in [1, 2, 3] {
                let actual = try KernelRunner.run(op, options: options, inputs: inputs, outputs: [output], threads: threads, kernels: selection)[0]
                XCTAssertEqual(actual.shape, expected.shape, "\(label) \(selection) threads \(threads)", file: file, line: line)
                if actual.bytes != expected.bytes {
                    let index = zip(actual.bytes, expected.bytes).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1
                    XCTFail("\(label) \(selection) threads \(threads): first difference at byte \(index) of \(expected.bytes.count)",
                            file: file, line: line)
                    return
                }
            }
        }
    }

    // MARK: Random operands

    struct Quantized {
        var type: ElementType
        var rng: SeededGenerator

        var isSigned: Bool { type == .int8 }

        mutating func zeroPoint() -> Int64 {
            // Extremes a quarter of the time.
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: return isSigned ? -128 : 0
            case 1: return isSigned ? 127 : 255
            default: return isSigned ? Int64.random(in: -128...127, using: &rng) : Int64.random(in: 0...255, using: &rng)
            }
        }

        mutating func values(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }

        mutating func tensor(shape: [Int], scale: Float, zeroPoint: Int64, isConstant: Bool = false) -> TensorValue {
            TensorValue(type: type, shape: shape, quantization: QuantizationParameters(scale: scale, zeroPoint: zeroPoint),
                        bytes: values(shape.reduce(1, *)), isConstant: isConstant)
        }

        /// Weights: uint8 per-tensor with a zero point, int8 per-channel symmetric along `dimension`
        /// (some weights at the extremes).
        mutating func weights(shape: [Int], channels: Int, dimension: Int) -> TensorValue {
            var bytes = values(shape.reduce(1, *))
            for i in bytes.indices where Int.random(in: 0..<16, using: &rng) == 0 {
                bytes[i] = isSigned ? (Bool.random(using: &rng) ? 0x80 : 0x7F) : (Bool.random(using: &rng) ? 0 : 255)
            }
            let quantization: QuantizationParameters
            if isSigned {
                let scales = (0..<channels).map { _ in Float.random(in: 0.002...0.02, using: &rng) }
                quantization = QuantizationParameters(scales: scales, zeroPoints: [Int64](repeating: 0, count: channels), quantizedDimension: dimension)
            } else {
                quantization = QuantizationParameters(scale: Float.random(in: 0.002...0.02, using: &rng), zeroPoint: zeroPoint())
            }
            return TensorValue(type: type, shape: shape, quantization: quantization, bytes: bytes, isConstant: true)
        }

        mutating func bias(_ count: Int, magnitude: Int32 = 20000) -> TensorValue? {
            guard Int.random(in: 0..<5, using: &rng) != 0 else { return nil }
            return .int32((0..<count).map { _ in Int32.random(in: -magnitude...magnitude, using: &rng) }, shape: [count])
        }

        /// An output scale giving multipliers below and (sometimes) above 1.
        mutating func outputSpec(accumulatorScale: Float) -> OutputSpec {
            let factor: Float = Int.random(in: 0..<6, using: &rng) == 0 ? Float.random(in: 0.3...3, using: &rng)
                                                                          : Float.random(in: 8...400, using: &rng)
            let scale = accumulatorScale * factor
            return OutputSpec(type: type, quantization: QuantizationParameters(scale: scale, zeroPoint: zeroPoint()))
        }

        mutating func activation() -> FusedActivation {
            [FusedActivation.none, .relu, .relu6][Int.random(in: 0..<3, using: &rng)]
        }
    }

    // MARK: CONV_2D

    func testConv2DMatchesReference() throws {
        var rng = SeededGenerator(seed: 0x5EED_C0_4D)
        for index in 0..<28 {
            let type: ElementType = index % 2 == 0 ? .uint8 : .int8
            var q = Quantized(type: type, rng: rng)
            let kernel = [1, 3, 5][Int.random(in: 0..<3, using: &q.rng)]
            let stride = Int.random(in: 1...2, using: &q.rng)
            let dilation = kernel > 1 && Int.random(in: 0..<4, using: &q.rng) == 0 ? 2 : 1
            let padding: Padding = Bool.random(using: &q.rng) ? .same : .valid
            let effective = (kernel - 1) * dilation + 1
            let height = Int.random(in: max(1, effective)...(effective + 7), using: &q.rng)
            let width = Int.random(in: max(1, effective)...(effective + 7), using: &q.rng)
            let batches = Int.random(in: 1...2, using: &q.rng)
            let inChannels = [1, 3, 5, 7, 13, 17, 24, 33][Int.random(in: 0..<8, using: &q.rng)]
            let outChannels = [1, 5, 15, 16, 17, 31, 40][Int.random(in: 0..<7, using: &q.rng)]
            let inputScale = Float.random(in: 0.01...0.05, using: &q.rng)
            let input = q.tensor(shape: [batches, height, width, inChannels], scale: inputScale, zeroPoint: q.zeroPoint())
            let filter = q.weights(shape: [outChannels, kernel, kernel, inChannels], channels: outChannels, dimension: 0)
            let bias = q.bias(outChannels)
            let output = q.outputSpec(accumulatorScale: inputScale * 0.01 * Float(kernel * kernel * inChannels).squareRoot())
            let options = ConvolutionKernelTests.conv(padding, stride: (stride, stride), dilation: (dilation, dilation), activation: q.activation())
            try assertMatchesReference(.conv2D, options, [input, filter, bias], output,
                                       "conv #\(index) \(type) \(batches)x\(height)x\(width)x\(inChannels) k\(kernel) s\(stride) d\(dilation) \(padding) → \(outChannels)")
            rng = q.rng
        }
    }

    // MARK: DEPTHWISE_CONV_2D

    func testDepthwiseConv2DMatchesReference() throws {
        var rng = SeededGenerator(seed: 0xD3_97_15E)
        for index in 0..<28 {
            let type: ElementType = index % 2 == 0 ? .uint8 : .int8
            var q = Quantized(type: type, rng: rng)
            let kernel = [1, 3, 5][Int.random(in: 0..<3, using: &q.rng)]
            let stride = Int.random(in: 1...2, using: &q.rng)
            let dilation = kernel > 1 && Int.random(in: 0..<4, using: &q.rng) == 0 ? 2 : 1
            let padding: Padding = Bool.random(using: &q.rng) ? .same : .valid
            let effective = (kernel - 1) * dilation + 1
            let height = Int.random(in: max(1, effective)...(effective + 7), using: &q.rng)
            let width = Int.random(in: max(1, effective)...(effective + 7), using: &q.rng)
            let batches = Int.random(in: 1...2, using: &q.rng)
            let channels = [1, 3, 7, 8, 17, 24, 33, 50, 63, 70][Int.random(in: 0..<10, using: &q.rng)]
            let inputScale = Float.random(in: 0.01...0.05, using: &q.rng)
            let input = q.tensor(shape: [batches, height, width, channels], scale: inputScale, zeroPoint: q.zeroPoint())
            let filter = q.weights(shape: [1, kernel, kernel, channels], channels: channels, dimension: 3)
            let bias = q.bias(channels)
            let output = q.outputSpec(accumulatorScale: inputScale * 0.01 * Float(kernel))
            let options = ConvolutionKernelTests.depthwise(padding, stride: (stride, stride), dilation: (dilation, dilation), activation: q.activation())
            try assertMatchesReference(.depthwiseConv2D, options, [input, filter, bias], output,
                                       "depthwise #\(index) \(type) \(batches)x\(height)x\(width)x\(channels) k\(kernel) s\(stride) d\(dilation) \(padding)")
            rng = q.rng
        }
    }

    // MARK: FULLY_CONNECTED

    func testFullyConnectedMatchesReference() throws {
        var rng = SeededGenerator(seed: 0xFC_0FC)
        for index in 0..<24 {
            let type: ElementType = index % 2 == 0 ? .uint8 : .int8
            var q = Quantized(type: type, rng: rng)
            let batches = Int.random(in: 1...3, using: &q.rng)
            let inputSize = [1, 3, 16, 17, 40, 129][Int.random(in: 0..<6, using: &q.rng)]
            let units = [1, 7, 16, 19, 33, 65][Int.random(in: 0..<6, using: &q.rng)]
            let inputScale = Float.random(in: 0.01...0.05, using: &q.rng)
            let input = q.tensor(shape: [batches, inputSize], scale: inputScale, zeroPoint: q.zeroPoint())
            var weights = q.weights(shape: [units, inputSize], channels: units, dimension: 0)
            if type == .int8, index % 4 == 1 {
                // Per-tensor int8 weights with a zero point (TFLite's integer FC subtracts it).
                weights.quantization = QuantizationParameters(scale: 0.01, zeroPoint: q.zeroPoint())
            }
            let bias = q.bias(units)
            let output = q.outputSpec(accumulatorScale: inputScale * 0.01 * Float(inputSize).squareRoot())
            try assertMatchesReference(.fullyConnected, ConvolutionKernelTests.fullyConnected(activation: q.activation()),
                                       [input, weights, bias], output, "fully connected #\(index) \(type) \(batches)x\(inputSize) → \(units)")
            rng = q.rng
        }
    }

    // MARK: Wider tiles

    /// Shapes that reach the byte path's multi-block tiles (2 and 3 blocks of 16 channels per 8
    /// output pixels, the last block partial or full) and the depthwise AVX-512 pad path over whole
    /// 4-pixel groups with rows outside the image (SAME padding, extreme input zero points).
    func testWideTilesMatchReference() throws {
        var rng = SeededGenerator(seed: 0x3B10C5)
        for (index, outChannels) in [32, 33, 40, 48, 64, 81, 96].enumerated() {
            let type: ElementType = index % 2 == 0 ? .int8 : .uint8
            var q = Quantized(type: type, rng: rng)
            let kernel = index % 3 == 0 ? 3 : 1
            let stride = index % 3 == 0 ? 2 : 1
            let inChannels = [3, 16, 24, 8][index % 4]
            let inputScale: Float = 0.02
            let input = q.tensor(shape: [1, 13, 11, inChannels], scale: inputScale, zeroPoint: q.zeroPoint())
            let filter = q.weights(shape: [outChannels, kernel, kernel, inChannels], channels: outChannels, dimension: 0)
            let output = q.outputSpec(accumulatorScale: inputScale * 0.01 * Float(kernel * kernel * inChannels).squareRoot())
            try assertMatchesReference(.conv2D, ConvolutionKernelTests.conv(.same, stride: (stride, stride), activation: q.activation()),
                                       [input, filter, q.bias(outChannels)], output, "wide conv \(type) \(inChannels) → \(outChannels) k\(kernel)")
            let fcInput = q.tensor(shape: [19, inChannels * 4], scale: inputScale, zeroPoint: q.zeroPoint())
            let fcWeights = q.weights(shape: [outChannels, inChannels * 4], channels: outChannels, dimension: 0)
            let fcOutput = q.outputSpec(accumulatorScale: inputScale * 0.01 * Float(inChannels * 4).squareRoot())
            try assertMatchesReference(.fullyConnected, ConvolutionKernelTests.fullyConnected(activation: q.activation()),
                                       [fcInput, fcWeights, q.bias(outChannels)], fcOutput, "wide fully connected \(type) → \(outChannels)")
            for zeroPoint: Int64 in type == .int8 ? [-128, 127, 5] : [0, 255, 131] {
                let channels = outChannels + index
                let dwInput = q.tensor(shape: [2, 9, 14, channels], scale: inputScale, zeroPoint: zeroPoint)
                let dwFilter = q.weights(shape: [1, 3, 3, channels], channels: channels, dimension: 3)
                let dwOutput = q.outputSpec(accumulatorScale: inputScale * 0.01 * 3)
                for stride in [1, 2] {
                    try assertMatchesReference(.depthwiseConv2D,
                                               ConvolutionKernelTests.depthwise(.same, stride: (stride, stride), activation: q.activation()),
                                               [dwInput, dwFilter, q.bias(channels)], dwOutput,
                                               "wide depthwise \(type) zp \(zeroPoint) \(channels) s\(stride)")
                }
            }
            rng = q.rng
        }
    }

    // MARK: Few input channels (the byte path's row variant) and the short requantization

    /// CONV_2D with 1–7 input channels (first layers): the row variant (each filter row's k_w × in_c
    /// bytes as one reduction over a padded copy of the input) where k_w × in_c ≤ 32, with every weight
    /// minus its zero point fitting int8 or (uint8 weights far from their zero point) a per-pixel term,
    /// the other paths elsewhere (wide filters, a filter zero point of 0 with such weights); strides
    /// 1–3, non-square filters, vertical dilation, SAME / VALID borders,
    /// 2 batches, output channels that are not multiples of 16, no activation (the clamp left to the
    /// saturating stores) or RELU / RELU6, small and large biases (the short requantization and not).
    func testFewInputChannelsMatchReference() throws {
        var rng = SeededGenerator(seed: 0xF1257)
        for index in 0..<32 {
            let type: ElementType = index % 2 == 0 ? .int8 : .uint8
            var q = Quantized(type: type, rng: rng)
            let inChannels = index < 24 ? [1, 2, 3, 4][index % 4] : [5, 6, 7, 3][index % 4]
            let kernelHeight = [1, 2, 3, 3, 5][Int.random(in: 0..<5, using: &q.rng)]
            let kernelWidth = index % 5 == 4 ? [1, 4, 7, 11][index % 4] : kernelHeight
            let stride = [1, 2, 2, 3][Int.random(in: 0..<4, using: &q.rng)]
            let dilation = kernelHeight > 1 && index % 7 == 3 ? 2 : 1
            let padding: Padding = index % 3 == 0 ? .valid : .same
            let height = Int.random(in: ((kernelHeight - 1) * dilation + 1)...((kernelHeight - 1) * dilation + 9), using: &q.rng)
            let width = Int.random(in: kernelWidth...(kernelWidth + 12), using: &q.rng)
            let batches = index % 4 == 1 ? 1 : 2
            let outChannels = [1, 8, 16, 17, 24, 32, 35, 48, 50][Int.random(in: 0..<9, using: &q.rng)]
            let inputScale = Float.random(in: 0.01...0.05, using: &q.rng)
            let input = q.tensor(shape: [batches, height, width, inChannels], scale: inputScale, zeroPoint: q.zeroPoint())
            var filter = q.weights(shape: [outChannels, kernelHeight, kernelWidth, inChannels], channels: outChannels, dimension: 0)
            if type == .uint8, index % 4 != 3 {
                // Weights within 127 of their zero point: the row variant applies.
                let zp = Int(filter.quantization?.zeroPoint ?? 128)
                filter.bytes = filter.bytes.map { UInt8(clamping: min(max(Int($0) - 128 + zp, zp - 128, 0), zp + 127, 255)) }
            }
            let bias = q.bias(outChannels, magnitude: index % 6 == 5 ? 400_000_000 : 20000)
            let output = q.outputSpec(accumulatorScale: inputScale * 0.01 * Float(kernelHeight * kernelWidth * inChannels).squareRoot())
            let activation: FusedActivation = index % 3 == 1 ? q.activation() : .none
            let options = ConvolutionKernelTests.conv(padding, stride: (stride, stride), dilation: (dilation, 1), activation: activation)
            try assertMatchesReference(.conv2D, options, [input, filter, bias], output,
                                       "few channels #\(index) \(type) \(batches)x\(height)x\(width)x\(inChannels) k\(kernelHeight)x\(kernelWidth) s\(stride) dh\(dilation) \(padding) → \(outChannels)")
            rng = q.rng
        }
    }

    /// First layers (3 input channels, stride 2 along x, 3- or 5-wide filters, output channels a
    /// multiple of 8 up to 64): below AVX-512-VNNI they run ck_conv_q8_c3s2 (exact float sums).
    /// Blocks of 8 pixels with tails, both image edges, filters up to 7 rows, a row wider than the
    /// planes' ring holds (two strips), weights and inputs at the extremes of their zero points
    /// (products of 255 × 255), large biases.
    func testFirstLayersMatchReference() throws {
        var rng = SeededGenerator(seed: 0xC352)
        let shapes: [(h: Int, w: Int, kh: Int, kw: Int, sh: Int, out: Int, padding: Padding)] = [
            (9, 37, 3, 3, 2, 8, .same), (8, 40, 3, 3, 2, 32, .valid), (11, 33, 5, 5, 2, 24, .same),
            (7, 29, 7, 5, 1, 16, .same), (5, 19, 3, 3, 1, 64, .valid), (3, 701, 3, 3, 2, 16, .same),
            (6, 17, 1, 3, 2, 40, .same), (12, 45, 5, 5, 2, 8, .valid),
        ]
        for (index, shape) in shapes.enumerated() {
            for type in [ElementType.uint8, .int8] {
                var q = Quantized(type: type, rng: rng)
                let inputScale = Float.random(in: 0.01...0.05, using: &q.rng)
                // The extreme zero points (every x - zp up to ±255) for half the shapes.
                let inputZeroPoint: Int64 = index % 2 == 0 ? (type == .int8 ? -128 : 255) : q.zeroPoint()
                let input = q.tensor(shape: [2, shape.h, shape.w, 3], scale: inputScale, zeroPoint: inputZeroPoint)
                var filter = q.weights(shape: [shape.out, shape.kh, shape.kw, 3], channels: shape.out, dimension: 0)
                if type == .uint8, index % 2 == 0 {
                    filter.quantization = QuantizationParameters(scale: 0.01, zeroPoint: 0)
                    filter.bytes = filter.bytes.map { $0 | 0x80 }  // weights 128...255 with zero point 0
                }
                let bias = q.bias(shape.out, magnitude: index % 3 == 2 ? 400_000_000 : 20000)
                let output = q.outputSpec(accumulatorScale: inputScale * 0.01 * Float(shape.kh * shape.kw * 3).squareRoot())
                let activation: FusedActivation = index % 2 == 1 ? q.activation() : .none
                let options = ConvolutionKernelTests.conv(shape.padding, stride: (shape.sh, 2), activation: activation)
                try assertMatchesReference(.conv2D, options, [input, filter, bias], output, "first layer #\(index) \(type) \(shape)")
                rng = q.rng
            }
        }
    }

    /// 1×1 CONV_2D at stride 1 with few input channels (int8: each tile's activations flipped once)
    /// and the short requantization's inlined and out-of-line variants (no activation, RELU, RELU6,
    /// an output zero point at either end), partial last blocks.
    func testPointwiseShortRequantizationMatchesReference() throws {
        var rng = SeededGenerator(seed: 0x1B1)
        for index in 0..<16 {
            let type: ElementType = index % 2 == 0 ? .int8 : .uint8
            var q = Quantized(type: type, rng: rng)
            let inChannels = [8, 16, 24, 32, 12, 40][index % 6]
            let outChannels = [96, 24, 40, 33, 144, 17][index % 6]
            let inputScale: Float = 0.03
            let input = q.tensor(shape: [2, 7, 9, inChannels], scale: inputScale, zeroPoint: q.zeroPoint())
            let filter = q.weights(shape: [outChannels, 1, 1, inChannels], channels: outChannels, dimension: 0)
            let output = q.outputSpec(accumulatorScale: inputScale * 0.01 * Float(inChannels).squareRoot())
            let activation: [FusedActivation] = [.none, .relu, .relu6, .none]
            try assertMatchesReference(.conv2D, ConvolutionKernelTests.conv(.same, activation: activation[index % 4]),
                                       [input, filter, q.bias(outChannels)], output,
                                       "pointwise #\(index) \(type) \(inChannels) → \(outChannels) \(activation[index % 4])")
            rng = q.rng
        }
    }

    /// Long reductions: whether the short requantization may be used is decided from the weights'
    /// magnitudes (|bias| + 255 * sum |w - zw| < 2^29). Random weights with small and huge biases,
    /// and saturated ones (inputs and weights at the extremes whose products add up past 2^29),
    /// where a wrongly chosen short form overflows.
    func testLongReductionsDecideTheShortRequantizationFromTheirWeights() throws {
        var rng = SeededGenerator(seed: 0x10_4E)
        for type in [ElementType.int8, .uint8] {
            for (index, inChannels) in [9000, 17000].enumerated() {
                var q = Quantized(type: type, rng: rng)
                let input = q.tensor(shape: [1, 2, 2, inChannels], scale: 0.01, zeroPoint: q.zeroPoint())
                let filter = q.weights(shape: [20, 1, 1, inChannels], channels: 20, dimension: 0)
                let bias = q.bias(20, magnitude: index == 0 ? 20000 : 400_000_000)
                let output = q.outputSpec(accumulatorScale: 0.01 * 0.01 * Float(inChannels).squareRoot())
                try assertMatchesReference(.conv2D, ConvolutionKernelTests.conv(.valid, activation: .none), [input, filter, bias], output,
                                           "long reduction \(type) K \(inChannels)")
                rng = q.rng
            }
            // (a - za)(w - zw) = 255 * 128 (int8: a = -128, za = 127, w = -128) or 255 * 255 (uint8),
            // summed over 20000 channels: 6.5e8 and 1.3e9, past 2^29.
            let k = 20000, signed = type == .int8
            let input = TensorValue(type: type, shape: [1, 1, 2, k],
                                    quantization: QuantizationParameters(scale: 0.01, zeroPoint: signed ? 127 : 0),
                                    bytes: [UInt8](repeating: signed ? 0x80 : 0xFF, count: 2 * k))
            let weightQuantization = signed
                ? QuantizationParameters(scales: [0.01, 0.01, 0.01], zeroPoints: [0, 0, 0], quantizedDimension: 0)
                : QuantizationParameters(scale: 0.01, zeroPoint: 0)
            let filter = TensorValue(type: type, shape: [3, 1, 1, k], quantization: weightQuantization,
                                     bytes: [UInt8](repeating: signed ? 0x80 : 0xFF, count: 3 * k), isConstant: true)
            for outputScale: Float in [1, 4000] {
                let output = OutputSpec(type: type, quantization: QuantizationParameters(scale: outputScale, zeroPoint: 0))
                try assertMatchesReference(.conv2D, ConvolutionKernelTests.conv(.valid, activation: .none), [input, filter, nil], output,
                                           "saturated \(type) K \(k) output scale \(outputScale)")
            }
        }
    }

    // MARK: Shapes the optimized kernels leave to the reference kernels

    /// A dilation far beyond the image (SAME padding: every tap but the centre is outside) or
    /// outside 32-bit range must not trap in the optimized branch; results equal the reference.
    func testHugeDilationFallsBackToReference() throws {
        for type in [ElementType.uint8, .int8] {
            var q = Quantized(type: type, rng: SeededGenerator(seed: 99))
            for dilation in [9, 1 << 20, 1 << 40] {
                let input = q.tensor(shape: [1, 4, 5, 3], scale: 0.02, zeroPoint: q.zeroPoint())
                let filter = q.weights(shape: [5, 3, 3, 3], channels: 5, dimension: 0)
                let output = q.outputSpec(accumulatorScale: 0.02 * 0.01 * 3)
                try assertMatchesReference(.conv2D, ConvolutionKernelTests.conv(.same, dilation: (dilation, dilation)), [input, filter, nil], output,
                                           "conv \(type) dilation \(dilation)")
                let dwFilter = q.weights(shape: [1, 3, 3, 3], channels: 3, dimension: 3)
                try assertMatchesReference(.depthwiseConv2D, ConvolutionKernelTests.depthwise(.same, dilation: (dilation, dilation)),
                                           [input, dwFilter, nil], output, "depthwise \(type) dilation \(dilation)")
            }
        }
    }

    // MARK: Rounding

    /// Multipliers in [0.25, 0.5) and [0.5, 1) with few products make exact halves frequent, where
    /// CONV_2D (half up) and DEPTHWISE_CONV_2D / FULLY_CONNECTED (half away from zero) differ.
    func testExactHalvesRoundLikeReference() throws {
        for type in [ElementType.uint8, .int8] {
            var q = Quantized(type: type, rng: SeededGenerator(seed: type == .uint8 ? 11 : 12))
            for multiplier: Float in [0.3, 0.375, 0.5, 0.75] {
                let zp: Int64 = type == .uint8 ? 128 : 0
                let input = q.tensor(shape: [2, 5, 6, 2], scale: 1, zeroPoint: zp)
                let values = (0..<(3 * 2)).map { _ in UInt8(truncatingIfNeeded: Int.random(in: -3...3, using: &q.rng) + (type == .uint8 ? 128 : 0)) }
                let filterQuantization = type == .uint8 ? QuantizationParameters(scale: 1, zeroPoint: 128)
                                                        : QuantizationParameters(scales: [1, 1, 1], zeroPoints: [0, 0, 0], quantizedDimension: 0)
                let filter = TensorValue(type: type, shape: [3, 1, 1, 2], quantization: filterQuantization, bytes: values, isConstant: true)
                let output = OutputSpec(type: type, quantization: QuantizationParameters(scale: 1 / multiplier, zeroPoint: zp))
                try assertMatchesReference(.conv2D, ConvolutionKernelTests.conv(), [input, filter, nil], output, "conv halves \(type) \(multiplier)")

                let dwQuantization = type == .uint8 ? QuantizationParameters(scale: 1, zeroPoint: 128)
                                                    : QuantizationParameters(scales: [1, 1], zeroPoints: [0, 0], quantizedDimension: 3)
                let dwFilter = TensorValue(type: type, shape: [1, 1, 3, 2], quantization: dwQuantization, bytes: Array(values.prefix(6)), isConstant: true)
                try assertMatchesReference(.depthwiseConv2D, ConvolutionKernelTests.depthwise(.same), [input, dwFilter, nil], output,
                                           "depthwise halves \(type) \(multiplier)")

                let fcInput = q.tensor(shape: [7, 2], scale: 1, zeroPoint: zp)
                let fcWeights = TensorValue(type: type, shape: [3, 2], quantization: type == .uint8 ? filterQuantization : QuantizationParameters(scale: 1, zeroPoint: 0),
                                            bytes: values, isConstant: true)
                try assertMatchesReference(.fullyConnected, ConvolutionKernelTests.fullyConnected(), [fcInput, fcWeights, nil], output,
                                           "fully connected halves \(type) \(multiplier)")
            }
        }
    }
}
