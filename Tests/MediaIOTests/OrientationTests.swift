import Foundation
import MediaIO
import XCTest

/// `PixelBuffer.oriented(_:)`, rectangle mapping and EXIF orientation, against a reference built
/// here from two primitives.
final class OrientationTests: XCTestCase {
    /// An image as rows of pixels (each pixel one Int), independent of PixelBuffer.
    typealias Grid = [[Int]]

    /// Rotates 90° clockwise: the left column becomes the top row.
    func rotateClockwise(_ g: Grid) -> Grid {
        let rows = g.count, columns = g[0].count
        return (0..<columns).map { c in (0..<rows).reversed().map { r in g[r][c] } }
    }

    /// Mirrors left ↔ right.
    func flipHorizontal(_ g: Grid) -> Grid { g.map { Array($0.reversed()) } }

    /// What EXIF value `exif` means for display, from the EXIF specification, as compositions of
    /// the two primitives (applied to the stored image to get the upright one).
    func reference(_ g: Grid, exif: Int) -> Grid {
        func rotations(_ g: Grid, _ n: Int) -> Grid { (0..<n).reduce(g) { r, _ in rotateClockwise(r) } }
        switch exif {
        case 1: return g                                       // normal
        case 2: return flipHorizontal(g)                       // mirrored horizontally
        case 3: return rotations(g, 2)                         // rotated 180°
        case 4: return flipHorizontal(rotations(g, 2))         // mirrored vertically
        case 5: return flipHorizontal(rotateClockwise(g))      // transpose
        case 6: return rotateClockwise(g)                      // rotate 90° CW to display
        case 7: return flipHorizontal(rotations(g, 3))         // transverse
        case 8: return rotations(g, 3)                         // rotate 90° CCW to display
        default: return g
        }
    }

    /// A 5×3 image with distinct pixels: pixel value v is stored as RGB (v, 255 - v, v * 3).
    let stored: Grid = (0..<3).map { y in (0..<5).map { x in y * 5 + x + 1 } }

    func buffer(_ g: Grid, format: PixelFormat) throws -> PixelBuffer {
        let rgb = try makeRGB(width: g[0].count, height: g.count) { x, y in
            let v = g[y][x]
            return (UInt8(v), UInt8(255 - v), UInt8(v * 3))
        }
        return format == .rgb8 ? rgb : try rgb.converted(to: format)
    }

    func grid(_ pixels: PixelBuffer) throws -> Grid {
        let bytes = try rgbBytes(pixels)
        return (0..<pixels.height).map { y in (0..<pixels.width).map { x in Int(pixel(bytes, pixels.width, x, y)[0]) } }
    }

    func testOrientedMatchesReferenceForAllEightOrientations() throws {
        XCTAssertEqual(ImageOrientation.allCases.count, 8)
        for format in [PixelFormat.rgb8, .rgba8, .bgra8] {
            let source = try buffer(stored, format: format)
            for orientation in ImageOrientation.allCases {
                let expected = reference(stored, exif: orientation.exifValue)
                let oriented = try source.oriented(orientation)
                XCTAssertEqual(oriented.format, format)
                XCTAssertEqual(oriented.width, expected[0].count, "\(orientation)")
                XCTAssertEqual(oriented.height, expected.count, "\(orientation)")
                XCTAssertEqual(try grid(oriented), expected, "\(orientation) on \(format)")
                XCTAssertEqual(orientation.swapsDimensions, oriented.width != source.width, "\(orientation)")
                // All three channels moved together.
                let bytes = try rgbBytes(oriented)
                for y in 0..<oriented.height {
                    for x in 0..<oriented.width {
                        let p = pixel(bytes, oriented.width, x, y)
                        XCTAssertEqual(Int(p[1]), 255 - Int(p[0]))
                        XCTAssertEqual(Int(p[2]), Int(p[0]) * 3)
                    }
                }
            }
        }
    }

    func testOrientedIntoOtherFormats() throws {
        let source = try buffer(stored, format: .rgb8)
        let gray = try source.oriented(.right, format: .gray8)
        XCTAssertEqual(gray.format, .gray8)
        XCTAssertEqual(gray.width, 3)
        let rgba = try source.oriented(.left, format: .rgba8)
        XCTAssertEqual(try grid(rgba), reference(stored, exif: 8))
        assertImageError(.invalidArgument) { try source.oriented(.up, format: .nv12) }
    }

