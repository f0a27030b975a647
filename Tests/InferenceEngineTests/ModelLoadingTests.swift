import Foundation
import InferenceEngine
import Synchronization
import TestSupport
import XCTest

final class ModelLoadingTests: XCTestCase {
    func testUnknownCustomOpFailsAtLoadNamingOpAndNode() throws {
        XCTAssertThrowsError(try Model(contentsOfFile: SharedData.model("model_invoking_error.tflite").path)) { error in
            guard let error = error as? EngineError else { return XCTFail("not an EngineError: \(error)") }
            XCTAssertEqual(error.code, .unsupportedOperator)
            XCTAssertEqual(error.nodeIndex, 0)
            XCTAssertEqual(error.operatorName, "CUSTOM:fake-op-double")
            XCTAssertTrue(error.message.contains("fake-op-double"), error.message)
            XCTAssertTrue(error.message.contains("node 0"), error.message)
        }
    }

    /// Interpreters hand their thread pool on to the next one with the same thread count: one
    /// after another, several alive at once (more than are kept), and from several threads, every
    /// interpreter computes what a single-threaded one does.
    func testInterpretersCreatedOneAfterAnotherOrTogetherAgree() throws {
        let model = try Model(contentsOfFile: SharedData.model("face_detection_short_range.tflite").path)
        let input: [Float] = (0..<(128 * 128 * 3)).map { (i: Int) -> Float in Float((i * 37) % 255) / 127.5 - 1 }
        @Sendable func run(_ interpreter: Interpreter) throws -> [Float] {
            try input.withUnsafeBytes { try interpreter.copyInput($0, at: 0) }
            interpreter.invoke()
            return try interpreter.outputFloats(at: 0)
        }
        let expected = try run(Interpreter(model: model))
        for _ in 0..<6 {
            let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: 2))
            interpreter.waitForThreads()
            XCTAssertEqual(try run(interpreter), expected)
        }
        let together = (0..<4).map { _ in Interpreter(model: model, options: InterpreterOptions(numThreads: 2)) }
        for interpreter in together { XCTAssertEqual(try run(interpreter), expected) }
        let results = Mutex<[[Float]]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: 2))
            if let output = try? run(interpreter) { results.withLock { $0.append(output) } }
        }
        XCTAssertEqual(results.withLock { $0 }, [[Float]](repeating: expected, count: 4))
    }
}
