import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// Consecutive nodes whose kernels each run in one split (float convolutions, depthwise layers,
/// depthwise → 1×1 pairs) run at several threads as the stages of one job of the pool
/// (StagedNodes): the same pieces, one node after the other, so `invoke()` gives bitwise the
/// outputs of one thread, at 2 and 3 threads, and of the node loop (`invokeProfiled()`, which runs
/// the nodes one job each).
final class StagedNodesTests: XCTestCase {
    /// x (14 × 12 × 8) → 3×3 convolution (16 channels) → depthwise 3×3 → 1×1 (24) → depthwise 3×3
    /// stride 2 (7 × 6: at 2 threads the pair splits by pixels) → 1×1 (32) → ADD of a constant
    /// (not a stage) → 1×1 (8).
    private func model() -> [UInt8] {
        var b = TinyModelBuilder()
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self
        var random = SeededGenerator(seed: 11)
        func floats(_ count: Int, _ range: ClosedRange<Float>) -> [UInt8] {
            (0..<count).flatMap { _ in withUnsafeBytes(of: Float.random(in: range, using: &random).bitPattern.littleEndian, Array.init) }
        }
        let conv = b.addOperatorCode(builtin: B.conv2D), depthwise = b.addOperatorCode(builtin: B.depthwiseConv2D)
        func convolution(_ input: Int32, _ name: String, size: Int32, cin: Int32, cout: Int32, h: Int32, w: Int32) -> Int32 {
            let filter = b.addTensor("\(name)/filter", shape: [cout, size, size, cin], data: floats(Int(cout * size * size * cin), -0.3...0.3))
            let bias = b.addTensor("\(name)/bias", shape: [cout], data: floats(Int(cout), -0.5...0.5))
            let out = b.addTensor(name, shape: [1, h, w, cout])
            // SAME padding, stride 1, ReLU6.
            b.addOperator(opcodeIndex: conv, inputs: [input, filter, bias], outputs: [out], builtinOptionsType: O.conv2D,
                          builtinOptions: [(0, .int8(0)), (1, .int32(1)), (2, .int32(1)), (3, .int8(3)), (4, .int32(1)), (5, .int32(1))])
            return out
        }
        func depthwiseLayer(_ input: Int32, _ name: String, channels: Int32, stride: Int32, h: Int32, w: Int32) -> Int32 {
            let filter = b.addTensor("\(name)/filter", shape: [1, 3, 3, channels], data: floats(Int(9 * channels), -0.5...0.5))
            let bias = b.addTensor("\(name)/bias", shape: [channels], data: floats(Int(channels), -0.5...0.5))
            let out = b.addTensor(name, shape: [1, h, w, channels])
            b.addOperator(opcodeIndex: depthwise, inputs: [input, filter, bias], outputs: [out], builtinOptionsType: O.depthwiseConv2D,
                          builtinOptions: [(0, .int8(0)), (1, .int32(stride)), (2, .int32(stride)), (3, .int32(1)), (4, .int8(3)),
                                           (5, .int32(1)), (6, .int32(1))])
            return out
        }
        let x = b.addTensor("x", shape: [1, 14, 12, 8])
        var t = convolution(x, "stem", size: 3, cin: 8, cout: 16, h: 14, w: 12)
        t = depthwiseLayer(t, "dw1", channels: 16, stride: 1, h: 14, w: 12)
        t = convolution(t, "pw1", size: 1, cin: 16, cout: 24, h: 14, w: 12)
        t = depthwiseLayer(t, "dw2", channels: 24, stride: 2, h: 7, w: 6)
        t = convolution(t, "pw2", size: 1, cin: 24, cout: 32, h: 7, w: 6)
        let constant = b.addTensor("c", shape: [1, 1, 1, 32], data: floats(32, -1...1))
        let sum = b.addTensor("sum", shape: [1, 7, 6, 32])
        b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.add), inputs: [t, constant], outputs: [sum],
                      builtinOptionsType: O.add, builtinOptions: [(0, .int8(0))])
        let y = convolution(sum, "head", size: 1, cin: 32, cout: 8, h: 7, w: 6)
        b.inputs = [x]
        b.outputs = [y]
        return b.build().bytes
    }

    private func output(_ model: Model, threads: Int, profiled: Bool = false) throws -> (runs: [(first: Int, count: Int)], output: [Float]) {
        let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
        interpreter.waitForThreads()
        var random = SeededGenerator(seed: 3)
        let values = (0..<model.inputs[0].byteCount / 4).map { _ in Float.random(in: -2...2, using: &random) }
        try values.withUnsafeBytes { try interpreter.copyInput($0, at: 0) }
        // Twice: the second invoke runs over the first one's arena contents.
        for _ in 0..<2 {
            if profiled { _ = interpreter.invokeProfiled() } else { interpreter.invoke() }
        }
        return (interpreter.stagedRuns, try interpreter.outputFloats(at: 0))
    }

    func testStagedNodesGiveTheOutputsOfOneThread() throws {
        let bytes = model()
        let model = try Model(data: Data(bytes))
        var referenceOptions = ModelOptions()
        referenceOptions.kernels = .reference
        let reference = try output(try Model(data: Data(bytes), options: referenceOptions), threads: 1).output
        let one = try output(model, threads: 1)
        XCTAssertTrue(one.runs.isEmpty, "one thread runs no stages: \(one.runs)")
        let scale = max(1, reference.map { abs($0) }.max() ?? 1)
        XCTAssertLessThan(zip(one.output, reference).map { abs($0 - $1) / scale }.max() ?? .infinity, 1e-5)
        for threads in [2, 3] {
            let staged = try output(model, threads: threads)
            // The stem, the two pairs; the ADD ends the run, and the head is a run of one.
            XCTAssertEqual(staged.runs.map(\.first), [0], "\(threads) threads: \(staged.runs)")
            XCTAssertEqual(staged.runs.map(\.count), [3], "\(threads) threads: \(staged.runs)")
            XCTAssertEqual(staged.output.map(\.bitPattern), one.output.map(\.bitPattern), "\(threads) threads, staged")
            let loop = try output(model, threads: threads, profiled: true)
            XCTAssertEqual(loop.output.map(\.bitPattern), one.output.map(\.bitPattern), "\(threads) threads, node loop")
        }
    }
}
