import Foundation
import TensorCore
import TestSupport
import TFLiteFormat
import XCTest

/// The test FlatBuffer builder's models parse with ``TFLiteModel`` and keep every value.
final class TinyModelBuilderTests: XCTestCase {
    func testAddModelRoundTrips() throws {
        let model = try TFLiteModel(data: TinyModelBuilder.addModel().data)
        XCTAssertEqual(model.version, 3)
        XCTAssertEqual(model.operatorCodes.map(\.displayName), ["ADD"])
        let graph = model.mainSubgraph
        XCTAssertEqual(graph.tensors.map(\.name), ["a", "b", "sum"])
        XCTAssertEqual(graph.tensors.map(\.shape), [[1, 2, 2, 1], [1, 2, 2, 1], [1, 2, 2, 1]])
        XCTAssertEqual(graph.tensors.map(\.type), [.float32, .float32, .float32])
        XCTAssertEqual(graph.inputs, [0, 1])
        XCTAssertEqual(graph.outputs, [2])
        XCTAssertEqual(graph.operators.count, 1)
        XCTAssertEqual(graph.operators[0].inputs, [0, 1])
        XCTAssertEqual(graph.operators[0].outputs, [2])
        XCTAssertEqual(graph.operators[0].builtinOptions, .add(activation: .none))
        XCTAssertNil(graph.operators[0].customOptions)
        XCTAssertEqual(model.buffers.count, 1)
        XCTAssertNil(model.buffers[0].range)
    }

