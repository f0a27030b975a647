import Foundation
import MediaIO
import TFLiteFormat
import VisionCore

/// `edgevision tensor IMAGE --model MODEL --out FILE [--orientation O]`: the exact input tensor the tasks feed.
enum TensorCommand {
    static let command = Command(
        name: "tensor",
        summary: "Write the exact input tensor the tasks feed a model for an image (raw bytes).",
        usage: "tensor IMAGE --model MODEL --out FILE [--orientation O]",
        options: [
            .value("model", "MODEL", "The model whose image input (input 0) the tensor is for."),
            .value("out", "FILE", "Where to write the raw little-endian tensor bytes (the goldens' *.input.bin format)."),
            .value("orientation", "O", "How the stored image must be turned to be upright: \(ImageOrientation.allCases.map(\.rawValue).joined(separator: "|")). Default: the file's EXIF orientation, else up."),
        ],
        example: """
        edgevision tensor ../shared/images/burger.jpg --model ../shared/models/mobilenet_v2_1.0_224_quant.tflite --out /tmp/burger.bin
        edgevision tensor ../shared/images/sergey.png --model ../shared/models/selfie_segmentation.tflite --out /tmp/sergey.f32 --orientation right
        """,
        run: run)

    static func run(_ args: ParsedArguments) throws {
        let imagePath = try args.requirePositionals(["IMAGE"])[0]
        guard let modelPath = args.value("model") else { throw UsageError("missing option --model MODEL") }
        guard let outPath = args.value("out") else { throw UsageError("missing option --out FILE") }
        let orientation = try parseOrientation(args.value("orientation"))
        let model = try TFLiteModel(contentsOfFile: modelPath)
        let spec = try ImageInputSpec(model: model, metadata: try model.metadata())
        let image = try ImageDecoder.decode(contentsOf: URL(fileURLWithPath: imagePath))
        let elementSize = spec.type == .float32 ? 4 : 1
        var bytes = Data(count: spec.width * spec.height * spec.channels * elementSize)
        try bytes.withUnsafeMutableBytes { buffer in
            try ImagePreprocessor.write(image.pixels, orientation: orientation ?? image.orientation, spec: spec, into: buffer)
        }
        do {
            try bytes.write(to: URL(fileURLWithPath: outPath))
        } catch {
            throw CLIError("cannot write '\(outPath)': \(error.localizedDescription)")
        }
    }

    static func parseOrientation(_ text: String?) throws -> ImageOrientation? {
        guard let text else { return nil }
        guard let orientation = ImageOrientation(rawValue: text) else {
            throw UsageError("unknown orientation '\(text)'; use one of \(ImageOrientation.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return orientation
    }
}
