import CKernels
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport
import XCTest

/// The AVX2 tiles of a 1×1 convolution skip the input channels that are ±0 in all six pixels of a
/// tile (what a ReLU before the layer leaves: 22-50% of DeepLab's projection inputs), and every
/// output keeps the bits of the dense sum: bias, then one fused multiply-add per input channel in
/// channel order, then the clamp. Checked against that sum computed here, for the selections that
/// run those tiles (the capped AVX2 one everywhere; the optimized one where 512-bit operations run
/// as two halves, as on Zen 4) and the AVX-512 tiles, which do not skip, at 1, 2 and 3 threads.
final class SparseInputConvTests: XCTestCase {
    struct Layer {
        let height: Int, width: Int, inputChannels: Int, outputChannels: Int
        var input: [Float], filter: [Float], bias: [Float]
        let activation: FusedActivation

        func run(_ kernels: KernelSelection, threads: Int) throws -> [Float] {
            let options = ConvolutionKernelTests.conv(.valid, activation: activation)
            let inputs: [TensorValue?] = [
                .float32(input, shape: [1, height, width, inputChannels]),
                .float32(filter, shape: [outputChannels, 1, 1, inputChannels], isConstant: true),
                .float32(bias, shape: [outputChannels], isConstant: true),
            ]
            return try KernelRunner.run(.conv2D, options: options, inputs: inputs, outputs: [.float32], threads: threads,
                                        kernels: kernels)[0].floats
        }

        /// The dense sums with the tiles' clamp (max then min, the bound when equal), no NaN involved.
        var expected: [Float] {
            let (lo, hi): (Float, Float) = activation == .relu6 ? (0, 6) : (-.infinity, .infinity)
            var out = [Float](repeating: 0, count: height * width * outputChannels)
            for p in 0..<height * width {
                for j in 0..<outputChannels {
                    var acc = bias[j]
                    for i in 0..<inputChannels {
                        acc = acc.addingProduct(input[p * inputChannels + i], filter[j * inputChannels + i])
                    }
                    let a = acc > lo ? acc : lo
                    out[p * outputChannels + j] = a < hi ? a : hi
                }
            }
            return out
        }
    }

    /// Runs of six pixels share their zero channels (a fresh pattern every six pixels, so the tiles
    /// of pieces that start anywhere see mixed runs too), except that one pixel of the run, any of
    /// the six, is nonzero in a fifth of them; some zeros are -0.0.
    func sparseLayer(_ height: Int, _ width: Int, _ inputChannels: Int, _ outputChannels: Int, zeroShare: Double,
                     activation: FusedActivation, rng: inout SeededGenerator) -> Layer {
        var input = [Float](repeating: 0, count: height * width * inputChannels)
        var zero = [Bool](repeating: false, count: inputChannels), exception = [Int](repeating: -1, count: inputChannels)
        for p in 0..<height * width {
            if p % 6 == 0 {
                zero = (0..<inputChannels).map { _ in Double.random(in: 0..<1, using: &rng) < zeroShare }
                exception = (0..<inputChannels).map { _ in Double.random(in: 0..<1, using: &rng) < 0.2 ? Int.random(in: 0..<6, using: &rng) : -1 }
            }
            for i in 0..<inputChannels {
                let isZero = zero[i] && exception[i] != p % 6
                input[p * inputChannels + i] = isZero ? (Bool.random(using: &rng) ? 0.0 : -0.0) : Float.random(in: -2...2, using: &rng)
            }
        }
        let filter = (0..<outputChannels * inputChannels).map { _ in Float.random(in: -1...1, using: &rng) }
        let bias = (0..<outputChannels).map { _ in Float.random(in: -1...1, using: &rng) }
        return Layer(height: height, width: width, inputChannels: inputChannels, outputChannels: outputChannels, input: input,
                     filter: filter, bias: bias, activation: activation)
    }

    func assertDenseBits(_ layer: Layer, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let expected = layer.expected.map(\.bitPattern)
        for selection in [KernelSelection.avx2, .optimized, .avx512] {
            for threads in [1, 2, 3] {
                let actual = try layer.run(selection, threads: threads).map(\.bitPattern)
                XCTAssertEqual(actual.count, expected.count, label, file: file, line: line)
                if let i = actual.indices.first(where: { actual[$0] != expected[$0] }) {
                    XCTFail("\(label) \(selection) \(threads) threads: element \(i) is \(Float(bitPattern: actual[i])), "
                            + "the dense sum \(Float(bitPattern: expected[i]))", file: file, line: line)
                }
            }
        }
    }

    private func requireAVX2() throws {
        guard ck_best_isa() >= Int32(CK_ISA_AVX2) else {
            throw XCTSkip("the sparse tiles are AVX2's; the portable kernels' sums are not fused")
        }
    }

    func testZeroInputChannelsKeepTheDenseSums() throws {
        try requireAVX2()
        var rng = SeededGenerator(seed: 53)
        // (height, width, input channels, output channels): 16-wide and 8-wide blocks, channel tails,
        // reductions with and without a multiple of 8, pixel counts that leave 1-5 rows to the caller.
        let shapes = [(7, 12, 96, 40), (5, 13, 480, 80), (6, 6, 40, 8), (4, 9, 67, 24), (3, 11, 256, 21)]
        for (h, w, cin, cout) in shapes {
            for share in [0.5, 0.9, 1.0] {
                for activation in [FusedActivation.none, .relu6] {
                    let layer = sparseLayer(h, w, cin, cout, zeroShare: share, activation: activation, rng: &rng)
                    try assertDenseBits(layer, "\(h)x\(w) \(cin)->\(cout) zeros \(share) \(activation)")
                }
            }
        }
    }

    /// A bias of -0.0 stays -0.0 only while every product added to it is -0.0; skipping a +0.0
    /// product would keep it. The packed weights' trailer then turns skipping off: a column with
    /// that bias over all-zero pixels gives +0.0 as the dense sum does.
    func testNegativeZeroBiasKeepsTheDenseSums() throws {
        try requireAVX2()
        var rng = SeededGenerator(seed: 59)
        var layer = sparseLayer(4, 6, 64, 16, zeroShare: 1.0, activation: .none, rng: &rng)
        layer.bias[3] = -0.0
        layer.filter[3 * 64 + 10] = 0.5  // a +0.0 product in every pixel (its input is ±0)
        layer.input = layer.input.map { _ in 0.0 }
        try assertDenseBits(layer, "bias -0.0")
        XCTAssertEqual(try layer.run(.optimized, threads: 1)[3].bitPattern, Float(0).bitPattern)
    }

    /// 0 · inf is NaN: with an infinite weight no channel is skipped, and the pixels whose input in
    /// that channel is 0 get the clamp's lower bound (the tiles' clamp of NaN), not a finite sum.
    func testInfiniteWeightTurnsSkippingOff() throws {
        try requireAVX2()
        var rng = SeededGenerator(seed: 61)
        var layer = sparseLayer(6, 6, 64, 16, zeroShare: 0.9, activation: .none, rng: &rng)
        let channel = 5
        for p in 0..<36 { layer.input[p * 64 + channel] = 0 }
        layer.filter[2 * 64 + channel] = .infinity
        for selection in [KernelSelection.avx2, .optimized] {
            let out = try layer.run(selection, threads: 1)
            for p in 0..<36 {
                XCTAssertLessThanOrEqual(out[p * 16 + 2], -Float.greatestFiniteMagnitude, "\(selection) pixel \(p)")
                XCTAssertTrue(out[p * 16 + 3].isFinite, "\(selection) pixel \(p)")
            }
        }
    }
}
