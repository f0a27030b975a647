import Foundation
import TestSupport
import XCTest

/// End-to-end tests of `edgevision tensor` (the exact input tensor the tasks feed a model).
final class TensorCommandTests: CLITestCase {
    func testTensorsEqualTheGoldenInputsByteForByte() throws {
        let directory = try temporaryDirectory()
        // uint8 (224 and 128 inputs) and float32 ([0, 1] normalization) models.
        for (model, image) in [("mobilenet_v2_1.0_224_quant", "burger.jpg"), ("mobilenet_v1_0.25_128_quant", "cat.bmp"),
                               ("selfie_segmentation", "sergey.png")] {
            let out = directory.appendingPathComponent("\(model).bin")
            try succeed(["tensor", self.image(image), "--model", self.model("\(model).tflite"), "--out", out.path])
            let golden = SharedData.goldens.appendingPathComponent(model)
                .appendingPathComponent(URL(fileURLWithPath: image).deletingPathExtension().lastPathComponent + ".input.bin")
            let ours = try Data(contentsOf: out), expected = try Data(contentsOf: golden)
            XCTAssertEqual(ours.count, expected.count, model)
            XCTAssertTrue(ours == expected, "\(model) / \(image): the tensor equals the golden input byte for byte")
        }
    }

    func testErrors() throws {
        let directory = try temporaryDirectory()
        let tflite = model("mobilenet_v1_0.25_128_quant.tflite")
        assertUsageError(try tool(["tensor", image("burger.jpg"), "--model", tflite]), "--out")
        assertUsageError(try tool(["tensor", image("burger.jpg"), "--out", directory.appendingPathComponent("x.bin").path]), "--model")
        assertUsageError(try tool(["tensor", "--model", tflite, "--out", "/tmp/x.bin"]), "missing argument IMAGE")
        assertUsageError(try tool(["tensor", image("burger.jpg"), "--model", tflite, "--out", "/tmp/x.bin", "--orientation", "tilted"]), "orientation")
        // Writing into a directory that does not exist: one line, naming the file.
        let unwritable = directory.appendingPathComponent("no/such/dir/x.bin").path
        assertRuntimeError(try tool(["tensor", image("burger.jpg"), "--model", tflite, "--out", unwritable]), [unwritable])
    }
}
