import Foundation
import InferenceEngine
import MediaIO
import VisionCore

/// A detected object (MediaPipe's `Detection`).
public struct Detection: Sendable, Hashable {
    /// Categories of the object, best first (one per detection for SSD models).
    public let categories: [ResultCategory]
    /// The box in the upright image's pixel coordinates.
    public let boundingBox: CGRect
}

/// The result of a detection (MediaPipe's `ObjectDetectorResult`).
public struct ObjectDetectorResult: Sendable, Hashable {
    /// The detected objects, best first.
    public let detections: [Detection]
    /// The timestamp of the frame (0 in image mode).
    public let timestampInMilliseconds: Int
}

/// Receives live-stream results of an ``ObjectDetector`` on a private serial queue, in timestamp order.
public protocol ObjectDetectorLiveStreamDelegate: AnyObject, Sendable {
    /// Called with the result of a processed live-stream frame, or with its error (`result` nil).
    func objectDetector(_ objectDetector: ObjectDetector, didFinishDetection result: ObjectDetectorResult?,
                        timestampInMilliseconds: Int, error: Error?)
    /// Beyond MediaPipe: a live-stream frame was dropped because a newer one arrived while busy.
    func objectDetector(_ objectDetector: ObjectDetector, didDropFrameWithTimestampInMilliseconds timestamp: Int)
}

extension ObjectDetectorLiveStreamDelegate {
    /// Does nothing by default.
    public func objectDetector(_ objectDetector: ObjectDetector, didDropFrameWithTimestampInMilliseconds timestamp: Int) {}
}

/// Options of an ``ObjectDetector`` (MediaPipe's `ObjectDetectorOptions`).
public final class ObjectDetectorOptions: @unchecked Sendable {
    /// Where the model comes from.
    public var baseOptions = BaseOptions()
    /// Image (default), video or live-stream mode.
    public var runningMode: RunningMode = .image
    /// Locale of the display names (label files tagged with this locale); default "en".
    public var displayNamesLocale: String? = "en"
    /// Maximum detections; -1 (default) = all; 0 is an error.
    public var maxResults: Int = -1
    /// Detections scoring below this are dropped; nil uses the metadata threshold if any.
    public var scoreThreshold: Float?
    /// Keep only these category names (exclusive with ``categoryDenylist``).
    public var categoryAllowlist: [String] = []
    /// Drop these category names.
    public var categoryDenylist: [String] = []
    /// Receives live-stream results; held weakly, as in MediaPipe.
    public weak var objectDetectorLiveStreamDelegate: ObjectDetectorLiveStreamDelegate?
    /// Options with MediaPipe's defaults.
    public init() {}
}

/// Detects objects with a detection model that carries TFLite metadata (MediaPipe's
/// `ObjectDetector`): SSD-style models ending in TFLite_Detection_PostProcess, with labels.
/// Unlike ML Kit, custom detection models are welcome here.
public final class ObjectDetector: @unchecked Sendable {
    let model: TaskModel
    let spec: DetectorSpec
    let maxResults: Int
    let scoreThreshold: Float?
    let allowlist: Set<String>, denylist: Set<String>
    /// The running mode the detector was created for.
    public let runningMode: RunningMode
    private let timestamps = TimestampValidator()
    private var scheduler: LiveStreamScheduler<MPImage, ObjectDetectorResult>?
    private weak var delegate: ObjectDetectorLiveStreamDelegate?

    /// A detector in image mode with the model at `modelPath` and default options.
    ///
    /// - Throws: `VisionError` when the model is missing or incompatible.
    public convenience init(modelPath: String) throws {
        let options = ObjectDetectorOptions()
        options.baseOptions.modelAssetPath = modelPath
        try self.init(options: options)
    }

