import CKernels
import Foundation
import Synchronization
import XCTest

/// The worker pool of multi-threaded invokes (`ck_pool`, Sources/CKernels/pool.c): every piece of
/// every job runs exactly once, whatever the thread count, the piece count (jobs of more than 65,535
/// pieces are cut into several), and whether the workers are spinning or asleep; a staged job's
/// stages run one after the other; a started job runs beside the caller until it finishes it.
final class WorkPoolTests: XCTestCase {
    /// Counts runs per piece: each piece adds one to its own slot (a piece run twice, or a piece of
    /// an older job run during a newer one, leaves a count other than 1).
    private static let countPiece: ck_pool_task = { context, index in
        guard let context else { return }
        context.assumingMemoryBound(to: Int32.self)[index] &+= 1
    }

    private func runJob(_ pool: OpaquePointer?, count: Int, file: StaticString = #filePath, line: UInt = #line) {
        let marks = UnsafeMutablePointer<Int32>.allocate(capacity: max(count, 1))
        defer { marks.deallocate() }
        marks.initialize(repeating: 0, count: max(count, 1))
        ck_pool_run(pool, Self.countPiece, marks, count)
        let wrong = (0..<count).filter { marks[$0] != 1 }
        XCTAssertTrue(wrong.isEmpty, "\(count) pieces: \(wrong.count) ran \(wrong.first.map { marks[$0] } ?? 0) times", file: file, line: line)
    }

    func testEveryPieceRunsOnce() throws {
        for threads in [2, 3, 4] {
            let pool = try XCTUnwrap(ck_pool_create(threads), "a pool of \(threads) threads")
            defer { ck_pool_destroy(pool) }
            var random = SystemRandomNumberGenerator()
            for job in 0..<3000 {
                runJob(pool, count: job % 7 == 0 ? Int.random(in: 0...3, using: &random) : Int.random(in: 2...64, using: &random))
            }
            runJob(pool, count: 70_000)   // two jobs of at most 65,535 pieces
        }
    }

    func testJobsAfterTheWorkersFellAsleep() throws {
        let pool = try XCTUnwrap(ck_pool_create(2))
        defer { ck_pool_destroy(pool) }
        for _ in 0..<5 {
            runJob(pool, count: 16)
            Thread.sleep(forTimeInterval: 0.004)   // workers spin 0.2 ms, then sleep until the next job
        }
    }

    /// A staged job's marks: stage s's pieces at marks[offsets[s] ..< offsets[s] + counts[s]].
    private struct StageMarks {
        let marks: UnsafeMutablePointer<Int32>
        let offsets: UnsafePointer<Int>
        let counts: UnsafePointer<Int>
    }

    /// Adds 1 to the piece's own mark if every piece of the stage before has run exactly once by
    /// now, else 100 (a stage that started before the one before it had ended). Some pieces spin a
    /// little, so that the threads reach the ends of stages in different orders.
    private static let checkStagePiece: ck_pool_stage_task = { context, stage, index in
        guard let c = context?.assumingMemoryBound(to: StageMarks.self).pointee else { return }
        var add: Int32 = 1
        if stage > 0 {
            for i in 0..<c.counts[stage - 1] where c.marks[c.offsets[stage - 1] + i] != 1 { add = 100 }
        }
        if (stage + index) % 3 == 0 {
            var x = 0
            for i in 0..<(200 * (index % 5 + 1)) { x &+= i }
            if x == -1 { add = 0 }   // (keeps the loop)
        }
        c.marks[c.offsets[stage] + index] &+= add
    }

    private func runStages(_ pool: OpaquePointer?, counts: [Int], file: StaticString = #filePath, line: UInt = #line) {
        var offsets: [Int] = []
        var total = 0
        for count in counts {
            offsets.append(total)
            total += count
        }
        let marks = UnsafeMutablePointer<Int32>.allocate(capacity: max(total, 1))
        defer { marks.deallocate() }
        marks.initialize(repeating: 0, count: max(total, 1))
        offsets.withUnsafeBufferPointer { o in
            counts.withUnsafeBufferPointer { c in
                guard let ob = o.baseAddress, let cb = c.baseAddress else { return }
                var context = StageMarks(marks: marks, offsets: ob, counts: cb)
                ck_pool_run_stages(pool, Self.checkStagePiece, &context, cb, c.count)
            }
        }
        let wrong = (0..<total).filter { marks[$0] != 1 }
        XCTAssertTrue(wrong.isEmpty, "stages \(counts): \(wrong.count) marks wrong, the first \(wrong.first.map { marks[$0] } ?? 0)",
                      file: file, line: line)
    }

