import EdgeVision
import Foundation
import MediaIO
import TestSupport
import XCTest

/// One ML Kit object detector (single-image mode), one image labeler and one segmenter
/// (single-image mode), each shared by many threads at once that go through a mix of real images
/// (different sizes, formats and orientations) in different orders: every result must equal the
/// single-threaded answer exactly (labels, indices, confidences, frames, mask values).
///
/// `scripts/stress.sh THREADS ROUNDS` runs it bigger (`EDGEVISION_STRESS_THREADS`, `EDGEVISION_STRESS_ROUNDS`).
/// Stream modes are left out: they carry state from call to call, so their answers depend on the order of calls.
final class ConcurrencyStressTests: XCTestCase {
    func testSharedDetectorLabelerAndSegmenterGiveSingleThreadedAnswers() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let images = try Self.stressImages()

        let detectorOptions = ObjectDetectorOptions()
        detectorOptions.detectorMode = .singleImage
        detectorOptions.shouldEnableMultipleObjects = true
        detectorOptions.shouldEnableClassification = true
        detectorOptions.detectionModel = LocalModel(url: SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"))
        let detector = try ObjectDetector.objectDetector(options: detectorOptions)

        let labelerOptions = CustomImageLabelerOptions(localModel: LocalModel(url: SharedData.model("mobilenet_v1_0.25_128_quant.tflite")))
        labelerOptions.maxResultCount = 20
        labelerOptions.confidenceThreshold = 0
        let labeler = try ImageLabeler.imageLabeler(options: labelerOptions)

        let segmenterOptions = SelfieSegmenterOptions()
        segmenterOptions.segmenterMode = .singleImage
        segmenterOptions.localModel = LocalModel(url: SharedData.model("selfie_segmentation.tflite"))
        let segmenter = try Segmenter.segmenter(options: segmenterOptions)

        // The single-threaded answers, computed first.
        let objects = try images.map { try detector.results(in: $0) }
        let labels = try images.map { try labeler.results(in: $0) }
        let masks = try images.map { try segmenter.results(in: $0) }
        // The answers differ between images, so a result given to the wrong caller is noticed.
        XCTAssertGreaterThanOrEqual(Set(objects).count, images.count - 1, "detections: \(objects.map(\.count))")
        XCTAssertGreaterThanOrEqual(Set(labels.map { $0.first?.index }).count, 4)
        XCTAssertEqual(Set(masks).count, images.count)
        XCTAssertGreaterThan(objects.map(\.count).reduce(0, +), 5)

        let count = images.count
        // Each thread starts at its own image and strides through them differently.
        let pick: @Sendable (Int, Int, Int) -> Int = { thread, call, salt in (thread * 5 + call * (1 + 2 * (thread % 3)) + salt) % count }
        let tasks = [
            StressHarness.Task("ObjectDetector") { t, k in
                let i = pick(t, k, 0)
                let result = try detector.results(in: images[i])
                return result == objects[i] ? nil : "image \(i): \(result) != \(objects[i])"
            },
            StressHarness.Task("ImageLabeler") { t, k in
                let i = pick(t, k, 1)
                let result = try labeler.results(in: images[i])
                return result == labels[i] ? nil : "image \(i): \(result.prefix(3)) != \(labels[i].prefix(3))"
            },
            StressHarness.Task("Segmenter") { t, k in
                let i = pick(t, k, 2)
                let result = try segmenter.results(in: images[i])
                guard result != masks[i] else { return nil }
                let differing = zip(result.values, masks[i].values).filter { $0 != $1 }.count
                return "image \(i): \(differing) mask values differ (\(result.width)×\(result.height))"
            },
        ]
        let report = StressHarness.run(threads: StressHarness.threads(default: 8), rounds: StressHarness.rounds(default: 6), tasks: tasks)
        print(report)
        XCTAssertEqual(report.totalCalls, report.threads * StressHarness.rounds(default: 6) * tasks.count)
        XCTAssertEqual(report.totalMismatches, 0, report.examples.joined(separator: "\n"))
    }

    /// Real images of different sizes and formats, two of them turned by their orientation.
    static func stressImages() throws -> [VisionImage] {
        var images = try ["burger.jpg", "cat.bmp", "grace_hopper.bmp", "pets.jpg", "multi_objects.jpg", "table.jpg",
                          "businessman_pixabay.jpeg", "sergey.png"].map { try VisionImage(contentsOf: SharedData.image($0)) }
        let kite = try VisionImage(contentsOf: SharedData.image("kite_and_cold.jpg"))
        images.append(VisionImage(buffer: kite.pixelBuffer, orientation: .right))
        let dogs = try VisionImage(contentsOf: SharedData.image("cats_and_dogs.jpg"))
        images.append(VisionImage(buffer: dogs.pixelBuffer, orientation: .downMirrored))
        return images
    }
}
