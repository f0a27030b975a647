import Foundation
import TestSupport
import XCTest

/// Base of the end-to-end tests of the `edgevision` commands: runs the built binary (found by
/// `ToolRunner`) with `EDGEVISION_MODELS` pointed at the shared models and a time limit, and checks
/// the exit-code and output conventions.
///
/// Runs that execute a model on real images need the optimized tool (`swift test -c release`,
/// which builds the tool in the same configuration); they call ``requireOptimizedBuild()`` first.
/// Usage and exit-code tests run in debug builds too.
class CLITestCase: XCTestCase {
    override class func setUp() {
        super.setUp()
        // The tool inherits the test process's environment: default models from the shared models.
        setenv("EDGEVISION_MODELS", SharedData.models.path, 1)
    }

    /// A fresh temporary directory, removed after the test.
    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("edgevision-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    func requireOptimizedBuild() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "runs models on real images: needs swift test -c release")
    }

    func model(_ name: String) -> String { SharedData.model(name).path }
    func image(_ name: String) -> String { SharedData.image(name).path }
    var trafficVideo: String { SharedData.videos.appendingPathComponent("traffic_frames.mp4").path }

    /// Runs `edgevision arguments`, killing it after `timeout` seconds (a failure). Fails the test
    /// if the tool crashed (exit code outside 0...2).
    @discardableResult
    func tool(_ arguments: [String], timeout: TimeInterval = 90, file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let run = try ToolRunner.run(arguments, timeout: timeout)
        if run.timedOut {
            XCTFail("edgevision \(arguments.joined(separator: " ")) did not finish within \(timeout) s", file: file, line: line)
        }
        let result = RunResult(exitCode: run.exitCode, stdout: run.stdout, stderr: run.stderr)
        XCTAssertTrue((0...2).contains(result.exitCode) && run.exitedNormally,
                      "edgevision \(arguments.joined(separator: " ")) crashed or exited with \(result.exitCode): \(result.stderr)", file: file, line: line)
        return result
    }

    /// Runs a command that must succeed (exit 0, nothing on stderr unless `allowStderr`).
    @discardableResult
    func succeed(_ arguments: [String], allowStderr: Bool = false, timeout: TimeInterval = 90, file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let result = try tool(arguments, timeout: timeout, file: file, line: line)
        XCTAssertEqual(result.exitCode, 0, "edgevision \(arguments.joined(separator: " ")): \(result.stderr)", file: file, line: line)
        if !allowStderr { XCTAssertEqual(result.stderr, "", "edgevision \(arguments.joined(separator: " "))", file: file, line: line) }
        return result
    }

    /// A runtime error: exit code 1 and exactly one line on stderr (ending in a newline) that
    /// contains each of `fragments`.
    func assertRuntimeError(_ result: RunResult, _ fragments: [String] = [], _ context: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.exitCode, 1, "\(context): \(result.stderr)", file: file, line: line)
        XCTAssertTrue(result.stderr.hasSuffix("\n"), "\(context): stderr ends the line: \(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.stderr.filter { $0 == "\n" }.count, 1, "\(context): exactly one line on stderr: \(result.stderr)", file: file, line: line)
        XCTAssertTrue(result.stderr.contains("error"), "\(context): \(result.stderr)", file: file, line: line)
        for fragment in fragments {
            XCTAssertTrue(result.stderr.contains(fragment), "\(context): '\(fragment)' not in: \(result.stderr)", file: file, line: line)
        }
    }

