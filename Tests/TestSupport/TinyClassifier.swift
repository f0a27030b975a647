import Foundation

/// Generates tiny image-classification models with TFLite metadata and associated files, so tests
/// can exercise every metadata-dependent rule of ML Kit / MediaPipe classifiers (labels, locales,
/// score thresholds, score calibration, several heads, normalization) with scores known in advance.
///
/// The graph, for an `[1, height, width, 3]` input:
/// - uint8 input (quantization scale 1, zero point 0): `DEQUANTIZE` → float pixels `p` (0...255);
///   float32 input: the normalized values `(p - mean) / std` directly;
/// - per head: `FULLY_CONNECTED` (float weights `[N, height*width*3]`, bias `[N]`) → optional
///   `SOFTMAX` (beta 1) → optional `RESHAPE` to `[1, 1, 1, N]`.
///   With zero weights (the default) each head's output is its ``Head/scores`` (before softmax),
///   whatever the image.
/// - a head with ``Head/quantizedOutput`` (uint8 input only) is a uint8 `FULLY_CONNECTED` straight
///   from the input: weights quantized with scale 1/256 (zero point 128, so |w| < 0.5), bias with
///   scale 1/256, output scale 1/256, zero point 0: the output is `round(256 * score)` in quantized
///   units, i.e. the score rounded to a multiple of 1/256.
///
/// Metadata (`TFLITE_METADATA`, identifier "M001") describes the input (RGB image properties and
/// NormalizationOptions when given) and every output head (name, ScoreThresholdingOptions,
/// ScoreCalibrationOptions, associated label and calibration files); the files are written to a ZIP
/// archive (stored entries) appended to the model.
public struct TinyClassifier: Sendable {
    public enum InputType: Sendable { case uint8, float32 }

    /// An associated file of an output tensor.
    public struct File: Sendable {
        /// AssociatedFileType: 2 = TENSOR_AXIS_LABELS, 4 = TENSOR_AXIS_SCORE_CALIBRATION.
        public static let tensorAxisLabels: Int8 = 2, tensorAxisScoreCalibration: Int8 = 4
        public var name: String
        public var type: Int8
        public var locale: String?
        /// The file's lines (written joined by "\n" with a trailing "\n").
        public var lines: [String]
        /// When false the metadata names the file but the archive does not contain it.
        public var inArchive: Bool
        public init(name: String, type: Int8 = File.tensorAxisLabels, locale: String? = nil, lines: [String], inArchive: Bool = true) {
            self.name = name
            self.type = type
            self.locale = locale
            self.lines = lines
            self.inArchive = inArchive
        }
        public var contents: [UInt8] { Array((lines.joined(separator: "\n") + "\n").utf8) }
    }

    /// ScoreCalibrationOptions of a head (its file is one of the head's ``Head/files`` of type
    /// TENSOR_AXIS_SCORE_CALIBRATION).
    public struct Calibration: Sendable {
        /// ScoreTransformationType: 0 IDENTITY, 1 LOG, 2 INVERSE_LOGISTIC.
        public var transformation: Int8
        public var defaultScore: Float
        public init(transformation: Int8 = 0, defaultScore: Float = 0) {
            self.transformation = transformation
            self.defaultScore = defaultScore
        }
    }

    /// One classification head (one output tensor).
    public struct Head: Sendable {
        /// The output tensor metadata `name` (MediaPipe's head name); nil leaves it out.
        public var name: String?
        /// The output tensor's name in the model.
        public var tensorName: String
        /// The FULLY_CONNECTED bias: the head's output (before softmax) when ``weights`` are zero.
        public var scores: [Float]
        /// Weights `[N][height * width * 3]` over the input values (pixels for uint8 inputs,
        /// normalized values for float inputs), row-major HWC; nil = zero.
        public var weights: [[Float]]?
        public var softmax: Bool
        public var quantizedOutput: Bool
        /// Output shaped `[1, 1, 1, N]` instead of `[1, N]`.
        public var fourDimensional: Bool
        /// Associated files of the output tensor, in metadata order.
        public var files: [File]
        /// ScoreThresholdingOptions.global_score_threshold.
        public var scoreThreshold: Float?
        public var calibration: Calibration?

        public init(name: String? = nil, tensorName: String = "scores", scores: [Float], weights: [[Float]]? = nil,
                    softmax: Bool = false, quantizedOutput: Bool = false, fourDimensional: Bool = false,
                    files: [File] = [], scoreThreshold: Float? = nil, calibration: Calibration? = nil) {
            self.name = name
            self.tensorName = tensorName
            self.scores = scores
            self.weights = weights
            self.softmax = softmax
            self.quantizedOutput = quantizedOutput
            self.fourDimensional = fourDimensional
            self.files = files
            self.scoreThreshold = scoreThreshold
            self.calibration = calibration
        }