    /// Staged jobs: every piece runs once, and no piece of a stage starts before every piece of the
    /// stage before it has finished, at 2–4 threads, with empty stages, and with more stages than
    /// one job holds (CK_POOL_MAX_STAGES), which run as several jobs.
    func testStagesRunInOrderAndEveryPieceOnce() throws {
        for threads in [2, 3, 4] {
            let pool = try XCTUnwrap(ck_pool_create(threads), "a pool of \(threads) threads")
            defer { ck_pool_destroy(pool) }
            var random = SystemRandomNumberGenerator()
            for job in 0..<1500 {
                let stages = job % 50 == 0 ? Int.random(in: 60...140, using: &random) : Int.random(in: 1...16, using: &random)
                runStages(pool, counts: (0..<stages).map { _ in Int.random(in: 0...9, using: &random) })
                if job % 100 == 0 { runJob(pool, count: Int.random(in: 2...40, using: &random)) }   // plain jobs in between
            }
        }
        // Workers asleep when a staged job comes.
        let pool = try XCTUnwrap(ck_pool_create(2))
        defer { ck_pool_destroy(pool) }
        for _ in 0..<4 {
            runStages(pool, counts: [2, 2, 5, 1, 2])
            Thread.sleep(forTimeInterval: 0.004)
        }
        runStages(nil, counts: [3, 0, 4])   // no pool: all on the caller
    }

    /// What a started job's pieces write: a mark per piece, and a flag piece 0 raises.
    private final class StartedMarks: @unchecked Sendable {
        let marks: UnsafeMutablePointer<Int32>
        let firstRan = Atomic<Int>(0)
        init(count: Int) {
            marks = .allocate(capacity: max(count, 1))
            marks.initialize(repeating: 0, count: max(count, 1))
        }
        deinit { marks.deallocate() }
    }

    private static let markStartedPiece: ck_pool_task = { context, index in
        guard let context else { return }
        let c = Unmanaged<StartedMarks>.fromOpaque(context).takeUnretainedValue()
        c.marks[index] &+= 1
        if index == 0 { c.firstRan.store(1, ordering: .releasing) }
    }

    /// A job published with ck_pool_start runs on the workers while the caller goes on (the
    /// caller runs none of its pieces before ck_pool_finish), ck_pool_finish returns once every
    /// piece has run exactly once, and plain jobs run as before after it.
    func testStartedJobsRunBesideTheCaller() throws {
        for threads in [2, 3] {
            let pool = try XCTUnwrap(ck_pool_create(threads), "a pool of \(threads) threads")
            defer { ck_pool_destroy(pool) }
            var random = SystemRandomNumberGenerator()
            for job in 0..<300 {
                let count = Int.random(in: 1...40, using: &random)
                let started = StartedMarks(count: count)
                let context = Unmanaged.passUnretained(started).toOpaque()
                XCTAssertEqual(ck_pool_start(pool, Self.markStartedPiece, context, count), 1)
                if job % 30 == 0 {
                    // Only a worker can run piece 0 now (the first piece of a worker's share, or
                    // taken from the caller's share once its own is done).
                    let deadline = Date(timeIntervalSinceNow: 5)
                    while started.firstRan.load(ordering: .acquiring) == 0, Date() < deadline { sched_yield() }
                    XCTAssertEqual(started.firstRan.load(ordering: .acquiring), 1, "\(threads) threads: no worker ran the started job")
                }
                ck_pool_finish(pool)
                let wrong = (0..<count).filter { started.marks[$0] != 1 }
                XCTAssertTrue(wrong.isEmpty, "\(count) pieces: \(wrong.count) ran \(wrong.first.map { started.marks[$0] } ?? 0) times")
                if job % 10 == 0 { runJob(pool, count: Int.random(in: 2...40, using: &random)) }
            }
        }
        XCTAssertEqual(ck_pool_start(nil, Self.markStartedPiece, nil, 4), 0)   // no pool: nothing published
        ck_pool_finish(nil)
    }

    func testWithoutAPoolPiecesRunOnTheCaller() {
        XCTAssertNil(ck_pool_create(1))
        XCTAssertNil(ck_pool_create(0))
        runJob(nil, count: 9)
    }
}
