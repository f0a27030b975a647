import EdgeVisionTasks
import Foundation
import MediaIO

/// `edgevision classify IMAGE --model MODEL ...`: MediaPipe-style image classification, of images
/// (image mode), of a video's frames (video mode) or of a video played live (live-stream mode).
enum ClassifyCommand {
    static let command = Command(
        name: "classify",
        summary: "Classify images, or a video's frames, with a model (MediaPipe image classifier; image, video and live-stream modes).",
        usage: "classify IMAGE...|VIDEO --model MODEL [--max-results N] [--score-threshold T] [--allow a,b] [--deny a,b] [--locale L] [--roi x,y,w,h] [--orientation O] [--live] [--annotate OUT.png|OUT.mp4] [--json] [--threads N]",
        options: [
            .value("model", "MODEL", "The classification model (.tflite)."),
            .value("max-results", "N", "Maximum categories per head (default: all)."),
            .value("score-threshold", "T", "Drop categories scoring below T (default: the model's metadata threshold, else none)."),
            .value("allow", "a,b", "Keep only these category names: comma-separated, or separated by ';' when names contain commas (\"bagel, beigel;hotdog, hot dog, red hot\"). Repeatable.", repeatable: true),
            .value("deny", "a,b", "Drop these category names (same form as --allow). Repeatable.", repeatable: true),
            .value("locale", "L", "Locale of display names (default en)."),
            .value("roi", "x,y,w,h", "Region of interest, normalized [0,1] coordinates of the stored image."),
            .value("orientation", "O", "up|down|left|right (mirrored orientations are rejected, as in MediaPipe)."),
            VideoInput.liveOption("classified"),
            .value("annotate", "OUT.png", "Write the upright image with a label box per top category drawn at the top left (.png, .jpg or .webp); a directory of PNGs for several images; an .mp4 for a video."),
            .flag("json", "Print {\"classifications\":[{\"headIndex\",\"headName\",\"categories\":[{\"index\",\"score\",\"categoryName\",\"displayName\"}]}]} (JSON Lines with \"input\" for several images; for a video one {\"frame\",\"timestampMs\",\"classifications\"} line per frame)."),
        ] + Batch.options,
        example: """
        edgevision classify ../shared/images/burger.jpg --model ../shared/models/mobilenet_v2_1.0_224_quant.tflite --max-results 5
        edgevision classify ../shared/images/burger.jpg --model ../shared/models/mobilenet_v2_1.0_224_quant.tflite --score-threshold 0.1 --deny cheeseburger --roi 0.1,0.1,0.8,0.8 --orientation up --locale en --annotate /tmp/burger.png --json
        edgevision classify ../shared/images --model ../shared/models/mobilenet_v1_0.25_224_quant.tflite --allow "tabby, tabby cat;tiger cat" --threads 2 --json
        edgevision classify ../shared/videos/traffic_frames.mp4 --model ../shared/models/mobilenet_v1_0.25_128_quant.tflite --max-results 3 --live --json
        """,
        run: run)

