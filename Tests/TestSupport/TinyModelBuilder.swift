import Foundation

/// Builds small, valid TFLite models (schema.fbs) for tests: one subgraph with tensors (type, shape,
/// constant data, quantization), operator codes (builtin or custom), operators (inputs, outputs,
/// builtin options, custom options), subgraph inputs/outputs and optional metadata buffers.
///
/// Buffer 0 is the empty sentinel; every tensor with data and every metadata entry gets its own
/// buffer, in that order. Labels in the output (see ``FlatBufferBuilder/Output/positions``):
/// `model`, `subgraph`, `tensor<i>`, `quantization<i>`, `opcode<i>`, `operator<i>`,
/// `options<i>` (builtin options of operator i), `buffer<i>`, `metadata<i>`, and the vectors
/// `operator_codes`, `subgraphs`, `buffers`, `tensors`, `operators`, `shape<i>`, `inputs`,
/// `outputs`, `op_inputs<i>`, `op_outputs<i>`, `custom_options<i>`, `buffer_data<i>`, `description`.
public struct TinyModelBuilder: Sendable {
    /// TFLite `TensorType` codes.
    public enum TensorType {
        public static let float32: Int8 = 0, float16: Int8 = 1, int32: Int8 = 2, uint8: Int8 = 3
        public static let int64: Int8 = 4, string: Int8 = 5, bool: Int8 = 6, int16: Int8 = 7, int8: Int8 = 9
    }

    /// A few TFLite `BuiltinOperator` codes.
    public enum Builtin {
        public static let add: Int32 = 0, averagePool2D: Int32 = 1, concatenation: Int32 = 2, conv2D: Int32 = 3
        public static let depthwiseConv2D: Int32 = 4, dequantize: Int32 = 6, fullyConnected: Int32 = 9
        public static let logistic: Int32 = 14, maxPool2D: Int32 = 17, mul: Int32 = 18, relu: Int32 = 19
        public static let relu6: Int32 = 21, reshape: Int32 = 22, softmax: Int32 = 25, custom: Int32 = 32
        public static let pad: Int32 = 34, mean: Int32 = 40, sub: Int32 = 41, quantize: Int32 = 114
    }

    /// TFLite `BuiltinOptions` union type codes for the options tables of common ops.
    public enum OptionsType {
        public static let conv2D: UInt8 = 1, depthwiseConv2D: UInt8 = 2, pool2D: UInt8 = 5
        public static let fullyConnected: UInt8 = 8, softmax: UInt8 = 9, concatenation: UInt8 = 10
        public static let add: UInt8 = 11, reshape: UInt8 = 17, mul: UInt8 = 21, sub: UInt8 = 28
    }

    public struct Quantization: Sendable {
        public var scales: [Float]
        public var zeroPoints: [Int64]
        public var quantizedDimension: Int32
        public var min: [Float]?
        public var max: [Float]?
        public init(scales: [Float], zeroPoints: [Int64], quantizedDimension: Int32 = 0, min: [Float]? = nil, max: [Float]? = nil) {
            self.scales = scales
            self.zeroPoints = zeroPoints
            self.quantizedDimension = quantizedDimension
            self.min = min
            self.max = max
        }
        public init(scale: Float, zeroPoint: Int64) { self.init(scales: [scale], zeroPoints: [zeroPoint]) }
    }

    public struct TensorSpec: Sendable {
        public var name: String
        public var type: Int8
        public var shape: [Int32]
        /// Constant data (little-endian element bytes), or nil for an activation/input tensor.
        public var data: [UInt8]?
        public var quantization: Quantization?
        public var isVariable: Bool
        public var shapeSignature: [Int32]?
        /// Overrides the buffer index (e.g. to point at a buffer that does not exist).
        public var bufferOverride: UInt32?
    }

    public struct OperatorCodeSpec: Sendable {
        public var builtinCode: Int32
        public var customCode: String?
        public var version: Int32
    }

    public struct OperatorSpec: Sendable {
        public var opcodeIndex: UInt32
        public var inputs: [Int32]
        public var outputs: [Int32]
        public var intermediates: [Int32]?
        /// `BuiltinOptions` union type (0 = none) and its table.
        public var builtinOptionsType: UInt8
        public var builtinOptions: FBTable?
        public var customOptions: [UInt8]?
    }

    public var version: UInt32 = 3
    public var description: String?
    public var subgraphName: String?
    public var tensors: [TensorSpec] = []
    public var operatorCodes: [OperatorCodeSpec] = []
    public var operators: [OperatorSpec] = []
    public var inputs: [Int32] = []
    public var outputs: [Int32] = []
    public var metadata: [(name: String, data: [UInt8])] = []
    public var fileIdentifier: String? = "TFL3"
    /// Alignment of constant buffer data (TFLite's converter uses 16).
    public var bufferAlignment = 16
    /// Bytes appended after the FlatBuffer (e.g. a ZIP archive of associated files).
    public var trailingBytes: [UInt8] = []

