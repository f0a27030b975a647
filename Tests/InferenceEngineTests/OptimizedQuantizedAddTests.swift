import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore
import TestSupport

/// 8-bit quantized ADD and SUB of same-shape tensors (the residual connections of MobileNet v2)
/// through CKernels must equal the reference kernel byte for byte, for every instruction-set
/// variant and at 1 and 2 threads: random scales and zero points (incl. the type's extremes),
/// fused activations, an output scale small enough to need the largest right shifts, and lengths
/// that are not multiples of the vector widths (16 lanes, and 64 bytes for the VBMI variant).
final class OptimizedQuantizedAddTests: XCTestCase {
    func testQuantizedAddAndSubMatchReference() throws {
        var rng = SeededGenerator(seed: 77)
        let selections: [KernelSelection] = [.portable, .avx2, .avx512, .optimized]
        var cases = 0
        for trial in 0..<24 {
            let signed = trial % 2 == 1
            let count = [1, 15, 16, 17, 127, 1000, 20_003][trial % 7]
            let shape = [1, count]
            let scales = (0..<3).map { _ in Float.random(in: 0.002...0.2, using: &rng) }
            let outputScale = trial % 8 == 7 ? scales[0] * 1e-4 : scales[2]
            let zeroPoints: [Int64] = (0..<3).map { i in
                let (lo, hi): (Int64, Int64) = signed ? (-128, 127) : (0, 255)
                return trial % 5 == 0 ? (i == 0 ? lo : hi) : Int64.random(in: lo...hi, using: &rng)
            }
            let activation: FusedActivation = [.none, .relu, .relu6, .reluN1To1][trial % 4]
            let a = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let b = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            func tensor(_ bytes: [UInt8], _ i: Int) -> TensorValue {
                signed ? .int8(bytes.map { Int8(bitPattern: $0) }, shape: shape,
                               quantization: QuantizationParameters(scale: scales[i], zeroPoint: zeroPoints[i]))
                       : .uint8(bytes, shape: shape, scale: scales[i], zeroPoint: zeroPoints[i])
            }
            let output: OutputSpec = signed ? .int8(scale: outputScale, zeroPoint: zeroPoints[2]) : .uint8(scale: outputScale, zeroPoint: zeroPoints[2])
            for (op, options) in [(BuiltinOperator.add, BuiltinOptions.add(activation: activation)), (.sub, .sub(activation: activation))] {
                let inputs = [tensor(a, 0), tensor(b, 1)]
                let expected = try KernelRunner.run(op, options: options, inputs: inputs, outputs: [output], kernels: .reference)[0]
                for selection in selections {
                    for threads in [1, 2] {
                        let actual = try KernelRunner.run(op, options: options, inputs: inputs, outputs: [output], threads: threads, kernels: selection)[0]
                        XCTAssertEqual(actual.bytes, expected.bytes, "\(op) trial \(trial) \(signed ? "int8" : "uint8") n=\(count) \(selection) threads \(threads)")
                        cases += 1
                    }
                }
            }
        }
        XCTAssertEqual(cases, 24 * 2 * 4 * 2)
    }
}
