import Foundation
import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport

/// CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV and MediaPipe's
/// Convolution2DTransposeBias. Small cases are computed by hand; randomized cases compare with
/// naive loops written straight from TFLite's reference kernels (below, in "Reference").
final class ConvolutionKernelTests: XCTestCase {
    // MARK: - Helpers

    static func conv(_ padding: Padding = .valid, stride: (Int, Int) = (1, 1), dilation: (Int, Int) = (1, 1),
                     activation: FusedActivation = .none) -> BuiltinOptions {
        var o = Conv2DOptions()
        o.padding = padding
        (o.strideHeight, o.strideWidth) = stride
        (o.dilationHeight, o.dilationWidth) = dilation
        o.activation = activation
        return .conv2D(o)
    }

    static func depthwise(_ padding: Padding = .valid, stride: (Int, Int) = (1, 1), dilation: (Int, Int) = (1, 1),
                          multiplier: Int = 1, activation: FusedActivation = .none) -> BuiltinOptions {
        var o = DepthwiseConv2DOptions()
        o.padding = padding
        (o.strideHeight, o.strideWidth) = stride
        (o.dilationHeight, o.dilationWidth) = dilation
        o.depthMultiplier = multiplier
        o.activation = activation
        return .depthwiseConv2D(o)
    }

    static func fullyConnected(keepNumDims: Bool = false, activation: FusedActivation = .none) -> BuiltinOptions {
        var o = FullyConnectedOptions()
        o.keepNumDims = keepNumDims
        o.activation = activation
        return .fullyConnected(o)
    }

    static func transpose(_ padding: Padding = .valid, stride: (Int, Int) = (1, 1), activation: FusedActivation = .none) -> BuiltinOptions {
        var o = TransposeConvOptions()
        o.padding = padding
        (o.strideHeight, o.strideWidth) = stride
        o.activation = activation
        return .transposeConv(o)
    }

    static func run(_ op: BuiltinOperator, _ options: BuiltinOptions, _ inputs: [TensorValue?], _ output: OutputSpec = .float32,
                    version: Int = 1) throws -> TensorValue {
        try KernelRunner.run(op, options: options, version: version, inputs: inputs, outputs: [output])[0]
    }

    static func mediaPipeOptions(padding: Int32, strideWidth: Int32, strideHeight: Int32) -> [UInt8] {
        [padding, strideWidth, strideHeight].flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    }

    func assertClose(_ actual: [Float], _ expected: [Float], tolerance: Float = 1e-5, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(actual.count, expected.count, "element count", file: file, line: line)
        for (i, (a, e)) in zip(actual, expected).enumerated() where !(abs(a - e) <= tolerance * max(1, abs(e))) {
            XCTFail("element \(i): \(a) != \(e)", file: file, line: line)
            return
        }
    }

