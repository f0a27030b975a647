import Foundation
import InferenceEngine
import VisionCore

/// Receives live-stream results of an ``ImageClassifier`` (MediaPipe's
/// `ImageClassifierLiveStreamDelegate`). Called on a private serial queue, in timestamp order.
public protocol ImageClassifierLiveStreamDelegate: AnyObject, Sendable {
    /// Called with the result of a processed live-stream frame, or with its error (`result` nil).
    func imageClassifier(_ imageClassifier: ImageClassifier, didFinishClassification result: ImageClassifierResult?,
                         timestampInMilliseconds: Int, error: Error?)

    /// Beyond MediaPipe (which drops silently): called for each live-stream frame that was dropped
    /// because a newer frame arrived while the classifier was busy. Optional.
    func imageClassifier(_ imageClassifier: ImageClassifier, didDropFrameWithTimestampInMilliseconds timestamp: Int)
}

extension ImageClassifierLiveStreamDelegate {
    /// Does nothing by default.
    public func imageClassifier(_ imageClassifier: ImageClassifier, didDropFrameWithTimestampInMilliseconds timestamp: Int) {}
}

/// Options of an ``ImageClassifier`` (MediaPipe's `ImageClassifierOptions`).
public final class ImageClassifierOptions: @unchecked Sendable {
    /// Where the model comes from.
    public var baseOptions = BaseOptions()
    /// Image (default), video or live-stream mode.
    public var runningMode: RunningMode = .image
    /// Locale of the display names (label files tagged with this locale); default "en".
    public var displayNamesLocale: String? = "en"
    /// Maximum categories per head; -1 (default) = all; 0 is an error.
    public var maxResults: Int = -1
    /// Categories with a score below this are dropped. `nil` (default) uses the model metadata's
    /// threshold if it has one — the semantics of MediaPipe's C++ and Python APIs. (MediaPipe iOS
    /// always writes its default 0 and so ignores the metadata threshold; we deliberately follow
    /// the model author's threshold unless the caller sets one.)
    public var scoreThreshold: Float?
    /// Keep only these category names (exclusive with ``categoryDenylist``).
    public var categoryAllowlist: [String] = []
    /// Drop these category names.
    public var categoryDenylist: [String] = []
    /// Receives live-stream results; held weakly, as in MediaPipe.
    public weak var imageClassifierLiveStreamDelegate: ImageClassifierLiveStreamDelegate?

    /// Options with MediaPipe's defaults.
    public init() {}
}

/// The result of a classification (MediaPipe's `ImageClassifierResult`).
public struct ImageClassifierResult: Sendable, Hashable {
    /// The categories of every head.
    public let classificationResult: ClassificationResult
    /// The timestamp of the frame (0 in image mode).
    public let timestampInMilliseconds: Int
}

/// Classifies images, video frames or a live stream (MediaPipe's `ImageClassifier`).
///
/// Image and video calls are synchronous and may come from several threads at once (each runs on
/// its own interpreter). Live-stream calls return at once; at most one frame is processed at a
/// time and only the newest waiting frame is kept.
public final class ImageClassifier: @unchecked Sendable {
    let model: TaskModel
    let classifier: ClassifierSpec
    let filter: ClassificationFilter
    /// The running mode the classifier was created for.
    public let runningMode: RunningMode
    private let timestamps = TimestampValidator()
    private var scheduler: LiveStreamScheduler<(MPImage, CGRect), ImageClassifierResult>?
    private weak var delegate: ImageClassifierLiveStreamDelegate?

    /// A classifier in image mode with the model at `modelPath` and default options.
    ///
    /// - Throws: `VisionError` when the model is missing or incompatible.
    public convenience init(modelPath: String) throws {
        let options = ImageClassifierOptions()
        options.baseOptions.modelAssetPath = modelPath
        try self.init(options: options)
    }

