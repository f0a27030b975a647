import Foundation
import MediaIO
import XCTest

/// Asserts that `body` throws an ``ImageError`` with `code` and a non-empty message; returns the error.
@discardableResult
func assertImageError<T>(_ code: ImageError.Code, _ context: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line,
                         _ body: () throws -> T) -> ImageError? {
    do {
        let value = try body()
        XCTFail("\(context()): expected ImageError(\(code)), got a value: \(value)", file: file, line: line)
    } catch let error as ImageError {
        XCTAssertEqual(error.code, code, "\(context()): \(error.message)", file: file, line: line)
        XCTAssertFalse(error.message.isEmpty, context(), file: file, line: line)
        return error
    } catch {
        XCTFail("\(context()): expected ImageError(\(code)), got \(type(of: error)): \(error)", file: file, line: line)
    }
    return nil
}

/// The RGB bytes of a buffer, tightly packed, row by row (via the public conversion).
func rgbBytes(_ pixels: PixelBuffer) throws -> [UInt8] {
    let packed = try pixels.converted(to: .rgb8)
    return packed.withUnsafeBytes { Array($0.prefix(packed.width * packed.height * 3)) }
}

/// Pixel (x, y) of a tightly packed RGB byte array of width `width`.
func pixel(_ bytes: [UInt8], _ width: Int, _ x: Int, _ y: Int) -> [UInt8] {
    let o = (y * width + x) * 3
    return Array(bytes[o..<(o + 3)])
}

/// An rgb8 buffer whose pixel (x, y) is `color(x, y)`.
func makeRGB(width: Int, height: Int, _ color: (Int, Int) -> (UInt8, UInt8, UInt8)) throws -> PixelBuffer {
    var bytes = [UInt8](repeating: 0, count: width * height * 3)
    for y in 0..<height {
        for x in 0..<width {
            let (r, g, b) = color(x, y)
            let o = (y * width + x) * 3
            bytes[o] = r; bytes[o + 1] = g; bytes[o + 2] = b
        }
    }
    return try PixelBuffer(data: Data(bytes), width: width, height: height, format: .rgb8)
}

/// A unique temporary file URL (several developers run tests at once).
func temporaryFile(_ name: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("edgevision-mediaio-\(UUID().uuidString)-\(name)")
}