    /// A usage error: exit code 2, nothing on stdout, an explanation on stderr.
    func assertUsageError(_ result: RunResult, _ fragment: String? = nil, _ context: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.exitCode, 2, "\(context): \(result.stderr)", file: file, line: line)
        XCTAssertEqual(result.stdout, "", context, file: file, line: line)
        XCTAssertTrue(result.stderr.hasPrefix("edgevision: "), "\(context): \(result.stderr)", file: file, line: line)
        if let fragment { XCTAssertTrue(result.stderr.contains(fragment), "\(context): '\(fragment)' not in: \(result.stderr)", file: file, line: line) }
    }

    /// Stdout that is exactly one JSON object on one line.
    func jsonObject(_ result: RunResult, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        XCTAssertEqual(result.stdout.filter { $0 == "\n" }.count, 1, "one line of JSON: \(result.stdout.prefix(500))", file: file, line: line)
        return try parseObject(result.stdout, file: file, line: line)
    }

    /// Stdout as JSON Lines: one object per line.
    func jsonLines(_ result: RunResult, file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        XCTAssertTrue(result.stdout.isEmpty || result.stdout.hasSuffix("\n"), "JSON Lines end with a newline", file: file, line: line)
        return try result.stdout.split(separator: "\n").map { try parseObject(String($0), file: file, line: line) }
    }

    func parseObject(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try XCTUnwrap(value as? [String: Any], "not a JSON object: \(text.prefix(500))", file: file, line: line)
    }

    /// The `{"summary":{"frames","processed","dropped"}}` line that ends a `--live --json` run, with
    /// its checks: every frame was either processed or dropped, and at least one was processed.
    /// Returns the per-frame lines before it.
    func liveLines(_ result: RunResult, frames: Int, command: String, file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        var lines = try jsonLines(result, file: file, line: line)
        let last = try XCTUnwrap(lines.popLast(), "no summary line", file: file, line: line)
        let summary = try XCTUnwrap(last["summary"] as? [String: Any], "the last line is the summary: \(last)", file: file, line: line)
        XCTAssertEqual(last.count, 1, file: file, line: line)
        let total = try XCTUnwrap(summary["frames"] as? Int, file: file, line: line)
        let processed = try XCTUnwrap(summary["processed"] as? Int, file: file, line: line)
        let dropped = try XCTUnwrap(summary["dropped"] as? Int, file: file, line: line)
        XCTAssertEqual(total, frames, "\(summary)", file: file, line: line)
        XCTAssertEqual(processed + dropped, total, "every frame is processed or dropped: \(summary)", file: file, line: line)
        XCTAssertGreaterThanOrEqual(processed, 1, "\(summary)", file: file, line: line)
        XCTAssertEqual(lines.count, processed, "one line per processed frame", file: file, line: line)
        XCTAssertTrue(lines.allSatisfy { $0["summary"] == nil }, file: file, line: line)
        // Processed frames come out in timestamp order.
        let timestamps = lines.compactMap { $0["timestampMs"] as? Int }
        XCTAssertEqual(timestamps.count, lines.count, file: file, line: line)
        XCTAssertEqual(timestamps, timestamps.sorted(), file: file, line: line)
        XCTAssertEqual(Set(timestamps).count, timestamps.count, file: file, line: line)
        // The counts on stderr too, as one line.
        XCTAssertEqual(result.stderr, "edgevision \(command): live: \(total) frames, \(processed) processed, \(dropped) dropped\n", file: file, line: line)
        return lines
    }

    /// The PNG's colour type (IHDR byte 25): 0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGBA.
    func pngColorType(_ url: URL, file: StaticString = #filePath, line: UInt = #line) throws -> UInt8 {
        let data = try Data(contentsOf: url)
        XCTAssertGreaterThan(data.count, 33, file: file, line: line)
        XCTAssertEqual(Array(data.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "PNG signature", file: file, line: line)
        XCTAssertEqual(String(decoding: data[12..<16], as: UTF8.self), "IHDR", file: file, line: line)
        return data[25]
    }

    /// Writes `bytes` to `directory/name` and returns its path.
    func write(_ bytes: Data, _ name: String, in directory: URL) throws -> String {
        let url = directory.appendingPathComponent(name)
        try bytes.write(to: url)
        return url.path
    }

    /// Bytes that no decoder accepts but that start like a JPEG.
    var corruptImageBytes: Data { Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46]) + Data(repeating: 0x5A, count: 300) }
}

/// The outcome of one run of the tool.
struct RunResult {
    let exitCode: Int32
    let stdout: String
    let stderr: String
}
