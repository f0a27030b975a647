import Foundation

/// Why a model download (or a cache operation) failed. ``message`` says what went wrong and what
/// to do. Bridges to `NSError` (domain ``errorDomain``, code ``Code-swift.enum/rawValue``), as ML
/// Kit's notifications carry an `NSError`.
///
/// Asking a task for a remote model that is not downloaded is a `VisionError` with code
/// `.modelNotFound` instead (see ``ModelManager/localPath(of:)``), like every other task-creation error.
public struct ModelDownloadError: Error, Sendable, Hashable, CustomStringConvertible, CustomNSError, LocalizedError {
    /// The kind of download or cache failure (its raw value is the `NSError` code).
    public enum Code: Int, Sendable, Hashable {
        /// The server answered with an HTTP error status (see ``httpStatusCode``).
        case httpStatus = 1
        /// The connection failed or was lost (after the retries).
        case transport = 2
        /// No data arrived within the timeout (after the retries).
        case timedOut = 3
        /// The file's SHA-256 is not the expected one.
        case checksumMismatch = 4
        /// The file's size is not what the server announced (`Content-Length`).
        case sizeMismatch = 5
        /// The file is larger than the manager's maximum size.
        case tooLarge = 6
        /// The file is not a valid TFLite model.
        case invalidModel = 7
        /// The model is not downloaded (e.g. when deleting it).
        case notDownloaded = 8
        /// The model's name or source cannot be used (bad characters, unsupported URL scheme, bad SHA-256).
        case invalidSource = 9
        /// The cache directory could not be written or read.
        case fileSystem = 10
        /// The download was cancelled (its `Progress` was cancelled or the model was deleted).
        case cancelled = 11
    }

    /// What kind of failure it is.
    public let code: Code
    /// What went wrong and what to do.
    public let message: String
    /// The model's name.
    public let modelName: String
    /// The HTTP status for ``Code-swift.enum/httpStatus``.
    public let httpStatusCode: Int?

    /// An error of kind `code` about the model named `model`, explained by `message`.
    public init(_ code: Code, model: String, _ message: String, httpStatusCode: Int? = nil) {
        self.code = code
        self.modelName = model
        self.message = message
        self.httpStatusCode = httpStatusCode
    }

    /// The message.
    public var description: String { message }
    /// The message (`LocalizedError`, so `localizedDescription` is the message).
    public var errorDescription: String? { message }

    /// The `NSError` domain, `com.edgevision.ModelDownloadError`.
    public static var errorDomain: String { "com.edgevision.ModelDownloadError" }
    /// The `NSError` code: the raw value of ``code``.
    public var errorCode: Int { code.rawValue }
    /// The `NSError` user info: the message, and `HTTPStatusCode` when there is one.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let httpStatusCode { info["HTTPStatusCode"] = httpStatusCode }
        return info
    }
}
