import Foundation
import InferenceEngine
import TestSupport
import XCTest

final class MemoryPlannerTests: XCTestCase {
    func testBuffersAliveTogetherNeverOverlapAndDeadOnesAreReused() {
        // A chain a -> b -> c -> d: only neighbours are alive together.
        let buffers = [
            PlannedBuffer(size: 1000, firstUse: 0, lastUse: 1),
            PlannedBuffer(size: 640, firstUse: 1, lastUse: 2),
            PlannedBuffer(size: 1000, firstUse: 2, lastUse: 3),
            PlannedBuffer(size: 64, firstUse: 3, lastUse: 4),
        ]
        let (offsets, size) = GreedyMemoryPlanner().plan(buffers)
        for i in buffers.indices {
            for j in buffers.indices where i < j && buffers[i].overlapsInTime(buffers[j]) {
                let a = offsets[i]..<(offsets[i] + buffers[i].size), b = offsets[j]..<(offsets[j] + buffers[j].size)
                XCTAssertFalse(a.overlaps(b), "buffers \(i) and \(j) overlap")
            }
        }
        // The peak is two live buffers (1024 + 640 after alignment); the two 1000-byte buffers share space.
        XCTAssertEqual(size, 1024 + 640)
        XCTAssertEqual(offsets[0], offsets[2])
    }

    func testRandomPlansAreValid() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let buffers = (0..<20).map { _ -> PlannedBuffer in
                let first = Int.random(in: 0..<30, using: &generator)
                return PlannedBuffer(size: Int.random(in: 1...5000, using: &generator), firstUse: first, lastUse: first + Int.random(in: 0..<6, using: &generator),
                                     writtenInHalves: Bool.random(using: &generator))
            }
            let (offsets, size) = GreedyMemoryPlanner().plan(buffers)
            var peak = 0
            for step in 0..<36 {
                peak = max(peak, buffers.filter { $0.firstUse <= step && step <= $0.lastUse }.map { ($0.size + 63) / 64 * 64 }.reduce(0, +))
            }
            XCTAssertGreaterThanOrEqual(size, peak)
            XCTAssertEqual(peakLiveBytes(buffers), peak)
            for i in buffers.indices {
                XCTAssertLessThanOrEqual(offsets[i] + buffers[i].size, size)
                for j in buffers.indices where i < j && buffers[i].overlapsInTime(buffers[j]) {
                    XCTAssertFalse((offsets[i]..<(offsets[i] + buffers[i].size)).overlaps(offsets[j]..<(offsets[j] + buffers[j].size)))
                }
            }
        }
    }

    /// Every shared model's arena is exactly the most bytes alive at one step: the planner's best
    /// variant leaves no fragmentation (largest-first alone was ~16% over on the MobileNet v1 chains).
    func testEverySharedModelsArenaIsTheLiveTensorPeak() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: SharedData.models.path)
            .filter { $0.hasSuffix(".tflite") && $0 != "model_invoking_error.tflite" }.sorted()
        XCTAssertGreaterThanOrEqual(files.count, 13)
        for file in files {
            let model = try Model(contentsOfFile: SharedData.model(file).path)
            XCTAssertGreaterThan(model.peakLiveByteCount, 0, file)
            XCTAssertEqual(model.arenaByteCount, model.peakLiveByteCount, file)
        }
    }

    /// Bytes that change threads: a 512-byte buffer at the start of the 1024-byte one before it has
    /// its second half on the first's first half (256 bytes, counted going there and coming back);
    /// centred on it, none. Scratch (not written in halves) counts as neither.
    func testCrossThreadBytesCountsHalvesThatChangeThreads() {
        let buffers = [PlannedBuffer(size: 1024, firstUse: 0, lastUse: 0), PlannedBuffer(size: 512, firstUse: 1, lastUse: 1)]
        XCTAssertEqual(crossThreadBytes(buffers, offsets: [0, 0]), 512)
        XCTAssertEqual(crossThreadBytes(buffers, offsets: [0, 256]), 0)
        XCTAssertEqual(crossThreadBytes(buffers, offsets: [0, 512]), 512)
        let scratch = [buffers[0], PlannedBuffer(size: 512, firstUse: 1, lastUse: 1, writtenInHalves: false)]
        XCTAssertEqual(crossThreadBytes(scratch, offsets: [0, 0]), 0)
        // Three users of the same bytes: first, second, first half, and back to the first.
        let three = buffers + [PlannedBuffer(size: 1024, firstUse: 2, lastUse: 2)]
        XCTAssertEqual(crossThreadBytes(three, offsets: [0, 0, 0]), 512)
    }

    /// Among plans of the smallest arena the planner keeps the one whose halves stay on their
    /// threads: a chain 1024 → 512 → 1024 bytes (each alive alone) in 1024 bytes, the 512-byte
    /// buffer centred on the others.
    func testThePlannerCentresBuffersOnTheHalvesOfThoseBefore() {
        let buffers = [PlannedBuffer(size: 1024, firstUse: 0, lastUse: 0), PlannedBuffer(size: 512, firstUse: 1, lastUse: 1),
                       PlannedBuffer(size: 1024, firstUse: 2, lastUse: 2)]
        let (offsets, size) = GreedyMemoryPlanner().plan(buffers)
        XCTAssertEqual(size, 1024)
        XCTAssertEqual(offsets, [0, 256, 0])
        XCTAssertEqual(crossThreadBytes(buffers, offsets: offsets), 0)
        // Scratch stays at the start of its gap.
        let scratch = [buffers[0], PlannedBuffer(size: 512, firstUse: 1, lastUse: 1, writtenInHalves: false), buffers[2]]
        XCTAssertEqual(GreedyMemoryPlanner().plan(scratch).offsets, [0, 0, 0])
    }

    /// Inputs are never overwritten (as in TFLite): set once, invoked twice, the same outputs. The
    /// chain x → ADD(x, x) → a → ADD(a, a) → b → ADD(b, b) → out reads x only at the first step,
    /// and b, alive from the second, fits x's place: the planner used to put it there, so a second
    /// invoke doubled b's values instead of x's.
    func testAnInputSetOnceServesEveryInvoke() throws {
        var b = TinyModelBuilder()
        let shape: [Int32] = [1, 4, 4, 3]
        let x = b.addTensor("x", shape: shape)
        let a = b.addTensor("a", shape: shape), c = b.addTensor("b", shape: shape), out = b.addTensor("out", shape: shape)
        let add = b.addOperatorCode(builtin: TinyModelBuilder.Builtin.add)
        for (input, output) in [(x, a), (a, c), (c, out)] {
            b.addOperator(opcodeIndex: add, inputs: [input, input], outputs: [output],
                          builtinOptionsType: TinyModelBuilder.OptionsType.add, builtinOptions: [(0, .int8(0))])
        }
        b.inputs = [x]
        b.outputs = [out]
        let values = (0..<48).map { Float($0) - 20 }
        for kernels in [KernelSelection.reference, .optimized] {
            var options = ModelOptions()
            options.kernels = kernels
            let interpreter = Interpreter(model: try Model(data: Data(b.build().bytes), options: options))
            try values.withUnsafeBytes { try interpreter.copyInput($0, at: 0) }
            for run in 1...3 {
                interpreter.invoke()
                XCTAssertEqual(try interpreter.outputFloats(at: 0), values.map { $0 * 8 }, "\(kernels) invoke \(run)")
            }
        }
    }
}