    /// A detector with `options`.
    ///
    /// - Throws: `VisionError`: invalid options (MediaPipe's texts), a missing model, or a model without metadata or of the wrong kind.
    public init(options: ObjectDetectorOptions) throws {
        guard options.maxResults != 0 else { throw VisionError(.invalidOptions, "Invalid max_results option: value must be != 0.") }
        guard options.categoryAllowlist.isEmpty || options.categoryDenylist.isEmpty else {
            throw VisionError(.invalidOptions, "`categoryAllowlist` and `categoryDenylist` are mutually exclusive options.")
        }
        let delegate = options.objectDetectorLiveStreamDelegate
        try options.runningMode.validate(hasDelegate: delegate != nil)
        model = try options.baseOptions.loadModel()
        guard model.metadata != nil else {
            throw VisionError(.incompatibleModel, "Object detection models require TFLite Model Metadata but none was found")
        }
        spec = try DetectorSpec(model: model, displayNamesLocale: options.displayNamesLocale ?? "en")
        if (!options.categoryAllowlist.isEmpty || !options.categoryDenylist.isEmpty), spec.labels == nil {
            throw VisionError(.invalidOptions, "Using `categoryAllowlist` or `categoryDenylist` requires labels to be present in the TFLite Model Metadata but none was found.")
        }
        maxResults = options.maxResults
        scoreThreshold = options.scoreThreshold
        allowlist = Set(options.categoryAllowlist)
        denylist = Set(options.categoryDenylist)
        runningMode = options.runningMode
        self.delegate = delegate
        if runningMode == .liveStream {
            scheduler = LiveStreamScheduler(
                // Weak, not unowned: the detector may be released while a frame waits or runs.
                work: { [weak self] image, timestamp in
                    guard let self else { throw VisionError(.invalidCall, "The object detector was released.") }
                    return try self.run(image, timestamp: timestamp)
                },
                deliver: { [weak self] result, timestamp in
                    guard let self, let delegate = self.delegate else { return }
                    switch result {
                    case .success(let value): delegate.objectDetector(self, didFinishDetection: value, timestampInMilliseconds: timestamp, error: nil)
                    case .failure(let error): delegate.objectDetector(self, didFinishDetection: nil, timestampInMilliseconds: timestamp, error: error)
                    }
                },
                dropped: { [weak self] timestamp in
                    guard let self, let delegate = self.delegate else { return }
                    delegate.objectDetector(self, didDropFrameWithTimestampInMilliseconds: timestamp)
                })
        }
    }

    // No waiting in deinit: the last reference may go away on the delivery queue (inside a delegate
    // callback), where waiting for that queue to drain would never return.

    /// Detects objects in a single image (image mode).
    ///
    /// - Throws: `VisionError` `.invalidCall` in another running mode.
    public func detect(image: MPImage) throws -> ObjectDetectorResult {
        try runningMode.check(expected: .image)
        return try run(image, timestamp: 0)
    }

    /// Detects objects in a decoded video frame (video mode); timestamps must strictly increase.
    ///
    /// - Throws: `VisionError` `.invalidCall` in another running mode or for a timestamp that does not increase.
    public func detect(videoFrame image: MPImage, timestampInMilliseconds: Int) throws -> ObjectDetectorResult {
        try runningMode.check(expected: .video)
        try timestamps.accept(timestampInMilliseconds)
        return try run(image, timestamp: timestampInMilliseconds)
    }

    /// Sends a live frame (live-stream mode); the result goes to the delegate. If the detector is busy,
    /// the frame waits, replacing (dropping) any older waiting frame.
    ///
    /// - Throws: `VisionError` `.invalidCall` in another running mode or for a timestamp that does not increase.
    public func detectAsync(image: MPImage, timestampInMilliseconds: Int) throws {
        try runningMode.check(expected: .liveStream)
        try timestamps.accept(timestampInMilliseconds)
        scheduler?.submit(image, timestamp: timestampInMilliseconds)
    }

    /// Blocks until every live-stream frame sent so far has been processed and delivered.
    public func waitUntilIdle() { scheduler?.waitUntilIdle() }

    func run(_ image: MPImage, timestamp: Int) throws -> ObjectDetectorResult {
        let boxes = try model.withInterpreter { interpreter -> [DetectedBox] in
            try ImagePreprocessor.write(image.pixelBuffer, orientation: image.orientation, spec: model.imageInput, into: interpreter)
            interpreter.invoke()
            return try spec.detections(from: interpreter, width: image.width, height: image.height)
        }
        let threshold = scoreThreshold ?? spec.metadataScoreThreshold
        var detections: [Detection] = []
        for box in boxes {
            if let threshold, box.score < threshold { continue }
            if !allowlist.isEmpty, !allowlist.contains(box.label ?? "") { continue }
            if let label = box.label, denylist.contains(label) { continue }
            let display = spec.displayNames.flatMap { box.classIndex >= 0 && box.classIndex < $0.count ? $0[box.classIndex] : nil }
            detections.append(Detection(
                categories: [ResultCategory(index: box.classIndex, score: box.score, categoryName: box.label, displayName: display)],
                boundingBox: CGRect(x: box.rect.x, y: box.rect.y, width: box.rect.width, height: box.rect.height)))
            if maxResults > 0, detections.count == maxResults { break }
        }
        return ObjectDetectorResult(detections: detections, timestampInMilliseconds: timestamp)
    }
}
