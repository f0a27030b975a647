import Dispatch
import Foundation
import TFLiteFormat
import VisionCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads and caches remotely hosted models (ML Kit's `ModelManager`).
///
/// - ``download(_:conditions:)`` starts (or joins) a download and returns its `Progress`; the end
///   is posted as `.mlkitModelDownloadDidSucceed` / `.mlkitModelDownloadDidFail`.
///   ``downloadModel(_:conditions:)`` is the `async throws` form.
/// - Downloading a model that is already downloaded asks the server for a newer version
///   (`If-None-Match` / `If-Modified-Since`); a `304 Not Modified` posts success without transfer.
/// - Files are written to a temporary name in the model's directory, verified (size against
///   `Content-Length`, SHA-256 when the source gives one, parsed as a TFLite model) and only then
///   activated (see ``DownloadedModel``). A failed or interrupted download never replaces the
///   current version; an interrupted one resumes with HTTP `Range` next time.
/// - Transient failures (connection errors, timeouts, HTTP 5xx except 501/505) are retried with
///   exponential backoff; 4xx are not.
/// - Concurrent downloads of one model (by name) share one transfer: the second caller gets the
///   same `Progress` and awaits the same result.
///
/// One manager exists per cache directory (``modelManager()`` for the per-user cache,
/// ``modelManager(cacheDirectory:)`` for another). Thread-safe.
public final class ModelManager: @unchecked Sendable {
    /// Transfer limits. Changes apply to downloads started afterwards.
    public struct Configuration: Sendable, Hashable {
        /// Seconds without any data (connecting, waiting for the response, or between chunks)
        /// before a request is abandoned as timed out. Default 30.
        public var timeout: TimeInterval = 30
        /// Upper bound in seconds for one request as a whole. Default 3600.
        public var resourceTimeout: TimeInterval = 3600
        /// Retries after a transient failure (so at most `maxRetries + 1` requests). Default 3.
        public var maxRetries: Int = 3
        /// Delay before the first retry in seconds; doubles each retry (capped at 30 s). Default 1.
        public var retryBaseDelay: TimeInterval = 1
        /// Largest model file accepted, in bytes; checked against `Content-Length` and while
        /// streaming. Default 1 GiB.
        public var maximumModelSize: Int64 = 1 << 30

        /// The default configuration.
        public init() {}
    }

    /// The directory holding the downloaded models (one subdirectory per model name).
    public let cacheDirectory: URL

    private let lock = NSLock()
    private var _configuration = Configuration()
    private var inFlight: [String: DownloadOperation] = [:]
    /// Serializes activation (rename + manifest) with deletion.
    let fileLock = NSLock()
    let cache: ModelCache

    private init(cacheDirectory: URL) {
        self.cacheDirectory = cacheDirectory
        cache = ModelCache(root: cacheDirectory)
    }

    /// Transfer limits (timeouts, retries, maximum size).
    public var configuration: Configuration {
        get { lock.lock(); defer { lock.unlock() }; return _configuration }
        set { lock.lock(); _configuration = newValue; lock.unlock() }
    }

    private final class Registry: @unchecked Sendable {
        let lock = NSLock()
        var managers: [String: ModelManager] = [:]
    }
    private static let registry = Registry()

    /// The manager of the per-user model cache (`ModelDirectory.cacheDirectory`:
    /// `$XDG_CACHE_HOME/edgevision/models`, else `~/.cache/edgevision/models`).
    public static func modelManager() -> ModelManager {
        modelManager(cacheDirectory: ModelDirectory.cacheDirectory)
    }

    /// The manager of the cache at `cacheDirectory` (created on the first download). Every call
    /// with the same directory returns the same manager, so downloads are shared.
    public static func modelManager(cacheDirectory: URL) -> ModelManager {
        let key = cacheDirectory.standardizedFileURL.path
        registry.lock.lock()
        defer { registry.lock.unlock() }
        if let manager = registry.managers[key] { return manager }
        let manager = ModelManager(cacheDirectory: URL(fileURLWithPath: key, isDirectory: true))
        registry.managers[key] = manager
        return manager
    }

    // MARK: Queries

    /// Whether `remoteModel` is downloaded: its manifest names an existing file of the recorded
    /// size and, when the source gives a SHA-256, of that digest. A partial download never counts.
    public func isModelDownloaded(_ remoteModel: RemoteModel) -> Bool {
        downloadedModel(remoteModel) != nil
    }

    /// The cache entry of `remoteModel`, or nil when it is not downloaded (see ``isModelDownloaded(_:)``).
    public func downloadedModel(_ remoteModel: RemoteModel) -> DownloadedModel? {
        guard let entry = cache.downloaded(remoteModel.name) else { return nil }
        if let expected = (remoteModel as? CustomRemoteModel).flatMap({ $0.remoteModelSource as? HTTPModelSource })?.sha256,
           expected != entry.sha256 {
            return nil
        }
        return entry
    }

    /// Every model in this cache, sorted by name.
    public func downloadedModels() -> [DownloadedModel] {
        cache.allDownloaded()
    }

    /// The path of the downloaded file of `remoteModel`, for creating a task from it.
    ///
    /// Tasks call this for their `(remoteModel:)` options (e.g. `CustomImageLabelerOptions`).
    /// Throws `VisionError` `.modelNotFound` ("... has not been downloaded; call
    /// ModelManager.download first") when the model is not downloaded.
    public func localPath(of remoteModel: RemoteModel) throws -> String {
        guard let entry = downloadedModel(remoteModel) else {
            throw VisionError(.modelNotFound,
                "Remote model '\(remoteModel.name)' has not been downloaded; call ModelManager.download first (and wait for .mlkitModelDownloadDidSucceed), or use a LocalModel until then. Cache searched: \(cacheDirectory.path).")
        }
        return entry.path
    }

    // MARK: Downloading

    /// Starts downloading `remoteModel` (or checks for a newer version if it is downloaded) and
    /// returns the download's progress. If the model is being downloaded already, returns that
    /// download's `Progress`. The result is posted as `.mlkitModelDownloadDidSucceed` or
    /// `.mlkitModelDownloadDidFail` (on a background queue). Cancelling the `Progress` cancels
    /// the download (for every caller sharing it).
    @discardableResult
    public func download(_ remoteModel: RemoteModel, conditions: ModelDownloadConditions) -> Progress {
        operation(for: remoteModel, conditions: conditions).progress
    }

    /// Downloads `remoteModel` (or checks for a newer version) and returns the local file URL.
    /// Joins a download of the same model already under way. Also posts the notifications.
    /// Cancelling the calling task does not cancel the shared download; cancel its `Progress`.
    public func downloadModel(_ remoteModel: RemoteModel, conditions: ModelDownloadConditions = ModelDownloadConditions()) async throws -> URL {
        let entry = try await operation(for: remoteModel, conditions: conditions).value()
        return URL(fileURLWithPath: entry.path)
    }

    /// Starts (or joins) a download like ``download(_:conditions:)`` and also calls `completion`
    /// with its result, on `callbackQueue` (a global queue by default, since the main queue of a
    /// Linux program only runs if the program runs it).
    @discardableResult
    public func download(_ remoteModel: RemoteModel, conditions: ModelDownloadConditions,
                         callbackQueue: DispatchQueue = .global(qos: .utility),
                         completion: @escaping @Sendable (Result<DownloadedModel, ModelDownloadError>) -> Void) -> Progress {
        let operation = operation(for: remoteModel, conditions: conditions)
        DispatchQueue.global(qos: .utility).async {
            let result = operation.waitForResult()
            callbackQueue.async { completion(result) }
        }
        return operation.progress
    }

    /// Downloads (or joins the download of) `remoteModel` and blocks until it ends. For
    /// synchronous callers such as the command-line tool; not for use on the main queue of an
    /// app or inside Swift concurrency tasks.
    public func downloadAndWait(_ remoteModel: RemoteModel, conditions: ModelDownloadConditions = ModelDownloadConditions()) -> Result<DownloadedModel, ModelDownloadError> {
        operation(for: remoteModel, conditions: conditions).waitForResult()
    }

    private func operation(for remoteModel: RemoteModel, conditions: ModelDownloadConditions) -> DownloadOperation {
        lock.lock()
        if let running = inFlight[remoteModel.name] {
            lock.unlock()
            return running
        }
        let operation = DownloadOperation(manager: self, model: remoteModel, conditions: conditions, configuration: _configuration)
        inFlight[remoteModel.name] = operation
        lock.unlock()
        operation.start()
        return operation
    }

    func operationFinished(_ operation: DownloadOperation) {
        lock.lock()
        if inFlight[operation.model.name] === operation { inFlight[operation.model.name] = nil }
        lock.unlock()
    }

    // MARK: Deleting

    /// Deletes the downloaded model (and any partial download), cancelling a download under way,
    /// then calls `completion` on the main queue (as ML Kit does) with nil or the error
    /// (``ModelDownloadError`` `.notDownloaded` when nothing was stored). On Linux the main queue
    /// only runs if the program runs it (`dispatchMain()`, a run loop); otherwise use
    /// ``deleteDownloadedModel(_:callbackQueue:completion:)``.
    public func deleteDownloadedModel(_ remoteModel: RemoteModel, completion: @escaping @Sendable (Error?) -> Void) {
        deleteDownloadedModel(remoteModel, callbackQueue: .main, completion: completion)
    }

    /// Deletes the downloaded model and calls `completion` on `callbackQueue`.
    public func deleteDownloadedModel(_ remoteModel: RemoteModel, callbackQueue: DispatchQueue, completion: @escaping @Sendable (Error?) -> Void) {
        let name = remoteModel.name
        DispatchQueue.global(qos: .utility).async {
            let failure: Error?
            do {
                try self.deleteDownloadedModel(named: name)
                failure = nil
            } catch {
                failure = error
            }
            callbackQueue.async { completion(failure) }
        }
    }

    /// Deletes the model named `name` from this cache, synchronously.
    public func deleteDownloadedModel(named name: String) throws {
        if let problem = ModelCache.problem(withName: name) {
            throw ModelDownloadError(.invalidSource, model: name, "Cannot delete: \(problem).")
        }
        lock.lock()
        let running = inFlight[name]
        lock.unlock()
        running?.cancel()
        fileLock.lock()
        defer { fileLock.unlock() }
        let directory = cache.directory(name)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ModelDownloadError(.notDownloaded, model: name, "No model named '\(name)' is downloaded in \(cacheDirectory.path).")
        }
        let wasDownloaded = cache.downloaded(name) != nil
        do {
            try FileManager.default.removeItem(at: directory)
        } catch {
            throw ModelDownloadError(.fileSystem, model: name, "Cannot delete \(directory.path): \(error.localizedDescription). Check its permissions.")
        }
        if !wasDownloaded, running == nil {
            throw ModelDownloadError(.notDownloaded, model: name, "No model named '\(name)' was downloaded in \(cacheDirectory.path) (a partial download was removed).")
        }
    }

    // MARK: Notifications

    func post(_ result: Result<DownloadedModel, ModelDownloadError>, for model: RemoteModel) {
        switch result {
        case .success:
            NotificationCenter.default.post(name: .mlkitModelDownloadDidSucceed, object: self,
                                            userInfo: [ModelDownloadUserInfoKey.remoteModel.rawValue: model])
        case .failure(let error):
            NotificationCenter.default.post(name: .mlkitModelDownloadDidFail, object: self,
                                            userInfo: [ModelDownloadUserInfoKey.remoteModel.rawValue: model,
                                                       ModelDownloadUserInfoKey.error.rawValue: error])
        }
    }
}

