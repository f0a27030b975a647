import Dispatch
import Foundation
import InferenceEngine
import MediaIO
import VisionCore

/// Detects and tracks objects (ML Kit's `ObjectDetector`), with coarse categories or a custom
/// classification model run on each object's crop.
///
/// Detection: the detection model's boxes above ``CommonObjectDetectorOptions/detectionScoreThreshold``,
/// suppressed across classes (IoU > 0.6, the usual `nms_iou_threshold` of SSD post-processing, so
/// this pass never removes an object the model's own class-agnostic NMS kept; it merges the
/// duplicates per-class NMS leaves), at most 5. Single-object mode reports the most prominent
/// object (see `prominence(of:score:width:height:)`), and in stream mode keeps reporting the same
/// tracked object while it stays visible.
///
/// Stream mode: reported tracking IDs are numbered from 0 in the order objects are first reported
/// (the tracker also follows objects that are not reported: beyond 5, or not the prominent one).
/// An object bridged over a missed detection is reported at its predicted place, unless that place
/// has left the picture.
///
/// Thread safety: single-image mode can be used from several threads at once. Stream mode tracks
/// objects across calls, so its calls are serialized in arrival order.
public final class ObjectDetector: @unchecked Sendable {
    static let maximumObjects = 5
    let detector: TaskModel
    let spec: DetectorSpec
    let mode: CommonObjectDetectorOptions.DetectorMode
    let multipleObjects: Bool
    let classification: Bool
    let scoreThreshold: Float
    let callbackQueue: DispatchQueue
    let custom: (model: TaskModel, classifier: ClassifierSpec, filter: ClassificationFilter)?
    private let streamLock = NSLock()
    private let tracker: ObjectTracker
    private var prominentID: Int?
    /// Tracker IDs of reported objects → their reported tracking IDs (entries of retired tracks are dropped).
    private var reportedIDs: [Int: Int] = [:]
    private var nextReportedID = 0

    /// A detector with `options` (ML Kit's `ObjectDetector.objectDetector(options:)`).
    ///
    /// - Throws: `VisionError`: a model is missing (`.modelNotFound`) or incompatible, or an option is invalid.
    public static func objectDetector(options: CommonObjectDetectorOptions) throws -> ObjectDetector {
        try ObjectDetector(options: options)
    }

    /// The file name of the default detection model.
    public static let defaultDetectionModelFileName = "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"

    init(options: CommonObjectDetectorOptions) throws {
        guard options.detectionScoreThreshold.isFinite, (0...1).contains(options.detectionScoreThreshold) else {
            throw VisionError(.invalidOptions, "detectionScoreThreshold must be in [0, 1], got \(options.detectionScoreThreshold).")
        }
        guard options.trackingMaximumMissedFrames >= 0, options.trackingMaximumMissedFrames <= 10_000 else {
            throw VisionError(.invalidOptions, "trackingMaximumMissedFrames must be in 0...10000, got \(options.trackingMaximumMissedFrames).")
        }
        let path = try options.detectionModel?.path ?? ModelDirectory.locate(ObjectDetector.defaultDetectionModelFileName)
        detector = try TaskModel(path: path)
        spec = try DetectorSpec(model: detector)
        mode = options.detectorMode
        multipleObjects = options.shouldEnableMultipleObjects
        classification = options.shouldEnableClassification
        scoreThreshold = options.detectionScoreThreshold
        callbackQueue = options.callbackQueue
        tracker = ObjectTracker(maximumMissedFrames: options.trackingMaximumMissedFrames)
        if let customOptions = options as? CustomObjectDetectorOptions {
            let model = try TaskModel(path: try RemoteModelResolver.path(local: customOptions.localModel, remote: customOptions.remoteModel, manager: customOptions.modelManager))
            let classifier = try ClassifierSpec(model: model)
            let threshold: Float
            if let value = customOptions.classificationConfidenceThreshold?.floatValue, (0...1).contains(value) {
                threshold = value
            } else {
                threshold = classifier.heads.first?.metadataScoreThreshold ?? 0
            }
            let count = customOptions.maxPerObjectLabelCount > 0 ? customOptions.maxPerObjectLabelCount : 10
            custom = (model, classifier, ClassificationFilter(scoreThreshold: threshold, maxResults: count))
        } else {
            custom = nil
        }
    }

