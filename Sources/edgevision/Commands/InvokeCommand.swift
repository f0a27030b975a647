import Foundation
import InferenceEngine

/// `edgevision invoke MODEL --input FILE ... --output-dir DIR [--threads N]`: runs a model on raw tensors.
enum InvokeCommand {
    static let command = Command(
        name: "invoke",
        summary: "Run a model on raw input tensors and write its raw output tensors.",
        usage: "invoke MODEL --input FILE [--input FILE ...] --output-dir DIR [--threads N]",
        options: [
            .value("input", "FILE", "Raw little-endian tensor bytes for the next model input, in the model's input order (the goldens' *.input.bin format). Repeat once per input.", repeatable: true),
            .value("output-dir", "DIR", "Directory to write output_<i>.bin for every model output (created if missing)."),
            .value("threads", "N", "Threads for one invoke, and for the compile's weight packing (default 1)."),
        ],
        example: """
        edgevision invoke ../shared/models/mobilenet_v2_1.0_224_quant.tflite --input ../shared/reference/goldens/mobilenet_v2_1.0_224_quant/burger.input.bin --output-dir /tmp/out
        edgevision invoke ../shared/models/traffic_model.tflite --input ../shared/reference/goldens/traffic_model/traffic_0001.input.bin --input ../shared/reference/goldens/traffic_model/traffic_0001.input_1.bin --input ../shared/reference/goldens/traffic_model/traffic_0001.input_2.bin --output-dir /tmp/out --threads 2
        """,
        run: run)

    static func run(_ args: ParsedArguments) throws {
        let path = try args.requirePositionals(["MODEL"])[0]
        let inputs = args.values("input")
        guard !inputs.isEmpty else { throw UsageError("missing option --input FILE (one per model input)") }
        guard let outputDirectory = args.value("output-dir") else { throw UsageError("missing option --output-dir DIR") }
        let threads = try args.int("threads") ?? 1
        guard threads >= 1 else { throw UsageError("--threads must be at least 1") }
        var options = ModelOptions()
        options.numThreads = threads
        let model = try Model(contentsOfFile: path, options: options)
        guard inputs.count == model.inputs.count else {
            throw UsageError("the model has \(model.inputs.count) inputs (\(model.inputs.map { "\($0.name): \($0.type) \($0.shape)" }.joined(separator: ", "))) but \(inputs.count) --input files were given")
        }
        let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
        for (index, file) in inputs.enumerated() {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw CLIError("cannot read input file '\(file)': \(error.localizedDescription)")
            }
            try interpreter.copyInput(data, at: index)
        }
        interpreter.invoke()
        let directory = URL(fileURLWithPath: outputDirectory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for index in model.outputs.indices {
            let url = directory.appendingPathComponent("output_\(index).bin")
            try interpreter.outputData(at: index).write(to: url)
            print(url.path)
        }
    }
}
