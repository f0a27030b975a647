import Foundation
import TestSupport
import TFLiteFormat
import XCTest

/// Seeded mutation ("fuzz") tests of the format readers: every shared model, its metadata, its
/// associated-files ZIP and its FlexBuffer custom options are corrupted thousands of ways, and every
/// API that reads them must either succeed or throw a ``ModelFormatError`` with a message: no other
/// error, no crash, no hang.
///
/// Environment:
/// - `EDGEVISION_FUZZ_ITERATIONS`: multiplies every iteration count (default 1; `scripts/fuzz-format.sh`
///   sets it much higher).
/// - `EDGEVISION_FUZZ_SEED`: the base seed (decimal or 0x-hex); each model derives its own from it.
/// - `EDGEVISION_FUZZ_VERBOSE=1`: prints every case before running it (to find the case that crashed).
/// - `EDGEVISION_FUZZ_HANG_SECONDS`: a case running longer than this aborts the run, naming the case (default 20).
final class MutationRobustnessTests: XCTestCase {
    // MARK: Configuration

    static let environment = ProcessInfo.processInfo.environment
    static let multiplier: Double = {
        guard let text = environment["EDGEVISION_FUZZ_ITERATIONS"], let value = Double(text), value > 0 else { return 1 }
        return value
    }()
    static let seed: UInt64 = {
        guard let text = environment["EDGEVISION_FUZZ_SEED"]?.lowercased(), !text.isEmpty else { return 0xED6E_5EED }
        if text.hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) ?? 0xED6E_5EED }
        return UInt64(text) ?? 0xED6E_5EED
    }()
    static let verbose = environment["EDGEVISION_FUZZ_VERBOSE"] == "1"
    static let hangSeconds: Double = environment["EDGEVISION_FUZZ_HANG_SECONDS"].flatMap(Double.init) ?? 20

    /// The buffer a mutation produces: `work` itself, or a prefix or suffix of it.
    static func input(_ work: Data, _ mutation: Mutation) -> Data {
        switch mutation.kind {
        case .truncate(let n): return work.prefix(n)
        case .dropFront(let n): return work.suffix(from: work.startIndex + n)
        default: return work
        }
    }

    static func iterations(_ base: Int) -> Int { max(1, Int((Double(base) * multiplier).rounded())) }

    /// A stable per-name seed (FNV-1a; Swift's own hashing is randomized per process).
    static func seed(for name: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in name.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h ^ seed
    }

    // MARK: Whole models

    func testMutatedModelsFailCleanly() throws {
        let files = try SharedData.allModels()
        XCTAssertFalse(files.isEmpty)
        // Biggest first, so the two workers finish together.
        let jobs = try files.map { ($0, (try FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? NSNumber)?.intValue ?? 0) }
            .sorted { $0.1 > $1.1 }.map(\.0)
        let results = Results()
        let watchdog = Watchdog(limit: Self.hangSeconds)
        DispatchQueue.concurrentPerform(iterations: jobs.count) { job in
            let url = jobs[job]
            do {
                let bytes = try Data(contentsOf: url)
                // About 1 ms of CPU per case for the 2-4 MB files (copying the bytes dominates), less for small ones.
                let base = bytes.count > 1_000_000 ? 1_500 : 3_000
                let report = try Self.fuzzModel(name: url.lastPathComponent, bytes: bytes, iterations: Self.iterations(base), worker: job, watchdog: watchdog)
                results.add(report)
            } catch {
                results.add(Report(name: url.lastPathComponent, failures: ["setup failed: \(error)"]))
            }
        }
        watchdog.stop()
        results.check(self)
    }

    static func fuzzModel(name: String, bytes original: Data, iterations: Int, worker: Int, watchdog: Watchdog) throws -> Report {
        let model = try TFLiteModel(data: original)
        var layout = Layout(bytes: [UInt8](original))
        let archiveStart = Layout.archiveStart(layout.bytes)
        let end = archiveStart ?? original.count
        // Structure: everything of the FlatBuffer outside the constant buffers' data.
        let dataRanges = model.buffers.compactMap(\.range).filter { !$0.isEmpty }
        layout.structural = Layout.complement(of: dataRanges, in: 0..<end)
        layout.hot = [0..<min(original.count, 512)]
        if let entry = model.metadataEntries.first(where: { $0.name == ModelMetadata.bufferName }),
           entry.buffer < model.buffers.count, let range = model.buffers[entry.buffer].range {
            layout.secondary.append(range)
        }
        if let start = archiveStart { layout.secondary.append(start..<original.count) }
        layout.findTables()

        var report = Report(name: name)
        var rng = SeededGenerator(seed: Self.seed(for: name))
        var work = original
        for iteration in 0..<iterations {
            let mutation = layout.mutate(&work, rng: &rng)
            let context = CaseContext(name: name, iteration: iteration, kind: mutation.kind)
            if Self.verbose { FileHandle.standardError.write(Data("fuzz: \(context)\n".utf8)) }
            watchdog.begin(worker, context)
            let input = Self.input(work, mutation)
            Self.exerciseModel(input, report: &report, context: context)
            watchdog.end(worker)
            mutation.undo(&work)
        }
        return report
    }

    /// Runs every reader over `data`.
    static func exerciseModel(_ data: Data, report: inout Report, context: CaseContext) {
        report.cases += 1
        let model: TFLiteModel
        do {
            model = try TFLiteModel(data: data)
        } catch let error as ModelFormatError {
            report.rejected(error, context)
            return
        } catch {
            report.fail(context, "TFLiteModel(data:)", error)
            return
        }
        report.parsed += 1
        report.step(context, "metadata()") { _ = try model.metadata() }
        var archive: ZipArchive?
        report.step(context, "associatedFiles()") { archive = try model.associatedFiles() }
        for entry in archive?.entries ?? [] {
            report.step(context, "contents(of: \(entry.name))") { _ = try archive?.contents(of: entry) }
        }
        for output in model.mainSubgraph.outputs.indices {
            report.step(context, "labelFiles(forOutput: \(output))") { _ = try model.labelFiles(forOutput: output) }
        }
        let analysis = ModelAnalysis(model: model)
        report.checksum &+= analysis.macs &+ analysis.opCounts.count
        // Touch the first and last byte of every buffer the model hands out.
        for index in model.buffers.indices {
            if let bytes = model.bufferBytes(index), let first = bytes.first, let last = bytes.last {
                report.checksum &+= Int(first) &+ Int(last)
            }
        }
        for subgraph in model.subgraphs {
            for op in subgraph.operators where op.customOptions != nil {
                report.step(context, "FlexBuffer.decode(custom options)") { _ = try FlexBuffer.decode(model.customOptions(of: op)) }
            }
        }
    }

    // MARK: FlexBuffer custom options

    func testMutatedDetectionPostProcessOptionsFailCleanly() throws {
        var blobs: [[UInt8]] = []
        for name in ["coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite", "traffic_model.tflite"] {
            let model = try TFLiteModel(contentsOfFile: SharedData.model(name).path)
            let op = try XCTUnwrap(model.mainSubgraph.operators.first { model.operatorCode(of: $0).customCode == "TFLite_Detection_PostProcess" }, name)
            let options = Array(model.customOptions(of: op))
            XCTAssertNoThrow(try FlexBuffer.decode(Data(options)), name)
            if !blobs.contains(options) { blobs.append(options) }
        }
        let results = Results()
        for (b, original) in blobs.enumerated() {
            let name = "TFLite_Detection_PostProcess options #\(b)"
            var report = Report(name: name)
            var rng = SeededGenerator(seed: Self.seed(for: name))
            var layout = Layout(bytes: original)
            layout.structural = [0..<original.count]
            // The root (value, type, width) and the map's keys/values sit at the end.
            layout.hot = [max(0, original.count - 24)..<original.count]
            var work = Data(original)
            for iteration in 0..<Self.iterations(5_000) {
                let mutation: Mutation
                if Int.random(in: 0..<10, using: &rng) == 0 {
                    // Drop bytes at the front: every backward offset now lands elsewhere.
                    mutation = Mutation(kind: .dropFront(Int.random(in: 1...max(1, original.count - 1), using: &rng)))
                } else {
                    mutation = layout.mutate(&work, rng: &rng)
                }
                let context = CaseContext(name: name, iteration: iteration, kind: mutation.kind)
                if Self.verbose { FileHandle.standardError.write(Data("fuzz: \(context)\n".utf8)) }
                let input = Self.input(work, mutation)
                report.cases += 1
                do {
                    _ = try FlexBuffer.decode(input)
                    report.parsed += 1
                } catch let error as ModelFormatError {
                    report.rejected(error, context)
                    if error.code != .invalidFlexBuffer { report.failures.append("\(context): code \(error.code), expected invalidFlexBuffer") }
                } catch {
                    report.fail(context, "FlexBuffer.decode", error)
                }
                mutation.undo(&work)
            }
            results.add(report)
        }
        results.check(self)
    }

    // MARK: Metadata

    func testMutatedMetadataFailsCleanly() throws {
        var blobs: [(String, [UInt8])] = []
        for url in try SharedData.allModels() {
            let model = try TFLiteModel(contentsOfFile: url.path)
            guard let entry = model.metadataEntries.first(where: { $0.name == ModelMetadata.bufferName }),
                  let bytes = model.bufferBytes(entry.buffer) else { continue }
            let blob = Array(bytes)
            if !blobs.contains(where: { $0.1 == blob }) { blobs.append((url.lastPathComponent, blob)) }
        }
        XCTAssertGreaterThanOrEqual(blobs.count, 5)
        let results = Results()
        for (model, original) in blobs {
            let name = "metadata of \(model)"
            var report = Report(name: name)
            var rng = SeededGenerator(seed: Self.seed(for: name))
            var layout = Layout(bytes: original)
            layout.structural = [0..<original.count]
            layout.hot = [0..<min(original.count, 256)]
            layout.findTables()
            var work = Data(original)
            for iteration in 0..<Self.iterations(2_500) {
                let mutation = layout.mutate(&work, rng: &rng)
                let context = CaseContext(name: name, iteration: iteration, kind: mutation.kind)
                if Self.verbose { FileHandle.standardError.write(Data("fuzz: \(context)\n".utf8)) }
                let input = Self.input(work, mutation)
                report.cases += 1
                do {
                    _ = try input.withUnsafeBytes { try ModelMetadata(bytes: $0) }
                    report.parsed += 1
                } catch let error as ModelFormatError {
                    report.rejected(error, context)
                    if error.code != .invalidMetadata && error.code != .unsupported {
                        report.failures.append("\(context): code \(error.code), expected invalidMetadata or unsupported")
                    }
                } catch {
                    report.fail(context, "ModelMetadata(bytes:)", error)
                }
                mutation.undo(&work)
            }
            results.add(report)
        }
        results.check(self)
    }

    // MARK: Associated-files ZIP

    func testMutatedAssociatedFilesArchiveFailsCleanly() throws {
        var found: [(name: String, bytes: Data, archiveStart: Int)] = []
        for url in try SharedData.allModels() {
            let original = try Data(contentsOf: url)
            guard let start = Layout.archiveStart([UInt8](original)) else { continue }
            XCTAssertNotNil(try TFLiteModel(data: original).associatedFiles(), url.lastPathComponent)
            found.append((url.lastPathComponent, original, start))
        }
        XCTAssertGreaterThanOrEqual(found.count, 5)
        let jobs = found
        let results = Results()
        let watchdog = Watchdog(limit: Self.hangSeconds)
        DispatchQueue.concurrentPerform(iterations: jobs.count) { job in
            let (name, original, start) = jobs[job]
            results.add(Self.fuzzArchive(name: name, bytes: original, archiveStart: start, iterations: Self.iterations(3_000),
                                         worker: job, watchdog: watchdog))
        }
        watchdog.stop()
        results.check(self)
    }

    static func fuzzArchive(name model: String, bytes original: Data, archiveStart start: Int, iterations: Int,
                            worker: Int, watchdog: Watchdog) -> Report {
        // The archive plus some FlatBuffer bytes before it (so the archive has a prefix, as in the file).
        let regionStart = max(0, start - 64)
        let region = [UInt8](original[regionStart...])
        var layout = Layout(bytes: region)
        layout.structural = [(start - regionStart)..<region.count]
        // End of central directory and the central directory, then the local headers.
        layout.hot = Layout.zipDirectory(region).map { [$0] } ?? []
        layout.secondary = Layout.localHeaders(region).map { $0..<min(region.count, $0 + 30) }

        let name = "ZIP of \(model)"
        var report = Report(name: name)
        var rng = SeededGenerator(seed: Self.seed(for: name))
        var work = Data(region)
        var full = original
        for iteration in 0..<iterations {
            let mutation = layout.mutate(&work, rng: &rng)
            let context = CaseContext(name: name, iteration: iteration, kind: mutation.kind)
            if Self.verbose { FileHandle.standardError.write(Data("fuzz: \(context)\n".utf8)) }
            watchdog.begin(worker, context)
            let input = Self.input(work, mutation)
            report.cases += 1
            var archive: ZipArchive?
            do {
                archive = try ZipArchive(data: try ModelData(input))
                report.parsed += 1
            } catch let error as ModelFormatError {
                report.rejected(error, context)
            } catch {
                report.fail(context, "ZipArchive(data:)", error)
            }
            for entry in archive?.entries ?? [] {
                report.step(context, "contents(of: \(entry.name))") { _ = try archive?.contents(of: entry) }
            }
            // One case in 40 goes through the whole model: labels of every output.
            if iteration % 40 == 0 {
                full.replaceSubrange(regionStart..<full.count, with: input)
                Self.exerciseModel(full, report: &report, context: context)
            }
            watchdog.end(worker)
            mutation.undo(&work)
        }
        return report
    }
}

