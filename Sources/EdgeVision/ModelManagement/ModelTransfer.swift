import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How one HTTP request for a model ended.
enum TransferOutcome: Sendable {
    /// `304 Not Modified`: the cached version is current.
    case notModified
    /// The partial file holds the whole body.
    case complete(etag: String?, lastModified: String?)
    /// The request failed. `transient`: worth retrying. `keepPartial`: the partial file may be
    /// resumed later.
    case failed(ModelDownloadError, transient: Bool, keepPartial: Bool)
}

/// What one request asks for.
struct TransferRequest: Sendable {
    var url: URL
    var modelName: String
    var partialURL: URL
    var cache: ModelCache
    /// Bytes already in the partial file (sent as `Range: bytes=N-`), 0 for a fresh download.
    var resumeFrom: Int64 = 0
    /// The `If-Range` validator sent with a `Range`.
    var ifRange: String?
    /// Validators of the cached version (conditional request).
    var ifNoneMatch: String?
    var ifModifiedSince: String?
    var timeout: TimeInterval
    var resourceTimeout: TimeInterval
    var maximumSize: Int64
    var allowsCellularAccess: Bool
}

/// One HTTP request for a model file, streamed into the partial file by a
/// `URLSessionDataDelegate` (works on swift-corelibs-foundation; `URLSession.bytes(for:)` does not
/// exist there). Enforces the idle timeout with its own watchdog (in addition to URLSession's
/// `timeoutIntervalForRequest`) and the maximum size while streaming.
///
/// All mutable state is guarded by `lock`; delegate callbacks arrive on a serial queue.
final class TransferAttempt: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let request: TransferRequest
    private let onProgress: @Sendable (_ completed: Int64, _ total: Int64?) -> Void
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    private var handle: FileHandle?
    private var written: Int64 = 0
    private var expectedTotal: Int64?
    private var status = 0
    private var etag: String?
    private var lastModified: String?
    private var notModified = false
    private var failure: (error: ModelDownloadError, transient: Bool, keepPartial: Bool)?
    private var lastActivity = DispatchTime.now()
    private var task: URLSessionDataTask?
    private var finished = false
    private var outcome: TransferOutcome?

    init(_ request: TransferRequest, onProgress: @escaping @Sendable (_ completed: Int64, _ total: Int64?) -> Void) {
        self.request = request
        self.onProgress = onProgress
    }

    private var name: String { request.modelName }
    private var urlText: String { request.url.absoluteString }

    /// Runs the request to its end (bounded by the timeouts) and says how it ended.
    func run() -> TransferOutcome {
        // swift-corelibs-foundation truncates URLSession timeouts to whole seconds (0.4 s fires at
        // once), so URLSession gets a rounded-up backstop and the watchdog below keeps the real one.
        let backstop = (request.timeout + 1).rounded(.up)
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: backstop)
        // The size check and Range need the bytes as stored on the server.
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if request.resumeFrom > 0 {
            urlRequest.setValue("bytes=\(request.resumeFrom)-", forHTTPHeaderField: "Range")
            if let ifRange = request.ifRange { urlRequest.setValue(ifRange, forHTTPHeaderField: "If-Range") }
        } else {
            if let etag = request.ifNoneMatch { urlRequest.setValue(etag, forHTTPHeaderField: "If-None-Match") }
            if let date = request.ifModifiedSince { urlRequest.setValue(date, forHTTPHeaderField: "If-Modified-Since") }
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = backstop
        configuration.timeoutIntervalForResource = max(backstop, request.resourceTimeout.rounded(.up))
        configuration.allowsCellularAccess = request.allowsCellularAccess
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "EdgeVision.ModelDownload.\(name)"
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        let task = session.dataTask(with: urlRequest)

        lock.lock()
        self.task = task
        lastActivity = .now()
        lock.unlock()

        // Idle watchdog: no response or no bytes for `timeout` seconds cancels the request.
        let watchdog = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        let interval = max(0.02, min(0.25, request.timeout / 8))
        watchdog.schedule(deadline: .now() + interval, repeating: interval)
        watchdog.setEventHandler { [weak self] in self?.checkIdle() }
        watchdog.resume()
        task.resume()

        // The watchdog and URLSession both end the request; this bound is only a last resort.
        let bound = request.resourceTimeout + request.timeout + 30
        if done.wait(timeout: .now() + bound) == .timedOut {
            fail(.timedOut, "The download of model '\(name)' from \(urlText) did not finish within \(Int(bound)) s.", transient: true, keepPartial: true)
            task.cancel()
            if done.wait(timeout: .now() + 10) == .timedOut {
                lock.lock()
                if outcome == nil { outcome = .failed(ModelDownloadError(.timedOut, model: name, "The download of model '\(name)' from \(urlText) hung."), transient: true, keepPartial: false) }
                closeHandle()
                lock.unlock()
            }
        }
        watchdog.cancel()
        session.invalidateAndCancel()
        lock.lock()
        defer { lock.unlock() }
        closeHandle()
        return outcome ?? .failed(ModelDownloadError(.transport, model: name, "The download of model '\(name)' from \(urlText) ended without a result."), transient: true, keepPartial: false)
    }

    /// Cancels the request (a cancelled download or a deleted model).
    func cancel(_ error: ModelDownloadError) {
        lock.lock()
        if failure == nil { failure = (error, false, true) }
        let task = self.task
        lock.unlock()
        task?.cancel()
    }

    private func checkIdle() {
        lock.lock()
        let idle = Double(DispatchTime.now().uptimeNanoseconds &- lastActivity.uptimeNanoseconds) / 1e9
        let expired = !finished && failure == nil && idle > request.timeout
        if expired {
            failure = (ModelDownloadError(.timedOut, model: name,
                "No data arrived for \(formatSeconds(request.timeout)) s while downloading model '\(name)' from \(urlText) (timeout). Check the network or raise the timeout (ModelManager.Configuration.timeout)."),
                true, true)
        }
        let task = self.task
        lock.unlock()
        if expired { task?.cancel() }
    }

    /// Records the first failure. Call without holding the lock.
    private func fail(_ code: ModelDownloadError.Code, _ message: String, status: Int? = nil, transient: Bool, keepPartial: Bool) {
        lock.lock()
        if failure == nil { failure = (ModelDownloadError(code, model: name, message, httpStatusCode: status), transient, keepPartial) }
        lock.unlock()
    }

    private func closeHandle() {
        if let handle {
            try? handle.synchronize()
            try? handle.close()
        }
        handle = nil
    }

    // MARK: URLSessionDataDelegate

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        completionHandler(accept(response) ? .allow : .cancel)
    }

    /// Opens the partial file for a 200/206; records anything else.
    private func accept(_ response: URLResponse) -> Bool {
        guard let http = response as? HTTPURLResponse else {
            fail(.transport, "The server of \(urlText) did not answer with HTTP.", transient: false, keepPartial: false)
            return false
        }
        lock.lock()
        status = http.statusCode
        lastActivity = .now()
        lock.unlock()
        let header = { (name: String) -> String? in http.value(forHTTPHeaderField: name) }
        switch http.statusCode {
        case 304:
            lock.lock()
            notModified = true
            lock.unlock()
            return false
        case 200, 206:
            break
        default:
            let code = http.statusCode
            // Server errors may pass; client errors (404, 403, ...) and 501/505 will not.
            let transient = (500...599).contains(code) && code != 501 && code != 505
            let reason = HTTPURLResponse.localizedString(forStatusCode: code)
            let advice = transient ? "The server had a problem; try again later." : (code == 404 || code == 410 ? "Check the URL." : "Check the URL and the server's access rules.")
            fail(.httpStatus, "The server answered HTTP \(code) (\(reason)) for model '\(name)' at \(urlText). \(advice)",
                 status: code, transient: transient, keepPartial: transient)
            return false
        }

        let encoding = header("Content-Encoding")?.lowercased()
        let identity = encoding == nil || encoding == "identity" || encoding == ""
        let length = http.expectedContentLength
        var start: Int64 = 0
        var total: Int64?
        if http.statusCode == 206 {
            guard request.resumeFrom > 0, let range = header("Content-Range").flatMap(ContentRange.init), range.first == request.resumeFrom else {
                fail(.transport, "The server of \(urlText) sent a byte range that was not asked for; the download restarts.", transient: true, keepPartial: false)
                return false
            }
            start = request.resumeFrom
            total = range.total ?? (length >= 0 ? start + length : nil)
        } else if length >= 0, identity {
            total = length
        }
        if let total, total > request.maximumSize {
            fail(.tooLarge, "Model '\(name)' at \(urlText) is \(total) bytes, more than the maximum of \(request.maximumSize) bytes (ModelManager.Configuration.maximumModelSize).",
                 transient: false, keepPartial: false)
            return false
        }
        do {
            let fm = FileManager.default
            let path = request.partialURL.path
            let handle: FileHandle
            if start == 0 {
                request.cache.removePartial(name)
                guard fm.createFile(atPath: path, contents: nil) else {
                    throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
                }
                handle = try FileHandle(forWritingTo: request.partialURL)
                try request.cache.writePartialState(PartialDownload(source: urlText, etag: header("ETag"), lastModified: header("Last-Modified"), expectedSize: total), name: name)
            } else {
                handle = try FileHandle(forWritingTo: request.partialURL)
                try handle.truncate(atOffset: UInt64(start))
                try handle.seekToEnd()
            }
            lock.lock()
            self.handle = handle
            written = start
            expectedTotal = total
            if start == 0 {
                etag = header("ETag")
                lastModified = header("Last-Modified")
            } else {
                let state = request.cache.partialState(name)
                etag = state?.etag
                lastModified = state?.lastModified
            }
            lock.unlock()
        } catch {
            fail(.fileSystem, "Cannot write the partial download of model '\(name)' at \(request.partialURL.path): \(error). Check that the cache directory is writable and has room.",
                 transient: false, keepPartial: false)
            return false
        }
        onProgress(start, total)
        return true
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        guard let handle, failure == nil else { lock.unlock(); return }
        lastActivity = .now()
        if written + Int64(data.count) > request.maximumSize {
            failure = (ModelDownloadError(.tooLarge, model: name,
                "Model '\(name)' at \(urlText) is more than the maximum of \(request.maximumSize) bytes (ModelManager.Configuration.maximumModelSize)."), false, false)
            let task = self.task
            lock.unlock()
            task?.cancel()
            return
        }
        do {
            try handle.write(contentsOf: data)
        } catch {
            failure = (ModelDownloadError(.fileSystem, model: name,
                "Cannot write the partial download of model '\(name)' at \(request.partialURL.path): \(error). Check that the cache directory has room."), false, false)
            let task = self.task
            lock.unlock()
            task?.cancel()
            return
        }
        written += Int64(data.count)
        let (completed, total) = (written, expectedTotal)
        lock.unlock()
        onProgress(completed, total)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        lock.lock()
        finished = true
        closeHandle()
        if let failure {
            outcome = .failed(failure.error, transient: failure.transient, keepPartial: failure.keepPartial)
        } else if notModified {
            outcome = .notModified
        } else if let error {
            outcome = TransferAttempt.classify(error, name: name, url: urlText, timeout: request.timeout)
        } else if status == 200 || status == 206 {
            if let expectedTotal, written != expectedTotal {
                outcome = written < expectedTotal
                    ? .failed(ModelDownloadError(.transport, model: name, "The connection to \(urlText) closed after \(written) of \(expectedTotal) bytes of model '\(name)'."), transient: true, keepPartial: true)
                    : .failed(ModelDownloadError(.sizeMismatch, model: name, "The server sent \(written) bytes for model '\(name)' at \(urlText) but announced \(expectedTotal)."), transient: false, keepPartial: false)
            } else {
                outcome = .complete(etag: etag, lastModified: lastModified)
            }
        } else {
            outcome = .failed(ModelDownloadError(.transport, model: name, "The server of \(urlText) answered HTTP \(status) without a body for model '\(name)'.", httpStatusCode: status), transient: false, keepPartial: false)
        }
        lock.unlock()
        done.signal()
    }

    /// Maps a URLSession error; connection problems and timeouts are worth retrying.
    static func classify(_ error: Error, name: String, url: String, timeout: TimeInterval) -> TransferOutcome {
        let nsError = error as NSError
        let code = URLError.Code(rawValue: nsError.code)
        if nsError.domain == NSURLErrorDomain {
            switch code {
            case .timedOut:
                return .failed(ModelDownloadError(.timedOut, model: name,
                    "The download of model '\(name)' from \(url) timed out (\(formatSeconds(timeout)) s without data). Check the network or raise ModelManager.Configuration.timeout."),
                    transient: true, keepPartial: true)
            case .cancelled:
                return .failed(ModelDownloadError(.cancelled, model: name, "The download of model '\(name)' was cancelled."), transient: false, keepPartial: true)
            case .badURL, .unsupportedURL, .userAuthenticationRequired, .userCancelledAuthentication,
                 .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
                 .serverCertificateHasUnknownRoot, .clientCertificateRejected, .clientCertificateRequired,
                 .secureConnectionFailed, .httpTooManyRedirects, .redirectToNonExistentLocation:
                return .failed(ModelDownloadError(.transport, model: name,
                    "The download of model '\(name)' from \(url) failed: \(nsError.localizedDescription) (URLError \(nsError.code)). Check the URL and the server's certificate."),
                    transient: false, keepPartial: false)
            default:
                break
            }
        }
        return .failed(ModelDownloadError(.transport, model: name,
            "The connection failed while downloading model '\(name)' from \(url): \(nsError.localizedDescription) (\(nsError.domain) \(nsError.code)). Check the network; the download resumes where it stopped."),
            transient: true, keepPartial: true)
    }
}

/// A `Content-Range: bytes FIRST-LAST/TOTAL` header (`TOTAL` may be `*`).
struct ContentRange {
    let first: Int64
    let last: Int64
    let total: Int64?

    init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6)
        let parts = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0].trimmingCharacters(in: .whitespaces)),
              let last = Int64(bounds[1].trimmingCharacters(in: .whitespaces)), first >= 0, last >= first else { return nil }
        self.first = first
        self.last = last
        let totalText = parts[1].trimmingCharacters(in: .whitespaces)
        if totalText == "*" {
            total = nil
        } else {
            guard let total = Int64(totalText), total > last else { return nil }
            self.total = total
        }
    }
}

func formatSeconds(_ seconds: TimeInterval) -> String {
    seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.2g", seconds)
}
