import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// A float inverted residual block whose expanded tensor is 800 KiB or more (1×1 expansion,
/// depthwise 3×3, 1×1 projection, with or without its residual ADD) runs as one operator, in bands
/// of rows at 1 thread; a short depthwise layer and the 1×1 after it run as one operator whose
/// threads each take their rows of both; consecutive 1×1 layers run as one operator whose threads
/// each take their pixels through all of them. Results are bitwise those of the operators run one
/// after the other, at 1, 2 and 3 threads.
final class BandChainsTests: XCTestCase {
    private struct Case {
        var height = 13, width = 11, channels = 8, expanded = 1856
        var stride = 1, dilation = 1
        var residual = true
        /// The expanded tensor is also a model output (then the block cannot run in bands).
        var expandedIsOutput = false
        /// The depthwise output is also a model output (then no layers are joined).
        var filteredIsOutput = false
    }

    private func model(_ c: Case) -> [UInt8] {
        var b = TinyModelBuilder()
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self
        func floats(_ count: Int, _ random: inout SeededGenerator, _ range: ClosedRange<Float>) -> [UInt8] {
            (0..<count).flatMap { _ in withUnsafeBytes(of: Float.random(in: range, using: &random).bitPattern.littleEndian, Array.init) }
        }
        var random = SeededGenerator(seed: UInt64(c.stride * 10 + c.dilation))
        let (h, w, ch, e) = (Int32(c.height), Int32(c.width), Int32(c.channels), Int32(c.expanded))
        let oh = (h + Int32(c.stride) - 1) / Int32(c.stride), ow = (w + Int32(c.stride) - 1) / Int32(c.stride)
        let x = b.addTensor("x", shape: [1, h, w, ch])
        let expandFilter = b.addTensor("expand/filter", shape: [e, 1, 1, ch], data: floats(c.expanded * c.channels, &random, -0.5...0.5))
        let expandBias = b.addTensor("expand/bias", shape: [e], data: floats(c.expanded, &random, -0.5...0.5))
        let expanded = b.addTensor("expanded", shape: [1, h, w, e])
        let dwFilter = b.addTensor("dw/filter", shape: [1, 3, 3, e], data: floats(9 * c.expanded, &random, -0.5...0.5))
        let dwBias = b.addTensor("dw/bias", shape: [e], data: floats(c.expanded, &random, -0.5...0.5))
        let filtered = b.addTensor("filtered", shape: [1, oh, ow, e])
        let projectFilter = b.addTensor("project/filter", shape: [ch, 1, 1, e], data: floats(c.expanded * c.channels, &random, -0.1...0.1))
        let projectBias = b.addTensor("project/bias", shape: [ch], data: floats(c.channels, &random, -0.5...0.5))
        let projected = b.addTensor("projected", shape: [1, oh, ow, ch])
        let conv = b.addOperatorCode(builtin: B.conv2D)
        let convOptions: [(slot: Int, value: FBScalar)] = [(0, .int8(0)), (1, .int32(1)), (2, .int32(1)), (3, .int8(3)),
                                                              (4, .int32(1)), (5, .int32(1))]
        b.addOperator(opcodeIndex: conv, inputs: [x, expandFilter, expandBias], outputs: [expanded], builtinOptionsType: O.conv2D,
                      builtinOptions: convOptions)
        b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.depthwiseConv2D), inputs: [expanded, dwFilter, dwBias],
                      outputs: [filtered], builtinOptionsType: O.depthwiseConv2D,
                      builtinOptions: [(0, .int8(0)), (1, .int32(Int32(c.stride))), (2, .int32(Int32(c.stride))), (3, .int32(1)),
                                       (4, .int8(3)), (5, .int32(Int32(c.dilation))), (6, .int32(Int32(c.dilation)))])
        var projectOptions = convOptions
        projectOptions[3] = (slot: 3, value: .int8(0))
        b.addOperator(opcodeIndex: conv, inputs: [filtered, projectFilter, projectBias], outputs: [projected],
                      builtinOptionsType: O.conv2D, builtinOptions: projectOptions)
        var output = projected
        if c.residual {
            output = b.addTensor("y", shape: [1, oh, ow, ch])
            b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.add), inputs: [x, projected], outputs: [output],
                          builtinOptionsType: O.add, builtinOptions: [(0, .int8(0))])
        }
        b.inputs = [x]
        b.outputs = [output] + (c.expandedIsOutput ? [expanded] : []) + (c.filteredIsOutput ? [filtered] : [])
        return b.build().bytes
    }

    /// The kernels that ran and the first output.
    private func run(_ bytes: [UInt8], _ kernels: KernelSelection, threads: Int) throws -> (kernels: [String], names: [String], output: [Float]) {
        var options = ModelOptions()
        options.kernels = kernels
        let model = try Model(data: Data(bytes), options: options)
        let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
        interpreter.waitForThreads()
        var random = SeededGenerator(seed: 5)
        let values = (0..<model.inputs[0].byteCount / 4).map { _ in Float.random(in: -2...2, using: &random) }
        try values.withUnsafeBytes { try interpreter.copyInput($0, at: 0) }
        let timings = interpreter.invokeProfiled()
        return (timings.map(\.kernel), timings.map(\.operatorName), try interpreter.outputFloats(at: 0))
    }

    private func check(_ c: Case, file: StaticString = #filePath, line: UInt = #line) throws {
        var separate = c
        separate.expandedIsOutput = true
        let reference = try run(model(c), .reference, threads: 1).output
        let scale = max(1, reference.map { abs($0) }.max() ?? 1)
        // Every instruction-set variant: in bands the depthwise layer reads the expanded rows from a
        // window that holds row y at y mod its height (ck_dwconv_f32_ring). At 2 and 3 threads each
        // thread takes a share of the rows: in windows of its own (a tall block), or after the
        // expansion has run whole.
        for (kernels, threads) in [(KernelSelection.optimized, 1), (.optimized, 2), (.optimized, 3), (.avx2, 1), (.portable, 1)] {
            let banded = try run(model(c), kernels, threads: threads)
            let unbanded = try run(model(separate), kernels, threads: threads)
            XCTAssertEqual(banded.kernels.filter { $0 == "BandChainKernel" }.count, 1, "\(c): \(banded.kernels)",
                           file: file, line: line)
            XCTAssertTrue(banded.names.contains("CONV_2D+DEPTHWISE_CONV_2D+CONV_2D"), "\(banded.names)", file: file, line: line)
            XCTAssertFalse(unbanded.names.contains("CONV_2D+DEPTHWISE_CONV_2D+CONV_2D"), "\(c): the expanded tensor is read elsewhere",
                           file: file, line: line)
            XCTAssertEqual(banded.output.map(\.bitPattern), unbanded.output.map(\.bitPattern),
                           "\(c), \(kernels), \(threads) threads: differs from the operators run one after the other",
                           file: file, line: line)
            let error = zip(banded.output, reference).map { abs($0 - $1) / scale }.max() ?? .infinity
            XCTAssertLessThan(error, 1e-5, "\(c), \(kernels), \(threads) threads vs the reference kernels", file: file, line: line)
        }
    }

    func testBlockWithResidualRunsInBands() throws {
        try check(Case())
        // Tall enough for each thread's own windows (its expanded rows and their halo computed by
        // itself) at 2 and 3 threads.
        try check(Case(height: 66, width: 3, expanded: 1400))
    }

    func testDilatedAndStridedBlocksRunInBands() throws {
        try check(Case(dilation: 2, residual: false))
        try check(Case(height: 17, width: 7, expanded: 2368, dilation: 4))
        // Dilated and tall: at 2 and 3 threads the expansion runs whole, then each thread's share
        // of the depthwise and projection rows in bands.
        try check(Case(height: 40, width: 5, expanded: 1400, dilation: 2))
        try check(Case(height: 14, stride: 2, residual: false))
    }

    /// A small block is not banded, but its depthwise layer and projection (short operators) run
    /// as one node whose threads each take their rows of both: bitwise the same at 1, 2 and 3
    /// threads as the layers run one after the other.
    func testSmallBlocksPairTheirDepthwiseAndProjection() throws {
        for c in [Case(expanded: 64), Case(height: 14, expanded: 48, stride: 2, residual: false)] {
            var separate = c
            separate.filteredIsOutput = true
            let reference = try run(model(c), .reference, threads: 1).output
            let scale = max(1, reference.map { abs($0) }.max() ?? 1)
            for threads in [1, 2, 3] {
                let paired = try run(model(c), .optimized, threads: threads)
                let unpaired = try run(model(separate), .optimized, threads: threads)
                XCTAssertEqual(paired.names.filter { $0 == "DEPTHWISE_CONV_2D+CONV_2D" }.count, 1, "\(c): \(paired.names)")
                XCTAssertTrue(paired.kernels.contains("OptimizedConvFloatKernel"), "the expansion runs alone: \(paired.kernels)")
                XCTAssertTrue(unpaired.kernels.contains("OptimizedDepthwiseFloatKernel"), "\(unpaired.kernels)")
                XCTAssertEqual(paired.output.map(\.bitPattern), unpaired.output.map(\.bitPattern), "\(c), \(threads) threads")
                let error = zip(paired.output, reference).map { abs($0 - $1) / scale }.max() ?? .infinity
                XCTAssertLessThan(error, 1e-5, "\(c), \(threads) threads vs the reference kernels")
            }
        }
    }

    /// Three 1×1 layers, each reading the one before, the second with a residual ADD of the model's
    /// input: `separate` makes the two inner tensors model outputs too, so no layers are joined.
    private func pointwiseChain(height: Int, width: Int, channels: [Int], separate: Bool) -> [UInt8] {
        var b = TinyModelBuilder()
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self
        var random = SeededGenerator(seed: UInt64(height * 100 + width))
        func floats(_ count: Int, _ range: ClosedRange<Float>) -> [UInt8] {
            (0..<count).flatMap { _ in withUnsafeBytes(of: Float.random(in: range, using: &random).bitPattern.littleEndian, Array.init) }
        }
        let (h, w) = (Int32(height), Int32(width))
        let conv = b.addOperatorCode(builtin: B.conv2D)
        let options: [(slot: Int, value: FBScalar)] = [(0, .int8(0)), (1, .int32(1)), (2, .int32(1)), (3, .int8(3)),
                                                         (4, .int32(1)), (5, .int32(1))]
        let x = b.addTensor("x", shape: [1, h, w, Int32(channels[0])])
        var tensor = x
        b.inputs = [x]
        var inner: [Int32] = []
        for layer in 1..<channels.count {
            let (cin, cout) = (channels[layer - 1], channels[layer])
            let filter = b.addTensor("l\(layer)/filter", shape: [Int32(cout), 1, 1, Int32(cin)], data: floats(cin * cout, -0.3...0.3))
            let bias = b.addTensor("l\(layer)/bias", shape: [Int32(cout)], data: floats(cout, -0.5...0.5))
            var out = b.addTensor("l\(layer)", shape: [1, h, w, Int32(cout)])
            b.addOperator(opcodeIndex: conv, inputs: [tensor, filter, bias], outputs: [out], builtinOptionsType: O.conv2D,
                          builtinOptions: options)
            if layer == 2, channels[0] == cout {
                let sum = b.addTensor("l\(layer)/sum", shape: [1, h, w, Int32(cout)])
                b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.add), inputs: [x, out], outputs: [sum],
                              builtinOptionsType: O.add, builtinOptions: [(0, .int8(0))])
                out = sum
            }
            if layer < channels.count - 1 { inner.append(out) }
            tensor = out
        }
        b.outputs = [tensor] + (separate ? inner : [])
        return b.build().bytes
    }

    /// Consecutive 1×1 layers run as one node whose threads each take an equal share of the pixels
    /// through all of them (no join between the layers): bitwise the layers run one after the other
    /// at 1, 2 and 3 threads, pixel counts that are no multiple of the tiles or the threads.
    func testPointwiseRunsSharePixelsAcrossLayers() throws {
        for (h, w, channels) in [(13, 11, [16, 48, 16, 8]), (5, 7, [3, 40, 3, 21]), (1, 1, [24, 32, 24, 16])] {
            let joined = pointwiseChain(height: h, width: w, channels: channels, separate: false)
            let separate = pointwiseChain(height: h, width: w, channels: channels, separate: true)
            let reference = try run(joined, .reference, threads: 1).output
            let scale = max(1, reference.map { abs($0) }.max() ?? 1)
            for (kernels, threads) in [(KernelSelection.optimized, 1), (.optimized, 2), (.optimized, 3), (.avx2, 2), (.portable, 3)] {
                let chain = try run(joined, kernels, threads: threads)
                let layers = try run(separate, kernels, threads: threads)
                XCTAssertEqual(chain.names.filter { $0 == "CONV_2D+CONV_2D+CONV_2D" }.count, 1, "\(h)x\(w): \(chain.names)")
                XCTAssertFalse(layers.kernels.contains("BandChainKernel"), "\(layers.names)")
                XCTAssertEqual(chain.output.map(\.bitPattern), layers.output.map(\.bitPattern), "\(h)x\(w) \(kernels), \(threads) threads")
                let error = zip(chain.output, reference).map { abs($0 - $1) / scale }.max() ?? .infinity
                XCTAssertLessThan(error, 1e-5, "\(h)x\(w) \(kernels), \(threads) threads vs the reference kernels")
            }
        }
    }
}
