import Foundation
import MediaIO
import TestSupport
import XCTest

/// End-to-end tests of `edgevision classify` (MediaPipe image classifier): image mode options,
/// video mode, live-stream mode and MediaPipe's errors.
final class ClassifyCommandTests: CLITestCase {
    var mobilenet: String { model("mobilenet_v2_1.0_224_quant.tflite") }
    /// The smallest classifier, for video runs.
    var tiny: String { model("mobilenet_v1_0.25_128_quant.tflite") }

    func categories(_ json: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        let heads = try XCTUnwrap(json["classifications"] as? [[String: Any]], file: file, line: line)
        XCTAssertEqual(heads.count, 1, file: file, line: line)
        XCTAssertEqual(heads.first?["headIndex"] as? Int, 0, file: file, line: line)
        return try XCTUnwrap(heads.first?["categories"] as? [[String: Any]], file: file, line: line)
    }

    func testMaxResultsAndJSONShape() throws {
        try requireOptimizedBuild()
        let json = try jsonObject(try succeed(["classify", image("burger.jpg"), "--model", mobilenet, "--max-results", "3", "--json"]))
        XCTAssertEqual(Array(json.keys), ["classifications"])
        let head = try XCTUnwrap((json["classifications"] as? [[String: Any]])?.first)
        XCTAssertEqual(Set(head.keys), ["headIndex", "headName", "categories"])
        let top = try categories(json)
        XCTAssertEqual(top.count, 3)
        XCTAssertEqual(top[0]["index"] as? Int, 934)
        XCTAssertEqual(top[0]["categoryName"] as? String, "cheeseburger")
        for category in top {
            XCTAssertEqual(Set(category.keys), ["index", "score", "categoryName", "displayName"])
            XCTAssertTrue((0...1).contains(try XCTUnwrap(category["score"] as? Double)))
        }
        XCTAssertGreaterThanOrEqual(top[0]["score"] as? Double ?? 0, top[1]["score"] as? Double ?? 1)

        // Without --max-results: every category (1001 for this model, MediaPipe's -1 = all).
        let all = try categories(try jsonObject(try succeed(["classify", image("burger.jpg"), "--model", mobilenet, "--json"])))
        XCTAssertEqual(all.count, 1001)

        let threshold = try categories(try jsonObject(try succeed(["classify", image("burger.jpg"), "--model", mobilenet, "--score-threshold", "0.05", "--json"])))
        XCTAssertFalse(threshold.isEmpty)
        XCTAssertTrue(threshold.allSatisfy { ($0["score"] as? Double ?? 0) >= 0.05 })
    }

    func testAllowDenyAndRegionOfInterest() throws {
        try requireOptimizedBuild()
        // Names containing commas are separated by ';'; the option repeats.
        let allowed = try categories(try jsonObject(try succeed(["classify", image("burger.jpg"), "--model", mobilenet,
                                                                  "--allow", "hotdog, hot dog, red hot;bagel, beigel", "--allow", "espresso", "--json"])))
        XCTAssertEqual(Set(allowed.compactMap { $0["categoryName"] as? String }), ["hotdog, hot dog, red hot", "bagel, beigel", "espresso"])
        XCTAssertEqual(allowed.first?["categoryName"] as? String, "bagel, beigel", "the best of the allowed")
        let commaSeparated = try categories(try jsonObject(try succeed(["classify", image("burger.jpg"), "--model", mobilenet, "--allow", "cheeseburger,  toaster", "--json"])))
        XCTAssertEqual(Set(commaSeparated.compactMap { $0["categoryName"] as? String }), ["cheeseburger", "toaster"])

        let denied = try categories(try jsonObject(try succeed(["classify", image("burger.jpg"), "--model", mobilenet, "--deny", "cheeseburger", "--max-results", "5", "--json"])))
        XCTAssertEqual(denied.count, 5)
        XCTAssertFalse(denied.contains { $0["categoryName"] as? String == "cheeseburger" })

        // MediaPipe: allow and deny lists are exclusive (an options error at creation: exit 1).
        assertRuntimeError(try tool(["classify", image("burger.jpg"), "--model", mobilenet, "--allow", "bagel", "--deny", "hotdog"]))

        let full = try categories(try jsonObject(try succeed(["classify", image("burger.jpg"), "--model", mobilenet, "--max-results", "1", "--json"])))
        let corner = try categories(try jsonObject(try succeed(["classify", image("burger.jpg"), "--model", mobilenet, "--roi", "0,0,0.3,0.3", "--max-results", "1", "--json"])))
        XCTAssertEqual(corner.count, 1)
        XCTAssertNotEqual(corner[0]["score"] as? Double, full[0]["score"] as? Double, "the region is classified, not the whole image")
    }

