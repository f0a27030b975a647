import Foundation
import MediaIO
import TestSupport
import XCTest

/// End-to-end tests of `edgevision detect` (ML Kit object detection, single-image mode).
final class DetectCommandTests: CLITestCase {
    func testMultipleClassifiedObjectsJSONShape() throws {
        try requireOptimizedBuild()
        let json = try jsonObject(try succeed(["detect", image("cats_and_dogs.jpg"), "--multiple", "--classify", "--json"]))
        XCTAssertEqual(Array(json.keys), ["objects"])
        let objects = try XCTUnwrap(json["objects"] as? [[String: Any]])
        XCTAssertGreaterThanOrEqual(objects.count, 2, "cats and dogs")
        XCTAssertLessThanOrEqual(objects.count, 5, "ML Kit: at most 5 objects")
        for object in objects {
            XCTAssertEqual(Set(object.keys), ["frame", "trackingID", "labels"])
            XCTAssertTrue(object["trackingID"] is NSNull, "single-image mode has no tracking IDs: \(object)")
            let frame = try XCTUnwrap(object["frame"] as? [String: Any])
            XCTAssertEqual(Set(frame.keys), ["x", "y", "width", "height"])
            let x = try XCTUnwrap(frame["x"] as? Double), y = try XCTUnwrap(frame["y"] as? Double)
            let w = try XCTUnwrap(frame["width"] as? Double), h = try XCTUnwrap(frame["height"] as? Double)
            XCTAssertTrue(w > 0 && h > 0 && x >= -1 && y >= -1 && x + w <= 1201 && y + h <= 601, "inside the 1200×600 image: \(frame)")
            let labels = try XCTUnwrap(object["labels"] as? [[String: Any]])
            for label in labels {
                XCTAssertEqual(Set(label.keys), ["text", "confidence", "index"])
                XCTAssertNotNil(label["text"] as? String)
                XCTAssertNotNil(label["index"] as? Int)
                XCTAssertTrue((0...1).contains(try XCTUnwrap(label["confidence"] as? Double)))
            }
        }
        // Labels are ML Kit's coarse categories (animals have none: "unknown").
        let texts = Set(objects.flatMap { ($0["labels"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String } })
        XCTAssertTrue(texts.isSubset(of: ["Fashion good", "Home good", "Food", "Place", "Plant"]), "\(texts)")

        // Without --multiple: only the most prominent object.
        let single = try XCTUnwrap(try jsonObject(try succeed(["detect", image("cats_and_dogs.jpg"), "--json"]))["objects"] as? [[String: Any]])
        XCTAssertLessThanOrEqual(single.count, 1)
    }

    func testAnnotateWritesADecodablePNG() throws {
        try requireOptimizedBuild()
        let out = try temporaryDirectory().appendingPathComponent("annotated.png")
        let result = try succeed(["detect", image("cats_and_dogs.jpg"), "--multiple", "--classify", "--annotate", out.path])
        XCTAssertTrue(result.stdout.hasPrefix("objects: "), result.stdout)
        XCTAssertEqual(try pngColorType(out), 2, "RGB")
        let decoded = try ImageDecoder.decode(contentsOf: out)
        XCTAssertEqual(decoded.format, .png)
        XCTAssertEqual([decoded.pixels.width, decoded.pixels.height], [1200, 600])
    }

    func testUsageErrors() throws {
        let cases: [([String], String)] = [
            (["detect"], "missing argument IMAGE"),
            (["detect", image("cat.bmp"), "--threshold", "0.5"], "--custom-model"),
            (["detect", image("cat.bmp"), "--custom-model", model("mobilenet_v1_0.25_128_quant.tflite"), "--max-labels", "0"], "--max-labels"),
            (["detect", image("cat.bmp"), "--keep-frames", "3"], "--keep-frames"),
            (["detect", image("cat.bmp"), "--multiple=yes"], "--multiple"),
        ]
        for (arguments, fragment) in cases { assertUsageError(try tool(arguments), fragment, "\(arguments)") }
    }
}
