import CKernels
import Dispatch
import Synchronization

/// Splits a kernel's work into independent pieces and runs them on the interpreter's threads.
///
/// Kernels call ``forEach(_:_:)`` with a piece count (enough pieces to balance the threads) and a
/// body that processes piece `i`; pieces must write disjoint outputs, and results must not depend
/// on how pieces are scheduled, so outputs are identical for every thread count.
///
/// With more than one thread the pieces run on a persistent pool of worker threads (CKernels'
/// `ck_pool`), created once per interpreter; the calling thread takes part. Each thread claims
/// pieces of its own share and then of the others', one at a time, so the caller never waits for a
/// worker that has not started: on a busy machine, where a worker may not get a core for
/// milliseconds, the caller does the work itself (after a long wait for a descheduled worker's piece
/// it runs the next operators alone). Debian's libpthreadpool, used before, waits at every call for
/// every worker to check in: while two compilers ran on this 2-core machine, a 2-thread invoke of
/// tf2_mobilenet_v2 took 612 ms instead of 1.5 ms (this pool: 1.6 ms), and two processes invoking
/// it at 2 threads each averaged 27 ms per invoke (this pool: 5.7 ms). The pool is
/// created in the background: starting its threads can take milliseconds (here 4–8 ms whenever
/// the other core is busy: the new thread waits for a scheduler tick), and until it is ready the
/// pieces run on the calling thread, so a model's first invoke does not wait for thread start-up.
/// Outputs do not depend on how pieces are scheduled, so the results are the same either way.
///
/// A pool outlives its interpreter: when the interpreter goes away its pool (threads asleep) is
/// kept for the next interpreter with the same thread count, at most ``idlePoolLimit`` per count,
/// so a process that creates interpreters again and again (a model reloaded, a task recreated)
/// starts each one with its threads ready.
final class ParallelRunner: @unchecked Sendable {
    /// Number of threads work is spread over (1 = the calling thread only).
    let threadCount: Int
    /// One window per thread for banded inverted residual blocks (``BandChainKernel``), each
    /// `windowSlabBytes` long, nil for none: memory no tensor shares, so the core that works in a
    /// window keeps it in its L2 from block to block and invoke to invoke (a window carved from
    /// the block's inner tensors lay in arena memory other tensors had just used, last written,
    /// often, by the other core: DeepLab at 2 threads 5.37 → 5.34 ms).
    let windows: UnsafeMutableRawPointer?
    let windowSlabBytes: Int
    /// The block `windows` came from (``RecycledMemory``: a recycled block's pages are mapped
    /// already, so a new interpreter's first invoke does not fault them in).
    private let windowBlockBytes: Int
    /// The ck_pool once created.
    private let pool = PoolSlot()
    /// Signalled when the background creation has finished (nil with one thread).
    private let created: DispatchSemaphore?

    init(threadCount: Int, windowSlabBytes: Int = 0) {
        self.threadCount = max(1, min(threadCount, 256))
        let slab = ConvolutionSupport.align(max(0, windowSlabBytes))
        self.windowSlabBytes = slab
        if slab > 0 {
            let block = RecycledMemory.take(byteCount: slab * self.threadCount)
            windows = block.pointer
            windowBlockBytes = block.byteCount
        } else {
            windows = nil
            windowBlockBytes = 0
        }
        guard self.threadCount > 1 else {
            pool.state.store(PoolSlot.none, ordering: .relaxed)
            created = nil
            return
        }
        let count = self.threadCount
        if let bits = idlePools.withLock({ $0[count]?.popLast() }) {
            pool.state.store(bits, ordering: .releasing)
            created = nil
            return
        }
        let semaphore = DispatchSemaphore(value: 0)
        created = semaphore
        let threads = self.threadCount
        let slot = pool
        DispatchQueue.global(qos: .userInitiated).async {
            let made = ck_pool_create(threads)
            let bits = made.map { Int(bitPattern: UnsafeMutableRawPointer($0)) } ?? PoolSlot.none
            // The runner may have gone away meanwhile (it does not wait for this): then the pool
            // goes where its pool would have gone.
            let (published, _) = slot.state.compareExchange(expected: PoolSlot.pending, desired: bits, ordering: .acquiringAndReleasing)
            if !published, bits != PoolSlot.none { ParallelRunner.keepIdle(bits, threads: threads) }
            semaphore.signal()
        }
    }