/// One download of one model, shared by every caller that asks for it while it runs.
final class DownloadOperation: @unchecked Sendable {
    let model: RemoteModel
    let progress: Progress
    private let manager: ModelManager
    private let conditions: ModelDownloadConditions
    private let configuration: ModelManager.Configuration
    private let lock = NSLock()
    private let wake = DispatchSemaphore(value: 0)
    private var cancelled = false
    private var attempt: TransferAttempt?
    private var result: Result<DownloadedModel, ModelDownloadError>?
    private var waiters: [CheckedContinuation<DownloadedModel, Error>] = []
    private let progressLock = NSLock()
    private let finished = DispatchGroup()

    init(manager: ModelManager, model: RemoteModel, conditions: ModelDownloadConditions, configuration: ModelManager.Configuration) {
        self.manager = manager
        self.model = model
        self.conditions = conditions
        self.configuration = configuration
        progress = Progress(totalUnitCount: 0)
        progress.kind = .file
        progress.isCancellable = true
        progress.cancellationHandler = { [weak self] in self?.cancel() }
        finished.enter()
    }

    /// Blocks until the download ends.
    func waitForResult() -> Result<DownloadedModel, ModelDownloadError> {
        finished.wait()
        lock.lock()
        defer { lock.unlock() }
        return result ?? .failure(ModelDownloadError(.transport, model: model.name, "The download of model '\(model.name)' ended without a result."))
    }

