import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// MediaPipe ImageClassifier options and metadata rules (BEHAVIORS.md §A3, §A5) on generated models
/// with known scores.
final class ImageClassifierOptionsTests: XCTestCase {
    static let names = ["zero", "one", "two", "three", "four", "five"]
    static let scores: [Float] = [0.5, -0.25, 0.3, 0.0, 0.875, 0.5]

    func model(threshold: Float? = nil, labels: Bool = true) -> TinyClassifier {
        TinyClassifier(heads: [TinyClassifier.Head(name: "probability", scores: Self.scores,
                                                   files: labels ? [.init(name: "labels.txt", lines: Self.names)] : [],
                                                   scoreThreshold: threshold)])
    }

    func testDefaultOptions() {
        let options = ImageClassifierOptions()
        XCTAssertEqual(options.runningMode, .image)
        XCTAssertEqual(options.maxResults, -1)
        XCTAssertNil(options.scoreThreshold)
        XCTAssertEqual(options.displayNamesLocale, "en")
        XCTAssertEqual(options.categoryAllowlist, [])
        XCTAssertEqual(options.categoryDenylist, [])
        XCTAssertNil(options.imageClassifierLiveStreamDelegate)
        XCTAssertNil(options.baseOptions.modelAssetPath)
        XCTAssertNil(options.baseOptions.modelAssetBuffer)
        XCTAssertEqual(options.baseOptions.delegate, .CPU)
    }

    func testMaxResults() throws {
        // Default -1: every category, sorted, ties by lower index.
        let all = try categories(classifier(model()))
        XCTAssertEqual(all.map(\.index), [4, 0, 5, 2, 3, 1])
        XCTAssertEqual(all.map(\.score), [0.875, 0.5, 0.5, 0.3, 0, -0.25])
        XCTAssertEqual(all.map(\.categoryName), ["four", "zero", "five", "two", "three", "one"])
        XCTAssertEqual(try categories(classifier(model()) { $0.maxResults = -7 }).count, 6)
        XCTAssertEqual(try categories(classifier(model()) { $0.maxResults = 2 }).map(\.index), [4, 0])
        XCTAssertEqual(try categories(classifier(model()) { $0.maxResults = 100 }).count, 6)
    }

    func testMaxResultsZeroIsAnError() throws {
        assertVisionError(try classifier(model()) { $0.maxResults = 0 }, code: .invalidOptions,
                          message: "Invalid max_results option: value must be != 0.")
    }

    func testScoreThreshold() throws {
        // Unset: the metadata threshold (MediaPipe C++/Python semantics; see ImageClassifierOptions.scoreThreshold).
        XCTAssertEqual(try categories(classifier(model(threshold: 0.3))).map(\.index), [4, 0, 5, 2])
        // Unset and no metadata threshold: nothing is filtered, negative scores included.
        XCTAssertEqual(try categories(classifier(model())).map(\.index), [4, 0, 5, 2, 3, 1])
        // Set: overrides the metadata; scores >= threshold are kept.
        XCTAssertEqual(try categories(classifier(model(threshold: 0.3)) { $0.scoreThreshold = 0.5 }).map(\.index), [4, 0, 5])
        XCTAssertEqual(try categories(classifier(model(threshold: 0.3)) { $0.scoreThreshold = 0 }).map(\.index), [4, 0, 5, 2, 3])
        XCTAssertEqual(try categories(classifier(model(threshold: 0.3)) { $0.scoreThreshold = -1 }).count, 6)
        XCTAssertEqual(try categories(classifier(model()) { $0.scoreThreshold = 0.9 }).map(\.index), [])
        // Threshold before top-k.
        XCTAssertEqual(try categories(classifier(model(threshold: 0.3)) { $0.maxResults = 10 }).map(\.index), [4, 0, 5, 2])
        XCTAssertEqual(try categories(classifier(model()) { $0.scoreThreshold = 0.4; $0.maxResults = 2 }).map(\.index), [4, 0])
    }

