import Foundation
import TensorCore

/// A parsed and verified `.tflite` model (schema.fbs `Model`).
///
/// Loading decodes the whole FlatBuffer through a bounds-checked reader: every offset, vtable,
/// vector, string and nested table is checked against the bytes, and every index (operator code,
/// tensor, buffer, subgraph) against its table, before anything is returned. A violation is a
/// ``ModelFormatError``. Weights are not copied: ``Buffer`` holds byte ranges into ``data``.
///
/// The value is immutable and `Sendable`, so one model can be shared between threads.
public struct TFLiteModel: Sendable {
    /// The model bytes (mapped or copied); weights are read from here in place.
    public let data: ModelData
    /// Schema version (3 for current models).
    public let version: UInt32
    public let description: String?
    public let operatorCodes: [OperatorCode]
    public let subgraphs: [Subgraph]
    public let buffers: [Buffer]
    public let metadataEntries: [MetadataEntry]
    public let signatureDefs: [SignatureDef]

    /// The newest schema version this reader understands.
    public static let supportedSchemaVersion: UInt32 = 3

    /// Maps and verifies the model file at `path`.
    public init(contentsOfFile path: String) throws {
        try self.init(modelData: try ModelData(contentsOfFile: path))
    }

    /// Copies and verifies model bytes.
    public init(data: Data) throws {
        try self.init(modelData: try ModelData(data))
    }

    /// Verifies model bytes already held in a ``ModelData``.
    public init(modelData: ModelData) throws {
        data = modelData
        let reader = FlatBufferReader(modelData.bytes, name: "model")
        // TFLite files carry the identifier "TFL3"; older writers omitted it, so accept both.
        let identifierOK = modelData.count >= 8 && (4..<8).map { modelData.baseAddress.load(fromByteOffset: $0, as: UInt8.self) } == Array("TFL3".utf8)
        let root = try reader.root(fileIdentifier: identifierOK ? "TFL3" : nil)

        version = try root.scalar(0, default: UInt32(0))
        guard version <= TFLiteModel.supportedSchemaVersion else {
            throw ModelFormatError(.unsupported, "The model uses schema version \(version); this version of EdgeVision reads up to \(TFLiteModel.supportedSchemaVersion).")
        }
        description = try root.string(3, "model description")
        operatorCodes = try root.tables(1, "operator_codes") { t, i in try OperatorCode(t, index: i) } ?? []
        buffers = try root.tables(4, "buffers") { t, i in try Buffer(t, index: i, fileSize: modelData.count) } ?? []
        let subgraphs = try root.tables(2, "subgraphs") { t, i in try Subgraph(t, index: i) } ?? []
        guard !subgraphs.isEmpty else { throw ModelFormatError.structure("it has no subgraph") }
        self.subgraphs = subgraphs
        metadataEntries = try root.tables(6, "metadata") { t, _ in
            MetadataEntry(name: try t.string(0, "metadata name") ?? "", buffer: Int(try t.scalar(1, default: UInt32(0))))
        } ?? []
        signatureDefs = try root.tables(7, "signature_defs") { t, i in try SignatureDef(t, index: i) } ?? []

        try validateIndices()
    }

    private func validateIndices() throws {
        for (s, subgraph) in subgraphs.enumerated() {
            let tensorCount = subgraph.tensors.count
            // Buffer 0 is the empty sentinel; files without any buffer still name it (TFLite accepts that).
            for (t, tensor) in subgraph.tensors.enumerated() where tensor.buffer >= buffers.count && tensor.buffer != 0 {
                throw ModelFormatError.structure("tensor \(t) of subgraph \(s) refers to buffer \(tensor.buffer), but there are \(buffers.count) buffers")
            }
            for index in subgraph.inputs + subgraph.outputs where index < 0 || index >= tensorCount {
                throw ModelFormatError.structure("subgraph \(s) names tensor \(index) as an input or output, but it has \(tensorCount) tensors")
            }
            for (o, op) in subgraph.operators.enumerated() {
                guard op.opcodeIndex < operatorCodes.count else {
                    throw ModelFormatError.structure("operator \(o) of subgraph \(s) uses operator code \(op.opcodeIndex), but there are \(operatorCodes.count)")
                }
                // -1 marks an omitted optional input.
                for index in op.inputs + op.outputs + op.intermediates where index < -1 || index >= tensorCount {
                    throw ModelFormatError.structure("operator \(o) (\(operatorCodes[op.opcodeIndex].displayName)) of subgraph \(s) names tensor \(index), but the subgraph has \(tensorCount) tensors")
                }
                if let range = op.customOptions, range.upperBound > data.count {
                    throw ModelFormatError.bounds("custom options of operator \(o)", offset: range.lowerBound, size: range.count, limit: data.count)
                }
            }
        }
        for entry in metadataEntries where entry.buffer >= buffers.count {
            throw ModelFormatError.structure("metadata '\(entry.name)' refers to buffer \(entry.buffer), but there are \(buffers.count) buffers")
        }
        for (i, signature) in signatureDefs.enumerated() where signature.subgraphIndex >= subgraphs.count {
            throw ModelFormatError.structure("signature \(i) refers to subgraph \(signature.subgraphIndex), but there are \(subgraphs.count)")
        }
    }