    func testPixelMappingsAreInverse() {
        let (w, h) = (5, 3)
        for orientation in ImageOrientation.allCases {
            let size = orientation.uprightSize(width: w, height: h)
            var seen = Set<[Int]>()
            for y in 0..<h {
                for x in 0..<w {
                    let (u, v) = orientation.uprightPixel(x: x, y: y, width: w, height: h)
                    XCTAssertTrue((0..<size.width).contains(u) && (0..<size.height).contains(v), "\(orientation)")
                    let back = orientation.storedPixel(u: u, v: v, width: w, height: h)
                    XCTAssertEqual(back.x, x, "\(orientation)")
                    XCTAssertEqual(back.y, y, "\(orientation)")
                    seen.insert([u, v])
                }
            }
            XCTAssertEqual(seen.count, w * h, "\(orientation) is a bijection")
        }
    }

    func testRectRoundTripAndAgreementWithPixels() {
        let (w, h) = (640, 480)
        let rect = Rect(x: 10.5, y: 20.25, width: 100, height: 50.5)
        for orientation in ImageOrientation.allCases {
            let upright = orientation.uprightRect(rect, width: w, height: h)
            let size = orientation.uprightSize(width: w, height: h)
            XCTAssertGreaterThanOrEqual(upright.minX, 0)
            XCTAssertLessThanOrEqual(upright.maxX, Double(size.width))
            XCTAssertEqual(upright.area, rect.area, accuracy: 1e-9, "\(orientation)")
            let back = orientation.storedRect(upright, width: w, height: h)
            XCTAssertEqual(back.x, rect.x, accuracy: 1e-9, "\(orientation)")
            XCTAssertEqual(back.y, rect.y, accuracy: 1e-9, "\(orientation)")
            XCTAssertEqual(back.width, rect.width, accuracy: 1e-9, "\(orientation)")
            XCTAssertEqual(back.height, rect.height, accuracy: 1e-9, "\(orientation)")
            // A one-pixel rectangle around a stored pixel lands on that pixel's upright position.
            let (u, v) = orientation.uprightPixel(x: 7, y: 3, width: w, height: h)
            let pixelRect = orientation.uprightRect(Rect(x: 7, y: 3, width: 1, height: 1), width: w, height: h)
            XCTAssertEqual(pixelRect, Rect(x: Double(u), y: Double(v), width: 1, height: 1), "\(orientation)")
        }
    }

    func testEXIFValueRoundTrip() {
        let expected: [ImageOrientation: Int] = [.up: 1, .upMirrored: 2, .down: 3, .downMirrored: 4,
                                                 .leftMirrored: 5, .right: 6, .rightMirrored: 7, .left: 8]
        for orientation in ImageOrientation.allCases {
            XCTAssertEqual(orientation.exifValue, expected[orientation])
            XCTAssertEqual(ImageOrientation(exifValue: orientation.exifValue), orientation)
        }
        for bad in [0, 9, -1, 255, Int.max] { XCTAssertNil(ImageOrientation(exifValue: bad)) }
    }

    /// A JPEG with an EXIF APP1 segment carrying orientation `value`, little- or big-endian.
    func jpegWithOrientation(_ value: Int, littleEndian: Bool) throws -> Data {
        let jpeg = try ImageEncoder.jpeg(try buffer(stored, format: .rgb8))
        func u16(_ v: Int) -> [UInt8] { littleEndian ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: Int) -> [UInt8] { littleEndian ? u16(v & 0xFFFF) + u16(v >> 16) : u16(v >> 16) + u16(v & 0xFFFF) }
        var tiff: [UInt8] = littleEndian ? [0x49, 0x49] : [0x4D, 0x4D]
        tiff += u16(42) + u32(8)                   // magic, offset of IFD0
        tiff += u16(2)                             // two entries
        tiff += u16(0x010F) + u16(2) + u32(4) + [0x41, 0x42, 0x43, 0]  // Make "ABC"
        tiff += u16(0x0112) + u16(3) + u32(1) + u16(value) + [0, 0]   // Orientation (SHORT)
        tiff += u32(0)
        let payload: [UInt8] = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        let app1: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        var bytes = [UInt8](jpeg)
        bytes.insert(contentsOf: app1, at: 2)
        return Data(bytes)
    }

    func testJPEGEXIFOrientationIsRead() throws {
        for orientation in ImageOrientation.allCases {
            for little in [true, false] {
                let image = try ImageDecoder.decode(try jpegWithOrientation(orientation.exifValue, littleEndian: little))
                XCTAssertEqual(image.orientation, orientation, "EXIF \(orientation.exifValue), little-endian \(little)")
                XCTAssertEqual(image.pixels.width, 5)  // pixels are as stored
            }
        }
        // An out-of-range value means "no orientation".
        XCTAssertEqual(try ImageDecoder.decode(try jpegWithOrientation(9, littleEndian: true)).orientation, .up)
    }
}