    static func run(_ args: ParsedArguments) throws {
        guard !args.positionals.isEmpty else { throw UsageError("missing argument IMAGE (or VIDEO)") }
        guard let modelPath = args.value("model") else { throw UsageError("missing option --model MODEL") }
        let live = args.flag("live")
        var video = try VideoInput.video(in: args.positionals)
        if live, video == nil {
            guard args.positionals.count == 1 else { throw UsageError("--live takes one VIDEO, not \(args.positionals.count) inputs") }
            video = args.positionals[0]  // opened as a video; a file that is not one is reported then
        }
        if video != nil, args.value("threads") != nil { throw UsageError("--threads applies to several images, not to a video") }

        let options = ImageClassifierOptions()
        options.baseOptions.modelAssetPath = modelPath
        if let maxResults = try args.int("max-results") { options.maxResults = maxResults }
        if let threshold = try args.double("score-threshold") { options.scoreThreshold = Float(threshold) }
        options.categoryAllowlist = args.values("allow").flatMap(splitList)
        options.categoryDenylist = args.values("deny").flatMap(splitList)
        if let locale = args.value("locale") { options.displayNamesLocale = locale }
        var roi = CGRect.zero
        if let text = args.value("roi") {
            let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 4, parts.allSatisfy({ $0 != nil }) else { throw UsageError("--roi needs four numbers x,y,w,h") }
            let v = parts.compactMap { $0 }
            roi = CGRect(x: v[0], y: v[1], width: v[2], height: v[3])
        }
        let orientation = try TensorCommand.parseOrientation(args.value("orientation"))
        if let video {
            if live {
                try runLive(video, options: options, roi: roi, orientation: orientation, args: args)
            } else {
                try runVideo(video, options: options, roi: roi, orientation: orientation, args: args)
            }
            return
        }

        let classifier = try ImageClassifier(options: options)
        let region = roi
        let annotate = args.value("annotate")
        let several = args.positionals.count > 1 || Batch.isDirectory(args.positionals[0])
        if let annotate { try Annotation.prepare(annotate, several: several) }
        try Batch.run(args, inputs: args.positionals) { path in
            let image = try MPImage(contentsOf: URL(fileURLWithPath: path), orientation: orientation)
            let heads = try classifier.classify(image: image, regionOfInterest: region).classificationResult.classifications
            if let annotate {
                let upright = try draw(heads, on: image)
                try Annotation.write(upright, to: Annotation.outputURL(annotate, input: path, several: several))
            }
            return ItemResult(fields: [("classifications", json(heads))], text: text(heads))
        }
    }

    /// Video mode: every frame, with its timestamp; one result per frame.
    static func runVideo(_ path: String, options: ImageClassifierOptions, roi: CGRect, orientation: ImageOrientation?, args: ParsedArguments) throws {
        options.runningMode = .video
        let reader = try VideoReader(path: path)
        let classifier = try ImageClassifier(options: options)
        let annotated = args.value("annotate").map { AnnotatedVideo(path: $0, frameRate: reader.frameRate) }
        let json = args.flag("json")
        var frames = 0
        while let frame = try reader.nextFrame() {
            let image = try MPImage(pixelBuffer: frame.pixels, orientation: orientation ?? .up)
            let heads = try classifier.classify(videoFrame: image, timestampInMilliseconds: frame.timestampMilliseconds, regionOfInterest: roi)
                .classificationResult.classifications
            if let annotated { try annotated.write(try draw(heads, on: image)) }
            printFrame(frame, heads, json: json)
            frames += 1
        }
        try annotated?.finish()
        if !json { print("\(frames) frames") }
    }

    /// Live-stream mode: the video played at its real pace into a live-stream classifier; results
    /// arrive at the delegate, frames that arrive while it is busy are dropped.
    static func runLive(_ path: String, options: ImageClassifierOptions, roi: CGRect, orientation: ImageOrientation?, args: ParsedArguments) throws {
        let reader = try VideoReader(path: path)
        let annotated = args.value("annotate").map { AnnotatedVideo(path: $0, frameRate: reader.frameRate) }
        let json = args.flag("json")
        let delegate = LiveDelegate { frame, image, heads in
            if let annotated { try annotated.write(try draw(heads, on: image)) }
            printFrame(frame, heads, json: json)
        }
        options.runningMode = .liveStream
        options.imageClassifierLiveStreamDelegate = delegate  // held weakly by the options and the classifier
        let classifier = try ImageClassifier(options: options)
        let frames = try withExtendedLifetime(delegate) { () throws -> Int in
            let count = try VideoInput.play(reader, stop: { delegate.stats.failed }) { frame in
                let image = try MPImage(pixelBuffer: frame.pixels, orientation: orientation ?? .up)
                delegate.expect(frame, image)
                try classifier.classifyAsync(image: image, timestampInMilliseconds: frame.timestampMilliseconds, regionOfInterest: roi)
            }
            classifier.waitUntilIdle()
            return count
        }
        try annotated?.finish()
        try delegate.stats.finish(frames: frames, command: command.name, json: json)
    }