// MARK: - Reports

/// What one fuzzed input produced.
struct Report: Sendable {
    var name: String
    var cases = 0
    var parsed = 0
    var errorCodes: [String: Int] = [:]
    var failures: [String] = []
    var checksum = 0

    init(name: String, failures: [String] = []) {
        self.name = name
        self.failures = failures
    }

    mutating func rejected(_ error: ModelFormatError, _ context: CaseContext) {
        errorCodes[error.code.description, default: 0] += 1
        if error.message.isEmpty { failures.append("\(context): ModelFormatError(\(error.code)) with an empty message") }
    }

    mutating func fail(_ context: CaseContext, _ step: String, _ error: Error) {
        failures.append("\(context): \(step) threw \(type(of: error)), not ModelFormatError: \(error)")
    }

    /// Runs one reader step: it may succeed or throw a ModelFormatError with a message.
    mutating func step(_ context: CaseContext, _ name: @autoclosure () -> String, _ body: () throws -> Void) {
        do {
            try body()
        } catch let error as ModelFormatError {
            if error.message.isEmpty { failures.append("\(context): \(name()): ModelFormatError(\(error.code)) with an empty message") }
        } catch {
            fail(context, name(), error)
        }
    }
}

/// Reports gathered from concurrent workers, checked on the test's thread.
final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var reports: [Report] = []
    private let start = Date()
    private let startCPU = clock()

    func add(_ report: Report) {
        lock.lock()
        reports.append(report)
        lock.unlock()
    }

    func check(_ test: XCTestCase, file: StaticString = #filePath, line: UInt = #line) {
        lock.lock()
        let all = reports.sorted { $0.name < $1.name }
        lock.unlock()
        for r in all {
            let codes = r.errorCodes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            print("fuzz: \(r.name): \(r.cases) cases, \(r.parsed) accepted; rejected: \(codes)")
            for failure in r.failures.prefix(5) { XCTFail(failure, file: file, line: line) }
            if r.failures.count > 5 { XCTFail("\(r.name): \(r.failures.count - 5) more failures", file: file, line: line) }
        }
        let total = all.reduce(0) { $0 + $1.cases }
        let wall = Date().timeIntervalSince(start), cpu = Double(clock() - startCPU) / Double(CLOCKS_PER_SEC)
        print("fuzz: \(total) cases in all (seed \(MutationRobustnessTests.seed), multiplier \(MutationRobustnessTests.multiplier)) in \(String(format: "%.1f", wall)) s, \(String(format: "%.1f", cpu)) s of CPU")
    }
}

