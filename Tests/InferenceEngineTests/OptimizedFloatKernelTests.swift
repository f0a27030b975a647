import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport

/// The float CKernels paths (CONV_2D and FULLY_CONNECTED as implicit GEMM, DEPTHWISE_CONV_2D,
/// TRANSPOSE_CONV / Convolution2DTransposeBias, MAX_POOL_2D) against the reference kernels, for
/// every instruction-set variant and at 1, 2 and 3 threads, on randomized small shapes: channel counts
/// that are not multiples of 8 or 16, 1×1 to 5×5 filters, strides 1–2, dilation 2, SAME/VALID,
/// clamping activations, 2 batches. Sums run in a different order than the reference's, so values
/// agree to a relative 1e-5; max pooling is exact (NaN inputs skipped as the reference does).
final class OptimizedFloatKernelTests: XCTestCase {
    static let selections: [KernelSelection] = [.portable, .avx2, .avx512, .optimized]

    func random(_ count: Int, _ rng: inout SeededGenerator, range: ClosedRange<Float> = -1...1) -> [Float] {
        (0..<count).map { _ in Float.random(in: range, using: &rng) }
    }

    func assertMatchesReference(_ op: BuiltinOperator? = nil, custom: (name: String, options: [UInt8])? = nil,
                                options: BuiltinOptions = .none, _ inputs: [TensorValue?], exact: Bool = false,
                                _ label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        func run(_ kernels: KernelSelection, threads: Int) throws -> TensorValue {
            if let custom {
                return try KernelRunner.run(custom: custom.name, customOptions: custom.options, inputs: inputs, outputs: [.float32],
                                            threads: threads, kernels: kernels)[0]
            }
            return try KernelRunner.run(op ?? .conv2D, options: options, inputs: inputs, outputs: [.float32], threads: threads, kernels: kernels)[0]
        }
        let expected = try run(.reference, threads: 1)
        XCTAssertFalse(expected.floats.isEmpty, label, file: file, line: line)
        let scale = max(1, expected.floats.filter(\.isFinite).map { abs($0) }.max() ?? 1)
        for selection in Self.selections {
            var first: [Float]?
            // 3 threads: short operators run as one piece per thread (ParallelRunner.isShort), so
            // uneven cuts of rows and pixels too.
            for threads in [1, 2, 3] {
                let actual = try run(selection, threads: threads)
                XCTAssertEqual(actual.shape, expected.shape, "\(label) \(selection)", file: file, line: line)
                let values = actual.floats
                if let first {
                    XCTAssertEqual(values.map(\.bitPattern), first.map(\.bitPattern), "\(label) \(selection): 1 vs \(threads) threads", file: file, line: line)
                }
                first = values
                for (i, (a, e)) in zip(values, expected.floats).enumerated() {
                    let ok = exact ? (a.bitPattern == e.bitPattern || (a.isNaN && e.isNaN)) : abs(a - e) <= 1e-5 * scale
                    if !ok {
                        XCTFail("\(label) \(selection) threads \(threads): element \(i) is \(a), reference \(e)", file: file, line: line)
                        return
                    }
                }
            }
        }
    }

