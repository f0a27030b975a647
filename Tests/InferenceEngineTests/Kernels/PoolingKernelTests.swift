import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport

/// Pooling and reduction kernels (Kernels/Pooling): hand-computed expectations on small tensors.
final class PoolingKernelTests: XCTestCase {
    // MARK: Helpers

    private func run(_ op: BuiltinOperator, _ options: BuiltinOptions = .none, _ inputs: [TensorValue?],
                     _ outputs: [OutputSpec]) throws -> TensorValue {
        try KernelRunner.run(op, options: options, inputs: inputs, outputs: outputs)[0]
    }

    private func expectError(_ code: EngineError.Code, _ op: BuiltinOperator, _ options: BuiltinOptions = .none,
                             _ inputs: [TensorValue?], _ outputs: [OutputSpec], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try KernelRunner.run(op, options: options, inputs: inputs, outputs: outputs), file: file, line: line) { error in
            XCTAssertEqual((error as? EngineError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    private func pool(_ padding: Padding, stride: Int, filter: Int, _ activation: FusedActivation = .none,
                      filterWidth: Int? = nil, strideWidth: Int? = nil) -> BuiltinOptions {
        var o = Pool2DOptions()
        o.padding = padding
        o.strideHeight = stride; o.strideWidth = strideWidth ?? stride
        o.filterHeight = filter; o.filterWidth = filterWidth ?? filter
        o.activation = activation
        return .pool2D(o)
    }

    private func q(_ scale: Float, _ zp: Int64) -> QuantizationParameters { QuantizationParameters(scale: scale, zeroPoint: zp) }
    private func axes(_ v: [Int32]) -> TensorValue { .int32(v, shape: [v.count]) }

    // MARK: AVERAGE_POOL_2D

    func testAveragePoolFloatValidStride2() throws {
        let input = TensorValue.float32((1...16).map(Float.init), shape: [1, 4, 4, 1])
        let out = try run(.averagePool2D, pool(.valid, stride: 2, filter: 2), [input], [.float32])
        XCTAssertEqual(out.shape, [1, 2, 2, 1])
        XCTAssertEqual(out.floats, [3.5, 5.5, 11.5, 13.5])
    }

    func testAveragePoolSameExcludesPaddingFromCount() throws {
        // 3x3 input 1...9, 2x2 SAME stride 1: padding only after (top/left 0), windows clip at the border.
        let input = TensorValue.float32((1...9).map(Float.init), shape: [1, 3, 3, 1])
        let out = try run(.averagePool2D, pool(.same, stride: 1, filter: 2), [input], [.float32])
        XCTAssertEqual(out.shape, [1, 3, 3, 1])
        XCTAssertEqual(out.floats, [3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9])
    }

    func testAveragePoolTwoChannelsAndRelu() throws {
        let input = TensorValue.float32([1, -1, 2, -2, 3, -3, 4, -5], shape: [1, 2, 2, 2])
        let out = try run(.averagePool2D, pool(.valid, stride: 1, filter: 2, .relu), [input], [.float32])
        XCTAssertEqual(out.shape, [1, 1, 1, 2])
        XCTAssertEqual(out.floats, [2.5, 0])
    }

    func testAveragePoolQuantizedRounding() throws {
        // uint8: (sum + n/2) / n.
        var out = try run(.averagePool2D, pool(.valid, stride: 2, filter: 1, filterWidth: 2),
                          [TensorValue.uint8([1, 2, 1, 3], shape: [1, 1, 4, 1], scale: 0.5, zeroPoint: 1)],
                          [.uint8(scale: 0.5, zeroPoint: 1)])
        XCTAssertEqual(out.values(as: UInt8.self), [2, 2])          // 3/2 -> 2, 4/2 -> 2
        // int8: halves round away from zero.
        out = try run(.averagePool2D, pool(.valid, stride: 2, filter: 1, filterWidth: 2),
                      [TensorValue.int8([-1, -2, -1, 0, 1, 2], shape: [1, 1, 6, 1], quantization: q(0.5, -3))],
                      [.int8(scale: 0.5, zeroPoint: -3)])
        XCTAssertEqual(out.values(as: Int8.self), [-2, -1, 2])      // -1.5 -> -2, -0.5 -> -1, 1.5 -> 2
    }

    func testAveragePoolQuantizedRelu6UsesOutputParameters() throws {
        // relu6 with scale 0.1, zero point 0: [0, 60].
        let out = try run(.averagePool2D, pool(.valid, stride: 1, filter: 1),
                          [TensorValue.uint8([100, 30], shape: [1, 1, 2, 1], scale: 0.1, zeroPoint: 0)],
                          [.uint8(scale: 0.1, zeroPoint: 0)])
        XCTAssertEqual(out.values(as: UInt8.self), [100, 30])
        let clamped = try run(.averagePool2D, pool(.valid, stride: 1, filter: 1, .relu6),
                              [TensorValue.uint8([100, 30], shape: [1, 1, 2, 1], scale: 0.1, zeroPoint: 0)],
                              [.uint8(scale: 0.1, zeroPoint: 0)])
        XCTAssertEqual(clamped.values(as: UInt8.self), [60, 30])
    }

    func testAveragePoolInt8ManyChannelsTranches() throws {
        // 300 channels exercise more than one 256-channel accumulator tranche.
        let c = 300
        let values = (0..<(2 * c)).map { Int8(truncatingIfNeeded: ($0 % c) % 100 - 50 + ($0 / c)) }
        let out = try run(.averagePool2D, pool(.valid, stride: 1, filter: 1, filterWidth: 2),
                          [TensorValue.int8(values, shape: [1, 1, 2, c], quantization: q(1, 0))], [.int8(scale: 1, zeroPoint: 0)])
        let expected = (0..<c).map { ch -> Int8 in
            let sum = Int32(values[ch]) + Int32(values[c + ch])
            return Int8(sum > 0 ? (sum + 1) / 2 : (sum - 1) / 2)
        }
        XCTAssertEqual(out.values(as: Int8.self), expected)
    }

    func testPoolErrors() {
        let input = TensorValue.float32([1, 2, 3, 4], shape: [1, 2, 2, 1])
        expectError(.invalidModel, .averagePool2D, pool(.valid, stride: 1, filter: 2),
                    [TensorValue.float32([1, 2, 3, 4], shape: [2, 2, 1])], [.float32])
        expectError(.invalidModel, .averagePool2D, pool(.valid, stride: 0, filter: 2), [input], [.float32])
        expectError(.invalidModel, .maxPool2D, pool(.valid, stride: 1, filter: 0), [input], [.float32])
        expectError(.invalidQuantization, .maxPool2D, pool(.valid, stride: 1, filter: 2),
                    [TensorValue.uint8([1, 2, 3, 4], shape: [1, 2, 2, 1], scale: 0.5, zeroPoint: 1)], [.uint8(scale: 0.5, zeroPoint: 2)])
        expectError(.unsupportedOperator, .averagePool2D, pool(.valid, stride: 1, filter: 2),
                    [TensorValue.int32([1, 2, 3, 4], shape: [1, 2, 2, 1], isConstant: false)], [OutputSpec(type: .int32)])
        expectError(.unsupportedOperator, .averagePool2D, pool(.valid, stride: 1, filter: 2, .tanh), [input], [.float32])
    }

    // MARK: MAX_POOL_2D

    func testMaxPoolFloatSameStride2WithRelu() throws {
        // 3x3 input, 2x2 SAME stride 2 -> 2x2; padding after: windows {0,1}x{0,1}, {0,1}x{2}, ...
        let input = TensorValue.float32([-1, -2, -3, -4, -5, -6, -7, -8, -9], shape: [1, 3, 3, 1])
        var out = try run(.maxPool2D, pool(.same, stride: 2, filter: 2), [input], [.float32])
        XCTAssertEqual(out.shape, [1, 2, 2, 1])
        XCTAssertEqual(out.floats, [-1, -3, -7, -9])
        out = try run(.maxPool2D, pool(.same, stride: 2, filter: 2, .relu), [input], [.float32])
        XCTAssertEqual(out.floats, [0, 0, 0, 0])
    }

    func testMaxPoolSamePaddingBeforeAndAfter() throws {
        // 4-wide row, filter 3, stride 1, SAME: padding 1 before and 1 after.
        let input = TensorValue.float32([5, 1, 2, 7], shape: [1, 1, 4, 1])
        let out = try run(.maxPool2D, pool(.same, stride: 1, filter: 1, filterWidth: 3), [input], [.float32])
        XCTAssertEqual(out.floats, [5, 5, 7, 7])
    }

    func testMaxPoolInt8ReluClampsAtZeroPoint() throws {
        let input = TensorValue.int8([-20, -10, -8, -9], shape: [1, 2, 2, 1], quantization: q(0.5, -5))
        var out = try run(.maxPool2D, pool(.valid, stride: 1, filter: 2, .relu), [input], [.int8(scale: 0.5, zeroPoint: -5)])
        XCTAssertEqual(out.values(as: Int8.self), [-5])
        out = try run(.maxPool2D, pool(.valid, stride: 1, filter: 2), [input], [.int8(scale: 0.5, zeroPoint: -5)])
        XCTAssertEqual(out.values(as: Int8.self), [-8])
    }

    // MARK: MEAN

    func testMeanFloatSpatialKeepDims() throws {
        let input = TensorValue.float32([1, 10, 2, 20, 3, 30, 4, 40], shape: [1, 2, 2, 2])
        let out = try run(.mean, .reducer(keepDims: true), [input, axes([1, 2])], [.float32])
        XCTAssertEqual(out.shape, [1, 1, 1, 2])
        XCTAssertEqual(out.floats, [2.5, 25])
    }

    /// The spatial float mean of the optimized selections sums each channel's pixels in the
    /// reference's order (ck_sum_rows_f32: 32-, 8- and 1-channel column groups), so the same bits.
    func testMeanFloatSpatialSumsInTheReferenceOrder() throws {
        var rng = SeededGenerator(seed: 52)
        for (h, w, c) in [(9, 7, 16), (5, 6, 45), (4, 4, 3), (3, 5, 70), (1, 1, 33)] {
            let values = (0..<(2 * h * w * c)).map { _ in Float.random(in: -100...100, using: &rng) }
            let input = TensorValue.float32(values, shape: [2, h, w, c])
            let inputs: [TensorValue?] = [input, axes([1, 2])]
            let expected = try KernelRunner.run(.mean, options: .reducer(keepDims: true), inputs: inputs, outputs: [.float32],
                                                kernels: .reference)[0]
            XCTAssertEqual(expected.shape, [2, 1, 1, c])
            // Plain float sums in pixel order, then the division, as TFLite's reference.
            var sums = [Float](repeating: 0, count: 2 * c)
            for n in 0..<2 {
                for p in 0..<(h * w) {
                    for j in 0..<c { sums[n * c + j] += values[(n * h * w + p) * c + j] }
                }
            }
            XCTAssertEqual(expected.floats.map(\.bitPattern), sums.map { ($0 / Float(h * w)).bitPattern }, "reference \(h)x\(w)x\(c)")
            for selection in [KernelSelection.optimized, .avx2, .portable] {
                let actual = try KernelRunner.run(.mean, options: .reducer(keepDims: true), inputs: inputs, outputs: [.float32],
                                                  kernels: selection)[0]
                XCTAssertEqual(actual.floats.map(\.bitPattern), expected.floats.map(\.bitPattern), "\(selection) \(h)x\(w)x\(c)")
            }
        }
    }

    /// The 8-bit means of the optimized selections sum each channel's pixels with ck_sum_rows_8
    /// (32-channel groups, then single channels): the same bytes as the reference, for int8 and
    /// uint8, the spatial and the general form, channel counts with and without a tail, and extreme
    /// values (sums far from zero), checked against sums computed here.
    func testMean8BitSumsMatchTheReference() throws {
        var rng = SeededGenerator(seed: 53)
        for (index, (h, w, c)) in [(7, 7, 64), (5, 6, 45), (4, 4, 3), (3, 5, 70), (1, 1, 33), (9, 9, 31)].enumerated() {
            for signed in [true, false] {
                let count = 2 * h * w * c
                let extreme = index % 2 == 1
                let raw = (0..<count).map { _ in extreme ? (Bool.random(using: &rng) ? 255 : 0) : Int.random(in: 0...255, using: &rng) }
                let input = signed
                    ? TensorValue.int8(raw.map { Int8(truncatingIfNeeded: $0 - 128) }, shape: [2, h, w, c], quantization: q(0.05, -7))
                    : TensorValue.uint8(raw.map { UInt8($0) }, shape: [2, h, w, c], scale: 0.05, zeroPoint: 131)
                let output: OutputSpec = signed ? .int8(scale: 0.02, zeroPoint: 3) : .uint8(scale: 0.02, zeroPoint: 120)
                for keepDims in [true, false] {
                    let inputs: [TensorValue?] = [input, axes([1, 2])]
                    let expected = try KernelRunner.run(.mean, options: .reducer(keepDims: keepDims), inputs: inputs, outputs: [output],
                                                        kernels: .reference)[0]
                    let label = "\(signed ? "int8" : "uint8") \(h)x\(w)x\(c) keepDims \(keepDims)"
                    // The reference's values follow from the sums: the spatial form's mean is
                    // Σq / N requantized with the zero point's term rounded apart, so it lies within one and
                    // a half units of (Σq / N - z_in) s_in / s_out + z_out.
                    let values: [Int] = signed ? expected.values(as: Int8.self).map(Int.init) : expected.values(as: UInt8.self).map(Int.init)
                    for n in 0..<2 {
                        for j in 0..<c {
                            var sum = 0
                            for p in 0..<(h * w) { sum += raw[(n * h * w + p) * c + j] - (signed ? 128 : 0) }
                            let real = (Double(sum) / Double(h * w) - (signed ? -7 : 131)) * 0.05 / 0.02 + (signed ? 3 : 120)
                            let clamped = min(max(real, signed ? -128 : 0), signed ? 127 : 255)
                            XCTAssertLessThanOrEqual(abs(Double(values[n * c + j]) - clamped), 1.5, "reference \(label) [\(n), \(j)]")
                        }
                    }
                    for selection in [KernelSelection.optimized, .avx2, .portable] {
                        let actual = try KernelRunner.run(.mean, options: .reducer(keepDims: keepDims), inputs: inputs, outputs: [output],
                                                          kernels: selection)[0]
                        XCTAssertEqual(actual.bytes, expected.bytes, "\(selection) \(label)")
                    }
                }
            }
        }
    }

    func testMeanFloatNegativeAndDuplicateAxes() throws {
        let input = TensorValue.float32([1, 2, 3, 4, 5, 6], shape: [2, 3])
        var out = try run(.mean, .reducer(keepDims: false), [input, axes([-1, 1])], [.float32])
        XCTAssertEqual(out.shape, [2])
        XCTAssertEqual(out.floats, [2, 5])
        out = try run(.mean, .reducer(keepDims: true), [input, axes([0])], [.float32])
        XCTAssertEqual(out.shape, [1, 3])
        XCTAssertEqual(out.floats, [2.5, 3.5, 4.5])
        out = try run(.mean, .reducer(keepDims: false), [input, axes([0, 1])], [.float32])
        XCTAssertEqual(out.shape, [])
        XCTAssertEqual(out.floats, [3.5])
    }

    func testMeanInt8SpatialUsesTheOptimizedFormula() throws {
        // s_in 0.5, z_in -3, s_out 0.25, z_out 5; Σq = 101 over 4 values.
        // bias = 5 - round(-3 * 0.5 / 0.25) = 5 - (-6) = 11; multiplier of 0.5 / (4 * 0.25) = 0.5:
        // round(101 * 0.5) = 51 (half away from zero) -> 62.
        let input = TensorValue.int8([10, 20, 30, 41], shape: [1, 2, 2, 1], quantization: q(0.5, -3))
        let out = try run(.mean, .reducer(keepDims: true), [input, axes([2, 1])], [.int8(scale: 0.25, zeroPoint: 5)])
        XCTAssertEqual(out.shape, [1, 1, 1, 1])
        XCTAssertEqual(out.values(as: Int8.self), [62])
    }

    func testMeanQuantizedPathSelection() throws {
        // s_in 0.5, z_in 1 -> s_out 1, z_out 0; four values 2: the real mean is 0.5.
        // Spatial path (keep_dims, axes {1,2}): round(8 * 0.125) - round(0.5) = 1 - 1 = 0.
        // Reference QuantizedMeanOrSum (keep_dims false): round((8 - 4) * 0.125) = round(0.5) = 1.
        let input = TensorValue.int8([2, 2, 2, 2], shape: [1, 2, 2, 1], quantization: q(0.5, 1))
        let spatial = try run(.mean, .reducer(keepDims: true), [input, axes([1, 2])], [.int8(scale: 1, zeroPoint: 0)])
        XCTAssertEqual(spatial.values(as: Int8.self), [0])
        let general = try run(.mean, .reducer(keepDims: false), [input, axes([1, 2])], [.int8(scale: 1, zeroPoint: 0)])
        XCTAssertEqual(general.shape, [1, 1])
        XCTAssertEqual(general.values(as: Int8.self), [1])
    }

    func testMeanSpatialNeonBlocksRoundHalfUp() throws {
        // 17 channels of four -1s, s_in 0.5 -> s_out 1 (zero points 0): the mean is -0.5 everywhere.
        // Channels 0..<16 take TFLite's NEON path (vqrdmulh + vrshl round half up): 0; channel 16
        // the scalar MultiplyByQuantizedMultiplier (half away from zero): -1.
        let input = TensorValue.int8([Int8](repeating: -1, count: 4 * 17), shape: [1, 2, 2, 17], quantization: q(0.5, 0))
        let out = try run(.mean, .reducer(keepDims: true), [input, axes([1, 2])], [.int8(scale: 1, zeroPoint: 0)])
        XCTAssertEqual(out.values(as: Int8.self), [Int8](repeating: 0, count: 16) + [-1])
        // uint8 shares the kernel: the same values shifted by a zero point of 10.
        let u = TensorValue.uint8([UInt8](repeating: 9, count: 4 * 17), shape: [1, 2, 2, 17], scale: 0.5, zeroPoint: 10)
        let uout = try run(.mean, .reducer(keepDims: true), [u, axes([1, 2])], [.uint8(scale: 1, zeroPoint: 20)])
        // bias = 20 - round(10 * 0.5) = 15; Σq * 0.125 = 4.5 -> NEON 5, scalar 5 (positive halves agree).
        XCTAssertEqual(uout.values(as: UInt8.self), [UInt8](repeating: 20, count: 17))
    }

    func testMeanUInt8AlongLastAxisRequantizes() throws {
        // Reference path: (Σq - z_in N) * (s_in / s_out) / N + z_out, saturated to uint8.
        // Row 0: (10 + 20 + 30 - 3 * 10) * 2 / 3 = 20 -> 20 + 100 = 120.
        // Row 1: (250 + 250 + 250 - 30) * 2 / 3 = 480 -> saturates at 255.
        let input = TensorValue.uint8([10, 20, 30, 250, 250, 250], shape: [2, 3], scale: 1, zeroPoint: 10)
        let out = try run(.mean, .reducer(keepDims: false), [input, axes([1])], [.uint8(scale: 0.5, zeroPoint: 100)])
        XCTAssertEqual(out.values(as: UInt8.self), [120, 255])
    }

    func testMeanTinyScalesStayFinite() throws {
        let input = TensorValue.uint8([200, 100, 50, 25], shape: [1, 2, 2, 1], scale: 1e-35, zeroPoint: 7)
        var out = try run(.mean, .reducer(keepDims: true), [input, axes([1, 2])], [.uint8(scale: 1, zeroPoint: 9)])
        XCTAssertEqual(out.values(as: UInt8.self), [9])
        out = try run(.mean, .reducer(keepDims: false), [input, axes([1, 2])], [.uint8(scale: 1, zeroPoint: 9)])
        XCTAssertEqual(out.values(as: UInt8.self), [9])
    }

    func testMeanInt32Truncates() throws {
        let input = TensorValue.int32([1, 2, -3, -4], shape: [2, 2], isConstant: false)
        let out = try run(.mean, .reducer(keepDims: false), [input, axes([1])], [OutputSpec(type: .int32)])
        XCTAssertEqual(out.values(as: Int32.self), [1, -3])   // 1.5 -> 1, -3.5 -> -3
    }

    func testMeanErrors() {
        let input = TensorValue.float32([1, 2, 3, 4], shape: [2, 2])
        expectError(.invalidModel, .mean, .reducer(keepDims: false), [input, axes([2])], [.float32])
        expectError(.unsupportedOperator, .mean, .reducer(keepDims: false),
                    [input, TensorValue.int32([1], shape: [1], isConstant: false)], [.float32])
        expectError(.invalidModel, .mean, .reducer(keepDims: false), [input, axes([1])], [.uint8(scale: 1, zeroPoint: 0)])
        expectError(.invalidQuantization, .mean, .reducer(keepDims: false),
                    [TensorValue(type: .int8, shape: [2], bytes: [1, 2]), axes([0])], [.int8(scale: 1, zeroPoint: 0)])
    }

    // MARK: SUM

    func testSumFloatAndInt32() throws {
        let input = TensorValue.float32([1, 2, 3, 4, 5, 6], shape: [2, 3])
        var out = try run(.sum, .reducer(keepDims: true), [input, axes([0])], [.float32])
        XCTAssertEqual(out.shape, [1, 3])
        XCTAssertEqual(out.floats, [5, 7, 9])
        out = try run(.sum, .reducer(keepDims: false),
                      [TensorValue.int32([1, 2, 3, 4, 5, 6], shape: [2, 3], isConstant: false), axes([1])], [OutputSpec(type: .int32)])
        XCTAssertEqual(out.values(as: Int32.self), [6, 15])
    }

    func testSumUInt8Rescales() throws {
        // s = 0.5 / 2 = 0.25, b = -10 * 0.25 * 3 = -7.5: round(60 * 0.25 - 7.5) = round(7.5) = 8, + 1 = 9.
        let input = TensorValue.uint8([10, 20, 30], shape: [1, 3], scale: 0.5, zeroPoint: 10)
        let out = try run(.sum, .reducer(keepDims: false), [input, axes([1])], [.uint8(scale: 2, zeroPoint: 1)])
        XCTAssertEqual(out.shape, [1])
        XCTAssertEqual(out.values(as: UInt8.self), [9])
        // Saturation at the top.
        let big = try run(.sum, .reducer(keepDims: false), [input, axes([1])], [.uint8(scale: 0.01, zeroPoint: 1)])
        XCTAssertEqual(big.values(as: UInt8.self), [255])
    }

    func testSumInt8SameParametersWrapsLikeTFLite() throws {
        // Equal parameters: TFLite sums in int8 (wrapping).
        let input = TensorValue.int8([100, 50, -3], shape: [3], quantization: q(1, 0))
        let out = try run(.sum, .reducer(keepDims: false), [input, axes([0])], [.int8(scale: 1, zeroPoint: 0)])
        XCTAssertEqual(out.values(as: Int8.self), [-109])   // 147 wraps to -109
    }

    // MARK: ARG_MAX

    func testArgMaxFloatTiesAndNaN() throws {
        let input = TensorValue.float32([1, 3, 3, 2, .nan, -1, .nan, 0], shape: [2, 4])
        let out = try run(.argMax, .argMax(outputType: .int32), [input, .int32([1], shape: [1])], [OutputSpec(type: .int32)])
        XCTAssertEqual(out.shape, [2])
        XCTAssertEqual(out.values(as: Int32.self), [1, 3])   // tie keeps index 1; NaN never wins
    }

    func testArgMaxUInt8ToInt64OverChannels() throws {
        let input = TensorValue.uint8([5, 9, 9, 0, 0, 1], shape: [1, 2, 3], scale: 0.2, zeroPoint: 36)
        let out = try run(.argMax, .argMax(outputType: .int64), [input, .int32([-1], shape: [])], [OutputSpec(type: .int64)])
        XCTAssertEqual(out.shape, [1, 2])
        XCTAssertEqual(out.values(as: Int64.self), [1, 2])
        let axis0 = try run(.argMax, .argMax(outputType: .int64),
                            [TensorValue.int8([-5, 3, 7, -8], shape: [2, 2], quantization: q(1, 0)),
                             TensorValue([Int64(0)], type: .int64, shape: [1], isConstant: true)],
                            [OutputSpec(type: .int64)])
        XCTAssertEqual(axis0.values(as: Int64.self), [1, 0])
    }

    func testArgMaxErrors() {
        let input = TensorValue.float32([1, 2], shape: [2])
        expectError(.invalidModel, .argMax, .argMax(outputType: .int64), [input, .int32([1], shape: [1])], [OutputSpec(type: .int64)])
        expectError(.invalidModel, .argMax, .argMax(outputType: .int64), [input, .int32([0], shape: [1])], [OutputSpec(type: .int32)])
        expectError(.unsupportedOperator, .argMax, .argMax(outputType: .float32), [input, .int32([0], shape: [1])], [.float32])
        expectError(.unsupportedOperator, .argMax, .argMax(outputType: .int64),
                    [input, TensorValue.int32([0], shape: [1], isConstant: false)], [OutputSpec(type: .int64)])
    }
}
