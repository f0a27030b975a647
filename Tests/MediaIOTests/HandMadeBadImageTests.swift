import Foundation
import MediaIO
import TestSupport
import XCTest

/// Hand-made bad images with the exact ``ImageError`` code each must give: wrong magic numbers,
/// huge or zero declared dimensions in every format's header (with valid checksums, so the size
/// check itself is what rejects them), and a file that is empty. (Truncations, random data and
/// seeded mutations are in `BadInputTests`; videos in `VideoTests`.)
final class HandMadeBadImageTests: XCTestCase {
    func sample() throws -> PixelBuffer {
        try makeRGB(width: 24, height: 16) { x, y in (UInt8(x * 10), UInt8(y * 15), UInt8((x + y) * 5)) }
    }

    func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * (3 - UInt32($0)))) & 0xFF) } }

    /// A PNG whose IHDR says `width`×`height`, with the chunk's CRC recomputed.
    func png(width: UInt32, height: UInt32) throws -> [UInt8] {
        var bytes = [UInt8](try ImageEncoder.png(try sample()))
        XCTAssertEqual(Array(bytes[12..<16]), Array("IHDR".utf8))
        bytes.replaceSubrange(16..<20, with: bigEndian(width))
        bytes.replaceSubrange(20..<24, with: bigEndian(height))
        bytes.replaceSubrange(29..<33, with: bigEndian(CRC32.checksum(bytes[12..<29])))
        return bytes
    }

    func testWrongMagicNumbers() throws {
        let pixels = try sample()
        let files: [(String, [UInt8], Range<Int>, [UInt8])] = [
            // PNG's signature after a text-mode transfer turned CR LF into LF.
            ("png", [UInt8](try ImageEncoder.png(pixels)), 4..<6, [0x0A, 0x1A]),
            ("jpeg", [UInt8](try ImageEncoder.jpeg(pixels)), 2..<3, [0x00]),
            ("webp", [UInt8](try ImageEncoder.webp(pixels, quality: 80)), 8..<12, Array("WEBQ".utf8)),
            ("bmp", BadInputTests.bmp(width: 4, height: 3, bits: 24) { x, y in x * 40 + y }, 0..<2, Array("MB".utf8)),
        ]
        for (name, original, range, replacement) in files {
            var bytes = original
            bytes.replaceSubrange(range, with: replacement)
            let error = assertImageError(.unsupportedFormat, "\(name) with a wrong magic number") { try ImageDecoder.decode(Data(bytes)) }
            XCTAssertTrue(error?.message.contains("JPEG, PNG, WebP or BMP") == true, error?.message ?? "")
        }
        // Other formats' magic numbers.
        for (name, magic) in [("GIF", Array("GIF89a".utf8)), ("TIFF", [0x49, 0x49, 0x2A, 0x00]), ("tflite", [0x1C, 0, 0, 0] + Array("TFL3".utf8))] {
            assertImageError(.unsupportedFormat, name) { try ImageDecoder.decode(Data(magic + [UInt8](repeating: 0, count: 64))) }
        }
    }

    func testHugeAndZeroDimensionsInPNGHeaders() throws {
        XCTAssertEqual(try ImageDecoder.decode(Data(try png(width: 24, height: 16))).pixels.width, 24, "the CRC fix-up keeps a valid file valid")
        assertImageError(.resourceLimit, "PNG 2^31-1 wide") { try ImageDecoder.decode(Data(try png(width: 0x7FFF_FFFF, height: 16))) }
        assertImageError(.resourceLimit, "PNG 70000 wide") { try ImageDecoder.decode(Data(try png(width: 70_000, height: 1))) }
        assertImageError(.resourceLimit, "PNG 20000×20000") { try ImageDecoder.decode(Data(try png(width: 20_000, height: 20_000))) }
        // Zero is invalid in PNG itself: libspng rejects the header.
        assertImageError(.corrupt, "PNG 0 wide") { try ImageDecoder.decode(Data(try png(width: 0, height: 16))) }
        assertImageError(.corrupt, "PNG 0 high") { try ImageDecoder.decode(Data(try png(width: 24, height: 0))) }
        // A caller's lower limit.
        let limits = ImageLimits(maximumPixelCount: 300, maximumDimension: 20)
        let error = assertImageError(.resourceLimit, "PNG over a caller's limit") { try ImageDecoder.decode(Data(try png(width: 24, height: 16)), limits: limits) }
        XCTAssertTrue(error?.message.contains("ImageLimits.maximumDimension") == true, error?.message ?? "")
    }

    func testHugeAndZeroDimensionsInJPEGHeaders() throws {
        let jpeg = [UInt8](try ImageEncoder.jpeg(try sample()))
        let sof = try XCTUnwrap((0..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        func withSize(_ width: Int, _ height: Int) -> Data {
            var b = jpeg
            b[sof + 5] = UInt8(height >> 8); b[sof + 6] = UInt8(height & 0xFF)
            b[sof + 7] = UInt8(width >> 8); b[sof + 8] = UInt8(width & 0xFF)
            return Data(b)
        }
        XCTAssertEqual(try ImageDecoder.decode(withSize(24, 16)).pixels.height, 16)
        // Beyond libjpeg-turbo's own limit of 65500 per side, and beyond ImageLimits.
        let error = assertImageError(.resourceLimit, "JPEG 65535×65535") { try ImageDecoder.decode(withSize(65535, 65535)) }
        XCTAssertTrue(error?.message.contains("65,500") == true, error?.message ?? "")
        assertImageError(.resourceLimit, "JPEG 20000×20000") { try ImageDecoder.decode(withSize(20_000, 20_000)) }
        assertImageError(.corrupt, "JPEG 0 high") { try ImageDecoder.decode(withSize(24, 0)) }
        assertImageError(.corrupt, "JPEG 0 wide") { try ImageDecoder.decode(withSize(0, 16)) }
    }

    func testHugeDimensionsInWebPHeaders() throws {
        // Lossless (VP8L): 14-bit width-1 and height-1 after the 0x2F signature byte.
        var lossless = [UInt8](try ImageEncoder.webp(try sample(), quality: nil))
        XCTAssertEqual(Array(lossless[12..<16]), Array("VP8L".utf8))
        XCTAssertEqual(lossless[20], 0x2F)
        func vp8l(_ width: UInt32, _ height: UInt32) -> Data {
            var b = lossless
            let old = UInt32(b[21]) | UInt32(b[22]) << 8 | UInt32(b[23]) << 16 | UInt32(b[24]) << 24
            let bits = (width - 1) | (height - 1) << 14 | (old & 0xF000_0000)
            for i in 0..<4 { b[21 + i] = UInt8((bits >> (8 * UInt32(i))) & 0xFF) }
            return Data(b)
        }
        XCTAssertEqual(try ImageDecoder.decode(vp8l(24, 16)).pixels.width, 24)
        assertImageError(.resourceLimit, "WebP 16384×16384") { try ImageDecoder.decode(vp8l(16384, 16384)) }
        assertImageError(.resourceLimit, "WebP 16384×8192 over a caller's limit") {
            try ImageDecoder.decode(vp8l(16384, 8192), limits: ImageLimits(maximumPixelCount: 100_000_000, maximumDimension: 10_000))
        }
        lossless.removeAll()
    }

    /// A caller's limits without a per-side bound: a pixel count that overflows is a resource-limit
    /// error (the message used to compute width × height unchecked).
    func testPixelCountOverflowWithUnboundedSides() {
        let unbounded = ImageLimits(maximumPixelCount: .max, maximumDimension: .max)
        let error = assertImageError(.resourceLimit, "Int.max × 2") { try unbounded.check(width: .max, height: 2) }
        XCTAssertTrue(error?.message.contains("more than \(Int.max) pixels") == true, error?.message ?? "")
        assertImageError(.resourceLimit, "buffer of Int.max / 2 × 3") {
            try PixelBuffer(width: .max / 2, height: 3, format: .gray8, limits: unbounded)
        }
    }

    func testEmptyFile() throws {
        let url = temporaryFile("empty.png")
        try Data().write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let error = assertImageError(.unsupportedFormat, "empty file") { try ImageDecoder.decode(contentsOf: url) }
        XCTAssertTrue(error?.message.contains("empty") == true, error?.message ?? "")
        assertImageError(.io, "missing file") { try ImageDecoder.decode(contentsOf: url.appendingPathExtension("missing")) }
        assertImageError(.invalidDimensions, "0×0 buffer") { try PixelBuffer(width: 0, height: 0, format: .rgb8) }
    }
}