/// Aborts the run, naming the case, when one case runs longer than `limit` seconds (a hang would
/// otherwise stall the test run without saying where).
final class Watchdog: @unchecked Sendable {
    private let lock = NSLock()
    private var running: [Int: (start: Date, context: CaseContext)] = [:]
    private var stopped = false

    init(limit: Double) {
        Thread.detachNewThread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                lock.lock()
                if stopped { lock.unlock(); return }
                let now = Date()
                let stuck = running.values.first { now.timeIntervalSince($0.start) > limit }
                lock.unlock()
                if let stuck {
                    let message = "fuzz: HANG: a case has run for more than \(limit) s: \(stuck.context)\n"
                    FileHandle.standardError.write(Data(message.utf8))
                    fatalError(message)
                }
            }
        }
    }

    func begin(_ worker: Int, _ context: CaseContext) {
        lock.lock()
        running[worker] = (Date(), context)
        lock.unlock()
    }

    func end(_ worker: Int) {
        lock.lock()
        running[worker] = nil
        lock.unlock()
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }
}

// MARK: - Mutations

/// Names one fuzz case: the input, the seed, the case number and the mutation.
struct CaseContext: Sendable, CustomStringConvertible {
    let name: String
    let iteration: Int
    let kind: Mutation.Kind

    var description: String {
        "\(name) seed \(MutationRobustnessTests.seed) case \(iteration) [\(Mutation(kind: kind))]"
    }
}

