import EdgeVision
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// A `width`×`height` RGB image of one colour.
func uniformImage(width: Int = 4, height: Int = 4, _ r: UInt8, _ g: UInt8, _ b: UInt8) throws -> PixelBuffer {
    let bytes = (0..<(width * height)).flatMap { _ in [r, g, b] }
    return try PixelBuffer(data: Data(bytes), width: width, height: height, format: .rgb8)
}

/// An RGB image from rows of (r, g, b) pixels.
func rgbImage(_ rows: [[(UInt8, UInt8, UInt8)]]) throws -> PixelBuffer {
    let bytes = rows.flatMap { $0.flatMap { [$0.0, $0.1, $0.2] } }
    return try PixelBuffer(data: Data(bytes), width: rows[0].count, height: rows.count, format: .rgb8)
}

/// A labeler on a generated model with the given options.
func labeler(_ model: TinyClassifier, configure: (CustomImageLabelerOptions) -> Void = { _ in }) throws -> ImageLabeler {
    let options = CustomImageLabelerOptions(localModel: LocalModel(url: try model.write()))
    configure(options)
    return try ImageLabeler.imageLabeler(options: options)
}

/// Asserts that `body` throws a ``VisionError`` with `code`, and with exactly `message` when given,
/// and containing each of `contains`.
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

/// Names of the labels of one result, as (index, confidence) pairs.
func indices(_ labels: [ImageLabel]) -> [Int] { labels.map(\.index) }

let skipDebugMessage = "needs swift test -c release"
