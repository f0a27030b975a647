import EdgeVision
import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import XCTest

/// End-to-end task latencies on already decoded images, printed as a table for docs/PERFORMANCE.md.
/// Not a test of speed (no assertion on time): skipped unless EDGEVISION_BENCH=1; run by
/// scripts/bench-tasks.sh in release mode.
final class TaskLatencyBenchmarks: XCTestCase {
    /// Median and 90th percentile of `runs` calls after `warmup` calls, in milliseconds.
    func measureMilliseconds(runs: Int = 30, warmup: Int = 5, _ body: () throws -> Void) rethrows -> (median: Double, p90: Double) {
        for _ in 0..<warmup { try body() }
        var times: [Double] = []
        for _ in 0..<runs {
            let start = DispatchTime.now().uptimeNanoseconds
            try body()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        times.sort()
        return (times[times.count / 2], times[min(times.count - 1, times.count * 9 / 10)])
    }

    func testTaskLatencies() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment["EDGEVISION_BENCH"] == "1", "set EDGEVISION_BENCH=1 (scripts/bench-tasks.sh)")
        setenv("EDGEVISION_MODELS", SharedData.models.path, 1)
        var rows: [String] = ["| task | model | image | median ms | p90 ms | MediaPipe end-to-end ms |", "|---|---|---|---:|---:|---:|"]
        func row(_ task: String, _ model: String, _ image: String, _ t: (median: Double, p90: Double), _ reference: String) {
            rows.append(String(format: "| %@ | %@ | %@ | %.2f | %.2f | %@ |", task, model, image, t.median, t.p90, reference))
        }

        // MediaPipe-style classification on the decoded original image (MediaPipe's figures: ANCHORS.md).
        let burger = try MPImage(contentsOf: SharedData.image("burger.jpg"))
        for (model, reference) in [("mobilenet_v2_1.0_224_quant", "7.51"), ("tf2_mobilenet_v2_1.0_224_ptq", "4.43"),
                                   ("mobilenet_v1_0.25_224_quant", "2.02"), ("mobilenet_v1_0.25_224_1_metadata_1", "1.85"),
                                   ("mobilenet_v1_0.25_128_quant", "1.00")] {
            let classifier = try ImageClassifier(modelPath: SharedData.model("\(model).tflite").path)
            row("classify", model, "burger 480x325", try measureMilliseconds { _ = try classifier.classify(image: burger) }, reference)
        }

        // ML Kit-style labeling with the default model.
        let labeler = try ImageLabeler.imageLabeler()
        let burgerVision = try VisionImage(contentsOf: SharedData.image("burger.jpg"))
        row("label (default model)", "mobilenet_v2_1.0_224_quant", "burger 480x325", try measureMilliseconds { _ = try labeler.results(in: burgerVision) }, "-")

        // Selfie segmentation on the decoded 600x600 portrait, full-size mask (MediaPipe: 5.44 ms).
        let sergey = try VisionImage(contentsOf: SharedData.image("sergey.png"))
        for mode in [SelfieSegmenterOptions.SegmenterMode.singleImage, .stream] {
            let options = SelfieSegmenterOptions()
            options.segmenterMode = mode
            let segmenter = try Segmenter.segmenter(options: options)
            row("segment (\(mode == .stream ? "stream" : "single"))", "selfie_segmentation", "sergey 600x600",
                try measureMilliseconds { _ = try segmenter.results(in: sergey) }, "5.44")
        }

        // Object detection: single image, and stream mode per frame (detector + tracker, and with
        // coarse classification) over the traffic clip's decoded frames.
        let cats = try VisionImage(contentsOf: SharedData.image("cats_and_dogs.jpg"))
        let single = EdgeVision.ObjectDetectorOptions()
        single.detectorMode = .singleImage
        single.shouldEnableMultipleObjects = true
        single.shouldEnableClassification = true
        let detector = try EdgeVision.ObjectDetector.objectDetector(options: single)
        row("detect (single, multiple, classify)", "coco_ssd_mobilenet_v1 quant", "cats_and_dogs 1200x600",
            try measureMilliseconds { _ = try detector.results(in: cats) }, "14.51")
        let frames = try VideoReader(path: SharedData.videos.appendingPathComponent("traffic_frames.mp4").path).readFrames().map { VisionImage(buffer: $0.pixels) }
        for classify in [false, true] {
            let options = EdgeVision.ObjectDetectorOptions()
            options.shouldEnableMultipleObjects = true
            options.shouldEnableClassification = classify
            let tracker = try EdgeVision.ObjectDetector.objectDetector(options: options)
            var index = 0
            row("track per frame\(classify ? " + classify" : "")", "coco_ssd_mobilenet_v1 quant", "traffic 960x540",
                try measureMilliseconds(runs: 40) { _ = try tracker.results(in: frames[index % frames.count]); index += 1 }, "-")
        }
        let custom = CustomObjectDetectorOptions(localModel: LocalModel(path: SharedData.model("mobilenet_v1_0.25_224_quant.tflite").path))
        custom.shouldEnableMultipleObjects = true
        custom.shouldEnableClassification = true
        let customTracker = try EdgeVision.ObjectDetector.objectDetector(options: custom)
        var index = 0
        row("track per frame + custom classifier", "ssd + mobilenet_v1_0.25_224_quant", "traffic 960x540",
            try measureMilliseconds(runs: 40) { _ = try customTracker.results(in: frames[index % frames.count]); index += 1 }, "-")
        print("Task latencies (1 thread, release build):\n" + rows.joined(separator: "\n"))
    }
}
