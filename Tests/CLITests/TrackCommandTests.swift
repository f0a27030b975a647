import Foundation
import MediaIO
import TestSupport
import XCTest

/// End-to-end tests of `edgevision track` (ML Kit object detection and tracking, stream mode).
final class TrackCommandTests: CLITestCase {
    func testTrafficClipGivesTwentyLinesWithTrackingIDsAndAnAnnotatedVideo() throws {
        try requireOptimizedBuild()
        let out = try temporaryDirectory().appendingPathComponent("tracked.mp4")
        let lines = try jsonLines(try succeed(["track", trafficVideo, "--multiple", "--classify", "--annotate", out.path, "--json"]))
        XCTAssertEqual(lines.count, 20)
        XCTAssertEqual(lines.compactMap { $0["frame"] as? Int }, Array(0..<20))
        let timestamps = lines.compactMap { $0["timestampMs"] as? Int }
        XCTAssertEqual(timestamps.count, 20)
        XCTAssertTrue(zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 < $1 }, "increasing: \(timestamps)")
        var objectCount = 0
        var ids = Set<Int>()
        for line in lines {
            let objects = try XCTUnwrap(line["objects"] as? [[String: Any]], "\(line)")
            XCTAssertLessThanOrEqual(objects.count, 5)
            for object in objects {
                let id = try XCTUnwrap(object["trackingID"] as? Int, "stream mode gives integer tracking IDs: \(object)")
                ids.insert(id)
                XCTAssertNotNil(object["frame"] as? [String: Any])
                XCTAssertNotNil(object["labels"] as? [[String: Any]])
                objectCount += 1
            }
        }
        XCTAssertGreaterThan(objectCount, 10, "a traffic scene has objects in most frames")
        XCTAssertLessThan(ids.count, objectCount, "objects keep their IDs from frame to frame")

        let reader = try VideoReader(path: out.path)
        XCTAssertEqual([reader.width, reader.height], [960, 540])
        XCTAssertEqual(try reader.readFrames().count, 20)
    }

    func testLiveReportsProcessedAndDroppedFrames() throws {
        try requireOptimizedBuild()
        let result = try tool(["track", trafficVideo, "--multiple", "--live", "--json"])
        XCTAssertEqual(result.exitCode, 0, result.stderr)
        let lines = try liveLines(result, frames: 20, command: "track")
        for line in lines {
            for object in line["objects"] as? [[String: Any]] ?? [] { XCTAssertNotNil(object["trackingID"] as? Int, "\(object)") }
        }
    }

    func testUsageAndRuntimeErrors() throws {
        assertUsageError(try tool(["track"]), "missing argument VIDEO")
        assertUsageError(try tool(["track", trafficVideo, trafficVideo]), "unexpected argument")
        assertUsageError(try tool(["track", trafficVideo, "--keep-frames", "-1"]), "--keep-frames")
        assertUsageError(try tool(["track", trafficVideo, "--orientation", "up"]), "--orientation")
        // A still image is not a video: a runtime error naming it.
        assertRuntimeError(try tool(["track", image("cat.bmp")]), ["cat.bmp"])
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-video-\(UUID().uuidString).mp4").path
        assertRuntimeError(try tool(["track", missing, "--json"]), [missing])
    }
}
