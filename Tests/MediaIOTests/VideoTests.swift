import Foundation
import MediaIO
import TestSupport
import XCTest

/// Reading the shared H.264 clip, rejecting non-videos, and writing videos that read back.
final class VideoTests: XCTestCase {
    var trafficPath: String { SharedData.videos.appendingPathComponent("traffic_frames.mp4").path }

    static func meanColor(_ pixels: PixelBuffer) throws -> [Double] {
        let bytes = try rgbBytes(pixels)
        var sums = [0.0, 0.0, 0.0]
        for (i, b) in bytes.enumerated() { sums[i % 3] += Double(b) }
        return sums.map { $0 / Double(pixels.width * pixels.height) }
    }

    func testTrafficClipProperties() throws {
        let reader = try VideoReader(path: trafficPath)
        XCTAssertEqual(reader.width, 960)
        XCTAssertEqual(reader.height, 540)
        XCTAssertEqual(reader.frameRate, 30, accuracy: 0.01)
        XCTAssertEqual(reader.estimatedFrameCount, 20)
        XCTAssertEqual(reader.duration, 20.0 / 30.0, accuracy: 0.05)
        XCTAssertEqual(reader.codecName, "h264")
    }

    func testTrafficClipFrames() throws {
        let reader = try VideoReader(path: trafficPath)
        let frames = try reader.readFrames()
        XCTAssertEqual(frames.count, 20)
        XCTAssertNil(try reader.nextFrame(), "the end stays the end")
        XCTAssertNil(try reader.nextFrame())
        for (i, frame) in frames.enumerated() {
            XCTAssertEqual(frame.index, i)
            XCTAssertEqual(frame.pixels.width, 960)
            XCTAssertEqual(frame.pixels.height, 540)
            XCTAssertEqual(frame.pixels.format, .rgb8)
        }
        XCTAssertEqual(frames[0].timestampMilliseconds, 0)
        for (a, b) in zip(frames, frames.dropFirst()) {
            XCTAssertGreaterThan(b.timestampMilliseconds, a.timestampMilliseconds)
            XCTAssertEqual(Double(b.timestampMilliseconds - a.timestampMilliseconds), 1000.0 / 30, accuracy: 1.0)
        }
        // The first frame looks like the still taken from the same clip (a loose check of mean colour;
        // the still is a 256×256 resize of the frame).
        let still = try ImageDecoder.decode(contentsOf: SharedData.image("traffic_0001.bmp")).pixels
        let frameMean = try Self.meanColor(frames[0].pixels), stillMean = try Self.meanColor(still)
        for c in 0..<3 { XCTAssertEqual(frameMean[c], stillMean[c], accuracy: 20, "channel \(c): \(frameMean) vs \(stillMean)") }
        // Frames differ from one another (it is a moving scene, not one picture repeated).
        XCTAssertNotEqual(try rgbBytes(frames[0].pixels), try rgbBytes(frames[19].pixels))
    }

    func testSequenceHelpers() throws {
        var indices: [Int] = []
        let reader = try VideoReader(path: trafficPath)
        for frame in reader.frames { indices.append(frame.index) }
        XCTAssertEqual(indices, Array(0..<20))
        XCTAssertNil(reader.iterationError)
        var count = 0
        try VideoReader(path: trafficPath).forEachFrame { _ in count += 1 }
        XCTAssertEqual(count, 20)
        XCTAssertEqual(try VideoReader(path: trafficPath).readFrames(limit: 3).count, 3)
    }