    func assertError(_ code: EngineError.Code, _ body: () throws -> Any, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try body()
            XCTFail("expected an EngineError \(code)", file: file, line: line)
        } catch let error as EngineError {
            XCTAssertEqual(error.code, code, "\(error.message)", file: file, line: line)
            XCTAssertEqual(error.nodeIndex, 0, file: file, line: line)
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
        }
    }

    static func quant(_ scale: Float, _ zeroPoint: Int64) -> QuantizationParameters {
        QuantizationParameters(scale: scale, zeroPoint: zeroPoint)
    }

    static func perChannel(_ scales: [Float], dimension: Int) -> QuantizationParameters {
        QuantizationParameters(scales: scales, zeroPoints: [Int64](repeating: 0, count: scales.count), quantizedDimension: dimension)
    }

    // MARK: - CONV_2D float

    func testConvFloatValidWithBias() throws {
        // 3x3 input, 2x2 filter with two output channels.
        let input = TensorValue.float32([1, 2, 3, 4, 5, 6, 7, 8, 9], shape: [1, 3, 3, 1])
        let filter = TensorValue.float32([1, 0, 0, 1,   // channel 0: top-left + bottom-right
                                          0, 1, 1, 0],  // channel 1: top-right + bottom-left
                                         shape: [2, 2, 2, 1], isConstant: true)
        let bias = TensorValue.float32([0.5, -100], shape: [2], isConstant: true)
        let out = try Self.run(.conv2D, Self.conv(), [input, filter, bias])
        XCTAssertEqual(out.shape, [1, 2, 2, 2])
        XCTAssertEqual(out.floats, [6.5, -94, 8.5, -92, 12.5, -88, 14.5, -86])
        // Fused RELU clamps channel 1.
        let relu = try Self.run(.conv2D, Self.conv(activation: .relu), [input, filter, bias])
        XCTAssertEqual(relu.floats, [6.5, 0, 8.5, 0, 12.5, 0, 14.5, 0])
    }

    func testConvFloatSameStride2() throws {
        let input = TensorValue.float32((1...9).map(Float.init), shape: [1, 3, 3, 1])
        let filter = TensorValue.float32([Float](repeating: 1, count: 9), shape: [1, 3, 3, 1], isConstant: true)
        // SAME, stride 2: output 2x2, total padding 2 → 1 before.
        let out = try Self.run(.conv2D, Self.conv(.same, stride: (2, 2)), [input, filter])
        XCTAssertEqual(out.shape, [1, 2, 2, 1])
        XCTAssertEqual(out.floats, [12, 16, 24, 28])
    }

    func testConvFloatSameOddPaddingGoesAfter() throws {
        // 4x4 input, 2x2 filter, SAME stride 1: total padding 1 → 0 before, 1 after.
        let input = TensorValue.float32((1...16).map(Float.init), shape: [1, 4, 4, 1])
        let filter = TensorValue.float32([1, 10, 100, 1000], shape: [1, 2, 2, 1], isConstant: true)
        let out = try Self.run(.conv2D, Self.conv(.same), [input, filter])
        XCTAssertEqual(out.shape, [1, 4, 4, 1])
        let v = out.floats
        XCTAssertEqual(v[0], 1 + 20 + 500 + 6000)        // in(0,0) in(0,1) in(1,0) in(1,1)
        XCTAssertEqual(v[3], 4 + 800)                     // right edge: only the left column of taps
        XCTAssertEqual(v[15], 16)                         // bottom-right: only the top-left tap
    }

    func testConvFloatDilation() throws {
        let input = TensorValue.float32((0..<25).map(Float.init), shape: [1, 5, 5, 1])
        let filter = TensorValue.float32([1, 1, 1, 1], shape: [1, 2, 2, 1], isConstant: true)
        // VALID with dilation 2: effective 3x3 filter → 3x3 output.
        let out = try Self.run(.conv2D, Self.conv(dilation: (2, 2)), [input, filter])
        XCTAssertEqual(out.shape, [1, 3, 3, 1])
        XCTAssertEqual(out.floats[0], 0 + 2 + 10 + 12)
        XCTAssertEqual(out.floats[8], 12 + 14 + 22 + 24)
        // SAME with dilation 2 keeps 5x5 and pads 1 on each side.
        let same = try Self.run(.conv2D, Self.conv(.same, dilation: (2, 2)), [input, filter])
        XCTAssertEqual(same.shape, [1, 5, 5, 1])
        XCTAssertEqual(same.floats[0], 6)                 // only in(1,1)
        XCTAssertEqual(same.floats[6], 0 + 2 + 10 + 12)   // out(1,1) = taps at (0,0) (0,2) (2,0) (2,2)
    }

    func testConvFloatGrouped() throws {
        // 4 input channels, filter with 2 input channels → 2 groups; 4 output channels (2 per group).
        let input = TensorValue.float32([1, 2, 3, 4], shape: [1, 1, 1, 4])
        let filter = TensorValue.float32([1, 0,  0, 1,  1, 1,  2, -1], shape: [4, 1, 1, 2], isConstant: true)
        let out = try Self.run(.conv2D, Self.conv(), [input, filter])
        XCTAssertEqual(out.shape, [1, 1, 1, 4])
        XCTAssertEqual(out.floats, [1, 2, 7, 2])  // group 0 sees (1, 2), group 1 sees (3, 4)
    }

    func testConvFloatRelu6AndN1To1() throws {
        let input = TensorValue.float32([-3, 1, 5, 9], shape: [1, 2, 2, 1])
        let filter = TensorValue.float32([1], shape: [1, 1, 1, 1], isConstant: true)
        XCTAssertEqual(try Self.run(.conv2D, Self.conv(activation: .relu6), [input, filter]).floats, [0, 1, 5, 6])
        XCTAssertEqual(try Self.run(.conv2D, Self.conv(activation: .reluN1To1), [input, filter]).floats, [-1, 1, 1, 1])
    }

    func testConvFloatRandomMatchesReference() throws {
        var rng = SeededGenerator(seed: 7)
        let cases: [(input: [Int], filter: [Int], padding: Padding, stride: (Int, Int), dilation: (Int, Int))] = [
            ([1, 7, 6, 3], [4, 3, 3, 3], .same, (2, 2), (1, 1)),
            ([2, 5, 5, 4], [6, 3, 2, 2], .valid, (1, 2), (1, 1)),
            ([1, 8, 7, 2], [3, 3, 3, 2], .same, (1, 1), (2, 3)),
            ([1, 6, 6, 6], [4, 2, 2, 3], .same, (2, 1), (1, 2)),
            ([1, 4, 4, 8], [16, 1, 1, 8], .valid, (1, 1), (1, 1)),
        ]
        for c in cases {
            let x = (0..<c.input.reduce(1, *)).map { _ in Float.random(in: -1...1, using: &rng) }
            let w = (0..<c.filter.reduce(1, *)).map { _ in Float.random(in: -1...1, using: &rng) }
            let b = (0..<c.filter[0]).map { _ in Float.random(in: -1...1, using: &rng) }
            let expected = ConvReference.conv(input: x.map(Double.init), inputShape: c.input, filter: w.map(Double.init), filterShape: c.filter,
                                          bias: b.map(Double.init), padding: c.padding, stride: c.stride, dilation: c.dilation, depthwise: false)
            for constant in [true, false] {
                let out = try Self.run(.conv2D, Self.conv(c.padding, stride: c.stride, dilation: c.dilation),
                                       [.float32(x, shape: c.input), .float32(w, shape: c.filter, isConstant: constant),
                                        .float32(b, shape: [c.filter[0]], isConstant: constant)])
                XCTAssertEqual(out.shape, expected.shape)
                assertClose(out.floats, expected.values.map(Float.init), tolerance: 1e-5)
            }
        }
    }

    // MARK: - CONV_2D quantized

    func testConvUInt8HandComputed() throws {
        // input real = 0.5 (q - 128); filter real = 0.25 (q - 100); output real = 1.0 (q - 10).
        // Multiplier 0.5 * 0.25 / 1 = 0.125, exact.
        let input = TensorValue.uint8([130, 126, 140, 128], shape: [1, 2, 2, 1], scale: 0.5, zeroPoint: 128)  // 1, -1, 6, 0
        let filter = TensorValue.uint8([104, 96, 108, 100], shape: [1, 2, 2, 1], scale: 0.25, zeroPoint: 100, isConstant: true)  // 1, -1, 2, 0
        let bias = TensorValue.int32([24], shape: [1])  // 24 * 0.125 = 3
        let out = try Self.run(.conv2D, Self.conv(), [input, filter, bias], .uint8(scale: 1, zeroPoint: 10))
        // acc = 2*4 + (-2)(-4) + 12*8 + 0 = 112, + 24 = 136; 136 * 0.125 = 17; + 10 = 27.
        XCTAssertEqual(out.shape, [1, 1, 1, 1])
        XCTAssertEqual(out.bytes, [27])
        // Rounding: bias 28 → 140 * 0.125 = 17.5 → 18 (round half away from zero).
        let rounded = try Self.run(.conv2D, Self.conv(), [input, filter, .int32([28], shape: [1])], .uint8(scale: 1, zeroPoint: 10))
        XCTAssertEqual(rounded.bytes, [28])
        // A negative half: bias -148 → -36 * 0.125 = -4.5 → -4 (LiteRT's builtin CONV_2D on x86 rounds
        // halves up; the reference kernel would give -5), + 10 = 6.
        let negativeHalf = try Self.run(.conv2D, Self.conv(), [input, filter, .int32([-148], shape: [1])], .uint8(scale: 1, zeroPoint: 10))
        XCTAssertEqual(negativeHalf.bytes, [6])
        // RELU6 clamps to quantize(6) = 16; the uint8 range clamps at 255.
        let relu6 = try Self.run(.conv2D, Self.conv(activation: .relu6), [input, filter, bias], .uint8(scale: 1, zeroPoint: 10))
        XCTAssertEqual(relu6.bytes, [16])
        let saturated = try Self.run(.conv2D, Self.conv(), [input, filter, .int32([8000], shape: [1])], .uint8(scale: 1, zeroPoint: 10))
        XCTAssertEqual(saturated.bytes, [255])
    }

    func testConvInt8PerChannelHandComputed() throws {
        // input real = 0.5 (q + 1); per-channel filter scales 1 and 0.25; output real = 1 (q - 3).
        let input = TensorValue.int8([3, -3], shape: [1, 1, 1, 2], quantization: Self.quant(0.5, -1))  // acc inputs 4, -2
        let filter = TensorValue.int8([2, 1,  -4, 8], shape: [2, 1, 1, 2], quantization: Self.perChannel([1, 0.25], dimension: 0), isConstant: true)
        let bias = TensorValue.int32([2, -4], shape: [2])
        let out = try Self.run(.conv2D, Self.conv(), [input, filter, bias], .int8(scale: 1, zeroPoint: 3))
        // ch0: 4*2 + (-2)*1 = 6, +2 = 8, *0.5 = 4, +3 = 7.
        // ch1: 4*(-4) + (-2)*8 = -32, -4 = -36, *0.125 = -4.5 → -4, +3 = -1. CONV_2D follows LiteRT's
        // builtin kernel on x86 (cpu_backend_gemm/ruy: halves round up); the reference kernel would
        // round -4.5 away from zero to -5 (output -2).
        XCTAssertEqual(out.values(as: Int8.self), [7, -1])
    }

    func testConvQuantizedRandomMatchesReference() throws {
        var rng = SeededGenerator(seed: 11)
        let cases: [(input: [Int], filter: [Int], padding: Padding, stride: (Int, Int), dilation: (Int, Int), activation: FusedActivation)] = [
            ([1, 6, 5, 3], [5, 3, 3, 3], .same, (2, 2), (1, 1), .relu6),
            ([2, 5, 6, 4], [4, 2, 3, 2], .valid, (1, 2), (1, 1), .none),
            ([1, 7, 7, 2], [3, 3, 3, 2], .same, (1, 1), (2, 2), .relu),
        ]
        for c in cases {
            let n = c.input.reduce(1, *), m = c.filter.reduce(1, *), cout = c.filter[0]
            // uint8 per-tensor.
            do {
                let x = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let w = (0..<m).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let b = (0..<cout).map { _ in Int32.random(in: -3000...3000, using: &rng) }
                let (inS, inZ, wS, wZ, outS, outZ): (Float, Int32, Float, Int32, Float, Int32) = (0.02, 120, 0.01, 131, 0.05, 100)
                let expected = ConvReference.quantizedConv(
                    input: x.map { Int32($0) - inZ }, inputShape: c.input, filter: w.map { Int32($0) - wZ }, filterShape: c.filter, bias: b,
                    multipliers: [Double](repeating: Double(inS * wS) / Double(outS), count: cout), outputZeroPoint: outZ,
                    range: ConvReference.activationRange(c.activation, scale: outS, zeroPoint: outZ, min: 0, max: 255),
                    padding: c.padding, stride: c.stride, dilation: c.dilation, depthwise: false)
                for constant in [true, false] {
                    let out = try Self.run(.conv2D, Self.conv(c.padding, stride: c.stride, dilation: c.dilation, activation: c.activation),
                                           [.uint8(x, shape: c.input, scale: inS, zeroPoint: Int64(inZ)),
                                            .uint8(w, shape: c.filter, scale: wS, zeroPoint: Int64(wZ), isConstant: constant),
                                            .int32(b, shape: [cout], isConstant: constant)],
                                           .uint8(scale: outS, zeroPoint: Int64(outZ)))
                    XCTAssertEqual(out.shape, expected.shape)
                    XCTAssertEqual(out.bytes.map(Int32.init), expected.values)
                }
            }
            // int8 per-channel.
            do {
                let x = (0..<n).map { _ in Int8.random(in: -128...127, using: &rng) }
                let w = (0..<m).map { _ in Int8.random(in: -127...127, using: &rng) }
                let b = (0..<cout).map { _ in Int32.random(in: -3000...3000, using: &rng) }
                let scales = (0..<cout).map { _ in Float.random(in: 0.001...0.02, using: &rng) }
                let (inS, inZ, outS, outZ): (Float, Int32, Float, Int32) = (0.03, -5, 0.07, 4)
                let expected = ConvReference.quantizedConv(
                    input: x.map { Int32($0) - inZ }, inputShape: c.input, filter: w.map(Int32.init), filterShape: c.filter, bias: b,
                    multipliers: scales.map { Double(inS) * Double($0) / Double(outS) }, outputZeroPoint: outZ,
                    range: ConvReference.activationRange(c.activation, scale: outS, zeroPoint: outZ, min: -128, max: 127),
                    padding: c.padding, stride: c.stride, dilation: c.dilation, depthwise: false)
                for constant in [true, false] {
                    let out = try Self.run(.conv2D, Self.conv(c.padding, stride: c.stride, dilation: c.dilation, activation: c.activation),
                                           [.int8(x, shape: c.input, quantization: Self.quant(inS, Int64(inZ))),
                                            .int8(w, shape: c.filter, quantization: Self.perChannel(scales, dimension: 0), isConstant: constant),
                                            .int32(b, shape: [cout], isConstant: constant)],
                                           .int8(scale: outS, zeroPoint: Int64(outZ)))
                    XCTAssertEqual(out.values(as: Int8.self).map(Int32.init), expected.values)
                }
            }
        }
    }

    func testConvGroupedQuantized() throws {
        // int8 grouped: 4 input channels, 2 groups, per-channel scales of 1, input/output scale 1.
        let input = TensorValue.int8([1, 2, 3, 4], shape: [1, 1, 1, 4], quantization: Self.quant(1, 0))
        let filter = TensorValue.int8([1, 0,  0, 1,  1, 1,  2, -1], shape: [4, 1, 1, 2],
                                      quantization: Self.perChannel([1, 1, 1, 1], dimension: 0), isConstant: true)
        let out = try Self.run(.conv2D, Self.conv(), [input, filter], .int8(scale: 1, zeroPoint: 0))
        XCTAssertEqual(out.values(as: Int8.self), [1, 2, 7, 2])
    }

    func testConvTinyScalesStayFinite() throws {
        // input scale × filter scale / output scale underflows: every output is the zero point.
        let input = TensorValue.uint8([200, 10, 255, 0], shape: [1, 2, 2, 1], scale: 1e-35, zeroPoint: 0)
        let filter = TensorValue.uint8([255], shape: [1, 1, 1, 1], scale: 1e-35, zeroPoint: 0, isConstant: true)
        let out = try Self.run(.conv2D, Self.conv(), [input, filter], .uint8(scale: 1, zeroPoint: 7))
        XCTAssertEqual(out.bytes, [7, 7, 7, 7])
        // int8 per-channel: 1e-35 × 1e-35 / 1e-35 is too small for a multiplier → the zero point.
        let i8 = TensorValue.int8([5, -5], shape: [1, 1, 2, 1], quantization: Self.quant(1e-35, 0))
        let f8 = TensorValue.int8([3], shape: [1, 1, 1, 1], quantization: Self.perChannel([1e-35], dimension: 0), isConstant: true)
        let small = try Self.run(.conv2D, Self.conv(), [i8, f8], .int8(scale: 1e-35, zeroPoint: -2))
        XCTAssertEqual(small.values(as: Int8.self), [-2, -2])
        // A tiny output scale saturates the multiplier (no inf, no trap); results follow TFLite's arithmetic.
        let big = try Self.run(.conv2D, Self.conv(), [.int8([5, -5], shape: [1, 1, 2, 1], quantization: Self.quant(1, 0)),
                                                      .int8([3], shape: [1, 1, 1, 1], quantization: Self.perChannel([1], dimension: 0), isConstant: true)],
                               .int8(scale: 1e-35, zeroPoint: 0))
        let (m, s) = ConvReference.quantizeMultiplier(1e35)
        XCTAssertEqual(m, Int32.max)
        XCTAssertEqual(big.values(as: Int8.self).map(Int32.init), [15, -15].map { min(127, max(-128, ConvReference.multiply($0, m, s))) })
        let float = try Self.run(.conv2D, Self.conv(), [.float32([1e-35, 3], shape: [1, 1, 2, 1]),
                                                        .float32([1e-35], shape: [1, 1, 1, 1], isConstant: true)])
        XCTAssertTrue(float.floats.allSatisfy { $0.isFinite })
    }

    func testConvErrors() {
        let x = TensorValue.float32([Float](repeating: 1, count: 12), shape: [1, 2, 2, 3])
        let w = TensorValue.float32([Float](repeating: 1, count: 12), shape: [2, 1, 2, 3], isConstant: true)
        assertError(.invalidModel) { try Self.run(.conv2D, Self.conv(), [.float32([1, 2, 3], shape: [3]), w]) }       // rank
        assertError(.invalidModel) { try Self.run(.conv2D, Self.conv(), [x, .float32([1, 2], shape: [1, 2], isConstant: true)]) }
        assertError(.invalidModel) { try Self.run(.conv2D, Self.conv(), [x, .float32([Float](repeating: 1, count: 4), shape: [1, 1, 2, 2], isConstant: true)]) }  // 3 % 2
        assertError(.invalidModel) { try Self.run(.conv2D, Self.conv(), [x, .float32([Float](repeating: 1, count: 48), shape: [1, 4, 4, 3], isConstant: true)]) }  // VALID too large
        assertError(.invalidModel) { try Self.run(.conv2D, Self.conv(stride: (0, 1)), [x, w]) }
        assertError(.invalidModel) { try Self.run(.conv2D, .none, [x, w]) }
        assertError(.invalidModel) { try Self.run(.conv2D, Self.conv(), [x]) }
        assertError(.invalidModel) { try Self.run(.conv2D, Self.conv(), [x, w, .float32([1, 2, 3], shape: [3], isConstant: true)]) }  // bias count
        assertError(.unsupportedOperator) { try Self.run(.conv2D, Self.conv(), [x, w, .int32([1, 2], shape: [2])]) }  // bias type
        assertError(.unsupportedOperator) { try Self.run(.conv2D, Self.conv(activation: .tanh), [x, w]) }
        // Hybrid: float input with int8 weights.
        let w8 = TensorValue.int8([Int8](repeating: 1, count: 12), shape: [2, 1, 2, 3], quantization: Self.quant(1, 0), isConstant: true)
        assertError(.unsupportedOperator) { try Self.run(.conv2D, Self.conv(), [x, w8]) }
        assertError(.unsupportedOperator) { try Self.run(.conv2D, Self.conv(), [.int32([1], shape: [1, 1, 1, 1]), w]) }
        // uint8 with per-channel weights is not a TFLite combination.
        let xu = TensorValue.uint8([UInt8](repeating: 1, count: 12), shape: [1, 2, 2, 3], scale: 1, zeroPoint: 0)
        let wu = TensorValue(type: .uint8, shape: [2, 1, 2, 3], quantization: QuantizationParameters(scales: [1, 1], zeroPoints: [0, 0]),
                             bytes: [UInt8](repeating: 1, count: 12), isConstant: true)
        assertError(.unsupportedOperator) { try Self.run(.conv2D, Self.conv(), [xu, wu], .uint8(scale: 1, zeroPoint: 0)) }
        // int8 per-channel counts must match the output channels along dimension 0.
        let x8 = TensorValue.int8([Int8](repeating: 1, count: 12), shape: [1, 2, 2, 3], quantization: Self.quant(1, 0))
        let wBad = TensorValue.int8([Int8](repeating: 1, count: 12), shape: [2, 1, 2, 3], quantization: Self.perChannel([1, 1, 1], dimension: 3), isConstant: true)
        assertError(.invalidQuantization) { try Self.run(.conv2D, Self.conv(), [x8, wBad], .int8(scale: 1, zeroPoint: 0)) }
        // Asymmetric int8 weights.
        let wZp = TensorValue.int8([Int8](repeating: 1, count: 12), shape: [2, 1, 2, 3], quantization: Self.quant(1, 3), isConstant: true)
        assertError(.invalidQuantization) { try Self.run(.conv2D, Self.conv(), [x8, wZp], .int8(scale: 1, zeroPoint: 0)) }
        // Quantized input without parameters; output type different from input.
        assertError(.invalidQuantization) { try Self.run(.conv2D, Self.conv(), [TensorValue(type: .int8, shape: [1, 2, 2, 3], bytes: [UInt8](repeating: 0, count: 12)), w8], .int8(scale: 1, zeroPoint: 0)) }
        assertError(.unsupportedOperator) { try Self.run(.conv2D, Self.conv(), [x8, w8], .float32) }
        // uint8 bias whose scale does not match input × filter scale.
        let biasQ = TensorValue(type: .int32, shape: [2], quantization: Self.quant(5, 0), bytes: [UInt8](repeating: 0, count: 8), isConstant: true)
        let wu1 = TensorValue.uint8([UInt8](repeating: 1, count: 12), shape: [2, 1, 2, 3], scale: 1, zeroPoint: 0, isConstant: true)
        assertError(.invalidQuantization) { try Self.run(.conv2D, Self.conv(), [xu, wu1, biasQ], .uint8(scale: 1, zeroPoint: 0)) }
    }

    func testConvDeclaredOutputShapeIsKept() throws {
        // Output type/quantization come from the model; the kernel only sets the shape.
        let out = try KernelRunner.run(.conv2D, options: Self.conv(.same, stride: (2, 2)),
                                       inputs: [.float32([Float](repeating: 1, count: 25), shape: [1, 5, 5, 1]),
                                                .float32([1], shape: [1, 1, 1, 1], isConstant: true)],
                                       outputs: [.float32])
        XCTAssertEqual(out[0].shape, [1, 3, 3, 1])
    }

    // MARK: - DEPTHWISE_CONV_2D

    func testDepthwiseFloatMultiplier2() throws {
        // 2 input channels, depth multiplier 2 → 4 output channels; 2x2 input, 2x2 filter, VALID.
        let input = TensorValue.float32([1, 10,  2, 20,  3, 30,  4, 40], shape: [1, 2, 2, 2])
        // filter[ky][kx][oc]; oc = ic * 2 + m.
        let filter = TensorValue.float32([1, 0, 1, 0,   0, 1, 0, 1,   0, 0, 0, 0,   1, 1, 1, -1], shape: [1, 2, 2, 4], isConstant: true)
        let bias = TensorValue.float32([0, 0, 0, 1000], shape: [4], isConstant: true)
        let out = try Self.run(.depthwiseConv2D, Self.depthwise(multiplier: 2), [input, filter, bias])
        XCTAssertEqual(out.shape, [1, 1, 1, 4])
        // oc0 (ic0): 1*1 + 4*1 = 5; oc1 (ic0): 2*1 + 4*1 = 6; oc2 (ic1): 10 + 40 = 50; oc3 (ic1): 20 - 40 + 1000 = 980.
        XCTAssertEqual(out.floats, [5, 6, 50, 980])
        // depth_multiplier 0 (unset) is derived from the shapes.
        XCTAssertEqual(try Self.run(.depthwiseConv2D, Self.depthwise(multiplier: 0), [input, filter, bias]).floats, [5, 6, 50, 980])
    }

    func testDepthwiseFloatSameStrideDilation() throws {
        let input = TensorValue.float32((1...9).map(Float.init), shape: [1, 3, 3, 1])
        let filter = TensorValue.float32([Float](repeating: 1, count: 9), shape: [1, 3, 3, 1], isConstant: true)
        let out = try Self.run(.depthwiseConv2D, Self.depthwise(.same, stride: (2, 2)), [input, filter])
        XCTAssertEqual(out.shape, [1, 2, 2, 1])
        XCTAssertEqual(out.floats, [12, 16, 24, 28])
        let input5 = TensorValue.float32((0..<25).map(Float.init), shape: [1, 5, 5, 1])
        let dilated = try Self.run(.depthwiseConv2D, Self.depthwise(dilation: (2, 2)),
                                   [input5, .float32([1, 1, 1, 1], shape: [1, 2, 2, 1], isConstant: true)])
        XCTAssertEqual(dilated.shape, [1, 3, 3, 1])
        XCTAssertEqual(dilated.floats[0], 24)
    }

    func testDepthwiseUInt8HandComputed() throws {
        // input real = 0.5 (q - 128); filter real = 0.5 (q - 10); output real = 1 (q - 0): multiplier 0.25.
        let input = TensorValue.uint8([130, 124], shape: [1, 1, 1, 2], scale: 0.5, zeroPoint: 128)      // 2, -4
        let filter = TensorValue.uint8([13, 8], shape: [1, 1, 1, 2], scale: 0.5, zeroPoint: 10, isConstant: true)  // 3, -2
        let bias = TensorValue.int32([2, 1], shape: [2])
        let out = try Self.run(.depthwiseConv2D, Self.depthwise(), [input, filter, bias], .uint8(scale: 1, zeroPoint: 0))
        // ch0: 6 + 2 = 8 → 2. ch1: 8 + 1 = 9 → 2.25, but TFLite rounds twice (9 × 0.5 = 4.5 → 5 in
        // SaturatingRoundingDoublingHighMul, then 5 / 2 = 2.5 → 3 in RoundingDivideByPOT) → 3.
        XCTAssertEqual(out.bytes, [2, 3])
        let relu = try Self.run(.depthwiseConv2D, Self.depthwise(activation: .relu), [input, filter, .int32([-40, 1], shape: [2])],
                                .uint8(scale: 1, zeroPoint: 5))
        // ch0: 6 - 40 = -34 → -8.5 → -9, + 5 = -4 → RELU min quantize(0) = 5.
        XCTAssertEqual(relu.bytes, [5, 8])
    }

    func testDepthwiseInt8PerChannelHandComputed() throws {
        // Per-channel along dimension 3: scales 1 and 0.5; input 1 (q - 2); output 1 (q + 1).
        let input = TensorValue.int8([5, -2], shape: [1, 1, 1, 2], quantization: Self.quant(1, 2))   // 3, -4
        let filter = TensorValue.int8([4, 3], shape: [1, 1, 1, 2], quantization: Self.perChannel([1, 0.5], dimension: 3), isConstant: true)
        let out = try Self.run(.depthwiseConv2D, Self.depthwise(), [input, filter], .int8(scale: 1, zeroPoint: -1))
        // ch0: 12 → 12 - 1 = 11; ch1: -12 * 0.5 = -6 - 1 = -7.
        XCTAssertEqual(out.values(as: Int8.self), [11, -7])
    }

    func testDepthwiseRandomMatchesReference() throws {
        var rng = SeededGenerator(seed: 23)
        let cases: [(input: [Int], multiplier: Int, k: (Int, Int), padding: Padding, stride: (Int, Int), dilation: (Int, Int))] = [
            ([1, 7, 6, 3], 1, (3, 3), .same, (2, 2), (1, 1)),
            ([2, 5, 5, 2], 3, (3, 2), .valid, (1, 2), (1, 1)),
            ([1, 8, 7, 4], 2, (3, 3), .same, (1, 1), (2, 2)),
        ]
        for c in cases {
            let cout = c.input[3] * c.multiplier
            let filterShape = [1, c.k.0, c.k.1, cout]
            let n = c.input.reduce(1, *), m = filterShape.reduce(1, *)
            let options = Self.depthwise(c.padding, stride: c.stride, dilation: c.dilation, multiplier: c.multiplier)
            // float
            let x = (0..<n).map { _ in Float.random(in: -1...1, using: &rng) }
            let w = (0..<m).map { _ in Float.random(in: -1...1, using: &rng) }
            let b = (0..<cout).map { _ in Float.random(in: -1...1, using: &rng) }
            let expected = ConvReference.conv(input: x.map(Double.init), inputShape: c.input, filter: w.map(Double.init), filterShape: filterShape,
                                          bias: b.map(Double.init), padding: c.padding, stride: c.stride, dilation: c.dilation, depthwise: true)
            let out = try Self.run(.depthwiseConv2D, options, [.float32(x, shape: c.input), .float32(w, shape: filterShape, isConstant: true),
                                                               .float32(b, shape: [cout], isConstant: true)])
            XCTAssertEqual(out.shape, expected.shape)
            assertClose(out.floats, expected.values.map(Float.init))
            // uint8
            let xu = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let wu = (0..<m).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let bi = (0..<cout).map { _ in Int32.random(in: -2000...2000, using: &rng) }
            let eu = ConvReference.quantizedConv(
                input: xu.map { Int32($0) - 3 }, inputShape: c.input, filter: wu.map { Int32($0) - 140 }, filterShape: filterShape, bias: bi,
                multipliers: [Double](repeating: Double(Float(0.02) * Float(0.03)) / Double(Float(0.01)), count: cout), outputZeroPoint: 128,
                range: (0, 255), padding: c.padding, stride: c.stride, dilation: c.dilation, depthwise: true)
            for constant in [true, false] {
                let ou = try Self.run(.depthwiseConv2D, options,
                                      [.uint8(xu, shape: c.input, scale: 0.02, zeroPoint: 3),
                                       .uint8(wu, shape: filterShape, scale: 0.03, zeroPoint: 140, isConstant: constant),
                                       .int32(bi, shape: [cout], isConstant: constant)], .uint8(scale: 0.01, zeroPoint: 128))
                XCTAssertEqual(ou.bytes.map(Int32.init), eu.values)
            }
            // int8 per-channel
            let x8 = (0..<n).map { _ in Int8.random(in: -128...127, using: &rng) }
            let w8 = (0..<m).map { _ in Int8.random(in: -127...127, using: &rng) }
            let scales = (0..<cout).map { _ in Float.random(in: 0.001...0.05, using: &rng) }
            let e8 = ConvReference.quantizedConv(
                input: x8.map { Int32($0) + 7 }, inputShape: c.input, filter: w8.map(Int32.init), filterShape: filterShape, bias: bi,
                multipliers: scales.map { Double(Float(0.04)) * Double($0) / Double(Float(0.05)) }, outputZeroPoint: -9,
                range: (-128, 127), padding: c.padding, stride: c.stride, dilation: c.dilation, depthwise: true)
            let o8 = try Self.run(.depthwiseConv2D, options,
                                  [.int8(x8, shape: c.input, quantization: Self.quant(0.04, -7)),
                                   .int8(w8, shape: filterShape, quantization: Self.perChannel(scales, dimension: 3), isConstant: true),
                                   .int32(bi, shape: [cout])], .int8(scale: 0.05, zeroPoint: -9))
            XCTAssertEqual(o8.values(as: Int8.self).map(Int32.init), e8.values)
        }
    }

    func testDepthwiseErrors() {
        let x = TensorValue.float32([Float](repeating: 1, count: 8), shape: [1, 2, 2, 2])
        let w = TensorValue.float32([Float](repeating: 1, count: 16), shape: [1, 2, 2, 4], isConstant: true)
        XCTAssertNoThrow(try Self.run(.depthwiseConv2D, Self.depthwise(multiplier: 2), [x, w]))
        assertError(.invalidModel) { try Self.run(.depthwiseConv2D, Self.depthwise(multiplier: 3), [x, w]) }
        assertError(.invalidModel) { try Self.run(.depthwiseConv2D, Self.depthwise(), [x, .float32([Float](repeating: 1, count: 16), shape: [2, 2, 2, 2], isConstant: true)]) }
        assertError(.invalidModel) { try Self.run(.depthwiseConv2D, Self.depthwise(), [x, .float32([Float](repeating: 1, count: 12), shape: [1, 2, 2, 3], isConstant: true)]) }
        assertError(.invalidModel) { try Self.run(.depthwiseConv2D, Self.depthwise(multiplier: 2), [x, w, .float32([1], shape: [1], isConstant: true)]) }
        assertError(.invalidModel) { try Self.run(.depthwiseConv2D, Self.conv(), [x, w]) }
        assertError(.invalidModel) { try Self.run(.depthwiseConv2D, Self.depthwise(multiplier: 2), [.float32([1, 2], shape: [1, 2]), w]) }
        let x8 = TensorValue.int8([Int8](repeating: 1, count: 8), shape: [1, 2, 2, 2], quantization: Self.quant(1, 0))
        let wDim0 = TensorValue.int8([Int8](repeating: 1, count: 8), shape: [1, 2, 2, 2], quantization: Self.perChannel([1, 1], dimension: 0), isConstant: true)
        assertError(.invalidQuantization) { try Self.run(.depthwiseConv2D, Self.depthwise(), [x8, wDim0], .int8(scale: 1, zeroPoint: 0)) }
        assertError(.unsupportedOperator) { try Self.run(.depthwiseConv2D, Self.depthwise(multiplier: 2), [x8, w], .int8(scale: 1, zeroPoint: 0)) }
    }

    // MARK: - FULLY_CONNECTED

    func testFullyConnectedFloat() throws {
        let input = TensorValue.float32([1, 2, 3,  -1, 0, 1], shape: [2, 3])
        let weights = TensorValue.float32([1, 1, 1,  0, 2, -1], shape: [2, 3], isConstant: true)
        let bias = TensorValue.float32([0.5, -1], shape: [2], isConstant: true)
        let out = try Self.run(.fullyConnected, Self.fullyConnected(), [input, weights, bias])
        XCTAssertEqual(out.shape, [2, 2])
        XCTAssertEqual(out.floats, [6.5, 0, 0.5, -2])
        let relu = try Self.run(.fullyConnected, Self.fullyConnected(activation: .relu), [input, weights, bias])
        XCTAssertEqual(relu.floats, [6.5, 0, 0.5, 0])
        // No bias, non-constant weights.
        let plain = try Self.run(.fullyConnected, Self.fullyConnected(), [input, .float32([1, 1, 1, 0, 2, -1], shape: [2, 3])])
        XCTAssertEqual(plain.floats, [6, 1, 0, -1])
    }

    func testFullyConnectedShapes() throws {
        let weights = TensorValue.float32([1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1], shape: [4, 3], isConstant: true)
        let input = TensorValue.float32((1...6).map(Float.init), shape: [1, 2, 3])
        let flat = try Self.run(.fullyConnected, Self.fullyConnected(), [input, weights])
        XCTAssertEqual(flat.shape, [2, 4])
        XCTAssertEqual(flat.floats, [1, 2, 3, 6, 4, 5, 6, 15])
        let kept = try Self.run(.fullyConnected, Self.fullyConnected(keepNumDims: true), [input, weights])
        XCTAssertEqual(kept.shape, [1, 2, 4])
        XCTAssertEqual(kept.floats, flat.floats)
        // Flattening across dimensions: [1, 1, 2, 3] has 6 elements → batches 2.
        let odd = try Self.run(.fullyConnected, Self.fullyConnected(), [.float32((1...6).map(Float.init), shape: [3, 2]), weights])
        XCTAssertEqual(odd.shape, [2, 4])
        assertError(.invalidModel) { try Self.run(.fullyConnected, Self.fullyConnected(keepNumDims: true), [.float32((1...6).map(Float.init), shape: [3, 2]), weights]) }
    }

    func testFullyConnectedUInt8() throws {
        // input 0.5 (q - 10), weights 0.25 (q - 128), output 1 (q - 100): multiplier 0.125.
        let input = TensorValue.uint8([12, 6, 10], shape: [1, 3], scale: 0.5, zeroPoint: 10)              // 2, -4, 0
        let weights = TensorValue.uint8([131, 126, 255,  120, 136, 0], shape: [2, 3], scale: 0.25, zeroPoint: 128, isConstant: true)  // (3, -2, 127), (-8, 8, -128)
        let bias = TensorValue.int32([4, -3], shape: [2])
        let out = try Self.run(.fullyConnected, Self.fullyConnected(), [input, weights, bias], .uint8(scale: 1, zeroPoint: 100))
        // o0: 6 + 8 + 0 + 4 = 18 → 2.25 → 2 + 100 = 102. o1: -16 - 32 + 0 - 3 = -51 → -6.375 → -6 + 100 = 94.
        XCTAssertEqual(out.bytes, [102, 94])
    }

    func testFullyConnectedInt8PerTensorWithWeightZeroPoint() throws {
        // TFLite's integer FC subtracts a per-tensor weight zero point.
        let input = TensorValue.int8([3, -1], shape: [1, 2], quantization: Self.quant(1, 1))              // 2, -2
        let weights = TensorValue.int8([5, 1], shape: [1, 2], quantization: Self.quant(0.5, 2), isConstant: true)  // 3, -1
        let out = try Self.run(.fullyConnected, Self.fullyConnected(), [input, weights], .int8(scale: 1, zeroPoint: 0))
        // (6 + 2) * 0.5 = 4.
        XCTAssertEqual(out.values(as: Int8.self), [4])
    }

    func testFullyConnectedQuantizedRandomMatchesReference() throws {
        var rng = SeededGenerator(seed: 5)
        let (batches, inSize, units) = (3, 37, 70)
        let x = (0..<batches * inSize).map { _ in Int8.random(in: -128...127, using: &rng) }
        let w = (0..<units * inSize).map { _ in Int8.random(in: -127...127, using: &rng) }
        let b = (0..<units).map { _ in Int32.random(in: -5000...5000, using: &rng) }
        let scales = (0..<units).map { _ in Float.random(in: 0.001...0.01, using: &rng) }
        var expected: [Int32] = []
        for n in 0..<batches {
            for o in 0..<units {
                var acc: Int32 = 0
                for i in 0..<inSize { acc += (Int32(x[n * inSize + i]) + 3) * Int32(w[o * inSize + i]) }
                acc += b[o]
                let (m, s) = ConvReference.quantizeMultiplier(Double(Float(0.05)) * Double(scales[o]) / Double(Float(0.1)))
                expected.append(min(127, max(-128, ConvReference.multiply(acc, m, s) - 2)))
            }
        }
        for constant in [true, false] {
            let out = try Self.run(.fullyConnected, Self.fullyConnected(),
                                   [.int8(x, shape: [batches, inSize], quantization: Self.quant(0.05, -3)),
                                    .int8(w, shape: [units, inSize], quantization: Self.perChannel(scales, dimension: 0), isConstant: constant),
                                    .int32(b, shape: [units], isConstant: constant)], .int8(scale: 0.1, zeroPoint: -2))
            XCTAssertEqual(out.values(as: Int8.self).map(Int32.init), expected)
        }
        // Float with many units (several pieces) equals the direct sum.
        let xf = (0..<batches * inSize).map { _ in Float.random(in: -1...1, using: &rng) }
        let wf = (0..<units * inSize).map { _ in Float.random(in: -1...1, using: &rng) }
        var ef: [Float] = []
        for n in 0..<batches {
            for o in 0..<units {
                var total: Float = 0
                for i in 0..<inSize { total += xf[n * inSize + i] * wf[o * inSize + i] }
                ef.append(total)
            }
        }
        let floatInputs: [TensorValue?] = [.float32(xf, shape: [batches, inSize]), .float32(wf, shape: [units, inSize], isConstant: true)]
        let reference = try KernelRunner.run(.fullyConnected, options: Self.fullyConnected(), inputs: floatInputs, outputs: [.float32],
                                             kernels: .reference)[0]
        XCTAssertEqual(reference.floats, ef)  // same summation order as the reference kernel: bit-identical
        // The optimized kernel sums in the same order but with fused multiply-adds: equal to rounding.
        let of = try Self.run(.fullyConnected, Self.fullyConnected(), floatInputs)
        for (a, e) in zip(of.floats, ef) { XCTAssertEqual(a, e, accuracy: 1e-5 * max(1, abs(e))) }
    }

    func testFullyConnectedErrors() {
        let x = TensorValue.float32([1, 2, 3, 4, 5], shape: [1, 5])
        let w = TensorValue.float32([Float](repeating: 1, count: 6), shape: [2, 3], isConstant: true)
        assertError(.invalidModel) { try Self.run(.fullyConnected, Self.fullyConnected(), [x, w]) }  // 5 % 3
        assertError(.invalidModel) { try Self.run(.fullyConnected, Self.fullyConnected(), [.float32([1, 2, 3], shape: [1, 3]), .float32([1, 2, 3], shape: [3], isConstant: true)]) }
        var shuffled = FullyConnectedOptions()
        shuffled.weightsFormat = 1
        assertError(.unsupportedOperator) { try Self.run(.fullyConnected, .fullyConnected(shuffled), [.float32([1, 2, 3], shape: [1, 3]), w]) }
        let w8 = TensorValue.int8([Int8](repeating: 1, count: 6), shape: [2, 3], quantization: Self.quant(1, 0), isConstant: true)
        assertError(.unsupportedOperator) { try Self.run(.fullyConnected, Self.fullyConnected(), [.float32([1, 2, 3], shape: [1, 3]), w8]) }  // hybrid
        assertError(.invalidModel) { try Self.run(.fullyConnected, Self.fullyConnected(), [.float32([1, 2, 3], shape: [1, 3]), w, .float32([1], shape: [1], isConstant: true)]) }
    }

    // MARK: - TRANSPOSE_CONV

    func testTransposeConvFloatSame() throws {
        // TFLite's transpose_conv_test SimpleTest: 4x4 input 1...16, 3x3 filter 1...9, SAME, stride 1.
        let out = try Self.run(.transposeConv, Self.transpose(.same),
                               [.int32([1, 4, 4, 1], shape: [4]), .float32((1...9).map(Float.init), shape: [1, 3, 3, 1], isConstant: true),
                                .float32((1...16).map(Float.init), shape: [1, 4, 4, 1])])
        XCTAssertEqual(out.shape, [1, 4, 4, 1])
        XCTAssertEqual(out.floats, [29, 62, 83, 75, 99, 192, 237, 198, 207, 372, 417, 330, 263, 446, 485, 365])
    }

    func testTransposeConvFloatStride2ValidWithBias() throws {
        // Each input pixel writes a 2x2 block (stride 2, 2x2 filter, VALID: no padding).
        let out = try Self.run(.transposeConv, Self.transpose(.valid, stride: (2, 2)),
                               [.int32([1, 4, 4, 2], shape: [4]),
                                .float32([1, 2, 3, 4,  -1, -1, -1, -1], shape: [2, 2, 2, 1], isConstant: true),
                                .float32([1, 2, 3, 4], shape: [1, 2, 2, 1]),
                                .float32([0, 10], shape: [2], isConstant: true)], version: 3)
        XCTAssertEqual(out.shape, [1, 4, 4, 2])
        let v = out.floats
        func at(_ y: Int, _ x: Int, _ c: Int) -> Float { v[(y * 4 + x) * 2 + c] }
        XCTAssertEqual(at(0, 0, 0), 1); XCTAssertEqual(at(0, 1, 0), 2); XCTAssertEqual(at(1, 0, 0), 3); XCTAssertEqual(at(1, 1, 0), 4)
        XCTAssertEqual(at(0, 2, 0), 2); XCTAssertEqual(at(3, 3, 0), 16); XCTAssertEqual(at(2, 1, 0), 6)
        XCTAssertEqual(at(0, 0, 1), 9); XCTAssertEqual(at(3, 3, 1), 6)
        // Fused RELU (newer versions) applies after the bias.
        let relu = try Self.run(.transposeConv, Self.transpose(.valid, stride: (2, 2), activation: .relu),
                                [.int32([1, 4, 4, 1], shape: [4]), .float32([-1, 1, 1, 1], shape: [1, 2, 2, 1], isConstant: true),
                                 .float32([1, 2, 3, 4], shape: [1, 2, 2, 1])], version: 4)
        XCTAssertEqual(relu.floats[0], 0)
        XCTAssertEqual(relu.floats[1], 1)
    }

    func testTransposeConvRandomMatchesReference() throws {
        var rng = SeededGenerator(seed: 3)
        let cases: [(input: [Int], filter: [Int], output: [Int], padding: Padding, stride: (Int, Int))] = [
            ([1, 3, 3, 2], [3, 3, 3, 2], [1, 6, 6, 3], .same, (2, 2)),
            ([2, 3, 4, 3], [2, 4, 3, 3], [2, 7, 9, 2], .valid, (2, 2)),
            ([1, 4, 3, 1], [2, 3, 3, 1], [1, 5, 7, 2], .same, (1, 2)),
        ]
        for c in cases {
            let n = c.input.reduce(1, *), m = c.filter.reduce(1, *), cout = c.filter[0]
            let shape = TensorValue.int32(c.output.map(Int32.init), shape: [4])
            let options = Self.transpose(c.padding, stride: c.stride)
            let x = (0..<n).map { _ in Float.random(in: -1...1, using: &rng) }
            let w = (0..<m).map { _ in Float.random(in: -1...1, using: &rng) }
            let b = (0..<cout).map { _ in Float.random(in: -1...1, using: &rng) }
            let e = ConvReference.transposeConv(input: x.map(Double.init), inputShape: c.input, filter: w.map(Double.init), filterShape: c.filter,
                                            outputShape: c.output, padding: c.padding, stride: c.stride)
            for constant in [true, false] {
                let out = try Self.run(.transposeConv, options, [shape, .float32(w, shape: c.filter, isConstant: constant), .float32(x, shape: c.input),
                                                                 .float32(b, shape: [cout], isConstant: true)], version: 3)
                XCTAssertEqual(out.shape, c.output)
                assertClose(out.floats, e.enumerated().map { Float($0.element + Double(b[$0.offset % cout])) })
            }
            // uint8
            let xu = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let wu = (0..<m).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let bi = (0..<cout).map { _ in Int32.random(in: -2000...2000, using: &rng) }
            let accU = ConvReference.transposeConv(input: xu.map { Double(Int32($0) - 100) }, inputShape: c.input, filter: wu.map { Double(Int32($0) - 130) },
                                               filterShape: c.filter, outputShape: c.output, padding: c.padding, stride: c.stride)
            let (mu, su) = ConvReference.quantizeMultiplier(Double(Float(0.03) * Float(0.02)) / Double(Float(0.04)))
            let eu = accU.enumerated().map { min(255, max(0, ConvReference.multiply(Int32($0.element) + bi[$0.offset % cout], mu, su) + 120)) }
            for constant in [true, false] {
                let ou = try Self.run(.transposeConv, options, [shape, .uint8(wu, shape: c.filter, scale: 0.02, zeroPoint: 130, isConstant: constant),
                                                                .uint8(xu, shape: c.input, scale: 0.03, zeroPoint: 100), .int32(bi, shape: [cout])],
                                      .uint8(scale: 0.04, zeroPoint: 120), version: 3)
                XCTAssertEqual(ou.bytes.map(Int32.init), eu)
            }
            // int8 per-channel
            let x8 = (0..<n).map { _ in Int8.random(in: -128...127, using: &rng) }
            let w8 = (0..<m).map { _ in Int8.random(in: -127...127, using: &rng) }
            let scales = (0..<cout).map { _ in Float.random(in: 0.005...0.05, using: &rng) }
            let acc8 = ConvReference.transposeConv(input: x8.map { Double(Int32($0) + 4) }, inputShape: c.input, filter: w8.map(Double.init),
                                               filterShape: c.filter, outputShape: c.output, padding: c.padding, stride: c.stride)
            let e8: [Int32] = acc8.enumerated().map {
                let ch = $0.offset % cout
                let (m, s) = ConvReference.quantizeMultiplier(Double(Float(0.03)) * Double(scales[ch]) / Double(Float(0.06)))
                return min(127, max(-128, ConvReference.multiply(Int32($0.element) + bi[ch], m, s) + 5))
            }
            let o8 = try Self.run(.transposeConv, options, [shape, .int8(w8, shape: c.filter, quantization: Self.perChannel(scales, dimension: 0), isConstant: true),
                                                            .int8(x8, shape: c.input, quantization: Self.quant(0.03, -4)), .int32(bi, shape: [cout])],
                                  .int8(scale: 0.06, zeroPoint: 5), version: 3)
            XCTAssertEqual(o8.values(as: Int8.self).map(Int32.init), e8)
        }
    }

    func testTransposeConvErrors() {
        let w = TensorValue.float32([Float](repeating: 1, count: 4), shape: [1, 2, 2, 1], isConstant: true)
        let x = TensorValue.float32([1, 2, 3, 4], shape: [1, 2, 2, 1])
        assertError(.unsupportedOperator) { try Self.run(.transposeConv, Self.transpose(), [.int32([1, 3, 3, 1], shape: [4], isConstant: false), w, x]) }
        assertError(.invalidModel) { try Self.run(.transposeConv, Self.transpose(), [.int32([1, 3, 3], shape: [3]), w, x]) }
        assertError(.unsupportedOperator) { try Self.run(.transposeConv, Self.transpose(), [TensorValue([Int64](repeating: 1, count: 4), type: .int64, shape: [4], isConstant: true), w, x]) }
        assertError(.invalidModel) { try Self.run(.transposeConv, Self.transpose(), [.int32([1, 3, 3, 2], shape: [4]), w, x]) }  // channels
        assertError(.invalidModel) { try Self.run(.transposeConv, Self.transpose(), [.int32([2, 3, 3, 1], shape: [4]), w, x]) }  // batch
        assertError(.invalidModel) { try Self.run(.transposeConv, Self.transpose(), [.int32([1, 3, 3, 1], shape: [4]), .float32([1, 1], shape: [1, 1, 1, 2], isConstant: true), x]) }
        assertError(.invalidModel) { try Self.run(.transposeConv, Self.transpose(stride: (1, 0)), [.int32([1, 3, 3, 1], shape: [4]), w, x]) }
        assertError(.invalidModel) { try Self.run(.transposeConv, Self.transpose(), [.int32([1, 3, 3, 1], shape: [4]), w, x, .float32([1, 2], shape: [2], isConstant: true)]) }
    }

    // MARK: - Convolution2DTransposeBias (MediaPipe)

    func testMediaPipeTransposeConvBiasSameStride2() throws {
        // Selfie-style options: SAME, stride 2x2. 2x2 input, 2x2 filter: total padding
        // max(0, 2 - (2 - 1) % 2 - 1) = 0 → output 4x4, every input pixel writes one 2x2 block.
        let options = Self.mediaPipeOptions(padding: 1, strideWidth: 2, strideHeight: 2)
        XCTAssertEqual(options, [1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0])
        let out = try KernelRunner.run(custom: "Convolution2DTransposeBias", customOptions: options,
                                       inputs: [.float32([1, 2, 3, 4], shape: [1, 2, 2, 1]),
                                                .float32([1, 10, 100, 1000], shape: [1, 2, 2, 1], isConstant: true),
                                                .float32([0.5], shape: [1], isConstant: true)],
                                       outputs: [.float32])[0]
        XCTAssertEqual(out.shape, [1, 4, 4, 1])
        XCTAssertEqual(out.floats, [1.5, 10.5, 2.5, 20.5,  100.5, 1000.5, 200.5, 2000.5,
                                    3.5, 30.5, 4.5, 40.5,  300.5, 3000.5, 400.5, 4000.5])
    }

    func testMediaPipeTransposeConvBiasPaddingRules() throws {
        var rng = SeededGenerator(seed: 9)
        // (input H/W, filter, stride, padding code) → MediaPipe's output size and front padding.
        let cases: [(h: Int, w: Int, k: Int, stride: Int, padding: Int32)] = [
            (3, 4, 3, 2, 1),  // SAME: total max(0, 3 - (in-1)%2 - 1) → H: 2 (out 5, pad 1), W: 1 (out 8, pad 0)
            (3, 3, 4, 2, 1),  // SAME: total 4 - 0 - 1 = 3 → out 2*2+4-3 = 5, pad 1
            (2, 3, 3, 2, 2),  // VALID: no padding, out = 2*(in-1) + 3
            (2, 2, 3, 1, 0),  // unknown: like VALID
        ]
        for c in cases {
            let input = (0..<(c.h * c.w * 2)).map { _ in Float.random(in: -1...1, using: &rng) }
            let filter = (0..<(3 * c.k * c.k * 2)).map { _ in Float.random(in: -1...1, using: &rng) }
            let bias: [Float] = [0.25, -0.5, 1]
            func total(_ n: Int) -> Int { c.padding == 1 ? max(0, c.k - (n - 1) % c.stride - 1) : 0 }
            let outH = c.stride * (c.h - 1) + c.k - total(c.h), outW = c.stride * (c.w - 1) + c.k - total(c.w)
            let out = try KernelRunner.run(custom: "Convolution2DTransposeBias",
                                           customOptions: Self.mediaPipeOptions(padding: c.padding, strideWidth: Int32(c.stride), strideHeight: Int32(c.stride)),
                                           inputs: [.float32(input, shape: [1, c.h, c.w, 2]), .float32(filter, shape: [3, c.k, c.k, 2], isConstant: true),
                                                    .float32(bias, shape: [3], isConstant: true)], outputs: [.float32])[0]
            XCTAssertEqual(out.shape, [1, outH, outW, 3])
            let e = ConvReference.transposeConv(input: input.map(Double.init), inputShape: [1, c.h, c.w, 2], filter: filter.map(Double.init),
                                            filterShape: [3, c.k, c.k, 2], outputShape: [1, outH, outW, 3],
                                            pad: (total(c.h) / 2, total(c.w) / 2), stride: (c.stride, c.stride))
            assertClose(out.floats, e.enumerated().map { Float($0.element) + bias[$0.offset % 3] })
        }
        XCTAssertEqual(try KernelRunner.run(custom: "Convolution2DTransposeBias", customOptions: Self.mediaPipeOptions(padding: 1, strideWidth: 2, strideHeight: 2),
                                            inputs: [.float32([Float](repeating: 1, count: 9), shape: [1, 3, 3, 1]),
                                                     .float32([Float](repeating: 1, count: 16), shape: [1, 4, 4, 1], isConstant: true),
                                                     .float32([0], shape: [1], isConstant: true)], outputs: [.float32])[0].shape, [1, 5, 5, 1])
    }

    func testMediaPipeTransposeConvBiasErrors() {
        let inputs: [TensorValue?] = [.float32([1, 2, 3, 4], shape: [1, 2, 2, 1]), .float32([1, 1, 1, 1], shape: [1, 2, 2, 1], isConstant: true),
                                      .float32([0], shape: [1], isConstant: true)]
        func run(_ options: [UInt8], _ inputs: [TensorValue?]) throws -> [TensorValue] {
            try KernelRunner.run(custom: "Convolution2DTransposeBias", customOptions: options, inputs: inputs, outputs: [.float32])
        }
        assertError(.invalidModel) { try run([1, 0, 0, 0, 2, 0, 0, 0], inputs) }                             // 8 bytes
        assertError(.invalidModel) { try run([], inputs) }
        assertError(.invalidModel) { try run(Self.mediaPipeOptions(padding: 1, strideWidth: 0, strideHeight: 2), inputs) }
        assertError(.invalidModel) { try run(Self.mediaPipeOptions(padding: 7, strideWidth: 2, strideHeight: 2), inputs) }
        assertError(.invalidModel) { try run(Self.mediaPipeOptions(padding: 1, strideWidth: 2, strideHeight: 2), Array(inputs.prefix(2))) }
        assertError(.invalidModel) { try run(Self.mediaPipeOptions(padding: 1, strideWidth: 2, strideHeight: 2),
                                             [inputs[0], inputs[1], .float32([0, 0], shape: [2], isConstant: true)]) }
        let q = TensorValue.uint8([1, 2, 3, 4], shape: [1, 2, 2, 1], scale: 1, zeroPoint: 0)
        assertError(.unsupportedOperator) { try run(Self.mediaPipeOptions(padding: 1, strideWidth: 2, strideHeight: 2), [q, inputs[1], inputs[2]]) }
    }
}

