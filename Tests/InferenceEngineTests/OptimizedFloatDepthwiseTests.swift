import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport

/// The float depthwise kernels (compile-time 3×3 / 5×5 / dilated variants, two-row passes, the
/// 8-channel pixel-pair form, checked border blocks, the generic fallback, pieces of row pairs)
/// and the few-row GEMM path of CONV_2D / FULLY_CONNECTED (1 to 4 output pixels
/// in a tile, several channel blocks in flight) against the reference kernels, for every
/// instruction-set variant at 1 and 2 threads. Widths are chosen so rows end in every block size
/// (8, 4, 2, 1 columns) and border blocks overlap interior ones; heights are odd and even (a last
/// one-row pass); channel counts hit full 16-channel chunks, 8-channel tails, masked tails and
/// exactly 8 channels. Values agree to a relative 1e-5; 1 and 2 threads agree bit for bit (the
/// comparison is OptimizedFloatKernelTests.assertMatchesReference).
extension OptimizedFloatKernelTests {
    struct DepthwiseCase {
        var h: Int, w: Int, c: Int
        var kh: Int, kw: Int
        var stride: (Int, Int) = (1, 1)
        var dilation: (Int, Int) = (1, 1)
        var padding: Padding = .same
        var activation: FusedActivation = .relu6
        var batches = 1
    }

    func checkDepthwise(_ cases: [DepthwiseCase], seed: UInt64, file: StaticString = #filePath, line: UInt = #line) throws {
        var rng = SeededGenerator(seed: seed)
        for c in cases {
            let input = TensorValue.float32(random(c.batches * c.h * c.w * c.c, &rng, range: -2...2), shape: [c.batches, c.h, c.w, c.c])
            let filter = TensorValue.float32(random(c.kh * c.kw * c.c, &rng), shape: [1, c.kh, c.kw, c.c], isConstant: true)
            let bias = TensorValue.float32(random(c.c, &rng), shape: [c.c], isConstant: true)
            let options = ConvolutionKernelTests.depthwise(c.padding, stride: c.stride, dilation: c.dilation, multiplier: 1,
                                                           activation: c.activation)
            let label = "depthwise \(c.batches)x\(c.h)x\(c.w)x\(c.c) k\(c.kh)x\(c.kw) s\(c.stride) d\(c.dilation) \(c.padding) \(c.activation)"
            try assertMatchesReference(.depthwiseConv2D, options: options, [input, filter, bias], label, file: file, line: line)
            try assertMatchesReference(.depthwiseConv2D, options: options, [input, filter, nil], label + " without bias", file: file, line: line)
        }
    }

    /// 3×3 stride 1 (two-row passes): every row width from 1 to 21 and a wide one, so rows end in
    /// each block size and border blocks; 8 channels take the pixel-pair form.
    func testDepthwise3x3Stride1() throws {
        var cases: [DepthwiseCase] = []
        for (i, w) in (Array(1...21) + [37]).enumerated() {
            let channels = [16, 8, 24, 7, 28, 33, 3, 48][i % 8]
            cases.append(DepthwiseCase(h: 3 + i % 4, w: w, c: channels, kh: 3, kw: 3, activation: i % 3 == 0 ? .none : .relu6))
        }
        cases.append(DepthwiseCase(h: 9, w: 13, c: 8, kh: 3, kw: 3, padding: .valid, activation: .relu, batches: 2))
        cases.append(DepthwiseCase(h: 7, w: 30, c: 8, kh: 3, kw: 3, batches: 2))
        cases.append(DepthwiseCase(h: 5, w: 2, c: 8, kh: 3, kw: 3))
        cases.append(DepthwiseCase(h: 6, w: 17, c: 40, kh: 3, kw: 3, padding: .valid, batches: 2))
        try checkDepthwise(cases, seed: 61)
    }

