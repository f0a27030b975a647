import Foundation
import InferenceEngine
import TestSupport
import XCTest

/// An interpreter that goes away leaves its tensor arena to the next interpreter of the process
/// (pages already mapped: no page faults while loading), cleared: the new interpreter sees none of
/// the old one's tensors, and an arena is not handed to a model that needs less than half of it.
final class ArenaReuseTests: XCTestCase {
    private func outputAddress(_ interpreter: Interpreter) throws -> Int {
        try interpreter.withOutputBuffer(at: 0) { Int(bitPattern: $0.baseAddress) }
    }

    func testAReleasedArenaIsReusedCleared() throws {
        let model = try Model(data: Data(TinyModelBuilder.addModel(shape: [1, 4096]).build().bytes))
        let ones = [Float](repeating: 1, count: 4096)
        var first: Interpreter? = Interpreter(model: model)
        try ones.withUnsafeBytes { try first?.copyInput($0, at: 0) }
        try ones.withUnsafeBytes { try first?.copyInput($0, at: 1) }
        first?.invoke()
        XCTAssertEqual(try first?.outputFloats(at: 0), [Float](repeating: 2, count: 4096))
        let address = try first.map(outputAddress)
        first = nil

        let second = Interpreter(model: model)
        XCTAssertEqual(try outputAddress(second), address, "the released arena is reused")
        for index in 0..<2 {
            try second.withInputBuffer(at: index) { buffer in
                XCTAssertTrue(buffer.allSatisfy { $0 == 0 }, "input \(index) starts cleared")
            }
        }
        XCTAssertEqual(try second.outputFloats(at: 0), [Float](repeating: 0, count: 4096), "the output starts cleared")
        let twos = [Float](repeating: 2, count: 4096)
        try twos.withUnsafeBytes { try second.copyInput($0, at: 0) }
        try ones.withUnsafeBytes { try second.copyInput($0, at: 1) }
        second.invoke()
        XCTAssertEqual(try second.outputFloats(at: 0), [Float](repeating: 3, count: 4096))
    }

    func testASmallModelDoesNotTakeALargeArena() throws {
        let large = try Model(data: Data(TinyModelBuilder.addModel(shape: [1, 65536]).build().bytes))
        let small = try Model(data: Data(TinyModelBuilder.addModel(shape: [1, 16]).build().bytes))
        var big: Interpreter? = Interpreter(model: large)
        let address = try big.map(outputAddress)
        big = nil
        let interpreter = Interpreter(model: small)
        XCTAssertNotEqual(try outputAddress(interpreter), address)
        // The large model's next interpreter still finds it.
        XCTAssertEqual(try outputAddress(Interpreter(model: large)), address)
    }
}
