import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore

/// ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE: broadcasting, fused activations, float,
/// integer and quantized arithmetic (TFLite's reference fixed-point), tiny scales and error cases.
final class ElementwiseKernelTests: XCTestCase {
    // MARK: - Helpers

    func q(_ scale: Float, _ zeroPoint: Int64) -> QuantizationParameters {
        QuantizationParameters(scale: scale, zeroPoint: zeroPoint)
    }

    func runFloat(_ op: BuiltinOperator, _ options: BuiltinOptions = .none, _ a: [Float], _ aShape: [Int], _ b: [Float], _ bShape: [Int],
                  threads: Int = 1) throws -> TensorValue {
        try KernelRunner.run(op, options: options, inputs: [.float32(a, shape: aShape), .float32(b, shape: bShape)],
                             outputs: [.float32], threads: threads)[0]
    }

    func runUInt8(_ op: BuiltinOperator, _ options: BuiltinOptions = .none,
                  _ a: [UInt8], _ aShape: [Int], _ aq: QuantizationParameters,
                  _ b: [UInt8], _ bShape: [Int], _ bq: QuantizationParameters,
                  out: QuantizationParameters) throws -> TensorValue {
        try KernelRunner.run(op, options: options,
                             inputs: [TensorValue(a, type: .uint8, shape: aShape, quantization: aq),
                                      TensorValue(b, type: .uint8, shape: bShape, quantization: bq)],
                             outputs: [OutputSpec(type: .uint8, quantization: out)])[0]
    }

    func runInt8(_ op: BuiltinOperator, _ options: BuiltinOptions = .none,
                 _ a: [Int8], _ aShape: [Int], _ aq: QuantizationParameters,
                 _ b: [Int8], _ bShape: [Int], _ bq: QuantizationParameters,
                 out: QuantizationParameters) throws -> TensorValue {
        try KernelRunner.run(op, options: options,
                             inputs: [.int8(a, shape: aShape, quantization: aq), .int8(b, shape: bShape, quantization: bq)],
                             outputs: [OutputSpec(type: .int8, quantization: out)])[0]
    }

