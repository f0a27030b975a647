import Foundation
import InferenceEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `edgevision bench MODEL [--threads N] [--runs N] [--warmup N] [--input FILE ...] [--json]`:
/// times `Interpreter.invoke()` the way ../shared/reference/bench_anchor.py times LiteRT
/// (inputs set once, warm-up runs, then timed runs of invoke only).
enum BenchCommand {
    static let command = Command(
        name: "bench",
        summary: "Measure a model's invoke latency (after warm-up), load time, arena size and peak memory.",
        usage: "bench MODEL [--threads N] [--runs N] [--warmup N] [--input FILE ...] [--kernels SET] [--profile] [--json]",
        options: [
            .value("threads", "N", "Threads for one invoke, and for the compile's weight packing (default 1)."),
            .value("runs", "N", "Timed invokes (default 50)."),
            .value("warmup", "N", "Untimed invokes before the timed ones (default 10; the first invoke, part of loadMs, is not counted)."),
            .value("input", "FILE", "Raw little-endian tensor bytes for the next model input, in the model's input order (the goldens' *.input.bin format). Repeat once per input; without --input every input is zeros.", repeatable: true),
            .value("kernels", "SET", "Kernel set: optimized (default: the best micro-kernels for this CPU), avx512, avx2, portable (capped instruction sets), or reference (the TFLite-semantics reference kernels, for bisecting)."),
            .flag("profile", "After the timed runs, print each operator's median time over --runs profiled invokes, slowest first (with --json: an extra \"operators\" array)."),
            .flag("json", "Print one JSON object: {\"model\",\"threads\",\"runs\",\"medianMs\",\"p90Ms\",\"loadMs\",\"coldLoadMs\",\"arenaBytes\",\"peakLiveBytes\",\"bandWindowBytes\",\"peakRSSBytes\"}."),
        ],
        example: """
        edgevision bench ../shared/models/mobilenet_v1_0.25_128_quant.tflite --runs 20
        edgevision bench ../shared/models/mobilenet_v2_1.0_224_quant.tflite --input ../shared/reference/goldens/mobilenet_v2_1.0_224_quant/burger.input.bin --threads 2 --json
        """,
        run: run)

