import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import XCTest

/// One MediaPipe-style image classifier and one object detector (image mode), each shared by many
/// threads at once going through a mix of real images (whole, turned, and with a region of
/// interest) in different orders: every result must equal the single-threaded answer exactly.
///
/// `scripts/stress.sh THREADS ROUNDS` runs it bigger (`EDGEVISION_STRESS_THREADS`, `EDGEVISION_STRESS_ROUNDS`).
final class ConcurrencyStressTests: XCTestCase {
    func testSharedClassifierAndDetectorGiveSingleThreadedAnswers() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        var loaded = try ["burger.jpg", "cat.bmp", "grace_hopper.bmp", "hot_dog.jpg", "sunflower.bmp", "pets.jpg",
                          "multi_objects.jpg", "dragonfly.bmp"].map { try MPImage(contentsOf: SharedData.image($0)) }
        let table = try MPImage(contentsOf: SharedData.image("table.jpg"))
        loaded.append(try MPImage(pixelBuffer: table.pixelBuffer, orientation: .right))
        let kite = try MPImage(contentsOf: SharedData.image("kite_and_cold.jpg"))
        loaded.append(try MPImage(pixelBuffer: kite.pixelBuffer, orientation: .down))
        let images = loaded
        // Regions of interest for the classifier (.zero is the whole image).
        let regions = [CGRect.zero, CGRect(x: 0.1, y: 0.2, width: 0.5, height: 0.6), CGRect(x: 0.5, y: 0, width: 0.5, height: 1)]

        let classifierOptions = ImageClassifierOptions()
        classifierOptions.baseOptions.modelAssetPath = SharedData.model("mobilenet_v1_0.25_128_quant.tflite").path
        classifierOptions.maxResults = 10
        let classifier = try ImageClassifier(options: classifierOptions)
        let detector = try ObjectDetector(modelPath: SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite").path)

        let cases = images.indices.flatMap { i in regions.indices.map { (image: i, region: $0) } }
        let classifications = try cases.map { try classifier.classify(image: images[$0.image], regionOfInterest: regions[$0.region]).classificationResult }
        let detections = try images.map { try detector.detect(image: $0).detections }
        XCTAssertGreaterThanOrEqual(Set(classifications.map { $0.classifications.first?.categories.first?.index }).count, 6)
        XCTAssertGreaterThanOrEqual(Set(detections).count, images.count - 1)
        XCTAssertGreaterThan(detections.map(\.count).reduce(0, +), 10)

        let caseCount = cases.count, imageCount = images.count
        let tasks = [
            StressHarness.Task("ImageClassifier") { t, k in
                let c = (t * 7 + k * (1 + 2 * (t % 4))) % caseCount
                let result = try classifier.classify(image: images[cases[c].image], regionOfInterest: regions[cases[c].region]).classificationResult
                return result == classifications[c] ? nil : "case \(c): \(result) != \(classifications[c])"
            },
            StressHarness.Task("ObjectDetector") { t, k in
                let i = (t * 3 + k * (1 + 2 * (t % 3))) % imageCount
                let result = try detector.detect(image: images[i]).detections
                return result == detections[i] ? nil : "image \(i): \(result) != \(detections[i])"
            },
        ]
        let rounds = StressHarness.rounds(default: 8)
        let report = StressHarness.run(threads: StressHarness.threads(default: 8), rounds: rounds, tasks: tasks)
        print(report)
        XCTAssertEqual(report.totalCalls, report.threads * rounds * tasks.count)
        XCTAssertEqual(report.totalMismatches, 0, report.examples.joined(separator: "\n"))
    }
}