    func testAllowlistAndDenylist() throws {
        XCTAssertEqual(try categories(classifier(model()) { $0.categoryAllowlist = ["two", "one", "four"] }).map(\.index), [4, 2, 1])
        // Duplicate and unknown names are ignored.
        XCTAssertEqual(try categories(classifier(model()) { $0.categoryAllowlist = ["two", "two", "nothing"] }).map(\.index), [2])
        XCTAssertEqual(try categories(classifier(model()) { $0.categoryAllowlist = ["nothing"] }).map(\.index), [])
        XCTAssertEqual(try categories(classifier(model()) { $0.categoryDenylist = ["four", "zero", "zero", "nothing"] }).map(\.index), [5, 2, 3, 1])
        // Combined with the threshold and top-k.
        XCTAssertEqual(try categories(classifier(model(threshold: 0.3)) { $0.categoryDenylist = ["four"]; $0.maxResults = 2 }).map(\.index), [0, 5])
    }

    func testAllowlistAndDenylistTogetherIsAnError() throws {
        assertVisionError(try classifier(model()) { $0.categoryAllowlist = ["one"]; $0.categoryDenylist = ["two"] },
                          code: .invalidOptions, message: "`category_allowlist` and `category_denylist` are mutually exclusive options.")
    }

    func testAllowOrDenylistNeedLabels() throws {
        let message = "Using `category_allowlist` or `category_denylist` requires labels to be present in the TFLite Model Metadata but none was found."
        for noLabels in [model(labels: false), TinyClassifier(heads: [.init(scores: Self.scores)], includesMetadata: false)] {
            assertVisionError(try classifier(noLabels) { $0.categoryAllowlist = ["one"] }, code: .invalidOptions, message: message)
            assertVisionError(try classifier(noLabels) { $0.categoryDenylist = ["one"] }, code: .invalidOptions, message: message)
            // Without lists, a model without labels works: no names.
            let plain = try categories(classifier(noLabels))
            XCTAssertEqual(plain.map(\.index), [4, 0, 5, 2, 3, 1])
            XCTAssertTrue(plain.allSatisfy { $0.categoryName == nil && $0.displayName == nil })
        }
    }

    func testDisplayNamesLocale() throws {
        let model = TinyClassifier(heads: [.init(name: "probability", scores: [0.25, 0.75, 0.5], files: [
            .init(name: "labels.txt", lines: ["cat", "dog", "bird"]),
            .init(name: "labels_fr.txt", locale: "fr", lines: ["chat", "chien", "oiseau"]),
            .init(name: "labels_en.txt", locale: "en", lines: ["Cat", "Dog", "Bird"]),
            .init(name: "labels_fr2.txt", locale: "fr", lines: ["minou", "toutou", "piaf"]),
        ])])
        func names(_ locale: String?) throws -> [[String?]] {
            try categories(classifier(model) { $0.displayNamesLocale = locale }).map { [$0.categoryName, $0.displayName] }
        }
        // Category names always come from the first label file; display names from the first file of the locale.
        XCTAssertEqual(try names("en"), [["dog", "Dog"], ["bird", "Bird"], ["cat", "Cat"]])
        XCTAssertEqual(try names(nil), [["dog", "Dog"], ["bird", "Bird"], ["cat", "Cat"]], "nil falls back to \"en\"")
        XCTAssertEqual(try names("fr"), [["dog", "chien"], ["bird", "oiseau"], ["cat", "chat"]])
        XCTAssertEqual(try names("de"), [["dog", nil], ["bird", nil], ["cat", nil]], "no file for the locale: no display names, no error")
        // The default options pick "en".
        XCTAssertEqual(try categories(classifier(model)).map(\.displayName), ["Dog", "Bird", "Cat"])
        // Only a localized file: it is also the first file, so it gives the category names.
        let onlyFrench = TinyClassifier(heads: [.init(scores: [0.25, 0.75], files: [.init(name: "fr.txt", locale: "fr", lines: ["chat", "chien"])])])
        XCTAssertEqual(try categories(classifier(onlyFrench)).map { [$0.categoryName, $0.displayName] }, [["chien", nil], ["chat", nil]])
        XCTAssertEqual(try categories(classifier(onlyFrench) { $0.displayNamesLocale = "fr" }).map(\.displayName), ["chien", "chat"])
        // An empty display-names file means no display names (label_map_util), not an error.
        let emptyGerman = TinyClassifier(heads: [.init(scores: [0.25, 0.75], files: [.init(name: "labels.txt", lines: ["a", "b"]),
                                                                                      .init(name: "de.txt", locale: "de", lines: [])])])
        XCTAssertEqual(try categories(classifier(emptyGerman) { $0.displayNamesLocale = "de" }).map { [$0.categoryName, $0.displayName] },
                       [["b", nil], ["a", nil]])
    }