    func assertClose(_ actual: [Float], _ expected: [Float], accuracy: Float = 1e-5, file: StaticString = #filePath, line: UInt = #line) {
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

    // MARK: - Float

    func testAddFloatSameShape() throws {
        let r = try runFloat(.add, .add(activation: .none), [1, 2, 3, 4], [2, 2], [10, 20, 30, 40], [2, 2])
        XCTAssertEqual(r.shape, [2, 2])
        XCTAssertEqual(r.floats, [11, 22, 33, 44])
    }

    func testAddFloatBroadcastsBothOperands() throws {
        // [2,1,3] + [1,2,1] -> [2,2,3]: out[i][j][k] = a[i][0][k] + b[0][j][0].
        let r = try runFloat(.add, .add(activation: .none), [1, 2, 3, 4, 5, 6], [2, 1, 3], [10, 20], [1, 2, 1])
        XCTAssertEqual(r.shape, [2, 2, 3])
        XCTAssertEqual(r.floats, [11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26])
    }

    func testAddFloatFusedRelu6() throws {
        let r = try runFloat(.add, .add(activation: .relu6), [-3, 2, 7, 5.5], [4], [1, 1, 1, 1], [4])
        XCTAssertEqual(r.floats, [0, 3, 6, 6])
    }

    func testAddFloatRank6Broadcast() throws {
        // [2,1,1,1,1,2] + [1,1,1,1,3,1] -> [2,1,1,1,3,2].
        let r = try runFloat(.add, .none, [0, 1, 10, 11], [2, 1, 1, 1, 1, 2], [100, 200, 300], [1, 1, 1, 1, 3, 1])
        XCTAssertEqual(r.shape, [2, 1, 1, 1, 3, 2])
        XCTAssertEqual(r.floats, [100, 101, 200, 201, 300, 301, 110, 111, 210, 211, 310, 311])
    }

    func testAddFloatLargeBroadcastSplitAcrossThreads() throws {
        // Enough elements for the kernel to split the work; compare with a direct computation.
        let a = (0..<(70 * 300)).map { Float($0 % 97) * 0.5 }
        let b = (0..<70).map { Float($0) * -1.25 }
        let r = try runFloat(.add, .none, a, [1, 70, 300], b, [1, 70, 1], threads: 2)
        var expected = [Float](repeating: 0, count: a.count)
        for i in 0..<70 { for j in 0..<300 { expected[i * 300 + j] = a[i * 300 + j] + b[i] } }
        XCTAssertEqual(r.floats, expected)
    }

    func testSubFloatBroadcastFirstOperandWithReluN1To1() throws {
        let r = try runFloat(.sub, .sub(activation: .reluN1To1), [1, 2, 3], [3], [0.5, 2, 5, 1, 1, 1], [2, 3])
        XCTAssertEqual(r.shape, [2, 3])
        XCTAssertEqual(r.floats, [0.5, 0, -1, 0, 1, 1])
    }

    func testMulFloatRank0ScalarWithRelu() throws {
        let r = try runFloat(.mul, .mul(activation: .relu), [2], [], [1, -2, 3, -4], [2, 2])
        XCTAssertEqual(r.shape, [2, 2])
        XCTAssertEqual(r.floats, [2, 0, 6, 0])
    }

    func testDivFloatClampsInfinityLikeTFLite() throws {
        // TFLite clamps to the activation range, so 5 / 0 gives the largest finite float.
        let r = try runFloat(.div, .div(activation: .none), [1, -6, 5, 0], [4], [2, 3, 0, 4], [4])
        XCTAssertEqual(r.floats, [0.5, -2, .greatestFiniteMagnitude, 0])
    }

    func testMaximumMinimumFloatBroadcast() throws {
        let a: [Float] = [1, 5, -2, 8], b: [Float] = [3, 0]
        let maximum = try runFloat(.maximum, .none, a, [2, 2], b, [2])
        let minimum = try runFloat(.minimum, .none, a, [2, 2], b, [2])
        XCTAssertEqual(maximum.floats, [3, 5, 3, 8])
        XCTAssertEqual(minimum.floats, [1, 0, -2, 0])
    }

    func testSquaredDifferenceFloat() throws {
        let r = try runFloat(.squaredDifference, .none, [1, -2, 3.5], [3], [3], [1])
        XCTAssertEqual(r.floats, [4, 25, 0.25])
    }

    // MARK: - Integers

    func testInt32ArithmeticWithRelu() throws {
        let add = try KernelRunner.run(.add, options: .add(activation: .relu), inputs: [.int32([5, -5, 7], shape: [3], isConstant: false), .int32([1], shape: [1], isConstant: false)],
                                       outputs: [OutputSpec(type: .int32)])[0]
        XCTAssertEqual(add.values(as: Int32.self), [6, 0, 8])
        let mul = try KernelRunner.run(.mul, options: .mul(activation: .relu6), inputs: [.int32([2, -3, 1], shape: [3], isConstant: false), .int32([2, 2, 2], shape: [3], isConstant: false)],
                                       outputs: [OutputSpec(type: .int32)])[0]
        XCTAssertEqual(mul.values(as: Int32.self), [4, 0, 2])
        let sub = try KernelRunner.run(.sub, options: .sub(activation: .none), inputs: [.int32([Int32.min, 10], shape: [2], isConstant: false), .int32([1, 20], shape: [2], isConstant: false)],
                                       outputs: [OutputSpec(type: .int32)])[0]
        XCTAssertEqual(sub.values(as: Int32.self), [Int32.max, -10], "int32 overflow wraps like TFLite on two's-complement hardware")
    }

    func testInt64AddAndMaximum() throws {
        let a = TensorValue([Int64(1) << 40, -3], type: .int64, shape: [2])
        let b = TensorValue([Int64(5), 7], type: .int64, shape: [2])
        let add = try KernelRunner.run(.add, inputs: [a, b], outputs: [OutputSpec(type: .int64)])[0]
        XCTAssertEqual(add.values(as: Int64.self), [(Int64(1) << 40) + 5, 4])
        let maximum = try KernelRunner.run(.maximum, inputs: [a, b], outputs: [OutputSpec(type: .int64)])[0]
        XCTAssertEqual(maximum.values(as: Int64.self), [Int64(1) << 40, 7])
    }

    func testDivInt32TruncatesTowardZero() throws {
        let r = try KernelRunner.run(.div, options: .div(activation: .none),
                                     inputs: [.int32([7, -7, 7, -7], shape: [4], isConstant: false), .int32([2, 2, -2, -2], shape: [4], isConstant: false)],
                                     outputs: [OutputSpec(type: .int32)])[0]
        XCTAssertEqual(r.values(as: Int32.self), [3, -3, -3, 3])
    }

    func testDivInt32ConstantZeroDivisorIsRejected() {
        assertThrows(.invalidModel) {
            _ = try KernelRunner.run(.div, inputs: [.int32([1, 2], shape: [2], isConstant: false), .int32([1, 0], shape: [2])],
                                     outputs: [OutputSpec(type: .int32)])
        }
    }

    func testSquaredDifferenceInt32() throws {
        let r = try KernelRunner.run(.squaredDifference, inputs: [.int32([1, -4, 10], shape: [3], isConstant: false), .int32([4, 4, 10], shape: [3], isConstant: false)],
                                     outputs: [OutputSpec(type: .int32)])[0]
        XCTAssertEqual(r.values(as: Int32.self), [9, 64, 0])
    }

    // MARK: - Quantized ADD / SUB

    func testAddUInt8RoundsHalfAwayFromZero() throws {
        // Input scales 0.5, output scale 1: the sum is (a + b) / 2 rounded half away from zero.
        let r = try runUInt8(.add, .add(activation: .none), [130, 127, 128, 255], [4], q(0.5, 128),
                             [129, 126, 128, 0], [4], q(0.5, 128), out: q(1, 128))
        // a = [2, -1, 0, 127], b = [1, -2, 0, -128] -> [1.5, -1.5, 0, -0.5] -> [2, -2, 0, -1].
        XCTAssertEqual(r.values(as: UInt8.self), [130, 126, 128, 127])
    }

    func testAddUInt8FusedRelu6ClampsToQuantizedRange() throws {
        // Output scale 1, zero point 128: relu6 keeps [128, 134].
        let r = try runUInt8(.add, .add(activation: .relu6), [140, 100, 131], [3], q(1, 128),
                             [130, 120, 128], [3], q(1, 128), out: q(1, 128))
        XCTAssertEqual(r.values(as: UInt8.self), [134, 128, 131])
    }

    func testAddInt8BroadcastWithDifferentScales() throws {
        // out = round(1 * a + 0.5 * b) with a = q1 + 1, b = q2 - 3.
        let r = try runInt8(.add, .add(activation: .none), [4, -6], [2, 1], q(1, -1), [3, 6, 0], [3], q(0.5, 3), out: q(1, 0))
        XCTAssertEqual(r.shape, [2, 3])
        XCTAssertEqual(r.values(as: Int8.self), [5, 7, 4, -5, -4, -7])
    }

    func testAddUInt8MatchesLiteRTWithUnevenScales() throws {
        // Scales from traffic_model; expected values produced by LiteRT's builtin ADD.
        let r = try runUInt8(.add, .add(activation: .none), [0, 110, 200, 255], [4], q(0.0364, 110),
                             [137, 0, 255, 140], [4], q(0.12, 137), out: q(0.119, 137))
        XCTAssertEqual(r.values(as: UInt8.self), [103, 0, 255, 184])
    }

    func testAddUInt8TinyInputScaleIgnoresThatInput() throws {
        // A 1e-35 input scale flushes its multiplier to 0: the output is the other input requantized.
        let r = try runUInt8(.add, .add(activation: .none), [0, 255, 7], [3], q(1e-35, 0),
                             [10, 20, 30], [3], q(1, 0), out: q(1, 0))
        XCTAssertEqual(r.values(as: UInt8.self), [10, 20, 30])
    }

    func testSubUInt8ClampsAtTypeRange() throws {
        let r = try runUInt8(.sub, .sub(activation: .none), [130, 127, 128, 255], [4], q(0.5, 128),
                             [129, 126, 128, 0], [4], q(0.5, 128), out: q(1, 128))
        // (a - b) / 2 = [0.5, 0.5, 0, 127.5] -> [1, 1, 0, 128] -> 128 + 128 clamps to 255.
        XCTAssertEqual(r.values(as: UInt8.self), [129, 129, 128, 255])
    }

    func testSubInt8WithRelu() throws {
        let r = try runInt8(.sub, .sub(activation: .relu), [10, 0, -20], [3], q(1, 0), [4], [1], q(1, 0), out: q(1, -10))
        // [6, -4, -24] + zero point -10, relu keeps >= -10.
        XCTAssertEqual(r.values(as: Int8.self), [-4, -10, -10])
    }

    // MARK: - Quantized MUL / DIV / SQUARED_DIFFERENCE / MAXIMUM

    func testMulUInt8() throws {
        // 0.5 * 0.25 / 0.125 = 1: out = 5 + a * b.
        let r = try runUInt8(.mul, .mul(activation: .none), [12, 8, 10], [3], q(0.5, 10), [23, 25, 0], [3], q(0.25, 20), out: q(0.125, 5))
        XCTAssertEqual(r.values(as: UInt8.self), [11, 0, 5])
    }

    func testMulUInt8TinyOutputScaleSaturatesWithoutGarbage() throws {
        // traffic_model has MUL outputs with scales around 1e-35: the multiplier saturates and every
        // non-zero product lands on the type bound with its sign, zero stays at the zero point.
        let r = try runUInt8(.mul, .mul(activation: .none), [12, 8, 10, 10], [4], q(0.5, 10), [23, 25, 0, 30], [4], q(0.25, 20), out: q(2.5e-35, 5))
        XCTAssertEqual(r.values(as: UInt8.self), [255, 0, 5, 5])
        let tiny = try runUInt8(.mul, .mul(activation: .none), [12, 8], [2], q(1e-35, 10), [23, 25], [2], q(0.25, 20), out: q(0.125, 5))
        XCTAssertEqual(tiny.values(as: UInt8.self), [5, 5], "a 1e-35 input scale gives a zero multiplier")
    }

    func testMulInt8BroadcastWithRelu() throws {
        let r = try runInt8(.mul, .mul(activation: .relu), [2, -3, 4, 1], [2, 2], q(0.5, 0), [4, 2], [2], q(0.5, 0), out: q(0.25, -3))
        // products [8, -6, 16, 2] -> -3 + [8, -6, 16, 2], relu keeps >= -3.
        XCTAssertEqual(r.values(as: Int8.self), [5, -3, 13, -1])
    }

    func testDivUInt8() throws {
        // Expected values from LiteRT's builtin DIV (also the real quotients, requantized and clamped).
        let r = try runUInt8(.div, .div(activation: .none), [200, 100, 7, 255], [4], q(0.5, 0), [136, 112, 129, 120], [4], q(0.25, 128), out: q(0.25, 128))
        XCTAssertEqual(r.values(as: UInt8.self), [255, 78, 184, 0])
    }

    func testDivInt8BroadcastWithRelu() throws {
        let r = try runInt8(.div, .div(activation: .relu), [100, -100, 50, 127], [2, 2], q(0.1, 0), [30, -30], [2], q(0.05, -10), out: q(0.02, -5))
        XCTAssertEqual(r.values(as: Int8.self), [127, 127, 120, -5])
    }

    func testDivQuantizedConstantZeroDivisorIsRejected() {
        assertThrows(.invalidModel) {
            _ = try KernelRunner.run(.div, inputs: [.uint8([1, 2], shape: [2], scale: 1, zeroPoint: 0),
                                                    .uint8([3, 7], shape: [2], scale: 1, zeroPoint: 7, isConstant: true)],
                                     outputs: [.uint8(scale: 1, zeroPoint: 0)])
        }
    }

    func testSquaredDifferenceInt8() throws {
        // Scales 1: (a - b)^2 exactly, clamped to 127.
        let exact = try runInt8(.squaredDifference, .none, [3, -4, 10, 20], [4], q(1, 0), [1, 4, -1, 0], [4], q(1, 0), out: q(1, 0))
        XCTAssertEqual(exact.values(as: Int8.self), [4, 64, 121, 127])
        // Uneven scales; expected values from LiteRT's builtin SQUARED_DIFFERENCE.
        let uneven = try runInt8(.squaredDifference, .none, [10, -20, 100, 3], [4], q(0.1, 3), [8], [1], q(0.05, -2), out: q(0.2, -100))
        XCTAssertEqual(uneven.values(as: Int8.self), [-100, -61, 127, -99])
    }

    func testMaximumMinimumUInt8CompareRawValues() throws {
        let p = q(0.1, 100)
        let maximum = try runUInt8(.maximum, .none, [10, 200, 100], [3], p, [50], [1], p, out: p)
        XCTAssertEqual(maximum.values(as: UInt8.self), [50, 200, 100])
        let minimum = try runInt8(.minimum, .none, [-10, 100], [2], q(0.1, 3), [0, 0], [2], q(0.1, 3), out: q(0.1, 3))
        XCTAssertEqual(minimum.values(as: Int8.self), [-10, 0])
    }

    // MARK: - Errors

    func testMaximumQuantizedRequiresSharedParameters() {
        assertThrows(.invalidQuantization) {
            _ = try self.runUInt8(.maximum, .none, [1], [1], self.q(0.1, 100), [2], [1], self.q(0.2, 100), out: self.q(0.1, 100))
        }
    }

    func testShapesThatDoNotBroadcastThrow() {
        assertThrows(.invalidModel) { _ = try self.runFloat(.add, .none, [1, 2, 3, 4, 5, 6], [2, 3], [1, 2, 3, 4], [4]) }
    }

    func testBroadcastAboveRank6IsUnsupported() {
        assertThrows(.unsupportedOperator) {
            _ = try self.runFloat(.mul, .none, [1, 2], [2, 1, 1, 1, 1, 1, 1], [1, 2], [1, 1, 1, 1, 1, 1, 2])
        }
    }

    func testMismatchedInputTypesThrow() {
        assertThrows(.invalidModel) {
            _ = try KernelRunner.run(.add, inputs: [.float32([1], shape: [1]), .int32([1], shape: [1], isConstant: false)], outputs: [.float32])
        }
    }

    func testUnsupportedTypeThrows() {
        assertThrows(.unsupportedOperator) {
            _ = try KernelRunner.run(.sub, inputs: [TensorValue([true], type: .bool, shape: [1]), TensorValue([false], type: .bool, shape: [1])],
                                     outputs: [OutputSpec(type: .bool)])
        }
        assertThrows(.unsupportedOperator) {
            _ = try self.runUInt8(.squaredDifference, .none, [1], [1], self.q(1, 0), [1], [1], self.q(1, 0), out: self.q(1, 0))
        }
    }

    func testQuantizedInputWithoutParametersThrows() {
        assertThrows(.invalidQuantization) {
            _ = try KernelRunner.run(.add, inputs: [TensorValue([UInt8(1)], type: .uint8, shape: [1]), .uint8([2], shape: [1], scale: 1, zeroPoint: 0)],
                                     outputs: [.uint8(scale: 1, zeroPoint: 0)])
        }
    }

    func testUnsupportedFusedActivationAndWrongOptionsThrow() {
        assertThrows(.unsupportedOperator) { _ = try self.runFloat(.add, .add(activation: .tanh), [1], [1], [1], [1]) }
        assertThrows(.invalidModel) { _ = try self.runFloat(.add, .softmax(beta: 1), [1], [1], [1], [1]) }
    }

    func testOperandCountIsChecked() {
        assertThrows(.invalidModel) {
            _ = try KernelRunner.run(.mul, inputs: [.float32([1], shape: [1])], outputs: [.float32])
        }
    }
}
