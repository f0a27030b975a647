import EdgeVisionTasks
import Foundation
import MediaIO

/// `edgevision classify IMAGE --model MODEL ...`: MediaPipe-style image classification.
enum ClassifyCommand {
    static let command = Command(
        name: "classify",
        summary: "Classify an image (MediaPipe image classifier) with a model.",
        usage: "classify IMAGE... --model MODEL [--max-results N] [--score-threshold T] [--allow a,b] [--deny a,b] [--locale L] [--roi x,y,w,h] [--json]",
        options: [
            .value("model", "MODEL", "The classification model (.tflite)."),
            .value("max-results", "N", "Maximum categories per head (default: all)."),
            .value("score-threshold", "T", "Drop categories scoring below T (default: the model's metadata threshold, else none)."),
            .value("allow", "a,b", "Keep only these category names."),
            .value("deny", "a,b", "Drop these category names."),
            .value("locale", "L", "Locale of display names (default en)."),
            .value("roi", "x,y,w,h", "Region of interest, normalized [0,1] coordinates of the stored image."),
            .value("orientation", "O", "up|down|left|right (mirrored orientations are rejected, as in MediaPipe)."),
            .flag("json", "Print {\"classifications\":[{\"headIndex\",\"headName\",\"categories\":[...]}]} (JSON Lines for several images)."),
        ] + Batch.options,
        example: "edgevision classify ../shared/images/burger.jpg --model ../shared/models/mobilenet_v2_1.0_224_quant.tflite --max-results 5",
        run: run)

    static func run(_ args: ParsedArguments) throws {
        guard !args.positionals.isEmpty else { throw UsageError("missing argument IMAGE") }
        guard let modelPath = args.value("model") else { throw UsageError("missing option --model MODEL") }
        let options = ImageClassifierOptions()
        options.baseOptions.modelAssetPath = modelPath
        if let maxResults = try args.int("max-results") { options.maxResults = maxResults }
        if let threshold = try args.double("score-threshold") { options.scoreThreshold = Float(threshold) }
        if let allow = args.value("allow") { options.categoryAllowlist = splitList(allow) }
        if let deny = args.value("deny") { options.categoryDenylist = splitList(deny) }
        if let locale = args.value("locale") { options.displayNamesLocale = locale }
        var roi = CGRect.zero
        if let text = args.value("roi") {
            let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 4, parts.allSatisfy({ $0 != nil }) else { throw UsageError("--roi needs four numbers x,y,w,h") }
            let v = parts.compactMap { $0 }
            roi = CGRect(x: v[0], y: v[1], width: v[2], height: v[3])
        }
        let orientation = try TensorCommand.parseOrientation(args.value("orientation"))
        let classifier = try ImageClassifier(options: options)
        let region = roi
        try Batch.run(args, inputs: args.positionals) { path in
            let image = try MPImage(contentsOf: URL(fileURLWithPath: path), orientation: orientation)
            let heads = try classifier.classify(image: image, regionOfInterest: region).classificationResult.classifications
            var text = ""
            for head in heads {
                text += "head \(head.headIndex)\(head.headName.map { " (\($0))" } ?? ""):\n     score  index  category\n"
                for c in head.categories {
                    text += String(format: "%10.4f  %5d  ", c.score, c.index) + (c.displayName ?? c.categoryName ?? "") + "\n"
                }
            }
            return ItemResult(fields: [("classifications", .array(heads.map { head in
                .object([
                    ("headIndex", .int(head.headIndex)),
                    ("headName", .optional(head.headName) { .string($0) }),
                    ("categories", .array(head.categories.map { c in
                        .object([("index", .int(c.index)), ("score", .number(c.score)),
                                 ("categoryName", .optional(c.categoryName) { .string($0) }),
                                 ("displayName", .optional(c.displayName) { .string($0) })])
                    })),
                ])
            }))], text: text)
        }
    }

    static func splitList(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
