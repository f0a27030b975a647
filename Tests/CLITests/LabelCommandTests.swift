import Foundation
import MediaIO
import TestSupport
import XCTest

/// End-to-end tests of `edgevision label` (ML Kit image labeling with the default model from
/// EDGEVISION_MODELS).
final class LabelCommandTests: CLITestCase {
    func testBurgerIsACheeseburger() throws {
        try requireOptimizedBuild()
        let json = try jsonObject(try succeed(["label", image("burger.jpg"), "--json"]))
        XCTAssertEqual(json.count, 1, "only \"labels\": \(json.keys)")
        let labels = try XCTUnwrap(json["labels"] as? [[String: Any]])
        XCTAssertFalse(labels.isEmpty)
        XCTAssertLessThanOrEqual(labels.count, 10, "ML Kit's default maxResultCount")
        XCTAssertEqual(labels[0]["text"] as? String, "cheeseburger")
        XCTAssertEqual(labels[0]["index"] as? Int, 934)
        var previous = Double.infinity
        for label in labels {
            XCTAssertEqual(Set(label.keys), ["text", "confidence", "index"])
            let confidence = try XCTUnwrap(label["confidence"] as? Double)
            XCTAssertTrue((0...1).contains(confidence), "\(label)")
            XCTAssertLessThanOrEqual(confidence, previous, "sorted by confidence")
            previous = confidence
            XCTAssertNotNil(label["index"] as? Int)
            XCTAssertNotNil(label["text"] as? String)
        }

        let text = try succeed(["label", image("burger.jpg")])
        XCTAssertTrue(text.stdout.contains("cheeseburger"), text.stdout)
        XCTAssertThrowsError(try JSONSerialization.jsonObject(with: Data(text.stdout.utf8)), "text mode is not JSON")
    }

    func testThresholdAndMaxResults() throws {
        try requireOptimizedBuild()
        let limited = try XCTUnwrap(try jsonObject(try succeed(["label", image("burger.jpg"), "--max-results", "2", "--json"]))["labels"] as? [[String: Any]])
        XCTAssertEqual(limited.count, 2)
        XCTAssertEqual(limited.first?["index"] as? Int, 934)

        let thresholded = try XCTUnwrap(try jsonObject(try succeed(["label", image("burger.jpg"), "--threshold", "0.3", "--json"]))["labels"] as? [[String: Any]])
        XCTAssertFalse(thresholded.isEmpty)
        XCTAssertLessThan(thresholded.count, 10)
        for label in thresholded { XCTAssertGreaterThanOrEqual(try XCTUnwrap(label["confidence"] as? Double), 0.3, "\(label)") }

        // A custom model with the same options (CustomImageLabelerOptions).
        let custom = try XCTUnwrap(try jsonObject(try succeed(["label", image("burger.jpg"), "--model", model("mobilenet_v1_0.25_224_quant.tflite"),
                                                                 "--max-results", "3", "--threshold", "0", "--json"]))["labels"] as? [[String: Any]])
        XCTAssertEqual(custom.count, 3)
        XCTAssertEqual(custom.first?["text"] as? String, "cheeseburger")
    }