    /// The main subgraph (index 0), which runs when the model is invoked.
    public var mainSubgraph: Subgraph { subgraphs[0] }

    /// The operator code of an operator (its index was verified at load).
    public func operatorCode(of op: Operator) -> OperatorCode { operatorCodes[op.opcodeIndex] }

    /// The bytes of buffer `index`, or nil if it is out of range or empty. Valid while ``data`` lives.
    public func bufferBytes(_ index: Int) -> UnsafeRawBufferPointer? {
        guard index >= 0, index < buffers.count, let range = buffers[index].range, !range.isEmpty else { return nil }
        return UnsafeRawBufferPointer(rebasing: data.bytes[range])
    }

    /// The bytes of an operator's custom options (empty if none).
    public func customOptions(of op: Operator) -> UnsafeRawBufferPointer {
        guard let range = op.customOptions, !range.isEmpty else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(rebasing: data.bytes[range])
    }
}

/// `OperatorCode`: which builtin or custom op an operator runs.
public struct OperatorCode: Sendable, Hashable {
    /// The builtin code: the larger of `builtin_code` and `deprecated_builtin_code`, as TFLite reads it.
    public let builtinCode: BuiltinOperator
    /// The custom op name when ``builtinCode`` is `CUSTOM`.
    public let customCode: String?
    public let version: Int

    init(_ t: FlatBufferTable, index: Int) throws {
        let deprecated: Int8 = try t.scalar(0, default: 0)
        let code: Int32 = try t.scalar(3, default: 0)
        builtinCode = BuiltinOperator(rawValue: max(Int32(deprecated), code))
        customCode = try t.string(1, "custom_code of operator code \(index)")
        version = Int(try t.scalar(2, default: Int32(1)))
    }

    public init(builtinCode: BuiltinOperator, customCode: String? = nil, version: Int = 1) {
        self.builtinCode = builtinCode
        self.customCode = customCode
        self.version = version
    }

    /// `CONV_2D` for builtins, `CUSTOM:<name>` for custom ops (the naming of the goldens' op counts).
    public var displayName: String {
        builtinCode == .custom ? "CUSTOM:\(customCode ?? "")" : builtinCode.name
    }
}

/// `SubGraph`: tensors, operators in execution order, and the graph's inputs and outputs.
public struct Subgraph: Sendable {
    public let name: String?
    public let tensors: [Tensor]
    public let inputs: [Int]
    public let outputs: [Int]
    public let operators: [Operator]

    init(_ t: FlatBufferTable, index: Int) throws {
        name = try t.string(4, "subgraph \(index) name")
        tensors = try t.tables(0, "tensors of subgraph \(index)") { tt, i in try Tensor(tt, index: i) } ?? []
        inputs = try t.int32s(1, "inputs of subgraph \(index)")?.map(Int.init) ?? []
        outputs = try t.int32s(2, "outputs of subgraph \(index)")?.map(Int.init) ?? []
        operators = try t.tables(3, "operators of subgraph \(index)") { ot, i in try Operator(ot, index: i) } ?? []
    }
}

/// `Tensor`: type, shape, buffer and quantization of one tensor.
public struct Tensor: Sendable {
    public let name: String
    public let type: ElementType
    /// Static shape; -1 never appears here in valid files (see ``shapeSignature``).
    public let shape: [Int]
    /// Shape with -1 for dynamic dimensions, when the converter recorded one.
    public let shapeSignature: [Int]?
    /// Index into the model's buffers; buffer 0 is the empty sentinel (no constant data).
    public let buffer: Int
    /// Variable tensors hold state across invocations.
    public let isVariable: Bool
    /// Quantization parameters, or nil when the tensor is not quantized.
    public let quantization: QuantizationParameters?
    /// Whether the tensor is stored sparse (not supported by the engine).
    public let isSparse: Bool

    init(_ t: FlatBufferTable, index: Int) throws {
        name = try t.string(3, "name of tensor \(index)") ?? ""
        let code: Int8 = try t.scalar(1, default: 0)
        guard let type = ElementType(tfliteCode: code) else {
            throw ModelFormatError.structure("tensor \(index) ('\(name)') has unknown type code \(code)")
        }
        self.type = type
        shape = try t.int32s(0, "shape of tensor \(index)")?.map(Int.init) ?? []
        shapeSignature = try t.int32s(7, "shape_signature of tensor \(index)")?.map(Int.init)
        buffer = Int(try t.scalar(2, default: UInt32(0)))
        isVariable = try t.bool(5, default: false)
        isSparse = try t.offsetTarget(6, "sparsity of tensor \(index)") != nil
        if let q = try t.table(4, "quantization of tensor \(index)") {
            let scales = try q.floats(2, "scales of tensor \(index)") ?? []
            let zeroPoints = try q.int64s(3, "zero points of tensor \(index)") ?? []
            let dimension = Int(try q.scalar(6, default: Int32(0)))
            let minimum = try q.floats(0, "min of tensor \(index)") ?? []
            let maximum = try q.floats(1, "max of tensor \(index)") ?? []
            quantization = scales.isEmpty ? nil
                : QuantizationParameters(scales: scales, zeroPoints: zeroPoints, quantizedDimension: dimension, min: minimum, max: maximum)
        } else {
            quantization = nil
        }
    }
}