    /// 3×3 stride 2 and 5×5 stride 1 and 2 (face detection, selfie segmentation), SAME and VALID.
    func testDepthwiseStride2And5x5() throws {
        var cases: [DepthwiseCase] = []
        for (i, (h, w, c)) in [(9, 9, 16), (10, 17, 24), (7, 34, 8), (6, 3, 28), (11, 19, 40), (4, 1, 16)].enumerated() {
            let padding: Padding = i % 2 == 0 || w < 5 ? .same : .valid
            cases.append(DepthwiseCase(h: h, w: w, c: c, kh: 3, kw: 3, stride: (2, 2), padding: padding))
            cases.append(DepthwiseCase(h: h + 2, w: w + 3, c: c, kh: 5, kw: 5, padding: padding, activation: .none))
            cases.append(DepthwiseCase(h: h + 3, w: w + 4, c: c, kh: 5, kw: 5, stride: (2, 2), padding: .same))
        }
        cases.append(DepthwiseCase(h: 12, w: 21, c: 8, kh: 5, kw: 5, batches: 2))
        try checkDepthwise(cases, seed: 62)
    }

    /// Dilated 3×3 (deeplab's 2 and 4; by 2 in row pairs), the generic kernel (other widths, strides, dilations,
    /// non-square filters, different vertical and horizontal strides), and deep layers with many
    /// channel chunks.
    func testDepthwiseDilatedAndGeneric() throws {
        let cases: [DepthwiseCase] = [
            DepthwiseCase(h: 11, w: 13, c: 24, kh: 3, kw: 3, dilation: (2, 2)),
            DepthwiseCase(h: 12, w: 23, c: 16, kh: 3, kw: 3, dilation: (4, 4)),
            DepthwiseCase(h: 9, w: 10, c: 8, kh: 3, kw: 3, dilation: (4, 4), activation: .none),
            DepthwiseCase(h: 10, w: 12, c: 9, kh: 3, kw: 3, dilation: (2, 2), padding: .valid),
            DepthwiseCase(h: 8, w: 11, c: 20, kh: 2, kw: 2),
            DepthwiseCase(h: 9, w: 14, c: 8, kh: 7, kw: 7, activation: .relu),
            DepthwiseCase(h: 10, w: 13, c: 17, kh: 3, kw: 3, stride: (3, 3), dilation: (3, 3)),
            DepthwiseCase(h: 7, w: 15, c: 12, kh: 1, kw: 5, stride: (1, 2), padding: .same),
            DepthwiseCase(h: 13, w: 9, c: 32, kh: 5, kw: 3, stride: (2, 1), dilation: (1, 2)),
            DepthwiseCase(h: 11, w: 12, c: 8, kh: 3, kw: 3, stride: (2, 1)),
            DepthwiseCase(h: 10, w: 21, c: 24, kh: 3, kw: 3, stride: (1, 2), dilation: (2, 1)),
            DepthwiseCase(h: 15, w: 13, c: 16, kh: 5, kw: 5, dilation: (3, 1), padding: .valid),
            DepthwiseCase(h: 20, w: 7, c: 100, kh: 3, kw: 3, batches: 2),
            DepthwiseCase(h: 17, w: 9, c: 264, kh: 3, kw: 3, dilation: (2, 2)),
            // Dilated by 2, rows go in pairs (y, y + 2) in groups of 4 and the rest one by one:
            // heights with every remainder, pieces starting anywhere.
            DepthwiseCase(h: 21, w: 19, c: 40, kh: 3, kw: 3, dilation: (2, 2), activation: .none),
            DepthwiseCase(h: 6, w: 9, c: 16, kh: 3, kw: 3, dilation: (2, 2), padding: .valid),
            DepthwiseCase(h: 14, w: 33, c: 48, kh: 3, kw: 3, dilation: (2, 2)),
        ]
        try checkDepthwise(cases, seed: 63)
    }