    func testLabelFileErrors() throws {
        // Different numbers of labels and display names: MediaPipe's label_map_util text.
        let mismatch = TinyClassifier(heads: [.init(scores: [0.25, 0.75, 0.5], files: [
            .init(name: "labels.txt", lines: ["cat", "dog", "bird"]),
            .init(name: "labels_en.txt", locale: "en", lines: ["Cat", "Dog"]),
        ])])
        assertVisionError(try classifier(mismatch), code: .incompatibleModel,
                          message: "Mismatch between number of labels (3) and display names (2).")
        // An empty labels file.
        let empty = TinyClassifier(heads: [.init(scores: [0.25, 0.75], files: [.init(name: "labels.txt", lines: [])])])
        assertVisionError(try classifier(empty), code: .incompatibleModel)
        // A labels file with a different number of classes than the output.
        let wrongCount = TinyClassifier(heads: [.init(scores: [0.25, 0.75, 0.5], labels: ["a", "b"])])
        assertVisionError(try classifier(wrongCount), code: .incompatibleModel)
        // A label file named by the metadata but missing from the archive.
        let missing = TinyClassifier(heads: [.init(scores: [0.25, 0.75], files: [
            .init(name: "labels.txt", lines: ["a", "b"], inArchive: false),
            .init(name: "other.txt", lines: ["x", "y"]),
        ])])
        assertVisionError(try classifier(missing), code: .incompatibleModel, contains: ["labels.txt"])
    }

    func testTrailingEmptyLabelLineIsDropped() throws {
        // TinyClassifier writes a trailing "\n"; an extra empty last line is also dropped (label_map_util).
        let model = TinyClassifier(heads: [.init(scores: [0.25, 0.75], files: [.init(name: "labels.txt", lines: ["a", "b"])])])
        XCTAssertEqual(try categories(classifier(model)).map(\.categoryName), ["b", "a"])
    }

    func testScoreCalibration() throws {
        // Raw scores in (0, 1); calibration line per class: scale,slope,offset[,min_score]; empty = default score.
        let raw: [Float] = [0.25, 0.5, 0.75, 0.9, 0.1]
        let lines = ["0.9,2,-1", "1,1,0,0.6", "", "0.5,-1,0.25", "1,3,0.5"]
        func sigmoid(_ scale: Float, _ x: Float) -> Float { scale / (1 + exp(-x)) }
        let transforms: [(Int8, (Float) -> Float)] = [(0, { $0 }), (1, { log($0) }), (2, { log($0) - log(1 - $0) })]
        for (code, transform) in transforms {
            let model = TinyClassifier(heads: [.init(name: "calibrated", scores: raw, files: [
                .init(name: "labels.txt", lines: ["a", "b", "c", "d", "e"]),
                .init(name: "calibration.csv", type: TinyClassifier.File.tensorAxisScoreCalibration, lines: lines),
            ], calibration: .init(transformation: code, defaultScore: 0.125))])
            let result = try categories(classifier(model))
            var expected: [Int: Float] = [:]
            expected[0] = sigmoid(0.9, transform(0.25) * 2 - 1)
            expected[1] = 0.125 // 0.5 < min_score 0.6: default score
            expected[2] = 0.125 // empty line: default score
            expected[3] = sigmoid(0.5, transform(0.9) * -1 + 0.25)
            expected[4] = sigmoid(1, transform(0.1) * 3 + 0.5)
            XCTAssertEqual(result.count, 5, "transformation \(code)")
            for category in result {
                XCTAssertEqual(category.score, expected[category.index] ?? -1, accuracy: 1e-5, "transformation \(code), class \(category.index)")
            }
            // Sorted by calibrated score.
            XCTAssertEqual(result.map(\.score), result.map(\.score).sorted(by: >), "transformation \(code)")
            // The threshold applies to calibrated scores.
            let filtered = try categories(classifier(model) { $0.scoreThreshold = 0.2 })
            XCTAssertEqual(Set(filtered.map(\.index)), Set(expected.filter { $0.value >= 0.2 }.map(\.key)), "transformation \(code)")
        }
    }

