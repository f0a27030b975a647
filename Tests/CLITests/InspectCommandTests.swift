import Foundation
import TestSupport
import XCTest

/// End-to-end tests of `edgevision inspect` and the tool's exit codes, running the built binary.
final class InspectCommandTests: XCTestCase {
    /// Runs the tool; the one place that checks it was found and did not die on a signal.
    func tool(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> (exitCode: Int32, stdout: String, stderr: String) {
        let result = try runTool(arguments)
        XCTAssertTrue((0...2).contains(result.exitCode), "edgevision \(arguments) exited with \(result.exitCode): \(result.stderr)", file: file, line: line)
        return result
    }

    func parseJSONObject(_ text: String, _ context: String) throws -> [String: Any] {
        // Exactly one JSON object: the whole of stdout parses as one value, which is an object.
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(trimmed.hasPrefix("{") && trimmed.hasSuffix("}"), context)
        XCTAssertEqual(text.filter { $0 == "\n" }.count, 1, "\(context): one line of JSON")
        let value = try JSONSerialization.jsonObject(with: Data(trimmed.utf8))
        return try XCTUnwrap(value as? [String: Any], context)
    }

    func testInspectJSONMatchesTheReferenceIndexForEveryModel() throws {
        let index = try SharedData.goldenIndex()
        let models = try XCTUnwrap(index["models"] as? [String: [String: Any]])
        XCTAssertGreaterThanOrEqual(models.count, 15)
        let ssd: Set = ["coco_ssd_mobilenet_v1_1.0_quant_2018_06_29", "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29_score_calibration"]
        let mobileNets: Set = ["mobilenet_v1_0.25_128_quant", "mobilenet_v1_0.25_224_1_metadata_1", "mobilenet_v1_0.25_224_quant",
                               "mobilenet_v2_1.0_224_quant", "tf2_mobilenet_v2_1.0_224_ptq"]
        for (name, entry) in models.sorted(by: { $0.key < $1.key }) {
            let result = try tool(["inspect", SharedData.model("\(name).tflite").path, "--json"])
            XCTAssertEqual(result.exitCode, 0, "\(name): \(result.stderr)")
            XCTAssertEqual(result.stderr, "", name)
            let json = try parseJSONObject(result.stdout, name)

            let expectedCounts = try XCTUnwrap(entry["op_counts"] as? [String: Int], name)
            XCTAssertEqual(json["opCounts"] as? [String: Int], expectedCounts, name)
            let macs = try XCTUnwrap(entry["macs"] as? [String: Any], name)
            XCTAssertEqual(json["macs"] as? Int, try XCTUnwrap(macs["total"] as? Int, name), name)
            XCTAssertFalse(try XCTUnwrap(json["inputs"] as? [[String: Any]], name).isEmpty, name)
            XCTAssertFalse(try XCTUnwrap(json["outputs"] as? [[String: Any]], name).isEmpty, name)

            let metadata = try XCTUnwrap(json["metadata"] as? [String: Any], name)
            if ssd.contains(name) { XCTAssertEqual(metadata["labels"] as? Int, 90, name) }
            if mobileNets.contains(name) { XCTAssertEqual(metadata["labels"] as? Int, 1001, name) }
            if ssd.contains(name) || mobileNets.contains(name) {
                let normalization = try XCTUnwrap(metadata["normalization"] as? [String: Any], name)
                XCTAssertEqual(normalization["mean"] as? [Double], [127.5], name)
                XCTAssertEqual(normalization["std"] as? [Double], [127.5], name)
            }
            if name.hasPrefix("selfie_segmentation") {
                let normalization = try XCTUnwrap(metadata["normalization"] as? [String: Any], name)
                XCTAssertEqual(normalization["mean"] as? [Double], [0], name)
                XCTAssertEqual(normalization["std"] as? [Double], [255], name)
            }
            if name.hasSuffix("_no_metadata") || name == "traffic_model" || name == "model_invoking_error" {
                XCTAssertTrue(metadata["labels"] is NSNull, name)
                XCTAssertTrue(metadata["normalization"] is NSNull, name)
            }
        }
    }

    func testModelWithUnknownCustomOpInspects() throws {
        let path = SharedData.model("model_invoking_error.tflite").path
        let json = try tool(["inspect", path, "--json"])
        XCTAssertEqual(json.exitCode, 0, json.stderr)
        let object = try parseJSONObject(json.stdout, "model_invoking_error")
        XCTAssertEqual(object["opCounts"] as? [String: Int], ["CUSTOM:fake-op-double": 1])

        let text = try tool(["inspect", path])
        XCTAssertEqual(text.exitCode, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("CUSTOM:fake-op-double"), text.stdout)
    }

    func testHumanReadableOutput() throws {
        let result = try tool(["inspect", SharedData.model("mobilenet_v1_0.25_224_quant.tflite").path])
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        for heading in ["Inputs:", "Outputs:", "Operators:", "Multiply-accumulates: 41030528", "labels: 1001"] {
            XCTAssertTrue(result.stdout.contains(heading), "missing '\(heading)' in:\n\(result.stdout)")
        }
        XCTAssertThrowsError(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)))
    }

    func testMissingFileExitsWithOneAndOneLineOnStderr() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-model-\(UUID().uuidString).tflite").path
        for arguments in [["inspect", missing], ["inspect", missing, "--json"]] {
            let result = try tool(arguments)
            XCTAssertEqual(result.exitCode, 1, "\(arguments)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
            let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
            XCTAssertEqual(lines.count, 2, "one line ending in a newline: \(result.stderr)")
            XCTAssertTrue(result.stderr.hasSuffix("\n"))
            XCTAssertTrue(result.stderr.contains(missing), result.stderr)
        }
    }

    func testCorruptFileExitsWithOne() throws {
        let fm = FileManager.default
        let directory = fm.temporaryDirectory.appendingPathComponent("edgevision-cli-\(UUID().uuidString)")
        try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: directory) }
        let original = try Data(contentsOf: SharedData.model("mobilenet_v1_0.25_224_quant.tflite"))
        for (i, length) in [original.count / 2, 1000, 6, 0].enumerated() {
            let path = directory.appendingPathComponent("truncated\(i).tflite").path
            XCTAssertTrue(fm.createFile(atPath: path, contents: original.prefix(length)))
            for arguments in [["inspect", path], ["inspect", path, "--json"]] {
                let result = try tool(arguments)
                XCTAssertEqual(result.exitCode, 1, "\(length) bytes: \(result.stderr)")
                XCTAssertEqual(result.stdout, "", "\(length) bytes")
                XCTAssertEqual(result.stderr.filter { $0 == "\n" }.count, 1, result.stderr)
                XCTAssertTrue(result.stderr.contains("error"), result.stderr)
            }
        }
        // A directory is not a model file either.
        let result = try tool(["inspect", directory.path])
        XCTAssertEqual(result.exitCode, 1, result.stderr)
    }

    func testUsageErrorsExitWithTwo() throws {
        let model = SharedData.model("model_invoking_error.tflite").path
        let cases: [[String]] = [
            [],
            ["inspect"],
            ["inspect", model, "--no-such-option"],
            ["inspect", model, "-x"],
            ["inspect", model, "extra-argument"],
            ["inspect", model, "--json=yes"],
            ["no-such-command"],
            ["--no-such-option"],
        ]
        for arguments in cases {
            let result = try tool(arguments)
            XCTAssertEqual(result.exitCode, 2, "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
            XCTAssertFalse(result.stderr.isEmpty, "\(arguments)")
        }
    }

    func testHelpExitsWithZero() throws {
        for arguments in [["help"], ["--help"], ["-h"], ["help", "inspect"], ["inspect", "--help"], ["inspect", "-h"]] {
            let result = try tool(arguments)
            XCTAssertEqual(result.exitCode, 0, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stdout.contains("Usage: edgevision"), "\(arguments): \(result.stdout)")
            XCTAssertEqual(result.stderr, "", "\(arguments)")
        }
        let inspectHelp = try tool(["inspect", "--help"])
        XCTAssertTrue(inspectHelp.stdout.contains("--json"), inspectHelp.stdout)
        let overview = try tool(["help"])
        XCTAssertTrue(overview.stdout.contains("inspect"), overview.stdout)
    }
}
