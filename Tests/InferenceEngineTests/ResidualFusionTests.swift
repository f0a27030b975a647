import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// A float ADD of a CONV_2D's output and a residual (directly or through a PAD of the channels) is
/// folded into the convolution's epilogue; results are bitwise those of the graph as written.
final class ResidualFusionTests: XCTestCase {
    private struct Case {
        var batches = 1, height = 5, width = 7, inputChannels = 3, outputChannels = 20
        var filter = 1
        /// Channels of the residual before / after it in the output (a PAD between them when either is non-zero).
        var padBefore = 0, padAfter = 0
        /// The residual is a second model input (else the convolution's own input).
        var separateResidual = true
        var convActivation: Int8 = 0, addActivation: Int8 = 0
        var convFirst = false
        /// The convolution's output is also a model output (then the ADD cannot be folded).
        var convIsOutput = false
        /// The residual is computed (x * x) after the convolution in the file's order.
        var residualAfterConv = false
    }

    private func model(_ c: Case) -> [UInt8] {
        var b = TinyModelBuilder()
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self
        func floats(_ values: [Float]) -> [UInt8] { values.flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) } }
        var random = SeededGenerator(seed: UInt64(c.outputChannels * 31 + c.filter))
        let residualChannels = c.outputChannels - c.padBefore - c.padAfter
        let x = b.addTensor("x", shape: [Int32(c.batches), Int32(c.height), Int32(c.width), Int32(c.inputChannels)])
        let weightCount = c.outputChannels * c.filter * c.filter * c.inputChannels
        let filter = b.addTensor("filter", shape: [Int32(c.outputChannels), Int32(c.filter), Int32(c.filter), Int32(c.inputChannels)],
                                 data: floats((0..<weightCount).map { _ in Float.random(in: -1...1, using: &random) }))
        let bias = b.addTensor("bias", shape: [Int32(c.outputChannels)],
                               data: floats((0..<c.outputChannels).map { _ in Float.random(in: -1...1, using: &random) }))
        let outShape = [Int32(c.batches), Int32(c.height), Int32(c.width), Int32(c.outputChannels)]
        let t = b.addTensor("t", shape: outShape)
        let residualShape = [Int32(c.batches), Int32(c.height), Int32(c.width), Int32(residualChannels)]
        var inputs = [x]
        var residual = x
        if c.separateResidual {
            residual = b.addTensor("r", shape: residualShape)
            inputs.append(residual)
        }
        let conv = b.addOperatorCode(builtin: B.conv2D)
        b.addOperator(opcodeIndex: conv, inputs: [x, filter, bias], outputs: [t], builtinOptionsType: O.conv2D,
                      builtinOptions: [(0, .int8(0)), (1, .int32(1)), (2, .int32(1)), (3, .int8(c.convActivation)),
                                       (4, .int32(1)), (5, .int32(1))])
        if c.residualAfterConv {
            let squared = b.addTensor("squared", shape: residualShape)
            b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.mul), inputs: [residual, residual], outputs: [squared],
                          builtinOptionsType: O.mul, builtinOptions: [(0, .int8(0))])
            residual = squared
        }
        if c.padBefore > 0 || c.padAfter > 0 {
            let paddings = b.addTensor("paddings", type: TinyModelBuilder.TensorType.int32, shape: [4, 2],
                                       data: FBBytes.littleEndian([Int32(0), 0, 0, 0, 0, 0, Int32(c.padBefore), Int32(c.padAfter)]))
            let padded = b.addTensor("padded", shape: outShape)
            b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.pad), inputs: [residual, paddings], outputs: [padded])
            residual = padded
        }
        let y = b.addTensor("y", shape: outShape)
        b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.add), inputs: c.convFirst ? [t, residual] : [residual, t],
                      outputs: [y], builtinOptionsType: O.add, builtinOptions: [(0, .int8(c.addActivation))])
        b.inputs = inputs
        b.outputs = c.convIsOutput ? [y, t] : [y]
        return b.build().bytes
    }

    private func run(_ bytes: [UInt8], _ kernels: KernelSelection, threads: Int = 1) throws -> (nodes: [String], outputs: [[Float]]) {
        try FusionTestSupport.run(bytes, kernels, threads: threads, seed: 11, range: -4...4)
    }

    /// Runs case `c` with every optimized selection at 1 and 2 threads: the result must be bitwise the
    /// one of the same selection running the three operators separately (the same model with the
    /// convolution's output also a model output, which keeps it from being folded), and close to the
    /// reference kernels (the optimized convolution sums in another order).
    private func check(_ c: Case, folded: Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        var separate = c
        separate.convIsOutput = true
        let bytes = model(c), separateBytes = model(separate)
        let reference = try run(bytes, .reference)
        XCTAssertTrue(reference.nodes.contains("ADD"), "the reference selection runs the graph as written", file: file, line: line)
        for kernels in [KernelSelection.optimized, .avx512, .avx2, .portable] {
            for threads in [1, 2] {
                let result = try run(bytes, kernels, threads: threads)
                let unfolded = try run(separateBytes, kernels, threads: threads)
                XCTAssertTrue(unfolded.nodes.contains("ADD"), file: file, line: line)
                XCTAssertEqual(result.outputs[0].map(\.bitPattern), unfolded.outputs[0].map(\.bitPattern),
                               "\(c) \(kernels) \(threads) threads: differs from the operators run separately", file: file, line: line)
                let scale = max(1, reference.outputs[0].map { abs($0) }.max() ?? 1)
                let error = zip(result.outputs[0], reference.outputs[0]).map { abs($0 - $1) / scale }.max() ?? .infinity
                XCTAssertLessThan(error, 1e-5, "\(c) \(kernels) \(threads) threads vs the reference kernels", file: file, line: line)
                if folded {
                    XCTAssertFalse(result.nodes.contains("ADD") || result.nodes.contains("PAD"), "\(c): \(result.nodes)", file: file, line: line)
                } else {
                    XCTAssertTrue(result.nodes.contains("ADD"), "\(c): \(result.nodes)", file: file, line: line)
                }
            }
        }
    }

    func testResidualAddIsFoldedWithBitwiseSameResults() throws {
        try check(Case(), folded: true)
        try check(Case(inputChannels: 20, separateResidual: false, convFirst: true), folded: true)
        try check(Case(batches: 2, height: 3, width: 9, inputChannels: 5, outputChannels: 37, filter: 3, addActivation: 1), folded: true)
        try check(Case(height: 1, width: 3, outputChannels: 16, convActivation: 3, addActivation: 3, convFirst: true), folded: true)
        try check(Case(height: 13, width: 11, inputChannels: 24, outputChannels: 48, addActivation: 1), folded: true)
        // A long reduction (K blocking): the residual of the blocked channel pairs and of the last block.
        try check(Case(batches: 2, height: 4, width: 5, inputChannels: 300, outputChannels: 48, addActivation: 1), folded: true)
    }

    func testChannelPadOfTheResidualIsFoldedToo() throws {
        // BlazeFace: 24 → 28 channels, the pad after the residual's channels.
        try check(Case(height: 8, width: 8, inputChannels: 24, outputChannels: 28, padAfter: 4, separateResidual: false, addActivation: 1),
                  folded: true)
        try check(Case(batches: 2, inputChannels: 6, outputChannels: 40, filter: 3, padBefore: 5, padAfter: 19), folded: true)
        try check(Case(outputChannels: 33, padBefore: 17, convFirst: true), folded: true)
        try check(Case(height: 3, width: 7, inputChannels: 270, outputChannels: 64, padBefore: 3, padAfter: 5), folded: true)
        // A last block of at most 8 channels (AVX2's 6 × 8 tile) partly and wholly past the residual's channels.
        try check(Case(height: 5, width: 9, inputChannels: 18, outputChannels: 24, padAfter: 6, separateResidual: false, addActivation: 1),
                  folded: true)
        try check(Case(height: 4, width: 7, inputChannels: 12, outputChannels: 44, padAfter: 20), folded: true)
    }

    func testResidualsThatCannotBeFoldedKeepTheGraph() throws {
        try check(Case(residualAfterConv: true), folded: false)
        try check(Case(outputChannels: 24, padAfter: 4, residualAfterConv: true), folded: false)
    }

    func testBlazeFaceLosesItsPadsAndAdds() throws {
        func count(_ kernels: KernelSelection) throws -> [String: Int] {
            try FusionTestSupport.operatorCounts(model: "face_detection_short_range.tflite", kernels)
        }
        let reference = try count(.reference), optimized = try count(.optimized)
        XCTAssertEqual(reference["ADD"], 16)
        XCTAssertEqual(reference["PAD"], 11)
        XCTAssertEqual(optimized["ADD", default: 0], 0, "every ADD of BlazeFace adds a residual to a 1x1 convolution")
        XCTAssertEqual(optimized["PAD", default: 0], 0, "every PAD of BlazeFace pads a residual's channels")
        XCTAssertEqual(optimized["CONV_2D"], reference["CONV_2D"])
    }
}