    func testConvolutionMatchesReference() throws {
        var rng = SeededGenerator(seed: 41)
        let cases: [(h: Int, w: Int, cin: Int, cout: Int, k: Int, stride: Int, dilation: Int, padding: Padding, act: FusedActivation)] = [
            (9, 11, 3, 16, 3, 2, 1, .same, .relu),        // a first layer: 3 input channels
            (7, 7, 20, 17, 1, 1, 1, .valid, .none),       // 1×1, channel tails
            (8, 6, 13, 33, 3, 1, 2, .same, .relu6),       // dilation 2
            (10, 9, 5, 7, 5, 2, 1, .valid, .reluN1To1),   // 5×5 stride 2
            (5, 5, 64, 40, 3, 1, 1, .same, .none),        // deeper reduction
            // Few input channels: each filter row read as one run (row taps), tiles inside a row,
            // across rows and at the left/right edges (zero-padded patches), 8 and 24 outputs.
            (6, 37, 1, 8, 3, 2, 1, .same, .none),
            (9, 31, 4, 24, 5, 2, 1, .same, .relu),
            (7, 29, 3, 20, 3, 1, 1, .valid, .none),
            // 3 input channels, stride 2 (ck_conv_c3s2_f32 on AVX-512): 16-pixel blocks with a tail,
            // image edges, 8 / 24 / 40 output channels (groups of 16 and 8), 3×3 and 5×5.
            (8, 37, 3, 8, 3, 2, 1, .valid, .relu6),
            (11, 40, 3, 24, 5, 2, 1, .same, .relu),
            (6, 35, 3, 40, 3, 2, 1, .same, .none),
            // 8 output channels (mobilenet_v1_0.25's first layer; on CPUs that split 512-bit
            // operations one 256-bit vector per pixel, 12 pixels per pass): a padded left edge
            // (SAME over 37 columns), the right one, 5×5.
            (9, 37, 3, 8, 3, 2, 1, .same, .relu),
            (7, 33, 3, 8, 5, 2, 1, .same, .none),
            // 351 output columns: wider than the planes' ring holds at once (two strips).
            (3, 701, 3, 16, 3, 2, 1, .same, .relu6),
            // 1×1 with a long reduction: K blocking over a pair of column blocks, the last block whole.
            (5, 7, 300, 40, 1, 1, 1, .valid, .relu),
            // Fewer pixel tiles than pieces wanted and more channel-block pairs: the work is cut
            // along the channels (GemmSplit), the last piece one block; with K blocking too.
            (7, 7, 24, 200, 1, 1, 1, .valid, .relu),
            (3, 3, 40, 100, 3, 1, 1, .same, .none),
            (4, 4, 300, 72, 1, 1, 1, .valid, .none),
            // 1×1 with 4, 8 or 16 input channels and at most 4 column blocks (AVX-512: the weights
            // held in registers, groups of 8 pixels and a tail; 13 × 9 pixels is not a multiple of 8).
            (13, 9, 8, 16, 1, 1, 1, .valid, .relu6),
            (13, 9, 16, 40, 1, 1, 1, .valid, .none),
            (5, 9, 4, 12, 1, 1, 1, .valid, .relu),
            (6, 7, 16, 100, 1, 1, 1, .valid, .none),
            // An odd count of column blocks (48, 80 outputs): the last three as 4 × 48 tiles, with
            // a short reduction and with K blocking (K > 256, chunks of at most 128), full and
            // partial third blocks, pixel counts that leave 1–3 rows in the last tile.
            (5, 7, 96, 48, 1, 1, 1, .valid, .relu6),
            (3, 9, 40, 80, 1, 1, 1, .valid, .none),
            (5, 5, 288, 80, 1, 1, 1, .valid, .relu),
            (3, 7, 480, 48, 1, 1, 1, .valid, .none),
            (2, 9, 300, 36, 1, 1, 1, .valid, .relu6),
        ]
        for c in cases {
            let input = TensorValue.float32(random(2 * c.h * c.w * c.cin, &rng, range: -2...2), shape: [2, c.h, c.w, c.cin])
            let filter = TensorValue.float32(random(c.cout * c.k * c.k * c.cin, &rng), shape: [c.cout, c.k, c.k, c.cin], isConstant: true)
            let bias = TensorValue.float32(random(c.cout, &rng), shape: [c.cout], isConstant: true)
            let options = ConvolutionKernelTests.conv(c.padding, stride: (c.stride, c.stride), dilation: (c.dilation, c.dilation), activation: c.act)
            try assertMatchesReference(.conv2D, options: options, [input, filter, bias], "conv \(c)")
            try assertMatchesReference(.conv2D, options: options, [input, filter, nil], "conv without bias \(c)")
        }
    }

