import XCTest
import InferenceEngine
import TestSupport

/// CopyElision: a RESHAPE of an inner tensor does not run with the optimized kernels (its readers
/// read its input's memory), and the outputs are the reference kernels' bits at 1 and 2 threads.
final class CopyElisionTests: XCTestCase {
    /// x → ADD(x, x) → RESHAPE [1, 48] → RESHAPE [1, 4, 4, 3] → ADD(·, x) → out; with
    /// `reshapeIsOutput`, the first RESHAPE's output is a model output too (and must be written).
    static func model(reshapeIsOutput: Bool) -> [UInt8] {
        var b = TinyModelBuilder()
        func int32s(_ values: [Int32]) -> [UInt8] { values.flatMap { withUnsafeBytes(of: $0.littleEndian, Array.init) } }
        let x = b.addTensor("x", shape: [1, 4, 4, 3])
        let doubled = b.addTensor("doubled", shape: [1, 4, 4, 3])
        let flatShape = b.addTensor("flat_shape", type: TinyModelBuilder.TensorType.int32, shape: [2], data: int32s([1, 48]))
        let flat = b.addTensor("flat", shape: [1, 48])
        let imageShape = b.addTensor("image_shape", type: TinyModelBuilder.TensorType.int32, shape: [4], data: int32s([1, 4, 4, 3]))
        let image = b.addTensor("image", shape: [1, 4, 4, 3])
        let out = b.addTensor("out", shape: [1, 4, 4, 3])
        let add = b.addOperatorCode(builtin: TinyModelBuilder.Builtin.add)
        let reshape = b.addOperatorCode(builtin: TinyModelBuilder.Builtin.reshape)
        b.addOperator(opcodeIndex: add, inputs: [x, x], outputs: [doubled], builtinOptionsType: TinyModelBuilder.OptionsType.add,
                      builtinOptions: [(0, .int8(0))])
        b.addOperator(opcodeIndex: reshape, inputs: [doubled, flatShape], outputs: [flat])
        b.addOperator(opcodeIndex: reshape, inputs: [flat, imageShape], outputs: [image])
        b.addOperator(opcodeIndex: add, inputs: [image, x], outputs: [out], builtinOptionsType: TinyModelBuilder.OptionsType.add,
                      builtinOptions: [(0, .int8(0))])
        b.inputs = [x]
        b.outputs = reshapeIsOutput ? [out, flat] : [out]
        return b.build().bytes
    }

    func testInnerReshapesDoNotRun() throws {
        let bytes = Self.model(reshapeIsOutput: false)
        let reference = try FusionTestSupport.run(bytes, .reference, seed: 7, range: -2...2)
        XCTAssertEqual(reference.nodes, ["ADD", "RESHAPE", "RESHAPE", "ADD"])
        for threads in [1, 2] {
            let optimized = try FusionTestSupport.run(bytes, .optimized, threads: threads, seed: 7, range: -2...2)
            XCTAssertEqual(optimized.nodes, ["ADD", "ADD"], "threads \(threads)")
            XCTAssertEqual(optimized.outputs[0].map(\.bitPattern), reference.outputs[0].map(\.bitPattern), "threads \(threads)")
            // out = 2x + x, computed from the input's own bits.
            XCTAssertFalse(optimized.outputs[0].allSatisfy { $0 == 0 })
        }
    }

    func testAReshapeThatIsAModelOutputRuns() throws {
        let bytes = Self.model(reshapeIsOutput: true)
        let reference = try FusionTestSupport.run(bytes, .reference, seed: 8, range: -2...2)
        let optimized = try FusionTestSupport.run(bytes, .optimized, seed: 8, range: -2...2)
        XCTAssertEqual(optimized.nodes, ["ADD", "RESHAPE", "ADD"], "only the second RESHAPE, of an inner tensor, goes")
        XCTAssertEqual(optimized.outputs.map { $0.map(\.bitPattern) }, reference.outputs.map { $0.map(\.bitPattern) })
    }
}
