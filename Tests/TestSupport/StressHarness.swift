import Dispatch
import Foundation

/// Runs calls on many threads at once and counts those whose result differs from the expected one
/// (used by the concurrency stress tests; `scripts/stress.sh` runs them bigger).
///
/// Sizes come from the environment when set: `EDGEVISION_STRESS_THREADS` (threads started together)
/// and `EDGEVISION_STRESS_ROUNDS` (how many times each thread goes through its calls).
public enum StressHarness {
    /// `EDGEVISION_STRESS_THREADS`, else `defaultValue`.
    public static func threads(default defaultValue: Int) -> Int {
        environmentInt("EDGEVISION_STRESS_THREADS") ?? defaultValue
    }

    /// `EDGEVISION_STRESS_ROUNDS`, else `defaultValue`.
    public static func rounds(default defaultValue: Int) -> Int {
        environmentInt("EDGEVISION_STRESS_ROUNDS") ?? defaultValue
    }

    static func environmentInt(_ name: String) -> Int? {
        guard let text = ProcessInfo.processInfo.environment[name], let value = Int(text), value > 0 else { return nil }
        return value
    }

    /// One kind of call: `check(thread, call)` runs it and returns nil when the result is the
    /// expected one, else a description of the difference. A thrown error counts as a mismatch.
    public struct Task: Sendable {
        public let name: String
        public let check: @Sendable (_ thread: Int, _ call: Int) throws -> String?
        public init(_ name: String, check: @escaping @Sendable (_ thread: Int, _ call: Int) throws -> String?) {
            self.name = name
            self.check = check
        }
    }

    /// What a run did, per task.
    public struct Report: Sendable, CustomStringConvertible {
        public var threads: Int
        public var seconds: Double
        public var calls: [String: Int]
        public var mismatches: [String: Int]
        /// The first few mismatches, for the failure message.
        public var examples: [String]

        public var totalCalls: Int { calls.values.reduce(0, +) }
        public var totalMismatches: Int { mismatches.values.reduce(0, +) }

        public var description: String {
            let perTask = calls.keys.sorted().map { "\($0): \(calls[$0] ?? 0) calls, \(mismatches[$0] ?? 0) mismatches" }
            return "STRESS threads=\(threads) calls=\(totalCalls) mismatches=\(totalMismatches) seconds=\(String(format: "%.1f", seconds)) ["
                + perTask.joined(separator: "; ") + "]"
        }
    }

    /// Starts `threads` threads at the same moment; thread `t` does `rounds` rounds, each calling
    /// every task once, starting at task `t` (so different tasks overlap), with call numbers
    /// `round` (tasks pick their input from thread and call number).
    public static func run(threads: Int, rounds: Int, tasks: [Task]) -> Report {
        let tally = Tally(names: tasks.map(\.name))
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        let began = Date()
        for t in 0..<threads {
            group.enter()
            let thread = Thread {
                start.wait()
                for round in 0..<rounds {
                    for j in 0..<tasks.count {
                        let task = tasks[(t + j) % tasks.count]
                        let difference: String?
                        do {
                            difference = try task.check(t, round)
                        } catch {
                            difference = "threw \(type(of: error)): \(error)"
                        }
                        tally.add(task.name, difference.map { "\(task.name) thread \(t) round \(round): \($0)" })
                    }
                }
                group.leave()
            }
            thread.stackSize = 4 << 20
            thread.start()
        }
        for _ in 0..<threads { start.signal() }
        group.wait()
        return tally.report(threads: threads, seconds: Date().timeIntervalSince(began))
    }

    /// Counts shared by the threads.
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var calls: [String: Int] = [:], mismatches: [String: Int] = [:], examples: [String] = []
        init(names: [String]) { for name in names { calls[name] = 0; mismatches[name] = 0 } }
        func add(_ name: String, _ mismatch: String?) {
            lock.lock(); defer { lock.unlock() }
            calls[name, default: 0] += 1
            if let mismatch {
                mismatches[name, default: 0] += 1
                if examples.count < 5 { examples.append(mismatch) }
            }
        }
        func report(threads: Int, seconds: Double) -> Report {
            lock.lock(); defer { lock.unlock() }
            return Report(threads: threads, seconds: seconds, calls: calls, mismatches: mismatches, examples: examples)
        }
    }
}