    /// First layers of 8 output channels run their own kernel on CPUs that split 512-bit
    /// operations (``KernelSelection/optimized`` only), with the sums of the capped AVX-512
    /// selection's 16-pixel blocks in the same order: the same bits, at 1 and 2 threads.
    func testEightChannelFirstLayerHasTheAVX512Values() throws {
        var rng = SeededGenerator(seed: 43)
        for (h, w, k, padding) in [(12, 61, 3, Padding.same), (9, 40, 3, .valid), (8, 45, 5, .same)] {
            let input = TensorValue.float32(random(h * w * 3, &rng, range: -2...2), shape: [1, h, w, 3])
            let filter = TensorValue.float32(random(8 * k * k * 3, &rng), shape: [8, k, k, 3], isConstant: true)
            let bias = TensorValue.float32(random(8, &rng), shape: [8], isConstant: true)
            let options = ConvolutionKernelTests.conv(padding, stride: (2, 2), dilation: (1, 1), activation: .relu6)
            for threads in [1, 2] {
                func run(_ kernels: KernelSelection) throws -> [UInt32] {
                    try KernelRunner.run(.conv2D, options: options, inputs: [input, filter, bias], outputs: [.float32],
                                         threads: threads, kernels: kernels)[0].floats.map(\.bitPattern)
                }
                let optimized = try run(.optimized)
                XCTAssertEqual(optimized.count, ((h - (padding == .same ? 1 : k)) / 2 + 1) * ((w - (padding == .same ? 1 : k)) / 2 + 1) * 8)
                let avx512 = try run(.avx512)
                XCTAssertNil(optimized.indices.first { $0 < avx512.count && optimized[$0] != avx512[$0] }, "\(h)x\(w) k\(k) \(padding), \(threads) threads: first differing element")
                XCTAssertEqual(optimized.count, avx512.count)
            }
        }
    }

    /// An image with no output pixels (a zero-width input: the fuzzer's case) gives an empty output
    /// from every selection and thread count instead of reaching the kernels with no pixels
    /// (the float GEMM divided by the output width).
    func testConvolutionOfAnEmptyImageIsEmpty() throws {
        var rng = SeededGenerator(seed: 5)
        for (h, w, k) in [(4, 0, 1), (0, 5, 3), (3, 0, 3)] {
            let input = TensorValue.float32([], shape: [1, h, w, 3])
            let filter = TensorValue.float32(random(8 * k * k * 3, &rng), shape: [8, k, k, 3], isConstant: true)
            for kernels in Self.selections + [.reference] {
                for threads in [1, 2] {
                    let output = try KernelRunner.run(.conv2D, options: ConvolutionKernelTests.conv(.same), inputs: [input, filter, nil],
                                                      outputs: [.float32], threads: threads, kernels: kernels)[0]
                    XCTAssertEqual(output.floats, [], "\(h)x\(w) k\(k) \(kernels) \(threads) threads")
                    XCTAssertEqual(output.shape, [1, h, w, 8])
                }
            }
        }
        // FULLY_CONNECTED with no rows: a 1×1 convolution over a 1×0 image.
        let rows = TensorValue.float32([], shape: [0, 16])
        let weights = TensorValue.float32(random(8 * 16, &rng), shape: [8, 16], isConstant: true)
        for kernels in Self.selections + [.reference] {
            for threads in [1, 2] {
                let output = try KernelRunner.run(.fullyConnected, options: ConvolutionKernelTests.fullyConnected(),
                                                  inputs: [rows, weights, nil], outputs: [.float32], threads: threads,
                                                  kernels: kernels)[0]
                XCTAssertEqual(output.floats, [], "fully connected \(kernels) \(threads) threads")
            }
        }
    }

