import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// Weight packing beside the rest of a compile (`CompileWork`, `ModelOptions.numThreads`): a model
/// compiled with several threads is the model compiled with one (bitwise the same outputs), also
/// when the compile runs an operator it folds (whose weights must be packed by then) or fails
/// part-way. (The pool's started jobs: `WorkPoolTests/testStartedJobsRunBesideTheCaller`.)
final class CompileWorkTests: XCTestCase {
    /// 1×1 layers (float) over a constant image folded at compile time, then added to the input,
    /// then `trailing` (a custom operator name the engine does not know, or nil).
    private func model(channels: [Int], trailing: String? = nil) -> [UInt8] {
        var b = TinyModelBuilder()
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self
        var random = SeededGenerator(seed: 77)
        func floats(_ count: Int, _ range: ClosedRange<Float>) -> [UInt8] {
            (0..<count).flatMap { _ in withUnsafeBytes(of: Float.random(in: range, using: &random).bitPattern.littleEndian, Array.init) }
        }
        let (h, w) = (Int32(9), Int32(7))
        let conv = b.addOperatorCode(builtin: B.conv2D)
        let options: [(slot: Int, value: FBScalar)] = [(0, .int8(0)), (1, .int32(1)), (2, .int32(1)), (3, .int8(0)),
                                                         (4, .int32(1)), (5, .int32(1))]
        func layer(_ input: Int32, _ cin: Int, _ cout: Int, _ name: String, kernel: Int32 = 1) -> Int32 {
            let filter = b.addTensor("\(name)/filter", shape: [Int32(cout), kernel, kernel, Int32(cin)],
                                     data: floats(cin * cout * Int(kernel * kernel), -0.3...0.3))
            let bias = b.addTensor("\(name)/bias", shape: [Int32(cout)], data: floats(cout, -0.5...0.5))
            let out = b.addTensor(name, shape: [1, h, w, Int32(cout)])
            b.addOperator(opcodeIndex: conv, inputs: [input, filter, bias], outputs: [out], builtinOptionsType: O.conv2D,
                          builtinOptions: options)   // (SAME padding)
            return out
        }
        let x = b.addTensor("x", shape: [1, h, w, Int32(channels[0])])
        b.inputs = [x]
        // A constant image through a 3×3 layer: folded while compiling (it runs then, so its weights
        // must be packed by then).
        let constant = b.addTensor("constant", shape: [1, h, w, Int32(channels[0])], data: floats(Int(h * w) * channels[0], -1...1))
        let folded = layer(constant, channels[0], channels[0], "folded", kernel: 3)
        var tensor = b.addTensor("sum", shape: [1, h, w, Int32(channels[0])])
        b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.add), inputs: [x, folded], outputs: [tensor],
                      builtinOptionsType: O.add, builtinOptions: [(0, .int8(0))])
        for index in 1..<channels.count {
            tensor = layer(tensor, channels[index - 1], channels[index], "l\(index)")
        }
        if let trailing {
            let out = b.addTensor("trailing", shape: [1, h, w, Int32(channels.last ?? 1)])
            b.addOperator(opcodeIndex: b.addOperatorCode(custom: trailing), inputs: [tensor], outputs: [out])
            tensor = out
        }
        b.outputs = [tensor]
        return b.build().bytes
    }

    func testModelsCompiledWithThreadsGiveTheSameOutputs() throws {
        let bytes = model(channels: [5, 48, 40, 16, 3])
        var reference: [Float]?
        for threads in [1, 2, 3] {
            // An interpreter of this count gone: its pool, kept idle, is the compile's, with its
            // workers ready for the first job (else the compile may finish before they start).
            do {
                let earlier = Interpreter(model: try Model(data: Data(bytes)), options: InterpreterOptions(numThreads: threads))
                earlier.waitForThreads()
            }
            for interpreterThreads in [1, 2] {
                var options = ModelOptions()
                options.numThreads = threads
                let model = try Model(data: Data(bytes), options: options)
                let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: interpreterThreads))
                var random = SeededGenerator(seed: 5)
                let input = (0..<model.inputs[0].byteCount / 4).map { _ in Float.random(in: -1...1, using: &random) }
                try input.withUnsafeBytes { try interpreter.copyInput($0, at: 0) }
                interpreter.invoke()
                let output = try interpreter.outputFloats(at: 0)
                XCTAssertTrue(output.contains { $0 != 0 })
                if let reference {
                    let differing = zip(output, reference).filter { $0.bitPattern != $1.bitPattern }.count
                    XCTAssertTrue(output.count == reference.count && differing == 0,
                                  "compiled at \(threads) threads, run at \(interpreterThreads): \(differing) of \(output.count) outputs differ from 1 thread's")
                } else {
                    reference = output
                }
            }
        }
    }

    /// A compile that fails after packing was queued reports the error (and waits for the jobs,
    /// which read the model's weights, before the model's memory goes).
    func testACompileThatFailsPartWayThrowsItsError() throws {
        let bytes = model(channels: [5, 48, 40], trailing: "NO_SUCH_OP")
        for threads in [1, 2] {
            do {
                let earlier = Interpreter(model: try Model(data: Data(model(channels: [5, 8]))), options: InterpreterOptions(numThreads: threads))
                earlier.waitForThreads()
            }
            var options = ModelOptions()
            options.numThreads = threads
            XCTAssertThrowsError(try Model(data: Data(bytes), options: options)) { error in
                XCTAssertEqual((error as? EngineError)?.code, .unsupportedOperator, "\(threads) threads: \(error)")
            }
        }
    }
}