    /// Receives the live-stream results and drop notices; keeps the frames in flight by timestamp.
    final class LiveDelegate: ImageClassifierLiveStreamDelegate, @unchecked Sendable {
        typealias Handler = @Sendable (VideoFrame, MPImage, [Classifications]) throws -> Void
        let stats = LiveStats()
        private let lock = NSLock()
        private var inFlight: [Int: (VideoFrame, MPImage)] = [:]
        private let handler: Handler

        init(_ handler: @escaping Handler) { self.handler = handler }

        func expect(_ frame: VideoFrame, _ image: MPImage) {
            lock.lock(); inFlight[frame.timestampMilliseconds] = (frame, image); lock.unlock()
        }

        private func take(_ timestamp: Int) -> (VideoFrame, MPImage)? {
            lock.lock(); defer { lock.unlock() }
            return inFlight.removeValue(forKey: timestamp)
        }

        func imageClassifier(_ imageClassifier: ImageClassifier, didFinishClassification result: ImageClassifierResult?,
                             timestampInMilliseconds: Int, error: Error?) {
            let entry = take(timestampInMilliseconds)
            if let error {
                stats.fail(error)
            } else if let result, let entry {
                do { try handler(entry.0, entry.1, result.classificationResult.classifications) } catch { stats.fail(error) }
            }
            stats.countProcessed()
        }

        func imageClassifier(_ imageClassifier: ImageClassifier, didDropFrameWithTimestampInMilliseconds timestamp: Int) {
            _ = take(timestamp)
            stats.countDropped()
        }
    }

    static func printFrame(_ frame: VideoFrame, _ heads: [Classifications], json: Bool) {
        if json {
            print(JSON.object([("frame", .int(frame.index)), ("timestampMs", .int(frame.timestampMilliseconds)), ("classifications", self.json(heads))]).serialized)
        } else {
            let top = heads.compactMap { head in head.categories.first.map { Annotation.labelLine($0.displayName ?? $0.categoryName, index: $0.index, score: $0.score) } }
            print("frame \(frame.index) \(frame.timestampMilliseconds) ms: \(top.joined(separator: "; "))")
        }
    }

    /// The upright image with a label box per top category (up to 10 in all).
    static func draw(_ heads: [Classifications], on image: MPImage) throws -> PixelBuffer {
        let upright = try Annotation.upright(image.pixelBuffer, image.orientation)
        var lines: [String] = []
        for head in heads {
            let prefix = heads.count > 1 ? "\(head.headName ?? "head \(head.headIndex)"): " : ""
            lines += head.categories.prefix(10).map { prefix + Annotation.labelLine($0.displayName ?? $0.categoryName, index: $0.index, score: $0.score) }
        }
        Annotation.drawLabelList(Array(lines.prefix(10)), on: try Canvas(upright))
        return upright
    }

    static func json(_ heads: [Classifications]) -> JSON {
        .array(heads.map { head in
            .object([
                ("headIndex", .int(head.headIndex)),
                ("headName", .optional(head.headName) { .string($0) }),
                ("categories", .array(head.categories.map { c in
                    .object([("index", .int(c.index)), ("score", .number(c.score)),
                             ("categoryName", .optional(c.categoryName) { .string($0) }),
                             ("displayName", .optional(c.displayName) { .string($0) })])
                })),
            ])
        })
    }

    static func text(_ heads: [Classifications]) -> String {
        var text = ""
        for head in heads {
            text += "head \(head.headIndex)\(head.headName.map { " (\($0))" } ?? ""):\n     score  index  category\n"
            for c in head.categories {
                text += String(format: "%10.4f  %5d  ", c.score, c.index) + (c.displayName ?? c.categoryName ?? "") + "\n"
            }
        }
        return text
    }

    /// Names separated by ';' if there is one (for names that contain commas), else by ','.
    static func splitList(_ text: String) -> [String] {
        text.split(separator: text.contains(";") ? ";" : ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
