import Dispatch
import Foundation
import MediaIO
import VisionCore

/// Video inputs of `classify`, `segment` and `track`: recognising them, and `--live`, which plays a
/// video file as if it were a camera.
///
/// Live: frames are handed over at the video's real pace (wall clock, from the frame timestamps);
/// at most one frame is processed at a time and only the newest waiting frame is kept, older ones
/// are dropped (MediaPipe's live-stream flow limiting). At the end the command reports how many
/// frames came in, were processed and were dropped: one line on stderr and, with `--json`, a final
/// line `{"summary":{"frames","processed","dropped"}}`.
enum VideoInput {
    /// Extensions taken for videos without opening the file.
    static let extensions: Set<String> = ["mp4", "mov", "mkv", "avi", "webm", "m4v"]

    static func liveOption(_ what: String) -> OptionSpec {
        .flag("live", "Play the video file as a live camera: frames arrive at the video's real frame rate (wall clock), at most one is \(what) at a time and only the newest waiting frame is kept (older ones are dropped); ends with the processed and dropped frame counts. Video files only: camera devices (V4L2) are not supported.")
    }

    /// Whether `path` is a video: by its extension; a file without an image extension is opened
    /// with `VideoReader` to find out.
    static func isVideo(_ path: String) -> Bool {
        let ext = (path as NSString).pathExtension.lowercased()
        if extensions.contains(ext) { return true }
        if Batch.imageExtensions.contains(ext) || Batch.isDirectory(path) || !FileManager.default.fileExists(atPath: path) { return false }
        return (try? VideoReader(path: path)) != nil
    }

    /// The video among the inputs, if there is one. A video is processed on its own.
    static func video(in positionals: [String]) throws -> String? {
        guard let video = positionals.first(where: isVideo) else { return nil }
        guard positionals.count == 1 else {
            throw UsageError("a video is processed on its own; give one VIDEO, not \(positionals.count) inputs")
        }
        return video
    }

    /// Hands every frame to `body`, each no earlier than its timestamp (relative to the first
    /// frame) after the start, as a camera would deliver them. Decoding happens while waiting.
    /// Stops early when `stop()` is true. Returns the number of frames handed over.
    static func play(_ reader: VideoReader, stop: () -> Bool = { false }, _ body: (VideoFrame) throws -> Void) throws -> Int {
        var start: DispatchTime?
        var firstTimestamp = 0
        var count = 0
        while !stop(), let frame = try reader.nextFrame() {
            if let start {
                let due = start.uptimeNanoseconds &+ UInt64(max(0, frame.timestampMilliseconds - firstTimestamp)) &* 1_000_000
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { Thread.sleep(forTimeInterval: Double(due - now) / 1e9) }
            } else {
                start = DispatchTime.now()
                firstTimestamp = frame.timestampMilliseconds
            }
            try body(frame)
            count += 1
        }
        return count
    }

    /// Runs `work` on the frames of `reader` played live through a ``LiveStreamScheduler``;
    /// `deliver` gets each processed frame's result in timestamp order (on one queue, one at a
    /// time). Throws the first error of `work` or `deliver`; else prints the summary.
    static func runLive<Output: Sendable>(_ reader: VideoReader, command: String, json: Bool,
                                          work: @escaping @Sendable (VideoFrame) throws -> Output,
                                          deliver: @escaping @Sendable (VideoFrame, Output) throws -> Void) throws {
        let stats = LiveStats()
        let scheduler = LiveStreamScheduler<VideoFrame, (VideoFrame, Output)>(
            work: { frame, _ in (frame, try work(frame)) },
            deliver: { result, _ in
                switch result {
                case .success(let (frame, output)):
                    do { try deliver(frame, output) } catch { stats.fail(error) }
                    stats.countProcessed()
                case .failure(let error):
                    stats.fail(error)
                    stats.countProcessed()
                }
            },
            dropped: { _ in stats.countDropped() })
        let frames = try play(reader, stop: { stats.failed }) { frame in
            scheduler.submit(frame, timestamp: frame.timestampMilliseconds)
        }
        scheduler.waitUntilIdle()
        try stats.finish(frames: frames, command: command, json: json)
    }
}

/// Counts of a live run, updated from the delivery queue.
final class LiveStats: @unchecked Sendable {
    private let lock = NSLock()
    private var processed = 0
    private var dropped = 0
    private var firstError: Error?

    func countProcessed() { lock.lock(); processed += 1; lock.unlock() }
    func countDropped() { lock.lock(); dropped += 1; lock.unlock() }
    func fail(_ error: Error) { lock.lock(); if firstError == nil { firstError = error }; lock.unlock() }
    var failed: Bool { lock.lock(); defer { lock.unlock() }; return firstError != nil }

    /// Throws the first error, else prints the summary (a JSON line with `json`, and a stderr line).
    func finish(frames: Int, command: String, json: Bool) throws {
        lock.lock()
        let (processed, dropped, error) = (self.processed, self.dropped, firstError)
        lock.unlock()
        if let error { throw error }
        if json {
            print(JSON.object([("summary", .object([("frames", .int(frames)), ("processed", .int(processed)), ("dropped", .int(dropped))]))]).serialized)
        }
        fflush(nil)  // the summary before the stderr line
        FileHandle.standardError.write(Data("edgevision \(command): live: \(frames) frames, \(processed) processed, \(dropped) dropped\n".utf8))
    }
}

/// A mutable value shared with the delivery queue of a live run, which uses it one call at a time.
final class SharedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
