import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// Float RELU / RELU6 / RELU_N1_TO_1 operators are folded into the operator that produces their
/// input when that operator can clamp its own output and nothing else reads the intermediate
/// tensor; the `reference` selection runs the graph as written. Results are the same clamp.
final class ActivationFusionTests: XCTestCase {
    /// `a + b → t → ACT → y` (or `a * b`), with `t` optionally also a graph output or read twice.
    private func model(producer: Int32, producerOptions: UInt8, activation: Int32,
                       intermediateIsOutput: Bool = false, secondReader: Bool = false) -> [UInt8] {
        var b = TinyModelBuilder()
        let shape: [Int32] = [1, 3, 5, 2]
        let a = b.addTensor("a", shape: shape), c = b.addTensor("b", shape: shape)
        let t = b.addTensor("t", shape: shape), y = b.addTensor("y", shape: shape)
        let p = b.addOperatorCode(builtin: producer)
        b.addOperator(opcodeIndex: p, inputs: [a, c], outputs: [t], builtinOptionsType: producerOptions,
                      builtinOptions: [(0, .int8(0))])
        let act = b.addOperatorCode(builtin: activation)
        b.addOperator(opcodeIndex: act, inputs: [t], outputs: [y])
        b.inputs = [a, c]
        b.outputs = [y]
        if intermediateIsOutput { b.outputs.append(t) }
        if secondReader {
            let z = b.addTensor("z", shape: shape)
            let add = b.addOperatorCode(builtin: TinyModelBuilder.Builtin.add)
            b.addOperator(opcodeIndex: add, inputs: [t, a], outputs: [z], builtinOptionsType: TinyModelBuilder.OptionsType.add,
                          builtinOptions: [(0, .int8(0))])
            b.outputs.append(z)
        }
        return b.build().bytes
    }

    private func run(_ bytes: [UInt8], _ kernels: KernelSelection) throws -> (nodes: [String], outputs: [[Float]]) {
        var options = ModelOptions()
        options.kernels = kernels
        let model = try Model(data: Data(bytes), options: options)
        let interpreter = Interpreter(model: model)
        var random = SeededGenerator(seed: 7)
        for input in 0..<2 {
            let values = (0..<30).map { _ in Float.random(in: -8...8, using: &random) }
            try values.withUnsafeBytes { try interpreter.copyInput($0, at: input) }
        }
        let nodes = interpreter.invokeProfiled().map(\.operatorName)
        let outputs = try (0..<model.outputs.count).map { try interpreter.outputFloats(at: $0) }
        return (nodes, outputs)
    }

    func testActivationAfterArithmeticIsFoldedWithTheSameResults() throws {
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self
        for (producer, options, name) in [(B.add, O.add, "ADD"), (B.mul, O.mul, "MUL"), (B.sub, O.sub, "SUB")] {
            for activation in [B.relu, B.relu6, Int32(20) /* RELU_N1_TO_1 */] {
                let bytes = model(producer: producer, producerOptions: options, activation: activation)
                let reference = try run(bytes, .reference)
                XCTAssertEqual(reference.nodes.count, 2, "the reference selection runs the graph as written")
                for kernels in [KernelSelection.optimized, .portable] {
                    let fused = try run(bytes, kernels)
                    XCTAssertEqual(fused.nodes, [name], "\(name) + activation \(activation), \(kernels)")
                    XCTAssertEqual(fused.outputs, reference.outputs, "\(name) + activation \(activation), \(kernels)")
                }
                // The clamp really happened: no value outside the activation's range.
                let (lo, hi): (Float, Float) = activation == B.relu ? (0, .infinity) : activation == B.relu6 ? (0, 6) : (-1, 1)
                XCTAssertTrue(reference.outputs[0].allSatisfy { $0 >= lo && $0 <= hi })
                XCTAssertTrue(reference.outputs[0].contains { $0 != lo && $0 != hi }, "inputs reach inside the range too")
            }
        }
    }

    func testIntermediateReadElsewhereIsNotFolded() throws {
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self
        for (asOutput, secondReader) in [(true, false), (false, true)] {
            let bytes = model(producer: B.add, producerOptions: O.add, activation: B.relu,
                              intermediateIsOutput: asOutput, secondReader: secondReader)
            let reference = try run(bytes, .reference), optimized = try run(bytes, .optimized)
            XCTAssertEqual(optimized.nodes, reference.nodes, "graph output: \(asOutput), second reader: \(secondReader)")
            XCTAssertEqual(optimized.outputs, reference.outputs)
            // The intermediate keeps the unclamped sums (some negative).
            XCTAssertTrue(optimized.outputs[1].contains { $0 < 0 })
        }
    }

    func testRealModelsLoseTheirStandaloneActivations() throws {
        func count(_ kernels: KernelSelection) throws -> [String: Int] {
            try FusionTestSupport.operatorCounts(model: "selfie_segmentation.tflite", kernels)
        }
        let reference = try count(.reference), optimized = try count(.optimized)
        XCTAssertGreaterThan(reference["RELU", default: 0], 0)
        XCTAssertEqual(optimized["RELU", default: 0], 0, "every RELU of the selfie model follows a CONV_2D or ADD")
        XCTAssertEqual(optimized["CONV_2D"], reference["CONV_2D"])
        // Residual ADDs are folded into convolutions too (ResidualFusionTests); every other operator stays.
        func others(_ counts: [String: Int]) -> Int { counts.filter { $0.key != "ADD" && $0.key != "PAD" }.values.reduce(0, +) }
        XCTAssertEqual(others(optimized), others(reference) - reference["RELU", default: 0])
    }
}