// MARK: - Reference

/// Naive loops written from TFLite's reference kernels, in Double (float) or Int32 (quantized).
enum ConvReference {
    static func outSize(_ padding: Padding, _ size: Int, _ filter: Int, _ stride: Int, _ dilation: Int) -> Int {
        let effective = (filter - 1) * dilation + 1
        return padding == .same ? (size + stride - 1) / stride : (size + stride - effective) / stride
    }

    static func pad(_ stride: Int, _ dilation: Int, _ size: Int, _ filter: Int, _ out: Int) -> Int {
        let effective = (filter - 1) * dilation + 1
        return max(0, ((out - 1) * stride + effective - size) / 2)
    }

    /// Convolution (or depthwise when `depthwise`) accumulating `term(inputIndex, filterIndex)`.
    static func convolve<T>(inputShape: [Int], filterShape: [Int], padding: Padding, stride: (Int, Int), dilation: (Int, Int),
                            depthwise: Bool, zero: T, add: (inout T, Int, Int) -> Void) -> (values: [T], shape: [Int]) {
        let (n, h, w, cin) = (inputShape[0], inputShape[1], inputShape[2], inputShape[3])
        let (kh, kw) = (filterShape[1], filterShape[2])
        let cout = depthwise ? filterShape[3] : filterShape[0]
        let fcin = depthwise ? 1 : filterShape[3]
        let oh = outSize(padding, h, kh, stride.0, dilation.0), ow = outSize(padding, w, kw, stride.1, dilation.1)
        let ph = pad(stride.0, dilation.0, h, kh, oh), pw = pad(stride.1, dilation.1, w, kw, ow)
        var out: [T] = []
        for b in 0..<n {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    for oc in 0..<cout {
                        var acc = zero
                        for ky in 0..<kh {
                            for kx in 0..<kw {
                                let iy = oy * stride.0 - ph + ky * dilation.0, ix = ox * stride.1 - pw + kx * dilation.1
                                guard iy >= 0, iy < h, ix >= 0, ix < w else { continue }
                                if depthwise {
                                    let ic = oc / (cout / cin)
                                    add(&acc, ((b * h + iy) * w + ix) * cin + ic, (ky * kw + kx) * cout + oc)
                                } else {
                                    let group = oc / (cout / (cin / fcin))
                                    for ic in 0..<fcin {
                                        add(&acc, ((b * h + iy) * w + ix) * cin + group * fcin + ic, ((oc * kh + ky) * kw + kx) * fcin + ic)
                                    }
                                }
                            }
                        }
                        out.append(acc)
                    }
                }
            }
        }
        return (out, [n, oh, ow, cout])
    }

    static func conv(input: [Double], inputShape: [Int], filter: [Double], filterShape: [Int], bias: [Double],
                     padding: Padding, stride: (Int, Int), dilation: (Int, Int), depthwise: Bool) -> (values: [Double], shape: [Int]) {
        let r = convolve(inputShape: inputShape, filterShape: filterShape, padding: padding, stride: stride, dilation: dilation,
                         depthwise: depthwise, zero: 0.0) { acc, i, f in acc += input[i] * filter[f] }
        let cout = r.shape[3]
        return (r.values.enumerated().map { $0.element + bias[$0.offset % cout] }, r.shape)
    }

    /// `input` and `filter` are already offset (q - zero point).
    static func quantizedConv(input: [Int32], inputShape: [Int], filter: [Int32], filterShape: [Int], bias: [Int32],
                              multipliers: [Double], outputZeroPoint: Int32, range: (Int32, Int32),
                              padding: Padding, stride: (Int, Int), dilation: (Int, Int), depthwise: Bool) -> (values: [Int32], shape: [Int]) {
        let r = convolve(inputShape: inputShape, filterShape: filterShape, padding: padding, stride: stride, dilation: dilation,
                         depthwise: depthwise, zero: Int32(0)) { acc, i, f in acc += input[i] * filter[f] }
        let cout = r.shape[3]
        let values = r.values.enumerated().map { index, acc -> Int32 in
            let c = index % cout
            let (m, s) = quantizeMultiplier(multipliers[c])
            // CONV_2D requantizes like LiteRT's builtin GEMM path (halves up); DEPTHWISE_CONV_2D like the reference.
            let scaled = depthwise ? multiply(acc + bias[c], m, s) : multiplyHalfUp(acc + bias[c], m, s)
            return min(range.1, max(range.0, scaled + outputZeroPoint))
        }
        return (values, r.shape)
    }

    /// The reference scatter loop of TRANSPOSE_CONV without bias (padding from TFLite's rule).
    static func transposeConv(input: [Double], inputShape: [Int], filter: [Double], filterShape: [Int], outputShape: [Int],
                              padding: Padding, stride: (Int, Int)) -> [Double] {
        let (kh, kw) = (filterShape[1], filterShape[2])
        let ph = pad(stride.0, 1, outputShape[1], kh, outSize(padding, outputShape[1], kh, stride.0, 1))
        let pw = pad(stride.1, 1, outputShape[2], kw, outSize(padding, outputShape[2], kw, stride.1, 1))
        return transposeConv(input: input, inputShape: inputShape, filter: filter, filterShape: filterShape, outputShape: outputShape,
                             pad: (ph, pw), stride: stride)
    }

    static func transposeConv(input: [Double], inputShape: [Int], filter: [Double], filterShape: [Int], outputShape: [Int],
                              pad: (Int, Int), stride: (Int, Int)) -> [Double] {
        let (n, h, w, cin) = (inputShape[0], inputShape[1], inputShape[2], inputShape[3])
        let (cout, kh, kw) = (filterShape[0], filterShape[1], filterShape[2])
        let (oh, ow) = (outputShape[1], outputShape[2])
        var out = [Double](repeating: 0, count: n * oh * ow * cout)
        for b in 0..<n {
            for iy in 0..<h {
                for ix in 0..<w {
                    for ic in 0..<cin {
                        for ky in 0..<kh {
                            for kx in 0..<kw {
                                let oy = iy * stride.0 - pad.0 + ky, ox = ix * stride.1 - pad.1 + kx
                                guard oy >= 0, oy < oh, ox >= 0, ox < ow else { continue }
                                for oc in 0..<cout {
                                    out[((b * oh + oy) * ow + ox) * cout + oc] +=
                                        input[((b * h + iy) * w + ix) * cin + ic] * filter[((oc * kh + ky) * kw + kx) * cin + ic]
                                }
                            }
                        }
                    }
                }
            }
        }
        return out
    }

    /// TFLite's QuantizeMultiplier.
    static func quantizeMultiplier(_ real: Double) -> (Int32, Int) {
        if real == 0 { return (0, 0) }
        var shift: Int32 = 0
        let q = frexp(real, &shift)
        var qFixed = Int64((q * Double(Int64(1) << 31)).rounded())
        if qFixed == Int64(1) << 31 { qFixed /= 2; shift += 1 }
        if shift < -31 { return (0, 0) }
        if shift > 30 { return (Int32.max, 30) }
        return (Int32(qFixed), Int(shift))
    }

    /// MultiplyByQuantizedMultiplier as ruy's x86 kernels (LiteRT's builtin CONV_2D) compute it:
    /// (a * m + 2^30) >> 31, then (x + 2^(right-1)) >> right: both halves round up.
    static func multiplyHalfUp(_ x: Int32, _ multiplier: Int32, _ shift: Int) -> Int32 {
        let left = max(shift, 0), right = max(-shift, 0)
        let a = Int64(Int32(truncatingIfNeeded: Int64(x) << left))
        let high = Int64(Int32(clamping: (a * Int64(multiplier) + (1 << 30)) >> 31))
        return right > 0 ? Int32(truncatingIfNeeded: (high + (Int64(1) << (right - 1))) >> Int64(right)) : Int32(high)
    }

    /// TFLite's MultiplyByQuantizedMultiplier (double rounding).
    static func multiply(_ x: Int32, _ multiplier: Int32, _ shift: Int) -> Int32 {
        let left = max(shift, 0), right = max(-shift, 0)
        let a = Int64(Int32(truncatingIfNeeded: Int64(x) << left))
        // SaturatingRoundingDoublingHighMul
        var high: Int32
        if a == Int64(Int32.min) && multiplier == Int32.min {
            high = Int32.max
        } else {
            let ab = a * Int64(multiplier)
            let nudge: Int64 = ab >= 0 ? (1 << 30) : (1 - (1 << 30))
            high = Int32(truncatingIfNeeded: (ab + nudge) / (Int64(1) << 31))
        }
        // RoundingDivideByPOT
        if right > 0 {
            let mask = Int32((Int64(1) << right) - 1)
            let remainder = high & mask
            let threshold = (mask >> 1) + (high < 0 ? 1 : 0)
            high = (high >> Int32(right)) + (remainder > threshold ? 1 : 0)
        }
        return high
    }

    static func activationRange(_ activation: FusedActivation, scale: Float, zeroPoint: Int32, min qmin: Int32, max qmax: Int32) -> (Int32, Int32) {
        func q(_ v: Float) -> Int32 { zeroPoint + Int32((v / scale).rounded()) }
        switch activation {
        case .relu: return (max(qmin, q(0)), qmax)
        case .relu6: return (max(qmin, q(0)), min(qmax, q(6)))
        case .reluN1To1: return (max(qmin, q(-1)), min(qmax, q(1)))
        default: return (qmin, qmax)
        }
    }
}
