import EdgeVision
import Foundation
import TestSupport
import TFLiteFormat
import VisionCore
import XCTest

/// Downloads against a real HTTP server on 127.0.0.1 (``TestHTTPServer``): success and progress,
/// conditional re-checks, new versions, HTTP errors, retries, resume with Range, verification
/// failures, timeouts, shared concurrent downloads, the size limit. After every failure the cache
/// holds no model file but the previous good version.
final class ModelManagerTests: XCTestCase {
    var cacheDirectory: URL!
    var servers: [TestHTTPServer] = []

    override func setUpWithError() throws {
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("edgevision-models-\(UUID().uuidString)", isDirectory: true)
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Self.modelA.path), "shared models not found at \(SharedData.models.path)")
    }

    override func tearDown() {
        for server in servers { server.stop() }
        servers = []
        if let cacheDirectory { try? FileManager.default.removeItem(at: cacheDirectory) }
    }

    static let modelA = SharedData.model("mobilenet_v1_0.25_224_quant.tflite")
    static let modelB = SharedData.model("mobilenet_v1_0.25_128_quant.tflite")
    static let shaA = "e480eb15572f86d3d5f1be6e83e35b3c7d509ab2bcec353707d1f614e14edca2"

    func server(_ handler: @escaping TestHTTPServer.Handler) throws -> TestHTTPServer {
        let server = try TestHTTPServer(lifetime: 30, handler: handler)
        servers.append(server)
        return server
    }

    func manager(timeout: TimeInterval = 5, retries: Int = 2) -> ModelManager {
        let manager = ModelManager.modelManager(cacheDirectory: cacheDirectory)
        var configuration = ModelManager.Configuration()
        configuration.timeout = timeout
        configuration.maxRetries = retries
        configuration.retryBaseDelay = 0.02
        manager.configuration = configuration
        return manager
    }

    func remote(_ url: URL, name: String = "classifier", sha256: String? = nil) -> CustomRemoteModel {
        CustomRemoteModel(remoteModelSource: HTTPModelSource(name: name, url: url, sha256: sha256))
    }

    /// Collects the download notifications of one manager.
    final class Observer: @unchecked Sendable {
        private let lock = NSLock()
        private var _events: [(succeeded: Bool, model: RemoteModel?, error: Error?)] = []
        private var tokens: [NSObjectProtocol] = []

        init(_ manager: ModelManager) {
            for (name, succeeded) in [(Notification.Name.mlkitModelDownloadDidSucceed, true), (.mlkitModelDownloadDidFail, false)] {
                tokens.append(NotificationCenter.default.addObserver(forName: name, object: manager, queue: nil) { [weak self] note in
                    let model = note.userInfo?[ModelDownloadUserInfoKey.remoteModel.rawValue] as? RemoteModel
                    let error = note.userInfo?[ModelDownloadUserInfoKey.error.rawValue] as? Error
                    self?.lock.lock()
                    self?._events.append((succeeded, model, error))
                    self?.lock.unlock()
                })
            }
        }

        deinit { for token in tokens { NotificationCenter.default.removeObserver(token) } }

        var events: [(succeeded: Bool, model: RemoteModel?, error: Error?)] { lock.lock(); defer { lock.unlock() }; return _events }
    }

    func downloadError(_ result: Result<DownloadedModel, ModelDownloadError>, file: StaticString = #filePath, line: UInt = #line) -> ModelDownloadError? {
        switch result {
        case .success(let entry):
            XCTFail("expected a failure, got \(entry.path)", file: file, line: line)
            return nil
        case .failure(let error):
            return error
        }
    }

    /// The cache holds no model file for `name` except the manifest's current one, and no partial
    /// download unless `allowPartial`.
    func assertNoStrayFiles(_ name: String, allowPartial: Bool = false, file: StaticString = #filePath, line: UInt = #line) {
        let directory = cacheDirectory.appendingPathComponent(name)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let current = ModelManager.modelManager(cacheDirectory: cacheDirectory).downloadedModels().first { $0.name == name }?.file
        for entry in entries {
            if entry == "manifest.json" || entry == current { continue }
            if allowPartial, entry == ".download" || entry == ".download.json" { continue }
            XCTFail("stray file \(entry) in \(directory.path)", file: file, line: line)
        }
    }

    /// The previously downloaded version is still the one used: downloaded, same bytes, parses.
    func assertStillHas(_ model: CustomRemoteModel, bytes: Data, in manager: ModelManager, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertTrue(manager.isModelDownloaded(model), "previous version lost", file: file, line: line)
        let path = try manager.localPath(of: model)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes, file: file, line: line)
        XCTAssertNoThrow(try TFLiteModel(contentsOfFile: path), file: file, line: line)
    }

    // MARK: SHA-256

    func testSHA256KnownVectors() throws {
        XCTAssertEqual(SHA256.hex(of: Data()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hex(of: Data("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hex(of: Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(SHA256.hex(of: Data("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu".utf8)),
                       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        XCTAssertEqual(SHA256.hex(of: Data(repeating: UInt8(ascii: "a"), count: 1_000_000)),
                       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // Padding edges: 55, 56, 63, 64 bytes.
        XCTAssertEqual(SHA256.hex(of: Data(repeating: 0x61, count: 55)), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        XCTAssertEqual(SHA256.hex(of: Data(repeating: 0x61, count: 56)), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
        XCTAssertEqual(SHA256.hex(of: Data(repeating: 0x61, count: 64)), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
        // Incremental updates in odd pieces give the one-shot digest.
        var generator = SeededGenerator(seed: 7)
        let bytes = Data((0..<10_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        var hasher = SHA256()
        var offset = 0
        for size in [1, 63, 64, 65, 0, 127, 1000, 3] + Array(repeating: 997, count: 20) where offset < bytes.count {
            let end = min(bytes.count, offset + size)
            hasher.update(bytes[offset..<end])
            offset = end
        }
        hasher.update(bytes[offset...])
        XCTAssertEqual(hasher.finalizeHex(), SHA256.hex(of: bytes))
        // A shared model file against its digest in SOURCES.md.
        XCTAssertEqual(try SHA256.hex(ofFileAt: Self.modelA.path), Self.shaA)
        XCTAssertTrue(SHA256.isValidHex(Self.shaA.uppercased()))
        XCTAssertFalse(SHA256.isValidHex("xyz"))
    }

    // MARK: Success, 304, new version

    func testDownloadReportsProgressAndPostsSuccess() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { request in
            var response = file.respond(to: request)
            response.chunkSize = 50_000
            return response
        }
        let manager = manager()
        let observer = Observer(manager)
        let model = remote(server.url("models/classifier.tflite"), sha256: Self.shaA)
        XCTAssertFalse(manager.isModelDownloaded(model))
        XCTAssertThrowsError(try manager.localPath(of: model))

        let progress = manager.download(model, conditions: ModelDownloadConditions())
        let result = manager.downloadAndWait(model)
        guard case .success(let entry) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(progress.fractionCompleted, 1)
        XCTAssertEqual(progress.completedUnitCount, Int64(bytes.count))
        XCTAssertEqual(observer.events.count, 1)
        XCTAssertEqual(observer.events.first?.succeeded, true)
        XCTAssertEqual(observer.events.first?.model, model)
        XCTAssertNil(observer.events.first?.error)

        XCTAssertTrue(manager.isModelDownloaded(model))
        XCTAssertEqual(try manager.localPath(of: model), entry.path)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: entry.path)), bytes)
        XCTAssertEqual(entry.sha256, Self.shaA)
        XCTAssertEqual(entry.size, Int64(bytes.count))
        XCTAssertEqual(entry.etag, "\"v1\"")
        XCTAssertEqual(entry.source, server.url("models/classifier.tflite").absoluteString)
        XCTAssertTrue(entry.path.hasPrefix(cacheDirectory.appendingPathComponent("classifier").path))
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertEqual(server.requests.first?.headers["accept-encoding"], "identity")
        XCTAssertNil(server.requests.first?.headers["if-none-match"])
        // The manifest is JSON with the documented fields.
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: cacheDirectory.appendingPathComponent("classifier/manifest.json"))) as? [String: Any]
        for key in ["name", "file", "source", "sha256", "size", "etag", "lastModified", "date"] {
            XCTAssertNotNil(manifest?[key], key)
        }
        assertNoStrayFiles("classifier")
        XCTAssertEqual(manager.downloadedModels().map(\.name), ["classifier"])
        // A model with another expected digest is not "downloaded".
        XCTAssertFalse(manager.isModelDownloaded(remote(server.url("x"), sha256: String(repeating: "0", count: 64))))
    }

    func testAsyncDownload() async throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { file.respond(to: $0) }
        let manager = manager()
        let url = try await manager.downloadModel(remote(server.url("m.tflite")))
        XCTAssertEqual(try Data(contentsOf: url), bytes)
    }

    func testAlreadyDownloadedAndUnchangedIsNotTransferredAgain() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { file.respond(to: $0) }
        let manager = manager()
        let observer = Observer(manager)
        let model = remote(server.url("m.tflite"))
        guard case .success(let first) = manager.downloadAndWait(model) else { return XCTFail() }
        let sentAfterFirst = server.bodyBytesSent

        let progress = manager.download(model, conditions: ModelDownloadConditions(allowsCellularAccess: false, allowsBackgroundDownloading: true))
        guard case .success(let second) = manager.downloadAndWait(model) else { return XCTFail() }
        XCTAssertEqual(second.path, first.path)
        XCTAssertEqual(second.date, first.date, "the manifest was rewritten")
        XCTAssertEqual(progress.fractionCompleted, 1)
        XCTAssertEqual(server.requests.count, 2)
        XCTAssertEqual(server.requests.last?.headers["if-none-match"], "\"v1\"")
        XCTAssertEqual(server.requests.last?.headers["if-modified-since"], "Sun, 01 Nov 2026 10:00:00 GMT")
        XCTAssertEqual(server.bodyBytesSent, sentAfterFirst, "the 304 check transferred a body")
        XCTAssertEqual(observer.events.map(\.succeeded), [true, true])
        try assertStillHas(model, bytes: bytes, in: manager)
    }

    func testChangedModelOnServerIsFetched() throws {
        let bytesA = try Data(contentsOf: Self.modelA), bytesB = try Data(contentsOf: Self.modelB)
        let file = ServedFile(bytesA, etag: "\"v1\"")
        let server = try server { file.respond(to: $0) }
        let manager = manager()
        let model = remote(server.url("m.tflite"))
        guard case .success(let first) = manager.downloadAndWait(model) else { return XCTFail() }

        file.replace(with: bytesB, etag: "\"v2\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT")
        guard case .success(let second) = manager.downloadAndWait(model) else { return XCTFail() }
        XCTAssertEqual(server.requests.last?.headers["if-none-match"], "\"v1\"")
        XCTAssertNotEqual(second.path, first.path)
        XCTAssertEqual(second.etag, "\"v2\"")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: second.path)), bytesB)
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.path), "the old version was not removed")
        try assertStillHas(model, bytes: bytesB, in: manager)
        assertNoStrayFiles("m")
    }

    // MARK: HTTP errors and retries

    func testNotFoundFailsWithoutRetry() throws {
        let server = try server { _ in .init(status: 404, body: Data("no such model".utf8)) }
        let manager = manager()
        let observer = Observer(manager)
        let model = remote(server.url("missing.tflite"))
        guard let error = downloadError(manager.downloadAndWait(model)) else { return }
        XCTAssertEqual(error.code, .httpStatus)
        XCTAssertEqual(error.httpStatusCode, 404)
        XCTAssertTrue(error.message.contains("404"), error.message)
        XCTAssertEqual(server.requests.count, 1, "a 404 was retried")
        XCTAssertEqual(observer.events.count, 1)
        XCTAssertEqual(observer.events.first?.succeeded, false)
        XCTAssertEqual(observer.events.first?.model, model)
        let posted = observer.events.first?.error as? ModelDownloadError
        XCTAssertEqual(posted?.httpStatusCode, 404)
        XCTAssertEqual((observer.events.first?.error).map { ($0 as NSError).code }, ModelDownloadError.Code.httpStatus.rawValue)
        XCTAssertFalse(manager.isModelDownloaded(model))
        XCTAssertFalse(FileManager.default.fileExists(atPath: cacheDirectory.appendingPathComponent("classifier").path), "a failed first download left its directory")
    }

    func testServerErrorIsRetriedThenFailsKeepingPreviousVersion() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let failing = ServedFlag()
        let server = try server { request in failing.isSet ? .init(status: 500, body: Data("oops".utf8)) : file.respond(to: request) }
        let manager = manager(retries: 2)
        let observer = Observer(manager)
        let model = remote(server.url("m.tflite"))
        guard case .success = manager.downloadAndWait(model) else { return XCTFail() }

        failing.set()
        guard let error = downloadError(manager.downloadAndWait(model)) else { return }
        XCTAssertEqual(error.code, .httpStatus)
        XCTAssertEqual(error.httpStatusCode, 500)
        XCTAssertEqual(server.requests.count, 1 + 3, "expected 1 + maxRetries requests for the 500s")
        XCTAssertEqual(observer.events.map(\.succeeded), [true, false])
        XCTAssertEqual((observer.events.last?.error as? ModelDownloadError)?.httpStatusCode, 500)
        try assertStillHas(model, bytes: bytes, in: manager)
        assertNoStrayFiles("m")
    }

    func testTransientServerErrorsThenSuccess() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { request in request.index < 2 ? .init(status: 503) : file.respond(to: request) }
        let manager = manager(retries: 3)
        guard case .success(let entry) = manager.downloadAndWait(remote(server.url("m.tflite"))) else { return XCTFail() }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: entry.path)), bytes)
        XCTAssertEqual(server.requests.count, 3)
    }

    // MARK: Interrupted transfers

    func testDroppedConnectionResumesWithRange() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let half = bytes.count / 2
        let server = try server { request in
            var response = file.respond(to: request)
            if request.index == 0 { response.dropAfterBodyBytes = half }
            return response
        }
        let manager = manager()
        let observer = Observer(manager)
        let model = remote(server.url("m.tflite"), sha256: Self.shaA)
        guard case .success(let entry) = manager.downloadAndWait(model) else { return XCTFail("\(observer.events)") }
        XCTAssertEqual(server.requests.count, 2)
        let resumed = server.requests.last
        let range = resumed?.headers["range"] ?? ""
        XCTAssertTrue(range.hasPrefix("bytes=") && range.hasSuffix("-"), range)
        let offset = Int(range.dropFirst(6).dropLast()) ?? -1
        XCTAssertTrue(offset > 0 && offset <= half, "resumed at \(offset)")
        XCTAssertEqual(resumed?.headers["if-range"], "\"v1\"")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: entry.path)), bytes)
        XCTAssertEqual(observer.events.map(\.succeeded), [true])
        assertNoStrayFiles("m")
    }

    func testResumeRestartsWhenTheFileChanged() throws {
        let bytesA = try Data(contentsOf: Self.modelA), bytesB = try Data(contentsOf: Self.modelB)
        let file = ServedFile(bytesA, etag: "\"v1\"")
        let server = try server { request in
            var response = file.respond(to: request)
            if request.index == 0 {
                response.dropAfterBodyBytes = 100_000
                // The file changes on the server while the client is away.
                file.replace(with: bytesB, etag: "\"v2\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT")
            }
            return response
        }
        let manager = manager()
        guard case .success(let entry) = manager.downloadAndWait(remote(server.url("m.tflite"))) else { return XCTFail() }
        XCTAssertEqual(server.requests.last?.headers["if-range"], "\"v1\"")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: entry.path)), bytesB, "a 200 to a Range request must restart the file")
        XCTAssertEqual(entry.etag, "\"v2\"")
    }

    func testInterruptedDownloadResumesOnTheNextCall() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { request in
            var response = file.respond(to: request)
            if request.index == 0 { response.dropAfterBodyBytes = 200_000 }
            return response
        }
        let manager = manager(retries: 0)
        let model = remote(server.url("m.tflite"))
        guard let error = downloadError(manager.downloadAndWait(model)) else { return }
        XCTAssertEqual(error.code, .transport)
        XCTAssertFalse(manager.isModelDownloaded(model), "a partial download counts as downloaded")
        assertNoStrayFiles("m", allowPartial: true)
        guard case .success(let entry) = manager.downloadAndWait(model) else { return XCTFail() }
        XCTAssertNotNil(server.requests.last?.headers["range"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: entry.path)), bytes)
        assertNoStrayFiles("m")
    }

    // MARK: Verification

    func testWrongSHA256IsRejectedAndPreviousVersionKept() throws {
        let bytesA = try Data(contentsOf: Self.modelA), bytesB = try Data(contentsOf: Self.modelB)
        let file = ServedFile(bytesA, etag: "\"v1\"")
        let server = try server { file.respond(to: $0) }
        let manager = manager()
        let observer = Observer(manager)
        let model = remote(server.url("m.tflite"), sha256: Self.shaA)
        guard case .success = manager.downloadAndWait(model) else { return XCTFail() }

        // The server now serves another file: its digest is not the pinned one.
        file.replace(with: bytesB, etag: "\"v2\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT")
        guard let error = downloadError(manager.downloadAndWait(model)) else { return }
        XCTAssertEqual(error.code, .checksumMismatch)
        XCTAssertTrue(error.message.contains(Self.shaA), error.message)
        XCTAssertEqual(observer.events.map(\.succeeded), [true, false])
        try assertStillHas(model, bytes: bytesA, in: manager)
        assertNoStrayFiles("m")

        // A first download with a wrong digest stores nothing.
        let other = remote(server.url("m.tflite"), name: "other", sha256: String(repeating: "ab", count: 32))
        XCTAssertEqual(downloadError(manager.downloadAndWait(other))?.code, .checksumMismatch)
        XCTAssertFalse(manager.isModelDownloaded(other))
        XCTAssertFalse(FileManager.default.fileExists(atPath: cacheDirectory.appendingPathComponent("other").path))
    }

    func testFileThatIsNotAModelIsRejected() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { file.respond(to: $0) }
        let manager = manager()
        let model = remote(server.url("m.tflite"))
        guard case .success = manager.downloadAndWait(model) else { return XCTFail() }

        file.replace(with: Data("<html>this is not a model</html>".utf8) + Data(repeating: 7, count: 5000), etag: "\"v2\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT")
        guard let error = downloadError(manager.downloadAndWait(model)) else { return }
        XCTAssertEqual(error.code, .invalidModel)
        try assertStillHas(model, bytes: bytes, in: manager)
        assertNoStrayFiles("m")
    }

    func testMaximumSizeIsEnforced() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let withLength = try server { request in ServedFile(bytes, etag: "\"v1\"").respond(to: request) }
        let manager = manager()
        var configuration = manager.configuration
        configuration.maximumModelSize = 100_000
        manager.configuration = configuration
        let first = downloadError(manager.downloadAndWait(remote(withLength.url("m.tflite"))))
        XCTAssertEqual(first?.code, .tooLarge)
        XCTAssertEqual(withLength.requests.count, 1)

        // Without Content-Length the limit is enforced while streaming.
        let withoutLength = try server { _ in .init(status: 200, body: bytes, sendsContentLength: false) }
        let second = downloadError(manager.downloadAndWait(remote(withoutLength.url("m.tflite"))))
        XCTAssertEqual(second?.code, .tooLarge)
        XCTAssertFalse(FileManager.default.fileExists(atPath: cacheDirectory.appendingPathComponent("classifier").path))
    }

    func testSlowServerTimesOut() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let server = try server { request in
            var response = ServedFile(bytes, etag: "\"v1\"").respond(to: request)
            response.delayBeforeBody = 3
            return response
        }
        let manager = manager(timeout: 0.4, retries: 1)
        let start = Date()
        guard let error = downloadError(manager.downloadAndWait(remote(server.url("m.tflite")))) else { return }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(error.code, .timedOut, error.message)
        XCTAssertLessThan(elapsed, 2.5, "the timeout did not fire")
        XCTAssertGreaterThan(elapsed, 0.75, "two requests cannot both time out after 0.4 s in less time")
        XCTAssertEqual(server.requests.count, 2, "a timeout is retried")
        XCTAssertFalse(manager.isModelDownloaded(remote(server.url("m.tflite"))))
    }

    // MARK: Sharing, names, deletion

    func testConcurrentDownloadsShareOneTransfer() async throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { request in
            var response = file.respond(to: request)
            response.chunkSize = 64 * 1024
            response.chunkDelay = 0.03
            return response
        }
        let manager = manager()
        let model = remote(server.url("m.tflite"))
        let first = manager.download(model, conditions: ModelDownloadConditions())
        let second = manager.download(remote(server.url("m.tflite")), conditions: ModelDownloadConditions())
        XCTAssertTrue(first === second, "the second caller got another Progress")
        async let a = manager.downloadModel(model)
        async let b = manager.downloadModel(model)
        let (urlA, urlB) = try await (a, b)
        XCTAssertEqual(urlA, urlB)
        XCTAssertEqual(server.requests.count, 1, "two transfers for one model")
        XCTAssertEqual(first.fractionCompleted, 1)
    }

    func testCancellingTheProgressCancelsTheDownload() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let server = try server { request in
            var response = ServedFile(bytes, etag: "\"v1\"").respond(to: request)
            response.chunkSize = 16 * 1024
            response.chunkDelay = 0.05
            return response
        }
        let manager = manager()
        let model = remote(server.url("m.tflite"))
        let progress = manager.download(model, conditions: ModelDownloadConditions())
        Thread.sleep(forTimeInterval: 0.2)
        progress.cancel()
        XCTAssertEqual(downloadError(manager.downloadAndWait(model))?.code, .cancelled)
        XCTAssertFalse(manager.isModelDownloaded(model))
    }

    func testInvalidNamesAndSourcesFailWithoutRequests() throws {
        let server = try server { _ in .init(status: 500) }
        let manager = manager()
        let observer = Observer(manager)
        for name in ["", "../escape", "a/b", ".hidden", "model.tflite", String(repeating: "x", count: 200)] {
            let error = downloadError(manager.downloadAndWait(remote(server.url("m.tflite"), name: name)))
            XCTAssertEqual(error?.code, .invalidSource, name)
        }
        XCTAssertEqual(downloadError(manager.downloadAndWait(remote(server.url("m"), sha256: "123")))?.code, .invalidSource)
        let ftp = CustomRemoteModel(remoteModelSource: HTTPModelSource(name: "ftp", url: URL(string: "ftp://127.0.0.1/m.tflite")!))
        XCTAssertEqual(downloadError(manager.downloadAndWait(ftp))?.code, .invalidSource)
        XCTAssertEqual(server.requests.count, 0)
        XCTAssertEqual(observer.events.filter { !$0.succeeded }.count, 8)
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path)) ?? [], [])
    }

    func testDeleteDownloadedModel() throws {
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { file.respond(to: $0) }
        let manager = manager()
        let model = remote(server.url("m.tflite"))
        guard case .success = manager.downloadAndWait(model) else { return XCTFail() }

        // Completion on the main queue, as in ML Kit (XCTest's wait runs the main run loop).
        let deleted = expectation(description: "deleted")
        manager.deleteDownloadedModel(model) { error in
            XCTAssertNil(error)
            XCTAssertTrue(Thread.isMainThread)
            deleted.fulfill()
        }
        wait(for: [deleted], timeout: 10)
        XCTAssertFalse(manager.isModelDownloaded(model))
        XCTAssertFalse(FileManager.default.fileExists(atPath: cacheDirectory.appendingPathComponent("m").path))

        // On a chosen queue; deleting a model that is not there is an error.
        let queue = DispatchQueue(label: "test.delete")
        let again = expectation(description: "again")
        manager.deleteDownloadedModel(model, callbackQueue: queue) { error in
            XCTAssertEqual((error as? ModelDownloadError)?.code, .notDownloaded)
            again.fulfill()
        }
        wait(for: [again], timeout: 10)
    }

    // MARK: Tasks with remote models

    func testLabelerWithRemoteModelThatIsNotDownloaded() throws {
        let options = CustomImageLabelerOptions(remoteModel: remote(URL(string: "http://127.0.0.1:9/m.tflite")!))
        options.modelManager = manager()
        XCTAssertNil(options.localModel)
        XCTAssertThrowsError(try ImageLabeler.imageLabeler(options: options)) { error in
            guard let error = error as? VisionError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.code, .modelNotFound)
            XCTAssertTrue(error.message.contains("has not been downloaded; call ModelManager.download first"), error.message)
        }
    }

    /// ML Kit's documented pattern: label with the bundled local model until the remote one is
    /// downloaded, then with the remote one. Same file, so the same labels.
    func testRemoteOrLocalPatternGivesTheSameLabels() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "model-sized labeling runs in release builds (swift test -c release)")
        let bytes = try Data(contentsOf: Self.modelA)
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try server { file.respond(to: $0) }
        let manager = manager()
        let remoteModel = remote(server.url("mobilenet.tflite"), name: "mobilenet", sha256: Self.shaA)
        let localModel = LocalModel(url: Self.modelA)
        let image = try VisionImage(contentsOf: SharedData.image("burger.jpg"))

        func options() -> CustomImageLabelerOptions {
            let options = manager.isModelDownloaded(remoteModel)
                ? CustomImageLabelerOptions(remoteModel: remoteModel) : CustomImageLabelerOptions(localModel: localModel)
            options.modelManager = manager
            options.maxResultCount = 5
            return options
        }
        let before = options()
        XCTAssertNotNil(before.localModel)
        let localLabels = try ImageLabeler.imageLabeler(options: before).results(in: image)
        XCTAssertFalse(localLabels.isEmpty)

        guard case .success = manager.downloadAndWait(remoteModel) else { return XCTFail() }
        let after = options()
        XCTAssertNotNil(after.remoteModel)
        let remoteLabels = try ImageLabeler.imageLabeler(options: after).results(in: image)
        XCTAssertEqual(remoteLabels, localLabels)
        XCTAssertEqual(remoteLabels.first?.index, 934, "cheeseburger")

        // After a failed update the previous download still labels (the pinned SHA-256 rejects it).
        file.replace(with: Data("not a model".utf8), etag: "\"v2\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT")
        XCTAssertEqual(downloadError(manager.downloadAndWait(remoteModel))?.code, .checksumMismatch)
        XCTAssertTrue(manager.isModelDownloaded(remoteModel))
        XCTAssertEqual(try ImageLabeler.imageLabeler(options: options()).results(in: image), localLabels)
    }
}

/// A flag a server handler reads.
final class ServedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}
