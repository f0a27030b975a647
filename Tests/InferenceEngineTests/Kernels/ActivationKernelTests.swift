import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore

/// LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, PRELU, HARD_SWISH, SOFTMAX: float and
/// 8-bit semantics of TFLite's builtin kernels (float lookup tables, requantized clamps,
/// fixed-point hard-swish, float-table softmax), tiny scales and error cases.
final class ActivationKernelTests: XCTestCase {
    // MARK: - Helpers

    func q(_ scale: Float, _ zeroPoint: Int64) -> QuantizationParameters {
        QuantizationParameters(scale: scale, zeroPoint: zeroPoint)
    }

    func runFloat(_ op: BuiltinOperator, _ options: BuiltinOptions = .none, _ x: [Float], shape: [Int]? = nil) throws -> TensorValue {
        try KernelRunner.run(op, options: options, inputs: [.float32(x, shape: shape ?? [x.count])], outputs: [.float32])[0]
    }

    func runUInt8(_ op: BuiltinOperator, _ options: BuiltinOptions = .none, _ x: [UInt8], _ input: QuantizationParameters,
                  out: QuantizationParameters, shape: [Int]? = nil) throws -> [UInt8] {
        try KernelRunner.run(op, options: options, inputs: [TensorValue(x, type: .uint8, shape: shape ?? [x.count], quantization: input)],
                             outputs: [OutputSpec(type: .uint8, quantization: out)])[0].values(as: UInt8.self)
    }

    func runInt8(_ op: BuiltinOperator, _ options: BuiltinOptions = .none, _ x: [Int8], _ input: QuantizationParameters,
                 out: QuantizationParameters, shape: [Int]? = nil) throws -> [Int8] {
        try KernelRunner.run(op, options: options, inputs: [.int8(x, shape: shape ?? [x.count], quantization: input)],
                             outputs: [OutputSpec(type: .int8, quantization: out)])[0].values(as: Int8.self)
    }

    func assertClose(_ actual: [Float], _ expected: [Float], accuracy: Float = 1e-6, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(actual.count, expected.count, "count", file: file, line: line)
        for (i, (a, e)) in zip(actual, expected).enumerated() {
            XCTAssertEqual(a, e, accuracy: accuracy, "element \(i)", file: file, line: line)
        }
    }