/// One mutation of a buffer: the bytes it changed (to undo it) or the length it truncates to.
struct Mutation: CustomStringConvertible {
    enum Kind: Sendable {
        case bitFlips([Int])
        case truncate(Int)
        case dropFront(Int)
        case word(at: Int, value: UInt32)
        case vtableEntry(vtable: Int, at: Int, value: UInt16)
        case tableField(table: Int, at: Int, value: UInt32)
        case fill(at: Int, count: Int, byte: UInt8)
        case copy(from: Int, to: Int, count: Int)
    }
    var kind: Kind
    var saved: [(Int, UInt8)] = []

    func undo(_ data: inout Data) {
        guard !saved.isEmpty else { return }
        data.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            for (offset, byte) in saved.reversed() { raw[offset] = byte }
        }
    }

    var description: String {
        switch kind {
        case .bitFlips(let bits): return "flip bits \(bits.map { "\($0 / 8).\($0 % 8)" }.joined(separator: ","))"
        case .truncate(let n): return "truncate to \(n) bytes"
        case .dropFront(let n): return "drop the first \(n) bytes"
        case .word(let at, let value): return "u32 at \(at) = 0x\(String(value, radix: 16))"
        case .vtableEntry(let vtable, let at, let value): return "vtable at \(vtable): u16 at \(at) = \(value)"
        case .tableField(let table, let at, let value): return "table at \(table): field at \(at) = 0x\(String(value, radix: 16))"
        case .fill(let at, let count, let byte): return "\(count) bytes at \(at) = 0x\(String(byte, radix: 16))"
        case .copy(let from, let to, let count): return "copy \(count) bytes from \(from) to \(to)"
        }
    }
}

