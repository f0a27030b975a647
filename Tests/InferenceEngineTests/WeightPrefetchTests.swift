import CKernels
import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// MobileNet v1's classifier (a 1×1 convolution of 256 features to 1,001 classes over one pixel,
/// 1 MB of weights) has its weights brought into L2 by an earlier, compute-bound 1×1 convolution
/// at 1 thread (WeightPrefetch), which changes no result.
final class WeightPrefetchTests: XCTestCase {
    private let modelName = "mobilenet_v1_0.25_224_1_metadata_1.tflite"

    private func model(_ kernels: KernelSelection) throws -> Model {
        var options = ModelOptions()
        options.kernels = kernels
        return try Model(contentsOfFile: SharedData.model(modelName).path, options: options)
    }

    /// The host is node 22 (14×14, 128 → 128): the nearest 1×1 convolution at least 3 operators
    /// before the classifier (node 28) whose weights fit in L2 beside its activations (node 24's
    /// 132 KiB and node 26's 264 KiB do not) and whose AVX-512 tiles have a reduction step per line.
    func testTheClassifierIsPrefetchedByTheNearestComputeBoundLayer() throws {
        let avx512 = ck_best_isa() >= Int32(CK_ISA_AVX512)
        for kernels in KernelSelection.allCases {
            let pairs = try model(kernels).weightPrefetches.map { [$0.host, $0.target] }
            if avx512 && (kernels == .optimized || kernels == .avx512) {
                XCTAssertEqual(pairs, [[22, 28]], "\(kernels)")
            } else {
                XCTAssertEqual(pairs, [], "\(kernels): only the AVX-512 tiles prefetch")
            }
        }
    }

    /// 1 thread (the host prefetches, its pieces run in order with a share of the lines each) and
    /// 2 threads (no prefetch) give the same probabilities bit for bit, and the reference kernels
    /// agree to float rounding.
    func testPrefetchingChangesNoResult() throws {
        var random = SeededGenerator(seed: 11)
        let optimized = try model(.optimized)
        let input = (0..<optimized.inputs[0].byteCount / 4).map { _ in Float.random(in: -1...1, using: &random) }
        func run(_ model: Model, threads: Int) throws -> [Float] {
            let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
            try input.withUnsafeBytes { try interpreter.copyInput($0, at: 0) }
            interpreter.invoke()
            return try interpreter.outputFloats(at: 0)
        }
        let one = try run(optimized, threads: 1), two = try run(optimized, threads: 2)
        XCTAssertEqual(one.count, 1001)
        let differing = zip(one, two).filter { $0.bitPattern != $1.bitPattern }.count
        XCTAssertEqual(differing, 0, "probabilities that differ between 1 and 2 threads")
        let reference = try run(try model(.reference), threads: 1)
        for (i, (a, e)) in zip(one, reference).enumerated() where abs(a - e) > 1e-5 {
            XCTFail("class \(i): \(a), reference \(e)")
            return
        }
        XCTAssertEqual(one.indices.max { one[$0] < one[$1] }, reference.indices.max { reference[$0] < reference[$1] })
    }
}
