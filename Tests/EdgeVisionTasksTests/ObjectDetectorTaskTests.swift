import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// MediaPipe-style `ObjectDetector` with the metadata COCO SSD: detections against LiteRT's golden,
/// maxResults, scoreThreshold, allow/deny lists, the metadata requirement, running modes and
/// timestamps.
final class ObjectDetectorTaskTests: XCTestCase {
    static let modelName = "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29"
    static var modelPath: String { SharedData.model("\(modelName).tflite").path }

    /// Collects live-stream results.
    final class Sink: ObjectDetectorLiveStreamDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [(timestamp: Int, result: ObjectDetectorResult?, error: Error?)] = []
        var results: [(timestamp: Int, result: ObjectDetectorResult?, error: Error?)] { lock.withLock { stored } }
        func objectDetector(_ objectDetector: ObjectDetector, didFinishDetection result: ObjectDetectorResult?,
                            timestampInMilliseconds: Int, error: Error?) {
            lock.withLock { stored.append((timestampInMilliseconds, result, error)) }
        }
    }

    func detector(_ configure: (ObjectDetectorOptions) -> Void = { _ in }) throws -> ObjectDetector {
        let options = ObjectDetectorOptions()
        options.baseOptions.modelAssetPath = Self.modelPath
        configure(options)
        return try ObjectDetector(options: options)
    }

    func assertTaskError<T>(_ body: @autoclosure () throws -> T, _ code: VisionError.Code, message: String? = nil,
                            contains: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try body()
            XCTFail("expected a VisionError (\(code))", file: file, line: line)
        } catch let error as VisionError {
            XCTAssertEqual(error.code, code, error.message, file: file, line: line)
            if let message { XCTAssertEqual(error.message, message, file: file, line: line) }
            if let contains { XCTAssertTrue(error.message.contains(contains), "'\(error.message)' lacks '\(contains)'", file: file, line: line) }
        } catch {
            XCTFail("expected a VisionError (\(code)), got \(error)", file: file, line: line)
        }
    }

    func image(_ name: String) throws -> MPImage { try MPImage(contentsOf: SharedData.image(name)) }

    /// The golden's detections of one image (XNNPACK) and of LiteRT's builtin kernels, boxes in
    /// the image's pixels clipped to it.
    struct GoldenDetection { var label: String; var score: Float; var rect: CGRect }

    func golden(_ image: String) throws -> (xnnpack: [GoldenDetection], builtin: [GoldenDetection]) {
        let directory = SharedData.goldens.appendingPathComponent(Self.modelName)
        let summary = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("summary.json"))) as? [String: Any])
        let entry = try XCTUnwrap((summary["images"] as? [[String: Any]])?.first { $0["image"] as? String == image })
        let size = try XCTUnwrap(entry["image_size_wh"] as? [Int])
        func rect(_ b: [Double]) -> CGRect {
            let x0 = min(max(b[1], 0), 1) * Double(size[0]), x1 = min(max(b[3], 0), 1) * Double(size[0])
            let y0 = min(max(b[0], 0), 1) * Double(size[1]), y1 = min(max(b[2], 0), 1) * Double(size[1])
            return CGRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        }
        let detections = try XCTUnwrap(entry["detections"] as? [[String: Any]])
        let xnnpack = detections.map { GoldenDetection(label: $0["label"] as? String ?? "", score: Float($0["score"] as? Double ?? 0),
                                                       rect: rect($0["box_yxyx_normalized"] as? [Double] ?? [0, 0, 0, 0])) }
        let labels = Dictionary(detections.map { ($0["class_index"] as? Int ?? -1, $0["label"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        func floats(_ i: Int) throws -> [Float] {
            let data = try Data(contentsOf: directory.appendingPathComponent("\(image).builtin.output_\(i).bin"))
            return data.withUnsafeBytes { raw in (0..<(raw.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) } }
        }
        let (boxes, classes, scores) = (try floats(0), try floats(1), try floats(2))
        let builtin = scores.indices.map { i in
            GoldenDetection(label: labels[Int(classes[i])] ?? "?", score: scores[i], rect: rect(boxes[(4 * i)..<(4 * i + 4)].map(Double.init)))
        }
        return (xnnpack, builtin)
    }

    func iou(_ a: CGRect, _ b: CGRect) -> Double {
        let i = a.intersection(b)
        guard !i.isNull, i.width > 0, i.height > 0 else { return 0 }
        let inter = Double(i.width * i.height)
        return inter / (Double(a.width * a.height) + Double(b.width * b.height) - inter)
    }

    // MARK: Results

    /// Default options on the golden's images: every detection of the model (no threshold unless
    /// the metadata has one), sorted by score; the confident ones (score >= 0.3) are the golden's,
    /// in order, with the golden's label and box (IoU >= 0.95 with the XNNPACK or the builtin golden,
    /// scores within 3 quantization steps: the official kernel sets differ by that much).
    func testDetectionsMatchTheGolden() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let detector = try detector()
        for (name, file) in [("cats_and_dogs", "cats_and_dogs.jpg"), ("cat", "cat.bmp"), ("table", "table.jpg")] {
            let result = try detector.detect(image: image(file))
            let (xnnpack, builtin) = try golden(name)
            XCTAssertEqual(result.timestampInMilliseconds, 0)
            XCTAssertEqual(result.detections.count, xnnpack.count, name)
            let scores = result.detections.map { $0.categories.first?.score ?? -1 }
            XCTAssertEqual(scores, scores.sorted(by: >), name)
            for (rank, detection) in result.detections.enumerated() where xnnpack[rank].score >= 0.3 {
                let category = try XCTUnwrap(detection.categories.first)
                XCTAssertEqual(detection.categories.count, 1)
                let candidates = [xnnpack[rank], builtin[rank]]
                XCTAssertTrue(candidates.contains { $0.label == category.categoryName }, "\(name) #\(rank): \(category.categoryName ?? "nil")")
                XCTAssertTrue(candidates.contains { abs($0.score - category.score) <= 3.0 / 256 }, "\(name) #\(rank): \(category.score)")
                let overlap = candidates.map { iou($0.rect, detection.boundingBox) }.max() ?? 0
                XCTAssertGreaterThanOrEqual(overlap, 0.95, "\(name) #\(rank): \(detection.boundingBox) vs \(xnnpack[rank].rect)")
            }
        }
    }

    /// maxResults keeps the first N; scoreThreshold drops lower scores (>= kept); allow and deny
    /// lists filter by category name (unknown names are ignored); options are validated.
    func testMaxResultsThresholdAndCategoryLists() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let picture = try image("cats_and_dogs.jpg")
        let all = try detector().detect(image: picture).detections
        XCTAssertEqual(all.count, 10)
        let names = all.map { $0.categories[0].categoryName ?? "" }
        XCTAssertTrue(Set(names).isSuperset(of: ["cat", "dog"]))

        XCTAssertEqual(try detector { $0.maxResults = 3 }.detect(image: picture).detections, Array(all.prefix(3)))
        XCTAssertEqual(try detector { $0.maxResults = 1 }.detect(image: picture).detections, Array(all.prefix(1)))
        XCTAssertEqual(try detector { $0.maxResults = 50 }.detect(image: picture).detections, all)
        XCTAssertEqual(try detector { $0.maxResults = -1 }.detect(image: picture).detections, all)

        let fifth = all[4].categories[0].score
        XCTAssertEqual(try detector { $0.scoreThreshold = fifth }.detect(image: picture).detections,
                       all.filter { $0.categories[0].score >= fifth }, "a score equal to the threshold is kept")
        XCTAssertEqual(try detector { $0.scoreThreshold = 0.5 }.detect(image: picture).detections, all.filter { $0.categories[0].score >= 0.5 })
        XCTAssertEqual(try detector { $0.scoreThreshold = 0 }.detect(image: picture).detections, all)
        XCTAssertEqual(try detector { $0.scoreThreshold = 1.01 }.detect(image: picture).detections, [])
        // Threshold, then max results.
        XCTAssertEqual(try detector { $0.scoreThreshold = 0.4; $0.maxResults = 2 }.detect(image: picture).detections,
                       Array(all.filter { $0.categories[0].score >= 0.4 }.prefix(2)))

        let dogs = all.filter { $0.categories[0].categoryName == "dog" }
        XCTAssertFalse(dogs.isEmpty)
        XCTAssertEqual(try detector { $0.categoryAllowlist = ["dog"] }.detect(image: picture).detections, dogs)
        XCTAssertEqual(try detector { $0.categoryAllowlist = ["dog", "unicorn", "dog"] }.detect(image: picture).detections, dogs)
        XCTAssertEqual(try detector { $0.categoryAllowlist = ["unicorn"] }.detect(image: picture).detections, [])
        XCTAssertEqual(try detector { $0.categoryDenylist = ["cat"] }.detect(image: picture).detections,
                       all.filter { $0.categories[0].categoryName != "cat" })
        XCTAssertEqual(try detector { $0.categoryDenylist = ["unicorn"] }.detect(image: picture).detections, all)
        XCTAssertEqual(try detector { $0.categoryAllowlist = ["dog", "cat"]; $0.maxResults = 2 }.detect(image: picture).detections,
                       Array(all.filter { ["dog", "cat"].contains($0.categories[0].categoryName ?? "") }.prefix(2)))

        // The model given as bytes gives the same detections.
        let options = ObjectDetectorOptions()
        options.baseOptions.modelAssetBuffer = try Data(contentsOf: URL(fileURLWithPath: Self.modelPath))
        XCTAssertEqual(try ObjectDetector(options: options).detect(image: picture).detections, all)
        XCTAssertEqual(try ObjectDetector(modelPath: Self.modelPath).detect(image: picture).detections, all)
    }

    /// Option and model errors (creation only: no inference, so this runs in debug builds too).
    func testOptionAndModelErrors() throws {
        assertTaskError(try detector { $0.maxResults = 0 }, .invalidOptions, message: "Invalid max_results option: value must be != 0.")
        assertTaskError(try detector { $0.categoryAllowlist = ["cat"]; $0.categoryDenylist = ["dog"] }, .invalidOptions, contains: "mutually exclusive")
        let bare = ObjectDetectorOptions()
        bare.baseOptions.modelAssetPath = SharedData.model("\(Self.modelName)_no_metadata.tflite").path
        assertTaskError(try ObjectDetector(options: bare), .incompatibleModel,
                        message: "Object detection models require TFLite Model Metadata but none was found")
        // A classifier (with metadata) is not a detection model.
        let classifier = ObjectDetectorOptions()
        classifier.baseOptions.modelAssetPath = SharedData.model("mobilenet_v1_0.25_224_1_metadata_1.tflite").path
        assertTaskError(try ObjectDetector(options: classifier), .incompatibleModel)
        assertTaskError(try ObjectDetector(modelPath: "/nonexistent/detector.tflite"), .modelNotFound)
        assertTaskError(try ObjectDetector(options: ObjectDetectorOptions()), .invalidOptions)
        // Defaults are MediaPipe's.
        let defaults = ObjectDetectorOptions()
        XCTAssertEqual(defaults.runningMode, .image)
        XCTAssertEqual(defaults.maxResults, -1)
        XCTAssertNil(defaults.scoreThreshold)
        XCTAssertEqual(defaults.displayNamesLocale, "en")
        XCTAssertTrue(defaults.categoryAllowlist.isEmpty && defaults.categoryDenylist.isEmpty)
    }

    /// Running modes: each method only in its mode (MediaPipe's texts), the delegate only (and
    /// always) in live-stream mode, strictly increasing timestamps in video and live-stream modes,
    /// results carrying the frame's timestamp, live-stream results delivered in order.
    func testRunningModesAndTimestamps() throws {
        let sink = Sink()
        let imageMode = try detector()
        let video = try detector { $0.runningMode = .video }
        let live = try detector { $0.runningMode = .liveStream; $0.objectDetectorLiveStreamDelegate = sink }
        XCTAssertEqual(video.runningMode, .video)
        XCTAssertEqual(live.runningMode, .liveStream)
        assertTaskError(try detector { $0.runningMode = .liveStream }, .invalidOptions, contains: "delegate")
        assertTaskError(try detector { $0.runningMode = .video; $0.objectDetectorLiveStreamDelegate = sink }, .invalidOptions, contains: "delegate")
        assertTaskError(try detector { $0.objectDetectorLiveStreamDelegate = sink }, .invalidOptions, contains: "delegate")

        let blank = try MPImage(pixelBuffer: PixelBuffer(data: Data(repeating: 120, count: 64 * 48 * 3), width: 64, height: 48, format: .rgb8))
        assertTaskError(try video.detect(image: blank), .invalidCall,
                        message: "The vision task is not initialized with image mode. Current Running Mode: Video")
        assertTaskError(try live.detect(image: blank), .invalidCall,
                        message: "The vision task is not initialized with image mode. Current Running Mode: Live Stream")
        assertTaskError(try imageMode.detect(videoFrame: blank, timestampInMilliseconds: 0), .invalidCall,
                        message: "The vision task is not initialized with video mode. Current Running Mode: Image")
        assertTaskError(try live.detect(videoFrame: blank, timestampInMilliseconds: 0), .invalidCall,
                        message: "The vision task is not initialized with video mode. Current Running Mode: Live Stream")
        assertTaskError(try imageMode.detectAsync(image: blank, timestampInMilliseconds: 0), .invalidCall,
                        message: "The vision task is not initialized with live stream mode. Current Running Mode: Image")
        assertTaskError(try video.detectAsync(image: blank, timestampInMilliseconds: 0), .invalidCall,
                        message: "The vision task is not initialized with live stream mode. Current Running Mode: Video")

        try XCTSkipIf(_isDebugAssertConfiguration(), "the rest runs the model: needs swift test -c release")
        let picture = try image("cat.bmp")
        let expected = try imageMode.detect(image: picture).detections
        XCTAssertFalse(expected.isEmpty)
        let first = try video.detect(videoFrame: picture, timestampInMilliseconds: 33)
        XCTAssertEqual(first.timestampInMilliseconds, 33)
        XCTAssertEqual(first.detections, expected)
        assertTaskError(try video.detect(videoFrame: picture, timestampInMilliseconds: 33), .invalidCall,
                        message: "Input timestamp must be monotonically increasing.")
        assertTaskError(try video.detect(videoFrame: picture, timestampInMilliseconds: 10), .invalidCall,
                        message: "Input timestamp must be monotonically increasing.")
        XCTAssertEqual(try video.detect(videoFrame: picture, timestampInMilliseconds: 66).timestampInMilliseconds, 66)

        try live.detectAsync(image: picture, timestampInMilliseconds: 100)
        live.waitUntilIdle()
        assertTaskError(try live.detectAsync(image: picture, timestampInMilliseconds: 100), .invalidCall,
                        message: "Input timestamp must be monotonically increasing.")
        try live.detectAsync(image: blank, timestampInMilliseconds: 200)
        live.waitUntilIdle()
        let results = sink.results
        XCTAssertEqual(results.map(\.timestamp), [100, 200])
        XCTAssertTrue(results.allSatisfy { $0.error == nil })
        XCTAssertEqual(results.first?.result?.detections, expected)
        XCTAssertEqual(results.first?.result?.timestampInMilliseconds, 100)
        XCTAssertEqual(results.last?.result?.timestampInMilliseconds, 200)
    }

    /// Orientation: the picture stored turned, with the orientation that makes it upright, gives
    /// the same boxes in the upright image. Mirrored orientations are rejected (MediaPipe).
    func testOrientedImagesGiveUprightBoxes() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let detector = try detector()
        let original = try ImageDecoder.decode(contentsOf: SharedData.image("table.jpg")).pixels
        let expected = try detector.detect(image: MPImage(pixelBuffer: original)).detections
        // oriented(.right) turns the picture clockwise; `.left` turns it back.
        for (turn, back) in [(ImageOrientation.right, ImageOrientation.left), (.left, .right), (.down, .down)] {
            let result = try detector.detect(image: MPImage(pixelBuffer: original.oriented(turn), orientation: back)).detections
            XCTAssertEqual(result.count, expected.count, "\(turn)")
            for (a, b) in zip(result, expected) {
                XCTAssertEqual(a.categories, b.categories, "\(turn)")
                XCTAssertEqual(a.boundingBox.origin.x, b.boundingBox.origin.x, accuracy: 1e-6)
                XCTAssertEqual(a.boundingBox.origin.y, b.boundingBox.origin.y, accuracy: 1e-6)
                XCTAssertEqual(a.boundingBox.size.width, b.boundingBox.size.width, accuracy: 1e-6)
                XCTAssertEqual(a.boundingBox.size.height, b.boundingBox.size.height, accuracy: 1e-6)
            }
        }
        XCTAssertThrowsError(try MPImage(pixelBuffer: original, orientation: .leftMirrored))
    }
}