    func testNonVideosAreRejected() throws {
        let jpeg = assertImageError(.video) { try VideoReader(path: SharedData.image("burger.jpg").path) }
        XCTAssertTrue(jpeg?.message.contains("still image") == true, jpeg?.message ?? "")
        assertImageError(.video) { try VideoReader(path: SharedData.image("sergey.png").path) }
        assertImageError(.video) { try VideoReader(path: SharedData.image("cat.bmp").path) }
        let missing = assertImageError(.video) { try VideoReader(path: "/nonexistent-\(UUID().uuidString).mp4") }
        XCTAssertTrue(missing?.message.contains("no such file") == true)
        assertImageError(.video) { try VideoReader(path: FileManager.default.temporaryDirectory.path) }

        let empty = temporaryFile("empty.mp4")
        try Data().write(to: empty)
        defer { try? FileManager.default.removeItem(at: empty) }
        let emptyError = assertImageError(.video) { try VideoReader(path: empty.path) }
        XCTAssertTrue(emptyError?.message.contains("empty") == true)

        var generator = SeededGenerator(seed: 42)
        for length in [1, 17, 4096, 100_000] {
            let random = temporaryFile("random-\(length).mp4")
            try Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: random)
            defer { try? FileManager.default.removeItem(at: random) }
            assertImageError(.video, "random \(length) bytes") {
                let reader = try VideoReader(path: random.path)
                return try reader.readFrames()
            }
        }
        // A path with a colon is a file name, never another protocol.
        assertImageError(.video) { try VideoReader(path: "http://example.invalid/x.mp4") }
    }

    func testTruncatedAndCorruptVideoNeverCrashes() throws {
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: trafficPath)))
        var generator = SeededGenerator(seed: 2024)
        var outcomes: [String: Int] = [:]
        for trial in 0..<12 {
            var bytes = original
            switch trial % 3 {
            case 0: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
            case 1:
                for _ in 0..<50 { bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= 0xFF }
            default:
                let at = Int.random(in: 0..<(bytes.count - 2048), using: &generator)
                for i in at..<(at + 2048) { bytes[i] = 0 }
            }
            let url = temporaryFile("mutated-\(trial).mp4")
            try Data(bytes).write(to: url)
            defer { try? FileManager.default.removeItem(at: url) }
            do {
                let reader = try VideoReader(path: url.path)
                let frames = try reader.readFrames()
                for frame in frames { XCTAssertEqual(frame.pixels.width * frame.pixels.height > 0, true) }
                outcomes["\(frames.count) frames", default: 0] += 1
            } catch let error as ImageError {
                XCTAssertEqual(error.code == .video || error.code == .resourceLimit, true, error.message)
                outcomes["error", default: 0] += 1
            }
        }
        print("corrupt video outcomes: \(outcomes)")
    }

    func testFrameSizeLimitIsChecked() {
        let small = ImageLimits(maximumPixelCount: 100_000)
        assertImageError(.resourceLimit) { try VideoReader(path: trafficPath, limits: small) }
    }

    // MARK: Writing

    /// Frame `i` of a test video: a grey-blue background with a red square moving right.
    static func syntheticFrame(_ i: Int, width: Int, height: Int) throws -> PixelBuffer {
        try makeRGB(width: width, height: height) { x, y in
            let inSquare = (x - 4 * i) >= 8 && (x - 4 * i) < 24 && y >= 12 && y < 28
            return inSquare ? (220, 30, 30) : (60, 90, UInt8(120 + y))
        }
    }

    func testWrittenVideoReadsBack() throws {
        let (width, height, count) = (96, 64, 15)
        let url = temporaryFile("written.mp4")
        defer { try? FileManager.default.removeItem(at: url) }
        let writer = try VideoWriter(path: url.path, width: width, height: height, frameRate: 15)
        XCTAssertTrue(["libx264", "mpeg4"].contains(writer.codecName), writer.codecName)
        var originals: [PixelBuffer] = []
        for i in 0..<count {
            let frame = try Self.syntheticFrame(i, width: width, height: height)
            originals.append(frame)
            // Every input format is accepted.
            try writer.write(i % 3 == 1 ? try frame.converted(to: .rgba8) : i % 3 == 2 ? try frame.converted(to: .bgra8) : frame)
        }
        try writer.finish()
        try writer.finish()  // a second call does nothing
        XCTAssertEqual(writer.frameCount, count)
        assertImageError(.invalidArgument) { try writer.write(originals[0]) }

        let reader = try VideoReader(path: url.path)
        XCTAssertEqual(reader.width, width)
        XCTAssertEqual(reader.height, height)
        XCTAssertEqual(reader.frameRate, 15, accuracy: 0.01)
        let frames = try reader.readFrames()
        XCTAssertEqual(frames.count, count)
        for (frame, original) in zip(frames, originals) {
            XCTAssertEqual(frame.pixels.width, width)
            XCTAssertEqual(frame.pixels.height, height)
            let a = try rgbBytes(frame.pixels), b = try rgbBytes(original)
            let meanError = Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
            XCTAssertLessThan(meanError, 12, "frame \(frame.index)")
            // The square is where it was drawn.
            let centre = pixel(a, width, 4 * frame.index + 16, 20)
            XCTAssertGreaterThan(Int(centre[0]), 150, "frame \(frame.index): \(centre)")
            XCTAssertLessThan(Int(centre[1]), 90, "frame \(frame.index): \(centre)")
        }
        for (a, b) in zip(frames, frames.dropFirst()) {
            XCTAssertEqual(Double(b.timestampMilliseconds - a.timestampMilliseconds), 1000.0 / 15, accuracy: 1.0)
        }
    }

    func testWriterArgumentsAreChecked() throws {
        let url = temporaryFile("bad.mp4")
        defer { try? FileManager.default.removeItem(at: url) }
        assertImageError(.invalidArgument) { try VideoWriter(path: url.path, width: 95, height: 64, frameRate: 30) }
        assertImageError(.invalidArgument) { try VideoWriter(path: url.path, width: 96, height: 64, frameRate: 0) }
        assertImageError(.invalidArgument) { try VideoWriter(path: url.path, width: 96, height: 64, frameRate: .nan) }
        assertImageError(.invalidArgument) { try VideoWriter(path: url.path, width: 96, height: 64, frameRate: 30, quality: 101) }
        assertImageError(.invalidDimensions) { try VideoWriter(path: url.path, width: 0, height: 64, frameRate: 30) }
        assertImageError(.resourceLimit) { try VideoWriter(path: url.path, width: 100_000, height: 64, frameRate: 30) }
        assertImageError(.io) { try VideoWriter(path: "/nonexistent-\(UUID().uuidString)/out.mp4", width: 96, height: 64, frameRate: 30) }
        let writer = try VideoWriter(path: url.path, width: 96, height: 64, frameRate: 30)
        assertImageError(.invalidArgument) { try writer.write(try PixelBuffer(width: 64, height: 96, format: .rgb8)) }
        try writer.write(try PixelBuffer(width: 96, height: 64, format: .nv12))  // YUV is converted
        try writer.finish()
        XCTAssertEqual(try VideoReader(path: url.path).readFrames().count, 1)
    }
}