    func assertThrows(_ code: EngineError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let e = error as? EngineError else { return XCTFail("not an EngineError: \(error)", file: file, line: line) }
            XCTAssertEqual(e.code, code, "\(e.message)", file: file, line: line)
        }
    }

    // MARK: - LOGISTIC / TANH

    func testLogisticFloat() throws {
        let r = try runFloat(.logistic, .none, [0, 2, -2, -100, 100], shape: [1, 5])
        XCTAssertEqual(r.shape, [1, 5])
        assertClose(r.floats, [0.5, 0.880797, 0.119203, 0, 1])
    }

    func testLogisticUInt8UsesFloatTable() throws {
        // Input scale 1/16, zero point 128: x = -8, -1, 0, 1, 7.9375; output = round(256 * sigmoid(x)).
        let r = try runUInt8(.logistic, .none, [0, 112, 128, 144, 255], q(0.0625, 128), out: q(1.0 / 256, 0))
        XCTAssertEqual(r, [0, 69, 128, 187, 255])
    }

    func testLogisticInt8() throws {
        // Output zero point -128: round(256 * sigmoid(x)) - 128, clamped to 127.
        let r = try runInt8(.logistic, .none, [-128, -16, 0, 16, 127], q(0.0625, 0), out: q(1.0 / 256, -128))
        XCTAssertEqual(r, [-128, -59, 0, 59, 127])
    }

    func testLogisticQuantizedRequiresOutputScaleOneOver256() {
        assertThrows(.invalidQuantization) {
            _ = try self.runUInt8(.logistic, .none, [1], self.q(0.1, 0), out: self.q(1.0 / 255, 0))
        }
    }

    func testTanhFloat() throws {
        let r = try runFloat(.tanh, .none, [0, 1, -1, 20])
        assertClose(r.floats, [0, 0.761594, -0.761594, 1])
    }

    func testTanhInt8() throws {
        // x = q / 32; output = round(128 * tanh(x)) clamped to [-128, 127].
        let r = try runInt8(.tanh, .none, [-128, -32, 0, 32, 127], q(1.0 / 32, 0), out: q(1.0 / 128, 0))
        XCTAssertEqual(r, [-128, -97, 0, 97, 127])
    }

    func testTanhUInt8() throws {
        let r = try runUInt8(.tanh, .none, [0, 96, 128, 160], q(1.0 / 32, 128), out: q(1.0 / 128, 128))
        XCTAssertEqual(r, [0, 31, 128, 225])
    }

    // MARK: - RELU family

    func testReluFamilyFloat() throws {
        let x: [Float] = [-7, -1, -0.5, 0, 0.5, 3, 9]
        XCTAssertEqual(try runFloat(.relu, .none, x).floats, [0, 0, 0, 0, 0.5, 3, 9])
        XCTAssertEqual(try runFloat(.relu6, .none, x).floats, [0, 0, 0, 0, 0.5, 3, 6])
        XCTAssertEqual(try runFloat(.reluN1To1, .none, x).floats, [-1, -1, -0.5, 0, 0.5, 1, 1])
    }

    func testReluUInt8RequantizesThenClamps() throws {
        // Multiplier 0.5 / 0.25 = 2: out = 10 + 2 * (q - 100), clamped to [10, 255].
        let r = try runUInt8(.relu, .none, [100, 90, 110, 250], q(0.5, 100), out: q(0.25, 10))
        XCTAssertEqual(r, [10, 10, 30, 255])
    }

    func testRelu6UInt8() throws {
        // Upper bound 10 + round(6 / 0.25) = 34.
        let r = try runUInt8(.relu6, .none, [100, 110, 120, 50], q(0.5, 100), out: q(0.25, 10))
        XCTAssertEqual(r, [10, 30, 34, 10])
    }

    func testRelu6UInt8TinyScaleFromTrafficModel() throws {
        // Scale 4.48e-6: 6.0 is far above the range, so only the lower bound (the zero point) acts.
        let r = try runUInt8(.relu6, .none, [0, 119, 120, 200, 255], q(4.48e-6, 120), out: q(4.48e-6, 120))
        XCTAssertEqual(r, [120, 120, 120, 200, 255])
        let tiny = try runUInt8(.relu6, .none, [0, 200], q(1e-35, 3), out: q(1e-35, 3))
        XCTAssertEqual(tiny, [3, 200])
    }

    func testReluN1To1Int8() throws {
        // Scale 0.1 both sides, zero point 0: clamp to [-10, 10].
        let r = try runInt8(.reluN1To1, .none, [-100, -10, -3, 0, 7, 50], q(0.1, 0), out: q(0.1, 0))
        XCTAssertEqual(r, [-10, -10, -3, 0, 7, 10])
    }

    func testReluInt16RequiresZeroPointZero() throws {
        let r = try KernelRunner.run(.relu, inputs: [TensorValue([Int16(-300), 0, 1200], type: .int16, shape: [3], quantization: q(0.5, 0))],
                                     outputs: [OutputSpec(type: .int16, quantization: q(0.25, 0))])[0]
        XCTAssertEqual(r.values(as: Int16.self), [0, 0, 2400])
        assertThrows(.invalidQuantization) {
            _ = try KernelRunner.run(.relu, inputs: [TensorValue([Int16(1)], type: .int16, shape: [1], quantization: self.q(0.5, 3))],
                                     outputs: [OutputSpec(type: .int16, quantization: self.q(0.5, 3))])
        }
    }

    // MARK: - LEAKY_RELU / PRELU

    func testLeakyReluFloat() throws {
        XCTAssertEqual(try runFloat(.leakyRelu, .leakyRelu(alpha: 0.2), [-5, 0, 3]).floats, [-1, 0, 3])
        XCTAssertEqual(try runFloat(.leakyRelu, .leakyRelu(alpha: -0.5), [-4, 2]).floats, [2, 2])
    }

    func testLeakyReluInt8() throws {
        // Identity multiplier 1; alpha multiplier 0.25 rounds -0.5 away from zero.
        let r = try runInt8(.leakyRelu, .leakyRelu(alpha: 0.25), [-8, -4, -2, 0, 6], q(0.5, 0), out: q(0.5, 0))
        XCTAssertEqual(r, [-2, -1, -1, 0, 6])
    }

    func testLeakyReluUInt8NegativeAlpha() throws {
        // alpha = -1, same parameters both sides: negative inputs are mirrored around the zero point.
        let r = try runUInt8(.leakyRelu, .leakyRelu(alpha: -1), [100, 90, 140], q(0.1, 100), out: q(0.1, 100))
        XCTAssertEqual(r, [100, 110, 140])
    }

    func testPreluFloatBroadcastsAlpha() throws {
        let r = try KernelRunner.run(.prelu, inputs: [.float32([-1, 2, -3, 4], shape: [1, 2, 2]), .float32([0.5, 0.1], shape: [1, 1, 2], isConstant: true)],
                                     outputs: [.float32])[0]
        XCTAssertEqual(r.shape, [1, 2, 2])
        assertClose(r.floats, [-0.5, 2, -1.5, 4])
    }

    func testPreluUInt8() throws {
        // alpha q = 16 at scale 1/64 is 0.25; negative products rounded half away from zero.
        let r = try KernelRunner.run(.prelu, inputs: [.uint8([120, 140, 100], shape: [3], scale: 1, zeroPoint: 128),
                                                      .uint8([16], shape: [1], scale: 1.0 / 64, zeroPoint: 0, isConstant: true)],
                                     outputs: [.uint8(scale: 1, zeroPoint: 128)])[0]
        XCTAssertEqual(r.values(as: UInt8.self), [126, 140, 121])
    }

    func testPreluInt8PerChannelAlpha() throws {
        let r = try KernelRunner.run(.prelu, inputs: [.int8([-8, -8, 4, 4], shape: [2, 2], quantization: q(1, 0)),
                                                      .int8([32, -64], shape: [2], quantization: q(1.0 / 64, 0), isConstant: true)],
                                     outputs: [OutputSpec(type: .int8, quantization: q(1, 0))])[0]
        // alpha = [0.5, -1]: -8 -> -4 and 8; positives unchanged.
        XCTAssertEqual(r.values(as: Int8.self), [-4, 8, 4, 4])
    }

    func testPreluAlphaMustNotGrowTheOutput() {
        assertThrows(.invalidModel) {
            _ = try KernelRunner.run(.prelu, inputs: [.float32([1], shape: [1]), .float32([0.5, 0.1], shape: [2], isConstant: true)], outputs: [.float32])
        }
    }

    // MARK: - HARD_SWISH

    func testHardSwishFloat() throws {
        let r = try runFloat(.hardSwish, .none, [-4, -3, -1, 0, 1, 3, 5])
        assertClose(r.floats, [0, 0, -1.0 / 3, 0, 2.0 / 3, 3, 5])
    }

    func testHardSwishUInt8FixedPoint() throws {
        // Expected values from LiteRT's builtin HARD_SWISH (fixed-point reference arithmetic).
        let r = try runUInt8(.hardSwish, .none, [0, 60, 100, 128, 140, 160, 200, 255], q(0.05, 128), out: q(0.03, 20))
        XCTAssertEqual(r, [20, 20, 8, 20, 32, 61, 140, 232])
    }

    func testHardSwishInt8FixedPoint() throws {
        let r = try runInt8(.hardSwish, .none, [-128, -50, -10, 0, 20, 127], q(0.1, -10), out: q(0.08, -90))
        XCTAssertEqual(r, [-90, -90, -90, -82, -53, 81])
    }

    func testHardSwishRejectsTooLargeInputScale() {
        assertThrows(.invalidQuantization) {
            _ = try self.runUInt8(.hardSwish, .none, [1], self.q(200, 0), out: self.q(1, 0))
        }
    }

    // MARK: - SOFTMAX

    func testSoftmaxFloatRowsWithBeta() throws {
        let r = try runFloat(.softmax, .softmax(beta: 1), [1, 2, 3, 5, 5, 5], shape: [2, 3])
        assertClose(r.floats, [0.09003057, 0.24472847, 0.66524096, 1.0 / 3, 1.0 / 3, 1.0 / 3])
        let half = try runFloat(.softmax, .softmax(beta: 0.5), [0, 2 * Float(log(3.0))], shape: [2])
        assertClose(half.floats, [0.25, 0.75])
    }

    func testSoftmaxUInt8() throws {
        // Input scale ln 3: probabilities 3/4 and 1/4 -> 192 and 64; equal logits -> 128 each.
        let r = try runUInt8(.softmax, .softmax(beta: 1), [1, 0, 5, 5], q(1.0986123, 0), out: q(1.0 / 256, 0), shape: [2, 2])
        XCTAssertEqual(r, [192, 64, 128, 128])
        // Expected values from LiteRT's builtin SOFTMAX.
        let beta = try runUInt8(.softmax, .softmax(beta: 0.5), [10, 20, 0, 30, 15], q(0.2, 10), out: q(1.0 / 256, 0))
        XCTAssertEqual(beta, [20, 53, 7, 144, 32])
    }

    func testSoftmaxInt8() throws {
        let r = try runInt8(.softmax, .softmax(beta: 1), [1, 0, -5, -5], q(1.0986123, 0), out: q(1.0 / 256, -128), shape: [2, 2])
        XCTAssertEqual(r, [64, -64, 0, 0])
    }

    func testSoftmaxInt8RequiresZeroPointMinus128() {
        assertThrows(.invalidQuantization) {
            _ = try self.runInt8(.softmax, .softmax(beta: 1), [1, 2], self.q(0.1, 0), out: self.q(1.0 / 256, 0))
        }
    }

    // MARK: - Errors

    func testInputOutputTypeMismatchThrows() {
        assertThrows(.invalidModel) {
            _ = try KernelRunner.run(.relu, inputs: [.float32([1], shape: [1])], outputs: [.uint8(scale: 1, zeroPoint: 0)])
        }
    }

    func testUnsupportedTypesThrow() {
        assertThrows(.unsupportedOperator) {
            _ = try KernelRunner.run(.logistic, inputs: [TensorValue([Int16(1)], type: .int16, shape: [1], quantization: self.q(1, 0))],
                                     outputs: [OutputSpec(type: .int16, quantization: self.q(1, 0))])
        }
        assertThrows(.unsupportedOperator) {
            _ = try KernelRunner.run(.hardSwish, inputs: [.int32([1], shape: [1], isConstant: false)], outputs: [OutputSpec(type: .int32)])
        }
    }

    func testQuantizedWithoutParametersThrows() {
        assertThrows(.invalidQuantization) {
            _ = try KernelRunner.run(.tanh, inputs: [TensorValue([UInt8(1)], type: .uint8, shape: [1])], outputs: [.uint8(scale: 1.0 / 128, zeroPoint: 128)])
        }
    }

    func testWrongOptionsThrow() {
        assertThrows(.invalidModel) { _ = try self.runFloat(.softmax, .add(activation: .none), [1, 2]) }
        assertThrows(.invalidModel) { _ = try self.runFloat(.leakyRelu, .softmax(beta: 1), [1, 2]) }
    }
}