    func testMirroredOrientationIsRejectedWithMediaPipesMessage() throws {
        for orientation in ["upMirrored", "leftMirrored"] {
            let result = try tool(["classify", image("burger.jpg"), "--model", tiny, "--orientation", orientation, "--json"])
            assertRuntimeError(result, ["Unsupported UIImageOrientation", "cannot be equal to any of the mirrored orientations"], orientation)
            XCTAssertEqual(result.stdout, "")
        }
    }

    func testAnnotate() throws {
        try requireOptimizedBuild()
        let out = try temporaryDirectory().appendingPathComponent("classified.png")
        try succeed(["classify", image("burger.jpg"), "--model", mobilenet, "--max-results", "3", "--annotate", out.path])
        let annotated = try ImageDecoder.decode(contentsOf: out).pixels
        XCTAssertEqual([annotated.width, annotated.height], [480, 325])
    }

    func testVideoModeGivesOneLinePerFrame() throws {
        try requireOptimizedBuild()
        let lines = try jsonLines(try succeed(["classify", trafficVideo, "--model", tiny, "--max-results", "2", "--json"]))
        XCTAssertEqual(lines.count, 20)
        XCTAssertEqual(lines.compactMap { $0["frame"] as? Int }, Array(0..<20))
        let timestamps = lines.compactMap { $0["timestampMs"] as? Int }
        XCTAssertEqual(timestamps.count, 20)
        XCTAssertEqual(timestamps.first, 0)
        XCTAssertTrue(zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 < $1 }, "\(timestamps)")
        for line in lines { XCTAssertEqual(try categories(line).count, 2) }
    }

    func testLiveStreamModeReportsProcessedAndDroppedFrames() throws {
        try requireOptimizedBuild()
        let result = try tool(["classify", trafficVideo, "--model", tiny, "--max-results", "1", "--live", "--json"])
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        let lines = try liveLines(result, frames: 20, command: "classify")
        for line in lines {
            XCTAssertEqual(try categories(line).count, 1)
            XCTAssertNotNil(line["frame"] as? Int)
        }
        // Playing at the real pace: 20 frames at 30 fps take at least 19/30 s (checked loosely
        // through the text mode's run time).
        let start = Date()
        let text = try tool(["classify", trafficVideo, "--model", tiny, "--live"])
        XCTAssertEqual(text.exitCode, 0, text.stderr)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.6)
        XCTAssertTrue(text.stderr.hasPrefix("edgevision classify: live: 20 frames, "), text.stderr)
    }

    func testUsageErrors() throws {
        let cases: [([String], String)] = [
            (["classify"], "missing argument"),
            (["classify", image("burger.jpg")], "--model"),
            (["classify", image("burger.jpg"), "--model", tiny, "--roi", "1,2"], "--roi"),
            (["classify", image("burger.jpg"), "--model", tiny, "--max-results", "many"], "--max-results"),
            (["classify", image("burger.jpg"), "--model", tiny, "--orientation", "diagonal"], "orientation"),
            (["classify", image("burger.jpg"), "--model", tiny, "--frobnicate"], "--frobnicate"),
            (["classify", image("burger.jpg"), image("cat.bmp"), "--model", tiny, "--live"], "--live"),
            (["classify", trafficVideo, image("cat.bmp"), "--model", tiny], "video"),
            (["classify", trafficVideo, "--model", tiny, "--threads", "2"], "--threads"),
        ]
        for (arguments, fragment) in cases { assertUsageError(try tool(arguments), fragment, "\(arguments)") }
        // --live on something that is not a video: a runtime error naming the file.
        let notVideo = try tool(["classify", image("burger.jpg"), "--model", tiny, "--live"])
        assertRuntimeError(notVideo, ["burger.jpg"])
    }
}
