import Foundation
import TestSupport
import XCTest

/// End-to-end tests of `edgevision bench` (invoke latency of a model).
final class BenchCommandTests: CLITestCase {
    /// mobilenet_v1_0.25_128_quant: 14 M multiply-accumulates, the smallest model.
    let modelName = "mobilenet_v1_0.25_128_quant"

    func testJSONHasEveryKeyWithPositiveNumbers() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "times a model: needs swift test -c release")
        let input = SharedData.goldens.appendingPathComponent(modelName).appendingPathComponent("burger.input.bin").path
        for extra in [[], ["--input", input, "--threads", "2"]] {
            let result = try succeed(["bench", model("\(modelName).tflite"), "--runs", "3", "--warmup", "1", "--json"] + extra)
            let object = try jsonObject(result)
            XCTAssertEqual(Set(object.keys), ["model", "threads", "runs", "medianMs", "p90Ms", "loadMs", "coldLoadMs", "arenaBytes", "peakLiveBytes", "bandWindowBytes", "peakRSSBytes"])
            XCTAssertEqual(object["model"] as? String, "\(modelName).tflite")
            XCTAssertEqual(object["threads"] as? Int, extra.isEmpty ? 1 : 2)
            XCTAssertEqual(object["runs"] as? Int, 3)
            for key in ["medianMs", "p90Ms", "loadMs", "coldLoadMs", "arenaBytes", "peakLiveBytes", "peakRSSBytes"] {
                let value = try XCTUnwrap((object[key] as? NSNumber)?.doubleValue, "\(key) is a number: \(result.stdout)")
                XCTAssertGreaterThan(value, 0, key)
            }
            let median = try XCTUnwrap((object["medianMs"] as? NSNumber)?.doubleValue)
            let p90 = try XCTUnwrap((object["p90Ms"] as? NSNumber)?.doubleValue)
            XCTAssertLessThanOrEqual(median, p90)
            // No plan can be smaller than the bytes alive at one step.
            let arena = try XCTUnwrap((object["arenaBytes"] as? NSNumber)?.intValue)
            let live = try XCTUnwrap((object["peakLiveBytes"] as? NSNumber)?.intValue)
            XCTAssertGreaterThanOrEqual(arena, live)
            // Windows: none in this quantized model (only float blocks run in bands, and the rows of
            // its depthwise → 1×1 pairs, 64 down to 4, divide between 2 threads).
            XCTAssertEqual((object["bandWindowBytes"] as? NSNumber)?.intValue, 0)
        }
    }

    func testProfileListsEveryOperatorAndKernelSelectionIsValidated() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "times a model: needs swift test -c release")
        let result = try succeed(["bench", model("\(modelName).tflite"), "--runs", "2", "--warmup", "0", "--profile", "--json"])
        let object = try jsonObject(result)
        let operators = try XCTUnwrap(object["operators"] as? [[String: Any]], result.stdout)
        // A fused node names its operators ("DEPTHWISE_CONV_2D+CONV_2D": BandChains).
        let names = operators.compactMap { $0["op"] as? String }
        XCTAssertEqual(names.count, operators.count, result.stdout)
        XCTAssertEqual(names.map { $0.split(separator: "+").count }.reduce(0, +), 30,
                       "mobilenet_v1_0.25_128_quant runs 30 of its 31 operators (the RESHAPE before the softmax is a copy that does not run: CopyElision): \(names)")
        XCTAssertTrue(operators.contains { ($0["op"] as? String) == "CONV_2D" })
        let reference = try succeed(["bench", model("\(modelName).tflite"), "--runs", "1", "--warmup", "0", "--kernels", "reference", "--profile"])
        XCTAssertTrue(reference.stdout.contains("(Conv2DKernel)"), reference.stdout)
        assertUsageError(try tool(["bench", model("\(modelName).tflite"), "--kernels", "fastest"]), "--kernels must be one of")
    }

    func testHumanOutputIsATable() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "times a model: needs swift test -c release")
        let result = try succeed(["bench", model("\(modelName).tflite"), "--runs", "2", "--warmup", "0"])
        for key in ["median", "p90", "load", "arena", "peak RSS"] {
            XCTAssertTrue(result.stdout.contains(key), "\(key) in: \(result.stdout)")
        }
    }

    func testErrors() throws {
        let tflite = model("\(modelName).tflite")
        assertUsageError(try tool(["bench"]), "missing argument MODEL")
        assertUsageError(try tool(["bench", tflite, "--runs", "0"]), "--runs")
        assertUsageError(try tool(["bench", tflite, "--threads", "0"]), "--threads")
        assertUsageError(try tool(["bench", tflite, "--warmup", "x"]), "--warmup")
        assertUsageError(try tool(["bench", tflite, "--bogus"]), "--bogus")
        let missing = "/nonexistent/edgevision-bench-input.bin"
        assertRuntimeError(try tool(["bench", tflite, "--input", missing]), [missing])
        let directory = try temporaryDirectory()
        let small = directory.appendingPathComponent("small.bin")
        try Data(repeating: 1, count: 10).write(to: small)
        assertRuntimeError(try tool(["bench", tflite, "--input", small.path, "--runs", "1", "--warmup", "0"]))
    }
}