    /// A classifier with `options`.
    ///
    /// - Throws: `VisionError`: invalid options (MediaPipe's texts, e.g. `maxResults` 0 or a delegate that
    ///   does not fit the running mode), a missing model, or a model that is not a classifier.
    public init(options: ImageClassifierOptions) throws {
        guard options.maxResults != 0 else {
            throw VisionError(.invalidOptions, "Invalid max_results option: value must be != 0.")
        }
        let delegate = options.imageClassifierLiveStreamDelegate
        try options.runningMode.validate(hasDelegate: delegate != nil)
        model = try options.baseOptions.loadModel()
        classifier = try ClassifierSpec(model: model, displayNamesLocale: options.displayNamesLocale ?? "en")
        filter = ClassificationFilter(scoreThreshold: options.scoreThreshold, maxResults: options.maxResults,
                                      allowlist: Set(options.categoryAllowlist), denylist: Set(options.categoryDenylist))
        try classifier.validate(filter)
        runningMode = options.runningMode
        self.delegate = delegate
        if runningMode == .liveStream {
            scheduler = LiveStreamScheduler(
                // Weak, not unowned: the classifier may be released while a frame waits or runs (its
                // remaining results are then dropped, as the delivery below finds no classifier).
                work: { [weak self] input, timestamp in
                    guard let self else { throw VisionError(.invalidCall, "The image classifier was released.") }
                    return try self.run(input.0, roi: input.1, timestamp: timestamp)
                },
                deliver: { [weak self] result, timestamp in
                    guard let self, let delegate = self.delegate else { return }
                    switch result {
                    case .success(let value): delegate.imageClassifier(self, didFinishClassification: value, timestampInMilliseconds: timestamp, error: nil)
                    case .failure(let error): delegate.imageClassifier(self, didFinishClassification: nil, timestampInMilliseconds: timestamp, error: error)
                    }
                },
                dropped: { [weak self] timestamp in
                    guard let self, let delegate = self.delegate else { return }
                    delegate.imageClassifier(self, didDropFrameWithTimestampInMilliseconds: timestamp)
                })
        }
    }

    // No waiting in deinit: the last reference may go away on the delivery queue (inside a delegate
    // callback), where waiting for that queue to drain would never return.

    /// Classifies a single image (image mode).
    public func classify(image: MPImage) throws -> ImageClassifierResult {
        try classify(image: image, regionOfInterest: .zero)
    }

    /// Classifies the region `roi` of an image, given in normalized [0, 1] coordinates of the stored
    /// image (cropped before the orientation is applied); `.zero` means the whole image.
    public func classify(image: MPImage, regionOfInterest roi: CGRect) throws -> ImageClassifierResult {
        try runningMode.check(expected: .image)
        return try run(image, roi: roi, timestamp: 0)
    }

    /// Classifies a decoded video frame (video mode); timestamps must strictly increase.
    public func classify(videoFrame image: MPImage, timestampInMilliseconds: Int) throws -> ImageClassifierResult {
        try classify(videoFrame: image, timestampInMilliseconds: timestampInMilliseconds, regionOfInterest: .zero)
    }

    /// Classifies the region `roi` of a decoded video frame (video mode); see ``classify(image:regionOfInterest:)``
    /// for the region and ``classify(videoFrame:timestampInMilliseconds:)`` for the timestamps.
    public func classify(videoFrame image: MPImage, timestampInMilliseconds: Int, regionOfInterest roi: CGRect) throws -> ImageClassifierResult {
        try runningMode.check(expected: .video)
        try timestamps.accept(timestampInMilliseconds)
        return try run(image, roi: roi, timestamp: timestampInMilliseconds)
    }

    /// Sends a live frame (live-stream mode); the result goes to the delegate. Timestamps must
    /// strictly increase. If the classifier is busy, the frame waits, replacing (dropping) any older
    /// waiting frame.
    public func classifyAsync(image: MPImage, timestampInMilliseconds: Int) throws {
        try classifyAsync(image: image, timestampInMilliseconds: timestampInMilliseconds, regionOfInterest: .zero)
    }

    /// Sends the region `roi` of a live frame (live-stream mode); see ``classifyAsync(image:timestampInMilliseconds:)``.
    public func classifyAsync(image: MPImage, timestampInMilliseconds: Int, regionOfInterest roi: CGRect) throws {
        try runningMode.check(expected: .liveStream)
        try timestamps.accept(timestampInMilliseconds)
        scheduler?.submit((image, roi), timestamp: timestampInMilliseconds)
    }

    /// Blocks until every live-stream frame sent so far has been processed and delivered.
    public func waitUntilIdle() { scheduler?.waitUntilIdle() }

    func run(_ image: MPImage, roi: CGRect, timestamp: Int) throws -> ImageClassifierResult {
        let region = roi == .zero ? nil
            : ImagePreprocessor.RegionOfInterest(x: Double(roi.origin.x), y: Double(roi.origin.y), width: Double(roi.width), height: Double(roi.height))
        let heads = try model.withInterpreter { interpreter -> [HeadResult] in
            try ImagePreprocessor.write(image.pixelBuffer, orientation: image.orientation, roi: region, spec: model.imageInput, into: interpreter)
            interpreter.invoke()
            return try classifier.results(from: interpreter, filter: filter)
        }
        let result = ClassificationResult(classifications: heads.map(Classifications.init), timestampInMilliseconds: timestamp)
        return ImageClassifierResult(classificationResult: result, timestampInMilliseconds: timestamp)
    }
}