    func testBatchOverADirectoryWithACorruptFile() throws {
        try requireOptimizedBuild()
        let directory = try temporaryDirectory()
        try FileManager.default.copyItem(at: SharedData.image("burger.jpg"), to: directory.appendingPathComponent("a_burger.jpg"))
        try FileManager.default.copyItem(at: SharedData.image("hot_dog.jpg"), to: directory.appendingPathComponent("c_hot_dog.jpg"))
        _ = try write(corruptImageBytes, "b_corrupt.jpg", in: directory)
        try Data("not an image".utf8).write(to: directory.appendingPathComponent("notes.txt"))  // not an image extension: skipped

        for threads in ["1", "2"] {
            let result = try tool(["label", directory.path, "--json", "--threads", threads])
            assertRuntimeError(result, ["1 of 3 inputs failed"], "threads \(threads)")
            let lines = try jsonLines(result)
            XCTAssertEqual(lines.count, 3, result.stdout)
            XCTAssertEqual(lines.map { ($0["input"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } ?? "" },
                           ["a_burger.jpg", "b_corrupt.jpg", "c_hot_dog.jpg"], "input order")
            XCTAssertEqual((lines[0]["labels"] as? [[String: Any]])?.first?["text"] as? String, "cheeseburger")
            XCTAssertEqual((lines[2]["labels"] as? [[String: Any]])?.first?["text"] as? String, "hotdog, hot dog, red hot")
            let error = try XCTUnwrap(lines[1]["error"] as? String, "\(lines[1])")
            XCTAssertFalse(error.isEmpty)
            XCTAssertFalse(error.contains("\n"))
            XCTAssertNil(lines[1]["labels"])
        }

        // Several files given one by one: the same JSON Lines, exit 0 when all succeed.
        let both = try tool(["label", image("burger.jpg"), image("hot_dog.jpg"), "--json"])
        XCTAssertEqual(both.exitCode, 0, both.stderr)
        XCTAssertEqual(try jsonLines(both).map { $0["input"] as? String }, [image("burger.jpg"), image("hot_dog.jpg")])
    }

    func testAnnotateWritesTheUprightImageWithLabels() throws {
        try requireOptimizedBuild()
        let directory = try temporaryDirectory()
        let out = directory.appendingPathComponent("burger.png")
        try succeed(["label", image("burger.jpg"), "--annotate", out.path, "--json"])
        let annotated = try ImageDecoder.decode(contentsOf: out).pixels
        XCTAssertEqual(annotated.width, 480)
        XCTAssertEqual(annotated.height, 325)
        let original = try ImageDecoder.decode(contentsOf: SharedData.image("burger.jpg")).pixels
        XCTAssertNotEqual(try rgb(annotated, x: 10, y: 10), try rgb(original, x: 10, y: 10), "a label box at the top left")
        XCTAssertEqual(try rgb(annotated, x: 470, y: 315), try rgb(original, x: 470, y: 315), "the rest of the picture is kept")

        // Turned: the annotation is the upright image (480×325 stored, turned a quarter → 325×480).
        let turned = directory.appendingPathComponent("turned.png")
        try succeed(["label", image("burger.jpg"), "--orientation", "right", "--annotate", turned.path])
        let upright = try ImageDecoder.decode(contentsOf: turned).pixels
        XCTAssertEqual([upright.width, upright.height], [325, 480])

        // Several images: OUT is a directory with one PNG per input.
        let many = directory.appendingPathComponent("many")
        try succeed(["label", image("burger.jpg"), image("hot_dog.jpg"), "--annotate", many.path, "--json"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: many.path).sorted(), ["burger.png", "hot_dog.png"])
    }

    func rgb(_ pixels: PixelBuffer, x: Int, y: Int) throws -> [UInt8] {
        let rgb = try pixels.converted(to: .rgb8)
        return rgb.withUnsafeBytes { bytes in
            let offset = y * rgb.planes[0].bytesPerRow + 3 * x
            return Array(bytes[offset..<offset + 3])
        }
    }

    func testUsageErrors() throws {
        let cases: [([String], String)] = [
            (["label"], "missing argument IMAGE"),
            (["label", image("burger.jpg"), "--threshold", "2"], "--threshold"),
            (["label", image("burger.jpg"), "--threshold", "high"], "--threshold"),
            (["label", image("burger.jpg"), "--max-results", "0"], "--max-results"),
            (["label", image("burger.jpg"), "--orientation", "sideways"], "orientation"),
            (["label", image("burger.jpg"), "--no-such-option"], "--no-such-option"),
            (["label", image("burger.jpg"), "--threads", "0", image("hot_dog.jpg")], "--threads"),
            (["label", image("burger.jpg"), "--annotate"], "--annotate"),
        ]
        for (arguments, fragment) in cases { assertUsageError(try tool(arguments), fragment, "\(arguments)") }
    }
}