    /// Stride-1 rows with "same" padding and at least 8 + (k - 1) · d / 2 columns run with edge
    /// blocks: 8 columns at each end whose taps outside the image are skipped at compile time,
    /// unchecked blocks between (down to a single column). Widths 16 (the two edge blocks meet),
    /// 17, 25 and 33 (a lone column between), 3×3 dilated 1, 2 and 4 and 5×5, channel counts walked
    /// chunk by chunk (16, masked 24, 288, 480) and block by block (33 wide: 192 dilated 1 and 4,
    /// 160 dilated 2; every chunk of a column block before the next). Narrower rows down to the
    /// least width of each filter (9, 10, 12, 10 columns; 14: MobileNet's 14 × 14 layers) have the
    /// two blocks overlap, the columns they share computed by both. Narrower rows still (but 7 and
    /// 8 columns: testDepthwiseStride2EdgeBlocks), VALID padding and strides keep the checked
    /// border blocks.
    func testDepthwiseEdgeBlocks() throws {
        var cases: [DepthwiseCase] = []
        for (i, w) in [16, 17, 25, 33].enumerated() {
            cases.append(DepthwiseCase(h: 5, w: w, c: [16, 24, 96, 192][i], kh: 3, kw: 3))
            cases.append(DepthwiseCase(h: 7, w: w, c: [24, 288, 16, 160][i], kh: 3, kw: 3, dilation: (2, 2), activation: .none))
            cases.append(DepthwiseCase(h: 6, w: w, c: [96, 16, 24, 192][i], kh: 3, kw: 3, dilation: (4, 4)))
            cases.append(DepthwiseCase(h: 6, w: w, c: [24, 96, 16, 32][i], kh: 5, kw: 5, activation: .relu))
        }
        for (i, w) in [9, 11, 14, 15].enumerated() {
            cases.append(DepthwiseCase(h: 5 + i % 2, w: w, c: [16, 128, 24, 7][i], kh: 3, kw: 3, activation: i % 2 == 0 ? .relu6 : .none))
        }
        for (i, w) in [10, 13].enumerated() {
            cases.append(DepthwiseCase(h: 7, w: w, c: [32, 24][i], kh: 3, kw: 3, dilation: (2, 2)))
            cases.append(DepthwiseCase(h: 6, w: w, c: [16, 40][i], kh: 5, kw: 5, activation: .relu))
        }
        cases.append(DepthwiseCase(h: 6, w: 12, c: 48, kh: 3, kw: 3, dilation: (4, 4)))
        cases.append(DepthwiseCase(h: 6, w: 14, c: 16, kh: 3, kw: 3, dilation: (4, 4), activation: .none))
        cases.append(DepthwiseCase(h: 4, w: 33, c: 480, kh: 3, kw: 3, dilation: (4, 4)))
        cases.append(DepthwiseCase(h: 10, w: 20, c: 32, kh: 3, kw: 3, dilation: (4, 4), padding: .valid))
        cases.append(DepthwiseCase(h: 6, w: 15, c: 32, kh: 3, kw: 3, dilation: (2, 2)))
        try checkDepthwise(cases, seed: 67)
    }

    /// 3×3 stride 2 with "same" padding over an even width (no padding left, the last column's
    /// last tap one column right of the image): unchecked blocks of 8, the last of them overlapping
    /// the right edge block when the width is not a multiple of 8 (outputs 9, 14, 28: MobileNet's
    /// 224 × 224 stride-2 layers end at 56, 28, 14 and 7), the nine weights held in registers over
    /// rows with all three input rows inside (odd and even heights: a last row with two). Rows of
    /// 7 or 8 output columns, stride 1 or 2, run as one block. Odd widths and VALID padding keep the
    /// checked blocks.
    func testDepthwiseStride2EdgeBlocks() throws {
        var cases: [DepthwiseCase] = []
        for (i, w) in [16, 18, 28, 32, 56, 14, 112].enumerated() {
            let channels = [16, 24, 128, 7, 32, 64, 16][i]
            cases.append(DepthwiseCase(h: 5 + i % 2, w: w, c: channels, kh: 3, kw: 3, stride: (2, 2), activation: i % 3 == 0 ? .none : .relu6))
        }
        cases.append(DepthwiseCase(h: 14, w: 14, c: 128, kh: 3, kw: 3, stride: (2, 2)))
        cases.append(DepthwiseCase(h: 7, w: 16, c: 40, kh: 3, kw: 3, stride: (2, 2), batches: 2))
        cases.append(DepthwiseCase(h: 8, w: 15, c: 24, kh: 3, kw: 3, stride: (2, 2)))
        cases.append(DepthwiseCase(h: 9, w: 16, c: 16, kh: 3, kw: 3, stride: (2, 2), padding: .valid))
        for (i, w) in [7, 8].enumerated() {
            cases.append(DepthwiseCase(h: 7, w: w, c: [256, 96][i], kh: 3, kw: 3))
            cases.append(DepthwiseCase(h: 8, w: w, c: [20, 33][i], kh: 3, kw: 3, activation: .none))
            cases.append(DepthwiseCase(h: 6, w: w, c: 16, kh: 3, kw: 3, padding: .valid))
        }
        try checkDepthwise(cases, seed: 68)
    }

