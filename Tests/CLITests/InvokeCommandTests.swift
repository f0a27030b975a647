import Foundation
import TestSupport
import XCTest

/// End-to-end tests of `edgevision invoke` (a model on raw tensors).
final class InvokeCommandTests: CLITestCase {
    /// mobilenet_v1_0.25_128_quant: 14 M multiply-accumulates, small enough for debug builds too.
    let modelName = "mobilenet_v1_0.25_128_quant"

    func testGoldenInputGivesTheGoldenOutput() throws {
        let goldens = SharedData.goldens.appendingPathComponent(modelName)
        let output = try temporaryDirectory().appendingPathComponent("out")
        let result = try succeed(["invoke", model("\(modelName).tflite"), "--input", goldens.appendingPathComponent("burger.input.bin").path,
                                  "--output-dir", output.path])
        let written = output.appendingPathComponent("output_0.bin")
        XCTAssertEqual(result.stdout, written.path + "\n", "the tool prints the files it wrote")
        let ours = try Data(contentsOf: written)
        // The engine's kernels are LiteRT's builtin kernels, bit for bit.
        let builtin = try Data(contentsOf: goldens.appendingPathComponent("burger.builtin.output_0.bin"))
        XCTAssertEqual(ours.count, 1001)
        XCTAssertEqual(ours, builtin, "output equals LiteRT's builtin-kernel golden")
        // And the top class is the XNNPACK golden's.
        let xnnpack = try Data(contentsOf: goldens.appendingPathComponent("burger.output_0.bin"))
        XCTAssertEqual(ours.firstIndex(of: ours.max()!), xnnpack.firstIndex(of: xnnpack.max()!))

        // Threads do not change the result.
        let threaded = try temporaryDirectory()
        try succeed(["invoke", model("\(modelName).tflite"), "--input", goldens.appendingPathComponent("burger.input.bin").path,
                     "--output-dir", threaded.path, "--threads", "2"])
        XCTAssertEqual(try Data(contentsOf: threaded.appendingPathComponent("output_0.bin")), ours)
    }

    func testWrongInputSizeIsARuntimeError() throws {
        let directory = try temporaryDirectory()
        let input = try write(Data(repeating: 7, count: 100), "small.bin", in: directory)
        let result = try tool(["invoke", model("\(modelName).tflite"), "--input", input, "--output-dir", directory.appendingPathComponent("out").path])
        assertRuntimeError(result)
        XCTAssertEqual(result.stdout, "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.appendingPathComponent("out/output_0.bin").path))

        let missingInput = directory.appendingPathComponent("missing.bin").path
        assertRuntimeError(try tool(["invoke", model("\(modelName).tflite"), "--input", missingInput, "--output-dir", directory.path]), [missingInput])
    }

    func testUsageErrors() throws {
        let input = SharedData.goldens.appendingPathComponent(modelName).appendingPathComponent("burger.input.bin").path
        let tflite = model("\(modelName).tflite")
        assertUsageError(try tool(["invoke", tflite, "--input", input]), "--output-dir")
        assertUsageError(try tool(["invoke", tflite, "--output-dir", "/tmp/out"]), "--input")
        assertUsageError(try tool(["invoke", "--input", input, "--output-dir", "/tmp/out"]), "missing argument MODEL")
        assertUsageError(try tool(["invoke", tflite, "--input", input, "--input", input, "--output-dir", "/tmp/out"]), "1 inputs")
        assertUsageError(try tool(["invoke", tflite, "--input", input, "--output-dir", "/tmp/out", "--threads", "0"]), "--threads")
    }
}