/// Where a buffer's structure lies, to aim mutations at it rather than at weight bytes.
struct Layout {
    let bytes: [UInt8]
    /// Ranges holding structure (tables, vtables, vectors of offsets, strings); most mutations go here.
    var structural: [Range<Int>] = []
    /// Especially interesting ranges (the root, the ZIP directory).
    var hot: [Range<Int>] = []
    /// Other ranges worth a share (the metadata buffer, the ZIP archive, local headers).
    var secondary: [Range<Int>] = []
    /// Detected tables: (table position, vtable position).
    var tables: [(table: Int, vtable: Int)] = []

    init(bytes: [UInt8]) { self.bytes = bytes }

    func u16(_ p: Int) -> Int { Int(bytes[p]) | Int(bytes[p + 1]) << 8 }
    func u32(_ p: Int) -> Int { u16(p) | u16(p + 2) << 16 }

    /// Finds (heuristically) every table in the structural ranges: a 4-aligned position whose
    /// vtable offset leads to a plausible vtable (even size, entries inside the table).
    mutating func findTables() {
        let n = bytes.count
        for range in structural {
            var t = (range.lowerBound + 3) & ~3
            while t + 4 <= range.upperBound {
                defer { t += 4 }
                let soffset = Int(Int32(truncatingIfNeeded: UInt32(u32(t))))
                let vt = t - soffset
                guard soffset != 0, vt >= 0, vt % 2 == 0, vt + 4 <= n else { continue }
                let vs = u16(vt), ts = u16(vt + 2)
                guard vs >= 4, vs % 2 == 0, vs <= 4 + 2 * 32, vt + vs <= n, ts >= 4, ts <= 1024, t + ts <= n else { continue }
                var plausible = true
                var present = 0
                for e in stride(from: vt + 4, to: vt + vs, by: 2) {
                    let o = u16(e)
                    if o != 0 && (o < 4 || o >= ts) { plausible = false; break }
                    if o != 0 { present += 1 }
                }
                if plausible && present > 0 { tables.append((t, vt)) }
            }
        }
    }

