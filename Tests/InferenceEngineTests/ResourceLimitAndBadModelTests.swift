import Foundation
import InferenceEngine
import TestSupport
import TFLiteFormat
import XCTest

/// Resource limits that reject a model before it allocates (file size, tensor size, arena size),
/// and hand-made models that are valid FlatBuffers but unusable (NaN/inf/zero quantization scales,
/// cyclic graphs, a node reading its own output, truncated and wrong-magic real models): each gives
/// its typed error at load, none crashes or hangs.
final class ResourceLimitAndBadModelTests: XCTestCase {
    // MARK: Helpers

    func assertEngineError(_ code: EngineError.Code, _ bytes: [UInt8], options: ModelOptions = ModelOptions(), _ context: String,
                           contains: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try Model(data: Data(bytes), options: options)
            XCTFail("\(context): loaded, expected EngineError(\(code))", file: file, line: line)
        } catch let error as EngineError {
            XCTAssertEqual(error.code, code, "\(context): \(error.message)", file: file, line: line)
            if let contains { XCTAssertTrue(error.message.contains(contains), "\(context): '\(error.message)' lacks '\(contains)'", file: file, line: line) }
        } catch {
            XCTFail("\(context): expected EngineError(\(code)), got \(type(of: error)): \(error)", file: file, line: line)
        }
    }

    func assertFormatError(_ code: ModelFormatError.Code, _ context: String, contains: String? = nil,
                           file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Any) {
        do {
            _ = try body()
            XCTFail("\(context): succeeded, expected ModelFormatError(\(code))", file: file, line: line)
        } catch let error as ModelFormatError {
            XCTAssertEqual(error.code, code, "\(context): \(error.message)", file: file, line: line)
            if let contains { XCTAssertTrue(error.message.contains(contains), "\(context): '\(error.message)' lacks '\(contains)'", file: file, line: line) }
        } catch {
            XCTFail("\(context): expected ModelFormatError(\(code)), got \(type(of: error)): \(error)", file: file, line: line)
        }
    }

    /// `a + b` on uint8 tensors quantized with `scale` (tensor 0 gets `firstScale`).
    func quantizedAdd(firstScale: Float, shape: [Int32] = [1, 2, 2, 1]) -> [UInt8] {
        var b = TinyModelBuilder.addModel(shape: shape)
        for i in 0..<3 {
            b.tensors[i].type = TinyModelBuilder.TensorType.uint8
            b.tensors[i].quantization = .init(scale: i == 0 ? firstScale : 0.5, zeroPoint: 128)
        }
        return b.build().bytes
    }

    // MARK: Resource limits

    func testModelFileSizeLimit() throws {
        let bytes = TinyModelBuilder.addModel().build().bytes
        XCTAssertNoThrow(try ModelData(Data(bytes), maximumSize: bytes.count))
        assertFormatError(.resourceLimit, "data one byte over the limit", contains: "more than the limit of \(bytes.count - 1) bytes") {
            try ModelData(Data(bytes), maximumSize: bytes.count - 1)
        }
        let path = SharedData.model("mobilenet_v1_0.25_128_quant.tflite").path
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        XCTAssertNoThrow(try ModelData(contentsOfFile: path, maximumSize: size))
        assertFormatError(.resourceLimit, "file over the limit", contains: "more than the limit of \(size - 1) bytes") {
            try ModelData(contentsOfFile: path, maximumSize: size - 1)
        }
        XCTAssertEqual(ModelData.defaultMaximumSize, Int(Int32.max))
    }

    func testHugeTensorShapesAreRejectedAtLoad() {
        // 65536 × 65536 × 16 float32 = 256 GiB per tensor: over the default 2 GiB per tensor.
        assertEngineError(.resourceLimit, TinyModelBuilder.addModel(shape: [1, 65536, 65536, 16]).build().bytes, "256 GiB tensors",
                          contains: "ModelOptions.maximumTensorBytes")
        // An element count that overflows Int.
        assertEngineError(.resourceLimit, TinyModelBuilder.addModel(shape: [Int32.max, Int32.max, Int32.max, Int32.max]).build().bytes,
                          "overflowing shape")
        // A lowered per-tensor limit: 64 × 64 floats are 16384 bytes.
        var options = ModelOptions()
        options.maximumTensorBytes = 16383
        assertEngineError(.resourceLimit, TinyModelBuilder.addModel(shape: [1, 64, 64, 1]).build().bytes, options: options,
                          "tensor one byte over a lowered limit", contains: "16384 bytes")
        options.maximumTensorBytes = 16384
        XCTAssertNoThrow(try Model(data: Data(TinyModelBuilder.addModel(shape: [1, 64, 64, 1]).build().bytes), options: options))
    }

    /// A uint8 TRANSPOSE_CONV whose constant output_shape is huge: an error, where prepare used to
    /// trap on the scratch size computed from it before the output tensor's size check.
    func testHugeTransposeConvOutputShapeIsAnError() throws {
        func model(_ shape: [Int32]) -> [UInt8] {
            var b = TinyModelBuilder()
            let q = TinyModelBuilder.Quantization(scale: 0.1, zeroPoint: 0)
            let s = b.addTensor("shape", type: TinyModelBuilder.TensorType.int32, shape: [4], data: FBBytes.littleEndian(shape))
            let w = b.addTensor("w", type: 3, shape: [1, 3, 3, 1], data: [UInt8](repeating: 1, count: 9), quantization: q)
            let x = b.addTensor("x", type: 3, shape: [1, 4, 4, 1], quantization: q)
            let y = b.addTensor("y", type: 3, shape: [], quantization: q)
            // TRANSPOSE_CONV (builtin 67), TransposeConvOptions (49): SAME, stride 1.
            b.addOperator(opcodeIndex: b.addOperatorCode(builtin: 67), inputs: [s, w, x], outputs: [y], builtinOptionsType: 49,
                          builtinOptions: [(0, .int8(0)), (1, .int32(1)), (2, .int32(1))])
            b.inputs = [x]
            b.outputs = [y]
            return b.build().bytes
        }
        XCTAssertEqual(try Model(data: Data(model([1, 4, 4, 1]))).outputs[0].byteCount, 16)
        assertEngineError(.resourceLimit, model([1, Int32.max, Int32.max, 1]), "huge output_shape", contains: "output_shape")
    }

    func testArenaLimit() throws {
        let bytes = TinyModelBuilder.addModel(shape: [1, 64, 64, 1]).build().bytes
        let model = try Model(data: Data(bytes))
        XCTAssertGreaterThanOrEqual(model.arenaByteCount, 3 * 16384)
        var options = ModelOptions()
        options.maximumArenaBytes = model.arenaByteCount - 1
        assertEngineError(.resourceLimit, bytes, options: options, "arena one byte over the limit", contains: "ModelOptions.maximumArenaBytes")
        options.maximumArenaBytes = model.arenaByteCount
        XCTAssertNoThrow(try Model(data: Data(bytes), options: options))
    }

    func testAssociatedFileSizeLimit() throws {
        // A model's ZIP whose central directory says the label file unpacks to 100 MiB.
        let name = "labels.txt", contents = Array("cat\ndog\n".utf8)
        var zip = TinyZip.archive([TinyZip.Entry(name: name, contents: contents)])
        let central = 30 + name.utf8.count + contents.count
        XCTAssertEqual(Array(zip[central..<(central + 4)]), [0x50, 0x4B, 0x01, 0x02])
        let model = TinyModelBuilder.addModel().build().bytes
        let intact = try XCTUnwrap(try ZipArchive(data: ModelData(Data(model + zip))))
        XCTAssertEqual(try intact.contents(ofFileNamed: name), Data(contents))
        let size = 100 << 20
        for i in 0..<4 { zip[central + 24 + i] = UInt8((size >> (8 * i)) & 0xFF) }
        let archive = try XCTUnwrap(try ZipArchive(data: ModelData(Data(model + zip))))
        assertFormatError(.resourceLimit, "100 MiB associated file", contains: "more than the limit of \(ZipArchive.maximumEntrySize)") {
            try archive.contents(ofFileNamed: name) as Any
        }
    }

    // MARK: Unusable quantization

    func testNonFiniteNegativeAndZeroScales() throws {
        XCTAssertNoThrow(try Model(data: Data(quantizedAdd(firstScale: 0.25))))
        for scale: Float in [.nan, .infinity, -.infinity, -0.5, 0, .signalingNaN, .greatestFiniteMagnitude * 2] {
            assertEngineError(.invalidQuantization, quantizedAdd(firstScale: scale), "scale \(scale)", contains: "scale")
        }
    }

    func testPerChannelScalesThatDoNotMatchTheShape() {
        var b = TinyModelBuilder.addModel()
        b.tensors[0].quantization = .init(scales: [0.5, 0.5, 0.5], zeroPoints: [0, 0, 0], quantizedDimension: 3)
        assertEngineError(.invalidQuantization, b.build().bytes, "3 scales along a dimension of 1", contains: "per-channel")
        b.tensors[0].quantization = .init(scales: [0.5, 0.5], zeroPoints: [0, 0], quantizedDimension: 7)
        assertEngineError(.invalidQuantization, b.build().bytes, "quantized dimension 7 of a rank-4 tensor")
        b.tensors[0].quantization = .init(scales: [0.5, 0.5], zeroPoints: [0], quantizedDimension: 1)
        assertEngineError(.invalidQuantization, b.build().bytes, "2 scales, 1 zero point", contains: "zero points")
    }

    // MARK: Graphs that cannot run

    func testCyclicGraph() {
        // node 0: t2 = t0 + t3; node 1: t3 = t2 + t1.
        var b = TinyModelBuilder()
        let shape: [Int32] = [1, 2]
        let t0 = b.addTensor("a", shape: shape), t1 = b.addTensor("b", shape: shape)
        let t2 = b.addTensor("c", shape: shape), t3 = b.addTensor("d", shape: shape)
        let add = b.addOperatorCode(builtin: TinyModelBuilder.Builtin.add)
        b.addOperator(opcodeIndex: add, inputs: [t0, t3], outputs: [t2], builtinOptionsType: TinyModelBuilder.OptionsType.add, builtinOptions: [(0, .int8(0))])
        b.addOperator(opcodeIndex: add, inputs: [t2, t1], outputs: [t3], builtinOptionsType: TinyModelBuilder.OptionsType.add, builtinOptions: [(0, .int8(0))])
        b.inputs = [t0, t1]
        b.outputs = [t3]
        assertEngineError(.invalidModel, b.build().bytes, "two-node cycle", contains: "cycle")
    }

    func testNodeReadingItsOwnOutputAndTensorWrittenTwice() {
        var own = TinyModelBuilder.addModel()
        own.operators[0].inputs = [0, 2]
        assertEngineError(.invalidModel, own.build().bytes, "node reads its own output", contains: "its own output")

        var twice = TinyModelBuilder.addModel()
        let add = twice.operators[0].opcodeIndex
        twice.addOperator(opcodeIndex: add, inputs: [0, 1], outputs: [2], builtinOptionsType: TinyModelBuilder.OptionsType.add, builtinOptions: [(0, .int8(0))])
        assertEngineError(.invalidModel, twice.build().bytes, "tensor written by two nodes", contains: "written by both")
    }

    // MARK: Real models damaged

    func testTruncatedRealModel() throws {
        let bytes = try [UInt8](Data(contentsOf: SharedData.model("mobilenet_v1_0.25_128_quant.tflite")))
        // (The last bytes of a file can be padding, so the cuts go into the weights and tables.)
        for length in [bytes.count * 9 / 10, bytes.count / 2, 1000, 64, 7] {
            assertFormatError(.outOfBounds, "truncated to \(length) of \(bytes.count)") { try Model(data: Data(bytes.prefix(length))) }
        }
        assertFormatError(.outOfBounds, "empty") { try Model(data: Data()) }
    }

    /// Files of other formats given as a model. (A wrong 4-byte identifier alone is accepted, as
    /// older TFLite writers omitted it: the structure is what is verified.)
    func testOtherFormatsGivenAsModel() throws {
        for name in ["burger.jpg", "sergey.png", "cat.bmp"] {
            let bytes = try Data(contentsOf: SharedData.image(name))
            assertFormatError(.outOfBounds, name) { try Model(data: bytes) }
        }
        let video = try Data(contentsOf: SharedData.videos.appendingPathComponent("traffic_frames.mp4"))
        assertFormatError(.outOfBounds, "mp4") { try Model(data: video) }
    }
}
