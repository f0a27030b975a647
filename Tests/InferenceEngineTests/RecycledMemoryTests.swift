import Foundation
import InferenceEngine
import TestSupport
import TensorCore
import XCTest

/// Interpreters and models that go away leave their large blocks of memory (tensor arenas of
/// 64 KiB and more, packed weights) to the next ones of the process (pages already mapped: no page
/// faults while loading). A reused arena starts cleared, so the new interpreter sees none of the
/// old one's tensors; reused weight memory is packed over completely, so results do not depend on
/// what the memory held; and a block is not handed to a need of less than half its size.
final class RecycledMemoryTests: XCTestCase {
    /// Elements per tensor of the first test's model: its arena (about 9.4 MB) is larger than any
    /// block the suite's other models leave, so only the released arena fits it (a block serves
    /// needs of at least half its size). The second test's large model (12 MB) likewise.
    private static let count = 786_432

    private func outputAddress(_ interpreter: Interpreter) throws -> Int {
        try interpreter.withOutputBuffer(at: 0) { Int(bitPattern: $0.baseAddress) }
    }

    func testAReleasedArenaIsReusedCleared() throws {
        let model = try Model(data: Data(TinyModelBuilder.addModel(shape: [1, Int32(Self.count)]).build().bytes))
        let ones = [Float](repeating: 1, count: Self.count)
        var first: Interpreter? = Interpreter(model: model)
        try ones.withUnsafeBytes { try first?.copyInput($0, at: 0) }
        try ones.withUnsafeBytes { try first?.copyInput($0, at: 1) }
        first?.invoke()
        XCTAssertEqual(try first?.outputFloats(at: 0), [Float](repeating: 2, count: Self.count))
        let address = try first.map(outputAddress)
        first = nil

        let second = Interpreter(model: model)
        XCTAssertEqual(try outputAddress(second), address, "the released arena is reused")
        for index in 0..<2 {
            try second.withInputBuffer(at: index) { buffer in
                XCTAssertTrue(buffer.allSatisfy { $0 == 0 }, "input \(index) starts cleared")
            }
        }
        XCTAssertEqual(try second.outputFloats(at: 0), [Float](repeating: 0, count: Self.count), "the output starts cleared")
        let twos = [Float](repeating: 2, count: Self.count)
        try twos.withUnsafeBytes { try second.copyInput($0, at: 0) }
        try ones.withUnsafeBytes { try second.copyInput($0, at: 1) }
        second.invoke()
        XCTAssertEqual(try second.outputFloats(at: 0), [Float](repeating: 3, count: Self.count))
    }

    func testASmallModelDoesNotTakeALargeArena() throws {
        let large = try Model(data: Data(TinyModelBuilder.addModel(shape: [1, 1_000_000]).build().bytes))
        let small = try Model(data: Data(TinyModelBuilder.addModel(shape: [1, 16]).build().bytes))
        var big: Interpreter? = Interpreter(model: large)
        let address = try big.map(outputAddress)
        big = nil
        let interpreter = Interpreter(model: small)
        XCTAssertNotEqual(try outputAddress(interpreter), address)
        // The large model's next interpreter still finds it.
        XCTAssertEqual(try outputAddress(Interpreter(model: large)), address)
    }

    /// Convolutions with packed weights of 64 KiB and more, one after another with new weights of
    /// the same shapes: each model's weights go into the memory the one before left.
    func testRecycledWeightMemoryIsPackedOver() throws {
        var rng = SeededGenerator(seed: 91)
        for round in 0..<3 {
            let input = TensorValue.float32((0..<(6 * 6 * 256)).map { _ in Float.random(in: -1...1, using: &rng) }, shape: [1, 6, 6, 256])
            let filter = TensorValue.float32((0..<(128 * 256)).map { _ in Float.random(in: -1...1, using: &rng) }, shape: [128, 1, 1, 256],
                                             isConstant: true)
            let inputs: [TensorValue?] = [input, filter, nil]
            let options = ConvolutionKernelTests.conv()
            let expected = try KernelRunner.run(.conv2D, options: options, inputs: inputs, outputs: [.float32], kernels: .reference)[0].floats
            let scale = expected.map { abs($0) }.max() ?? 1
            for threads in [1, 2] {
                let actual = try KernelRunner.run(.conv2D, options: options, inputs: inputs, outputs: [.float32], threads: threads,
                                                  kernels: .optimized)[0].floats
                XCTAssertEqual(actual.count, expected.count)
                XCTAssertLessThanOrEqual(zip(actual, expected).map { abs($0 - $1) }.max() ?? 0, 1e-5 * scale, "float round \(round)")
            }

            var q = OptimizedQuantizedKernelTests.Quantized(type: round == 1 ? .uint8 : .int8, rng: rng)
            let qInput = q.tensor(shape: [1, 5, 5, 512], scale: 0.05, zeroPoint: q.zeroPoint())
            let weights = q.weights(shape: [160, 1, 1, 512], channels: 160, dimension: 0)
            let qInputs: [TensorValue?] = [qInput, weights, nil]
            let output = OutputSpec(type: q.type, quantization: QuantizationParameters(scale: 0.2, zeroPoint: q.zeroPoint()))
            rng = q.rng
            let qExpected = try KernelRunner.run(.conv2D, options: options, inputs: qInputs, outputs: [output], kernels: .reference)[0].bytes
            for threads in [1, 2] {
                let actual = try KernelRunner.run(.conv2D, options: options, inputs: qInputs, outputs: [output], threads: threads,
                                                  kernels: .optimized)[0].bytes
                XCTAssertEqual(actual, qExpected, "\(q.type) round \(round), \(threads) threads")
            }
        }
    }
}
