/// Splits a kernel's work into independent pieces and runs them on the interpreter's threads.
///
/// Kernels call ``forEach(_:_:)`` with a piece count (enough pieces to balance the threads) and a
/// body that processes piece `i`; results must not depend on how pieces are scheduled.
final class ParallelRunner: @unchecked Sendable {
    /// Number of threads work is spread over (1 = the calling thread only).
    let threadCount: Int

    init(threadCount: Int) {
        self.threadCount = max(1, threadCount)
    }

    /// Runs `body(0) ... body(count - 1)`, possibly concurrently.
    func forEach(_ count: Int, _ body: (Int) -> Void) {
        for i in 0..<count { body(i) }
    }

    /// A runner that uses only the calling thread.
    static let serial = ParallelRunner(threadCount: 1)
}
