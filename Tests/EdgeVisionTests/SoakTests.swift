import EdgeVision
import Foundation
import MediaIO
import TestSupport
import XCTest

/// A long stream through tracking and segmentation, with resident memory sampled along the way
/// (opt-in: `EDGEVISION_SOAK_FRAMES=20000 swift test -c release --filter SoakTests`, or `scripts/soak.sh`).
///
/// The shared traffic clip is decoded again on every loop (so the video reader is soaked too) and
/// each frame goes through one ML Kit object detector in stream mode (multiple objects,
/// classification, tracking) and one segmenter in stream mode, frame after frame. The stream's
/// timestamps continue across loops (loop × clip duration + frame time; the ML Kit calls take
/// none, they are written to the CSV). Every frame must get a result from both, and resident
/// memory after warm-up must stay within 10% + 10 MB of its value at the end of warm-up.
///
/// Environment: `EDGEVISION_SOAK_FRAMES` (frames, required), `EDGEVISION_SOAK_CSV` (where the
/// samples go, default `$TMPDIR/edgevision-soak.csv`), `EDGEVISION_SOAK_SAMPLE_EVERY` (frames
/// between samples, default frames / 200, at least 10).
final class SoakTests: XCTestCase {
    func testLongStreamKeepsMemoryFlat() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let framesText = environment["EDGEVISION_SOAK_FRAMES"], let totalFrames = Int(framesText), totalFrames > 0 else {
            throw XCTSkip("opt-in: set EDGEVISION_SOAK_FRAMES (see scripts/soak.sh)")
        }
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let sampleEvery = environment["EDGEVISION_SOAK_SAMPLE_EVERY"].flatMap { Int($0) }.map { max(1, $0) } ?? max(10, totalFrames / 200)
        let csvPath = environment["EDGEVISION_SOAK_CSV"] ?? FileManager.default.temporaryDirectory.appendingPathComponent("edgevision-soak.csv").path
        let clip = SharedData.videos.appendingPathComponent("traffic_frames.mp4").path

        let detectorOptions = ObjectDetectorOptions()
        detectorOptions.detectorMode = .stream
        detectorOptions.shouldEnableMultipleObjects = true
        detectorOptions.shouldEnableClassification = true
        detectorOptions.detectionModel = LocalModel(url: SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"))
        let detector = try ObjectDetector.objectDetector(options: detectorOptions)
        let segmenterOptions = SelfieSegmenterOptions()
        segmenterOptions.segmenterMode = .stream
        segmenterOptions.localModel = LocalModel(url: SharedData.model("selfie_segmentation.tflite"))
        let segmenter = try Segmenter.segmenter(options: segmenterOptions)

        // Warm-up: the first 5% of the frames (at least 2 loops of the clip) fill the interpreter
        // pools, caches and allocator arenas; the baseline is the RSS after it.
        let warmUp = min(totalFrames, max(40, totalFrames / 20))
        var csv = "frame,timestamp_ms,rss_kb,objects,seconds\n"
        var frames = 0, framesWithResults = 0, framesWithObjects = 0, missing: [String] = []
        var baseline: Int?, maximumAfterWarmUp = 0, loops = 0, lastTimestamp = -1
        let started = Date()
        var warmUpEnded = started
        var loopOffset = 0
        while frames < totalFrames {
            let reader = try VideoReader(path: clip)
            var lastInLoop = 0
            while frames < totalFrames, let frame = try reader.nextFrame() {
                let timestamp = loopOffset + frame.timestampMilliseconds
                XCTAssertGreaterThan(timestamp, lastTimestamp, "timestamps must increase across loops")
                lastTimestamp = timestamp
                lastInLoop = frame.timestampMilliseconds
                let image = VisionImage(buffer: frame.pixels)
                var objectCount = -1
                do {
                    let objects = try detector.results(in: image)
                    let mask = try segmenter.results(in: image)
                    objectCount = objects.count
                    if mask.width == image.width, mask.height == image.height, mask.values.count == image.width * image.height,
                       objects.allSatisfy({ $0.trackingID != nil }) {
                        framesWithResults += 1
                    } else if missing.count < 5 {
                        missing.append("frame \(frames): mask \(mask.width)×\(mask.height), objects without tracking ID: \(objects.filter { $0.trackingID == nil }.count)")
                    }
                    if !objects.isEmpty { framesWithObjects += 1 }
                } catch {
                    if missing.count < 5 { missing.append("frame \(frames): \(error)") }
                }
                frames += 1
                if frames == warmUp {
                    baseline = residentKilobytes()
                    warmUpEnded = Date()
                }
                if frames % sampleEvery == 0 || frames == totalFrames || frames == warmUp {
                    let rss = residentKilobytes()
                    if frames >= warmUp { maximumAfterWarmUp = max(maximumAfterWarmUp, rss) }
                    csv += "\(frames),\(timestamp),\(rss),\(objectCount),\(String(format: "%.1f", Date().timeIntervalSince(started)))\n"
                }
            }
            loops += 1
            // The next loop starts one frame interval after this one's last frame.
            loopOffset += lastInLoop + max(1, Int((1000 / max(reader.frameRate, 1)).rounded()))
        }
        let end = residentKilobytes()
        let seconds = Date().timeIntervalSince(started)
        let measured = max(1, frames - warmUp)
        let perFrame = frames > warmUp ? Date().timeIntervalSince(warmUpEnded) / Double(measured) : seconds / Double(max(frames, 1))
        try csv.write(toFile: csvPath, atomically: true, encoding: .utf8)
        let start = baseline ?? end
        let limit = start + start / 10 + 10 * 1024
        print("SOAK frames=\(frames) loops=\(loops) frames_with_results=\(framesWithResults) frames_with_objects=\(framesWithObjects) "
              + "rss_start_kb=\(start) rss_max_kb=\(maximumAfterWarmUp) rss_end_kb=\(end) rss_limit_kb=\(limit) "
              + "ms_per_frame=\(String(format: "%.1f", perFrame * 1000)) seconds=\(String(format: "%.0f", seconds)) csv=\(csvPath)")
        XCTAssertEqual(framesWithResults, frames, "frames without a result: " + missing.joined(separator: "; "))
        XCTAssertLessThanOrEqual(maximumAfterWarmUp, limit, "resident memory grew from \(start) kB after warm-up to \(maximumAfterWarmUp) kB (limit \(limit) kB); samples in \(csvPath)")
        XCTAssertLessThanOrEqual(end, limit)
    }

    /// VmRSS of this process in kB (0 where /proc is missing).
    func residentKilobytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}
