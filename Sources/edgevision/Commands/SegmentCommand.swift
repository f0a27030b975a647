import EdgeVision
import Foundation
import MediaIO

/// `edgevision segment IMAGE ...`: ML Kit-style selfie segmentation and background effects.
enum SegmentCommand {
    static let command = Command(
        name: "segment",
        summary: "Separate people from the background (ML Kit selfie segmentation) in images or a video; write masks, overlays or background effects.",
        usage: "segment IMAGE...|VIDEO [--mode single|stream] [--raw-size] [--model MODEL] [--landscape] [--orientation O] [--mask-out MASK.png] [--mask-raw MASK.f32] [--background remove|blur|#RRGGBB|IMAGE --out OUT.png] [--annotate OUT.png|OUT.mp4] [--live] [--json] [--threads N]",
        options: [
            .value("mode", "single|stream", "Segmenter mode (default single for images, stream for a video; stream smooths over frames)."),
            .flag("raw-size", "Keep the mask at the model's output size instead of the image's size."),
            .value("model", "MODEL", "A compatible segmentation model instead of the default selfie model."),
            .flag("landscape", "Use the 144x256 landscape selfie model."),
            .value("orientation", "O", "How the stored image must be turned to be upright (default: EXIF, else up)."),
            .value("mask-out", "MASK.png", "Write the mask as an 8-bit grey PNG (confidence × 255). One image only."),
            .value("mask-raw", "MASK.f32", "Write the mask as raw float32, little-endian, row-major, no header (width × height × 4 bytes). One image only."),
            .value("background", "EFFECT", "remove (transparent PNG), blur, a colour #RRGGBB, or an image file to put behind the person. Needs --out."),
            .value("out", "OUT.png", "Where to write the image with the background effect."),
            .value("annotate", "OUT.png", "Write the upright image with the person mask overlaid in colour at 50% alpha; a directory of PNGs for several images; an .mp4 for a video."),
            VideoInput.liveOption("segmented"),
            .flag("json", "Print {\"width\",\"height\",\"foregroundFraction\"} (JSON Lines with \"input\" for several images; for a video one {\"frame\",\"timestampMs\",\"width\",\"height\",\"foregroundFraction\"} line per frame)."),
        ] + Batch.options,
        example: """
        edgevision segment ../shared/images/sergey.png --background blur --out /tmp/blurred.png
        edgevision segment ../shared/images/sergey.png --mask-out /tmp/mask.png --mask-raw /tmp/mask.f32 --annotate /tmp/overlay.png --json
        edgevision segment ../shared/images/sergey.png --background remove --out /tmp/person.png
        edgevision segment ../shared/images/sergey.png --background "#00FF00" --out /tmp/green.png --orientation up
        edgevision segment ../shared/images/sergey.png --raw-size --landscape --json
        edgevision segment ../shared/images --mode single --model ../shared/models/selfie_segmentation.tflite --threads 2 --json
        edgevision segment ../shared/videos/traffic_frames.mp4 --live --annotate /tmp/overlay.mp4 --json
        """,
        run: run)

