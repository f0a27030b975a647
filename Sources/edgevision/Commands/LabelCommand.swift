import EdgeVision
import Foundation
import MediaIO

/// `edgevision label IMAGE [--model MODEL] ...`: ML Kit-style image labeling.
enum LabelCommand {
    static let command = Command(
        name: "label",
        summary: "Label an image (ML Kit image labeling) with the default or a custom model.",
        usage: "label IMAGE [--model MODEL] [--threshold T] [--max-results N] [--orientation O] [--json]",
        options: [
            .value("model", "MODEL", "A custom classification model (default: \(ImageLabelerOptions.defaultModelFileName) from EDGEVISION_MODELS or the model cache)."),
            .value("threshold", "T", "Minimum confidence in [0, 1] (default: the model's metadata threshold, else 0)."),
            .value("max-results", "N", "Maximum labels (default 10)."),
            .value("orientation", "O", "How the stored image must be turned to be upright: \(ImageOrientation.allCases.map(\.rawValue).joined(separator: "|")) (default: EXIF, else up)."),
            .flag("json", "Print {\"labels\":[{\"text\",\"confidence\",\"index\"}]}."),
        ],
        example: "edgevision label ../shared/images/burger.jpg",
        run: run)

    static func run(_ args: ParsedArguments) throws {
        let imagePath = try args.requirePositionals(["IMAGE"])[0]
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
        let image = try VisionImage(contentsOf: URL(fileURLWithPath: imagePath))
        if let orientation { image.orientation = orientation }
        var labels = try labeler.results(in: image)
        if args.value("model") == nil, let maxResults, labels.count > maxResults { labels.removeLast(labels.count - maxResults) }

        if args.flag("json") {
            print(JSON.object([("labels", .array(labels.map {
                .object([("text", .string($0.text)), ("confidence", .number($0.confidence)), ("index", .int($0.index))])
            }))]).serialized)
        } else {
            print("confidence  index  label")
            for label in labels {
                print(String(format: "%10.4f  %5d  ", label.confidence, label.index) + label.text)
            }
        }
    }
}