    func testDepthwiseMatchesReference() throws {
        var rng = SeededGenerator(seed: 42)
        let cases: [(h: Int, w: Int, c: Int, k: Int, stride: Int, dilation: Int, padding: Padding, act: FusedActivation)] = [
            (9, 8, 20, 3, 1, 1, .same, .relu6),
            (11, 10, 33, 3, 2, 1, .same, .none),
            (12, 11, 7, 5, 1, 2, .valid, .relu),
            (6, 6, 16, 3, 2, 1, .valid, .none),
            // Input rows of a pass beyond 64 KiB, a block's within: each pass walks its row block by
            // block, every channel chunk of a block before the next (AVX-512), for two-row passes,
            // stride 2, dilation 2 and 5×5 with a channel tail.
            (8, 40, 128, 3, 1, 1, .same, .relu6),
            (9, 60, 96, 3, 2, 1, .same, .none),
            (5, 90, 64, 3, 1, 2, .valid, .relu),
            (6, 120, 72, 5, 1, 1, .same, .none),
            // 3×3 dilated by 2 and 4 (DeepLab) and 5×5 at stride 2 (BlazeFace) with "same" padding:
            // edge columns checked, interiors not; an image narrower than the dilated window.
            (13, 21, 24, 3, 1, 2, .same, .relu6),
            (14, 19, 40, 3, 1, 4, .same, .none),
            (7, 7, 16, 3, 1, 4, .same, .relu),
            (15, 17, 16, 5, 2, 1, .same, .relu),
            (11, 30, 24, 5, 2, 1, .valid, .none),
        ]
        for c in cases {
            let input = TensorValue.float32(random(2 * c.h * c.w * c.c, &rng, range: -2...2), shape: [2, c.h, c.w, c.c])
            let filter = TensorValue.float32(random(c.k * c.k * c.c, &rng), shape: [1, c.k, c.k, c.c], isConstant: true)
            let bias = TensorValue.float32(random(c.c, &rng), shape: [c.c], isConstant: true)
            let options = ConvolutionKernelTests.depthwise(c.padding, stride: (c.stride, c.stride), dilation: (c.dilation, c.dilation),
                                                           multiplier: 1, activation: c.act)
            try assertMatchesReference(.depthwiseConv2D, options: options, [input, filter, bias], "depthwise \(c)")
            try assertMatchesReference(.depthwiseConv2D, options: options, [input, filter, nil], "depthwise without bias \(c)")
        }
    }

    func testFullyConnectedMatchesReference() throws {
        var rng = SeededGenerator(seed: 43)
        for (batches, inputSize, units) in [(1, 37, 10), (3, 64, 17), (2, 5, 48)] {
            let input = TensorValue.float32(random(batches * inputSize, &rng), shape: [batches, inputSize])
            let weights = TensorValue.float32(random(units * inputSize, &rng), shape: [units, inputSize], isConstant: true)
            let bias = TensorValue.float32(random(units, &rng), shape: [units], isConstant: true)
            try assertMatchesReference(.fullyConnected, options: ConvolutionKernelTests.fullyConnected(activation: .relu),
                                       [input, weights, bias], "fully connected \(batches)x\(inputSize)x\(units)")
        }
    }

    func testTransposeConvolutionMatchesReference() throws {
        var rng = SeededGenerator(seed: 44)
        // MediaPipe's Convolution2DTransposeBias: (h, w, cin, cout, k, stride, padding code).
        // 2×2 stride 2 with an even size or VALID (padding 2: MediaPipe then removes nothing) tiles the
        // output: rows of 8 and 16 input pixels with tails (the tiling kernel's vector paths), in_c a
        // multiple of 8 but not of 16, two output channels (the generic store).
        for (h, w, cin, cout, k, stride, padding) in [(6, 5, 16, 1, 2, 2, Int32(1)), (4, 36, 16, 1, 2, 2, 1), (3, 35, 16, 1, 2, 2, 2),
                                                      (2, 19, 24, 2, 2, 2, 2),
                                                      (4, 5, 7, 9, 3, 2, 1), (3, 4, 5, 3, 4, 3, 2)] {
            let input = TensorValue.float32(random(2 * h * w * cin, &rng), shape: [2, h, w, cin])
            let weights = TensorValue.float32(random(cout * k * k * cin, &rng), shape: [cout, k, k, cin], isConstant: true)
            let bias = TensorValue.float32(random(cout, &rng), shape: [cout], isConstant: true)
            let options = ConvolutionKernelTests.mediaPipeOptions(padding: padding, strideWidth: Int32(stride), strideHeight: Int32(stride))
            try assertMatchesReference(custom: ("Convolution2DTransposeBias", options), [input, weights, bias],
                                       "Convolution2DTransposeBias \(h)x\(w)x\(cin)→\(cout) k\(k) s\(stride) p\(padding)")
        }
        // Weights computed at run time (not constant): the gather kernel instead of GEMM + col2im.
        for (h, w, cin, cout, k, stride, padding) in [(5, 4, 16, 1, 2, 2, Int32(1)), (4, 3, 7, 5, 3, 2, 1)] {
            let input = TensorValue.float32(random(h * w * cin, &rng), shape: [1, h, w, cin])
            let weights = TensorValue.float32(random(cout * k * k * cin, &rng), shape: [cout, k, k, cin], isConstant: false)
            let bias = TensorValue.float32(random(cout, &rng), shape: [cout], isConstant: true)
            let options = ConvolutionKernelTests.mediaPipeOptions(padding: padding, strideWidth: Int32(stride), strideHeight: Int32(stride))
            try assertMatchesReference(custom: ("Convolution2DTransposeBias", options), [input, weights, bias],
                                       "Convolution2DTransposeBias, run-time weights \(h)x\(w)x\(cin)→\(cout) k\(k) s\(stride)")
        }
        // The builtin TRANSPOSE_CONV: output shape given, bias added before the clamp.
        for (h, w, cin, cout, k, stride, padding) in [(5, 4, 6, 10, 3, 2, Padding.same), (4, 4, 3, 2, 2, 2, .valid)] {
            let oh = padding == .same ? h * stride : (h - 1) * stride + k, ow = padding == .same ? w * stride : (w - 1) * stride + k
            let shape = TensorValue.int32([1, Int32(oh), Int32(ow), Int32(cout)], shape: [4])
            let input = TensorValue.float32(random(h * w * cin, &rng), shape: [1, h, w, cin])
            let weights = TensorValue.float32(random(cout * k * k * cin, &rng), shape: [cout, k, k, cin], isConstant: true)
            let bias = TensorValue.float32(random(cout, &rng), shape: [cout], isConstant: true)
            var o = TransposeConvOptions()
            o.padding = padding
            (o.strideHeight, o.strideWidth) = (stride, stride)
            try assertMatchesReference(.transposeConv, options: .transposeConv(o), [shape, weights, input, bias],
                                       "TRANSPOSE_CONV \(h)x\(w)x\(cin)→\(cout) k\(k) s\(stride) \(padding)")
        }
    }

