import CKernels
import Foundation
import XCTest

/// The worker pool of multi-threaded invokes (`ck_pool`, Sources/CKernels/pool.c): every piece of
/// every job runs exactly once, whatever the thread count, the piece count (jobs of more than 65,535
/// pieces are cut into several), and whether the workers are spinning or asleep.
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

    func testWithoutAPoolPiecesRunOnTheCaller() {
        XCTAssertNil(ck_pool_create(1))
        XCTAssertNil(ck_pool_create(0))
        runJob(nil, count: 9)
    }
}
