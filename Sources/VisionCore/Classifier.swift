import Foundation
import InferenceEngine
import TensorCore
import TFLiteFormat

/// One category of a classification result.
public struct ClassifiedCategory: Sendable, Hashable {
    /// The class index in the model's output.
    public let index: Int
    /// The (dequantized, calibrated if the model says so) score.
    public let score: Float
    /// From the first label file (any locale); nil when the model has no labels.
    public let categoryName: String?
    /// From the label file of the requested locale; nil when there is none.
    public let displayName: String?
}

/// The result for one classification head.
public struct HeadResult: Sendable, Hashable {
    /// The head's position among the model's outputs.
    public let headIndex: Int
    /// The head's name from the metadata, if any.
    public let headName: String?
    /// The kept categories, best first (ties: lower index first).
    public let categories: [ClassifiedCategory]
}

/// How to filter and rank categories.
public struct ClassificationFilter: Sendable, Hashable {
    /// Keep categories with score >= threshold; nil = use each head's metadata threshold, else keep all.
    public var scoreThreshold: Float?
    /// Maximum categories per head; negative = all.
    public var maxResults: Int
    /// Keep only these category names (mutually exclusive with ``denylist``).
    public var allowlist: Set<String>
    /// Drop these category names.
    public var denylist: Set<String>

    /// A filter; the defaults keep every category.
    public init(scoreThreshold: Float? = nil, maxResults: Int = -1, allowlist: Set<String> = [], denylist: Set<String> = []) {
        self.scoreThreshold = scoreThreshold
        self.maxResults = maxResults
        self.allowlist = allowlist
        self.denylist = denylist
    }
}

/// The classification contract of a model and its post-processing, shared by ML Kit's image
/// labeler, MediaPipe's image classifier and the per-object classifier of object detection.
///
/// Model compatibility (ML Kit / MediaPipe / Task Library): every output is a head shaped
/// `[1, N]` or `[1, 1, 1, N]` of uint8, int8 or float32; either all outputs are quantized or none
/// (quantized scores are dequantized); when the metadata describes outputs it describes all of them;
/// a label file, when present, has exactly N lines.
public struct ClassifierSpec: Sendable {
    /// One classification output of the model.
    public struct Head: Sendable {
        /// The head's position among the heads.
        public let index: Int
        /// The model output the head reads.
        public let outputIndex: Int
        /// The head's name from the metadata, if any.
        public let name: String?
        /// Number of classes (N).
        public let classCount: Int
        /// Class names from the first label file; nil without labels.
        public let labels: [String]?
        /// Class names in the requested locale; nil when there is no such file.
        public let displayNames: [String]?
        /// The score threshold in the head's metadata, if any.
        public let metadataScoreThreshold: Float?
        /// The head's score calibration, if the metadata has one.
        public let calibration: ScoreCalibration?
    }

    /// The model's heads, in output order.
    public let heads: [Head]

    /// ML Kit's exact message for models whose first output is not 2-D or 4-D (detectors).
    public static func dimensionMessage(output: Int, rank: Int) -> String {
        "Unexpected number of dimensions for output index \(output): got \(rank)D, expected either 2D (BxN with B=1) or 4D (BxHxWxN with B=1, W=1, H=1)."
    }