/// `Buffer`: constant data, either inline in the FlatBuffer or (newer schemas, models over 2 GB)
/// at an offset in the file.
public struct Buffer: Sendable {
    /// Byte range of the data within the model bytes; nil for an empty buffer.
    public let range: Range<Int>?

    init(_ t: FlatBufferTable, index: Int, fileSize: Int) throws {
        let offset: UInt64 = try t.scalar(1, default: 0)
        let size: UInt64 = try t.scalar(2, default: 0)
        if offset > 1 {
            guard offset <= UInt64(fileSize), size <= UInt64(fileSize) - offset else {
                throw ModelFormatError.bounds("data of buffer \(index)", offset: Int(clamping: offset), size: Int(clamping: size), limit: fileSize)
            }
            range = Int(offset)..<Int(offset + size)
        } else {
            range = try t.byteRange(0, "data of buffer \(index)")
        }
    }
}

/// `Operator`: one node of the graph.
public struct Operator: Sendable {
    public let opcodeIndex: Int
    /// Tensor indices; -1 marks an omitted optional input.
    public let inputs: [Int]
    public let outputs: [Int]
    public let intermediates: [Int]
    public let builtinOptions: BuiltinOptions
    /// Byte range of the custom options within the model bytes (FlexBuffers for most custom ops).
    public let customOptions: Range<Int>?
    public let mutatingVariableInputs: [Bool]

    init(_ t: FlatBufferTable, index: Int) throws {
        opcodeIndex = Int(try t.scalar(0, default: UInt32(0)))
        inputs = try t.int32s(1, "inputs of operator \(index)")?.map(Int.init) ?? []
        outputs = try t.int32s(2, "outputs of operator \(index)")?.map(Int.init) ?? []
        intermediates = try t.int32s(8, "intermediates of operator \(index)")?.map(Int.init) ?? []
        let optionsType: UInt8 = try t.scalar(3, default: 0)
        builtinOptions = try BuiltinOptions.decode(type: optionsType, table: try t.table(4, "builtin options of operator \(index)"), operatorIndex: index)
        let largeOffset: UInt64 = try t.scalar(9, default: 0)
        let largeSize: UInt64 = try t.scalar(10, default: 0)
        if largeOffset > 1 {
            guard largeOffset <= UInt64(t.reader.count), largeSize <= UInt64(t.reader.count) - largeOffset else {
                throw ModelFormatError.bounds("large custom options of operator \(index)", offset: Int(clamping: largeOffset), size: Int(clamping: largeSize), limit: t.reader.count)
            }
            customOptions = Int(largeOffset)..<Int(largeOffset + largeSize)
        } else {
            customOptions = try t.byteRange(5, "custom options of operator \(index)")
        }
        mutatingVariableInputs = try t.vector(7, elementSize: 1, "mutating_variable_inputs of operator \(index)")
            .map { try $0.integers(UInt8.self, "mutating_variable_inputs").map { $0 != 0 } } ?? []
    }
}

/// A `Metadata` entry of the model: a named buffer (e.g. `TFLITE_METADATA`, `min_runtime_version`).
public struct MetadataEntry: Sendable, Hashable {
    public let name: String
    public let buffer: Int
}

/// `SignatureDef`: named inputs and outputs of a subgraph.
public struct SignatureDef: Sendable {
    public struct TensorMap: Sendable, Hashable {
        public let name: String
        public let tensorIndex: Int
    }
    public let key: String?
    public let subgraphIndex: Int
    public let inputs: [TensorMap]
    public let outputs: [TensorMap]

    init(_ t: FlatBufferTable, index: Int) throws {
        key = try t.string(2, "signature_key of signature \(index)")
        subgraphIndex = Int(try t.scalar(4, default: UInt32(0)))
        func maps(_ slot: Int, _ what: String) throws -> [TensorMap] {
            try t.tables(slot, what) { m, _ in
                TensorMap(name: try m.string(0, "\(what) name") ?? "", tensorIndex: Int(try m.scalar(1, default: UInt32(0))))
            } ?? []
        }
        inputs = try maps(0, "inputs of signature \(index)")
        outputs = try maps(1, "outputs of signature \(index)")
    }
}
