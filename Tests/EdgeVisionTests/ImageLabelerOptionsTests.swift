import EdgeVision
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// ML Kit's custom image labeling defaults and fall-backs (BEHAVIORS.md §A4) on generated models
/// whose scores are known: `confidenceThreshold` nil → metadata threshold → 0.0, invalid values fall
/// back the same way, labels kept when confidence >= threshold; `maxResultCount` unset or not
/// positive → 10; labels sorted by descending confidence, ties by lower index; no labels → empty text.
final class ImageLabelerOptionsTests: XCTestCase {
    static let names = ["zero", "one", "two", "three", "four", "five"]
    /// Raw scores (no softmax): a negative one, a zero, one exactly at 0.3 and ties at 0.5.
    static let scores: [Float] = [0.5, -0.25, 0.3, 0.0, 0.875, 0.5]

    func model(threshold: Float? = nil, labels: Bool = true) -> TinyClassifier {
        TinyClassifier(heads: [TinyClassifier.Head(
            name: "probability", scores: Self.scores,
            files: labels ? [.init(name: "labels.txt", lines: Self.names)] : [], scoreThreshold: threshold)])
    }

    func label(_ model: TinyClassifier, _ configure: (CustomImageLabelerOptions) -> Void = { _ in }) throws -> [ImageLabel] {
        try labeler(model, configure: configure).results(in: VisionImage(buffer: try uniformImage(90, 20, 200)))
    }

    func testDefaultOptions() {
        let options = CustomImageLabelerOptions(localModel: LocalModel(path: "/nonexistent.tflite"))
        XCTAssertNil(options.confidenceThreshold)
        XCTAssertEqual(options.maxResultCount, 10)
        XCTAssertEqual(options.localModel?.path, "/nonexistent.tflite")
        XCTAssertNil(ImageLabelerOptions().confidenceThreshold)
        XCTAssertEqual(ImageLabelerOptions.defaultModelFileName, "mobilenet_v2_1.0_224_quant.tflite")
        XCTAssertEqual(LocalModel(url: URL(fileURLWithPath: "/a/b.tflite")), LocalModel(path: "/a/b.tflite"))
    }

    func testThresholdUnsetUsesMetadataThreshold() throws {
        let labels = try label(model(threshold: 0.3))
        // Kept: >= 0.3, including the score exactly at the threshold.
        XCTAssertEqual(indices(labels), [4, 0, 5, 2])
        XCTAssertEqual(labels.map(\.confidence), [0.875, 0.5, 0.5, 0.3])
        XCTAssertEqual(labels.map(\.text), ["four", "zero", "five", "two"])
    }

    func testThresholdUnsetWithoutMetadataThresholdIsZero() throws {
        let labels = try label(model())
        // 0.0 is kept (>=), the negative score is dropped.
        XCTAssertEqual(indices(labels), [4, 0, 5, 2, 3])
        XCTAssertEqual(labels.last?.confidence, 0)
    }

    func testInvalidThresholdFallsBackToMetadataThenZero() throws {
        for invalid in [NSNumber(value: -0.5), NSNumber(value: 1.5), NSNumber(value: Float.nan), NSNumber(value: -Float.infinity)] {
            XCTAssertEqual(indices(try label(model(threshold: 0.3)) { $0.confidenceThreshold = invalid }), [4, 0, 5, 2], "\(invalid)")
            XCTAssertEqual(indices(try label(model()) { $0.confidenceThreshold = invalid }), [4, 0, 5, 2, 3], "\(invalid)")
        }
    }

    func testValidThresholdOverridesMetadataAndIsInclusive() throws {
        XCTAssertEqual(indices(try label(model(threshold: 0.3)) { $0.confidenceThreshold = 0.5 }), [4, 0, 5])
        XCTAssertEqual(indices(try label(model(threshold: 0.3)) { $0.confidenceThreshold = 0 }), [4, 0, 5, 2, 3])
        XCTAssertEqual(indices(try label(model(threshold: 0.3)) { $0.confidenceThreshold = 0.875 }), [4])
        XCTAssertEqual(indices(try label(model(threshold: 0.3)) { $0.confidenceThreshold = 1 }), [])
    }

    func testMaxResultCountDefaultsToTenAndFallsBack() throws {
        let many = TinyClassifier(heads: [TinyClassifier.Head(scores: (0..<15).map { Float($0) / 16 },
                                                              labels: (0..<15).map { "class \($0)" })])
        XCTAssertEqual(try label(many).count, 10)
        XCTAssertEqual(indices(try label(many)), Array((5..<15).reversed()))
        for invalid in [0, -1, -100, Int.min] {
            XCTAssertEqual(try label(many) { $0.maxResultCount = invalid }.count, 10, "maxResultCount \(invalid)")
        }
        XCTAssertEqual(indices(try label(many) { $0.maxResultCount = 3 }), [14, 13, 12])
        XCTAssertEqual(try label(many) { $0.maxResultCount = 1000 }.count, 15)
        XCTAssertEqual(try label(many) { $0.maxResultCount = 1 }.map(\.text), ["class 14"])
    }

