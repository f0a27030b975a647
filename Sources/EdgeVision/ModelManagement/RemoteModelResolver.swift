import VisionCore

/// Resolves a task's custom model (local or remote) to a file path. For task options that take
/// `(localModel:)` or `(remoteModel:)`, e.g. `CustomImageLabelerOptions`, `CustomObjectDetectorOptions`.
enum RemoteModelResolver {
    /// The local model's path, or the downloaded file of the remote model in `manager`'s cache
    /// (default `ModelManager.modelManager()`). Throws `VisionError` `.modelNotFound` when the
    /// remote model is not downloaded, `.invalidOptions` when neither model is given.
    static func path(local: LocalModel?, remote: RemoteModel?, manager: ModelManager?) throws -> String {
        if let local { return local.path }
        if let remote { return try (manager ?? ModelManager.modelManager()).localPath(of: remote) }
        throw VisionError(.invalidOptions, "The options name no model; create them with a LocalModel or a CustomRemoteModel.")
    }
}