    static func run(_ args: ParsedArguments) throws {
        guard !args.positionals.isEmpty else { throw UsageError("missing argument IMAGE (or VIDEO)") }
        let live = args.flag("live")
        var video = try VideoInput.video(in: args.positionals)
        if live, video == nil {
            guard args.positionals.count == 1 else { throw UsageError("--live takes one VIDEO, not \(args.positionals.count) inputs") }
            video = args.positionals[0]  // opened as a video; a file that is not one is reported then
        }
        let several = args.positionals.count > 1 || Batch.isDirectory(args.positionals[0])
        if several || video != nil, args.value("mask-out") != nil || args.value("mask-raw") != nil || args.value("out") != nil || args.value("background") != nil {
            throw UsageError("--mask-out, --mask-raw, --background and --out take one image; give one IMAGE")
        }
        if video != nil, args.value("threads") != nil { throw UsageError("--threads applies to several images, not to a video") }
        let options = SelfieSegmenterOptions()
        switch args.value("mode") ?? (video == nil ? "single" : "stream") {
        case "single": options.segmenterMode = .singleImage
        case "stream": options.segmenterMode = .stream
        case let other: throw UsageError("--mode must be single or stream, got '\(other)'")
        }
        options.shouldEnableRawSizeMask = args.flag("raw-size")
        if args.flag("landscape") { options.modelVariant = .landscape }
        if let model = args.value("model") { options.localModel = LocalModel(path: model) }
        let effect = try parseEffect(args.value("background"))
        if effect != nil, args.value("out") == nil { throw UsageError("--background needs --out OUT.png") }
        if effect == nil, args.value("out") != nil { throw UsageError("--out needs --background EFFECT") }
        if effect != nil, options.shouldEnableRawSizeMask { throw UsageError("--background needs the full-size mask; drop --raw-size") }
        let orientation = try TensorCommand.parseOrientation(args.value("orientation"))

        if let video {
            let reader = try VideoReader(path: video)
            let segmenter = try Segmenter.segmenter(options: options)
            let annotated = args.value("annotate").map { AnnotatedVideo(path: $0, frameRate: reader.frameRate) }
            let json = args.flag("json")
            let image = { @Sendable (frame: VideoFrame) in VisionImage(buffer: frame.pixels, orientation: orientation ?? .up) }
            let deliver = { @Sendable (frame: VideoFrame, mask: SegmentationMask) throws in
                if let annotated { try annotated.write(try draw(mask, on: image(frame))) }
                printFrame(frame, mask, json: json)
            }
            if live {
                try VideoInput.runLive(reader, command: command.name, json: json,
                                       work: { frame in try segmenter.results(in: image(frame)) }, deliver: deliver)
            } else {
                var frames = 0
                while let frame = try reader.nextFrame() {
                    try deliver(frame, try segmenter.results(in: image(frame)))
                    frames += 1
                }
                if !json { print("\(frames) frames") }
            }
            try annotated?.finish()
            return
        }

        let segmenter = try Segmenter.segmenter(options: options)
        let maskOut = args.value("mask-out"), maskRaw = args.value("mask-raw"), out = args.value("out"), annotate = args.value("annotate")
        if let annotate { try Annotation.prepare(annotate, several: several) }
        try Batch.run(args, inputs: args.positionals) { path in
            let image = try VisionImage(contentsOf: URL(fileURLWithPath: path))
            if let orientation { image.orientation = orientation }
            let mask = try segmenter.results(in: image)
            if let maskOut {
                let grey = try PixelBuffer(width: mask.width, height: mask.height, format: .gray8)
                grey.withUnsafeMutableBytes { bytes in
                    for (i, v) in mask.values.enumerated() { bytes[i] = UInt8((min(max(v, 0), 1) * 255).rounded()) }
                }
                try ImageEncoder.write(grey, to: URL(fileURLWithPath: maskOut))
            }
            if let maskRaw {
                let data = mask.values.withUnsafeBytes { Data($0) }
                do { try data.write(to: URL(fileURLWithPath: maskRaw)) } catch { throw CLIError("cannot write '\(maskRaw)': \(error.localizedDescription)") }
            }
            if let effect, let out {
                try ImageEncoder.write(try mask.apply(effect, to: image), to: URL(fileURLWithPath: out))
            }
            if let annotate {
                try Annotation.write(try draw(mask, on: image), to: Annotation.outputURL(annotate, input: path, several: several))
            }
            return ItemResult(fields: fields(mask), text: "mask \(mask.width)x\(mask.height), foreground \(String(format: "%.1f", mask.foregroundFraction * 100))% of pixels\n")
        }
    }

    static func fields(_ mask: SegmentationMask) -> [(String, JSON)] {
        [("width", .int(mask.width)), ("height", .int(mask.height)), ("foregroundFraction", .double(mask.foregroundFraction))]
    }

    static func printFrame(_ frame: VideoFrame, _ mask: SegmentationMask, json: Bool) {
        if json {
            print(JSON.object([("frame", .int(frame.index)), ("timestampMs", .int(frame.timestampMilliseconds))] + fields(mask)).serialized)
        } else {
            print("frame \(frame.index) \(frame.timestampMilliseconds) ms: mask \(mask.width)x\(mask.height), foreground \(String(format: "%.1f", mask.foregroundFraction * 100))%")
        }
    }

    /// The upright image with the mask overlaid.
    static func draw(_ mask: SegmentationMask, on image: VisionImage) throws -> PixelBuffer {
        let upright = try Annotation.upright(image.pixelBuffer, image.orientation)
        try Annotation.overlay(mask, on: try Canvas(upright))
        return upright
    }

    static func parseEffect(_ text: String?) throws -> BackgroundEffect? {
        guard let text else { return nil }
        switch text {
        case "remove": return .remove
        case "blur": return .blur(radius: 12)
        default:
            if text.hasPrefix("#") {
                let hex = text.dropFirst()
                guard hex.count == 6, let value = UInt32(hex, radix: 16) else { throw UsageError("colour must be #RRGGBB, got '\(text)'") }
                return .color(red: UInt8(value >> 16), green: UInt8((value >> 8) & 0xFF), blue: UInt8(value & 0xFF))
            }
            return .image(try ImageDecoder.decode(contentsOf: URL(fileURLWithPath: text)).pixels)
        }
    }
}