    func testSortedDescendingWithTiesByLowerIndex() throws {
        let ties = TinyClassifier(heads: [TinyClassifier.Head(scores: [0.25, 0.75, 0.25, 0.75, 0.5, 0.75],
                                                              labels: ["a", "b", "c", "d", "e", "f"])])
        let labels = try label(ties)
        XCTAssertEqual(indices(labels), [1, 3, 5, 4, 0, 2])
        XCTAssertEqual(labels.map(\.text), ["b", "d", "f", "e", "a", "c"])
    }

    func testModelWithoutLabelsGivesEmptyTextAndIndex() throws {
        // Metadata without label files, and no metadata at all.
        for model in [model(labels: false), TinyClassifier(heads: [TinyClassifier.Head(scores: Self.scores)], includesMetadata: false)] {
            let labels = try label(model)
            XCTAssertEqual(indices(labels), [4, 0, 5, 2, 3])
            XCTAssertEqual(labels.map(\.text), ["", "", "", "", ""])
        }
    }

    func testSoftmaxScores() throws {
        let logits: [Float] = [1, 2, 3]
        let softmax = TinyClassifier(heads: [TinyClassifier.Head(scores: logits, softmax: true)])
        let labels = try label(softmax)
        let total = logits.map { exp($0) }.reduce(0, +)
        XCTAssertEqual(indices(labels), [2, 1, 0])
        for l in labels { XCTAssertEqual(l.confidence, exp(logits[l.index]) / total, accuracy: 1e-5) }
    }

    func testQuantizedScoresAreDequantized() throws {
        let quantized = TinyClassifier(heads: [TinyClassifier.Head(tensorName: "scores", scores: [0.25, 0.75, 0.5, 0.99609375, 0],
                                                                   quantizedOutput: true,
                                                                   files: [.init(name: "labels.txt", lines: ["a", "b", "c", "d", "e"])])])
        let labels = try label(quantized)
        XCTAssertEqual(indices(labels), [3, 1, 2, 0, 4])
        XCTAssertEqual(labels.map(\.confidence), [0.99609375, 0.75, 0.5, 0.25, 0])
        XCTAssertEqual(labels.map(\.text), ["d", "b", "c", "a", "e"])
    }

    func testFourDimensionalOutputIsAccepted() throws {
        let model = TinyClassifier(heads: [TinyClassifier.Head(tensorName: "scores", scores: [0.125, 0.625], fourDimensional: true,
                                                               files: [.init(name: "labels.txt", lines: ["x", "y"])])])
        let labels = try label(model)
        XCTAssertEqual(labels.map(\.text), ["y", "x"])
        XCTAssertEqual(labels.map(\.confidence), [0.625, 0.125])
    }

    func testOnlyTheFirstHeadIsUsed() throws {
        let model = TinyClassifier(heads: [
            TinyClassifier.Head(name: "first", tensorName: "first", scores: [0.25, 0.5], files: [.init(name: "first.txt", lines: ["a", "b"])]),
            TinyClassifier.Head(name: "second", tensorName: "second", scores: [0.75, 0.125, 0.375], files: [.init(name: "second.txt", lines: ["x", "y", "z"])]),
        ])
        XCTAssertEqual(try label(model).map(\.text), ["b", "a"])
    }

    /// The score depends on the pixels: the labeler must write the image, upright, into the input.
    func testImageAndOrientationReachTheModel() throws {
        // Input [1, 1, 2, 3]: class 0 = red of the upright left pixel / 255, class 1 = blue of it / 255.
        var weights = Array(repeating: Array(repeating: Float(0), count: 6), count: 2)
        weights[0][0] = 1 / 255
        weights[1][2] = 1 / 255
        let model = TinyClassifier(width: 2, height: 1, heads: [TinyClassifier.Head(scores: [0, 0], weights: weights)])
        let labeler = try labeler(model) { $0.confidenceThreshold = 0 }
        // Stored: red on the left, blue on the right.
        let stored = try rgbImage([[(255, 0, 0), (0, 0, 255)]])
        func leftPixel(_ orientation: ImageOrientation) throws -> (red: Float, blue: Float) {
            let labels = try labeler.results(in: VisionImage(buffer: stored, orientation: orientation))
            let red = labels.first { $0.index == 0 }?.confidence ?? -1, blue = labels.first { $0.index == 1 }?.confidence ?? -1
            return (red, blue)
        }
        XCTAssertEqual(try leftPixel(.up).red, 1, accuracy: 1e-5)
        XCTAssertEqual(try leftPixel(.up).blue, 0, accuracy: 1e-5)
        // Upside down and mirrored: the upright image has blue on the left (ML Kit accepts mirrored orientations).
        XCTAssertEqual(try leftPixel(.down).blue, 1, accuracy: 1e-5)
        XCTAssertEqual(try leftPixel(.upMirrored).blue, 1, accuracy: 1e-5)
        XCTAssertEqual(try leftPixel(.downMirrored).red, 1, accuracy: 1e-5)
        let grey = try labeler.results(in: VisionImage(buffer: try uniformImage(width: 7, height: 3, 51, 0, 102)))
        XCTAssertEqual(grey.first { $0.index == 0 }?.confidence ?? -1, 0.2, accuracy: 1e-5)
        XCTAssertEqual(grey.first { $0.index == 1 }?.confidence ?? -1, 0.4, accuracy: 1e-5)
    }
}
