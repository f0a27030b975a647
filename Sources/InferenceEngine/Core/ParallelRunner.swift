import CPThreadPool

/// Splits a kernel's work into independent pieces and runs them on the interpreter's threads.
///
/// Kernels call ``forEach(_:_:)`` with a piece count (enough pieces to balance the threads) and a
/// body that processes piece `i`; pieces must write disjoint outputs, and results must not depend
/// on how pieces are scheduled, so outputs are identical for every thread count.
///
/// With more than one thread the pieces run on a persistent pthreadpool (Debian's
/// libpthreadpool), created once per interpreter; the calling thread takes part.
final class ParallelRunner: @unchecked Sendable {
    /// Number of threads work is spread over (1 = the calling thread only).
    let threadCount: Int
    private let pool: pthreadpool_t?

    init(threadCount: Int) {
        self.threadCount = max(1, min(threadCount, 256))
        pool = self.threadCount > 1 ? pthreadpool_create(self.threadCount) : nil
    }

    deinit {
        if let pool { pthreadpool_destroy(pool) }
    }

    /// Runs `body(0) ... body(count - 1)`, possibly concurrently; returns when all are done.
    func forEach(_ count: Int, _ body: (Int) -> Void) {
        guard count > 0 else { return }
        guard let pool, count > 1 else {
            for i in 0..<count { body(i) }
            return
        }
        // The closure travels to the workers through a pointer to a stack value: no heap
        // allocation per call (invokes allocate nothing).
        withoutActuallyEscaping(body) { escapable in
            var piece = PieceBody(body: escapable)
            withUnsafeMutablePointer(to: &piece) { pointer in
                // Workers flush denormals like the calling thread (Interpreter.invoke).
                pthreadpool_parallelize_1d(pool, runPiece, UnsafeMutableRawPointer(pointer), count, UInt32(PTHREADPOOL_FLAG_DISABLE_DENORMALS))
            }
        }
    }

    /// A runner that uses only the calling thread.
    static let serial = ParallelRunner(threadCount: 1)
}

/// The closure of one `forEach` call, handed to C as a pointer to this stack value.
private struct PieceBody {
    let body: (Int) -> Void
}

/// pthreadpool's task callback: a free function (not main-actor isolated), safe to call from workers.
private func runPiece(_ context: UnsafeMutableRawPointer?, _ index: Int) {
    guard let context else { return }
    context.assumingMemoryBound(to: PieceBody.self).pointee.body(index)
}
