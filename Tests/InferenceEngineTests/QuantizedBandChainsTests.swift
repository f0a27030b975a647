import CKernels
import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// The 8-bit chains of ``BandChains`` (tf2_mobilenet_v2 int8, mobilenet_v2 uint8): a short
/// depthwise layer with the 1×1 projection after it runs as one operator whose threads each take
/// their rows of both, and consecutive 1×1 layers as one operator whose threads each take their
/// pixels through all of them. Their outputs must be byte for byte those of the layers run one
/// after the other, and of the reference kernels (the optimized 8-bit kernels are exact), at 1, 2
/// and 3 threads and every instruction-set selection. The layers are joined where the 1×1 kernel
/// runs on the byte path (AVX-512 VNNI) and reads its input in place (channels a multiple of 4);
/// the int16 path of the other selections runs them one after the other.
final class QuantizedBandChainsTests: XCTestCase {
    private enum Layer {
        /// 3×3 depthwise with this stride, ReLU6.
        case depthwise(stride: Int)
        /// 1×1 convolution to this many channels, ReLU6 or none.
        case pointwise(channels: Int, relu6: Bool)
    }

    /// A model of `layers` over an [1, height, width, channels] input of `type` (int8 with
    /// per-channel symmetric filters, or uint8 with per-tensor filters and zero points);
    /// `separate` makes every inner tensor a model output too, so no layers are joined.
    private func model(_ type: Int8, height: Int, width: Int, channels: Int, layers: [Layer], separate: Bool, seed: UInt64) -> [UInt8] {
        var b = TinyModelBuilder()
        let B = TinyModelBuilder.Builtin.self, O = TinyModelBuilder.OptionsType.self, T = TinyModelBuilder.TensorType.self
        var random = SeededGenerator(seed: seed)
        let signed = type == T.int8
        func activation(scale: Float) -> TinyModelBuilder.Quantization {
            TinyModelBuilder.Quantization(scale: scale, zeroPoint: signed ? Int64.random(in: -20...20, using: &random)
                                                                          : Int64.random(in: 100...150, using: &random))
        }
        func weights(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in signed ? UInt8(bitPattern: Int8.random(in: -127...127, using: &random)) : UInt8.random(in: 0...255, using: &random) }
        }
        /// The filter's quantization (per channel along `dimension` for int8) and each channel's scale.
        func filterQuantization(_ outChannels: Int, dimension: Int32) -> (TinyModelBuilder.Quantization, [Float]) {
            if signed {
                let scales = (0..<outChannels).map { _ in Float.random(in: 0.002...0.02, using: &random) }
                return (TinyModelBuilder.Quantization(scales: scales, zeroPoints: Array(repeating: 0, count: outChannels),
                                                      quantizedDimension: dimension), scales)
            }
            let scale = Float.random(in: 0.002...0.02, using: &random)
            return (TinyModelBuilder.Quantization(scale: scale, zeroPoint: Int64.random(in: 110...140, using: &random)),
                    Array(repeating: scale, count: outChannels))
        }
        func bias(_ scales: [Float]) -> Int32 {
            let values = scales.map { _ in Int32.random(in: -3000...3000, using: &random) }
            return b.addTensor("bias\(b.tensors.count)", type: T.int32, shape: [Int32(scales.count)],
                               data: values.flatMap { withUnsafeBytes(of: $0.littleEndian, Array.init) },
                               quantization: TinyModelBuilder.Quantization(scales: scales, zeroPoints: Array(repeating: 0, count: scales.count)))
        }
        var (h, w, c) = (height, width, channels)
        var scale: Float = 0.05
        let x = b.addTensor("x", type: type, shape: [1, Int32(h), Int32(w), Int32(c)], quantization: activation(scale: scale))
        b.inputs = [x]
        var tensor = x
        var inner: [Int32] = []
        for (index, layer) in layers.enumerated() {
            let outScale = Float.random(in: 0.03...0.08, using: &random)
            switch layer {
            case .depthwise(let stride):
                let (q, scales) = filterQuantization(c, dimension: 3)
                let filter = b.addTensor("dw\(index)/filter", type: type, shape: [1, 3, 3, Int32(c)], data: weights(9 * c), quantization: q)
                let biasTensor = bias(scales.map { $0 * scale })
                (h, w) = ((h + stride - 1) / stride, (w + stride - 1) / stride)
                let out = b.addTensor("dw\(index)", type: type, shape: [1, Int32(h), Int32(w), Int32(c)], quantization: activation(scale: outScale))
                b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.depthwiseConv2D), inputs: [tensor, filter, biasTensor], outputs: [out],
                              builtinOptionsType: O.depthwiseConv2D,
                              builtinOptions: [(0, .int8(0)), (1, .int32(Int32(stride))), (2, .int32(Int32(stride))), (3, .int32(1)),
                                               (4, .int8(3)), (5, .int32(1)), (6, .int32(1))])
                tensor = out
            case .pointwise(let channels, let relu6):
                let (q, scales) = filterQuantization(channels, dimension: 0)
                let filter = b.addTensor("pw\(index)/filter", type: type, shape: [Int32(channels), 1, 1, Int32(c)],
                                         data: weights(channels * c), quantization: q)
                let biasTensor = bias(scales.map { $0 * scale })
                c = channels
                let out = b.addTensor("pw\(index)", type: type, shape: [1, Int32(h), Int32(w), Int32(c)], quantization: activation(scale: outScale))
                b.addOperator(opcodeIndex: b.addOperatorCode(builtin: B.conv2D), inputs: [tensor, filter, biasTensor], outputs: [out],
                              builtinOptionsType: O.conv2D,
                              builtinOptions: [(0, .int8(0)), (1, .int32(1)), (2, .int32(1)), (3, .int8(relu6 ? 3 : 0)),
                                               (4, .int32(1)), (5, .int32(1))])
                tensor = out
            }
            scale = outScale
            if index < layers.count - 1 { inner.append(tensor) }
        }
        b.outputs = [tensor] + (separate ? inner : [])
        return b.build().bytes
    }

    /// The operators' names and the first output's bytes.
    private func run(_ bytes: [UInt8], _ kernels: KernelSelection, threads: Int) throws -> (names: [String], output: [UInt8]) {
        var options = ModelOptions()
        options.kernels = kernels
        let model = try Model(data: Data(bytes), options: options)
        let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
        interpreter.waitForThreads()
        var random = SeededGenerator(seed: 11)
        let values = (0..<model.inputs[0].byteCount).map { _ in UInt8.random(in: 0...255, using: &random) }
        try values.withUnsafeBytes { try interpreter.copyInput($0, at: 0) }
        let timings = interpreter.invokeProfiled()
        return (timings.map(\.operatorName), [UInt8](try interpreter.outputData(at: 0)))
    }

    private func check(_ type: Int8, height: Int, width: Int, channels: Int, layers: [Layer], joined name: String,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let seed = UInt64(height * 1000 + width * 10 + layers.count)
        let chained = model(type, height: height, width: width, channels: channels, layers: layers, separate: false, seed: seed)
        let separate = model(type, height: height, width: width, channels: channels, layers: layers, separate: true, seed: seed)
        let label = "\(type == TinyModelBuilder.TensorType.int8 ? "int8" : "uint8") \(height)x\(width)x\(channels) \(layers)"
        let reference = try run(chained, .reference, threads: 1).output
        let bytePath = ck_best_isa() >= Int32(CK_ISA_AVX512VNNI)
        for (kernels, threads) in [(KernelSelection.optimized, 1), (.optimized, 2), (.optimized, 3), (.avx2, 2), (.portable, 3)] {
            let joined = try run(chained, kernels, threads: threads)
            let layered = try run(separate, kernels, threads: threads)
            XCTAssertEqual(joined.names.filter { $0 == name }.count, kernels == .optimized && bytePath ? 1 : 0, "\(label) \(kernels): \(joined.names)",
                           file: file, line: line)
            XCTAssertFalse(layered.names.contains { $0.contains("+") }, "\(label): \(layered.names)", file: file, line: line)
            XCTAssertEqual(joined.output, layered.output, "\(label) \(kernels), \(threads) threads: differs from the layers run one after the other",
                           file: file, line: line)
            XCTAssertEqual(joined.output, reference, "\(label) \(kernels), \(threads) threads: differs from the reference kernels",
                           file: file, line: line)
        }
    }

    /// A depthwise layer (stride 1 or 2) and the 1×1 projection after it, with row counts that
    /// are no multiple of the threads; the expansion before it stays a separate operator.
    func testDepthwiseAndProjectionPair() throws {
        for type in [TinyModelBuilder.TensorType.int8, TinyModelBuilder.TensorType.uint8] {
            try check(type, height: 13, width: 11, channels: 24,
                      layers: [.depthwise(stride: 1), .pointwise(channels: 16, relu6: false)], joined: "DEPTHWISE_CONV_2D+CONV_2D")
            try check(type, height: 14, width: 9, channels: 40,
                      layers: [.depthwise(stride: 2), .pointwise(channels: 24, relu6: false)], joined: "DEPTHWISE_CONV_2D+CONV_2D")
        }
    }

    /// Runs of 1×1 layers (tf2's 32→16→96 at its start and 960→320→1280 at its end, smaller),
    /// pixel counts that are no multiple of the tiles or the threads.
    func testPointwiseRuns() throws {
        for type in [TinyModelBuilder.TensorType.int8, TinyModelBuilder.TensorType.uint8] {
            try check(type, height: 13, width: 11, channels: 32,
                      layers: [.pointwise(channels: 16, relu6: false), .pointwise(channels: 96, relu6: true)], joined: "CONV_2D+CONV_2D")
            try check(type, height: 3, width: 5, channels: 96,
                      layers: [.pointwise(channels: 40, relu6: false), .pointwise(channels: 128, relu6: true), .pointwise(channels: 24, relu6: false)],
                      joined: "CONV_2D+CONV_2D+CONV_2D")
        }
    }
}
