import EdgeVision
import Foundation
import TestSupport
import XCTest

/// Installing the default models (pinned SHA-256) and the `edgevision models` command.
final class DefaultModelsTests: XCTestCase {
    var directory: URL!
    var servers: [TestHTTPServer] = []

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("edgevision-defaults-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let missing = DefaultModels.all.filter { !FileManager.default.fileExists(atPath: SharedData.model($0.fileName).path) }
        try XCTSkipUnless(missing.isEmpty, "shared models missing: \(missing.map(\.fileName))")
    }

    override func tearDown() {
        for server in servers { server.stop() }
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func testPinnedDigestsMatchTheSharedFiles() throws {
        XCTAssertEqual(DefaultModels.all.map(\.fileName), ["selfie_segmentation.tflite", "selfie_segmentation_landscape.tflite",
                                                         "mobilenet_v2_1.0_224_quant.tflite", "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"])
        for model in DefaultModels.all {
            let path = SharedData.model(model.fileName).path
            XCTAssertEqual(try SHA256.hex(ofFileAt: path), model.sha256, model.fileName)
            XCTAssertEqual((try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value, model.size, model.fileName)
            XCTAssertFalse(model.urls.isEmpty)
            XCTAssertTrue(model.urls.allSatisfy { $0.scheme == "https" })
        }
    }

    func testInstallFromDirectoryVerifiesAndIsIdempotent() throws {
        let cache = directory.appendingPathComponent("cache")
        var actions: [DefaultModels.InstallAction] = []
        let paths = try DefaultModels.install(from: SharedData.models, into: cache) { _, _, action in actions.append(action) }
        XCTAssertEqual(paths.count, 4)
        XCTAssertEqual(actions, Array(repeating: .copied, count: 4))
        for model in DefaultModels.all {
            let size = (try FileManager.default.attributesOfItem(atPath: cache.appendingPathComponent(model.fileName).path)[.size] as? NSNumber)?.int64Value
            XCTAssertEqual(size, model.size, model.fileName)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: cache.path).sorted(), DefaultModels.all.map(\.fileName).sorted(), "temporary files left")
        actions = []
        try DefaultModels.install(from: SharedData.models, into: cache) { _, _, action in actions.append(action) }
        XCTAssertEqual(actions, Array(repeating: .alreadyInstalled, count: 4))
    }

    func testTamperedOrMissingSourceIsRejected() throws {
        let source = directory.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        var bytes = try Data(contentsOf: SharedData.model("selfie_segmentation.tflite"))
        bytes[bytes.count / 2] ^= 0xff
        try bytes.write(to: source.appendingPathComponent("selfie_segmentation.tflite"))
        let cache = directory.appendingPathComponent("cache")
        XCTAssertThrowsError(try DefaultModels.install(from: source, into: cache)) { error in
            XCTAssertEqual((error as? ModelDownloadError)?.code, .checksumMismatch, "\(error)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: cache.path), [], "a rejected file was installed")

        try FileManager.default.removeItem(at: source.appendingPathComponent("selfie_segmentation.tflite"))
        XCTAssertThrowsError(try DefaultModels.install(from: source, into: cache)) { error in
            XCTAssertEqual((error as? ModelDownloadError)?.code, .notDownloaded, "\(error)")
            XCTAssertTrue("\(error)".contains("selfie_segmentation.tflite"))
        }
    }

    func testModelsCommand() throws {
        guard ToolRunner.toolPath != nil else { throw XCTSkip("the edgevision executable was not built next to the tests") }
        let cache = directory.appendingPathComponent("cache").path
        let install = try ToolRunner.run(["models", "install-defaults", "--from", SharedData.models.path, "--cache-dir", cache])
        XCTAssertEqual(install.exitCode, 0, install.stderr)
        XCTAssertEqual(install.stdout.split(separator: "\n").count, 4)

        let bytes = try Data(contentsOf: SharedData.model("mobilenet_v1_0.25_224_quant.tflite"))
        let file = ServedFile(bytes, etag: "\"v1\"")
        let server = try TestHTTPServer(lifetime: 30) { request in
            request.path.hasSuffix("nope.tflite") ? .init(status: 404) : file.respond(to: request)
        }
        servers.append(server)
        let url = server.url("models/mobilenet_v1_0.25_224_quant.tflite").absoluteString
        let download = try ToolRunner.run(["models", "download", url, "--sha256", "e480eb15572f86d3d5f1be6e83e35b3c7d509ab2bcec353707d1f614e14edca2", "--cache-dir", cache])
        XCTAssertEqual(download.exitCode, 0, download.stderr)
        let path = download.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes)
        XCTAssertTrue(download.stderr.contains("100%"), download.stderr)

        let list = try ToolRunner.run(["models", "list", "--cache-dir", cache, "--json"])
        XCTAssertEqual(list.exitCode, 0, list.stderr)
        let json = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any]
        let models = json?["models"] as? [[String: Any]] ?? []
        XCTAssertEqual(models.count, 5)
        let downloaded = models.first { $0["name"] as? String == "mobilenet_v1_0.25_224_quant" }
        XCTAssertEqual(downloaded?["path"] as? String, path)
        XCTAssertEqual(downloaded?["sha256"] as? String, "e480eb15572f86d3d5f1be6e83e35b3c7d509ab2bcec353707d1f614e14edca2")
        XCTAssertEqual(downloaded?["size"] as? Int, bytes.count)
        XCTAssertEqual(downloaded?["source"] as? String, url)

        let missing = try ToolRunner.run(["models", "download", server.url("nope.tflite").absoluteString, "--cache-dir", cache])
        XCTAssertEqual(missing.exitCode, 1)
        XCTAssertTrue(missing.stderr.contains("404"), missing.stderr)

        let delete = try ToolRunner.run(["models", "delete", "mobilenet_v1_0.25_224_quant", "--cache-dir", cache])
        XCTAssertEqual(delete.exitCode, 0, delete.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try ToolRunner.run(["models", "delete", "mobilenet_v1_0.25_224_quant", "--cache-dir", cache]).exitCode, 1)

        XCTAssertEqual(try ToolRunner.run(["models"]).exitCode, 2)
        XCTAssertEqual(try ToolRunner.run(["models", "list", "--sha256", "00"]).exitCode, 2)
        XCTAssertEqual(try ToolRunner.run(["models", "download", "ftp://x/m.tflite"]).exitCode, 2)
    }
}
