import Dispatch
import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// Live-stream flow limiting (MediaPipe's FlowLimiterCalculator, max_in_flight 1, max_in_queue 1):
/// at most one frame processed at a time, only the newest waiting frame kept, results in timestamp
/// order on a private serial queue, every submitted frame either delivered or reported dropped, the
/// last frame always delivered.
final class LiveStreamTests: XCTestCase {
    /// Counts how many callers are inside at once, and the most ever seen.
    final class ConcurrencyProbe: @unchecked Sendable {
        private let state = Locked((current: 0, maximum: 0))
        func enter() { state.withLock { $0.current += 1; $0.maximum = max($0.maximum, $0.current) } }
        func leave() { state.withLock { $0.current -= 1 } }
        var maximum: Int { state.current.maximum }
    }

    /// The scheduler on its own, with deliberately slow work wrapped in a concurrency probe.
    func testSchedulerWithSlowWork() throws {
        let work = ConcurrencyProbe(), delivery = ConcurrencyProbe()
        let delivered = Locked<[Int]>([]), dropped = Locked<[Int]>([])
        let processed = Locked<[Int]>([])
        let onMain = Locked(false)
        let scheduler = LiveStreamScheduler<Int, Int>(
            work: { frame, timestamp in
                work.enter()
                defer { work.leave() }
                processed.withLock { $0.append(timestamp) }
                Thread.sleep(forTimeInterval: 0.05)
                return frame * 2
            },
            deliver: { result, timestamp in
                delivery.enter()
                defer { delivery.leave() }
                if Thread.isMainThread { onMain.withLock { $0 = true } }
                XCTAssertEqual(try? result.get(), timestamp * 2)
                delivered.withLock { $0.append(timestamp) }
                Thread.sleep(forTimeInterval: 0.005)
            },
            dropped: { timestamp in
                if Thread.isMainThread { onMain.withLock { $0 = true } }
                dropped.withLock { $0.append(timestamp) }
            })
        let submitted = Array(1...30)
        for t in submitted {
            scheduler.submit(t, timestamp: t)
            Thread.sleep(forTimeInterval: 0.004)
        }
        scheduler.waitUntilIdle()
        let d = delivered.current, x = dropped.current
        XCTAssertEqual(work.maximum, 1, "at most one frame processed at a time")
        XCTAssertEqual(delivery.maximum, 1, "deliveries on a serial queue")
        XCTAssertFalse(onMain.current, "callbacks run on a private queue, not the main thread")
        XCTAssertEqual(d, d.sorted(), "results in timestamp order")
        XCTAssertEqual(Set(d).count, d.count)
        XCTAssertEqual(processed.current, d, "every processed frame is delivered, in order")
        XCTAssertFalse(x.isEmpty, "slow work drops frames")
        XCTAssertLessThan(d.count, 15)
        XCTAssertEqual(d.count + x.count, submitted.count, "delivered + dropped == submitted")
        XCTAssertEqual(Set(d).union(x), Set(submitted))
        XCTAssertTrue(Set(d).isDisjoint(with: x))
        XCTAssertEqual(d.last, 30, "the last frame is always delivered")
        XCTAssertEqual(d.first, 1, "the first frame starts at once")
    }

    /// A scheduler whose work throws delivers the error for that frame and carries on.
    func testSchedulerDeliversErrors() {
        let delivered = Locked<[(Int, Bool)]>([])
        let scheduler = LiveStreamScheduler<Int, Int>(
            work: { frame, _ in
                if frame == 2 { throw VisionError(.invalidImage, "bad frame") }
                return frame
            },
            deliver: { result, timestamp in delivered.withLock { $0.append((timestamp, (try? result.get()) != nil)) } },
            dropped: { _ in })
        for t in 1...3 {
            scheduler.submit(t, timestamp: t)
            scheduler.waitUntilIdle()
        }
        XCTAssertEqual(delivered.current.map(\.0), [1, 2, 3])
        XCTAssertEqual(delivered.current.map(\.1), [true, false, true])
    }

    final class SlowDelegate: ImageClassifierLiveStreamDelegate, @unchecked Sendable {
        let probe = ConcurrencyProbe()
        let delivered = Locked<[(timestamp: Int, top: Int?, error: Error?)]>([])
        let dropped = Locked<[Int]>([])
        let onMain = Locked(false)
        let sleep: TimeInterval
        init(sleep: TimeInterval) { self.sleep = sleep }