        /// A head with one label file `labels.txt` (no locale).
        public init(name: String? = nil, scores: [Float], labels: [String]) {
            self.init(name: name, scores: scores, files: [File(name: "labels.txt", lines: labels)])
        }
    }

    public var width: Int
    public var height: Int
    public var inputType: InputType
    /// NormalizationOptions of the input (mean, std); also applied to float inputs by the task.
    public var normalization: (mean: [Float], std: [Float])?
    public var heads: [Head]
    /// When false the model has no TFLITE_METADATA (and no archive).
    public var includesMetadata: Bool
    /// When false the metadata has no output tensor metadata (so no labels, thresholds, ...).
    public var includesOutputMetadata: Bool
    public var minParserVersion: String

    public init(width: Int = 2, height: Int = 2, inputType: InputType = .uint8,
                normalization: (mean: [Float], std: [Float])? = nil, heads: [Head],
                includesMetadata: Bool = true, includesOutputMetadata: Bool = true, minParserVersion: String = "1.0.0") {
        self.width = width
        self.height = height
        self.inputType = inputType
        self.normalization = normalization
        self.heads = heads
        self.includesMetadata = includesMetadata
        self.includesOutputMetadata = includesOutputMetadata
        self.minParserVersion = minParserVersion
    }

    /// Number of input values (height × width × 3).
    public var inputSize: Int { width * height * 3 }

    // MARK: Building

    /// The model's graph (without metadata).
    public func graph() -> TinyModelBuilder {
        typealias B = TinyModelBuilder
        var b = TinyModelBuilder()
        let imageShape: [Int32] = [1, Int32(height), Int32(width), 3]
        let isUInt8 = inputType == .uint8
        let input = b.addTensor("image", type: isUInt8 ? B.TensorType.uint8 : B.TensorType.float32, shape: imageShape,
                                quantization: isUInt8 ? .init(scale: 1, zeroPoint: 0) : nil)
        b.inputs = [input]
        var floatInput: Int32?
        func floatPixels(_ b: inout TinyModelBuilder) -> Int32 {
            if let floatInput { return floatInput }
            if !isUInt8 { floatInput = input; return input }
            let pixels = b.addTensor("pixels", shape: imageShape)
            let code = b.addOperatorCode(builtin: B.Builtin.dequantize)
            b.addOperator(opcodeIndex: code, inputs: [input], outputs: [pixels])
            floatInput = pixels
            return pixels
        }
        var outputs: [Int32] = []
        for (h, head) in heads.enumerated() {
            let n = head.scores.count
            let weights = head.weights ?? Array(repeating: Array(repeating: 0, count: inputSize), count: n)
            precondition(weights.count == n && weights.allSatisfy { $0.count == inputSize }, "TinyClassifier: weights must be [N][\(inputSize)]")
            let fc = b.addOperatorCode(builtin: B.Builtin.fullyConnected)
            let last = !head.softmax && !head.fourDimensional
            var current: Int32
            if head.quantizedOutput {
                precondition(isUInt8 && !head.softmax, "TinyClassifier: quantized heads need a uint8 input and no softmax")
                let q = b.addTensor("weights\(h)", type: B.TensorType.uint8, shape: [Int32(n), Int32(inputSize)],
                                    data: weights.flatMap { $0.map { UInt8(clamping: Int(($0 * 256).rounded()) + 128) } },
                                    quantization: .init(scale: 1.0 / 256, zeroPoint: 128))
                let bias = b.addTensor("bias\(h)", type: B.TensorType.int32, shape: [Int32(n)],
                                       data: FBBytes.littleEndian(head.scores.map { Int32(($0 * 256).rounded()) }),
                                       quantization: .init(scale: 1.0 / 256, zeroPoint: 0))
                current = b.addTensor(last ? head.tensorName : "logits\(h)", type: B.TensorType.uint8, shape: [1, Int32(n)],
                                      quantization: .init(scale: 1.0 / 256, zeroPoint: 0))
                b.addOperator(opcodeIndex: fc, inputs: [input, q, bias], outputs: [current],
                              builtinOptionsType: B.OptionsType.fullyConnected, builtinOptions: [(0, .int8(0))])
            } else {
                let source = floatPixels(&b)
                let w = b.addTensor("weights\(h)", shape: [Int32(n), Int32(inputSize)],
                                    data: FBBytes.littleEndian(weights.flatMap { $0.map(\.bitPattern) }))
                let bias = b.addTensor("bias\(h)", shape: [Int32(n)], data: FBBytes.littleEndian(head.scores.map(\.bitPattern)))
                current = b.addTensor(last ? head.tensorName : "logits\(h)", shape: [1, Int32(n)])
                b.addOperator(opcodeIndex: fc, inputs: [source, w, bias], outputs: [current],
                              builtinOptionsType: B.OptionsType.fullyConnected, builtinOptions: [(0, .int8(0))])
            }
            if head.softmax {
                let out = b.addTensor(head.fourDimensional ? "probabilities\(h)" : head.tensorName, shape: [1, Int32(n)])
                let code = b.addOperatorCode(builtin: B.Builtin.softmax)
                b.addOperator(opcodeIndex: code, inputs: [current], outputs: [out],
                              builtinOptionsType: B.OptionsType.softmax, builtinOptions: [(0, .float32(1))])
                current = out
            }
            if head.fourDimensional {
                let quantized = head.quantizedOutput
                let shape = b.addTensor("shape\(h)", type: B.TensorType.int32, shape: [4], data: FBBytes.littleEndian([Int32(1), 1, 1, Int32(n)]))
                let out = b.addTensor(head.tensorName, type: quantized ? B.TensorType.uint8 : B.TensorType.float32, shape: [1, 1, 1, Int32(n)],
                                      quantization: quantized ? .init(scale: 1.0 / 256, zeroPoint: 0) : nil)
                let code = b.addOperatorCode(builtin: B.Builtin.reshape)
                b.addOperator(opcodeIndex: code, inputs: [current, shape], outputs: [out], builtinOptionsType: B.OptionsType.reshape,
                              builtinOptionsTable: FBTable().with(0, .vector([Int32(1), 1, 1, Int32(n)])))
                current = out
            }
            outputs.append(current)
        }
        b.outputs = outputs
        return b
    }