    static func run(_ args: ParsedArguments) throws {
        let path = try args.requirePositionals(["MODEL"])[0]
        let threads = try args.int("threads") ?? 1
        guard threads >= 1 else { throw UsageError("--threads must be at least 1") }
        let runs = try args.int("runs") ?? 50
        guard runs >= 1 else { throw UsageError("--runs must be at least 1") }
        let warmup = try args.int("warmup") ?? 10
        guard warmup >= 0 else { throw UsageError("--warmup must be at least 0") }
        let inputFiles = args.values("input")
        let json = args.flag("json")
        let profile = args.flag("profile")
        var modelOptions = ModelOptions()
        modelOptions.numThreads = threads   // the weights packed on the invoke's threads, as a task model's are
        if let name = args.value("kernels") {
            guard let selection = KernelSelection(rawValue: name) else {
                throw UsageError("--kernels must be one of \(KernelSelection.allCases.map(\.rawValue).joined(separator: ", ")), not '\(name)'")
            }
            modelOptions.kernels = selection
        }

        // Read the input files before the load clock starts.
        var inputs: [Data] = []
        for file in inputFiles {
            do {
                inputs.append(try Data(contentsOf: URL(fileURLWithPath: file)))
            } catch {
                throw CLIError("cannot read input file '\(file)': \(error.localizedDescription)")
            }
        }

        // A load = file -> model -> interpreter -> inputs -> first invoke done. The first load in
        // the process also pays the dynamic linker's lazy symbol binding and cold code pages
        // (coldLoadMs); loadMs is a second load in the warm process, as LiteRT's load is timed in
        // a Python process that has already imported and used the runtime.
        func load() throws -> (Model, Interpreter, Double) {
            let start = DispatchTime.now().uptimeNanoseconds
            let model = try Model(contentsOfFile: path, options: modelOptions)
            guard inputs.isEmpty || inputs.count == model.inputs.count else {
                throw UsageError("the model has \(model.inputs.count) inputs (\(model.inputs.map { "\($0.name): \($0.type) \($0.shape)" }.joined(separator: ", "))) but \(inputs.count) --input files were given")
            }
            let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
            if inputs.isEmpty {
                for index in model.inputs.indices {
                    try interpreter.withInputBuffer(at: index) { buffer in
                        if let base = buffer.baseAddress { memset(base, 0, buffer.count) }
                    }
                }
            } else {
                for (index, data) in inputs.enumerated() { try interpreter.copyInput(data, at: index) }
            }
            interpreter.invoke()
            return (model, interpreter, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        let coldLoadMs = try load().2
        let (model, interpreter, loadMs) = try load()
        interpreter.waitForThreads()

        for _ in 0..<warmup { interpreter.invoke() }
        var samples: [Double] = []
        samples.reserveCapacity(runs)
        for _ in 0..<runs {
            let t0 = DispatchTime.now().uptimeNanoseconds
            interpreter.invoke()
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
        }
        let sorted = samples.sorted()
        let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        let p90 = sorted[min(sorted.count - 1, Int((0.9 * Double(sorted.count - 1)).rounded()))]
        let peakRSS = peakRSSBytes()
        let name = URL(fileURLWithPath: path).lastPathComponent
        let operators = profile ? profileOperators(interpreter, runs: runs) : []

        if json {
            let object = JSON.object([
                ("model", .string(name)),
                ("threads", .int(threads)),
                ("runs", .int(runs)),
                ("medianMs", .double(median)),
                ("p90Ms", .double(p90)),
                ("loadMs", .double(loadMs)),
                ("coldLoadMs", .double(coldLoadMs)),
                ("arenaBytes", .int(model.arenaByteCount)),
                ("peakLiveBytes", .int(model.peakLiveByteCount)),
                ("bandWindowBytes", .int(model.windowByteCount(threads: threads) * threads)),
                ("peakRSSBytes", .int(peakRSS)),
            ] + (profile ? [("operators", .array(operators.map { op in
                JSON.object([("node", .int(op.node)), ("op", .string(op.name)), ("kernel", .string(op.kernel)), ("medianMs", .double(op.ms))])
            }))] : []))
            print(object.serialized)
        } else {
            let rows: [(String, String)] = [
                ("model", name),
                ("threads", "\(threads)"),
                ("runs", "\(runs) (after \(warmup) warm-up)"),
                ("median", String(format: "%.3f ms", median)),
                ("p90", String(format: "%.3f ms", p90)),
                ("min", String(format: "%.3f ms", sorted[0])),
                ("load", String(format: "%.1f ms (model + interpreter + first invoke; %.1f ms as the process's first load)", loadMs, coldLoadMs)),
                ("arena", String(format: "%.2f MiB (the most bytes alive at one step: %.2f MiB)",
                                 Double(model.arenaByteCount) / 1_048_576, Double(model.peakLiveByteCount) / 1_048_576)),
                ("windows", String(format: "%.2f MiB (per-thread windows of banded blocks and split pairs, outside the arena)",
                                   Double(model.windowByteCount(threads: threads) * threads) / 1_048_576)),
                ("peak RSS", String(format: "%.1f MiB", Double(peakRSS) / 1_048_576)),
            ]
            let width = rows.map { $0.0.count }.max() ?? 0
            for (key, value) in rows { print(key.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value) }
            if profile {
                let total = operators.reduce(0) { $0 + $1.ms }
                print("\nper operator (median of \(runs) profiled invokes; sum \(String(format: "%.3f", total)) ms):")
                for op in operators.sorted(by: { $0.ms > $1.ms }) {
                    print(String(format: "%8.3f ms %5.1f%%  node %3d  ", op.ms, total > 0 ? op.ms / total * 100 : 0, op.node) + op.name + "  (" + op.kernel + ")")
                }
            }
        }
    }

    /// Each operator's median time over `runs` profiled invokes, in execution order.
    static func profileOperators(_ interpreter: Interpreter, runs: Int) -> [(node: Int, name: String, kernel: String, ms: Double)] {
        var samples: [[Double]] = []
        var first: [OperatorTiming] = []
        for _ in 0..<runs {
            let timings = interpreter.invokeProfiled()
            if samples.isEmpty {
                first = timings
                samples = timings.map { _ in [] }
            }
            for (i, t) in timings.enumerated() where i < samples.count { samples[i].append(t.seconds * 1000) }
        }
        return first.enumerated().map { i, t in
            let sorted = samples[i].sorted()
            return (t.nodeIndex, t.operatorName, t.kernel, sorted.isEmpty ? 0 : sorted[sorted.count / 2])
        }
    }

    /// Peak resident set size of this process in bytes: getrusage(RUSAGE_SELF).ru_maxrss (KiB on
    /// Linux, bytes on macOS). On Linux ru_maxrss survives execve, so a child of a large process
    /// (a Python benchmark driver) would report its parent's peak; VmHWM from /proc/self/status is
    /// this program's own peak and is preferred when it is readable.
    static func peakRSSBytes() -> Int {
        var usage = rusage()
        #if os(Linux)
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
           let kib = Int(line.dropFirst("VmHWM:".count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") {
            return kib * 1024
        }
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        return Int(usage.ru_maxrss) * 1024
        #else
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
        return Int(usage.ru_maxrss)
        #endif
    }
}