    /// SOFTMAX: rows of 1,001 (a classifier), 21 (a vector and a masked tail) and 7 values (under a
    /// vector: the scalar loop), betas 1 and 0.5, at 1 and 2 threads; rows with a NaN or an
    /// infinity go through the reference's scalar loop, so they match it exactly (NaNs included).
    func testSoftmaxMatchesReference() throws {
        var rng = SeededGenerator(seed: 50)
        for (rows, depth, beta) in [(3, 1001, Float(1)), (5, 21, 0.5), (4, 7, 1)] {
            var values = random(rows * depth, &rng, range: -30...30)
            if depth >= 21 {
                values[depth + 3] = .nan          // row 1
                values[2 * depth + 5] = .infinity // row 2
            }
            let input = TensorValue.float32(values, shape: [1, rows, depth])
            let expected = try KernelRunner.run(.softmax, options: .softmax(beta: beta), inputs: [input], outputs: [.float32],
                                                kernels: .reference)[0].floats
            for selection in Self.selections {
                for threads in [1, 2] {
                    let actual = try KernelRunner.run(.softmax, options: .softmax(beta: beta), inputs: [input], outputs: [.float32],
                                                      threads: threads, kernels: selection)[0].floats
                    XCTAssertEqual(actual.count, expected.count)
                    for (i, (a, e)) in zip(actual, expected).enumerated() {
                        let special = depth >= 21 && (i / depth == 1 || i / depth == 2)
                        if special || e.isNaN {
                            XCTAssertEqual(a.bitPattern, e.bitPattern, "\(selection): softmax row \(i / depth) element \(i % depth)")
                        } else {
                            XCTAssertLessThanOrEqual(abs(a - e), max(2e-6 * e, 1e-30), "\(selection) \(threads) threads: \(a) vs \(e)")
                        }
                    }
                }
            }
        }
    }