        func imageClassifier(_ imageClassifier: ImageClassifier, didFinishClassification result: ImageClassifierResult?,
                             timestampInMilliseconds: Int, error: Error?) {
            probe.enter()
            defer { probe.leave() }
            if Thread.isMainThread { onMain.withLock { $0 = true } }
            let top = result?.classificationResult.classifications.first?.categories.first?.index
            XCTAssertEqual(result?.timestampInMilliseconds, timestampInMilliseconds)
            delivered.withLock { $0.append((timestampInMilliseconds, top, error)) }
            Thread.sleep(forTimeInterval: sleep)
        }

        func imageClassifier(_ imageClassifier: ImageClassifier, didDropFrameWithTimestampInMilliseconds timestamp: Int) {
            if Thread.isMainThread { onMain.withLock { $0 = true } }
            dropped.withLock { $0.append(timestamp) }
        }
    }

    /// Frames whose top class is their timestamp's parity, so each delivered result can be checked.
    func frames(_ count: Int) throws -> [MPImage] {
        try (0..<count).map { t in t % 2 == 0 ? try uniformImage(250, 0, 0) : try uniformImage(0, 0, 250) }
    }

    /// class 0 = mean red, class 1 = mean blue.
    var colourModel: TinyClassifier {
        var weights = Array(repeating: Array(repeating: Float(0), count: 12), count: 2)
        for p in 0..<4 { weights[0][p * 3] = 1 / 1020; weights[1][p * 3 + 2] = 1 / 1020 }
        return TinyClassifier(heads: [.init(scores: [0, 0], weights: weights)])
    }