    public init() {}

    // MARK: Adding things

    /// Adds a tensor; returns its index.
    @discardableResult
    public mutating func addTensor(_ name: String, type: Int8 = TensorType.float32, shape: [Int32], data: [UInt8]? = nil,
                                   quantization: Quantization? = nil, isVariable: Bool = false,
                                   shapeSignature: [Int32]? = nil) -> Int32 {
        tensors.append(TensorSpec(name: name, type: type, shape: shape, data: data, quantization: quantization,
                                  isVariable: isVariable, shapeSignature: shapeSignature, bufferOverride: nil))
        return Int32(tensors.count - 1)
    }

    /// Adds (or reuses) a builtin operator code; returns its index.
    @discardableResult
    public mutating func addOperatorCode(builtin code: Int32, version: Int32 = 1) -> UInt32 {
        if let i = operatorCodes.firstIndex(where: { $0.builtinCode == code && $0.customCode == nil && $0.version == version }) {
            return UInt32(i)
        }
        operatorCodes.append(OperatorCodeSpec(builtinCode: code, customCode: nil, version: version))
        return UInt32(operatorCodes.count - 1)
    }

    /// Adds (or reuses) a custom operator code; returns its index.
    @discardableResult
    public mutating func addOperatorCode(custom name: String, version: Int32 = 1) -> UInt32 {
        if let i = operatorCodes.firstIndex(where: { $0.builtinCode == Builtin.custom && $0.customCode == name && $0.version == version }) {
            return UInt32(i)
        }
        operatorCodes.append(OperatorCodeSpec(builtinCode: Builtin.custom, customCode: name, version: version))
        return UInt32(operatorCodes.count - 1)
    }

    /// Adds an operator; `builtinOptions` are the options table's fields as (slot, value) pairs.
    public mutating func addOperator(opcodeIndex: UInt32, inputs: [Int32], outputs: [Int32],
                                     builtinOptionsType: UInt8 = 0, builtinOptions: [(slot: Int, value: FBScalar)] = [],
                                     customOptions: [UInt8]? = nil, intermediates: [Int32]? = nil) {
        let table: FBTable? = builtinOptionsType == 0 && builtinOptions.isEmpty ? nil : FBTable(builtinOptions)
        addOperator(opcodeIndex: opcodeIndex, inputs: inputs, outputs: outputs, builtinOptionsType: builtinOptionsType,
                    builtinOptionsTable: table, customOptions: customOptions, intermediates: intermediates)
    }

    /// Adds an operator with a full builtin options table (for options with vectors, e.g. RESHAPE's new_shape).
    public mutating func addOperator(opcodeIndex: UInt32, inputs: [Int32], outputs: [Int32],
                                     builtinOptionsType: UInt8, builtinOptionsTable: FBTable?,
                                     customOptions: [UInt8]? = nil, intermediates: [Int32]? = nil) {
        operators.append(OperatorSpec(opcodeIndex: opcodeIndex, inputs: inputs, outputs: outputs, intermediates: intermediates,
                                      builtinOptionsType: builtinOptionsType, builtinOptions: builtinOptionsTable,
                                      customOptions: customOptions))
    }

    /// Adds a metadata entry (a named buffer, e.g. `TFLITE_METADATA` or `min_runtime_version`).
    public mutating func addMetadata(name: String, data: [UInt8]) {
        metadata.append((name, data))
    }

    // MARK: Ready-made models

    /// `output = a + b` on float32 tensors of `shape` (inputs 0 and 1, output 2), with AddOptions.
    public static func addModel(shape: [Int32] = [1, 2, 2, 1]) -> TinyModelBuilder {
        var b = TinyModelBuilder()
        let a = b.addTensor("a", shape: shape)
        let c = b.addTensor("b", shape: shape)
        let out = b.addTensor("sum", shape: shape)
        let add = b.addOperatorCode(builtin: Builtin.add)
        b.addOperator(opcodeIndex: add, inputs: [a, c], outputs: [out], builtinOptionsType: OptionsType.add,
                      builtinOptions: [(0, .int8(0))])
        b.inputs = [a, c]
        b.outputs = [out]
        return b
    }

    /// A CUSTOM op named `name` with the given custom options, one float input and output.
    public static func customModel(name: String, customOptions: [UInt8]? = nil, shape: [Int32] = [1, 4]) -> TinyModelBuilder {
        var b = TinyModelBuilder()
        let x = b.addTensor("x", shape: shape)
        let y = b.addTensor("y", shape: shape)
        let code = b.addOperatorCode(custom: name)
        b.addOperator(opcodeIndex: code, inputs: [x], outputs: [y], customOptions: customOptions)
        b.inputs = [x]
        b.outputs = [y]
        return b
    }

    // MARK: Building

