import Foundation
import MediaIO
import TestSupport
import TFLiteFormat
import VisionCore
import XCTest

/// The tasks' preprocessing (decode, orientation, half-pixel bilinear resize, quantization or
/// normalization) reproduces the image input tensor of every golden in ../shared/reference/goldens,
/// for every model kind (uint8 and float32 inputs; BMP, PNG and JPEG sources), byte for byte.
final class PreprocessingGoldenTests: XCTestCase {
    func testEveryGoldenImageInputIsReproducedByteForByte() throws {
        let index = try SharedData.goldenIndex()
        let models = try XCTUnwrap(index["models"] as? [String: [String: Any]])
        var checked = 0
        for (name, entry) in models.sorted(by: { $0.key < $1.key }) where entry["status"] as? String == "ok" {
            let model = try TFLiteModel(contentsOfFile: SharedData.model("\(name).tflite").path)
            let spec = try ImageInputSpec(model: model, metadata: try model.metadata())
            for image in entry["images"] as? [String] ?? [] {
                let directory = SharedData.goldens.appendingPathComponent(name)
                let record = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("\(image).json"))) as? [String: Any])
                let imageFile = try XCTUnwrap(record["image_file"] as? String)
                let decoded = try ImageDecoder.decode(contentsOf: SharedData.root.appendingPathComponent(imageFile))
                let expected = try Data(contentsOf: directory.appendingPathComponent("\(image).input.bin"))
                var ours = Data(count: expected.count)
                try ours.withUnsafeMutableBytes { buffer in
                    try ImagePreprocessor.write(decoded.pixels, orientation: decoded.orientation, spec: spec, into: buffer)
                }
                XCTAssertEqual(ours, expected, "\(name) / \(image) (\(imageFile), \(spec.type))")
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 36)
    }
}