    /// The start of the ZIP archive appended to the file: its first local header (the central
    /// directory's offsets may be relative to the archive or, as the metadata writer's are, to the file).
    static func archiveStart(_ bytes: [UInt8]) -> Int? {
        guard let (record, directoryStart) = eocd(bytes).map({ ($0.0, $0.1) }) else { return nil }
        let layout = Layout(bytes: bytes)
        let prefix = directoryStart - layout.u32(record + 16)
        guard prefix >= 0 else { return nil }
        var start = directoryStart
        var q = directoryStart
        for _ in 0..<layout.u16(record + 10) {
            guard q + 46 <= record, layout.u32(q) == 0x0201_4b50 else { break }
            let local = layout.u32(q + 42) + prefix
            if local < start { start = local }
            q += 46 + layout.u16(q + 28) + layout.u16(q + 30) + layout.u16(q + 32)
        }
        return start
    }

    /// (end-of-central-directory position, central directory start).
    static func eocd(_ bytes: [UInt8]) -> (Int, Int)? {
        let n = bytes.count
        guard n >= 22 else { return nil }
        let layout = Layout(bytes: bytes)
        var p = n - 22
        while p >= max(0, n - 22 - 65_535) {
            if bytes[p] == 0x50, bytes[p + 1] == 0x4b, bytes[p + 2] == 0x05, bytes[p + 3] == 0x06, p + 22 + layout.u16(p + 20) == n {
                let size = layout.u32(p + 12)
                return size <= p ? (p, p - size) : nil
            }
            p -= 1
        }
        return nil
    }

    /// The central directory through the end of the buffer.
    static func zipDirectory(_ bytes: [UInt8]) -> Range<Int>? {
        eocd(bytes).map { $0.1..<bytes.count }
    }

    /// Positions of local file headers ("PK\3\4").
    static func localHeaders(_ bytes: [UInt8]) -> [Int] {
        guard bytes.count >= 4 else { return [] }
        return (0..<(bytes.count - 3)).filter { bytes[$0] == 0x50 && bytes[$0 + 1] == 0x4b && bytes[$0 + 2] == 3 && bytes[$0 + 3] == 4 }
    }