    func testLogisticMatchesReference() throws {
        var rng = SeededGenerator(seed: 46)
        var values = random(1000, &rng, range: -20...20) + [0, -0.0, 88, -88, 100, -100, .infinity, -.infinity, .nan]
        values += random(37, &rng, range: -1...1)  // a tail that is not a multiple of the vector width
        let input = TensorValue.float32(values, shape: [values.count])
        let expected = try KernelRunner.run(.logistic, inputs: [input], outputs: [.float32], kernels: .reference)[0].floats
        for selection in Self.selections {
            let actual = try KernelRunner.run(.logistic, inputs: [input], outputs: [.float32], kernels: selection)[0].floats
            for (i, (a, e)) in zip(actual, expected).enumerated() {
                if e.isNaN {
                    XCTAssertTrue(a.isNaN, "\(selection): logistic(NaN) must be NaN")
                } else {
                    // Within 5e-7 relative (a few float ulps), absolute 1e-37 (the far negative tail underflows differently).
                    XCTAssertLessThanOrEqual(abs(a - e), max(5e-7 * abs(e), 1e-37), "\(selection): logistic(\(values[i])) = \(a), reference \(e)")
                }
            }
        }
    }

    func testBinaryArithmeticMatchesReferenceExactly() throws {
        var rng = SeededGenerator(seed: 47)
        // (a shape, b shape): same shape (long and short), per-channel, scalar, leading broadcast,
        // and a two-dimensional broadcast (the generic kernel).
        let shapes: [([Int], [Int])] = [([1, 16, 16, 24], [1, 16, 16, 24]), ([2, 8192], [2, 8192]), ([7, 5], [7, 5]),
                                        ([1, 9, 7, 21], [1, 1, 1, 21]), ([1, 1, 1, 21], [1, 9, 7, 21]), ([3, 17], [1]),
                                        ([4, 1, 5], [1, 3, 5])]
        let ops: [(BuiltinOperator, (FusedActivation) -> BuiltinOptions)] = [(.add, { .add(activation: $0) }), (.sub, { .sub(activation: $0) }),
                                                                             (.mul, { .mul(activation: $0) }), (.div, { .div(activation: $0) })]
        for (aShape, bShape) in shapes {
            var a = random(aShape.reduce(1, *), &rng, range: -4...4), b = random(bShape.reduce(1, *), &rng, range: -4...4)
            a[0] = .nan
            if a.count > 3 { a[3] = .infinity }
            if b.count > 2 { b[2] = 0 }
            for (op, options) in ops {
                for activation in [FusedActivation.none, .relu6] {
                    try assertMatchesReference(op, options: options(activation),
                                               [.float32(a, shape: aShape), .float32(b, shape: bShape)], exact: true,
                                               "\(op) \(aShape) \(bShape) \(activation)")
                }
            }
        }
    }

    /// Float resize runs as separable fused lerps (ck_resize_bilinear_f32), within float rounding of
    /// the reference's four-weight sum; every instruction set and thread count gives the same bits.
    func testResizeBilinearMatchesReference() throws {
        var rng = SeededGenerator(seed: 48)
        // deeplab-like 33→257 (21 channels), an odd shrink, and align-corners / half-pixel variants;
        // a long row; rows whose blended input (width × channels) outgrows the AVX-512 kernel's
        // 8,192-float buffer, which blend each pixel's source columns where it reads them.
        let cases: [(h: Int, w: Int, c: Int, oh: Int, ow: Int, align: Bool, half: Bool)] = [
            (5, 4, 21, 37, 29, false, false), (9, 7, 16, 4, 3, false, false), (6, 5, 17, 11, 13, true, false), (6, 5, 33, 13, 11, false, true),
            (3, 17, 5, 2, 300, false, false), (2, 33, 21, 3, 529, true, false), (3, 300, 30, 4, 450, false, true),
            (2, 3, 2800, 3, 5, true, false),
        ]
        for c in cases {
            let input = TensorValue.float32(random(2 * c.h * c.w * c.c, &rng, range: -3...3), shape: [2, c.h, c.w, c.c])
            var o = ResizeOptions()
            o.alignCorners = c.align
            o.halfPixelCenters = c.half
            try assertMatchesReference(.resizeBilinear, options: .resizeBilinear(o),
                                       [input, .int32([Int32(c.oh), Int32(c.ow)], shape: [2])], "resize \(c)")
        }
    }

