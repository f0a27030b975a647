import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport

/// AVERAGE_POOL_2D, HARD_SWISH and innermost-dimension PAD through CKernels against the reference
/// kernels for every instruction-set variant at 1 and 2 threads: all three are bit-identical (the
/// same arithmetic in the same order; PAD is a copy), except a large global average pool.
extension OptimizedFloatKernelTests {
    func testAveragePoolMatchesReferenceExactly() throws {
        var rng = SeededGenerator(seed: 46)
        // Windows clipped by SAME padding, a global pool (the selfie model's squeeze-excite blocks,
        // channel counts below, at and above 64), VALID windows.
        for (h, w, c, kh, kw, stride, padding) in [(9, 8, 28, 2, 2, 2, Padding.same), (7, 7, 17, 3, 3, 2, .valid), (5, 6, 40, 3, 3, 1, .same),
                                                   (16, 16, 96, 16, 16, 1, .valid), (12, 10, 16, 12, 10, 1, .valid), (6, 6, 130, 6, 6, 1, .valid)] {
            var values = random(2 * h * w * c, &rng, range: -3...3)
            values[3] = .nan
            let input = TensorValue.float32(values, shape: [2, h, w, c])
            var o = Pool2DOptions()
            o.padding = padding
            (o.strideHeight, o.strideWidth) = (stride, stride)
            (o.filterHeight, o.filterWidth) = (kh, kw)
            o.activation = c == 17 ? .relu6 : .none
            try assertMatchesReference(.averagePool2D, options: .pool2D(o), [input], exact: true,
                                       "average pool \(h)x\(w)x\(c) k\(o.filterHeight)x\(o.filterWidth) s\(stride) \(padding)")
        }
    }

    /// A global average pool over at least 2^16 floats sums 8 fixed pixel ranges (each thread its
    /// own, OptimizedPoolFloatKernel.globalPieces) and adds the partial sums: not the reference's
    /// order, so within rounding of it, and the same bits at 1, 2 and 3 threads.
    func testLargeGlobalAveragePoolMatchesReference() throws {
        var rng = SeededGenerator(seed: 49)
        for (h, w, c) in [(33, 33, 70), (40, 41, 160)] {
            XCTAssertGreaterThanOrEqual(h * w * c, 1 << 16)
            let values = random(2 * h * w * c, &rng, range: -3...3)
            let input = TensorValue.float32(values, shape: [2, h, w, c])
            var o = Pool2DOptions()
            o.padding = .valid
            (o.filterHeight, o.filterWidth) = (h, w)
            o.activation = c == 70 ? .relu6 : .none
            try assertMatchesReference(.averagePool2D, options: .pool2D(o), [input], "global average pool \(h)x\(w)x\(c)")
        }
    }

    func testHardSwishMatchesReferenceExactly() throws {
        var rng = SeededGenerator(seed: 47)
        for count in [1, 15, 16, 17, 1000, 40_000] {
            var values = random(count, &rng, range: -5...5)
            if count > 16 { values[2] = -3; values[3] = 3; values[4] = .nan; values[5] = -.infinity; values[6] = .infinity }
            try assertMatchesReference(.hardSwish, [TensorValue.float32(values, shape: [1, count])], exact: true, "hard swish \(count)")
        }
    }

    func testInnermostPadMatchesReference() throws {
        var rng = SeededGenerator(seed: 48)
        // BlazeFace pads channels (24 -> 28, ...); also padding before, empty padding, big rows.
        for (shape, before, after) in [([1, 64, 64, 24], 0, 4), ([1, 5, 7, 3], 2, 1), ([2, 3, 33], 17, 0), ([4, 70], 0, 0), ([1, 2, 300], 5, 70)] {
            let count = shape.reduce(1, *)
            let paddings = TensorValue.int32(Array(repeating: 0, count: 2 * shape.count - 2) + [Int32(before), Int32(after)],
                                             shape: [shape.count, 2])
            let input = TensorValue.float32(random(count, &rng), shape: shape)
            try assertMatchesReference(.pad, [input, paddings], exact: true, "pad \(shape) \(before)/\(after)")
            // uint8 with a zero point: the fill is the zero point.
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let quantized = TensorValue.uint8(bytes, shape: shape, scale: 0.5, zeroPoint: 9)
            let reference = try KernelRunner.run(.pad, inputs: [quantized, paddings], outputs: [.uint8(scale: 0.5, zeroPoint: 9)], kernels: .reference)[0]
            XCTAssertEqual(reference.shape.last, shape[shape.count - 1] + before + after)
            for selection in Self.selections {
                for threads in [1, 2] {
                    let actual = try KernelRunner.run(.pad, inputs: [quantized, paddings], outputs: [.uint8(scale: 0.5, zeroPoint: 9)],
                                                      threads: threads, kernels: selection)[0]
                    XCTAssertEqual(actual, reference, "uint8 pad \(shape) \(before)/\(after) \(selection) \(threads) threads")
                }
            }
        }
    }
}

