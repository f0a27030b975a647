import Foundation

/// The result of running a command-line tool.
public struct ToolResult: Sendable {
    public let exitCode: Int32
    public let stdout: String
    public let stderr: String
    /// Whether the tool exited normally (not killed by a signal: no crash, no timeout kill).
    public let exitedNormally: Bool
    /// Whether the run was killed because it exceeded its time limit.
    public let timedOut: Bool
}

/// Runs the built `edgevision` executable, which SwiftPM puts in the same directory as the test
/// bundle (`.build/<triple>/<config>/`). On Linux the test bundle is an executable in that directory
/// (`Bundle.main`); on macOS it is a `.xctest` bundle in it. `EDGEVISION_TOOL` overrides the path.
public enum ToolRunner {
    private final class Marker {}

    /// The path of the `edgevision` executable, or nil if it cannot be found.
    public static let toolPath: String? = {
        let fm = FileManager.default
        if let override = ProcessInfo.processInfo.environment["EDGEVISION_TOOL"], !override.isEmpty {
            return fm.isExecutableFile(atPath: override) ? override : nil
        }
        var starts: [URL] = [Bundle.main.bundleURL, Bundle(for: Marker.self).bundleURL]
        if let executable = Bundle.main.executableURL { starts.append(executable) }
        if let argument = CommandLine.arguments.first { starts.append(URL(fileURLWithPath: argument)) }
        for start in starts {
            // Walk up a few levels: .../release/X.xctest/Contents/MacOS/X -> .../release.
            var directory = start.standardizedFileURL
            for _ in 0..<5 {
                let candidate = directory.appendingPathComponent("edgevision").path
                var isDirectory: ObjCBool = false
                if fm.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
                   fm.isExecutableFile(atPath: candidate) {
                    return candidate
                }
                directory = directory.deletingLastPathComponent()
            }
        }
        return nil
    }()

    /// Runs `edgevision` with `arguments`; stdout and stderr are captured through temporary files
    /// (no pipe can fill up and block the tool). With a `timeout`, the tool is killed after that
    /// many seconds and the result says so.
    public static func run(_ arguments: [String], timeout: TimeInterval? = nil) throws -> ToolResult {
        guard let path = toolPath else {
            throw ToolRunnerError("the edgevision executable was not found next to the test bundle (set EDGEVISION_TOOL)")
        }
        let fm = FileManager.default
        let directory = fm.temporaryDirectory.appendingPathComponent("edgevision-tool-\(UUID().uuidString)")
        try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout"), errURL = directory.appendingPathComponent("stderr")
        _ = fm.createFile(atPath: outURL.path, contents: nil)
        _ = fm.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        try process.run()
        var timedOut = false
        if let timeout, finished.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            process.terminate()
            finished.wait()
        } else if timeout == nil {
            finished.wait()
        }
        try out.close()
        try err.close()
        return ToolResult(exitCode: process.terminationStatus,
                          stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
                          stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self),
                          exitedNormally: process.terminationReason == .exit, timedOut: timedOut)
    }
}

public struct ToolRunnerError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs the `edgevision` tool: `(exitCode, stdout, stderr)`.
public func runTool(_ arguments: [String]) throws -> (exitCode: Int32, stdout: String, stderr: String) {
    let r = try ToolRunner.run(arguments)
    return (r.exitCode, r.stdout, r.stderr)
}