    deinit {
        if let windows { RecycledMemory.give(windows, byteCount: windowBlockBytes) }
        // A pool still being created is left to its creator, which keeps it idle (no wait here: a
        // model compiled with threads drops its runner as soon as the weights are packed).
        let (abandoned, bits) = pool.state.compareExchange(expected: PoolSlot.pending, desired: PoolSlot.abandoned,
                                                           ordering: .acquiringAndReleasing)
        guard !abandoned, bits > PoolSlot.none else { return }
        ParallelRunner.keepIdle(bits, threads: threadCount)
    }

    /// Keeps an idle pool for the next runner of `threads` threads, or destroys it when enough are kept.
    private static func keepIdle(_ bits: Int, threads: Int) {
        guard let raw = UnsafeMutableRawPointer(bitPattern: bits) else { return }
        let kept = idlePools.withLock { pools in
            guard pools[threads, default: []].count < ParallelRunner.idlePoolLimit else { return false }
            pools[threads, default: []].append(bits)
            return true
        }
        if !kept { ck_pool_destroy(OpaquePointer(raw)) }
    }

    /// Window `slab` (a thread's: slab < threadCount) when the runner has windows of at least
    /// `bytes`, else nil.
    func window(_ slab: Int, bytes: Int) -> UnsafeMutableRawPointer? {
        guard let windows, slab >= 0, slab < threadCount, bytes <= windowSlabBytes else { return nil }
        return windows + slab * windowSlabBytes
    }

    /// Most idle pools kept per thread count.
    static let idlePoolLimit = 2

    /// Blocks until the background creation of the pool has finished.
    func waitUntilStarted() {
        guard let created, pool.state.load(ordering: .acquiring) == PoolSlot.pending else { return }
        created.wait()
        created.signal()   // for the next wait
    }

    /// Multiply-accumulates under which an operator counts as short: about 100 µs of one core's
    /// float work here, 50 µs per thread at two.
    static let shortOperatorWork = 8_000_000

    /// Whether an operator of `work` multiply-accumulates should run as one piece per thread rather
    /// than in the finer pieces that balance long operators. For a short operator the cost of a
    /// piece is mostly data that has to move: a thread that finishes early takes pieces from the
    /// other's share, so the next operator, split the same way, reads those outputs from the other
    /// core's cache (3–7× slower than from its own). One piece per thread keeps each thread on the
    /// same part of the image from operator to operator; a thread that has not started its piece
    /// by the time the other is done still has it taken, so a busy machine does not wait. Measured
    /// at 2 threads (bench, medians): mobilenet_v1_0.25_224 float 0.479 → 0.465 ms, BlazeFace
    /// 0.482 → 0.457 ms, selfie segmentation 1.22 → 1.19 ms, its landscape model 0.86 → 0.82 ms;
    /// deeplabv3, whose short operators sit between long ones, unchanged (6.21 → 6.25 ms); the
    /// quantized convolutions too: mobilenet_v1_0.25_128 uint8 0.174 → 0.165 ms, the larger
    /// quantized models 0.5–1% faster.
    func isShort(work: Int) -> Bool { threadCount > 1 && work < Self.shortOperatorWork }

    /// Runs `body(0) ... body(count - 1)`, possibly concurrently; returns when all are done.
    func forEach(_ count: Int, _ body: (Int) -> Void) {
        guard count > 0 else { return }
        guard count > 1, let raw = pool.ready else {
            for i in 0..<count { body(i) }
            return
        }
        // The closure travels to the workers through a pointer to a stack value: no heap
        // allocation per call (invokes allocate nothing).
        withoutActuallyEscaping(body) { escapable in
            var piece = PieceBody(body: escapable)
            withUnsafeMutablePointer(to: &piece) { pointer in
                // Workers flush denormals like the calling thread (Interpreter.invoke).
                ck_pool_run(OpaquePointer(raw), runPiece, UnsafeMutableRawPointer(pointer), count)
            }
        }
    }

    /// Runs stage after stage of `body(stage, piece)`, stage s in `counts[s]` pieces, possibly
    /// concurrently; every piece of a stage is done before any piece of the next starts; returns
    /// when all are done. One job of the pool for all the stages (``StagedNodes``).
    func forEachStaged(_ counts: UnsafeBufferPointer<Int>, _ body: (_ stage: Int, _ piece: Int) -> Void) {
        guard let first = counts.baseAddress, !counts.isEmpty else { return }
        guard let raw = pool.ready else {
            for stage in counts.indices { for piece in 0..<max(0, counts[stage]) { body(stage, piece) } }
            return
        }
        withoutActuallyEscaping(body) { escapable in
            var stages = StageBody(body: escapable)
            withUnsafeMutablePointer(to: &stages) { pointer in
                ck_pool_run_stages(OpaquePointer(raw), runStagePiece, UnsafeMutableRawPointer(pointer), first, counts.count)
            }
        }
    }