    func start() {
        let thread = Thread { [self] in
            let result = self.perform()
            self.finish(result)
        }
        thread.name = "EdgeVision.ModelDownload.\(model.name)"
        thread.qualityOfService = conditions.allowsBackgroundDownloading ? .background : .utility
        thread.start()
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let attempt = self.attempt
        lock.unlock()
        attempt?.cancel(ModelDownloadError(.cancelled, model: model.name, "The download of model '\(model.name)' was cancelled."))
        wake.signal()
    }

    private var isCancelled: Bool {
        lock.lock(); defer { lock.unlock() }
        return cancelled
    }

    func value() async throws -> DownloadedModel {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DownloadedModel, Error>) in
            lock.lock()
            if let result {
                lock.unlock()
                continuation.resume(with: result.mapError { $0 as Error })
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    private func finish(_ result: Result<DownloadedModel, ModelDownloadError>) {
        if case .failure = result { removeDirectoryIfEmpty() }
        lock.lock()
        self.result = result
        let waiters = self.waiters
        self.waiters = []
        lock.unlock()
        manager.operationFinished(self)
        manager.post(result, for: model)
        for waiter in waiters { waiter.resume(with: result.mapError { $0 as Error }) }
        self.finished.leave()
    }

    /// A first download that failed leaves no empty model directory behind.
    private func removeDirectoryIfEmpty() {
        guard ModelCache.problem(withName: model.name) == nil else { return }
        manager.fileLock.lock()
        defer { manager.fileLock.unlock() }
        let directory = manager.cache.directory(model.name)
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: directory.path), entries.isEmpty {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    private func setProgress(completed: Int64, total: Int64?) {
        progressLock.lock()
        if let total, total > 0 {
            if progress.totalUnitCount != total { progress.totalUnitCount = total }
        } else if progress.totalUnitCount <= completed {
            // Unknown size: keep the fraction below 1 until the end.
            progress.totalUnitCount = completed + 1
        }
        progress.completedUnitCount = completed
        progressLock.unlock()
    }

    private func completeProgress(size: Int64) {
        progressLock.lock()
        let units = max(size, 1)
        progress.totalUnitCount = units
        progress.completedUnitCount = units
        progressLock.unlock()
    }

    private func failure(_ code: ModelDownloadError.Code, _ message: String) -> Result<DownloadedModel, ModelDownloadError> {
        .failure(ModelDownloadError(code, model: model.name, message))
    }

    /// The whole download: conditional request or resume, retries, verification, activation.
    private func perform() -> Result<DownloadedModel, ModelDownloadError> {
        let name = model.name
        let cache = manager.cache
        if let problem = ModelCache.problem(withName: name) {
            return failure(.invalidSource, "Cannot download: \(problem).")
        }
        guard let source = (model as? CustomRemoteModel)?.remoteModelSource as? HTTPModelSource else {
            return failure(.invalidSource, "Model '\(name)' has no HTTP source; create it as CustomRemoteModel(remoteModelSource: HTTPModelSource(name:url:sha256:)).")
        }
        guard let scheme = source.url.scheme?.lowercased(), scheme == "http" || scheme == "https", source.url.host != nil else {
            return failure(.invalidSource, "Model '\(name)' has URL '\(source.url.absoluteString)'; only http and https URLs can be downloaded.")
        }
        if let expected = source.sha256, !SHA256.isValidHex(expected) {
            return failure(.invalidSource, "The expected SHA-256 of model '\(name)' ('\(expected)') is not 64 hex digits.")
        }
        do {
            try FileManager.default.createDirectory(at: cache.directory(name), withIntermediateDirectories: true)
        } catch {
            return failure(.fileSystem, "Cannot create the model directory \(cache.directory(name).path): \(error.localizedDescription). Check that the cache directory is writable (or choose another with ModelManager.modelManager(cacheDirectory:)).")
        }
        let urlText = source.url.absoluteString
        let current = manager.downloadedModel(model)
        var retries = 0
        while true {
            if isCancelled { return failure(.cancelled, "The download of model '\(name)' was cancelled.") }
            var request = TransferRequest(url: source.url, modelName: name, partialURL: cache.partialURL(name), cache: cache,
                                          timeout: configuration.timeout, resourceTimeout: configuration.resourceTimeout,
                                          maximumSize: configuration.maximumModelSize, allowsCellularAccess: conditions.allowsCellularAccess)
            let partialSize = (try? FileManager.default.attributesOfItem(atPath: cache.partialURL(name).path)[.size] as? NSNumber)?.int64Value ?? 0
            if partialSize > 0, let state = cache.partialState(name), state.source == urlText, let validator = state.ifRange,
               partialSize < (state.expectedSize ?? Int64.max) {
                request.resumeFrom = partialSize
                request.ifRange = validator
            } else {
                cache.removePartial(name)
                if let current, current.source == urlText {
                    request.ifNoneMatch = current.etag
                    request.ifModifiedSince = current.lastModified
                }
            }
            let attempt = TransferAttempt(request) { [weak self] completed, total in
                self?.setProgress(completed: completed, total: total)
            }
            lock.lock()
            if cancelled {
                lock.unlock()
                return failure(.cancelled, "The download of model '\(name)' was cancelled.")
            }
            self.attempt = attempt
            lock.unlock()
            let outcome = attempt.run()
            lock.lock()
            self.attempt = nil
            lock.unlock()

            switch outcome {
            case .notModified:
                guard let current, request.ifNoneMatch != nil || request.ifModifiedSince != nil else {
                    return failure(.httpStatus, "The server answered 304 Not Modified for model '\(name)' at \(urlText) to a request that was not conditional.")
                }
                completeProgress(size: current.size)
                return .success(current)
            case .complete(let etag, let lastModified):
                return verifyAndActivate(source: source, etag: etag, lastModified: lastModified)
            case .failed(var error, let transient, let keepPartial):
                if !keepPartial { cache.removePartial(name) }
                if transient, retries < configuration.maxRetries, !isCancelled {
                    let delay = min(30, configuration.retryBaseDelay * pow(2, Double(retries)))
                    retries += 1
                    if delay > 0 { _ = wake.wait(timeout: .now() + delay) }
                    continue
                }
                if cache.partialState(name)?.ifRange == nil { cache.removePartial(name) }
                if retries > 0 {
                    error = ModelDownloadError(error.code, model: name, error.message + " (\(retries + 1) attempts)", httpStatusCode: error.httpStatusCode)
                }
                return .failure(error)
            }
        }
    }

    private func verifyAndActivate(source: HTTPModelSource, etag: String?, lastModified: String?) -> Result<DownloadedModel, ModelDownloadError> {
        let name = model.name
        let cache = manager.cache
        let partial = cache.partialURL(name)
        let urlText = source.url.absoluteString
        let size = (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? NSNumber)?.int64Value ?? 0
        let digest: String
        do {
            digest = try SHA256.hex(ofFileAt: partial.path)
        } catch {
            cache.removePartial(name)
            return failure(.fileSystem, "Cannot read the downloaded file \(partial.path): \(error.localizedDescription).")
        }
        if let expected = source.sha256, digest != expected {
            cache.removePartial(name)
            return failure(.checksumMismatch, "The file downloaded for model '\(name)' from \(urlText) has SHA-256 \(digest), expected \(expected). The file on the server is not the expected one (or the expected SHA-256 is wrong); it was discarded.")
        }
        do {
            _ = try TFLiteModel(contentsOfFile: partial.path)
        } catch {
            cache.removePartial(name)
            return failure(.invalidModel, "The file downloaded for model '\(name)' from \(urlText) is not a valid TFLite model (\(error)); it was discarded. Check the URL.")
        }
        let manifest = DownloadedModel(name: name, file: ModelCache.versionedFileName(sha256: digest), source: urlText, sha256: digest,
                                       size: size, etag: etag, lastModified: lastModified, date: ModelCache.now())
        manager.fileLock.lock()
        defer { manager.fileLock.unlock() }
        if isCancelled {
            cache.removePartial(name)
            return failure(.cancelled, "The download of model '\(name)' was cancelled.")
        }
        do {
            let stored = try cache.activate(partial, manifest: manifest)
            cache.removePartial(name)
            completeProgress(size: size)
            return .success(stored)
        } catch {
            cache.removePartial(name)
            return failure(.fileSystem, "Cannot store model '\(name)' in \(cache.directory(name).path): \(error.localizedDescription). Check that the cache directory is writable and has room.")
        }
    }
}
