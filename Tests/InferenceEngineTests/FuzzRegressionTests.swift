import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// Models found by the libFuzzer target FuzzModelInvoke (Fuzz/, scripts/fuzz.sh, docs/FUZZING.md)
/// that crashed the engine, rebuilt with TinyModelBuilder: each must now fail to compile with a
/// typed ``EngineError`` (and the unmutated model must still compile and run, so the test can fail).
final class FuzzRegressionTests: XCTestCase {
    func assertInvalidModel(_ data: Data, mentions text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try Model(data: data), file: file, line: line) { error in
            guard let error = error as? EngineError else { return XCTFail("not an EngineError: \(error)", file: file, line: line) }
            XCTAssertEqual(error.code, .invalidModel, error.message, file: file, line: line)
            XCTAssertTrue(error.message.contains(text), error.message, file: file, line: line)
        }
    }

    /// FuzzModelInvoke, crash-61ae8b8c: an operator output index of -1 (which the file format allows,
    /// as it marks omitted optional inputs) was used to subscript the tensor table.
    func testOperatorOutputMinusOneIsAnError() throws {
        let valid = TinyModelBuilder.addModel(shape: [1, 2])
        let interpreter = Interpreter(model: try Model(data: valid.data))
        try interpreter.copyInput(Data(FBBytes.littleEndian([Float(1), 2].map(\.bitPattern))), at: 0)
        try interpreter.copyInput(Data(FBBytes.littleEndian([Float(3), 4].map(\.bitPattern))), at: 1)
        interpreter.invoke()
        XCTAssertEqual(try interpreter.outputFloats(at: 0), [4, 6])

        var mutated = valid
        mutated.operators[0].outputs = [-1]
        assertInvalidModel(mutated.data, mentions: "index -1")
    }

    /// A float [1, 2, 2, 1] input resized by RESIZE_BILINEAR (builtin 23, options 15) or
    /// RESIZE_NEAREST_NEIGHBOR (97, options 74) to the constant `size`.
    func resizeModel(nearest: Bool, size: [Int32]) -> TinyModelBuilder {
        var b = TinyModelBuilder()
        let x = b.addTensor("x", shape: [1, 2, 2, 1])
        let s = b.addTensor("size", type: TinyModelBuilder.TensorType.int32, shape: [2], data: FBBytes.littleEndian(size))
        let y = b.addTensor("y", shape: [])
        let code = b.addOperatorCode(builtin: nearest ? 97 : 23)
        b.addOperator(opcodeIndex: code, inputs: [x, s], outputs: [y], builtinOptionsType: nearest ? 74 : 15, builtinOptions: [(0, .bool(false))])
        b.inputs = [x]
        b.outputs = [y]
        return b
    }

    /// FuzzModelInvoke, oom-21216d20: a resize to a huge constant size built per-row and per-column
    /// tables of that length in prepare, before the output tensor's size was checked: out of memory.
    func testResizeToHugeSizeIsAnError() throws {
        for nearest in [false, true] {
            let model = try Model(data: resizeModel(nearest: nearest, size: [3, 5]).data)
            XCTAssertEqual(model.outputs[0].byteCount, 3 * 5 * 4)   // [1, 3, 5, 1] float32
            for size: [Int32] in [[1, Int32.max], [Int32.max, 1], [(1 << 20) + 1, 2]] {
                XCTAssertThrowsError(try Model(data: resizeModel(nearest: nearest, size: size).data)) { error in
                    guard let error = error as? EngineError else { return XCTFail("not an EngineError: \(error)") }
                    XCTAssertEqual(error.code, .resourceLimit, error.message)
                    XCTAssertTrue(error.message.contains("per side"), error.message)
                }
            }
        }
    }

    /// A float [1, 1, 1, 2] input padded by PAD (builtin 34) with the constant `paddings` ([4, 2]).
    func padModel(paddings: [Int32]) -> TinyModelBuilder {
        var b = TinyModelBuilder()
        let x = b.addTensor("x", shape: [1, 1, 1, 2])
        let p = b.addTensor("paddings", type: TinyModelBuilder.TensorType.int32, shape: [4, 2], data: FBBytes.littleEndian(paddings))
        let y = b.addTensor("y", shape: [])
        b.addOperator(opcodeIndex: b.addOperatorCode(builtin: 34), inputs: [x, p], outputs: [y])
        b.inputs = [x]
        b.outputs = [y]
        return b
    }

    /// FuzzModelInvoke, crash-72a5fb85 (session 9's CI smoke): paddings of a mutated selfie
    /// segmentation model made PAD's output shape so large that the row-major strides computed from
    /// it in prepare overflowed (a trap), before the output tensor's size was checked.
    func testPadWithOverflowingOutputIsAnError() throws {
        let model = try Model(data: padModel(paddings: [0, 0, 1, 0, 0, 2, 0, 0]).data)
        XCTAssertEqual(model.outputs[0].byteCount, 2 * 3 * 2 * 4)   // [1, 2, 3, 2] float32
        let big = Int32.max
        XCTAssertThrowsError(try Model(data: padModel(paddings: [big, big, big, big, big, big, 0, 0]).data)) { error in
            guard let error = error as? EngineError else { return XCTFail("not an EngineError: \(error)") }
            XCTAssertEqual(error.code, .resourceLimit, error.message)
            XCTAssertTrue(error.message.contains("overflows"), error.message)
        }
    }
}
