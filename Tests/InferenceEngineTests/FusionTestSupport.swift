import Foundation
import InferenceEngine
import TestSupport

/// What the graph-rewrite tests (ActivationFusion, ResidualFusion, ConstantBranchFusion) share.
enum FusionTestSupport {
    /// Compiles `bytes` with `kernels`, fills every (float) input with seeded random values in
    /// `range`, invokes once (profiled) and returns the operators that ran and every output.
    static func run(_ bytes: [UInt8], _ kernels: KernelSelection, threads: Int = 1, seed: UInt64,
                    range: ClosedRange<Float>) throws -> (nodes: [String], outputs: [[Float]]) {
        var options = ModelOptions()
        options.kernels = kernels
        let model = try Model(data: Data(bytes), options: options)
        let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
        interpreter.waitForThreads()
        var random = SeededGenerator(seed: seed)
        for input in 0..<model.inputs.count {
            let values = (0..<model.inputs[input].byteCount / 4).map { _ in Float.random(in: range, using: &random) }
            try values.withUnsafeBytes { try interpreter.copyInput($0, at: input) }
        }
        let nodes = interpreter.invokeProfiled().map(\.operatorName)
        let outputs = try (0..<model.outputs.count).map { try interpreter.outputFloats(at: $0) }
        return (nodes, outputs)
    }

    /// How many times each operator runs in the shared model `name` compiled with `kernels` (a
    /// node that runs several, such as a banded inverted residual block, names them all:
    /// CONV_2D+DEPTHWISE_CONV_2D+CONV_2D).
    static func operatorCounts(model name: String, _ kernels: KernelSelection) throws -> [String: Int] {
        var options = ModelOptions()
        options.kernels = kernels
        let interpreter = Interpreter(model: try Model(contentsOfFile: SharedData.model(name).path, options: options))
        return Dictionary(interpreter.invokeProfiled().flatMap { $0.operatorName.split(separator: "+").map { (String($0), 1) } },
                          uniquingKeysWith: +)
    }
}
