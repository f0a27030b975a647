import Dispatch
import Foundation

/// Options shared by the object detectors (ML Kit's `CommonObjectDetectorOptions`).
public class CommonObjectDetectorOptions: @unchecked Sendable {
    /// How successive calls relate (ML Kit's `ObjectDetectorMode`).
    public enum DetectorMode: Sendable, Hashable {
        /// Frames of a video or camera stream: objects get tracking IDs (default).
        case stream
        /// Independent images: no tracking IDs.
        case singleImage
    }

    /// Stream (default: tracking IDs across frames) or single-image mode.
    public var detectorMode: DetectorMode = .stream
    /// false (default): only the most prominent object; true: up to 5 objects.
    public var shouldEnableMultipleObjects = false
    /// Whether objects get labels (coarse categories, or the custom model's labels).
    public var shouldEnableClassification = false

    /// Beyond ML Kit: frames an unseen object is kept before its tracking ID is retired (stream
    /// mode). Default 2 bridges a detector missing an object for a frame or two; raise it to keep
    /// IDs through longer occlusions. A returning object after that gets a new ID, as in ML Kit.
    public var trackingMaximumMissedFrames = 2
    /// The detection model that proposes object boxes (its boxes, not its classes, define objects).
    /// Default: the COCO SSD MobileNet from the model directory.
    public var detectionModel: LocalModel?
    /// Minimum detector score for a box to become an object (default 0.3).
    public var detectionScoreThreshold: Float = 0.3
    /// Queue of `process(_:completion:)` completions (main by default, as in ML Kit).
    public var callbackQueue: DispatchQueue = .main

    init() {}
}

/// Options of the base object detector, whose labels are ML Kit's coarse categories
/// ("Fashion good", "Home good", "Food", "Place", "Plant").
public final class ObjectDetectorOptions: CommonObjectDetectorOptions, @unchecked Sendable {
    /// Options with ML Kit's defaults: stream mode, one object, no classification.
    public override init() { super.init() }
}

/// Options of an object detector that classifies each object with a custom classification model
/// (ML Kit's `CustomObjectDetectorOptions`).
public final class CustomObjectDetectorOptions: CommonObjectDetectorOptions, @unchecked Sendable {
    /// The classification model file run on each object, when created with ``init(localModel:)``.
    public let localModel: LocalModel?
    /// The remote classification model, when created with ``init(remoteModel:)``; it must have been
    /// downloaded with ``ModelManager`` before the detector is created.
    public let remoteModel: CustomRemoteModel?
    /// The manager whose cache holds ``remoteModel`` (default: the per-user manager).
    public var modelManager: ModelManager?

    /// Labels with a confidence below this are dropped. Valid range [0, 1]; when unset or invalid,
    /// the model metadata's threshold, else 0.0.
    public var classificationConfidenceThreshold: NSNumber?
    /// Maximum labels per object. Must be positive; when unset or invalid, 10.
    public var maxPerObjectLabelCount: Int = 10

    /// Options classifying each object with the model file `localModel`.
    public init(localModel: LocalModel) {
        self.localModel = localModel
        remoteModel = nil
        super.init()
    }

    /// Options classifying each object with a downloaded remote model.
    public init(remoteModel: CustomRemoteModel) {
        localModel = nil
        self.remoteModel = remoteModel
        super.init()
    }
}

/// A label of a detected object (ML Kit's `ObjectLabel`).
public struct ObjectLabel: Sendable, Hashable {
    /// The label's text: a coarse category, or the custom model's label (empty without labels).
    public let text: String
    /// The label's confidence in [0, 1].
    public let confidence: Float
    /// The label's index: the coarse category's, or the class index in the custom model.
    public let index: Int
}

/// A detected object (ML Kit's `Object`).
public struct Object: Sendable, Hashable {
    /// The object's box in the upright image's pixel coordinates.
    public let frame: CGRect
    /// A non-negative tracking ID in stream mode; nil in single-image mode.
    public let trackingID: NSNumber?
    /// Empty unless classification is enabled; empty too when no category fits ("unknown").
    public let labels: [ObjectLabel]
}
