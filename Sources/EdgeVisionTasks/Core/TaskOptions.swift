import Foundation
import VisionCore

/// Where a task's model comes from (MediaPipe's `BaseOptions`).
public final class BaseOptions: @unchecked Sendable {
    /// Path of the `.tflite` model file.
    public var modelAssetPath: String?
    /// The model's bytes, used when ``modelAssetPath`` is nil.
    public var modelAssetBuffer: Data?
    /// Where inference runs; only `.CPU` exists here.
    public var delegate: Delegate = .CPU
    /// Threads one inference may use.
    public var numThreads: Int = 1

    /// Hardware a task can run on (MediaPipe's `Delegate`); only the CPU here.
    public enum Delegate: Sendable { case CPU }

    /// No model yet; set ``modelAssetPath`` or ``modelAssetBuffer``.
    public init() {}

    func loadModel() throws -> TaskModel {
        if let path = modelAssetPath { return try TaskModel(path: path, threads: max(1, numThreads)) }
        if let data = modelAssetBuffer { return try TaskModel(data: data, threads: max(1, numThreads)) }
        throw VisionError(.invalidOptions, "BaseOptions needs a modelAssetPath or a modelAssetBuffer.")
    }
}

/// How a task is used (MediaPipe's `RunningMode`).
public enum RunningMode: Sendable, Hashable {
    /// Single images: `classify(image:)`.
    case image
    /// Decoded video frames with timestamps: `classify(videoFrame:timestampInMilliseconds:)`.
    case video
    /// Live frames delivered asynchronously to a delegate: `classifyAsync(image:timestampInMilliseconds:)`.
    case liveStream

    var displayName: String {
        switch self {
        case .image: return "Image"
        case .video: return "Video"
        case .liveStream: return "Live Stream"
        }
    }

    var methodName: String {
        switch self {
        case .image: return "image"
        case .video: return "video"
        case .liveStream: return "live stream"
        }
    }

    /// MediaPipe's rule for the live-stream delegate: required in live-stream mode, forbidden otherwise.
    func validate(hasDelegate: Bool) throws {
        switch self {
        case .image, .video:
            guard !hasDelegate else {
                throw VisionError(.invalidOptions, "The vision task is in image or video mode. The delegate must not be set in the task's options.")
            }
        case .liveStream:
            guard hasDelegate else {
                throw VisionError(.invalidOptions, "The vision task is in live stream mode. An object must be set as the delegate of the task in its options to ensure asynchronous delivery of results.")
            }
        }
    }

    /// MediaPipe's error when a method of another running mode is called.
    func check(expected: RunningMode) throws {
        guard self == expected else {
            throw VisionError(.invalidCall, "The vision task is not initialized with \(expected.methodName) mode. Current Running Mode: \(displayName)")
        }
    }
}

/// One category of a result (MediaPipe's `ResultCategory`, `MPPCategory` in Objective-C).
public struct ResultCategory: Sendable, Hashable {
    /// The class index in the model's output.
    public let index: Int
    /// The score.
    public let score: Float
    /// The class name from the model's label file; nil without labels.
    public let categoryName: String?
    /// The class name in the requested locale; nil when the model has none.
    public let displayName: String?
}

/// The categories of one classification head (MediaPipe's `Classifications`).
public struct Classifications: Sendable, Hashable {
    /// The head's position among the model's classification outputs.
    public let headIndex: Int
    /// The head's name from the metadata, if any.
    public let headName: String?
    /// The kept categories, best first.
    public let categories: [ResultCategory]
}

/// Classification results of all heads (MediaPipe's `ClassificationResult`).
public struct ClassificationResult: Sendable, Hashable {
    /// One entry per head.
    public let classifications: [Classifications]
    /// The timestamp of the frame (0 in image mode).
    public let timestampInMilliseconds: Int
}

extension Classifications {
    init(_ head: HeadResult) {
        headIndex = head.headIndex
        headName = head.headName
        categories = head.categories.map {
            ResultCategory(index: $0.index, score: $0.score, categoryName: $0.categoryName, displayName: $0.displayName)
        }
    }
}
