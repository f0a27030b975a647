import Foundation
import MediaIO
import TestSupport
import XCTest

/// End-to-end tests of `edgevision segment` (ML Kit selfie segmentation): masks, background
/// effects, overlays, video (stream mode) and live input.
final class SegmentCommandTests: CLITestCase {
    func testSergeyMaskJSONAndRawMask() throws {
        try requireOptimizedBuild()
        let raw = try temporaryDirectory().appendingPathComponent("mask.f32")
        let json = try jsonObject(try succeed(["segment", image("sergey.png"), "--mask-raw", raw.path, "--json"]))
        XCTAssertEqual(Set(json.keys), ["width", "height", "foregroundFraction"])
        XCTAssertEqual(json["width"] as? Int, 600)
        XCTAssertEqual(json["height"] as? Int, 600)
        let fraction = try XCTUnwrap(json["foregroundFraction"] as? Double)
        XCTAssertTrue(fraction > 0.2 && fraction < 0.9, "a portrait: \(fraction)")

        let bytes = try Data(contentsOf: raw)
        XCTAssertEqual(bytes.count, 600 * 600 * 4)
        let values = bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        XCTAssertTrue(values.allSatisfy { $0 >= 0 && $0 <= 1 })
        let above = Double(values.filter { $0 > 0.5 }.count) / Double(values.count)
        XCTAssertEqual(above, fraction, accuracy: 1e-9, "the raw mask is the mask the JSON describes")

        // The raw-size mask is the model's output (256×256).
        let rawSize = try jsonObject(try succeed(["segment", image("sergey.png"), "--raw-size", "--json"]))
        XCTAssertEqual([rawSize["width"] as? Int, rawSize["height"] as? Int], [256, 256])
    }

    func testBackgroundRemovalWritesAPNGWithAlpha() throws {
        try requireOptimizedBuild()
        let directory = try temporaryDirectory()
        let out = directory.appendingPathComponent("person.png"), mask = directory.appendingPathComponent("mask.png")
        try succeed(["segment", image("sergey.png"), "--background", "remove", "--out", out.path, "--mask-out", mask.path])
        XCTAssertEqual(try pngColorType(out), 6, "RGBA")
        let cutOut = try ImageDecoder.decode(contentsOf: out).pixels
        XCTAssertEqual([cutOut.width, cutOut.height], [600, 600])
        let alphas = try cutOut.converted(to: .rgba8).withUnsafeBytes { bytes in stride(from: 3, to: bytes.count, by: 4).map { bytes[$0] } }
        XCTAssertTrue(alphas.contains(0), "the background is transparent")
        XCTAssertTrue(alphas.contains(255), "the person is opaque")

        XCTAssertEqual(try pngColorType(mask), 0, "an 8-bit grey mask")
        XCTAssertEqual(try ImageDecoder.decode(contentsOf: mask).pixels.width, 600)
    }

    func testAnnotateOverlaysTheMask() throws {
        try requireOptimizedBuild()
        let directory = try temporaryDirectory()
        let out = directory.appendingPathComponent("overlay.png")
        try succeed(["segment", image("sergey.png"), "--annotate", out.path])
        let overlay = try ImageDecoder.decode(contentsOf: out).pixels.converted(to: .rgb8)
        let original = try ImageDecoder.decode(contentsOf: SharedData.image("sergey.png")).pixels.converted(to: .rgb8)
        XCTAssertEqual([overlay.width, overlay.height], [600, 600])
        let changed = overlay.withUnsafeBytes { a in original.withUnsafeBytes { b in zip(a, b).filter { $0 != $1 }.count } }
        XCTAssertGreaterThan(changed, 600 * 600 * 3 / 10, "the person (20-90% of the pixels) is tinted")

        // Several images: one overlay per image in the directory.
        let many = directory.appendingPathComponent("many")
        let lines = try jsonLines(try succeed(["segment", image("sergey.png"), image("burger.jpg"), "--annotate", many.path, "--json"]))
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: many.path).sorted(), ["burger.png", "sergey.png"])
    }

    func testVideoRunsStreamModeOverEveryFrame() throws {
        try requireOptimizedBuild()
        let out = try temporaryDirectory().appendingPathComponent("overlay.mp4")
        let lines = try jsonLines(try succeed(["segment", trafficVideo, "--annotate", out.path, "--json"]))
        XCTAssertEqual(lines.count, 20)
        XCTAssertEqual(lines.compactMap { $0["frame"] as? Int }, Array(0..<20))
        let timestamps = lines.compactMap { $0["timestampMs"] as? Int }
        XCTAssertTrue(zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 < $1 }, "\(timestamps)")
        for line in lines {
            XCTAssertEqual([line["width"] as? Int, line["height"] as? Int], [960, 540])
            XCTAssertNotNil(line["foregroundFraction"] as? Double)
        }
        XCTAssertEqual(try VideoReader(path: out.path).readFrames().count, 20)
    }

    func testLiveReportsProcessedAndDroppedFrames() throws {
        try requireOptimizedBuild()
        let result = try tool(["segment", trafficVideo, "--live", "--json"])
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        for line in try liveLines(result, frames: 20, command: "segment") {
            XCTAssertEqual([line["width"] as? Int, line["height"] as? Int], [960, 540])
        }
    }

    func testUsageErrors() throws {
        let sergey = image("sergey.png")
        let cases: [([String], String)] = [
            (["segment"], "missing argument"),
            (["segment", sergey, "--background", "remove"], "--out"),
            (["segment", sergey, "--out", "/tmp/x.png"], "--background"),
            (["segment", sergey, "--background", "#12345", "--out", "/tmp/x.png"], "#RRGGBB"),
            (["segment", sergey, "--background", "blur", "--out", "/tmp/x.png", "--raw-size"], "--raw-size"),
            (["segment", sergey, "--mode", "burst"], "--mode"),
            (["segment", sergey, image("burger.jpg"), "--mask-raw", "/tmp/m.f32"], "one image"),
            (["segment", trafficVideo, "--mask-out", "/tmp/m.png"], "one image"),
            (["segment", sergey, "--live", "--mask"], "--mask"),
        ]
        for (arguments, fragment) in cases { assertUsageError(try tool(arguments), fragment, "\(arguments)") }
    }
}