    func testQuantizedResizeAndArgMaxMatchReferenceExactly() throws {
        var rng = SeededGenerator(seed: 49)
        for (h, w, c, oh, ow, align) in [(5, 4, 21, 37, 29, false), (6, 5, 17, 11, 13, true), (4, 4, 3, 8, 8, false)] {
            let bytes = (0..<(2 * h * w * c)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var o = ResizeOptions()
            o.alignCorners = align
            let inputs: [TensorValue?] = [.uint8(bytes, shape: [2, h, w, c], scale: 0.1, zeroPoint: 3), .int32([Int32(oh), Int32(ow)], shape: [2])]
            let expected = try KernelRunner.run(.resizeBilinear, options: .resizeBilinear(o), inputs: inputs,
                                                outputs: [.uint8(scale: 0.1, zeroPoint: 3)], kernels: .reference)[0]
            for selection in Self.selections {
                let actual = try KernelRunner.run(.resizeBilinear, options: .resizeBilinear(o), inputs: inputs,
                                                  outputs: [.uint8(scale: 0.1, zeroPoint: 3)], threads: 2, kernels: selection)[0]
                XCTAssertEqual(actual.bytes, expected.bytes, "uint8 resize \(h)x\(w)x\(c)→\(oh)x\(ow) \(selection)")
            }
        }
        // ARG_MAX over the innermost axis: uint8 and int8 (ties go to the first index), int32 and int64 outputs.
        for (type, signed, axis) in [(ElementType.uint8, false, 21), (.int8, true, 21), (.uint8, false, 32), (.int8, true, 40), (.uint8, false, 1)] {
            var bytes = (0..<(300 * axis)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if axis > 9 {
                for i in stride(from: 0, to: bytes.count, by: axis * 7) { bytes[i + 4] = 255; bytes[i + 9] = 255 }  // ties at the top
            }
            let input: TensorValue = signed ? .int8(bytes.map { Int8(bitPattern: $0) }, shape: [1, 300, axis], quantization: QuantizationParameters(scale: 1, zeroPoint: 0))
                                            : .uint8(bytes, shape: [1, 300, axis], scale: 1, zeroPoint: 0)
            for outputType in [ElementType.int32, .int64] {
                let inputs: [TensorValue?] = [input, .int32([2], shape: [1])]
                let expected = try KernelRunner.run(.argMax, options: .argMax(outputType: outputType), inputs: inputs,
                                                    outputs: [OutputSpec(type: outputType)], kernels: .reference)[0]
                for selection in Self.selections {
                    let actual = try KernelRunner.run(.argMax, options: .argMax(outputType: outputType), inputs: inputs,
                                                      outputs: [OutputSpec(type: outputType)], threads: 2, kernels: selection)[0]
                    XCTAssertEqual(actual.bytes, expected.bytes, "argmax \(type) axis \(axis) → \(outputType) \(selection)")
                    XCTAssertEqual(actual.shape, [1, 300])
                }
            }
        }
    }

    func testMaxPoolMatchesReferenceExactly() throws {
        var rng = SeededGenerator(seed: 45)
        // 2 × 2 stride-2 windows inside the image take AVX2's unrolled path: channel tails of 4, 2
        // (42) and 2 + 1 (11), odd widths and heights (a last partial window), signed zeros in the first window's
        // first and last channels.
        for (h, w, c, k, stride, padding) in [(9, 8, 28, 2, 2, Padding.same), (7, 7, 17, 3, 2, .valid), (5, 6, 40, 3, 1, .same),
                                              (8, 10, 42, 2, 2, .valid), (7, 9, 11, 2, 2, .same)] {
            var values = random(2 * h * w * c, &rng, range: -3...3)
            values[3] = .nan
            values[c + 5] = -.infinity
            for channel in [0, c - 1] {  // the first window: -0, +0, -0, -1 (the first zero wins)
                values[channel] = -0.0
                values[c + channel] = 0.0
                values[w * c + channel] = -0.0
                values[w * c + c + channel] = -1
            }
            let input = TensorValue.float32(values, shape: [2, h, w, c])
            var o = Pool2DOptions()
            o.padding = padding
            (o.strideHeight, o.strideWidth) = (stride, stride)
            (o.filterHeight, o.filterWidth) = (k, k)
            o.activation = .relu6
            try assertMatchesReference(.maxPool2D, options: .pool2D(o), [input], exact: true, "max pool \(h)x\(w)x\(c) k\(k) s\(stride) \(padding)")
        }
    }
}
