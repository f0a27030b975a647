import EdgeVision
import Foundation
import MediaIO

/// `edgevision segment IMAGE ...`: ML Kit-style selfie segmentation and background effects.
enum SegmentCommand {
    static let command = Command(
        name: "segment",
        summary: "Separate people from the background (ML Kit selfie segmentation); write masks or background effects.",
        usage: "segment IMAGE... [--mode single|stream] [--raw-size] [--model MODEL] [--landscape] [--orientation O] [--mask-out MASK.png] [--mask-raw MASK.f32] [--background remove|blur|#RRGGBB|IMAGE --out OUT.png] [--json]",
        options: [
            .value("mode", "single|stream", "Segmenter mode (default single for one image; stream smooths over frames)."),
            .flag("raw-size", "Keep the mask at the model's output size instead of the image's size."),
            .value("model", "MODEL", "A compatible segmentation model instead of the default selfie model."),
            .flag("landscape", "Use the 144x256 landscape selfie model."),
            .value("orientation", "O", "How the stored image must be turned to be upright (default: EXIF, else up)."),
            .value("mask-out", "MASK.png", "Write the mask as an 8-bit grey PNG (confidence × 255)."),
            .value("mask-raw", "MASK.f32", "Write the mask as raw float32, little-endian, row-major, no header."),
            .value("background", "EFFECT", "remove (transparent PNG), blur, a colour #RRGGBB, or an image file to put behind the person."),
            .value("out", "OUT.png", "Where to write the image with the background effect."),
            .flag("json", "Print {\"width\",\"height\",\"foregroundFraction\"} (JSON Lines for several images)."),
        ] + Batch.options,
        example: "edgevision segment ../shared/images/sergey.png --background blur --out /tmp/blurred.png",
        run: run)

    static func run(_ args: ParsedArguments) throws {
        guard !args.positionals.isEmpty else { throw UsageError("missing argument IMAGE") }
        let several = args.positionals.count > 1 || Batch.isDirectory(args.positionals[0])
        if several, args.value("mask-out") != nil || args.value("mask-raw") != nil || args.value("out") != nil {
            throw UsageError("--mask-out, --mask-raw and --out take one image; give one IMAGE")
        }
        let options = SelfieSegmenterOptions()
        switch args.value("mode") ?? "single" {
        case "single": options.segmenterMode = .singleImage
        case "stream": options.segmenterMode = .stream
        case let other: throw UsageError("--mode must be single or stream, got '\(other)'")
        }
        options.shouldEnableRawSizeMask = args.flag("raw-size")
        if args.flag("landscape") { options.modelVariant = .landscape }
        if let model = args.value("model") { options.localModel = LocalModel(path: model) }
        let effect = try parseEffect(args.value("background"))
        if effect != nil, args.value("out") == nil { throw UsageError("--background needs --out OUT.png") }
        if effect != nil, options.shouldEnableRawSizeMask { throw UsageError("--background needs the full-size mask; drop --raw-size") }
        let orientation = try TensorCommand.parseOrientation(args.value("orientation"))

        let segmenter = try Segmenter.segmenter(options: options)
        let maskOut = args.value("mask-out"), maskRaw = args.value("mask-raw"), out = args.value("out")
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
            return ItemResult(
                fields: [("width", .int(mask.width)), ("height", .int(mask.height)), ("foregroundFraction", .double(mask.foregroundFraction))],
                text: "mask \(mask.width)x\(mask.height), foreground \(String(format: "%.1f", mask.foregroundFraction * 100))% of pixels\n")
        }
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