    /// The ranges of `whole` not covered by `ranges`.
    static func complement(of ranges: [Range<Int>], in whole: Range<Int>) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var cursor = whole.lowerBound
        for r in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            let lower = max(r.lowerBound, whole.lowerBound), upper = min(r.upperBound, whole.upperBound)
            guard lower < upper else { continue }
            if lower > cursor { result.append(cursor..<lower) }
            cursor = max(cursor, upper)
        }
        if cursor < whole.upperBound { result.append(cursor..<whole.upperBound) }
        return result
    }

    static func pick(in ranges: [Range<Int>], rng: inout SeededGenerator) -> Int? {
        let total = ranges.reduce(0) { $0 + $1.count }
        guard total > 0 else { return nil }
        var k = Int.random(in: 0..<total, using: &rng)
        for r in ranges {
            if k < r.count { return r.lowerBound + k }
            k -= r.count
        }
        return nil
    }

    /// A position to mutate, biased to structure.
    func position(_ rng: inout SeededGenerator) -> Int {
        let n = bytes.count
        let roll = Int.random(in: 0..<100, using: &rng)
        let choice: Int?
        switch roll {
        case 0..<55: choice = Layout.pick(in: structural, rng: &rng)
        case 55..<70: choice = Layout.pick(in: hot, rng: &rng)
        case 70..<80: choice = Layout.pick(in: secondary, rng: &rng)
        case 80..<92: choice = Layout.pick(in: [0..<min(n, 65_536)], rng: &rng)
        default: choice = nil
        }
        return choice ?? Int.random(in: 0..<max(n, 1), using: &rng)
    }

    /// Values that break offsets and lengths: zero, all ones, the largest signed value, small
    /// values, and values pointing just past the end (relative to `position`, or absolute).
    func specialWord(at position: Int, _ rng: inout SeededGenerator) -> UInt32 {
        let n = bytes.count
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: return 0
        case 1: return 0xFFFF_FFFF
        case 2: return 0x7FFF_FFFF
        case 3: return 0x8000_0000
        case 4: return UInt32.random(in: 1...16, using: &rng)
        case 5: return UInt32(truncatingIfNeeded: max(0, n - position) + Int.random(in: 0...8, using: &rng))
        case 6: return UInt32(truncatingIfNeeded: n + Int.random(in: -4...4, using: &rng))
        case 7: return UInt32(truncatingIfNeeded: -Int.random(in: 1...64, using: &rng))
        case 8:
            // The original value nudged (an offset or length slightly off).
            let original = position + 4 <= n ? UInt32(u32(position)) : 0
            return original &+ UInt32(bitPattern: Int32.random(in: -8...8, using: &rng))
        default: return UInt32.random(in: 0...UInt32.max, using: &rng)
        }
    }

    /// Applies one random mutation to `data` (in place unless it truncates).
    func mutate(_ data: inout Data, rng: inout SeededGenerator) -> Mutation {
        let n = bytes.count
        guard n > 0 else { return Mutation(kind: .truncate(0)) }
        var mutation: Mutation
        let roll = Int.random(in: 0..<100, using: &rng)
        switch roll {
        case 0..<20:
            let first = position(&rng)
            let count = Int.random(in: 1...8, using: &rng)
            let bits = (0..<count).map { i -> Int in
                let p = i == 0 || Bool.random(using: &rng) ? first : min(n - 1, max(0, first + Int.random(in: -64...64, using: &rng)))
                return p * 8 + Int.random(in: 0..<8, using: &rng)
            }
            mutation = Mutation(kind: .bitFlips(bits))
        case 20..<28:
            let point = Bool.random(using: &rng) ? Int.random(in: 0..<n, using: &rng) : position(&rng)
            return Mutation(kind: .truncate(point))
        case 28..<53:
            let p = min(position(&rng) & ~3, max(0, n - 4))
            mutation = Mutation(kind: .word(at: p, value: specialWord(at: p, &rng)))
        case 53..<70 where !tables.isEmpty:
            let vtable = tables[Int.random(in: 0..<tables.count, using: &rng)].vtable
            let entries = u16(vtable) / 2
            let entry = Int.random(in: 0..<max(entries, 1), using: &rng)
            let at = vtable + 2 * entry
            let ts = u16(vtable + 2)
            let values: [UInt16] = [0, 1, 2, 3, 5, UInt16(ts), UInt16(ts + 2), UInt16(ts - 1), 0xFFFF, 0x8000, 0xFFFE,
                                    UInt16(truncatingIfNeeded: u16(at) &+ 2), UInt16.random(in: 0...UInt16.max, using: &rng)]
            mutation = Mutation(kind: .vtableEntry(vtable: vtable, at: at, value: values[Int.random(in: 0..<values.count, using: &rng)]))
        case 70..<87 where !tables.isEmpty:
            let (table, vtable) = tables[Int.random(in: 0..<tables.count, using: &rng)]
            let entries = (u16(vtable) - 4) / 2
            let present = (0..<max(entries, 0)).map { u16(vtable + 4 + 2 * $0) }.filter { $0 != 0 }
            let field = present.isEmpty ? 0 : present[Int.random(in: 0..<present.count, using: &rng)]
            let at = min(table + field, max(0, n - 4))
            mutation = Mutation(kind: .tableField(table: table, at: at, value: specialWord(at: at, &rng)))
        case 53..<87:
            // No tables found (FlexBuffers, ZIP): one or two bytes set to a width, a type code or an extreme.
            let p = position(&rng)
            let values: [UInt8] = [0, 1, 2, 4, 8, 0x7F, 0x80, 0xFF, UInt8(Int.random(in: 0..<64, using: &rng) << 2 | Int.random(in: 0..<4, using: &rng))]
            mutation = Mutation(kind: .fill(at: p, count: min(Int.random(in: 1...2, using: &rng), n - p),
                                            byte: values[Int.random(in: 0..<values.count, using: &rng)]))
        case 87..<95:
            let p = position(&rng)
            let count = min(Int.random(in: 1...16, using: &rng), n - p)
            let fills: [UInt8] = [0, 0xFF, 0x7F, 0x80, 1, UInt8.random(in: 0...255, using: &rng)]
            mutation = Mutation(kind: .fill(at: p, count: count, byte: fills[Int.random(in: 0..<fills.count, using: &rng)]))
        default:
            let from = position(&rng), to = position(&rng)
            let count = min(Int.random(in: 4...16, using: &rng), n - from, n - to)
            mutation = Mutation(kind: .copy(from: from, to: to, count: max(count, 0)))
        }
        apply(&mutation, to: &data)
        return mutation
    }

    func apply(_ mutation: inout Mutation, to data: inout Data) {
        var saved: [(Int, UInt8)] = []
        let source = bytes
        data.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            func set(_ offset: Int, _ byte: UInt8) {
                guard offset >= 0, offset < raw.count else { return }
                saved.append((offset, raw[offset]))
                raw[offset] = byte
            }
            func setLE<T: FixedWidthInteger>(_ offset: Int, _ value: T) {
                for i in 0..<MemoryLayout<T>.size { set(offset + i, UInt8(truncatingIfNeeded: value >> (8 * i))) }
            }
            switch mutation.kind {
            case .bitFlips(let bits):
                for bit in bits { set(bit / 8, raw[bit / 8] ^ UInt8(1 << (bit % 8))) }
            case .word(let at, let value), .tableField(_, let at, let value):
                setLE(at, value)
            case .vtableEntry(_, let at, let value):
                setLE(at, value)
            case .fill(let at, let count, let byte):
                for i in 0..<max(count, 0) { set(at + i, byte) }
            case .copy(let from, let to, let count):
                for i in 0..<max(count, 0) where from + i < source.count { set(to + i, source[from + i]) }
            case .truncate, .dropFront:
                break
            }
        }
        mutation.saved = saved
    }
}