    /// Detects objects in an image synchronously.
    public func results(in image: VisionImage) throws -> [Object] {
        let orientation = image.orientation
        let width = image.width, height = image.height
        var boxes = try detector.withInterpreter { interpreter -> [DetectedBox] in
            try ImagePreprocessor.write(image.pixelBuffer, orientation: orientation, spec: detector.imageInput, into: interpreter)
            interpreter.invoke()
            return try spec.detections(from: interpreter, width: width, height: height)
        }
        boxes = suppressOverlaps(boxes.filter { $0.score >= scoreThreshold }, iouThreshold: 0.6)
        if boxes.count > ObjectDetector.maximumObjects { boxes.removeLast(boxes.count - ObjectDetector.maximumObjects) }

        var selected: [(rect: Rect, detection: DetectedBox?, id: Int?)]
        switch mode {
        case .singleImage:
            selected = boxes.map { ($0.rect, $0, nil) }
            if !multipleObjects {
                selected = Array(selected.max { prominence(of: $0.rect, score: $0.detection?.score ?? 0, width: width, height: height)
                    < prominence(of: $1.rect, score: $1.detection?.score ?? 0, width: width, height: height) }.map { [$0] } ?? [])
            }
        case .stream:
            streamLock.lock()
            let allTracks = tracker.update(boxes)
            let live = Set(allTracks.map(\.id))
            reportedIDs = reportedIDs.filter { live.contains($0.key) }
            // A bridged object predicted outside the picture stays in the tracker (it may come back)
            // but is not reported: its frame would be empty.
            let tracks = allTracks.filter { $0.rect.clipped(width: width, height: height).area > 0 }
            if multipleObjects {
                selected = tracks.prefix(ObjectDetector.maximumObjects).map { ($0.rect, $0.detection, $0.id) }
            } else {
                // Stay with the object reported before while it is tracked; else the most prominent.
                let current = tracks.first { $0.id == prominentID }
                let best = current ?? tracks.max { prominence(of: $0.rect, score: $0.detection?.score ?? 0, width: width, height: height)
                    < prominence(of: $1.rect, score: $1.detection?.score ?? 0, width: width, height: height) }
                prominentID = best?.id
                selected = best.map { [($0.rect, $0.detection, $0.id)] } ?? []
            }
            selected = selected.map { entry in
                guard let trackID = entry.id else { return entry }
                if let id = reportedIDs[trackID] { return (entry.rect, entry.detection, id) }
                reportedIDs[trackID] = nextReportedID
                nextReportedID += 1
                return (entry.rect, entry.detection, nextReportedID - 1)
            }
            streamLock.unlock()
        }
        return try selected.map { entry in
            let rect = entry.rect.clipped(width: width, height: height)
            let labels = classification ? try self.labels(for: rect, detection: entry.detection, image: image) : []
            return Object(frame: CGRect(x: rect.x, y: rect.y, width: rect.width, height: rect.height),
                          trackingID: entry.id.map { NSNumber(value: $0) }, labels: labels)
        }
    }

    /// Labels of one object: the custom model's labels on its crop, or the coarse category of the
    /// detector's class.
    func labels(for rect: Rect, detection: DetectedBox?, image: VisionImage) throws -> [ObjectLabel] {
        if let custom {
            guard rect.width >= 1, rect.height >= 1 else { return [] }
            let orientation = image.orientation
            let stored = orientation.storedRect(rect, width: image.pixelBuffer.width, height: image.pixelBuffer.height)
            let w = Double(image.pixelBuffer.width), h = Double(image.pixelBuffer.height)
            let roi = ImagePreprocessor.RegionOfInterest(x: max(0, stored.x / w), y: max(0, stored.y / h),
                                                         width: min(stored.width / w, 1 - max(0, stored.x / w)),
                                                         height: min(stored.height / h, 1 - max(0, stored.y / h)))
            return try custom.model.withInterpreter { interpreter in
                try ImagePreprocessor.write(image.pixelBuffer, orientation: orientation, roi: roi, spec: custom.model.imageInput, into: interpreter)
                interpreter.invoke()
                guard let head = custom.classifier.heads.first else { return [] }
                let scores = try interpreter.outputFloats(at: head.outputIndex)
                return custom.classifier.rank(scores: scores, head: head, filter: custom.filter).categories.map {
                    ObjectLabel(text: $0.categoryName ?? "", confidence: $0.score, index: $0.index)
                }
            }
        }
        guard let detection, let label = detection.label, let category = CoarseCategory(cocoLabel: label) else { return [] }
        return [ObjectLabel(text: category.text, confidence: detection.score, index: category.rawValue)]
    }

    /// Forgets tracked objects (start of a new stream); new objects continue with new IDs.
    public func resetTracking() {
        streamLock.lock()
        tracker.reset()
        prominentID = nil
        reportedIDs = [:]
        streamLock.unlock()
    }

    /// Detects on a background queue; `completion` runs on the options' callback queue.
    public func process(_ image: VisionImage, completion: @escaping @Sendable ([Object]?, Error?) -> Void) {
        let queue = callbackQueue
        DispatchQueue.global(qos: .userInitiated).async {
            do {
                let objects = try self.results(in: image)
                queue.async { completion(objects, nil) }
            } catch {
                queue.async { completion(nil, error) }
            }
        }
    }

    /// Detects without blocking the caller's thread.
    public func process(_ image: VisionImage) async throws -> [Object] {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                do { continuation.resume(returning: try self.results(in: image)) } catch { continuation.resume(throwing: error) }
            }
        }
    }
}

extension Rect {
    /// The part of the rectangle inside a `width` × `height` image.
    func clipped(width: Int, height: Int) -> Rect {
        let x0 = min(max(x, 0), Double(width)), y0 = min(max(y, 0), Double(height))
        let x1 = min(max(maxX, 0), Double(width)), y1 = min(max(maxY, 0), Double(height))
        return Rect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
    }
}