    /// Reads the classification contract of `model`; display names come from the label files of `displayNamesLocale`.
    ///
    /// - Throws: ``VisionError`` `.incompatibleModel` when the outputs, labels or calibration do not fit the rules above.
    public init(model: TaskModel, displayNamesLocale: String = "en") throws {
        let outputs = model.engine.outputs
        guard !outputs.isEmpty else { throw VisionError(.incompatibleModel, "The model has no outputs.") }
        let quantized = outputs.map { $0.type != .float32 }
        guard quantized.allSatisfy({ $0 == quantized[0] }) else {
            throw VisionError(.incompatibleModel, "The model's outputs mix quantized and float tensors; a classifier's outputs must be all quantized or all float32.")
        }
        let outputMetadata = model.metadata?.subgraphs.first?.outputTensors ?? []
        if !outputMetadata.isEmpty, outputMetadata.count != outputs.count {
            throw VisionError(.incompatibleModel,
                "Mismatch between number of output tensors (\(outputs.count)) and output tensors metadata (\(outputMetadata.count)): the model's metadata is inconsistent.")
        }
        var heads: [Head] = []
        for (index, output) in outputs.enumerated() {
            let dims = output.shape.dimensions
            guard dims.count == 2 || dims.count == 4 else {
                throw VisionError(.incompatibleModel, ClassifierSpec.dimensionMessage(output: index, rank: dims.count))
            }
            guard dims[0] == 1, dims.count == 2 || (dims[1] == 1 && dims[2] == 1), let classes = dims.last, classes > 0 else {
                throw VisionError(.incompatibleModel,
                    "Output \(index) ('\(output.name)') has shape \(output.shape); a classification head must be [1, N] or [1, 1, 1, N].")
            }
            guard [.uint8, .int8, .float32].contains(output.type) else {
                throw VisionError(.incompatibleModel, "Output \(index) ('\(output.name)') has type \(output.type); expected uint8, int8 or float32 scores.")
            }
            let meta = index < outputMetadata.count ? outputMetadata[index] : nil
            let labelFiles = try model.labelFiles(forOutput: index, types: [.tensorAxisLabels])
            // MediaPipe reads the first TENSOR_AXIS_LABELS file the metadata names (category names)
            // and the first one of the locale (display names); a named file missing from the
            // archive is an error there, not a reason to fall back to another file.
            let named = meta?.associatedFiles.filter { $0.type == .tensorAxisLabels } ?? []
            for file in [named.first, named.first { $0.locale == displayNamesLocale }].compactMap({ $0 })
            where !labelFiles.contains(where: { $0.fileName == file.name }) {
                throw VisionError(.incompatibleModel,
                    "The model's metadata names label file '\(file.name)' for output \(index), but its associated-files archive does not contain it.")
            }
            let labels = labelFiles.first?.labels
            var localized = labelFiles.first { $0.locale == displayNamesLocale }?.labels
            if let list = labels, list.isEmpty {
                throw VisionError(.incompatibleModel, "The model's labels file for output \(index) is empty.")
            }
            if let list = labels, list.count != classes {
                throw VisionError(.incompatibleModel,
                    "The model's labels file for output \(index) has \(list.count) entries but the output has \(classes) classes.")
            }
            // MediaPipe's label_map_util: an empty display-names file gives no display names; any
            // other count than the labels' is an error.
            if localized?.isEmpty == true { localized = nil }
            if let list = localized, list.count != (labels?.count ?? classes) {
                throw VisionError(.incompatibleModel, "Mismatch between number of labels (\(labels?.count ?? classes)) and display names (\(list.count)).")
            }
            var calibration: ScoreCalibration?
            if let options = meta?.scoreCalibration {
                guard let file = meta?.associatedFiles.first(where: { $0.type == .tensorAxisScoreCalibration }),
                      let contents = try model.archive?.contents(ofFileNamed: file.name) else {
                    throw VisionError(.incompatibleModel, "The model's metadata asks for score calibration of output \(index) but the calibration file (TENSOR_AXIS_SCORE_CALIBRATION) is missing.")
                }
                calibration = try ScoreCalibration(options: options, file: contents, classCount: classes)
            }
            heads.append(Head(index: index, outputIndex: index, name: meta?.name, classCount: classes, labels: labels,
                              displayNames: localized, metadataScoreThreshold: meta?.scoreThresholding, calibration: calibration))
        }
        self.heads = heads
    }

    /// Checks filter options against the model (allow/deny lists need labels; they are exclusive).
    public func validate(_ filter: ClassificationFilter) throws {
        if !filter.allowlist.isEmpty, !filter.denylist.isEmpty {
            // MediaPipe's texts (classification_postprocessing_graph.cc), which its iOS API passes on.
            throw VisionError(.invalidOptions, "`category_allowlist` and `category_denylist` are mutually exclusive options.")
        }
        if (!filter.allowlist.isEmpty || !filter.denylist.isEmpty), heads.contains(where: { $0.labels == nil }) {
            throw VisionError(.invalidOptions, "Using `category_allowlist` or `category_denylist` requires labels to be present in the TFLite Model Metadata but none was found.")
        }
    }

    /// Reads every head's scores from the interpreter after an invoke and ranks them.
    public func results(from interpreter: Interpreter, filter: ClassificationFilter) throws -> [HeadResult] {
        try heads.map { head in
            let scores = try interpreter.outputFloats(at: head.outputIndex)
            return rank(scores: scores, head: head, filter: filter)
        }
    }

