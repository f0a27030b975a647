import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// Model compatibility (BEHAVIORS.md §A3) and model-file errors of the MediaPipe-style classifier.
final class ImageClassifierCompatibilityTests: XCTestCase {
    func testDetectorIsRejected() {
        for name in ["coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite", "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29_score_calibration.tflite"] {
            assertVisionError(try ImageClassifier(modelPath: SharedData.model(name).path), code: .incompatibleModel,
                message: "Unexpected number of dimensions for output index 0: got 3D, expected either 2D (BxN with B=1) or 4D (BxHxWxN with B=1, W=1, H=1).")
        }
    }

    func testNonClassifierModelsAreRejected() {
        // Segmenters ([1, H, W, C] outputs) and the face detector: typed errors, not crashes.
        for name in ["deeplabv3.tflite", "deeplabv3_mnv2_pascal_quant.tflite", "selfie_segmentation.tflite", "face_detection_short_range.tflite"] {
            do {
                _ = try ImageClassifier(modelPath: SharedData.model(name).path)
                XCTFail("\(name) is not a classifier")
            } catch let error as VisionError {
                XCTAssertEqual(error.code, .incompatibleModel, "\(name): \(error)")
            } catch {
                // An op the engine lacks is also a typed error.
                XCTAssertFalse(String(describing: error).isEmpty, name)
            }
        }
    }

    func testFloatInputWithoutNormalizationIsRejected() throws {
        let url = try TinyClassifier(inputType: .float32, heads: [.init(scores: [0.5, 0.25], labels: ["a", "b"])]).write()
        assertVisionError(try ImageClassifier(modelPath: url.path), code: .incompatibleModel,
            message: "Input tensor has type kTfLiteFloat32: it requires specifying NormalizationOptions metadata to preprocess input images.")
    }

    func testFloatModelWithNormalizationLoads() throws {
        // The shared float MobileNet has NormalizationOptions metadata.
        let classifier = try ImageClassifier(modelPath: SharedData.model("mobilenet_v1_0.25_224_1_metadata_1.tflite").path)
        XCTAssertEqual(classifier.runningMode, .image)
    }

    func testMissingModelFileNamesThePath() {
        let path = "/nonexistent/\(UUID().uuidString)/classifier.tflite"
        assertVisionError(try ImageClassifier(modelPath: path), code: .modelNotFound, contains: [path])
    }

    func testInvalidModelFilesAreErrors() throws {
        let directory = try makeTemporaryDirectory()
        let mobilenet = try Data(contentsOf: SharedData.model("mobilenet_v2_1.0_224_quant.tflite"))
        var paths = [SharedData.model("model_invoking_error.tflite").path]
        for (name, bytes) in [("truncated", mobilenet.prefix(mobilenet.count - 1000)), ("half", mobilenet.prefix(mobilenet.count / 2)),
                              ("empty", Data()), ("garbage", Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 37) }))] {
            let url = directory.appendingPathComponent("\(name).tflite")
            try Data(bytes).write(to: url)
            paths.append(url.path)
        }
        for path in paths {
            XCTAssertThrowsError(try ImageClassifier(modelPath: path), path) { error in
                if let error = error as? VisionError { XCTAssertNotEqual(error.code, .modelNotFound, path) }
                XCTAssertFalse(String(describing: error).isEmpty)
            }
            let options = ImageClassifierOptions()
            options.baseOptions.modelAssetBuffer = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertThrowsError(try ImageClassifier(options: options), path)
        }
    }
}