    /// The buffer index of each tensor (0 when it has no data) and the data of buffers 1...
    private func bufferAssignment() -> (tensorBuffers: [UInt32], buffers: [[UInt8]], metadataBuffers: [UInt32]) {
        var buffers: [[UInt8]] = []
        var tensorBuffers: [UInt32] = []
        for t in tensors {
            if let data = t.data {
                buffers.append(data)
                tensorBuffers.append(t.bufferOverride ?? UInt32(buffers.count))
            } else {
                tensorBuffers.append(t.bufferOverride ?? 0)
            }
        }
        var metadataBuffers: [UInt32] = []
        for entry in metadata {
            buffers.append(entry.data)
            metadataBuffers.append(UInt32(buffers.count))
        }
        return (tensorBuffers, buffers, metadataBuffers)
    }

    /// The `Model` root table (labelled), for tests that want to change it before serializing.
    public func modelTable() -> FBTable {
        let (tensorBuffers, bufferData, metadataBuffers) = bufferAssignment()

        var codes: [FBTable] = []
        for (i, c) in operatorCodes.enumerated() {
            var t = FBTable(label: "opcode\(i)")
            t.set(0, .int8(Int8(clamping: c.builtinCode)))
            if let name = c.customCode { t.set(1, string: name) }
            t.set(2, .int32(c.version))
            t.set(3, .int32(c.builtinCode))
            codes.append(t)
        }

        var tensorTables: [FBTable] = []
        for (i, spec) in tensors.enumerated() {
            var t = FBTable(label: "tensor\(i)")
            t.set(0, .vector(spec.shape, label: "shape\(i)"))
            t.set(1, .int8(spec.type))
            t.set(2, .uint32(tensorBuffers[i]))
            t.set(3, string: spec.name)
            if let q = spec.quantization {
                var qt = FBTable(label: "quantization\(i)")
                if let min = q.min { qt.set(0, .floats(min)) }
                if let max = q.max { qt.set(1, .floats(max)) }
                qt.set(2, .floats(q.scales))
                qt.set(3, .vector(q.zeroPoints))
                qt.set(6, .int32(q.quantizedDimension))
                t.set(4, table: qt)
            }
            if spec.isVariable { t.set(5, .bool(true)) }
            if let signature = spec.shapeSignature { t.set(7, .vector(signature)) }
            tensorTables.append(t)
        }

        var operatorTables: [FBTable] = []
        for (i, op) in operators.enumerated() {
            var t = FBTable(label: "operator\(i)")
            t.set(0, .uint32(op.opcodeIndex))
            t.set(1, .vector(op.inputs, label: "op_inputs\(i)"))
            t.set(2, .vector(op.outputs, label: "op_outputs\(i)"))
            if op.builtinOptionsType != 0 || op.builtinOptions != nil {
                t.set(3, .uint8(op.builtinOptionsType))
                var options = op.builtinOptions ?? FBTable()
                options.label = options.label ?? "options\(i)"
                t.set(4, table: options)
            }
            if let custom = op.customOptions {
                t.set(5, .bytes(custom, label: "custom_options\(i)"))
                t.set(6, .int8(0)) // FLEXBUFFERS
            }
            if let intermediates = op.intermediates { t.set(8, .vector(intermediates)) }
            operatorTables.append(t)
        }

        var subgraph = FBTable(label: "subgraph")
        subgraph.set(0, .tables(tensorTables, label: "tensors"))
        subgraph.set(1, .vector(inputs, label: "inputs"))
        subgraph.set(2, .vector(outputs, label: "outputs"))
        subgraph.set(3, .tables(operatorTables, label: "operators"))
        if let name = subgraphName { subgraph.set(4, string: name) }

        var bufferTables = [FBTable(label: "buffer0")]
        for (i, data) in bufferData.enumerated() {
            var t = FBTable(label: "buffer\(i + 1)")
            t.set(0, .bytes(data, alignment: bufferAlignment, label: "buffer_data\(i + 1)"))
            bufferTables.append(t)
        }

        var model = FBTable(label: "model")
        model.set(0, .uint32(version))
        model.set(1, .tables(codes, label: "operator_codes"))
        model.set(2, .tables([subgraph], label: "subgraphs"))
        if let description { model.set(3, string: description, label: "description") }
        if !metadata.isEmpty {
            model.set(5, .vector(metadataBuffers.map { Int32($0) }))
            model.set(6, .tables(metadata.enumerated().map { i, entry in
                var t = FBTable(label: "metadata\(i)")
                t.set(0, string: entry.name)
                t.set(1, .uint32(metadataBuffers[i]))
                return t
            }, label: "metadata"))
        }
        model.set(4, .tables(bufferTables, label: "buffers"))
        return model
    }

    /// Serializes the model (with ``trailingBytes`` appended).
    public func build() -> FlatBufferBuilder.Output {
        var output = FlatBufferBuilder.build(root: modelTable(), fileIdentifier: fileIdentifier)
        output.bytes += trailingBytes
        return output
    }

    /// The serialized model bytes.
    public var data: Data { build().data }
}