    func testScoreCalibrationErrors() throws {
        func model(_ lines: [String], file: Bool = true) -> TinyClassifier {
            TinyClassifier(heads: [.init(scores: [0.25, 0.5], files: [.init(name: "labels.txt", lines: ["a", "b"])]
                                         + (file ? [.init(name: "calibration.csv", type: TinyClassifier.File.tensorAxisScoreCalibration, lines: lines)] : []),
                                         calibration: .init(transformation: 0, defaultScore: 0))])
        }
        // Options without the TENSOR_AXIS_SCORE_CALIBRATION file: an error (MediaPipe: NotFound).
        assertVisionError(try classifier(model([], file: false)), code: .incompatibleModel, contains: ["TENSOR_AXIS_SCORE_CALIBRATION"])
        // Malformed lines and negative scales.
        for bad in [["1,2"], ["1,2,3,4,5"], ["a,b,c"], ["-1,1,0"], ["1,1,0", "1,1,0", "1,1,0"]] {
            assertVisionError(try classifier(model(bad)), code: .incompatibleModel)
        }
        // Fewer lines than classes: the rest are uncalibrated (default score).
        let short = try categories(classifier(model(["1,1,0"])))
        XCTAssertEqual(short.first { $0.index == 1 }?.score, 0)
        XCTAssertEqual(short.first { $0.index == 0 }?.score ?? -1, 1 / (1 + exp(-0.25)), accuracy: 1e-6)
    }

    func testCalibrationFileFromTheCOCOModelParses() throws {
        // The shared COCO SSD copy with score calibration shows the real file format (with empty lines).
        let path = SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29_score_calibration.tflite").path
        let model = try TaskModel(path: path)
        let output = try XCTUnwrap(model.metadata?.subgraphs.first?.outputTensors.first { $0.scoreCalibration != nil })
        let options = try XCTUnwrap(output.scoreCalibration)
        let file = try XCTUnwrap(output.associatedFiles.first { $0.type == .tensorAxisScoreCalibration })
        let contents = try XCTUnwrap(model.archive?.contents(ofFileNamed: file.name))
        let calibration = try ScoreCalibration(options: options, file: contents, classCount: 90)
        XCTAssertFalse(calibration.parameters.isEmpty)
        XCTAssertTrue(calibration.parameters.contains { $0 == nil }, "the COCO file has uncalibrated (empty) lines")
        XCTAssertTrue(calibration.parameters.contains { $0 != nil })
        if let index = calibration.parameters.firstIndex(where: { $0 == nil }) {
            XCTAssertEqual(calibration.calibrate(0.7, classIndex: index), options.defaultScore)
        }
        if let index = calibration.parameters.firstIndex(where: { $0 != nil }), let p = calibration.parameters[index] {
            let score: Float = 0.7
            let x: Float
            switch options.transformation {
            case .identity: x = score
            case .log: x = log(score)
            case .inverseLogistic: x = log(score) - log(1 - score)
            }
            let expected = (p.minimumScore.map { score < $0 } ?? false) ? options.defaultScore : p.scale / (1 + exp(-(x * p.slope + p.offset)))
            XCTAssertEqual(calibration.calibrate(score, classIndex: index), expected, accuracy: 1e-5)
        }
    }

