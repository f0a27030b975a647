import Foundation

/// The classifier goldens of ../shared/reference/goldens: for every model of kind "classifier" in
/// `index.json`, each image's top-5 from LiteRT (`summary.json` `images[].top5`, XNNPACK kernels)
/// and, where saved, the top-5 of LiteRT's builtin kernels (`<image>.builtin.output_0.bin`). Both
/// are official; they differ by up to ~10 quantization steps (reference/README.md §3), so a result
/// matching either one is parity.
public struct ClassifierGolden: Sendable {
    public struct Category: Sendable, Hashable {
        public let index: Int
        public let label: String
        public let score: Float
    }

    /// The model name (file name without `.tflite`).
    public let model: String
    public let modelFile: URL
    public let image: String
    public let imageFile: URL
    /// The output tensor's dtype ("uint8" or "float32").
    public let outputType: String
    /// The output quantization scale (0 for float outputs).
    public let outputScale: Float
    /// The XNNPACK top-5 (`summary.json`).
    public let top5: [Category]
    /// The builtin-kernel top-5 (ties by lower index), if the builtin output was saved. Labels are
    /// those of `top5` where the index appears there, else empty.
    public let builtinTop5: [Category]?

    /// The references a result may match: ("xnnpack", top5) and ("builtin", builtinTop5).
    public var references: [(name: String, top5: [Category])] {
        [("xnnpack", top5)] + (builtinTop5.map { [("builtin", $0)] } ?? [])
    }

    /// Label texts by index, from the golden top-5.
    public var labels: [Int: String] { Dictionary(top5.map { ($0.index, $0.label) }, uniquingKeysWith: { a, _ in a }) }

    /// One quantization step of the output, or 1e-3 for float outputs.
    public var scoreTolerance: Float { outputType == "float32" ? 1e-3 : outputScale }

    /// The names of the references that `result` ((index, score) pairs, best first) matches: the
    /// same indices in the same order, each score within one quantization step (1e-3 for float).
    public func matchingReferences(_ result: [(index: Int, score: Float)]) -> [String] {
        references.filter { reference in
            reference.top5.map(\.index) == result.map(\.index)
                && zip(reference.top5, result).allSatisfy { abs($0.score - $1.score) <= scoreTolerance * 1.001 }
        }.map(\.name)
    }

    /// A one-line description of the references, for failure messages.
    public var referenceSummary: String {
        references.map { "\($0.name) \($0.top5.map { "\($0.index):\($0.score)" }.joined(separator: " "))" }.joined(separator: " | ")
    }

    /// Every (classifier model, image) golden, in model then image order.
    public static func all() throws -> [ClassifierGolden] {
        let index = try SharedData.goldenIndex()
        guard let models = index["models"] as? [String: [String: Any]] else { return [] }
        var goldens: [ClassifierGolden] = []
        for name in models.keys.sorted() {
            guard let entry = models[name], entry["kind"] as? String == "classifier", entry["status"] as? String == "ok" else { continue }
            let summaryURL = SharedData.goldens.appendingPathComponent(name).appendingPathComponent("summary.json")
            guard let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: summaryURL)) as? [String: Any] else { continue }
            let modelFile = SharedData.root.appendingPathComponent(summary["model_file"] as? String ?? "models/\(name).tflite")
            let output = (summary["outputs"] as? [[String: Any]])?.first ?? [:]
            let dtype = output["dtype"] as? String ?? ""
            let scale = ((output["quantization"] as? [String: Any])?["scale"] as? NSNumber)?.floatValue ?? 0
            let zeroPoint = ((output["quantization"] as? [String: Any])?["zero_point"] as? NSNumber)?.intValue ?? 0
            for image in summary["images"] as? [[String: Any]] ?? [] {
                guard let imageName = image["image"] as? String, let imageFile = image["image_file"] as? String else { continue }
                let top5 = (image["top5"] as? [[String: Any]] ?? []).compactMap { c -> Category? in
                    guard let i = c["index"] as? Int, let label = c["label"] as? String, let score = c["score"] as? NSNumber else { return nil }
                    return Category(index: i, label: label, score: score.floatValue)
                }
                let builtinFile = SharedData.goldens.appendingPathComponent(name).appendingPathComponent("\(imageName).builtin.output_0.bin")
                var builtin: [Category]?
                if let bytes = try? Data(contentsOf: builtinFile) {
                    let scores: [Float]
                    switch dtype {
                    case "uint8": scores = bytes.map { scale * Float(Int($0) - zeroPoint) }
                    case "float32":
                        scores = bytes.withUnsafeBytes { raw in (0..<(raw.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) } }
                    default: scores = []
                    }
                    let names = Dictionary(top5.map { ($0.index, $0.label) }, uniquingKeysWith: { a, _ in a })
                    builtin = scores.indices.sorted { scores[$0] != scores[$1] ? scores[$0] > scores[$1] : $0 < $1 }.prefix(5).map {
                        Category(index: $0, label: names[$0] ?? "", score: scores[$0])
                    }
                    if builtin?.isEmpty == true { builtin = nil }
                }
                goldens.append(ClassifierGolden(model: name, modelFile: modelFile, image: imageName,
                                                imageFile: SharedData.root.appendingPathComponent(imageFile),
                                                outputType: dtype, outputScale: scale, top5: top5, builtinTop5: builtin))
            }
        }
        return goldens
    }
}

/// Sets environment variables for the duration of `body` and restores the previous values.
public func withEnvironment<R>(_ values: [String: String?], _ body: () throws -> R) rethrows -> R {
    var saved: [String: String?] = [:]
    for (name, value) in values {
        saved[name] = ProcessInfo.processInfo.environment[name]
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
    }
    defer {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
    return try body()
}

/// A fresh empty directory under the temporary directory.
public func makeTemporaryDirectory(_ prefix: String = "edgevision-test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
