import Dispatch
import Foundation

/// The result of one input of a command: JSON fields (without "input") and human-readable text.
struct ItemResult {
    var fields: [(String, JSON)]
    var text: String
}

/// Runs a command over one or many inputs with the model loaded once.
///
/// One input: the result is printed as one JSON object (`--json`) or as text. Several inputs or a
/// directory: every input is processed (in parallel with `--threads N`), results are printed in
/// input order as JSON Lines `{"input": PATH, ...}` or `{"input": PATH, "error": MESSAGE}` (or text
/// sections), a progress line goes to stderr, and the exit code is 1 if any input failed.
enum Batch {
    static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "webp", "bmp"]

    static let options: [OptionSpec] = [
        .value("threads", "N", "Inputs processed in parallel when several are given (default 1)."),
    ]

    static func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// Expands directories (their image files, sorted) and checks that files exist.
    static func expand(_ paths: [String]) throws -> [String] {
        guard !paths.isEmpty else { throw UsageError("missing argument IMAGE") }
        var result: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                result.append(path)  // reported as that input's error
                continue
            }
            if isDirectory.boolValue {
                let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                let images = entries.filter { imageExtensions.contains(($0 as NSString).pathExtension.lowercased()) }.sorted()
                result += images.map { (path as NSString).appendingPathComponent($0) }
            } else {
                result.append(path)
            }
        }
        return result
    }

    /// Runs `body` for every input and prints the results; returns normally only when all succeeded.
    static func run(_ args: ParsedArguments, inputs rawInputs: [String], body: @escaping @Sendable (String) throws -> ItemResult) throws {
        let inputs = try expand(rawInputs)
        let json = args.flag("json")
        let single = rawInputs.count == 1 && inputs.count == 1 && inputs[0] == rawInputs[0]
        if single {
            let result = try body(inputs[0])
            print(json ? JSON.object(result.fields).serialized : result.text, terminator: json ? "\n" : "")
            return
        }
        let threads = try args.int("threads") ?? 1
        guard threads >= 1, threads <= 256 else { throw UsageError("--threads must be in 1...256") }
        let progress = Progress(total: inputs.count)
        let results = ResultSlots(count: inputs.count)
        let next = Counter()
        let group = DispatchGroup()
        for _ in 0..<min(threads, inputs.count) {
            DispatchQueue.global().async(group: group) {
                while let index = next.take(below: inputs.count) {
                    let outcome: Result<ItemResult, Error> = Result { try body(inputs[index]) }
                    results.set(index, outcome)
                    progress.advance()
                }
            }
        }
        // Print in input order as results arrive.
        var printed = 0, failures = 0
        while printed < inputs.count {
            guard let outcome = results.wait(printed) else { continue }
            let input = inputs[printed]
            switch outcome {
            case .success(let result):
                if json {
                    print(JSON.object([("input", .string(input))] + result.fields).serialized)
                } else {
                    print("== \(input)\n" + result.text, terminator: "")
                }
            case .failure(let error):
                failures += 1
                if json {
                    print(JSON.object([("input", .string(input)), ("error", .string(CommandLineTool.oneLine(error)))]).serialized)
                } else {
                    print("== \(input)\nerror: \(CommandLineTool.oneLine(error))")
                }
            }
            printed += 1
        }
        group.wait()
        progress.finish()
        if failures > 0 { throw CLIError("\(failures) of \(inputs.count) inputs failed") }
    }

    /// Progress on stderr: a bar with rate and ETA on a terminal; otherwise (logs, pipes) a plain
    /// line every 5 seconds, so a batch that finishes within 5 seconds writes nothing there.
    final class Progress: @unchecked Sendable {
        let total: Int
        let start = Date()
        private let lock = NSLock()
        private var done = 0
        private var lastReport: Date
        private var reported = false
        private let terminal = isatty(STDERR_FILENO) != 0

        init(total: Int) {
            self.total = total
            lastReport = terminal ? .distantPast : start
        }

        func advance() {
            lock.lock(); defer { lock.unlock() }
            done += 1
            let now = Date()
            let due = now.timeIntervalSince(lastReport) >= (terminal ? 0.1 : 5)
            // The final count only when something was shown before (on a terminal, always).
            guard due || (done == total && (terminal || reported)) else { return }
            lastReport = now
            reported = true
            let elapsed = now.timeIntervalSince(start)
            let rate = elapsed > 0 ? Double(done) / elapsed : 0
            let eta = rate > 0 ? Double(total - done) / rate : 0
            if terminal {
                let width = 30, filled = width * done / max(total, 1)
                let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
                FileHandle.standardError.write(Data(String(format: "\r[%@] %d/%d  %.1f/s  ETA %.0fs ", bar, done, total, rate, eta).utf8))
            } else {
                FileHandle.standardError.write(Data(String(format: "progress: %d/%d (%.1f/s, ETA %.0fs)\n", done, total, rate, eta).utf8))
            }
        }

        func finish() {
            if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
        }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func take(below limit: Int) -> Int? {
            lock.lock(); defer { lock.unlock() }
            guard value < limit else { return nil }
            value += 1
            return value - 1
        }
    }

    final class ResultSlots: @unchecked Sendable {
        private let condition = NSCondition()
        private var slots: [Result<ItemResult, Error>?]
        init(count: Int) { slots = Array(repeating: nil, count: count) }
        func set(_ index: Int, _ result: Result<ItemResult, Error>) {
            condition.lock()
            slots[index] = result
            condition.broadcast()
            condition.unlock()
        }
        func wait(_ index: Int) -> Result<ItemResult, Error>? {
            condition.lock(); defer { condition.unlock() }
            while slots[index] == nil { condition.wait() }
            return slots[index]
        }
    }
}