    /// Calibration, allow/deny filtering, thresholding (score >= threshold kept), sorting by
    /// descending score (ties: lower index first), top-k.
    public func rank(scores raw: [Float], head: Head, filter: ClassificationFilter) -> HeadResult {
        let threshold = filter.scoreThreshold ?? head.metadataScoreThreshold
        var categories: [ClassifiedCategory] = []
        categories.reserveCapacity(raw.count)
        for index in 0..<min(raw.count, head.classCount) {
            let name = head.labels?[index]
            if let name, !filter.allowlist.isEmpty, !filter.allowlist.contains(name) { continue }
            if let name, filter.denylist.contains(name) { continue }
            let score = head.calibration?.calibrate(raw[index], classIndex: index) ?? raw[index]
            if let threshold, score < threshold { continue }
            categories.append(ClassifiedCategory(index: index, score: score, categoryName: name, displayName: head.displayNames?[index]))
        }
        categories.sort { $0.score != $1.score ? $0.score > $1.score : $0.index < $1.index }
        if filter.maxResults >= 0, categories.count > filter.maxResults { categories.removeLast(categories.count - filter.maxResults) }
        return HeadResult(headIndex: head.index, headName: head.name, categories: categories)
    }
}

/// Sigmoid score calibration (MediaPipe / Task Library `ScoreCalibrationOptions` with a
/// `TENSOR_AXIS_SCORE_CALIBRATION` file of `scale,slope,offset[,min_score]` lines, one per class;
/// an empty line means that class is not calibrated and gets the default score).
public struct ScoreCalibration: Sendable, Hashable {
    /// One class's sigmoid parameters: `scale / (1 + exp(-(slope * f(x) + offset)))`.
    public struct Parameters: Sendable, Hashable {
        /// The sigmoid's scale, slope and offset.
        public let scale: Float, slope: Float, offset: Float
        /// Scores below this get the default score (optional fourth field).
        public let minimumScore: Float?
    }
    /// The transformation `f` applied to the raw score (identity, log, inverse logistic).
    public let transformation: ScoreCalibrationOptions.Transformation
    /// The score of uncalibrated classes and of scores below their minimum.
    public let defaultScore: Float
    /// One entry per class; nil for classes without calibration.
    public let parameters: [Parameters?]

    /// Parses a calibration file for `classCount` classes.
    ///
    /// - Throws: ``VisionError`` `.incompatibleModel` for a malformed line or too many lines.
    public init(options: ScoreCalibrationOptions, file: Data, classCount: Int) throws {
        transformation = options.transformation
        defaultScore = options.defaultScore
        let lines = LabelFile.lines(of: file)
        guard lines.count <= classCount || classCount == 0 else {
            throw VisionError(.incompatibleModel, "The score calibration file has \(lines.count) lines but the output has \(classCount) classes.")
        }
        parameters = try lines.enumerated().map { number, line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { return nil }
            let fields = trimmed.split(separator: ",").map { Float($0.trimmingCharacters(in: .whitespaces)) }
            guard fields.count == 3 || fields.count == 4, fields.allSatisfy({ $0 != nil }) else {
                throw VisionError(.incompatibleModel, "Line \(number + 1) of the score calibration file is '\(line)'; expected 'scale,slope,offset' or 'scale,slope,offset,min_score'.")
            }
            let v = fields.compactMap { $0 }
            guard v[0] >= 0 else {
                throw VisionError(.incompatibleModel, "Line \(number + 1) of the score calibration file has a negative scale.")
            }
            return Parameters(scale: v[0], slope: v[1], offset: v[2], minimumScore: v.count == 4 ? v[3] : nil)
        }
    }

    /// The calibrated score of class `classIndex`.
    public func calibrate(_ score: Float, classIndex: Int) -> Float {
        guard classIndex < parameters.count, let p = parameters[classIndex] else { return defaultScore }
        if let minimum = p.minimumScore, score < minimum { return defaultScore }
        let transformed: Float
        switch transformation {
        case .identity: transformed = score
        case .log: transformed = Foundation.log(score)
        case .inverseLogistic: transformed = Foundation.log(score) - Foundation.log(1 - score)
        }
        let x = transformed * p.slope + p.offset
        if x >= 0 { return p.scale / (1 + Foundation.exp(-x)) }
        let e = Foundation.exp(x)
        return p.scale * e / (1 + e)
    }
}
