import Foundation
import InferenceEngine
import MediaIO
import TFLiteFormat

/// One detected box in the upright image's pixel coordinates.
public struct DetectedBox: Sendable, Hashable {
    /// The box, in pixels of the upright image.
    public var rect: Rect
    /// The detector's class index.
    public var classIndex: Int
    /// The detection score (calibrated if the model says so).
    public var score: Float
    /// The class label from the model's metadata (nil when the model has none).
    public var label: String?

    /// A detection from its box, class, score and label.
    public init(rect: Rect, classIndex: Int, score: Float, label: String?) {
        self.rect = rect
        self.classIndex = classIndex
        self.score = score
        self.label = label
    }
}

/// The contract of an SSD-style detection model — the four outputs of TFLite_Detection_PostProcess
/// (boxes `[1, N, 4]`, classes `[1, N]`, scores `[1, N]`, count `[1]`) — and decoding them.
///
/// Output roles come from the metadata tensor names (`location`, `category`, `score`,
/// `number of detections`) when present, else the standard order. Box coordinates follow the
/// metadata's BoundingBoxProperties (index order, boundaries, ratio) when present, else TFLite's
/// `ymin, xmin, ymax, xmax` normalized.
public struct DetectorSpec: Sendable {
    /// The model output holding the boxes.
    public let boxesOutput: Int
    /// The model output holding the class indices.
    public let classesOutput: Int
    /// The model output holding the scores.
    public let scoresOutput: Int
    /// The model output holding the number of detections.
    public let countOutput: Int
    /// Positions of left, top, right, bottom within each box.
    public let boxIndex: [Int]
    /// Class names from the metadata's label file; nil without one.
    public let labels: [String]?
    /// Class names in the requested locale; nil when there is no such file.
    public let displayNames: [String]?
    /// The score threshold in the metadata, if any.
    public let metadataScoreThreshold: Float?
    /// The score calibration in the metadata, if any.
    public let calibration: ScoreCalibration?

    /// Reads the detection contract of `model`; display names come from the label files of `displayNamesLocale`.
    ///
    /// - Throws: ``VisionError`` `.incompatibleModel` unless the model has the four post-processing outputs.
    public init(model: TaskModel, displayNamesLocale: String = "en") throws {
        let outputs = model.engine.outputs
        guard outputs.count == 4 else {
            throw VisionError(.incompatibleModel,
                "A detection model must have the 4 outputs of TFLite_Detection_PostProcess (locations, classes, scores, number of detections); this one has \(outputs.count).")
        }
        let meta = model.metadata?.subgraphs.first?.outputTensors ?? []
        var roles = [0, 1, 2, 3]
        if meta.count == 4 {
            let names = meta.map { ($0.name ?? "").lowercased() }
            if let l = names.firstIndex(of: "location"), let c = names.firstIndex(of: "category"),
               let s = names.firstIndex(of: "score"), let n = names.firstIndex(of: "number of detections") {
                roles = [l, c, s, n]
            }
        }
        (boxesOutput, classesOutput, scoresOutput, countOutput) = (roles[0], roles[1], roles[2], roles[3])
        let boxShape = outputs[boxesOutput].shape.dimensions
        guard boxShape.count == 3, boxShape[0] == 1, boxShape[2] == 4,
              outputs[classesOutput].shape.dimensions == [1, boxShape[1]], outputs[scoresOutput].shape.dimensions == [1, boxShape[1]],
              outputs.allSatisfy({ $0.type == .float32 }) else {
            throw VisionError(.incompatibleModel,
                "The detection model's outputs are \(outputs.map { "\($0.type) \($0.shape)" }.joined(separator: ", ")); expected float32 [1,N,4], [1,N], [1,N], [1].")
        }
        var index = [1, 0, 3, 2]
        if boxesOutput < meta.count, case .boundingBox(let order, let type, let coordinates)? = meta[boxesOutput].content?.properties {
            guard type == .boundaries || type == .unknown, coordinates == .ratio else {
                throw VisionError(.incompatibleModel, "Only detection models with boundary boxes in ratio coordinates are supported.")
            }
            if order.count == 4, Set(order) == [0, 1, 2, 3] { index = order }
        }
        boxIndex = index
        let labelFiles = try model.labelFiles(forOutput: classesOutput, types: [.tensorValueLabels, .tensorAxisLabels])
        labels = labelFiles.first?.labels
        displayNames = labelFiles.first { $0.locale == displayNamesLocale }?.labels
        let scoreMeta = scoresOutput < meta.count ? meta[scoresOutput] : nil
        metadataScoreThreshold = scoreMeta?.scoreThresholding
        if let options = scoreMeta?.scoreCalibration {
            guard let file = scoreMeta?.associatedFiles.first(where: { $0.type == .tensorAxisScoreCalibration }),
                  let contents = try model.archive?.contents(ofFileNamed: file.name) else {
                throw VisionError(.incompatibleModel, "The model's metadata asks for score calibration but the calibration file is missing.")
            }
            calibration = try ScoreCalibration(options: options, file: contents, classCount: labels?.count ?? 0)
        } else {
            calibration = nil
        }
    }