    /// Depthwise weights computed at run time (not constant) are read in place like constant ones.
    func testDepthwiseRunTimeWeights() throws {
        var rng = SeededGenerator(seed: 64)
        let input = TensorValue.float32(random(6 * 19 * 24, &rng), shape: [1, 6, 19, 24])
        let filter = TensorValue.float32(random(9 * 24, &rng), shape: [1, 3, 3, 24], isConstant: false)
        let bias = TensorValue.float32(random(24, &rng), shape: [24], isConstant: false)
        try assertMatchesReference(.depthwiseConv2D, options: ConvolutionKernelTests.depthwise(.same, activation: .relu6),
                                   [input, filter, bias], "depthwise, run-time weights")
    }

    /// Few output pixels per tile: FULLY_CONNECTED with 1 to 5 batches (1 to 4 use the few-row
    /// kernel, 5 the tile), unit counts from one channel block to 63 (groups of up to 8 blocks with a
    /// masked last block), and a 1×1 CONV_2D on a 1×1 image like mobilenet's classifier.
    func testFewRowGemm() throws {
        var rng = SeededGenerator(seed: 65)
        for (batches, inputSize, units) in [(1, 37, 10), (1, 64, 100), (2, 19, 250), (3, 33, 129), (4, 21, 200), (5, 17, 90), (1, 256, 1001)] {
            let input = TensorValue.float32(random(batches * inputSize, &rng), shape: [batches, inputSize])
            let weights = TensorValue.float32(random(units * inputSize, &rng), shape: [units, inputSize], isConstant: true)
            let bias = TensorValue.float32(random(units, &rng), shape: [units], isConstant: true)
            try assertMatchesReference(.fullyConnected, options: ConvolutionKernelTests.fullyConnected(activation: batches % 2 == 0 ? .relu : .none),
                                       [input, weights, bias], "fully connected \(batches)x\(inputSize)x\(units)")
        }
        let input = TensorValue.float32(random(96, &rng), shape: [1, 1, 1, 96])
        let filter = TensorValue.float32(random(301 * 96, &rng), shape: [301, 1, 1, 96], isConstant: true)
        let bias = TensorValue.float32(random(301, &rng), shape: [301], isConstant: true)
        try assertMatchesReference(.conv2D, options: ConvolutionKernelTests.conv(.valid), [input, filter, bias], "1x1 conv on a 1x1 image")
    }

    /// Convolutions whose last tile holds 1 to 4 pixels (7×7 = 4 × 12 + 1, 4×4 = 12 + 4, 5×5 = 2 ×
    /// 12 + 1), with padding (taps outside the image) and several channel blocks.
    func testFewRowConvolutionTails() throws {
        var rng = SeededGenerator(seed: 66)
        for (h, w, cin, cout, k, stride) in [(7, 7, 12, 40, 3, 1), (4, 4, 9, 130, 3, 1), (9, 9, 5, 17, 3, 2), (2, 1, 7, 70, 1, 1), (3, 1, 20, 33, 3, 1)] {
            let input = TensorValue.float32(random(2 * h * w * cin, &rng, range: -2...2), shape: [2, h, w, cin])
            let filter = TensorValue.float32(random(cout * k * k * cin, &rng), shape: [cout, k, k, cin], isConstant: true)
            let bias = TensorValue.float32(random(cout, &rng), shape: [cout], isConstant: true)
            let options = ConvolutionKernelTests.conv(.same, stride: (stride, stride), activation: .relu6)
            try assertMatchesReference(.conv2D, options: options, [input, filter, bias], "conv \(h)x\(w)x\(cin)→\(cout) k\(k) s\(stride)")
        }
    }
}