    /// Publishes `count` pieces of `task(context, i)` to the workers and returns at once; false
    /// (nothing published) while the pool is not ready. ``finishStarted()`` must follow before any
    /// other use of the runner. (``CompileWork``: weights packed beside the rest of a compile.)
    func start(_ count: Int, _ task: @escaping @convention(c) (UnsafeMutableRawPointer?, Int) -> Void,
               context: UnsafeMutableRawPointer) -> Bool {
        guard let raw = pool.ready else { return false }
        return ck_pool_start(OpaquePointer(raw), task, context, count) != 0
    }

    /// Runs the started job's pieces no worker has claimed and waits for the others.
    func finishStarted() {
        if let raw = pool.ready { ck_pool_finish(OpaquePointer(raw)) }
    }

    /// A runner that uses only the calling thread.
    static let serial = ParallelRunner(threadCount: 1)
}

/// The interpreter's threads as one kernel's `run` sees them (``KernelIO/parallel``): all of them,
/// or, when the kernel runs as a stage of a staged group (``StagedNodes``), one piece of its
/// split, or none (while the group is planned, to learn the split).
struct ParallelScope {
    /// (Unowned: every kernel's KernelIO copies the scope, and a strong reference would be a
    /// retain and a release of the runner per copy, on every thread at once. Its owner, an
    /// interpreter or a kernel run, outlives every scope of it.)
    unowned(unsafe) let runner: ParallelRunner
    /// The piece of `pieces` this run computes (`forEach` runs body(piece), body(piece + pieces),
    /// ...), or -1: every piece.
    let piece: Int
    let pieces: Int
    /// While planning: forEach runs nothing and adds 1 to split[0] and sets split[1] to its count.
    let split: UnsafeMutablePointer<Int>?

    init(_ runner: ParallelRunner) {
        self.runner = runner
        piece = -1
        pieces = 0
        split = nil
    }

    init(_ runner: ParallelRunner, piece: Int, of pieces: Int) {
        self.runner = runner
        self.piece = piece
        self.pieces = max(1, pieces)
        split = nil
    }

    init(_ runner: ParallelRunner, recordingInto split: UnsafeMutablePointer<Int>) {
        self.runner = runner
        piece = -1
        pieces = 0
        self.split = split
    }

    var threadCount: Int { runner.threadCount }

    func isShort(work: Int) -> Bool { runner.isShort(work: work) }

    func window(_ slab: Int, bytes: Int) -> UnsafeMutableRawPointer? { runner.window(slab, bytes: bytes) }

    /// ``ParallelRunner/forEach(_:_:)``, or this scope's piece of it.
    func forEach(_ count: Int, _ body: (Int) -> Void) {
        if let split {
            split[0] += 1
            split[1] = count
            return
        }
        guard piece >= 0 else {
            runner.forEach(count, body)
            return
        }
        var i = piece
        while i < count {
            body(i)
            i += pieces
        }
    }
}

/// Pools of interpreters that have gone away, by thread count (ck_pool bit patterns).
private let idlePools = Mutex<[Int: [Int]]>([:])

/// Where the background creation publishes the pool: a ck_pool's bit pattern, or one of the states below.
private final class PoolSlot: Sendable {
    /// Being created.
    static let pending = 0
    /// The runner went away while it was being created.
    static let abandoned = 1
    /// None: the creation failed, or one thread.
    static let none = 2
    let state = Atomic<Int>(PoolSlot.pending)

    /// The pool, once created.
    var ready: UnsafeMutableRawPointer? {
        let bits = state.load(ordering: .acquiring)
        return bits > PoolSlot.none ? UnsafeMutableRawPointer(bitPattern: bits) : nil
    }
}

/// The closure of one `forEach` call, handed to C as a pointer to this stack value.
private struct PieceBody {
    let body: (Int) -> Void
}

/// The closure of one `forEachStaged` call, handed to C as a pointer to this stack value.
private struct StageBody {
    let body: (Int, Int) -> Void
}

/// The pool's staged task callback (see runPiece).
private func runStagePiece(_ context: UnsafeMutableRawPointer?, _ stage: Int, _ index: Int) {
    guard let context else { return }
    context.assumingMemoryBound(to: StageBody.self).pointee.body(stage, index)
}

/// The pool's task callback: a free function (not main-actor isolated), safe to call from workers.
private func runPiece(_ context: UnsafeMutableRawPointer?, _ index: Int) {
    guard let context else { return }
    context.assumingMemoryBound(to: PieceBody.self).pointee.body(index)
}
