import Foundation

/// A model bundled with the application: a `.tflite` file on disk (ML Kit's `LocalModel`).
///
/// The file is checked when a task is created from it: a missing or invalid file is a typed
/// error, never a crash (ML Kit raises an exception here).
public final class LocalModel: Sendable, Hashable {
    /// Path of the model file.
    public let path: String

    /// A model at `path`.
    public init(path: String) {
        self.path = path
    }

    /// A model at a file URL.
    public convenience init(url: URL) {
        self.init(path: url.path)
    }

    /// Local models are equal when they have the same path.
    public static func == (a: LocalModel, b: LocalModel) -> Bool { a.path == b.path }
    /// Hashes the path.
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }
}