    func testEveryFeatureRoundTrips() throws {
        var b = TinyModelBuilder()
        b.description = "built by the test builder"
        b.subgraphName = "main"
        let input = b.addTensor("input", type: TinyModelBuilder.TensorType.uint8, shape: [1, 4, 4, 3],
                                quantization: .init(scale: 1 / 128, zeroPoint: 128), shapeSignature: [-1, 4, 4, 3])
        let weights: [Int8] = (0..<(2 * 3 * 3 * 3)).map { Int8(truncatingIfNeeded: $0 * 7 - 60) }
        let filter = b.addTensor("filter", type: TinyModelBuilder.TensorType.int8, shape: [2, 3, 3, 3],
                                 data: weights.map { UInt8(bitPattern: $0) },
                                 quantization: .init(scales: [0.5, 0.25], zeroPoints: [0, 0], quantizedDimension: 0,
                                                     min: [-1, -2], max: [1, 2]))
        let bias = b.addTensor("bias", type: TinyModelBuilder.TensorType.int32, shape: [2],
                               data: FBBytes.littleEndian([Int32(-5), 1_000_000]))
        let conv = b.addTensor("conv", type: TinyModelBuilder.TensorType.uint8, shape: [1, 2, 2, 2],
                               quantization: .init(scale: 0.1, zeroPoint: 7))
        let state = b.addTensor("state", shape: [1, 8], isVariable: true)
        let reshaped = b.addTensor("reshaped", type: TinyModelBuilder.TensorType.uint8, shape: [1, 8])
        let custom = b.addTensor("custom", type: TinyModelBuilder.TensorType.uint8, shape: [1, 8])

        let convCode = b.addOperatorCode(builtin: TinyModelBuilder.Builtin.conv2D, version: 3)
        b.addOperator(opcodeIndex: convCode, inputs: [input, filter, bias], outputs: [conv],
                      builtinOptionsType: TinyModelBuilder.OptionsType.conv2D,
                      builtinOptions: [(0, .int8(1)), (1, .int32(2)), (2, .int32(2)), (3, .int8(3)), (4, .int32(1)), (5, .int32(1))])
        let reshapeCode = b.addOperatorCode(builtin: TinyModelBuilder.Builtin.reshape)
        b.addOperator(opcodeIndex: reshapeCode, inputs: [conv], outputs: [reshaped],
                      builtinOptionsType: TinyModelBuilder.OptionsType.reshape,
                      builtinOptionsTable: FBTable().with(0, .vector([Int32(1), 8])))
        // FlexBuffer custom options: the int 7 (value, INT width 1, root width 1).
        let customCode = b.addOperatorCode(custom: "MyCustomOp", version: 2)
        b.addOperator(opcodeIndex: customCode, inputs: [reshaped, -1], outputs: [custom], customOptions: [7, 1 << 2, 1],
                      intermediates: [state])
        XCTAssertEqual(b.addOperatorCode(builtin: TinyModelBuilder.Builtin.conv2D, version: 3), convCode, "codes are reused")
        b.inputs = [input]
        b.outputs = [custom]
        b.addMetadata(name: "min_runtime_version", data: Array("1.5.0".utf8))

        let output = b.build()
        let model = try TFLiteModel(data: output.data)
        XCTAssertEqual(model.description, "built by the test builder")
        XCTAssertEqual(model.operatorCodes.map(\.displayName), ["CONV_2D", "RESHAPE", "CUSTOM:MyCustomOp"])
        XCTAssertEqual(model.operatorCodes.map(\.version), [3, 1, 2])
        let graph = model.mainSubgraph
        XCTAssertEqual(graph.name, "main")
        XCTAssertEqual(graph.tensors.map(\.name), ["input", "filter", "bias", "conv", "state", "reshaped", "custom"])
        XCTAssertEqual(graph.tensors.map(\.type), [.uint8, .int8, .int32, .uint8, .float32, .uint8, .uint8])
        XCTAssertEqual(graph.tensors[0].shapeSignature, [-1, 4, 4, 3])
        XCTAssertEqual(graph.tensors[0].quantization, QuantizationParameters(scale: 1 / 128, zeroPoint: 128))
        XCTAssertEqual(graph.tensors[1].quantization,
                       QuantizationParameters(scales: [0.5, 0.25], zeroPoints: [0, 0], quantizedDimension: 0, min: [-1, -2], max: [1, 2]))
        XCTAssertNil(graph.tensors[2].quantization)
        XCTAssertTrue(graph.tensors[4].isVariable)
        XCTAssertFalse(graph.tensors[3].isVariable)
        XCTAssertEqual(graph.inputs, [0])
        XCTAssertEqual(graph.outputs, [6])

        // Constant data: buffers 1 and 2, aligned to 16 bytes, with the bytes given.
        XCTAssertEqual(graph.tensors.map(\.buffer), [0, 1, 2, 0, 0, 0, 0])
        let filterBytes = try XCTUnwrap(model.bufferBytes(1))
        XCTAssertEqual(Array(filterBytes).map { Int8(bitPattern: $0) }, weights)
        XCTAssertEqual(try XCTUnwrap(model.buffers[1].range).lowerBound % 16, 0)
        XCTAssertEqual(try XCTUnwrap(model.buffers[2].range).lowerBound % 16, 0)
        let biasBytes = try XCTUnwrap(model.bufferBytes(2))
        XCTAssertEqual(biasBytes.count, 8)
        XCTAssertEqual(biasBytes.loadUnaligned(fromByteOffset: 4, as: Int32.self), 1_000_000)

        let ops = graph.operators
        XCTAssertEqual(ops.map(\.opcodeIndex), [0, 1, 2])
        var conv2D = Conv2DOptions()
        conv2D.padding = .valid
        conv2D.strideWidth = 2
        conv2D.strideHeight = 2
        conv2D.activation = .relu6
        XCTAssertEqual(ops[0].builtinOptions, .conv2D(conv2D))
        XCTAssertEqual(ops[0].inputs, [0, 1, 2])
        XCTAssertEqual(ops[1].builtinOptions, .reshape(newShape: [1, 8]))
        XCTAssertEqual(ops[2].builtinOptions, BuiltinOptions.none)
        XCTAssertEqual(ops[2].inputs, [5, -1])
        XCTAssertEqual(ops[2].intermediates, [4])
        XCTAssertEqual(try FlexBuffer.decode(model.customOptions(of: ops[2])), .int(7))
        XCTAssertEqual(ModelAnalysis(model: model).opCounts.map(\.name), ["CONV_2D", "RESHAPE", "CUSTOM:MyCustomOp"])
        // CONV_2D: 8 output elements x 3 x 3 x 3.
        XCTAssertEqual(ModelAnalysis(model: model).macs, 8 * 27)

        XCTAssertEqual(model.metadataEntries.map(\.name), ["min_runtime_version"])
        XCTAssertEqual(model.metadataEntries.map(\.buffer), [3])
        XCTAssertEqual(try XCTUnwrap(model.bufferBytes(3)).map { $0 }, Array("1.5.0".utf8))
        XCTAssertNil(try model.metadata())
        XCTAssertNil(try model.associatedFiles())

        // Labels point at what they name.
        XCTAssertEqual(FBBytes.read(UInt32.self, at: output.position("tensors"), in: output.bytes), 7)
        XCTAssertEqual(FBBytes.read(UInt32.self, at: output.position("operator0.field.0"), in: output.bytes), 0)
        XCTAssertEqual(Array(output.bytes[4..<8]), Array("TFL3".utf8))
    }

    func testMetadataAndTrailingArchiveRoundTrip() throws {
        // A minimal ModelMetadata (M001) with a name and one subgraph whose input has normalization.
        var normalization = FBTable()
        normalization.set(0, .floats([127.5]))
        normalization.set(1, .floats([127.5]))
        var unit = FBTable()
        unit.set(0, .uint8(1))
        unit.set(1, table: normalization)
        var tensor = FBTable()
        tensor.set(0, string: "image")
        tensor.set(4, .tables([unit]))
        var subgraph = FBTable()
        subgraph.set(2, .tables([tensor]))
        var root = FBTable()
        root.set(0, string: "Tiny")
        root.set(3, .tables([subgraph]))
        root.set(7, string: "1.0.0")
        let metadata = FlatBufferBuilder.build(root: root, fileIdentifier: "M001").bytes

        var b = TinyModelBuilder.addModel()
        b.addMetadata(name: "TFLITE_METADATA", data: metadata)
        let model = try TFLiteModel(data: b.data)
        let decoded = try XCTUnwrap(try model.metadata())
        XCTAssertEqual(decoded.name, "Tiny")
        XCTAssertEqual(decoded.minParserVersion, "1.0.0")
        XCTAssertEqual(decoded.subgraphs.first?.inputTensors.first?.name, "image")
        XCTAssertEqual(decoded.subgraphs.first?.inputTensors.first?.normalization, NormalizationOptions(mean: [127.5], std: [127.5]))
    }
}
