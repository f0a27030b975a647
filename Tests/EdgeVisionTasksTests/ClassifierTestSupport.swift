import EdgeVisionTasks
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// A `width`×`height` RGB image of one colour.
func uniformImage(width: Int = 4, height: Int = 4, _ r: UInt8, _ g: UInt8, _ b: UInt8) throws -> MPImage {
    let bytes = (0..<(width * height)).flatMap { _ in [r, g, b] }
    return try MPImage(pixelBuffer: try PixelBuffer(data: Data(bytes), width: width, height: height, format: .rgb8))
}

/// An RGB pixel buffer from rows of (r, g, b) pixels.
func rgbBuffer(_ rows: [[(UInt8, UInt8, UInt8)]]) throws -> PixelBuffer {
    let bytes = rows.flatMap { $0.flatMap { [$0.0, $0.1, $0.2] } }
    return try PixelBuffer(data: Data(bytes), width: rows[0].count, height: rows.count, format: .rgb8)
}

/// Options for a generated model, written to a temporary file.
func options(_ model: TinyClassifier, _ configure: (ImageClassifierOptions) -> Void = { _ in }) throws -> ImageClassifierOptions {
    let options = ImageClassifierOptions()
    options.baseOptions.modelAssetPath = try model.write().path
    configure(options)
    return options
}

/// A classifier on a generated model.
func classifier(_ model: TinyClassifier, _ configure: (ImageClassifierOptions) -> Void = { _ in }) throws -> ImageClassifier {
    try ImageClassifier(options: options(model, configure))
}

/// The categories of the first head for a plain image.
func categories(_ classifier: ImageClassifier, _ image: MPImage? = nil) throws -> [ResultCategory] {
    let result = try classifier.classify(image: image ?? uniformImage(90, 20, 200))
    return result.classificationResult.classifications.first?.categories ?? []
}

/// Asserts that `body` throws a ``VisionError`` with `code`, with exactly `message` when given, and
/// containing each of `contains`.
func assertVisionError<T>(_ body: @autoclosure () throws -> T, code: VisionError.Code, message: String? = nil,
                          contains: [String] = [], file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try body()
        XCTFail("expected a VisionError (\(code))", file: file, line: line)
    } catch let error as VisionError {
        XCTAssertEqual(error.code, code, "\(error.message)", file: file, line: line)
        if let message { XCTAssertEqual(error.message, message, file: file, line: line) }
        for part in contains {
            XCTAssertTrue(error.message.contains(part), "'\(error.message)' does not contain '\(part)'", file: file, line: line)
        }
    } catch {
        XCTFail("expected a VisionError (\(code)), got \(type(of: error)): \(error)", file: file, line: line)
    }
}

let skipDebugMessage = "needs swift test -c release"

/// Results written from several threads, read afterwards.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock(); defer { lock.unlock() }
        return try body(&value)
    }
    var current: Value { withLock { $0 } }
}
