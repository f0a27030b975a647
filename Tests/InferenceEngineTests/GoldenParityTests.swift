import Foundation
import InferenceEngine
import TensorCore
import TestSupport
import XCTest

/// Runs every golden in ../shared/reference/goldens through the engine and compares each output
/// with LiteRT's XNNPACK golden or, where saved, LiteRT's builtin-kernel golden (matching either is
/// parity). Model-sized: runs only in optimized builds (`swift test -c release`).
final class GoldenParityTests: XCTestCase {
    struct OutputRecord {
        let index: Int
        let name: String
        let file: String
        let dtype: String
        let shape: [Int]
    }

    /// How one output compared: the worst difference seen and whether it is within the parity rule.
    struct Comparison {
        var passed: Bool
        var summary: String
    }

    func testEveryGoldenMatchesLiteRT() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "model-sized golden runs need an optimized build: swift test -c release")
        let index = try SharedData.goldenIndex()
        let models = try XCTUnwrap(index["models"] as? [String: [String: Any]])
        var table: [String] = []
        for name in models.keys.sorted() {
            guard let entry = models[name], entry["status"] as? String == "ok" else { continue }
            let images = entry["images"] as? [String] ?? []
            let kind = entry["kind"] as? String ?? ""
            let model = try Model(contentsOfFile: SharedData.model("\(name).tflite").path)
            let interpreter = Interpreter(model: model)
            for image in images {
                let directory = SharedData.goldens.appendingPathComponent(name)
                let record = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("\(image).json"))) as? [String: Any] ?? [:]
                for input in record["inputs"] as? [[String: Any]] ?? [] {
                    let file = try XCTUnwrap(input["file"] as? String)
                    try interpreter.copyInput(Data(contentsOf: directory.appendingPathComponent(file)), at: try XCTUnwrap(input["index"] as? Int))
                }
                interpreter.invoke()
                let outputs = (record["outputs"] as? [[String: Any]] ?? []).compactMap { o -> OutputRecord? in
                    guard let i = o["index"] as? Int, let f = o["file"] as? String, let d = o["dtype"] as? String else { return nil }
                    return OutputRecord(index: i, name: o["name"] as? String ?? "", file: f, dtype: d, shape: o["shape"] as? [Int] ?? [])
                }
                var results: [String] = []
                let ssdOutputs = outputs.filter { kind == "detector_ssd" && $0.name.hasPrefix("TFLite_Detection_PostProcess") }
                if ssdOutputs.count == 4 {
                    let comparison = try compareDetections(interpreter, ssdOutputs, directory: directory, image: image)
                    XCTAssertTrue(comparison.passed, "\(name)/\(image) detections: \(comparison.summary)")
                    results.append("detections \(comparison.summary)")
                }
                for output in outputs where !ssdOutputs.contains(where: { $0.index == output.index }) {
                    let ours = try interpreter.outputData(at: output.index)
                    var candidates = [directory.appendingPathComponent(output.file)]
                    let builtin = directory.appendingPathComponent(output.file.replacingOccurrences(of: ".output_", with: ".builtin.output_"))
                    if FileManager.default.fileExists(atPath: builtin.path) { candidates.append(builtin) }
                    var comparisons: [Comparison] = []
                    for candidate in candidates {
                        comparisons.append(compare(ours, try Data(contentsOf: candidate), dtype: output.dtype))
                    }
                    let best = comparisons.first { $0.passed } ?? comparisons[0]
                    XCTAssertTrue(best.passed, "\(name)/\(image) output \(output.index) (\(output.name)): \(comparisons.map(\.summary).joined(separator: " | "))")
                    results.append("out\(output.index) \(best.summary)\(best.passed ? "" : " FAIL")")
                }
                table.append("\(name.padding(toLength: 58, withPad: " ", startingAt: 0)) \(image.padding(toLength: 30, withPad: " ", startingAt: 0)) \(results.joined(separator: "; "))")
            }
        }
        print("Golden parity (max differences per output):\n" + table.joined(separator: "\n"))
        XCTAssertGreaterThanOrEqual(table.count, 30)
    }

    /// Results do not depend on the thread count: every output of every golden model is
    /// byte-identical at 1 and 2 threads (so the parity above holds at 2 threads too), and with the
    /// model compiled at 2 threads (its weights packed on the second thread: CompileWork).
    func testOutputsAreIdenticalAtOneAndTwoThreads() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "model-sized runs need an optimized build: swift test -c release")
        let index = try SharedData.goldenIndex()
        let models = try XCTUnwrap(index["models"] as? [String: [String: Any]])
        var checked = 0
        for name in models.keys.sorted() {
            guard let entry = models[name], entry["status"] as? String == "ok", let image = (entry["images"] as? [String])?.first else { continue }
            let model = try Model(contentsOfFile: SharedData.model("\(name).tflite").path)
            let directory = SharedData.goldens.appendingPathComponent(name)
            let record = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("\(image).json"))) as? [String: Any] ?? [:]
            var compileOptions = ModelOptions()
            compileOptions.numThreads = 2
            let compiledAtTwo = try Model(contentsOfFile: SharedData.model("\(name).tflite").path, options: compileOptions)
            var outputs: [[Data]] = []
            for (model, threads) in [(model, 1), (model, 2), (compiledAtTwo, 2)] {
                let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
                interpreter.waitForThreads()
                for input in record["inputs"] as? [[String: Any]] ?? [] {
                    try interpreter.copyInput(Data(contentsOf: directory.appendingPathComponent(try XCTUnwrap(input["file"] as? String))),
                                              at: try XCTUnwrap(input["index"] as? Int))
                }
                interpreter.invoke()
                outputs.append(try model.outputs.indices.map { try interpreter.outputData(at: $0) })
            }
            XCTAssertEqual(outputs[0], outputs[1], "\(name): outputs differ between 1 and 2 threads")
            XCTAssertEqual(outputs[0], outputs[2], "\(name): outputs differ when the model is compiled at 2 threads")
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 14)
    }

    /// Element-wise comparison under the parity rules of the engine issue.
    func compare(_ ours: Data, _ reference: Data, dtype: String) -> Comparison {
        guard ours.count == reference.count else {
            return Comparison(passed: false, summary: "size \(ours.count) vs \(reference.count) bytes")
        }
        switch dtype {
        case "float32":
            let a = floats(ours), b = floats(reference)
            var worst: Float = 0, worstRelative: Float = 0, passed = true
            for i in 0..<b.count {
                let d = abs(a[i] - b[i])
                if !(d <= 2e-3 + 2e-3 * abs(b[i])) { passed = false }
                if d > worst || d.isNaN { worst = d }
                worstRelative = max(worstRelative, d / (2e-3 + 2e-3 * abs(b[i])))
            }
            return Comparison(passed: passed, summary: String(format: "max|d| %.2e (%.2f of tol)", worst, worstRelative))
        case "uint8", "int8":
            let signed = dtype == "int8"
            var within1 = 0, worst = 0
            for i in 0..<reference.count {
                let x = signed ? Int(Int8(bitPattern: ours[ours.startIndex + i])) : Int(ours[ours.startIndex + i])
                let y = signed ? Int(Int8(bitPattern: reference[reference.startIndex + i])) : Int(reference[reference.startIndex + i])
                let d = abs(x - y)
                if d <= 1 { within1 += 1 }
                worst = max(worst, d)
            }
            let fraction = reference.isEmpty ? 1 : Double(within1) / Double(reference.count)
            return Comparison(passed: fraction >= 0.99 && worst <= 12, summary: String(format: "%.2f%% within 1, max %d units", fraction * 100, worst))
        case "int32", "int64":
            let size = dtype == "int32" ? 4 : 8
            var equal = 0
            let count = reference.count / size
            for i in 0..<count where ours[(ours.startIndex + i * size)..<(ours.startIndex + (i + 1) * size)] == reference[(reference.startIndex + i * size)..<(reference.startIndex + (i + 1) * size)] {
                equal += 1
            }
            let fraction = count == 0 ? 1 : Double(equal) / Double(count)
            return Comparison(passed: fraction >= 0.985, summary: String(format: "%.2f%% equal", fraction * 100))
        default:
            return Comparison(passed: ours == reference, summary: ours == reference ? "identical" : "differs")
        }
    }

    typealias Detection = (box: [Float], cls: Float, score: Float)

    /// SSD post-processing outputs: same count and classes; boxes and scores within 0.01; matched as
    /// a set. For a model whose two official kernel sets (XNNPACK and builtin) do not meet that rule
    /// against each other (traffic_model: its 40 low-confidence detections reorder and change class
    /// between the two), the rule cannot define parity; there the engine must leave no more detections
    /// unmatched against the closer golden than the two goldens leave against each other.
    func compareDetections(_ interpreter: Interpreter, _ outputs: [OutputRecord], directory: URL, image: String) throws -> Comparison {
        let sorted = outputs.sorted { $0.index < $1.index }
        func detections(_ read: (OutputRecord) throws -> [Float]) throws -> [Detection] {
            let boxes = try read(sorted[0]), classes = try read(sorted[1]), scores = try read(sorted[2]), count = try read(sorted[3])
            let n = max(0, min(Int(count.first ?? 0), classes.count, scores.count, boxes.count / 4))
            return (0..<n).map { (Array(boxes[(4 * $0)..<(4 * $0 + 4)]), classes[$0], scores[$0]) }
        }
        let ours = try detections { floats(try interpreter.outputData(at: $0.index)) }
        var references: [(name: String, detections: [Detection])] = []
        for prefix in ["", "builtin."] {
            let reference = try? detections { record in
                let file = prefix.isEmpty ? record.file : record.file.replacingOccurrences(of: ".output_", with: ".builtin.output_")
                return floats(try Data(contentsOf: directory.appendingPathComponent(file)))
            }
            if let reference { references.append((prefix.isEmpty ? "xnnpack" : "builtin", reference)) }
        }
        guard !references.isEmpty else { return Comparison(passed: false, summary: "no reference") }
        let matches = references.map { (name: $0.name, result: match(ours, $0.detections)) }
        let best = matches.min { $0.result.unmatched < $1.result.unmatched } ?? matches[0]
        let summary = String(format: "%d vs %d detections, %d unmatched (%@), box %.4f score %.4f",
                             ours.count, references[0].detections.count, best.result.unmatched, best.name, best.result.worstBox, best.result.worstScore)
        if best.result.unmatched == 0 && ours.count == references[0].detections.count { return Comparison(passed: true, summary: summary) }
        if references.count == 2 {
            let official = match(references[0].detections, references[1].detections).unmatched
            if official > 0 {
                return Comparison(passed: ours.count == references[0].detections.count && best.result.unmatched <= official,
                                  summary: summary + " (LiteRT's two kernel sets: \(official) unmatched)")
            }
        }
        return Comparison(passed: false, summary: summary)
    }

    /// Greedy set matching: each reference detection takes the first unused detection with the same
    /// class, box corners within 0.01 and score within 0.01.
    func match(_ ours: [Detection], _ reference: [Detection]) -> (unmatched: Int, worstBox: Float, worstScore: Float) {
        var unused = Array(ours.indices)
        var unmatched = 0, worstBox: Float = 0, worstScore: Float = 0
        for r in reference {
            let candidate = unused.first { i in
                ours[i].cls == r.cls && zip(ours[i].box, r.box).allSatisfy { abs($0 - $1) <= 0.01 } && abs(ours[i].score - r.score) <= 0.01
            }
            if let c = candidate {
                unused.removeAll { $0 == c }
                worstBox = max(worstBox, zip(ours[c].box, r.box).map { abs($0 - $1) }.max() ?? 0)
                worstScore = max(worstScore, abs(ours[c].score - r.score))
            } else {
                unmatched += 1
            }
        }
        return (unmatched + max(0, ours.count - reference.count), worstBox, worstScore)
    }

    func floats(_ data: Data) -> [Float] {
        data.withUnsafeBytes { raw in (0..<(raw.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) } }
    }
}
