import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// MediaPipe's running-mode rules (BEHAVIORS.md §A5): the method must match the mode, delegates only
/// in live-stream mode, strictly increasing timestamps, no mirrored orientations.
final class RunningModeTests: XCTestCase {
    final class Sink: ImageClassifierLiveStreamDelegate, @unchecked Sendable {
        let results = Locked<[(Int, ImageClassifierResult?, Error?)]>([])
        func imageClassifier(_ imageClassifier: ImageClassifier, didFinishClassification result: ImageClassifierResult?,
                             timestampInMilliseconds: Int, error: Error?) {
            results.withLock { $0.append((timestampInMilliseconds, result, error)) }
        }
    }

    let model = TinyClassifier(heads: [.init(scores: [0.25, 0.75], labels: ["a", "b"])])

    func make(_ mode: RunningMode, delegate: Sink? = nil) throws -> ImageClassifier {
        try classifier(model) {
            $0.runningMode = mode
            $0.imageClassifierLiveStreamDelegate = delegate
        }
    }

    func testMethodMustMatchTheRunningMode() throws {
        let image = try uniformImage(1, 2, 3)
        let sink = Sink()
        let imageMode = try make(.image), video = try make(.video), live = try make(.liveStream, delegate: sink)
        XCTAssertEqual(imageMode.runningMode, .image)
        XCTAssertEqual(video.runningMode, .video)
        XCTAssertEqual(live.runningMode, .liveStream)

        assertVisionError(try video.classify(image: image), code: .invalidCall,
                          message: "The vision task is not initialized with image mode. Current Running Mode: Video")
        assertVisionError(try live.classify(image: image), code: .invalidCall,
                          message: "The vision task is not initialized with image mode. Current Running Mode: Live Stream")
        assertVisionError(try imageMode.classify(videoFrame: image, timestampInMilliseconds: 0), code: .invalidCall,
                          message: "The vision task is not initialized with video mode. Current Running Mode: Image")
        assertVisionError(try live.classify(videoFrame: image, timestampInMilliseconds: 0), code: .invalidCall,
                          message: "The vision task is not initialized with video mode. Current Running Mode: Live Stream")
        assertVisionError(try imageMode.classifyAsync(image: image, timestampInMilliseconds: 0), code: .invalidCall,
                          message: "The vision task is not initialized with live stream mode. Current Running Mode: Image")
        assertVisionError(try video.classifyAsync(image: image, timestampInMilliseconds: 0), code: .invalidCall,
                          message: "The vision task is not initialized with live stream mode. Current Running Mode: Video")
        assertVisionError(try video.classify(image: image, regionOfInterest: CGRect(x: 0, y: 0, width: 0.5, height: 0.5)), code: .invalidCall)

        // The matching calls work.
        XCTAssertEqual(try imageMode.classify(image: image).classificationResult.classifications[0].categories.map(\.index), [1, 0])
        let frame = try video.classify(videoFrame: image, timestampInMilliseconds: 40)
        XCTAssertEqual(frame.timestampInMilliseconds, 40)
        XCTAssertEqual(frame.classificationResult.timestampInMilliseconds, 40)
        XCTAssertEqual(frame.classificationResult.classifications[0].categories.map(\.index), [1, 0])
        try live.classifyAsync(image: image, timestampInMilliseconds: 7)
        live.waitUntilIdle()
        XCTAssertEqual(sink.results.current.map(\.0), [7])
        XCTAssertEqual(sink.results.current.first?.1?.classificationResult.classifications[0].categories.map(\.index), [1, 0])
        XCTAssertNil(sink.results.current.first?.2)
    }

    func testDelegateOnlyInLiveStreamMode() throws {
        let sink = Sink()
        for mode in [RunningMode.image, .video] {
            assertVisionError(try make(mode, delegate: sink), code: .invalidOptions,
                              message: "The vision task is in image or video mode. The delegate must not be set in the task's options.")
        }
        assertVisionError(try make(.liveStream), code: .invalidOptions,
                          message: "The vision task is in live stream mode. An object must be set as the delegate of the task in its options to ensure asynchronous delivery of results.")
    }

    func testVideoTimestampsMustStrictlyIncrease() throws {
        let video = try make(.video)
        let image = try uniformImage(1, 2, 3)
        _ = try video.classify(videoFrame: image, timestampInMilliseconds: 0)
        _ = try video.classify(videoFrame: image, timestampInMilliseconds: 33)
        for bad in [33, 10, -5, 0] {
            assertVisionError(try video.classify(videoFrame: image, timestampInMilliseconds: bad), code: .invalidCall,
                              message: "Input timestamp must be monotonically increasing.")
        }
        // A rejected timestamp does not poison later calls (unlike MediaPipe Web, mediapipe#5743).
        XCTAssertEqual(try video.classify(videoFrame: image, timestampInMilliseconds: 34).timestampInMilliseconds, 34)
        assertVisionError(try video.classify(videoFrame: image, timestampInMilliseconds: 34), code: .invalidCall)
        // Each classifier has its own clock.
        XCTAssertEqual(try make(.video).classify(videoFrame: image, timestampInMilliseconds: 1).timestampInMilliseconds, 1)
    }

    func testLiveStreamTimestampsMustStrictlyIncrease() throws {
        let sink = Sink()
        let live = try make(.liveStream, delegate: sink)
        let image = try uniformImage(1, 2, 3)
        try live.classifyAsync(image: image, timestampInMilliseconds: 100)
        assertVisionError(try live.classifyAsync(image: image, timestampInMilliseconds: 100), code: .invalidCall,
                          message: "Input timestamp must be monotonically increasing.")
        assertVisionError(try live.classifyAsync(image: image, timestampInMilliseconds: 99), code: .invalidCall,
                          message: "Input timestamp must be monotonically increasing.")
        try live.classifyAsync(image: image, timestampInMilliseconds: 101)
        live.waitUntilIdle()
        let delivered = sink.results.current.map(\.0)
        XCTAssertEqual(delivered.last, 101)
        XCTAssertTrue(delivered.allSatisfy { [100, 101].contains($0) })
    }

    func testMirroredOrientationsAreRejected() throws {
        let buffer = try PixelBuffer(width: 4, height: 4, format: .rgb8)
        let message = "Unsupported UIImageOrientation. `imageOrientation` cannot be equal to any of the mirrored orientations (`UIImageOrientationUpMirrored`,`UIImageOrientationDownMirrored`,`UIImageOrientationLeftMirrored`,`UIImageOrientationRightMirrored`)"
        XCTAssertEqual(MPImage.mirroredOrientationMessage, message)
        for orientation in [ImageOrientation.upMirrored, .downMirrored, .leftMirrored, .rightMirrored] {
            assertVisionError(try MPImage(pixelBuffer: buffer, orientation: orientation), code: .invalidImage, message: message)
        }
        for orientation in [ImageOrientation.up, .down, .left, .right] {
            XCTAssertEqual(try MPImage(pixelBuffer: buffer, orientation: orientation).orientation, orientation)
        }
        // Upright size.
        let wide = try PixelBuffer(width: 6, height: 2, format: .rgb8)
        XCTAssertEqual(try MPImage(pixelBuffer: wide, orientation: .right).width, 2)
        XCTAssertEqual(try MPImage(pixelBuffer: wide, orientation: .right).height, 6)
        XCTAssertEqual(try MPImage(pixelBuffer: wide).width, 6)
    }
}
