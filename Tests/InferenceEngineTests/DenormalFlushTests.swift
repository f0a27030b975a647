import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// `Interpreter.invoke()` runs float arithmetic with denormals flushed to zero (they cost ~20× per
/// operation on x86: the selfie model spent half its time on them), and restores the caller's
/// floating-point mode afterwards.
final class DenormalFlushTests: XCTestCase {
    func testInvokeFlushesDenormalsAndRestoresTheCallersMode() throws {
        let bytes = TinyModelBuilder.addModel(shape: [1, 4]).build().bytes
        for kernels in [KernelSelection.reference, .optimized] {
            var options = ModelOptions()
            options.kernels = kernels
            let model = try Model(data: Data(bytes), options: options)
            for threads in [1, 2] {
                let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
                interpreter.waitForThreads()
                // 3e-39 + 1e-39 is a denormal sum (and denormal inputs read as 0): 0 when flushed.
                let a: [Float] = [3e-39, 1, -2e-39, 1e-30], b: [Float] = [1e-39, 2, 0, 1e-30]
                try a.withUnsafeBytes { try interpreter.copyInput($0, at: 0) }
                try b.withUnsafeBytes { try interpreter.copyInput($0, at: 1) }
                interpreter.invoke()
                XCTAssertEqual(try interpreter.outputFloats(at: 0), [0, 3, 0, 2e-30], "\(kernels), \(threads) threads")
                // The caller's mode is back: denormal arithmetic works again here.
                let x = Float(3e-39).nextUp
                XCTAssertNotEqual(x * 1, 0)
                XCTAssertTrue((x + Float(1e-39)).isSubnormal)
            }
        }
    }
}
