import Foundation
import TFLiteFormat
import TensorCore

/// `edgevision inspect MODEL [--json]`: what a model file contains.
enum InspectCommand {
    static let command = Command(
        name: "inspect",
        summary: "Show a model's inputs, outputs, ops, multiply-accumulates and metadata.",
        usage: "inspect MODEL [--json]",
        options: [.flag("json", "Print exactly one JSON object instead of the human-readable summary.")],
        example: """
        edgevision inspect ../shared/models/mobilenet_v2_1.0_224_quant.tflite
        edgevision inspect ../shared/models/mobilenet_v2_1.0_224_quant.tflite --json
        """,
        run: run)

    static func run(_ args: ParsedArguments) throws {
        let path = try args.requirePositionals(["MODEL"])[0]
        let report = try ModelReport(path: path)
        if args.flag("json") {
            print(report.json.serialized)
        } else {
            print(report.text, terminator: "")
        }
    }
}

/// Everything `inspect` shows, gathered once.
struct ModelReport {
    let path: String
    let model: TFLiteModel
    let analysis: ModelAnalysis
    let metadata: ModelMetadata?
    let labelCount: Int?
    let normalization: NormalizationOptions?
    let scoreThreshold: Float?

    init(path: String) throws {
        self.path = path
        model = try TFLiteModel(contentsOfFile: path)
        analysis = ModelAnalysis(model: model)
        metadata = try model.metadata()
        let subgraphMetadata = metadata?.subgraphs.first
        normalization = subgraphMetadata?.inputTensors.first?.normalization
        scoreThreshold = subgraphMetadata?.outputTensors.lazy.compactMap(\.scoreThresholding).first
        var labels: Int?
        if let metadata {
            let archive = try model.associatedFiles()
            for index in model.mainSubgraph.outputs.indices {
                if let file = try model.labelFiles(forOutput: index, metadata: metadata, archive: archive).first {
                    labels = file.labels.count
                    break
                }
            }
        }
        labelCount = labels
    }

    func tensorJSON(_ index: Int) -> JSON {
        let tensor = model.mainSubgraph.tensors[index]
        return .object([
            ("name", .string(tensor.name)),
            ("dtype", .string(tensor.type.numpyName)),
            ("shape", .array(tensor.shape.map { .int($0) })),
            ("scale", tensor.quantization.map { .number($0.scale) } ?? .double(0)),
            ("zeroPoint", .int(Int(tensor.quantization?.zeroPoint ?? 0))),
        ])
    }

    var json: JSON {
        let graph = model.mainSubgraph
        let metadataJSON: JSON = .object([
            ("name", .optional(metadata?.name) { .string($0) }),
            ("description", .optional(metadata?.description) { .string($0) }),
            ("labels", .optional(labelCount) { .int($0) }),
            ("normalization", .optional(normalization) { n in
                .object([("mean", .array(n.mean.map { .number($0) })), ("std", .array(n.std.map { .number($0) }))])
            }),
            ("scoreThreshold", .optional(scoreThreshold) { .number($0) }),
        ])
        return .object([
            ("inputs", .array(graph.inputs.map(tensorJSON))),
            ("outputs", .array(graph.outputs.map(tensorJSON))),
            ("opCounts", .object(analysis.opCounts.map { ($0.name, .int($0.count)) })),
            ("macs", .int(analysis.macs)),
            ("metadata", metadataJSON),
        ])
    }

    var text: String {
        let graph = model.mainSubgraph
        var out = "Model: \(path)\n"
        out += "  schema version \(model.version), \(model.data.count) bytes, \(graph.tensors.count) tensors, \(graph.operators.count) operators\n"
        func describe(_ index: Int) -> String {
            let t = graph.tensors[index]
            var line = "    \(t.name.isEmpty ? "#\(index)" : t.name)  \(t.type.numpyName) \(Shape(t.shape))"
            if let q = t.quantization {
                line += q.isPerChannel ? "  per-channel (\(q.scales.count) scales, axis \(q.quantizedDimension))" : "  scale \(q.scale) zero point \(q.zeroPoint)"
            }
            return line + "\n"
        }
        out += "Inputs:\n" + graph.inputs.map(describe).joined()
        out += "Outputs:\n" + graph.outputs.map(describe).joined()
        out += "Operators:\n"
        let width = analysis.opCounts.map { $0.name.count }.max() ?? 0
        for (name, count) in analysis.opCounts {
            out += "    " + name.padding(toLength: width, withPad: " ", startingAt: 0) + "  \(count)\n"
        }
        let custom = analysis.opCounts.map(\.name).filter { $0.hasPrefix("CUSTOM:") }.map { String($0.dropFirst(7)) }
        if !custom.isEmpty { out += "  custom ops: \(custom.joined(separator: ", "))\n" }
        out += "Multiply-accumulates: \(analysis.macs) (\(String(format: "%.1f", Double(analysis.macs) / 1e6)) M)\n"
        if let metadata {
            out += "Metadata:\n"
            if let name = metadata.name { out += "    name: \(name)\n" }
            if let d = metadata.description { out += "    description: \(d.replacingOccurrences(of: "\n", with: " "))\n" }
            if let v = metadata.version { out += "    version: \(v)\n" }
            if let a = metadata.author { out += "    author: \(a)\n" }
            if let l = metadata.license { out += "    license: \(l)\n" }
            out += "    labels: \(labelCount.map(String.init) ?? "none")\n"
            if let n = normalization { out += "    normalization: mean \(n.mean) std \(n.std)\n" }
            if let s = scoreThreshold { out += "    score threshold: \(s)\n" }
        } else {
            out += "Metadata: none\n"
        }
        return out
    }
}
