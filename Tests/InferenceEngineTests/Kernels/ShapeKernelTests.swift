import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore

/// Data-movement kernels (Kernels/Shape): hand-computed expectations on small tensors.
final class ShapeKernelTests: XCTestCase {
    // MARK: Helpers

    private func run(_ op: BuiltinOperator, _ options: BuiltinOptions = .none, _ inputs: [TensorValue?],
                     _ outputs: [OutputSpec], file: StaticString = #filePath, line: UInt = #line) throws -> [TensorValue] {
        try KernelRunner.run(op, options: options, inputs: inputs, outputs: outputs)
    }

    private func expectError(_ code: EngineError.Code, _ op: BuiltinOperator, _ options: BuiltinOptions = .none,
                             _ inputs: [TensorValue?], _ outputs: [OutputSpec], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try KernelRunner.run(op, options: options, inputs: inputs, outputs: outputs), file: file, line: line) { error in
            XCTAssertEqual((error as? EngineError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    private func floats(_ n: Int, shape: [Int]) -> TensorValue { .float32((0..<n).map(Float.init), shape: shape) }
    private func i32(_ v: [Int32], _ shape: [Int]? = nil) -> TensorValue { .int32(v, shape: shape ?? [v.count]) }
    private func i64(_ v: [Int64], _ shape: [Int]? = nil, constant: Bool = true) -> TensorValue {
        TensorValue(v, type: .int64, shape: shape ?? [v.count], isConstant: constant)
    }
    private func q(_ scale: Float, _ zp: Int64) -> QuantizationParameters { QuantizationParameters(scale: scale, zeroPoint: zp) }

    // MARK: RESHAPE / SQUEEZE / EXPAND_DIMS

    func testReshapeFromShapeInputInfersMinusOne() throws {
        let out = try run(.reshape, .none, [floats(6, shape: [2, 3]), i32([3, -1])], [.float32])[0]
        XCTAssertEqual(out.shape, [3, 2])
        XCTAssertEqual(out.floats, [0, 1, 2, 3, 4, 5])
    }

    func testReshapeFromOptionsWithoutShapeInput() throws {
        let input = TensorValue.uint8([1, 2, 3, 4], shape: [1, 2, 2, 1], scale: 0.5, zeroPoint: 3)
        let out = try run(.reshape, .reshape(newShape: [1, -1]), [input], [.uint8(scale: 0.5, zeroPoint: 3)])[0]
        XCTAssertEqual(out.shape, [1, 4])
        XCTAssertEqual(out.values(as: UInt8.self), [1, 2, 3, 4])
    }

    func testReshapeWithComputedShapeUsesOptionThenDeclaredShape() throws {
        let computedShape = TensorValue.int32([4, 1], shape: [2], isConstant: false)
        // Option present: used.
        var out = try run(.reshape, .reshape(newShape: [2, 2]), [floats(4, shape: [4]), computedShape], [.float32])[0]
        XCTAssertEqual(out.shape, [2, 2])
        // Neither usable: the declared output shape.
        out = try run(.reshape, .none, [floats(4, shape: [4]), computedShape], [OutputSpec(type: .float32, shape: [1, 4])])[0]
        XCTAssertEqual(out.shape, [1, 4])
        XCTAssertEqual(out.floats, [0, 1, 2, 3])
        expectError(.unsupportedOperator, .reshape, .none, [floats(4, shape: [4]), computedShape], [OutputSpec(type: .float32, shape: [3])])
    }

    func testReshapeRejectsBadShapes() {
        expectError(.invalidModel, .reshape, .none, [floats(6, shape: [6]), i32([-1, -1])], [.float32])
        expectError(.invalidModel, .reshape, .none, [floats(6, shape: [6]), i32([4, 2])], [.float32])
        expectError(.invalidModel, .reshape, .none, [floats(6, shape: [6]), i32([-2, 3])], [.float32])
        expectError(.invalidModel, .reshape, .none, [floats(6, shape: [6]), i32([6])], [OutputSpec(type: .int32)])
    }

    func testSqueeze() throws {
        var out = try run(.squeeze, .squeeze(dimensions: [-2]), [floats(3, shape: [1, 3, 1, 1])], [.float32])[0]
        XCTAssertEqual(out.shape, [1, 3, 1])
        out = try run(.squeeze, .squeeze(dimensions: []), [floats(3, shape: [1, 3, 1, 1])], [.float32])[0]
        XCTAssertEqual(out.shape, [3])
        XCTAssertEqual(out.floats, [0, 1, 2])
        expectError(.invalidModel, .squeeze, .squeeze(dimensions: [1]), [floats(3, shape: [1, 3])], [.float32])
        expectError(.invalidModel, .squeeze, .squeeze(dimensions: [2]), [floats(3, shape: [1, 3])], [.float32])
    }

    func testExpandDims() throws {
        var out = try run(.expandDims, .none, [floats(6, shape: [2, 3]), i32([-1], [])], [.float32])[0]
        XCTAssertEqual(out.shape, [2, 3, 1])
        out = try run(.expandDims, .none, [floats(6, shape: [2, 3]), i64([1])], [.float32])[0]
        XCTAssertEqual(out.shape, [2, 1, 3])
        XCTAssertEqual(out.floats, [0, 1, 2, 3, 4, 5])
        expectError(.invalidModel, .expandDims, .none, [floats(6, shape: [2, 3]), i32([3])], [.float32])
        expectError(.unsupportedOperator, .expandDims, .none,
                    [floats(6, shape: [2, 3]), TensorValue.int32([0], shape: [1], isConstant: false)], [.float32])
    }

    // MARK: CONCATENATION

    func testConcatenationFloatNegativeAxisAndRelu6() throws {
        let a = TensorValue.float32([-1, 7], shape: [2, 1])
        let b = TensorValue.float32([1, 2, 3, 4], shape: [2, 2])
        var out = try run(.concatenation, .concatenation(axis: -1, activation: .none), [a, b], [.float32])[0]
        XCTAssertEqual(out.shape, [2, 3])
        XCTAssertEqual(out.floats, [-1, 1, 2, 7, 3, 4])
        out = try run(.concatenation, .concatenation(axis: 1, activation: .relu6), [a, b], [.float32])[0]
        XCTAssertEqual(out.floats, [0, 1, 2, 6, 3, 4])
        out = try run(.concatenation, .concatenation(axis: 0, activation: .none), [b, b], [.float32])[0]
        XCTAssertEqual(out.shape, [4, 2])
        XCTAssertEqual(out.floats, [1, 2, 3, 4, 1, 2, 3, 4])
    }

    func testConcatenationUInt8RequantizesLikeConcatenationWithScaling() throws {
        // Input 0: scale 0.5, zero point 10 -> output scale 1, zero point 3: q' = round(0.5 q - 5) + 3.
        let a = TensorValue.uint8([0, 9, 11, 12, 255], shape: [1, 5], scale: 0.5, zeroPoint: 10)
        // Input 1 shares the output's parameters: copied bytes.
        let b = TensorValue.uint8([0, 200], shape: [1, 2], scale: 1, zeroPoint: 3)
        let out = try run(.concatenation, .concatenation(axis: 1, activation: .none), [a, b], [.uint8(scale: 1, zeroPoint: 3)])[0]
        XCTAssertEqual(out.shape, [1, 7])
        // 0 -> round(-5)+3 = -2 -> 0; 9 -> round(-0.5) = -1 (half away from zero) -> 2; 11 -> 1+3 = 4;
        // 12 -> 4; 255 -> round(122.5) = 123 -> 126.
        XCTAssertEqual(out.values(as: UInt8.self), [0, 2, 4, 4, 126, 0, 200])
    }

    func testConcatenationQuantizedActivationClampsInOutputUnits() throws {
        // Same parameters, relu6 with scale 0.1 and zero point 10: range [10, 70].
        let a = TensorValue.uint8([0, 50, 100], shape: [3], scale: 0.1, zeroPoint: 10)
        let out = try run(.concatenation, .concatenation(axis: 0, activation: .relu6), [a, a], [.uint8(scale: 0.1, zeroPoint: 10)])[0]
        XCTAssertEqual(out.values(as: UInt8.self), [10, 50, 70, 10, 50, 70])
    }

    func testConcatenationInt8TinyScalesStayFinite() throws {
        let tiny = QuantizationParameters(scale: 1e-35, zeroPoint: 0)
        let one = QuantizationParameters(scale: 1, zeroPoint: 0)
        // 1e-35 -> 1: everything rounds to 0.
        var out = try run(.concatenation, .concatenation(axis: 0, activation: .none),
                          [TensorValue.int8([5, 0, -5], shape: [3], quantization: tiny)], [.int8(scale: 1, zeroPoint: 0)])[0]
        XCTAssertEqual(out.values(as: Int8.self), [0, 0, 0])
        // 1 -> 1e-35: the scale is 1e35; values saturate, 0 stays 0.
        out = try run(.concatenation, .concatenation(axis: 0, activation: .none),
                      [TensorValue.int8([5, 0, -5], shape: [3], quantization: one)], [.int8(scale: 1e-35, zeroPoint: 0)])[0]
        XCTAssertEqual(out.values(as: Int8.self), [127, 0, -128])
    }

    func testConcatenationOfInt64AndErrors() throws {
        let a = i64([1, 2], [1, 2], constant: false), b = i64([3], [1, 1], constant: false)
        let out = try run(.concatenation, .concatenation(axis: 1, activation: .none), [a, b], [OutputSpec(type: .int64)])[0]
        XCTAssertEqual(out.values(as: Int64.self), [1, 2, 3])
        expectError(.invalidModel, .concatenation, .concatenation(axis: 1, activation: .none),
                    [floats(2, shape: [1, 2]), floats(2, shape: [2, 1])], [.float32])
        expectError(.invalidModel, .concatenation, .concatenation(axis: 2, activation: .none),
                    [floats(2, shape: [1, 2]), floats(2, shape: [1, 2])], [.float32])
        expectError(.invalidModel, .concatenation, .concatenation(axis: 0, activation: .none),
                    [floats(2, shape: [2]), i32([1, 2])], [.float32])
        expectError(.unsupportedOperator, .concatenation, .concatenation(axis: 0, activation: .relu),
                    [a], [OutputSpec(type: .int64)])
    }

    // MARK: SPLIT / SPLIT_V

    func testSplitUInt8AlongLastAxis() throws {
        let input = TensorValue.uint8([1, 2, 3, 4, 5, 6, 7, 8], shape: [2, 4], scale: 1, zeroPoint: 0)
        let outs = try run(.split, .split(numSplits: 2), [i32([-1], []), input],
                           [.uint8(scale: 1, zeroPoint: 0), .uint8(scale: 1, zeroPoint: 0)])
        XCTAssertEqual(outs.map(\.shape), [[2, 2], [2, 2]])
        XCTAssertEqual(outs[0].values(as: UInt8.self), [1, 2, 5, 6])
        XCTAssertEqual(outs[1].values(as: UInt8.self), [3, 4, 7, 8])
        expectError(.invalidModel, .split, .split(numSplits: 3), [i32([1], []), input],
                    [.uint8(scale: 1, zeroPoint: 0), .uint8(scale: 1, zeroPoint: 0), .uint8(scale: 1, zeroPoint: 0)])
        expectError(.invalidModel, .split, .split(numSplits: 2), [i32([2], []), input],
                    [.uint8(scale: 1, zeroPoint: 0), .uint8(scale: 1, zeroPoint: 0)])
    }

    func testSplitVWithInferredSize() throws {
        let outs = try run(.splitV, .splitV(numSplits: 3), [floats(12, shape: [2, 6]), i32([1, -1, 2]), i32([1], [])],
                           [.float32, .float32, .float32])
        XCTAssertEqual(outs.map(\.shape), [[2, 1], [2, 3], [2, 2]])
        XCTAssertEqual(outs[0].floats, [0, 6])
        XCTAssertEqual(outs[1].floats, [1, 2, 3, 7, 8, 9])
        XCTAssertEqual(outs[2].floats, [4, 5, 10, 11])
        expectError(.invalidModel, .splitV, .splitV(numSplits: 2), [floats(12, shape: [2, 6]), i32([1, 2]), i32([1], [])],
                    [.float32, .float32])
        expectError(.invalidModel, .splitV, .splitV(numSplits: 2), [floats(12, shape: [2, 6]), i32([-1, -1]), i32([1], [])],
                    [.float32, .float32])
    }

    // MARK: SLICE / STRIDED_SLICE

    func testSlice() throws {
        let out = try run(.slice, .none, [floats(12, shape: [3, 4]), i32([1, 1]), i64([-1, 2])], [.float32])[0]
        XCTAssertEqual(out.shape, [2, 2])
        XCTAssertEqual(out.floats, [5, 6, 9, 10])
        expectError(.invalidModel, .slice, .none, [floats(12, shape: [3, 4]), i32([1, 3]), i32([1, 2])], [.float32])
        expectError(.invalidModel, .slice, .none, [floats(12, shape: [3, 4]), i32([1]), i32([1])], [.float32])
    }

    private func stridedSlice(_ input: TensorValue, _ begin: [Int32], _ end: [Int32], _ strides: [Int32],
                              begin beginMask: Int32 = 0, end endMask: Int32 = 0, ellipsis: Int32 = 0,
                              newAxis: Int32 = 0, shrink: Int32 = 0, offset: Bool = false) throws -> TensorValue {
        var o = StridedSliceOptions()
        o.beginMask = beginMask; o.endMask = endMask; o.ellipsisMask = ellipsis
        o.newAxisMask = newAxis; o.shrinkAxisMask = shrink; o.offset = offset
        return try run(.stridedSlice, .stridedSlice(o), [input, i32(begin), i32(end), i32(strides)], [.float32])[0]
    }

    func testStridedSliceStridesAndMasks() throws {
        let m = floats(12, shape: [3, 4])   // rows [0 1 2 3] [4 5 6 7] [8 9 10 11]
        var out = try stridedSlice(m, [0, 1], [3, 4], [2, 2])
        XCTAssertEqual(out.shape, [2, 2])
        XCTAssertEqual(out.floats, [1, 3, 9, 11])
        // Negative strides with begin/end masks reverse both axes.
        out = try stridedSlice(m, [0, 0], [0, 0], [-1, -1], begin: 3, end: 3)
        XCTAssertEqual(out.floats, [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
        // Negative indices: row -1, columns -3 ..< -1.
        out = try stridedSlice(m, [-1, -3], [3, -1], [1, 1])
        XCTAssertEqual(out.shape, [1, 2])
        XCTAssertEqual(out.floats, [9, 10])
        // Out-of-range ends clamp.
        out = try stridedSlice(m, [1, 2], [100, 100], [1, 1])
        XCTAssertEqual(out.floats, [6, 7, 10, 11])
    }

    func testStridedSliceShrinkNewAxisEllipsisOffset() throws {
        let m = floats(12, shape: [3, 4])
        // Shrink axis 0: row 1 as a vector.
        var out = try stridedSlice(m, [1, 0], [2, 4], [1, 1], shrink: 1)
        XCTAssertEqual(out.shape, [4])
        XCTAssertEqual(out.floats, [4, 5, 6, 7])
        // New axis in front, then rows 0..<2, columns 1..<3.
        out = try stridedSlice(m, [0, 0, 1], [1, 2, 3], [1, 1, 1], newAxis: 1)
        XCTAssertEqual(out.shape, [1, 2, 2])
        XCTAssertEqual(out.floats, [1, 2, 5, 6])
        // Ellipsis covers the leading dimensions of a [2,3,4] tensor; the last gets 1..<3.
        out = try stridedSlice(floats(24, shape: [2, 3, 4]), [0, 1], [0, 3], [1, 1], ellipsis: 1)
        XCTAssertEqual(out.shape, [2, 3, 2])
        XCTAssertEqual(out.floats, [1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22])
        // offset: end is a size relative to begin.
        out = try stridedSlice(m, [1, 1], [2, 2], [1, 1], offset: true)
        XCTAssertEqual(out.shape, [2, 2])
        XCTAssertEqual(out.floats, [5, 6, 9, 10])
    }

    func testStridedSliceErrors() {
        let m = floats(12, shape: [3, 4])
        var o = StridedSliceOptions()
        expectError(.invalidModel, .stridedSlice, .stridedSlice(o), [m, i32([0, 0]), i32([1, 1]), i32([1, 0])], [.float32])
        o.shrinkAxisMask = 1
        expectError(.invalidModel, .stridedSlice, .stridedSlice(o), [m, i32([5, 0]), i32([6, 1]), i32([1, 1])], [.float32])
        o = StridedSliceOptions()
        expectError(.unsupportedOperator, .stridedSlice, .stridedSlice(o),
                    [m, TensorValue.int32([0, 0], shape: [2], isConstant: false), i32([1, 1]), i32([1, 1])], [.float32])
    }

    // MARK: PAD / PADV2

    func testPadFloatAndQuantizedZeroPoint() throws {
        var out = try run(.pad, .none, [TensorValue.float32([1, 2], shape: [1, 2]), i32([0, 0, 1, 2], [2, 2])], [.float32])[0]
        XCTAssertEqual(out.shape, [1, 5])
        XCTAssertEqual(out.floats, [0, 1, 2, 0, 0])
        let input = TensorValue.uint8([1, 2, 3, 4], shape: [2, 2], scale: 0.5, zeroPoint: 7)
        out = try run(.pad, .none, [input, i64([1, 0, 0, 1], [2, 2])], [.uint8(scale: 0.5, zeroPoint: 7)])[0]
        XCTAssertEqual(out.shape, [3, 3])
        XCTAssertEqual(out.values(as: UInt8.self), [7, 7, 7, 1, 2, 7, 3, 4, 7])
        expectError(.invalidModel, .pad, .none, [input, i32([0, -1, 0, 0], [2, 2])], [.uint8(scale: 0.5, zeroPoint: 7)])
        expectError(.invalidModel, .pad, .none, [input, i32([0, 1], [1, 2])], [.uint8(scale: 0.5, zeroPoint: 7)])
    }

    func testPadV2WithConstantValue() throws {
        let value = TensorValue.int8([-3], shape: [], quantization: q(0.25, -1), isConstant: true)
        let input = TensorValue.int8([5, 6], shape: [2], quantization: q(0.25, -1))
        let out = try run(.padV2, .none, [input, i32([2, 1], [1, 2]), value], [.int8(scale: 0.25, zeroPoint: -1)])[0]
        XCTAssertEqual(out.values(as: Int8.self), [-3, -3, 5, 6, -3])
        let otherParameters = TensorValue.int8([-3], shape: [], quantization: q(0.5, -1), isConstant: true)
        expectError(.invalidQuantization, .padV2, .none, [input, i32([2, 1], [1, 2]), otherParameters], [.int8(scale: 0.25, zeroPoint: -1)])
        let floatOut = try run(.padV2, .none, [TensorValue.float32([1], shape: [1, 1]), i32([1, 0, 0, 1], [2, 2]),
                                               TensorValue.float32([9], shape: [1], isConstant: true)], [.float32])[0]
        XCTAssertEqual(floatOut.floats, [9, 9, 1, 9])
    }

    // MARK: TRANSPOSE

    func testTransposeRank3() throws {
        // [2,3,2] -> perm [2,0,1] -> [2,2,3]: out[k][i][j] = in[i][j][k].
        let out = try run(.transpose, .none, [floats(12, shape: [2, 3, 2]), i32([2, 0, -2])], [.float32])[0]
        XCTAssertEqual(out.shape, [2, 2, 3])
        XCTAssertEqual(out.floats, [0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11])
        expectError(.invalidModel, .transpose, .none, [floats(12, shape: [2, 3, 2]), i32([0, 0, 1])], [.float32])
        expectError(.invalidModel, .transpose, .none, [floats(12, shape: [2, 3, 2]), i32([0, 1])], [.float32])
    }

    func testTransposeUInt8Rank6() throws {
        let values = (0..<64).map { UInt8($0) }
        let input = TensorValue.uint8(values, shape: [2, 2, 2, 2, 2, 2], scale: 1, zeroPoint: 0)
        let out = try run(.transpose, .none, [input, i32([5, 4, 3, 2, 1, 0])], [.uint8(scale: 1, zeroPoint: 0)])[0]
        // Reversing all six binary axes reverses the bits of the flat index.
        let expected = (0..<64).map { i -> UInt8 in
            var r = 0
            for b in 0..<6 where i & (1 << b) != 0 { r |= 1 << (5 - b) }
            return UInt8(r)
        }
        XCTAssertEqual(out.values(as: UInt8.self), expected)
    }

    // MARK: GATHER

    func testGatherAxisAndBatchDims() throws {
        let params = floats(12, shape: [3, 4])
        var out = try run(.gather, .gather(axis: 1, batchDims: 0), [params, i32([3, 0])], [.float32])[0]
        XCTAssertEqual(out.shape, [3, 2])
        XCTAssertEqual(out.floats, [3, 0, 7, 4, 11, 8])
        out = try run(.gather, .gather(axis: 0, batchDims: 0), [params, i64([2, 2, 0], [3, 1])], [.float32])[0]
        XCTAssertEqual(out.shape, [3, 1, 4])
        XCTAssertEqual(out.floats, [8, 9, 10, 11, 8, 9, 10, 11, 0, 1, 2, 3])
        // batch_dims 1: row b picks its own column indices.
        out = try run(.gather, .gather(axis: 1, batchDims: 1), [params, i32([1, 0, 3, 3, 2, 1], [3, 2])], [.float32])[0]
        XCTAssertEqual(out.shape, [3, 2])
        XCTAssertEqual(out.floats, [1, 0, 7, 7, 10, 9])
    }

    func testGatherOutOfRangeIndices() throws {
        let params = floats(6, shape: [3, 2])
        expectError(.invalidModel, .gather, .gather(axis: 0, batchDims: 0), [params, i32([1, 3])], [.float32])
        expectError(.invalidModel, .gather, .gather(axis: 0, batchDims: 0), [params, i32([-1])], [.float32])
        // Computed indices: out-of-range entries become zeros.
        let computed = TensorValue.int32([2, 3, -1, 0], shape: [4], isConstant: false)
        let out = try run(.gather, .gather(axis: 0, batchDims: 0), [params, computed], [.float32])[0]
        XCTAssertEqual(out.floats, [4, 5, 0, 0, 0, 0, 0, 1])
        expectError(.unsupportedOperator, .gather, .gather(axis: 0, batchDims: 0),
                    [params, TensorValue.float32([0], shape: [1])], [.float32])
    }

    // MARK: RESIZE_BILINEAR

    private func resizeBilinear(_ input: TensorValue, _ size: [Int32], align: Bool = false, halfPixel: Bool = false,
                                _ output: OutputSpec = .float32) throws -> TensorValue {
        var o = ResizeOptions()
        o.alignCorners = align; o.halfPixelCenters = halfPixel
        return try run(.resizeBilinear, .resizeBilinear(o), [input, i32(size)], [output])[0]
    }

    private func assertClose(_ a: [Float], _ b: [Float], accuracy: Float = 1e-5, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.count, b.count, file: file, line: line)
        for (x, y) in zip(a, b) { XCTAssertEqual(x, y, accuracy: accuracy, "\(a) vs \(b)", file: file, line: line) }
    }

    func testResizeBilinearFloatModes() throws {
        let square = TensorValue.float32([0, 1, 2, 3], shape: [1, 2, 2, 1])  // f(y, x) = 2y + x
        var out = try resizeBilinear(square, [3, 3])
        XCTAssertEqual(out.shape, [1, 3, 3, 1])
        assertClose(out.floats, [0, 2.0 / 3, 1, 4.0 / 3, 2, 7.0 / 3, 2, 8.0 / 3, 3])
        out = try resizeBilinear(square, [3, 3], align: true)
        assertClose(out.floats, [0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3])
        // Exact 2x upscale (TFLite's 2x2 kernel).
        out = try resizeBilinear(square, [4, 4])
        XCTAssertEqual(out.floats, [0, 0.5, 1, 1, 1, 1.5, 2, 2, 2, 2.5, 3, 3, 2, 2.5, 3, 3])
        // Half-pixel centres: positions -0.25, 0.25, 0.75, 1.25 clamp at the borders.
        out = try resizeBilinear(TensorValue.float32([0, 4], shape: [1, 1, 2, 1]), [1, 4], halfPixel: true)
        XCTAssertEqual(out.floats, [0, 1, 3, 4])
    }

    func testResizeBilinearUInt8RoundsByAddingHalf() throws {
        let input = TensorValue.uint8([10, 21], shape: [1, 1, 2, 1], scale: 0.1, zeroPoint: 0)
        // Middle sample: 10 * 0.5 + 21 * 0.5 + 0.5 = 16.0 -> 16.
        let out = try resizeBilinear(input, [1, 3], align: true, .uint8(scale: 0.1, zeroPoint: 0))
        XCTAssertEqual(out.values(as: UInt8.self), [10, 16, 21])
    }

    func testResizeBilinearInt8Integer() throws {
        let input = TensorValue.int8([-10, -21, 10, 21], shape: [1, 2, 2, 1], quantization: q(0.1, 0))
        let out = try resizeBilinear(input, [2, 3], align: true, .int8(scale: 0.1, zeroPoint: 0))
        // (-10 - 21) / 2 = -15.5 rounds away from zero to -16; (10 + 21) / 2 -> 16.
        XCTAssertEqual(out.values(as: Int8.self), [-10, -16, -21, 10, 16, 21])
    }

    func testResizeBilinearErrors() {
        var o = ResizeOptions()
        o.alignCorners = true; o.halfPixelCenters = true
        let input = floats(4, shape: [1, 2, 2, 1])
        expectError(.invalidModel, .resizeBilinear, .resizeBilinear(o), [input, i32([3, 3])], [.float32])
        expectError(.invalidModel, .resizeBilinear, .resizeBilinear(ResizeOptions()), [input, i32([0, 3])], [.float32])
        expectError(.invalidModel, .resizeBilinear, .resizeBilinear(ResizeOptions()), [floats(4, shape: [2, 2]), i32([3, 3])], [.float32])
        expectError(.unsupportedOperator, .resizeBilinear, .resizeBilinear(ResizeOptions()),
                    [i64([1, 2, 3, 4], [1, 2, 2, 1], constant: false), i32([3, 3])], [OutputSpec(type: .int64)])
    }

    // MARK: RESIZE_NEAREST_NEIGHBOR

    func testResizeNearestNeighborRounding() throws {
        let input = TensorValue.uint8([1, 2], shape: [1, 1, 2, 1], scale: 1, zeroPoint: 0)
        func resize(_ width: Int32, align: Bool = false, half: Bool = false) throws -> [UInt8] {
            var o = ResizeOptions()
            o.alignCorners = align; o.halfPixelCenters = half
            return try run(.resizeNearestNeighbor, .resizeNearestNeighbor(o), [input, i32([1, width])],
                           [.uint8(scale: 1, zeroPoint: 0)])[0].values(as: UInt8.self)
        }
        XCTAssertEqual(try resize(4), [1, 1, 2, 2])             // floor(x * 0.5)
        XCTAssertEqual(try resize(3, align: true), [1, 2, 2])   // round(x * 0.5), 0.5 -> 1
        XCTAssertEqual(try resize(3, half: true), [1, 2, 2])    // floor((x + 0.5) * 2/3)
        XCTAssertEqual(try resize(5), [1, 1, 1, 2, 2])          // floor(x * 0.4)
    }

    func testResizeNearestNeighborFloatRows() throws {
        let out = try run(.resizeNearestNeighbor, .resizeNearestNeighbor(ResizeOptions()),
                          [TensorValue.float32([1, 2, 3, 4], shape: [1, 2, 1, 2]), i32([4, 1])], [.float32])[0]
        XCTAssertEqual(out.shape, [1, 4, 1, 2])
        XCTAssertEqual(out.floats, [1, 2, 1, 2, 3, 4, 3, 4])
    }
}
