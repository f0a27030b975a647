import Dispatch
import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// The classifier end to end against LiteRT's goldens, with a region of interest, and returning all
/// categories by default. Model-sized: optimized builds only.
final class ImageClassifierGoldenTests: XCTestCase {
    func testGoldenTop5() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let goldens = try ClassifierGolden.all()
        XCTAssertGreaterThanOrEqual(goldens.count, 13)
        var classifiers: [String: ImageClassifier] = [:]
        for golden in goldens {
            let classifier = try classifiers[golden.model] ?? {
                let options = ImageClassifierOptions()
                options.baseOptions.modelAssetPath = golden.modelFile.path
                options.maxResults = 5
                return try ImageClassifier(options: options)
            }()
            classifiers[golden.model] = classifier
            let result = try classifier.classify(image: MPImage(contentsOf: golden.imageFile))
            let context = "\(golden.model) / \(golden.image)"
            XCTAssertEqual(result.classificationResult.classifications.count, 1, context)
            let head = try XCTUnwrap(result.classificationResult.classifications.first)
            XCTAssertEqual(head.headIndex, 0)
            let ours = head.categories.map { (index: $0.index, score: $0.score) }
            XCTAssertEqual(ours.count, 5, context)
            XCTAssertFalse(golden.matchingReferences(ours).isEmpty,
                           "\(context): ours \(ours.map { "\($0.index):\($0.score)" }.joined(separator: " ")) matches no LiteRT reference (same order, within one step): \(golden.referenceSummary). (The inputs are checked by testPreprocessedInputsMatchGoldenInputs; if that passes, the difference comes from the engine.)")
            for category in head.categories {
                if let text = golden.labels[category.index] { XCTAssertEqual(category.categoryName, text, "\(context) index \(category.index)") }
            }
            XCTAssertEqual(head.categories.first?.categoryName, golden.top5.first?.label, context)
        }
    }

    /// The task's preprocessing (decode, orientation, resize, tensor type) gives exactly the golden
    /// input tensors, so a top-5 difference above comes from the engine, not from the task layer.
    func testPreprocessedInputsMatchGoldenInputs() throws {
        let goldens = try ClassifierGolden.all()
        XCTAssertFalse(goldens.isEmpty)
        var models: [String: TaskModel] = [:]
        for golden in goldens {
            let model = try models[golden.model] ?? TaskModel(path: golden.modelFile.path)
            models[golden.model] = model
            let image = try MPImage(contentsOf: golden.imageFile)
            let spec = model.imageInput
            let size = spec.width * spec.height * spec.channels * (spec.type == .float32 ? 4 : 1)
            var ours = [UInt8](repeating: 0, count: size)
            try ours.withUnsafeMutableBytes { buffer in
                try ImagePreprocessor.write(image.pixelBuffer, orientation: image.orientation, spec: spec, into: buffer)
            }
            let expected = try Data(contentsOf: SharedData.goldens.appendingPathComponent(golden.model).appendingPathComponent("\(golden.image).input.bin"))
            XCTAssertEqual(ours.count, expected.count, "\(golden.model) / \(golden.image)")
            XCTAssertTrue(ours.elementsEqual(expected), "\(golden.model) / \(golden.image): the preprocessed input differs from the golden input tensor")
        }
    }

    func testRegionOfInterest() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let classifier = try ImageClassifier(modelPath: SharedData.model("mobilenet_v2_1.0_224_quant.tflite").path)
        let image = try MPImage(contentsOf: SharedData.image("multi_objects.jpg"))
        XCTAssertEqual(image.width, 902)
        XCTAssertEqual(image.height, 358)
        let roi = CGRect(x: 406.0 / 902, y: 110.0 / 358, width: 148.0 / 902, height: 153.0 / 358)
        let result = try classifier.classify(image: image, regionOfInterest: roi)
        let top = try XCTUnwrap(result.classificationResult.classifications.first?.categories.first)
        XCTAssertEqual(top.index, 806)
        XCTAssertEqual(top.categoryName, "soccer ball")
        XCTAssertGreaterThan(top.score, 0.5)
        // The whole image is something else.
        let whole = try classifier.classify(image: image).classificationResult.classifications[0].categories[0]
        XCTAssertNotEqual(whole.index, 806)
    }

    func testAllCategoriesByDefault() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let classifier = try ImageClassifier(modelPath: SharedData.model("mobilenet_v2_1.0_224_quant.tflite").path)
        let categories = try classifier.classify(image: MPImage(contentsOf: SharedData.image("burger.jpg"))).classificationResult.classifications[0].categories
        XCTAssertEqual(categories.count, 1001)
        XCTAssertEqual(Set(categories.map(\.index)), Set(0..<1001))
        XCTAssertEqual(categories.first?.categoryName, "cheeseburger")
        XCTAssertEqual(categories.map(\.score), categories.map(\.score).sorted(by: >))
        for (a, b) in zip(categories, categories.dropFirst()) where a.score == b.score {
            XCTAssertLessThan(a.index, b.index, "ties by lower index")
        }
    }

    func testVideoModeMatchesImageMode() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let path = SharedData.model("mobilenet_v1_0.25_128_quant.tflite").path
        let image = try ImageClassifier(modelPath: path)
        let options = ImageClassifierOptions()
        options.baseOptions.modelAssetPath = path
        options.runningMode = .video
        let video = try ImageClassifier(options: options)
        for (t, name) in ["burger.jpg", "cat.bmp", "grace_hopper.bmp"].enumerated() {
            let frame = try MPImage(contentsOf: SharedData.image(name))
            XCTAssertEqual(try video.classify(videoFrame: frame, timestampInMilliseconds: t * 33).classificationResult.classifications,
                           try image.classify(image: frame).classificationResult.classifications, name)
        }
    }

    func testConcurrentImageModeCalls() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let classifier = try ImageClassifier(modelPath: SharedData.model("mobilenet_v1_0.25_128_quant.tflite").path)
        let images = try ["burger.jpg", "cat.bmp", "grace_hopper.bmp", "hot_dog.jpg"].map { try MPImage(contentsOf: SharedData.image($0)) }
        let expected = try images.map { try classifier.classify(image: $0).classificationResult.classifications }
        let results = Locked<[Int: [Classifications]]>([:])
        DispatchQueue.concurrentPerform(iterations: 32) { i in
            let r = try? classifier.classify(image: images[i % images.count]).classificationResult.classifications
            results.withLock { $0[i] = r }
        }
        for i in 0..<32 { XCTAssertEqual(results.current[i], expected[i % images.count], "run \(i)") }
    }
}
