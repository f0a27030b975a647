import EdgeVision
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// Model compatibility (BEHAVIORS.md §A3) and model-file errors of the ML Kit-style labeler: typed
/// errors with ML Kit's texts where ML Kit has one, never a crash (ML Kit raises exceptions here).
final class ImageLabelerCompatibilityTests: XCTestCase {
    func make(_ path: String) throws -> ImageLabeler {
        try ImageLabeler.imageLabeler(options: CustomImageLabelerOptions(localModel: LocalModel(path: path)))
    }

    func testDetectorIsRejectedWithMLKitsMessage() {
        for name in ["coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite", "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29_no_metadata.tflite"] {
            assertVisionError(try make(SharedData.model(name).path), code: .incompatibleModel,
                message: "Unexpected number of dimensions for output index 0: got 3D, expected either 2D (BxN with B=1) or 4D (BxHxWxN with B=1, W=1, H=1).")
        }
    }

    func testFloatInputWithoutNormalizationIsRejected() throws {
        let url = try TinyClassifier(inputType: .float32, heads: [.init(scores: [0.5, 0.25])]).write()
        assertVisionError(try make(url.path), code: .incompatibleModel,
            message: "Input tensor has type kTfLiteFloat32: it requires specifying NormalizationOptions metadata to preprocess input images.")
        // Without any metadata too.
        let bare = try TinyClassifier(inputType: .float32, heads: [.init(scores: [0.5, 0.25])], includesMetadata: false).write()
        assertVisionError(try make(bare.path), code: .incompatibleModel,
            message: "Input tensor has type kTfLiteFloat32: it requires specifying NormalizationOptions metadata to preprocess input images.")
        // With normalization it loads: (p - 127.5) / 127.5 for the float input.
        let normalized = try TinyClassifier(inputType: .float32, normalization: ([127.5], [127.5]), heads: [.init(scores: [0.5, 0.25])]).write()
        XCTAssertEqual(try make(normalized.path).results(in: VisionImage(buffer: try uniformImage(1, 2, 3))).map(\.index), [0, 1])
    }

    func testMissingModelFileNamesThePath() {
        let path = "/nonexistent/dir/model-\(UUID().uuidString).tflite"
        assertVisionError(try make(path), code: .modelNotFound, contains: [path])
        assertVisionError(try ImageLabeler.imageLabeler(options: CustomImageLabelerOptions(localModel: LocalModel(url: URL(fileURLWithPath: path)))),
                          code: .modelNotFound, contains: [path])
    }

    /// Invalid files are typed errors (VisionError or the format layer's error), never a crash.
    func testInvalidModelFilesAreErrors() throws {
        let directory = try makeTemporaryDirectory()
        let mobilenet = try Data(contentsOf: SharedData.model("mobilenet_v1_0.25_128_quant.tflite"))
        var files: [(String, URL)] = [("model_invoking_error", SharedData.model("model_invoking_error.tflite"))]
        for (name, bytes) in [("truncated", mobilenet.prefix(mobilenet.count / 2)), ("truncated-header", mobilenet.prefix(64)),
                              ("empty", Data()), ("text", Data("not a model\n".utf8)),
                              ("image", try Data(contentsOf: SharedData.image("burger.jpg")))] {
            let url = directory.appendingPathComponent("\(name).tflite")
            try Data(bytes).write(to: url)
            files.append((name, url))
        }
        // A directory is not a model file either.
        files.append(("directory", directory))
        for (name, url) in files {
            do {
                _ = try make(url.path)
                XCTFail("\(name): expected an error")
            } catch let error as VisionError {
                XCTAssertNotEqual(error.code, .modelNotFound, "\(name): \(error)")
                XCTAssertFalse(error.message.isEmpty)
            } catch {
                let description = String(describing: error)
                XCTAssertFalse(description.isEmpty, name)
                XCTAssertTrue(["ModelFormatError", "EngineError"].contains(String(describing: type(of: error))),
                              "\(name): unexpected error type \(type(of: error)): \(error)")
            }
        }
    }

    func testDefaultModelNotFoundNamesFileAndDirectories() throws {
        let models = try makeTemporaryDirectory("models"), cache = try makeTemporaryDirectory("cache")
        try withEnvironment(["EDGEVISION_MODELS": models.path, "XDG_CACHE_HOME": cache.path]) {
            assertVisionError(try ImageLabeler.imageLabeler(), code: .modelNotFound,
                              contains: ["mobilenet_v2_1.0_224_quant.tflite", models.path, cache.path])
            assertVisionError(try ImageLabeler.imageLabeler(options: ImageLabelerOptions()), code: .modelNotFound,
                              contains: ["mobilenet_v2_1.0_224_quant.tflite", models.path])
        }
        try withEnvironment(["EDGEVISION_MODELS": nil, "XDG_CACHE_HOME": cache.path]) {
            assertVisionError(try ImageLabeler.imageLabeler(), code: .modelNotFound,
                              contains: ["mobilenet_v2_1.0_224_quant.tflite", cache.path, "EDGEVISION_MODELS"])
        }
        XCTAssertNotEqual(ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], cache.path, "environment restored")
        XCTAssertNotEqual(ProcessInfo.processInfo.environment["EDGEVISION_MODELS"], models.path, "environment restored")
    }

    func testDefaultModelIsFoundInModelDirectory() throws {
        let cache = try makeTemporaryDirectory("cache")
        let labeler = try withEnvironment(["EDGEVISION_MODELS": SharedData.models.path, "XDG_CACHE_HOME": cache.path]) {
            try ImageLabeler.imageLabeler()
        }
        try XCTSkipIf(_isDebugAssertConfiguration(), skipDebugMessage)
        let labels = try labeler.results(in: VisionImage(contentsOf: SharedData.image("burger.jpg")))
        XCTAssertEqual(labels.first?.text, "cheeseburger")
        XCTAssertLessThanOrEqual(labels.count, 10)
    }

    func testLabelCountMustMatchClassCount() throws {
        let url = try TinyClassifier(heads: [.init(scores: [0.5, 0.25, 0.125], labels: ["a", "b"])]).write()
        assertVisionError(try make(url.path), code: .incompatibleModel, contains: ["2", "3"])
        let empty = try TinyClassifier(heads: [.init(scores: [0.5, 0.25], files: [.init(name: "labels.txt", lines: [])])]).write()
        assertVisionError(try make(empty.path), code: .incompatibleModel, contains: ["empty"])
    }

    func testMixedQuantizedAndFloatOutputsAreRejected() throws {
        let url = try TinyClassifier(heads: [.init(tensorName: "q", scores: [0.5, 0.25], quantizedOutput: true),
                                             .init(tensorName: "f", scores: [0.5, 0.25])]).write()
        assertVisionError(try make(url.path), code: .incompatibleModel)
    }

    func testNewerMetadataParserVersionIsRejected() throws {
        let url = try TinyClassifier(heads: [.init(scores: [0.5, 0.25], labels: ["a", "b"])], minParserVersion: "99.0.0").write()
        XCTAssertThrowsError(try make(url.path))
    }
}
