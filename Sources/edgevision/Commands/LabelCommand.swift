import EdgeVision
import Foundation
import MediaIO

/// `edgevision label IMAGE [--model MODEL] ...`: ML Kit-style image labeling.
enum LabelCommand {
    static let command = Command(
        name: "label",
        summary: "Label an image (ML Kit image labeling) with the default or a custom model.",
        usage: "label IMAGE... [--model MODEL] [--threshold T] [--max-results N] [--orientation O] [--annotate OUT.png] [--json] [--threads N]",
        options: [
            .value("model", "MODEL", "A custom classification model (default: \(ImageLabelerOptions.defaultModelFileName) from EDGEVISION_MODELS or the model cache)."),
            .value("threshold", "T", "Minimum confidence in [0, 1] (default: the model's metadata threshold, else 0)."),
            .value("max-results", "N", "Maximum labels (default 10)."),
            .value("orientation", "O", "How the stored image must be turned to be upright: \(ImageOrientation.allCases.map(\.rawValue).joined(separator: "|")) (default: EXIF, else up)."),
            .value("annotate", "OUT.png", "Write the upright image with a label box per result drawn at the top left (.png, .jpg or .webp); a directory of PNGs when several images are given."),
            .flag("json", "Print {\"labels\":[{\"text\",\"confidence\",\"index\"}]} (JSON Lines with \"input\" for several images)."),
        ] + Batch.options,
        example: """
        edgevision label ../shared/images/burger.jpg
        edgevision label ../shared/images/burger.jpg --threshold 0.2 --max-results 3 --annotate /tmp/burger-labels.png --json
        edgevision label ../shared/images/cat.bmp --model ../shared/models/mobilenet_v1_0.25_224_quant.tflite --orientation right
        edgevision label ../shared/images --threads 2 --json > labels.jsonl
        """,
        run: run)

    static func run(_ args: ParsedArguments) throws {
        guard !args.positionals.isEmpty else { throw UsageError("missing argument IMAGE") }
        let threshold = try args.double("threshold")
        if let threshold, !(0...1).contains(threshold) { throw UsageError("--threshold must be in [0, 1]") }
        let maxResults = try args.int("max-results")
        if let maxResults, maxResults <= 0 { throw UsageError("--max-results must be positive") }
        let orientation = try TensorCommand.parseOrientation(args.value("orientation"))

        let options: CommonImageLabelerOptions
        if let model = args.value("model") {
            let custom = CustomImageLabelerOptions(localModel: LocalModel(path: model))
            if let maxResults { custom.maxResultCount = maxResults }
            options = custom
        } else {
            options = ImageLabelerOptions()
        }
        if let threshold { options.confidenceThreshold = NSNumber(value: threshold) }
        let labeler = try ImageLabeler.imageLabeler(options: options)
        let trim = args.value("model") == nil ? maxResults : nil
        let annotate = args.value("annotate")
        let several = args.positionals.count > 1 || Batch.isDirectory(args.positionals[0])
        if let annotate { try Annotation.prepare(annotate, several: several) }
        try Batch.run(args, inputs: args.positionals) { path in
            let image = try VisionImage(contentsOf: URL(fileURLWithPath: path))
            if let orientation { image.orientation = orientation }
            var labels = try labeler.results(in: image)
            if let trim, labels.count > trim { labels.removeLast(labels.count - trim) }
            if let annotate {
                let upright = try Annotation.upright(image.pixelBuffer, image.orientation)
                Annotation.drawLabelList(labels.map { Annotation.labelLine($0.text, index: $0.index, score: $0.confidence) }, on: try Canvas(upright))
                try Annotation.write(upright, to: Annotation.outputURL(annotate, input: path, several: several))
            }
            var text = "confidence  index  label\n"
            for label in labels { text += String(format: "%10.4f  %5d  ", label.confidence, label.index) + label.text + "\n" }
            return ItemResult(fields: [("labels", .array(labels.map {
                .object([("text", .string($0.text)), ("confidence", .number($0.confidence)), ("index", .int($0.index))])
            }))], text: text)
        }
    }
}