    func testMultipleHeads() throws {
        let model = TinyClassifier(heads: [
            .init(name: "animals", tensorName: "animal_scores", scores: [0.25, 0.75, 0.5], files: [.init(name: "animals.txt", lines: ["cat", "dog", "bird"])],
                  scoreThreshold: 0.4),
            .init(name: "colours", tensorName: "colour_scores", scores: [0.625, 0.125], softmax: false, files: [.init(name: "colours.txt", lines: ["red", "blue"])]),
        ])
        let result = try classifier(model).classify(image: uniformImage(1, 2, 3))
        let heads = result.classificationResult.classifications
        XCTAssertEqual(heads.map(\.headIndex), [0, 1])
        XCTAssertEqual(heads.map(\.headName), ["animals", "colours"])
        XCTAssertEqual(heads[0].categories.map(\.categoryName), ["dog", "bird"], "head 0 has its own metadata threshold")
        XCTAssertEqual(heads[1].categories.map(\.categoryName), ["red", "blue"])
        // maxResults and allowlists apply per head.
        let top1 = try classifier(model) { $0.maxResults = 1 }.classify(image: uniformImage(1, 2, 3)).classificationResult.classifications
        XCTAssertEqual(top1.map { $0.categories.map(\.categoryName) }, [["dog"], ["red"]])
        let allowed = try classifier(model) { $0.categoryAllowlist = ["cat", "blue"]; $0.scoreThreshold = 0 }
            .classify(image: uniformImage(1, 2, 3)).classificationResult.classifications
        XCTAssertEqual(allowed.map { $0.categories.map(\.categoryName) }, [["cat"], ["blue"]])
        // Without metadata: heads without names.
        let bare = TinyClassifier(heads: [.init(tensorName: "a", scores: [0.5]), .init(tensorName: "b", scores: [0.25, 0.5])], includesMetadata: false)
        let bareHeads = try classifier(bare).classify(image: uniformImage(1, 2, 3)).classificationResult.classifications
        XCTAssertEqual(bareHeads.map(\.headIndex), [0, 1])
        XCTAssertEqual(bareHeads.map(\.headName), [nil, nil])
        XCTAssertEqual(bareHeads.map(\.categories.count), [1, 2])
    }

    func testQuantizedAndFourDimensionalOutputs() throws {
        let model = TinyClassifier(heads: [
            .init(name: "q", tensorName: "q", scores: [0.25, 0.99609375, 0.5], quantizedOutput: true, files: [.init(name: "q.txt", lines: ["a", "b", "c"])]),
            .init(name: "q4", tensorName: "q4", scores: [0.125, 0.0], quantizedOutput: true, fourDimensional: true),
        ])
        let heads = try classifier(model).classify(image: uniformImage(9, 8, 7)).classificationResult.classifications
        XCTAssertEqual(heads[0].categories.map(\.score), [0.99609375, 0.5, 0.25])
        XCTAssertEqual(heads[0].categories.map(\.categoryName), ["b", "c", "a"])
        XCTAssertEqual(heads[1].categories.map(\.score), [0.125, 0])
        XCTAssertEqual(heads[1].headName, "q4")
    }

    func testNormalization() throws {
        // Float input: the model sees (p - mean[c]) / std[c]; the weights pick the first pixel's channels.
        var weights = Array(repeating: Array(repeating: Float(0), count: 12), count: 3)
        for c in 0..<3 { weights[c][c] = 1 }
        let perChannel = TinyClassifier(inputType: .float32, normalization: ([10, 20, 30], [2, 4, 8]),
                                        heads: [.init(scores: [0, 0, 0], weights: weights)])
        let values = try categories(classifier(perChannel), uniformImage(50, 100, 200))
        let byIndex = Dictionary(uniqueKeysWithValues: values.map { ($0.index, $0.score) })
        XCTAssertEqual(byIndex[0], 20)
        XCTAssertEqual(byIndex[1], 20)
        XCTAssertEqual(byIndex[2], 21.25)
        // One value for all channels.
        let single = TinyClassifier(inputType: .float32, normalization: ([127.5], [127.5]), heads: [.init(scores: [0, 0, 0], weights: weights)])
        let s = Dictionary(uniqueKeysWithValues: try categories(classifier(single), uniformImage(0, 255, 51)).map { ($0.index, $0.score) })
        XCTAssertEqual(s[0], -1)
        XCTAssertEqual(s[1], 1)
        XCTAssertEqual(s[2] ?? 0, (51 - 127.5) / 127.5, accuracy: 1e-6)
        // Invalid normalization options.
        for (mean, std) in [([Float](), [Float]()), ([1, 2], [1, 2]), ([1, 2, 3], [1]), ([0], [0]), ([0, 0, 0], [1, 0, 1])] {
            let bad = TinyClassifier(inputType: .float32, normalization: (mean, std), heads: [.init(scores: [0.5])])
            assertVisionError(try classifier(bad), code: .incompatibleModel)
        }
    }

