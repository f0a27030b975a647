import Foundation

/// Where a remote model is hosted (ML Kit's `RemoteModelSource`). Subclassed by the concrete
/// sources; this package has one, ``HTTPModelSource``.
public class RemoteModelSource: @unchecked Sendable {
    /// The name the model is cached under (one directory per name in the model cache).
    public let name: String

    init(name: String) {
        self.name = name
    }
}

/// A model file served over HTTP(S) (in place of ML Kit's `FirebaseModelSource`, which needs a
/// Firebase project): a URL, an optional expected SHA-256, and the name it is cached under.
///
/// Versions are told apart by the server's `ETag` / `Last-Modified`: downloading again sends
/// `If-None-Match` / `If-Modified-Since`, and a `304 Not Modified` keeps the cached file.
public final class HTTPModelSource: RemoteModelSource, @unchecked Sendable {
    /// Where the model file is downloaded from (`http` or `https`).
    public let url: URL
    /// The expected SHA-256 of the file (64 hex digits, stored lowercase), or nil to accept any
    /// file that parses as a TFLite model.
    public let sha256: String?

    /// A model downloaded from `url`, cached under `name`.
    ///
    /// `name` may hold letters, digits, `.`, `_` and `-` (at most 128 characters, not starting
    /// with `.`, not ending with `.tflite`, which is kept for the default model files). An invalid
    /// name or SHA-256 is reported when the model is downloaded, as a ``ModelDownloadError``.
    public init(name: String, url: URL, sha256: String? = nil) {
        self.url = url
        self.sha256 = sha256?.lowercased()
        super.init(name: name)
    }
}

/// A model hosted remotely and downloaded on demand (ML Kit's `RemoteModel`). Models are
/// identified by ``name``: two models with the same name share one cache entry.
public class RemoteModel: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The name the model is cached under.
    public let name: String

    init(name: String) {
        self.name = name
    }

    /// Remote models are equal when they have the same name.
    public static func == (a: RemoteModel, b: RemoteModel) -> Bool { a.name == b.name }
    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
    /// `RemoteModel(name)`.
    public var description: String { "RemoteModel(\(name))" }
}

/// A custom model hosted remotely (ML Kit's `CustomRemoteModel(remoteModelSource:)`).
///
/// Download it with ``ModelManager/download(_:conditions:)``, then use it with
/// `CustomImageLabelerOptions(remoteModel:)`. The usual pattern (as ML Kit's guide describes):
/// label with the remote model when ``ModelManager/isModelDownloaded(_:)``, else with a bundled
/// ``LocalModel``.
public final class CustomRemoteModel: RemoteModel, @unchecked Sendable {
    /// Where the model is hosted.
    public let remoteModelSource: RemoteModelSource

    /// A remote model hosted at `remoteModelSource`, cached under the source's name.
    public init(remoteModelSource: RemoteModelSource) {
        self.remoteModelSource = remoteModelSource
        super.init(name: remoteModelSource.name)
    }
}

/// Conditions for downloading a model (ML Kit's `ModelDownloadConditions`).
///
/// On Linux both are accepted and have little effect:
/// - `allowsCellularAccess` (default true): Linux has no cellular/Wi-Fi distinction, so every
///   network is used (the value is passed on to `URLSessionConfiguration`, which ignores it).
/// - `allowsBackgroundDownloading` (default false): downloads always run on a background queue of
///   this process and go on while the program does other work, but there is no system download
///   daemon: the process must stay alive until the download finishes. An interrupted download
///   resumes (HTTP `Range`) the next time ``ModelManager/download(_:conditions:)`` is called.
public struct ModelDownloadConditions: Sendable, Hashable {
    /// Whether cellular networks may be used (no effect on Linux).
    public let allowsCellularAccess: Bool
    /// Whether the download may continue in the background (see above).
    public let allowsBackgroundDownloading: Bool

    /// Download conditions; the defaults are ML Kit's.
    public init(allowsCellularAccess: Bool = true, allowsBackgroundDownloading: Bool = false) {
        self.allowsCellularAccess = allowsCellularAccess
        self.allowsBackgroundDownloading = allowsBackgroundDownloading
    }
}

extension Notification.Name {
    /// Posted when a model download succeeds, including when the cached model is already the
    /// newest version (nothing is transferred). `userInfo[ModelDownloadUserInfoKey.remoteModel.rawValue]`
    /// is the ``RemoteModel``; the notification's `object` is the ``ModelManager``. Posted on a
    /// background queue: observe with `queue: .main` (or another queue) to hop.
    public static let mlkitModelDownloadDidSucceed = Notification.Name("MLKModelDownloadDidSucceedNotification")
    /// Posted when a model download fails. `userInfo` holds the ``RemoteModel`` and, under
    /// ``ModelDownloadUserInfoKey/error``, the ``ModelDownloadError`` (bridges to `NSError`).
    public static let mlkitModelDownloadDidFail = Notification.Name("MLKModelDownloadDidFailNotification")
}

/// Keys of the download notifications' `userInfo` (ML Kit's `ModelDownloadUserInfoKey`); look
/// values up with `.rawValue`.
public struct ModelDownloadUserInfoKey: RawRepresentable, Hashable, Sendable {
    /// The key's string, as used in `userInfo`.
    public let rawValue: String
    /// A key from its string.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The ``RemoteModel`` the notification is about.
    public static let remoteModel = ModelDownloadUserInfoKey(rawValue: "MLKModelDownloadUserInfoKeyRemoteModel")
    /// The error of a failed download (a ``ModelDownloadError``).
    public static let error = ModelDownloadUserInfoKey(rawValue: "MLKModelDownloadUserInfoKeyError")
}
