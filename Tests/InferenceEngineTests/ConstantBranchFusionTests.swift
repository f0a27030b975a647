import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// A 1×1 float convolution over a concatenation with a bilinearly upsampled 1×1 image (DeepLab v3's
/// image-pooling branch) runs the constant image's share as one product per image: the resize
/// writes the projection, the concatenation is gone, and results agree with the graph as written
/// to float rounding.
final class ConstantBranchFusionTests: XCTestCase {
    private struct Case {
        var batches = 1, height = 5, width = 7
        var constantChannels = 12, otherChannels = 20, outputChannels = 24
        /// The upsampled image comes first in the concatenation.
        var constantFirst = true
        var activation: Int8 = 1
        /// The resized image is also a model output (then nothing can be folded).
        var resizedIsOutput = false
        /// The image to upsample is 2×2 instead of 1×1 (not constant: nothing can be folded).
        var sourceSize = 1
    }

    private func model(_ c: Case) -> [UInt8] {
        var b = TinyModelBuilder()
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self
        func floats(_ values: [Float]) -> [UInt8] { values.flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) } }
        var random = SeededGenerator(seed: UInt64(c.outputChannels * 17 + c.constantChannels))
        let n = Int32(c.batches), h = Int32(c.height), w = Int32(c.width)
        let x = b.addTensor("x", shape: [n, h, w, Int32(c.otherChannels)])
        let v = b.addTensor("v", shape: [n, Int32(c.sourceSize), Int32(c.sourceSize), Int32(c.constantChannels)])
        let size = b.addTensor("size", type: TinyModelBuilder.TensorType.int32, shape: [2], data: FBBytes.littleEndian([h, w]))
        let resized = b.addTensor("resized", shape: [n, h, w, Int32(c.constantChannels)])
        // RESIZE_BILINEAR (23), ResizeBilinearOptions (15): half-pixel centres.
        b.addOperator(opcodeIndex: b.addOperatorCode(builtin: 23), inputs: [v, size], outputs: [resized],
                      builtinOptionsType: 15, builtinOptions: [(2, .int8(0)), (3, .int8(1))])
        let inputChannels = c.constantChannels + c.otherChannels
        let joined = b.addTensor("joined", shape: [n, h, w, Int32(inputChannels)])
        b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.concatenation), inputs: c.constantFirst ? [resized, x] : [x, resized],
                      outputs: [joined], builtinOptionsType: O.concatenation, builtinOptions: [(0, .int32(3)), (1, .int8(0))])
        let filter = b.addTensor("filter", shape: [Int32(c.outputChannels), 1, 1, Int32(inputChannels)],
                                 data: floats((0..<c.outputChannels * inputChannels).map { _ in Float.random(in: -1...1, using: &random) }))
        let bias = b.addTensor("bias", shape: [Int32(c.outputChannels)],
                               data: floats((0..<c.outputChannels).map { _ in Float.random(in: -1...1, using: &random) }))
        let y = b.addTensor("y", shape: [n, h, w, Int32(c.outputChannels)])
        b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.conv2D), inputs: [joined, filter, bias], outputs: [y],
                      builtinOptionsType: O.conv2D,
                      builtinOptions: [(0, .int8(1)), (1, .int32(1)), (2, .int32(1)), (3, .int8(c.activation)), (4, .int32(1)), (5, .int32(1))])
        b.inputs = [x, v]
        b.outputs = c.resizedIsOutput ? [y, resized] : [y]
        return b.build().bytes
    }

    private func run(_ bytes: [UInt8], _ kernels: KernelSelection, threads: Int = 1) throws -> (nodes: [String], output: [Float]) {
        let result = try FusionTestSupport.run(bytes, kernels, threads: threads, seed: 3, range: -2...2)
        return (result.nodes, result.outputs[0])
    }

    /// Every optimized selection at 1 and 2 threads: close to the reference kernels and to the same
    /// selection with the fold blocked (the resized image also a model output), identical between
    /// thread counts, and with or without the CONCATENATION as `folded` says. The AVX-512 tiles add
    /// the projection in their registers where whole block pairs allow, the AVX2 ones by a pass over
    /// the stored tile: the same sums, so the same bits.
    private func check(_ c: Case, folded: Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        var blocked = c
        blocked.resizedIsOutput = true
        let bytes = model(c), blockedBytes = model(blocked)
        let reference = try run(bytes, .reference)
        XCTAssertTrue(reference.nodes.contains("CONCATENATION"), file: file, line: line)
        let scale = max(1, reference.output.map { abs($0) }.max() ?? 1)
        func error(_ a: [Float], _ b: [Float]) -> Float {
            a.count == b.count ? zip(a, b).map { abs($0 - $1) / scale }.max() ?? 0 : .infinity
        }
        var bits: [KernelSelection: [UInt32]] = [:]
        for kernels in [KernelSelection.optimized, .avx512, .avx2, .portable] {
            let one = try run(bytes, kernels, threads: 1), two = try run(bytes, kernels, threads: 2)
            bits[kernels] = one.output.map(\.bitPattern)
            let unfolded = try run(blockedBytes, kernels)
            XCTAssertTrue(unfolded.nodes.contains("CONCATENATION"), file: file, line: line)
            XCTAssertEqual(one.output.map(\.bitPattern), two.output.map(\.bitPattern), "\(c) \(kernels): 1 vs 2 threads", file: file, line: line)
            XCTAssertLessThan(error(one.output, reference.output), 1e-5, "\(c) \(kernels) vs the reference kernels", file: file, line: line)
            XCTAssertLessThan(error(one.output, unfolded.output), 1e-5, "\(c) \(kernels) vs the graph as written", file: file, line: line)
            XCTAssertEqual(!one.nodes.contains("CONCATENATION"), folded, "\(c) \(kernels): \(one.nodes)", file: file, line: line)
        }
        XCTAssertEqual(bits[.avx512], bits[.avx2], "\(c): AVX-512 vs AVX2", file: file, line: line)
    }

    func testUpsampledConstantImageIsProjectedOnce() throws {
        try check(Case(), folded: true)
        try check(Case(constantFirst: false, activation: 0), folded: true)
        try check(Case(batches: 2, height: 3, width: 4, constantChannels: 7, otherChannels: 33, outputChannels: 37, activation: 3), folded: true)
        // DeepLab-like: 256 + 256 channels (the unfolded convolution is K-blocked), 1×1 and wide images.
        try check(Case(height: 6, width: 6, constantChannels: 256, otherChannels: 256, outputChannels: 64), folded: true)
        try check(Case(height: 1, width: 1, constantChannels: 5, otherChannels: 3, outputChannels: 16), folded: true)
    }

    func testImagesThatAreNotConstantKeepTheGraph() throws {
        try check(Case(sourceSize: 2), folded: false)
        try check(Case(resizedIsOutput: true), folded: false)
    }

    func testDeepLabV3LosesItsConcatenation() throws {
        func count(_ kernels: KernelSelection) throws -> [String: Int] {
            try FusionTestSupport.operatorCounts(model: "deeplabv3.tflite", kernels)
        }
        let reference = try count(.reference), optimized = try count(.optimized)
        XCTAssertEqual(reference["CONCATENATION"], 1)
        XCTAssertEqual(optimized["CONCATENATION", default: 0], 0, "the ASPP head's image-pooling branch is projected once")
        XCTAssertEqual(optimized["CONV_2D"], reference["CONV_2D"])
        // Its 33×33 → 33×33 resize before the final upsampling is a copy and does not run (CopyElision).
        XCTAssertEqual(optimized["RESIZE_BILINEAR"], reference["RESIZE_BILINEAR"].map { $0 - 1 })
    }
}
