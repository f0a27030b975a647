import Dispatch
import Foundation
import InferenceEngine
import MediaIO
import VisionCore

/// Options shared by the image labelers (ML Kit's `CommonImageLabelerOptions`).
public class CommonImageLabelerOptions: @unchecked Sendable {
    /// Labels with a confidence below this are not returned. Valid range [0, 1]; when unset or
    /// invalid, the model metadata's score threshold is used, else 0.0.
    public var confidenceThreshold: NSNumber?

    /// The queue `process(_:completion:)` calls its completion on (ML Kit calls it on the main
    /// queue; on Linux the main queue only runs if the program runs it, e.g. with `dispatchMain()`
    /// or a run loop, so command-line programs may prefer a global queue).
    public var callbackQueue: DispatchQueue = .main

    init() {}
}

/// Options for labeling with the default general-purpose model (an ImageNet MobileNet found by
/// file name in the model directory: `EDGEVISION_MODELS`, then the per-user cache).
public final class ImageLabelerOptions: CommonImageLabelerOptions, @unchecked Sendable {
    /// File name of the default model.
    public static let defaultModelFileName = "mobilenet_v2_1.0_224_quant.tflite"
    /// Options for the default model, with ML Kit's defaults.
    public override init() { super.init() }
}

/// Options for labeling with a custom model (ML Kit's `CustomImageLabelerOptions`): a local
/// model file, or a remote model once it is downloaded.
public final class CustomImageLabelerOptions: CommonImageLabelerOptions, @unchecked Sendable {
    /// The model file, when created with ``init(localModel:)``; nil when created with
    /// ``init(remoteModel:)``.
    public let localModel: LocalModel?
    /// The remote model, when created with ``init(remoteModel:)``. Creating a labeler resolves it
    /// to its downloaded file through ``modelManager``; a model that is not downloaded is a
    /// `VisionError` `.modelNotFound` ("... has not been downloaded; call ModelManager.download first").
    public let remoteModel: CustomRemoteModel?
    /// The manager whose cache holds ``remoteModel`` (default: `ModelManager.modelManager()`).
    public var modelManager: ModelManager?

    /// The maximum number of labels returned. Must be positive; when unset or invalid, 10.
    public var maxResultCount: Int = 10

    /// Options for labeling with the model file `localModel`.
    public init(localModel: LocalModel) {
        self.localModel = localModel
        self.remoteModel = nil
        super.init()
    }

    /// Options for labeling with `remoteModel`, which must be downloaded before a labeler is created.
    public init(remoteModel: CustomRemoteModel) {
        self.localModel = nil
        self.remoteModel = remoteModel
        super.init()
    }
}

/// A label of an image (ML Kit's `ImageLabel`).
public struct ImageLabel: Sendable, Hashable {
    /// The label text from the model's metadata; empty when the model has no labels.
    public let text: String
    /// The confidence (the model's score, dequantized and calibrated if the model says so).
    public let confidence: Float
    /// The class index in the model's output.
    public let index: Int
}

/// Labels images with a classification model (ML Kit's `ImageLabeler`).
///
/// Safe to use from several threads at once: each call runs on its own interpreter from a pool
/// that shares the compiled model.
public final class ImageLabeler: @unchecked Sendable {
    let model: TaskModel
    let classifier: ClassifierSpec
    let filter: ClassificationFilter
    let callbackQueue: DispatchQueue

    /// A labeler with the default model and default options.
    public static func imageLabeler() throws -> ImageLabeler {
        try imageLabeler(options: ImageLabelerOptions())
    }

    /// Creates a labeler. Throws when the model is missing, not a valid TFLite model, or not a
    /// compatible classifier, with a message that says what to fix.
    public static func imageLabeler(options: CommonImageLabelerOptions) throws -> ImageLabeler {
        let path: String
        var maxResults = 10
        if let custom = options as? CustomImageLabelerOptions {
            path = try RemoteModelResolver.path(local: custom.localModel, remote: custom.remoteModel, manager: custom.modelManager)
            if custom.maxResultCount > 0 { maxResults = custom.maxResultCount }
        } else {
            path = try ModelDirectory.locate(ImageLabelerOptions.defaultModelFileName)
        }
        let model = try TaskModel(path: path)
        let classifier = try ClassifierSpec(model: model)
        var threshold: Float?
        if let value = options.confidenceThreshold?.floatValue, value >= 0, value <= 1 {
            threshold = value
        } else {
            threshold = classifier.heads.first?.metadataScoreThreshold ?? 0
        }
        return ImageLabeler(model: model, classifier: classifier,
                            filter: ClassificationFilter(scoreThreshold: threshold, maxResults: maxResults),
                            callbackQueue: options.callbackQueue)
    }

    init(model: TaskModel, classifier: ClassifierSpec, filter: ClassificationFilter, callbackQueue: DispatchQueue) {
        self.model = model
        self.classifier = classifier
        self.filter = filter
        self.callbackQueue = callbackQueue
    }

    /// Labels an image synchronously. Labels are sorted by descending confidence (ties: lower index).
    public func results(in image: VisionImage) throws -> [ImageLabel] {
        let orientation = image.orientation
        return try model.withInterpreter { interpreter in
            try ImagePreprocessor.write(image.pixelBuffer, orientation: orientation, spec: model.imageInput, into: interpreter)
            interpreter.invoke()
            guard let head = classifier.heads.first else { return [] }
            let scores = try interpreter.outputFloats(at: head.outputIndex)
            return classifier.rank(scores: scores, head: head, filter: filter).categories.map {
                ImageLabel(text: $0.categoryName ?? "", confidence: $0.score, index: $0.index)
            }
        }
    }

    /// Labels an image on a background queue and calls `completion` on the options' callback queue
    /// (the main queue by default, as ML Kit does) with the labels or the error.
    public func process(_ image: VisionImage, completion: @escaping @Sendable ([ImageLabel]?, Error?) -> Void) {
        let queue = callbackQueue
        DispatchQueue.global(qos: .userInitiated).async {
            do {
                let labels = try self.results(in: image)
                queue.async { completion(labels, nil) }
            } catch {
                queue.async { completion(nil, error) }
            }
        }
    }

    /// Labels an image without blocking the caller's thread.
    public func process(_ image: VisionImage) async throws -> [ImageLabel] {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                do {
                    continuation.resume(returning: try self.results(in: image))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