    func testClassifierWithSlowDelegate() throws {
        let delegate = SlowDelegate(sleep: 0.05)
        let classifier = try classifier(colourModel) {
            $0.runningMode = .liveStream
            $0.imageClassifierLiveStreamDelegate = delegate
        }
        let images = try frames(30)
        for t in 0..<30 { try classifier.classifyAsync(image: images[t], timestampInMilliseconds: t) }
        classifier.waitUntilIdle()
        let d = delegate.delivered.current, x = delegate.dropped.current
        XCTAssertEqual(delegate.probe.maximum, 1)
        XCTAssertFalse(delegate.onMain.current)
        XCTAssertEqual(d.map(\.timestamp), d.map(\.timestamp).sorted())
        XCTAssertEqual(d.count + x.count, 30, "delivered + dropped == submitted")
        XCTAssertEqual(Set(d.map(\.timestamp)).union(x), Set(0..<30))
        XCTAssertEqual(d.last?.timestamp, 29, "the last frame is always delivered")
        for r in d {
            XCTAssertNil(r.error)
            XCTAssertEqual(r.top, r.timestamp % 2, "frame \(r.timestamp) got its own result")
        }
        // Live stream calls return at once even while the delegate is busy: 30 submissions took far
        // less than 30 × 50 ms.
        let start = Date()
        for t in 30..<40 { try classifier.classifyAsync(image: images[t % 30], timestampInMilliseconds: t) }
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.25)
        classifier.waitUntilIdle()
        XCTAssertEqual(delegate.delivered.current.last?.timestamp, 39)
    }

    /// With a real model (tens of milliseconds per frame) frames submitted every few milliseconds are dropped.
    func testClassifierDropsFramesWhileBusy() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let delegate = SlowDelegate(sleep: 0)
        let options = ImageClassifierOptions()
        options.baseOptions.modelAssetPath = SharedData.model("mobilenet_v2_1.0_224_quant.tflite").path
        options.runningMode = .liveStream
        options.maxResults = 1
        options.imageClassifierLiveStreamDelegate = delegate
        let classifier = try ImageClassifier(options: options)
        let images = try ["burger.jpg", "cat.bmp"].map { try MPImage(contentsOf: SharedData.image($0)) }
        for t in 0..<30 {
            try classifier.classifyAsync(image: images[t % 2], timestampInMilliseconds: t * 3)
            Thread.sleep(forTimeInterval: 0.002)
        }
        classifier.waitUntilIdle()
        let d = delegate.delivered.current, x = delegate.dropped.current
        XCTAssertFalse(x.isEmpty, "frames are dropped while the classifier is busy")
        XCTAssertEqual(d.count + x.count, 30)
        XCTAssertEqual(d.map(\.timestamp), d.map(\.timestamp).sorted())
        XCTAssertEqual(d.last?.timestamp, 29 * 3)
        XCTAssertEqual(delegate.probe.maximum, 1)
        for r in d { XCTAssertEqual(r.top, (r.timestamp / 3) % 2 == 0 ? 934 : 286, "frame \(r.timestamp)") }
    }

    /// Whether the file at `path` is memory-mapped in this process (a live TaskModel maps its model file).
    func isMapped(_ path: String) -> Bool {
        // /proc files report size 0, so read them with plain read(2) until EOF.
        let fd = open("/proc/self/maps", O_RDONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self).contains(path)
    }

    /// Waits up to `timeout` seconds for `condition`.
    func eventually(_ timeout: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }

    /// Releasing a live-stream classifier while frames are in flight or waiting neither crashes nor
    /// blocks: the classifier and its model go away, the remaining results are not delivered.
    func testReleasingWhileFramesArePending() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/proc/self/maps"), "needs /proc/self/maps")
        let delegate = SlowDelegate(sleep: 0)
        for round in 0..<20 {
            let url = try colourModel.write(named: "release-\(round).tflite")
            var classifier: ImageClassifier? = try ImageClassifier(options: options(colourModel) {
                $0.baseOptions.modelAssetPath = url.path
                $0.runningMode = .liveStream
                $0.imageClassifierLiveStreamDelegate = delegate
            })
            XCTAssertTrue(isMapped(url.path))
            let images = try frames(4)
            for t in 0..<4 { try classifier?.classifyAsync(image: images[t], timestampInMilliseconds: round * 10 + t) }
            classifier = nil
            XCTAssertTrue(eventually { !isMapped(url.path) }, "round \(round): the released classifier's model is still loaded")
        }
    }

    /// The delegate may hold the classifier and let it go from inside its callback (the last
    /// reference then goes away on the delivery queue): no deadlock, the classifier is freed.
    func testReleasingFromInsideTheDelegate() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/proc/self/maps"), "needs /proc/self/maps")
        final class Owner: ImageClassifierLiveStreamDelegate, @unchecked Sendable {
            let classifier = Locked<ImageClassifier?>(nil)
            let calls = Locked(0)
            /// Signalled once the test itself no longer holds the classifier.
            let released = DispatchSemaphore(value: 0)
            func imageClassifier(_ imageClassifier: ImageClassifier, didFinishClassification result: ImageClassifierResult?,
                                 timestampInMilliseconds: Int, error: Error?) {
                calls.withLock { $0 += 1 }
                _ = released.wait(timeout: .now() + 10)
                classifier.withLock { $0 = nil }
            }
        }
        let owner = Owner()
        let url = try colourModel.write(named: "owned.tflite")
        do {
            let classifier = try ImageClassifier(options: options(colourModel) {
                $0.baseOptions.modelAssetPath = url.path
                $0.runningMode = .liveStream
                $0.imageClassifierLiveStreamDelegate = owner
            })
            owner.classifier.withLock { $0 = classifier }
            try classifier.classifyAsync(image: uniformImage(1, 2, 3), timestampInMilliseconds: 1)
            XCTAssertTrue(isMapped(url.path))
        }
        // Only the owner (and the delivery in progress) keep it now.
        owner.released.signal()
        XCTAssertTrue(eventually { owner.calls.current == 1 })
        XCTAssertTrue(eventually { !isMapped(url.path) }, "the classifier released inside its delegate callback was never freed (deadlock?)")
    }

    /// The delegate is held weakly: when it goes away, results are not delivered (and nothing crashes).
    func testDelegateIsHeldWeakly() throws {
        var delegate: SlowDelegate? = SlowDelegate(sleep: 0)
        weak var weakDelegate = delegate
        let options = try options(colourModel) {
            $0.runningMode = .liveStream
            $0.imageClassifierLiveStreamDelegate = delegate
        }
        let classifier = try ImageClassifier(options: options)
        delegate = nil
        XCTAssertNil(weakDelegate)
        XCTAssertNil(options.imageClassifierLiveStreamDelegate)
        try classifier.classifyAsync(image: uniformImage(1, 2, 3), timestampInMilliseconds: 1)
        classifier.waitUntilIdle()
    }
}
