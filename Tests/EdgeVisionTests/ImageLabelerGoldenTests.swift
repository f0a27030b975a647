import Dispatch
import EdgeVision
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// The labeler end to end against LiteRT's goldens (decode → resize → engine → ranking), from
/// several threads at once, and through the asynchronous entry points.
final class ImageLabelerGoldenTests: XCTestCase {
    func testGoldenTop5() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let goldens = try ClassifierGolden.all()
        XCTAssertGreaterThanOrEqual(goldens.count, 13)
        XCTAssertGreaterThanOrEqual(Set(goldens.map(\.model)).count, 5)
        var labelers: [String: ImageLabeler] = [:]
        var report: [String] = []
        for golden in goldens {
            let labeler = try labelers[golden.model] ?? {
                let options = CustomImageLabelerOptions(localModel: LocalModel(url: golden.modelFile))
                options.maxResultCount = 5
                options.confidenceThreshold = 0
                return try ImageLabeler.imageLabeler(options: options)
            }()
            labelers[golden.model] = labeler
            let labels = try labeler.results(in: VisionImage(contentsOf: golden.imageFile))
            let context = "\(golden.model) / \(golden.image)"
            let ours = labels.map { (index: $0.index, score: $0.confidence) }
            let matched = golden.matchingReferences(ours)
            XCTAssertEqual(labels.count, 5, context)
            XCTAssertFalse(matched.isEmpty, "\(context): ours \(ours.map { "\($0.index):\($0.score)" }.joined(separator: " ")) matches no LiteRT reference (same order, within one step): \(golden.referenceSummary). (EdgeVisionTasksTests.testPreprocessedInputsMatchGoldenInputs checks the inputs; if it passes, the difference comes from the engine.)")
            // Label texts: those of the golden wherever it names the index.
            for label in labels {
                if let text = golden.labels[label.index] { XCTAssertEqual(label.text, text, "\(context) index \(label.index)") }
            }
            XCTAssertEqual(labels.first?.text, golden.top5.first?.label, context)
            report.append("\(context): \(matched.isEmpty ? "NO MATCH" : matched.joined(separator: "+")) \(ours.map { "\($0.index):\($0.score)" }.joined(separator: " "))")
        }
        print("Labeler top-5:\n" + report.joined(separator: "\n"))
    }

    func testConcurrentUseGivesSingleThreadedAnswers() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let options = CustomImageLabelerOptions(localModel: LocalModel(url: SharedData.model("mobilenet_v1_0.25_128_quant.tflite")))
        options.maxResultCount = 20
        let labeler = try ImageLabeler.imageLabeler(options: options)
        let images = try ["burger.jpg", "cat.bmp", "grace_hopper.bmp", "hot_dog.jpg", "sunflower.bmp", "pets.jpg"].map {
            try VisionImage(contentsOf: SharedData.image($0))
        }
        let expected = try images.map { try labeler.results(in: $0) }
        XCTAssertGreaterThanOrEqual(Set(expected.map { $0.first?.index }).count, 4, "the images give different answers")
        // 8 threads at once (more than the cores), each going through the images in its own order.
        let threads = 8, perThread = 6
        let results = ResultBox<[ImageLabel]>(count: threads * perThread)
        onThreads(threads) { t in
            for k in 0..<perThread {
                results.set(t * perThread + k, Result { try labeler.results(in: images[(t + k) % images.count]) })
            }
        }
        for t in 0..<threads {
            for k in 0..<perThread {
                XCTAssertEqual(try results.get(t * perThread + k), expected[(t + k) % images.count], "thread \(t) run \(k)")
            }
        }
        // And through Dispatch's own pool.
        let runs = 24
        let pooled = ResultBox<[ImageLabel]>(count: runs)
        DispatchQueue.concurrentPerform(iterations: runs) { i in
            pooled.set(i, Result { try labeler.results(in: images[(i * 7) % images.count]) })
        }
        for i in 0..<runs { XCTAssertEqual(try pooled.get(i), expected[(i * 7) % images.count], "run \(i)") }
    }

    /// The same on a generated model whose answer depends on the image (runs in debug builds too).
    func testConcurrentUseOnSmallModel() throws {
        // class c scores the mean of channel c over the four pixels, class 3 their negated sum.
        var weights = Array(repeating: Array(repeating: Float(0), count: 12), count: 4)
        for p in 0..<4 {
            for c in 0..<3 { weights[c][p * 3 + c] = 1 / 1020; weights[3][p * 3 + c] = -1 / 3060 }
        }
        let model = TinyClassifier(heads: [.init(scores: [0, 0, 0, 1], weights: weights)])
        let labeler = try labeler(model)
        let images = try [(200, 10, 30), (5, 250, 7), (0, 0, 255), (128, 128, 128), (90, 91, 92), (255, 255, 255)].map {
            VisionImage(buffer: try uniformImage(width: 3 + $0.0 % 5, height: 2 + $0.1 % 3, UInt8($0.0), UInt8($0.1), UInt8($0.2)))
        }
        let expected = try images.map { try labeler.results(in: $0) }
        XCTAssertEqual(expected[0].first?.index, 0)
        XCTAssertEqual(expected[1].first?.index, 1)
        XCTAssertEqual(expected[2].first?.index, 2)
        let threads = 8, perThread = 50
        let results = ResultBox<[ImageLabel]>(count: threads * perThread)
        onThreads(threads) { t in
            for k in 0..<perThread {
                results.set(t * perThread + k, Result { try labeler.results(in: images[(t * 5 + k) % images.count]) })
            }
        }
        for t in 0..<threads {
            for k in 0..<perThread {
                XCTAssertEqual(try results.get(t * perThread + k), expected[(t * 5 + k) % images.count], "thread \(t) run \(k)")
            }
        }
    }

    func testAsyncProcessMatchesSynchronousResults() async throws {
        let model = TinyClassifier(heads: [.init(scores: [0.125, 0.5, 0.25], labels: ["a", "b", "c"])])
        let labeler = try labeler(model)
        let image = VisionImage(buffer: try uniformImage(1, 2, 3))
        let expected = try labeler.results(in: image)
        let labels = try await labeler.process(image)
        XCTAssertEqual(labels, expected)
        XCTAssertEqual(labels.map(\.text), ["b", "c", "a"])
        // Many at once.
        let all = try await withThrowingTaskGroup(of: [ImageLabel].self) { group in
            for _ in 0..<16 { group.addTask { try await labeler.process(image) } }
            var collected: [[ImageLabel]] = []
            for try await labels in group { collected.append(labels) }
            return collected
        }
        XCTAssertEqual(all.count, 16)
        XCTAssertTrue(all.allSatisfy { $0 == expected })
    }

    func testCompletionIsCalledOnTheCallbackQueue() throws {
        let queue = DispatchQueue(label: "labeler.test.callbacks")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "callbacks")
        let model = TinyClassifier(heads: [.init(scores: [0.125, 0.5, 0.25], labels: ["a", "b", "c"])])
        let labeler = try labeler(model) { $0.callbackQueue = queue }
        let image = VisionImage(buffer: try uniformImage(1, 2, 3))
        let expected = try labeler.results(in: image)
        let done = expectation(description: "completions")
        done.expectedFulfillmentCount = 5
        let box = ResultBox<[ImageLabel]>(count: 5)
        for i in 0..<5 {
            labeler.process(image) { labels, error in
                XCTAssertEqual(DispatchQueue.getSpecific(key: key), "callbacks")
                XCTAssertNil(error)
                box.set(i, labels.map { .success($0) } ?? .failure(error ?? VisionError(.invalidCall, "no labels")))
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 30)
        for i in 0..<5 { XCTAssertEqual(try box.get(i), expected) }
    }

    func testDefaultCallbackQueueIsMain() throws {
        let model = TinyClassifier(heads: [.init(scores: [0.125, 0.5], labels: ["a", "b"])])
        let labeler = try labeler(model)
        let done = expectation(description: "completion on main")
        labeler.process(VisionImage(buffer: try uniformImage(1, 2, 3))) { labels, error in
            XCTAssertTrue(Thread.isMainThread)
            XCTAssertEqual(labels?.map(\.text), ["b", "a"])
            XCTAssertNil(error)
            done.fulfill()
        }
        // XCTest's wait runs the main run loop, so main-queue completions are delivered.
        wait(for: [done], timeout: 30)
    }
}

/// Runs `body(threadIndex)` on `count` new threads released at the same moment; returns when all finish.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            start.wait()
            body(i)
            group.leave()
        }
        thread.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
}

/// Results written from several threads, read afterwards.
final class ResultBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Result<T, Error>?]
    init(count: Int) { values = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ value: Result<T, Error>) { lock.lock(); values[i] = value; lock.unlock() }
    func get(_ i: Int) throws -> T {
        lock.lock(); defer { lock.unlock() }
        guard let value = values[i] else { throw VisionError(.invalidCall, "no result \(i)") }
        return try value.get()
    }
}
