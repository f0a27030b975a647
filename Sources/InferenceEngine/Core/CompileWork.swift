import CKernels
import Foundation
import Synchronization

/// Compile-time work that need not hold up the rest of the compile: packing weights into the
/// layouts the micro-kernels read (and the requantization records packed with them).
///
/// Kernels' `prepare` allocates the packed buffers (their sizes are known at once) and submits the
/// work that fills them; with one thread it runs at once, with more the pool's workers take the
/// jobs in order while the compiling thread goes on propagating shapes, preparing the next
/// operators and planning the arena, and ``finish()`` runs what is left on the compiling thread
/// and waits for the rest. The compile reads no packed buffer before then, except to run an
/// operator it folds (``waitForSubmitted()`` first). A job must not throw or fail: everything that
/// can be wrong with the operands is checked before it is submitted.
///
/// The runner's pool, once the compile drops it, is kept idle for the next runner of that thread
/// count (``ParallelRunner``): an interpreter created next with as many threads starts with its
/// workers ready.
final class CompileWork: @unchecked Sendable {
    /// Runs every job at once, on the calling thread.
    static let immediate = CompileWork(threads: 1)

    private struct Job: @unchecked Sendable {
        let run: () -> Void
    }

    private struct Queue: ~Copyable {
        var jobs: [Job] = []
        /// Jobs taken (jobs[..<next]) and finished.
        var next = 0, finished = 0
    }

    private let runner: ParallelRunner?
    private let queue = Mutex(Queue())
    /// Jobs submitted, jobs taken and whether the queue is closed, as the waiting threads poll
    /// them (without the lock, which the thread that submits or takes a job would contend for).
    private let submitted = Atomic<Int>(0), taken = Atomic<Int>(0), closed = Atomic<Bool>(false)
    /// Whether the workers are draining the queue (a pool job is out). The compiling thread's only.
    private var started = false

    /// `threads` threads in all, the compiling thread included.
    init(threads: Int) {
        runner = threads > 1 ? ParallelRunner(threadCount: threads) : nil
    }

    /// Queues `job` (runs it at once with one thread).
    func submit(_ job: @escaping () -> Void) {
        guard let runner else {
            job()
            return
        }
        queue.withLock { $0.jobs.append(Job(run: job)) }
        submitted.add(1, ordering: .releasing)
        if !started {
            // The workers each drain the queue until it is closed and empty. (A pool still being
            // created is tried again at the next job; without one, finish() runs everything.)
            started = runner.start(runner.threadCount - 1, drainCompileWork, context: Unmanaged.passUnretained(self).toOpaque())
        }
    }

    /// The next queued job, if any (marked taken).
    private func take() -> Job? {
        guard taken.load(ordering: .relaxed) < submitted.load(ordering: .acquiring) else { return nil }
        return queue.withLock { q -> Job? in
            guard q.next < q.jobs.count else { return nil }
            q.next += 1
            taken.store(q.next, ordering: .relaxed)
            return q.jobs[q.next - 1]
        }
    }

    private func run(_ job: Job) {
        job.run()
        queue.withLock { $0.finished += 1 }
    }

    /// Runs queued jobs on the calling thread and waits until every job submitted so far is done.
    func waitForSubmitted() {
        guard runner != nil else { return }
        var spins = 0
        while true {
            if let job = take() {
                run(job)
                spins = 0
            } else if queue.withLock({ $0.finished == $0.jobs.count }) {
                return
            } else {
                CompileWork.pause(&spins)
            }
        }
    }

    /// Waits for every job and releases the workers. Call once, before anything reads what the
    /// jobs wrote (and before the compile throws: the jobs read the model's weights in place).
    func finish() {
        guard let runner else { return }
        waitForSubmitted()
        closed.store(true, ordering: .releasing)
        if started {
            runner.finishStarted()
            started = false
        }
    }

    /// A worker's piece: jobs until the queue is closed and empty.
    fileprivate func drain() {
        var spins = 0
        while true {
            // (Closed is read before the queue: a job submitted before the close is seen.)
            let isClosed = closed.load(ordering: .acquiring)
            if let job = take() {
                run(job)
                spins = 0
            } else if isClosed {
                return
            } else {
                CompileWork.pause(&spins)
            }
        }
    }

    /// A wait for the other thread: a short spin, then giving the core away now and then (it may
    /// be the one the other thread needs).
    private static func pause(_ spins: inout Int) {
        spins += 1
        if spins > 2048, spins % 256 == 0 { sched_yield() }
    }
}

/// The pool's task: piece i drains the queue of the CompileWork `context` points to.
private func drainCompileWork(_ context: UnsafeMutableRawPointer?, _ index: Int) {
    guard let context else { return }
    Unmanaged<CompileWork>.fromOpaque(context).takeUnretainedValue().drain()
}