    func testModelFromBuffer() throws {
        let options = ImageClassifierOptions()
        options.baseOptions.modelAssetBuffer = model().data
        XCTAssertEqual(try categories(ImageClassifier(options: options)).map(\.index), [4, 0, 5, 2, 3, 1])
        // Neither a path nor a buffer.
        assertVisionError(try ImageClassifier(options: ImageClassifierOptions()), code: .invalidOptions)
        // The path wins over the buffer.
        options.baseOptions.modelAssetPath = try model(threshold: 0.3).write().path
        XCTAssertEqual(try categories(ImageClassifier(options: options)).map(\.index), [4, 0, 5, 2])
        // Convenience initializer.
        XCTAssertEqual(try categories(ImageClassifier(modelPath: try model().write().path)).count, 6)
    }

    func testRegionOfInterestOnSmallModel() throws {
        // Class c = channel c of the top-left input pixel / 255; a 2×2 input.
        var weights = Array(repeating: Array(repeating: Float(0), count: 12), count: 3)
        for c in 0..<3 { weights[c][c] = 1 / 255 }
        let classifier = try classifier(TinyClassifier(heads: [.init(scores: [0, 0, 0], weights: weights)]))
        // 4×4 image: left half red, right half blue, bottom-right quarter green.
        var rows: [[(UInt8, UInt8, UInt8)]] = []
        for y in 0..<4 { rows.append((0..<4).map { x in x < 2 ? (255, 0, 0) : (y >= 2 ? (0, 255, 0) : (0, 0, 255)) }) }
        let image = try MPImage(pixelBuffer: try rgbBuffer(rows))
        func topLeft(_ roi: CGRect) throws -> [Float] {
            let cats = try classifier.classify(image: image, regionOfInterest: roi).classificationResult.classifications[0].categories
            return (0..<3).map { i in cats.first { $0.index == i }?.score ?? -1 }
        }
        XCTAssertEqual(try topLeft(.zero), [1, 0, 0], "CGRect.zero is the whole image")
        XCTAssertEqual(try topLeft(CGRect(x: 0.5, y: 0, width: 0.5, height: 0.5)), [0, 0, 1])
        XCTAssertEqual(try topLeft(CGRect(x: 0.5, y: 0.5, width: 0.5, height: 0.5)), [0, 1, 0])
        for bad in [CGRect(x: -0.1, y: 0, width: 0.5, height: 0.5), CGRect(x: 0.6, y: 0, width: 0.5, height: 0.5),
                    CGRect(x: 0, y: 0, width: 0, height: 0.5), CGRect(x: 0, y: 0, width: .nan, height: 0.5)] {
            assertVisionError(try classifier.classify(image: image, regionOfInterest: bad), code: .invalidImage)
        }
    }

    func testOrientationIsApplied() throws {
        // Class c = channel c of the top-left pixel of the upright image.
        var weights = Array(repeating: Array(repeating: Float(0), count: 12), count: 3)
        for c in 0..<3 { weights[c][c] = 1 / 255 }
        let classifier = try classifier(TinyClassifier(heads: [.init(scores: [0, 0, 0], weights: weights)]))
        // Stored 2×2: red, blue / green, white.
        let buffer = try rgbBuffer([[(255, 0, 0), (0, 0, 255)], [(0, 255, 0), (255, 255, 255)]])
        func topLeft(_ orientation: ImageOrientation) throws -> [Float] {
            let cats = try classifier.classify(image: MPImage(pixelBuffer: buffer, orientation: orientation)).classificationResult.classifications[0].categories
            return (0..<3).map { i in cats.first { $0.index == i }?.score ?? -1 }
        }
        XCTAssertEqual(try topLeft(.up), [1, 0, 0])
        XCTAssertEqual(try topLeft(.down), [1, 1, 1])
        // .right: the stored image is turned 90° clockwise to be upright, so the stored bottom-left comes to the top-left.
        XCTAssertEqual(try topLeft(.right), [0, 1, 0])
        XCTAssertEqual(try topLeft(.left), [0, 0, 1])
    }
}