    /// The ModelMetadata FlatBuffer bytes (file identifier "M001").
    public func metadataBytes() -> [UInt8] {
        var inputMeta = FBTable()
        inputMeta.set(0, string: "image")
        var content = FBTable()
        content.set(0, .uint8(2)) // ImageProperties
        content.set(1, table: FBTable([(0, .int8(1))])) // RGB
        inputMeta.set(3, table: content)
        if let normalization {
            var options = FBTable()
            options.set(0, .floats(normalization.mean))
            options.set(1, .floats(normalization.std))
            inputMeta.set(4, .tables([TinyClassifier.processUnit(type: 1, options: options)]))
        }
        var subgraph = FBTable()
        subgraph.set(0, string: "tiny classifier")
        subgraph.set(2, .tables([inputMeta]))
        if includesOutputMetadata {
            subgraph.set(3, .tables(heads.map { head in
                var t = FBTable()
                if let name = head.name { t.set(0, string: name) }
                t.set(1, string: "scores")
                var units: [FBTable] = []
                if let calibration = head.calibration {
                    units.append(TinyClassifier.processUnit(type: 2, options: FBTable([(0, .int8(calibration.transformation)), (1, .float32(calibration.defaultScore))])))
                }
                if let threshold = head.scoreThreshold {
                    units.append(TinyClassifier.processUnit(type: 3, options: FBTable([(0, .float32(threshold))])))
                }
                if !units.isEmpty { t.set(4, .tables(units)) }
                if !head.files.isEmpty {
                    t.set(6, .tables(head.files.map { file in
                        var f = FBTable()
                        f.set(0, string: file.name)
                        f.set(1, string: "associated file")
                        f.set(2, .int8(file.type))
                        if let locale = file.locale { f.set(3, string: locale) }
                        return f
                    }))
                }
                return t
            }))
        }
        var model = FBTable()
        model.set(0, string: "TinyClassifier")
        model.set(1, string: "A generated test classifier")
        model.set(2, string: "v1")
        model.set(3, .tables([subgraph]))
        model.set(4, string: "EdgeVision tests")
        model.set(7, string: minParserVersion)
        return FlatBufferBuilder.build(root: model, fileIdentifier: "M001").bytes
    }

    static func processUnit(type: UInt8, options: FBTable) -> FBTable {
        var unit = FBTable()
        unit.set(0, .uint8(type))
        unit.set(1, table: options)
        return unit
    }

    /// The associated files archive (nil when no head has files).
    public func archiveBytes(baseOffset: Int = 0) -> [UInt8]? {
        var seen = Set<String>()
        var entries: [TinyZip.Entry] = []
        for head in heads where includesOutputMetadata {
            for file in head.files where file.inArchive && seen.insert(file.name).inserted {
                entries.append(TinyZip.Entry(name: file.name, contents: file.contents))
            }
        }
        return entries.isEmpty ? nil : TinyZip.archive(entries, baseOffset: baseOffset)
    }

    /// The model file bytes: the graph, its metadata and the appended archive.
    public var data: Data {
        var builder = graph()
        if includesMetadata {
            builder.addMetadata(name: "TFLITE_METADATA", data: metadataBytes())
            if let archive = archiveBytes() { builder.trailingBytes = archive }
        }
        return builder.data
    }

    /// Writes the model to a new file in a fresh temporary directory and returns its path.
    public func write(named name: String = "tiny_classifier.tflite") throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("edgevision-tiny-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }
}