    /// Decodes the outputs after an invoke into boxes in the upright image of `width` × `height`,
    /// calibrated, clipped to the image, with degenerate boxes dropped, sorted by descending score.
    public func detections(from interpreter: Interpreter, width: Int, height: Int) throws -> [DetectedBox] {
        let boxes = try interpreter.outputFloats(at: boxesOutput)
        let classes = try interpreter.outputFloats(at: classesOutput)
        let scores = try interpreter.outputFloats(at: scoresOutput)
        let count = try interpreter.outputFloats(at: countOutput).first ?? 0
        guard count.isFinite else { return [] }
        // Model outputs are untrusted floats: clamp before converting to Int (huge values trap).
        let limit = min(scores.count, classes.count, boxes.count / 4)
        let n = count > 0 ? Int(min(count, Float(limit))) : 0
        var result: [DetectedBox] = []
        for i in 0..<n {
            let b = boxes[(4 * i)..<(4 * i + 4)].map { $0 }
            let left = b[boxIndex[0]], top = b[boxIndex[1]], right = b[boxIndex[2]], bottom = b[boxIndex[3]]
            guard [left, top, right, bottom].allSatisfy(\.isFinite), scores[i].isFinite, classes[i].isFinite else { continue }
            let x0 = Double(min(max(left, 0), 1)) * Double(width), x1 = Double(min(max(right, 0), 1)) * Double(width)
            let y0 = Double(min(max(top, 0), 1)) * Double(height), y1 = Double(min(max(bottom, 0), 1)) * Double(height)
            guard x1 > x0, y1 > y0 else { continue }
            let classIndex = classes[i] >= 0 && classes[i] < 1e9 ? Int(classes[i]) : -1
            var score = scores[i]
            if let calibration { score = calibration.calibrate(score, classIndex: classIndex) }
            let label = labels.flatMap { classIndex >= 0 && classIndex < $0.count ? $0[classIndex] : nil }
            result.append(DetectedBox(rect: Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0), classIndex: classIndex, score: score, label: label))
        }
        result.sort { $0.score > $1.score }
        return result
    }
}

/// Class-agnostic non-maximum suppression: keeps the highest-scoring box of every group of boxes
/// overlapping by more than `iouThreshold`, whatever their classes.
public func suppressOverlaps(_ boxes: [DetectedBox], iouThreshold: Double) -> [DetectedBox] {
    var kept: [DetectedBox] = []
    for box in boxes.sorted(by: { $0.score > $1.score }) where !kept.contains(where: { $0.rect.iou(box.rect) > iouThreshold }) {
        kept.append(box)
    }
    return kept
}

/// ML Kit's "most prominent object", made explicit: an object that occupies a decent part of the
/// frame around its centre. prominence = sqrt(area fraction) × (1 − distance of the box centre from
/// the image centre / half the image diagonal) × detection score.
public func prominence(of rect: Rect, score: Float, width: Int, height: Int) -> Double {
    let w = Double(width), h = Double(height)
    guard w > 0, h > 0 else { return 0 }
    let areaFraction = min(1, rect.area / (w * h))
    let dx = (rect.x + rect.width / 2) - w / 2, dy = (rect.y + rect.height / 2) - h / 2
    let centrality = max(0, 1 - (dx * dx + dy * dy).squareRoot() / ((w * w + h * h).squareRoot() / 2))
    return areaFraction.squareRoot() * centrality * Double(score)
}