extension OptimizedFloatKernelTests {
    /// Transposed convolutions whose windows tile the output (filter = stride, no padding) run as
    /// one dot product per output pixel (ck_tconv_tile_f32): channel tails, the 64-value limit,
    /// 3×3 stride 3, rows of 16+ pixels with 16·n channels (the transposed-block path, with two
    /// values per output row and more), a clamping builtin TRANSPOSE_CONV.
    func testTilingTransposeConvolutionMatchesReference() throws {
        var rng = SeededGenerator(seed: 49)
        for (h, w, cin, cout, k) in [(5, 7, 37, 1, 2), (3, 4, 16, 16, 2), (4, 3, 5, 7, 3), (2, 2, 64, 17, 2), (2, 19, 32, 1, 2), (3, 17, 16, 3, 2), (2, 33, 16, 2, 1)] {
            let input = TensorValue.float32(random(2 * h * w * cin, &rng), shape: [2, h, w, cin])
            let weights = TensorValue.float32(random(cout * k * k * cin, &rng), shape: [cout, k, k, cin], isConstant: true)
            let bias = TensorValue.float32(random(cout, &rng), shape: [cout], isConstant: true)
            let options = ConvolutionKernelTests.mediaPipeOptions(padding: 1, strideWidth: Int32(k), strideHeight: Int32(k))
            try assertMatchesReference(custom: ("Convolution2DTransposeBias", options), [input, weights, bias],
                                       "tiling Convolution2DTransposeBias \(h)x\(w)x\(cin)→\(cout) k\(k)")
        }
        let shape = TensorValue.int32([1, 8, 6, 3], shape: [4])
        let input = TensorValue.float32(random(4 * 3 * 20, &rng, range: -2...2), shape: [1, 4, 3, 20])
        let weights = TensorValue.float32(random(3 * 2 * 2 * 20, &rng), shape: [3, 2, 2, 20], isConstant: true)
        let bias = TensorValue.float32(random(3, &rng), shape: [3], isConstant: true)
        var o = TransposeConvOptions()
        o.padding = .valid
        (o.strideHeight, o.strideWidth) = (2, 2)
        o.activation = .relu6
        try assertMatchesReference(.transposeConv, options: .transposeConv(o), [shape, weights, input, bias], "tiling TRANSPOSE_CONV relu6")
    }
}

extension OptimizedFloatKernelTests {
    /// 8-bit QUANTIZE (a 256-entry table) through ck_lut_8 (AVX-512 VBMI byte permutes where the
    /// CPU has them) equals the reference for every selection, tails of 1–63 bytes included.
    func testQuantizeTableLookupMatchesReference() throws {
        var rng = SeededGenerator(seed: 50)
        for count in [1, 63, 64, 65, 1000, 150_528] {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let input = TensorValue.uint8(bytes, shape: [1, count], scale: 0.0078125, zeroPoint: 128)
            let output = OutputSpec.int8(scale: 0.0078125, zeroPoint: 0)
            let reference = try KernelRunner.run(.quantize, inputs: [input], outputs: [output], kernels: .reference)[0]
            // uint8 - 128 as int8: the bytes XOR 0x80.
            XCTAssertEqual(reference.bytes, bytes.map { $0 ^ 0x80 })
            for selection in Self.selections {
                for threads in [1, 2] {
                    let actual = try KernelRunner.run(.quantize, inputs: [input], outputs: [output], threads: threads, kernels: selection)[0]
                    XCTAssertEqual(actual.bytes, reference.bytes, "quantize \(count) \(selection) \(threads) threads")
                }
            }
        }
    }
}
