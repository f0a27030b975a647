import Foundation
import MediaIO
import TestSupport
import XCTest

/// Truncated, corrupt and hostile image data: always a typed ``ImageError``, never a crash.
final class BadInputTests: XCTestCase {
    // MARK: Small valid images of each format

    func sample() throws -> PixelBuffer {
        try makeRGB(width: 24, height: 16) { x, y in (UInt8(x * 10), UInt8(y * 15), UInt8((x + y) * 5)) }
    }

    /// A BMP written here: `bits` per pixel (1, 4, 8 with a grey palette; 16 as 5-5-5; 24; 32),
    /// bottom-up unless `topDown`.
    static func bmp(width: Int, height: Int, bits: Int, topDown: Bool = false, compression: UInt32 = 0,
                    pixel: (Int, Int) -> Int) -> [UInt8] {
        let paletteCount = bits <= 8 ? 1 << bits : 0
        let rowBytes = (width * bits + 31) / 32 * 4
        let dataOffset = 14 + 40 + 4 * paletteCount
        var out: [UInt8] = []
        func u16(_ v: Int) { out += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
        func u32(_ v: Int) { out += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8((v >> 24) & 0xFF)] }
        out += Array("BM".utf8); u32(dataOffset + rowBytes * height); u32(0); u32(dataOffset)
        u32(40); u32(width); u32(topDown ? -height : height); u16(1); u16(bits); u32(Int(compression)); u32(rowBytes * height)
        u32(2835); u32(2835); u32(paletteCount); u32(0)
        for i in 0..<paletteCount {
            let v = paletteCount > 1 ? i * 255 / (paletteCount - 1) : 0
            out += [UInt8(v), UInt8(v), UInt8(v), 0]
        }
        for r in 0..<height {
            let y = topDown ? r : height - 1 - r
            var row = [UInt8](repeating: 0, count: rowBytes)
            for x in 0..<width {
                let v = pixel(x, y)
                switch bits {
                case 32: row[4 * x] = UInt8(v & 0xFF); row[4 * x + 1] = UInt8((v >> 8) & 0xFF); row[4 * x + 2] = UInt8((v >> 16) & 0xFF)
                case 24: row[3 * x] = UInt8(v & 0xFF); row[3 * x + 1] = UInt8((v >> 8) & 0xFF); row[3 * x + 2] = UInt8((v >> 16) & 0xFF)
                case 16: row[2 * x] = UInt8(v & 0xFF); row[2 * x + 1] = UInt8((v >> 8) & 0xFF)
                default:
                    let bit = x * bits
                    row[bit / 8] |= UInt8(v << (8 - bits - bit % 8))
                }
            }
            out += row
        }
        return out
    }

    func validFiles() throws -> [(String, [UInt8])] {
        let pixels = try sample()
        return [
            ("jpeg", [UInt8](try ImageEncoder.jpeg(pixels))),
            ("png", [UInt8](try ImageEncoder.png(pixels))),
            ("webp-lossy", [UInt8](try ImageEncoder.webp(pixels, quality: 80))),
            ("webp-lossless", [UInt8](try ImageEncoder.webp(pixels, quality: nil))),
            ("bmp", Self.bmp(width: 24, height: 16, bits: 24) { x, y in (x * 10) << 16 | (y * 15) << 8 | (x + y) * 5 }),
        ]
    }

    // MARK: BMP variants (the BMP decoder is ours)

    func testBMPVariantsDecodeCorrectly() throws {
        let (w, h) = (7, 5)  // odd width: rows are padded
        func check(_ bytes: [UInt8], _ expected: (Int, Int) -> [UInt8], _ context: String) throws {
            let image = try ImageDecoder.decode(Data(bytes))
            XCTAssertEqual(image.format, .bmp, context)
            XCTAssertEqual(image.pixels.width, w, context)
            XCTAssertEqual(image.pixels.height, h, context)
            let rgb = try rgbBytes(image.pixels)
            for y in 0..<h { for x in 0..<w { XCTAssertEqual(pixel(rgb, w, x, y), expected(x, y), "\(context) (\(x), \(y))") } }
        }
        let color = { (x: Int, y: Int) -> Int in (x * 30) << 16 | (y * 50) << 8 | (x * y) }
        let rgb = { (x: Int, y: Int) -> [UInt8] in [UInt8(x * 30), UInt8(y * 50), UInt8(x * y)] }
        try check(Self.bmp(width: w, height: h, bits: 24, pixel: color), rgb, "24-bit bottom-up")
        try check(Self.bmp(width: w, height: h, bits: 24, topDown: true, pixel: color), rgb, "24-bit top-down")
        try check(Self.bmp(width: w, height: h, bits: 32, pixel: color), rgb, "32-bit")
        // 16-bit 5-5-5: 5-bit channels scaled to 0...255.
        try check(Self.bmp(width: w, height: h, bits: 16) { x, y in x << 10 | y << 5 | 31 },
                  { x, y in [UInt8((x * 255 + 15) / 31), UInt8((y * 255 + 15) / 31), 255] }, "16-bit")
        for bits in [1, 4, 8] {
            let levels = 1 << bits
            try check(Self.bmp(width: w, height: h, bits: bits) { x, y in (x + y) % levels },
                      { x, y in let v = UInt8(((x + y) % levels) * 255 / (levels - 1)); return [v, v, v] }, "\(bits)-bit palette")
        }
    }

    func testBMPHeaderProblems() {
        let good = Self.bmp(width: 4, height: 4, bits: 24) { _, _ in 0x123456 }
        func patched(_ offset: Int, _ value: UInt32) -> Data {
            var b = good
            for i in 0..<4 { b[offset + i] = UInt8((value >> (8 * UInt32(i))) & 0xFF) }
            return Data(b)
        }
        assertImageError(.resourceLimit, "huge width") { try ImageDecoder.decode(patched(18, 0x7FFF_FFFF)) }
        assertImageError(.resourceLimit, "huge negative height") { try ImageDecoder.decode(patched(22, 0x8000_0001)) }
        assertImageError(.invalidDimensions, "zero width") { try ImageDecoder.decode(patched(18, 0)) }
        assertImageError(.corrupt, "large but allowed size, no data") { try ImageDecoder.decode(patched(18, 5000)) }
        assertImageError(.corrupt, "data offset past the end") { try ImageDecoder.decode(patched(10, 0xFFFF_FFF0)) }
        assertImageError(.unsupportedFormat, "unknown header size") { try ImageDecoder.decode(patched(14, 20)) }
        assertImageError(.corrupt, "header larger than the data offset says") { try ImageDecoder.decode(patched(14, 77)) }
        assertImageError(.unsupportedFormat, "RLE compression") { try ImageDecoder.decode(patched(30, 1)) }
        var bits = good
        bits[28] = 7
        assertImageError(.unsupportedFormat, "7 bits per pixel") { try ImageDecoder.decode(Data(bits)) }
    }

    // MARK: Hand-made bad data

    func testEmptyAndRandomData() {
        let empty = assertImageError(.unsupportedFormat) { try ImageDecoder.decode(Data()) }
        XCTAssertTrue(empty?.message.contains("empty") == true)
        var generator = SeededGenerator(seed: 7)
        for length in [1, 2, 3, 7, 100, 5000] {
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if bytes.first == 0xFF || bytes.first == 0x89 || bytes.first == 0x52 || bytes.first == 0x42 { bytes[0] = 0 }
            assertImageError(.unsupportedFormat, "random \(length)") { try ImageDecoder.decode(Data(bytes)) }
        }
        // Each format's magic followed by garbage.
        let magics: [[UInt8]] = [[0xFF, 0xD8, 0xFF], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A],
                                 Array("RIFF".utf8) + [0x20, 0, 0, 0] + Array("WEBP".utf8), Array("BM".utf8)]
        for magic in magics {
            for length in [0, 1, 20, 400] {
                let bytes = magic + (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                assertDecodeFailsWithImageError(Data(bytes), "magic \(magic.prefix(4)) + \(length) random bytes")
            }
        }
    }

    func testTruncatedFilesOfEveryFormat() throws {
        for (name, bytes) in try validFiles() {
            XCTAssertNoThrow(try ImageDecoder.decode(Data(bytes)), name)
            // Cut in half: always corrupt.
            assertImageError(.corrupt, "\(name) cut in half") { try ImageDecoder.decode(Data(bytes.prefix(bytes.count / 2))) }
            for length in [1, 2, 4, 8, 12, 16, 30, 60, bytes.count * 3 / 4, bytes.count - 20] where length < bytes.count {
                assertDecodeFailsWithImageError(Data(bytes.prefix(length)), "\(name) truncated to \(length) of \(bytes.count)")
            }
            // Only the last bytes missing (e.g. part of PNG's empty IEND chunk): the pixels may all be
            // there, so decoding may succeed; if it fails, it is an ImageError.
            for cut in 1...3 {
                do {
                    _ = try ImageDecoder.decode(Data(bytes.dropLast(cut)))
                } catch let error as ImageError {
                    XCTAssertFalse(error.message.isEmpty)
                } catch {
                    XCTFail("\(name) without its last \(cut) bytes: \(error)")
                }
            }
        }
    }

    func testCorruptHeadersAndChecksums() throws {
        let files = Dictionary(uniqueKeysWithValues: try validFiles())
        // PNG: IHDR width/height huge or zero (CRC fixed up is not needed: the size is checked first or the CRC fails).
        let png = try XCTUnwrap(files["png"])
        for (offset, value) in [(16, 0x7FFF_FFFF), (20, 0xFFFF_FFFF), (16, 0)] {
            var b = png
            for i in 0..<4 { b[offset + i] = UInt8((value >> (8 * (3 - i))) & 0xFF) }
            assertDecodeFailsWithImageError(Data(b), "PNG IHDR field at \(offset) = \(value)")
        }
        // PNG: a flipped bit in the image data breaks the CRC.
        var flipped = png
        flipped[png.count - 20] ^= 0x10
        assertImageError(.corrupt, "PNG bad CRC") { try ImageDecoder.decode(Data(flipped)) }
        // JPEG: the frame header's size set to 0 and to 65535×65535.
        let jpeg = try XCTUnwrap(files["jpeg"])
        let sof = try XCTUnwrap((0..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && (jpeg[$0 + 1] == 0xC0 || jpeg[$0 + 1] == 0xC2) })
        for value: UInt8 in [0x00, 0xFF] {
            var b = jpeg
            for i in 5...8 { b[sof + i] = value }
            assertDecodeFailsWithImageError(Data(b), "JPEG SOF size bytes = \(value)")
        }
        var noScan = jpeg
        if let sos = (0..<(jpeg.count - 1)).first(where: { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xDA }) {
            noScan = Array(jpeg[..<sos]) + [0xFF, 0xD9]
        }
        assertImageError(.corrupt, "JPEG without scan") { try ImageDecoder.decode(Data(noScan)) }
        // WebP: the VP8 frame's dimensions destroyed.
        var webp = try XCTUnwrap(files["webp-lossy"])
        for i in 20..<min(40, webp.count) { webp[i] = 0xFF }
        assertDecodeFailsWithImageError(Data(webp), "WebP with a destroyed frame header")
    }

    func assertDecodeFailsWithImageError(_ data: Data, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try ImageDecoder.decode(data)
            XCTFail("\(context): decoded, expected an ImageError", file: file, line: line)
        } catch let error as ImageError {
            XCTAssertFalse(error.message.isEmpty, context, file: file, line: line)
        } catch {
            XCTFail("\(context): expected ImageError, got \(error)", file: file, line: line)
        }
    }

    // MARK: Seeded mutations of every shared image

    /// Mutates `bytes`: bit flips, truncations, header fields overwritten with huge values, zeroed
    /// or duplicated runs. Deterministic for a given generator state.
    static func mutate(_ original: [UInt8], using generator: inout SeededGenerator) -> [UInt8] {
        var bytes = original
        let headerEnd = min(bytes.count, 1024)
        func randomOffset(header: Bool) -> Int {
            Int.random(in: 0..<(header ? max(1, headerEnd) : max(1, bytes.count)), using: &generator)
        }
        switch Int.random(in: 0..<6, using: &generator) {
        case 0:  // a few bit flips anywhere
            for _ in 0..<Int.random(in: 1...8, using: &generator) where !bytes.isEmpty {
                bytes[randomOffset(header: false)] ^= 1 << UInt8.random(in: 0...7, using: &generator)
            }
        case 1:  // bit flips in the header area
            for _ in 0..<Int.random(in: 1...4, using: &generator) where !bytes.isEmpty {
                bytes[randomOffset(header: true)] ^= 1 << UInt8.random(in: 0...7, using: &generator)
            }
        case 2:  // truncation
            bytes = Array(bytes.prefix(Int.random(in: 0..<max(1, bytes.count), using: &generator)))
        case 3:  // a header field overwritten with a huge or extreme value
            let values: [[UInt8]] = [[0xFF, 0xFF, 0xFF, 0xFF], [0x7F, 0xFF, 0xFF, 0xFF], [0xFF, 0xFF, 0xFF, 0x7F],
                                     [0x00, 0x00, 0x00, 0x00], [0x80, 0x00, 0x00, 0x00], [0xFF, 0xFF], [0x00, 0x01, 0x00, 0x00]]
            let value = values[Int.random(in: 0..<values.count, using: &generator)]
            let at = randomOffset(header: true)
            for (i, b) in value.enumerated() where at + i < bytes.count { bytes[at + i] = b }
        case 4:  // a run of zeros or 0xFF
            let at = randomOffset(header: false), length = Int.random(in: 1...64, using: &generator)
            let fill: UInt8 = Bool.random(using: &generator) ? 0 : 0xFF
            for i in at..<min(bytes.count, at + length) { bytes[i] = fill }
        default:  // a chunk removed or duplicated
            let at = randomOffset(header: false), length = min(bytes.count - at, Int.random(in: 1...256, using: &generator))
            if Bool.random(using: &generator) {
                bytes.removeSubrange(at..<(at + length))
            } else {
                bytes.insert(contentsOf: bytes[at..<(at + length)], at: at)
            }
        }
        return bytes
    }

    func testSeededMutationsOfSharedImagesNeverCrash() throws {
        #if DEBUG
        let mutationsPerImage = 25  // the debug build is slow; `swift test -c release` runs the full set
        #else
        let mutationsPerImage = 200
        #endif
        // A lower pixel limit keeps hostile sizes from allocating hundreds of megabytes per try.
        let limits = ImageLimits(maximumPixelCount: 8_000_000, maximumDimension: 8192)
        let files = try ImageCodecTests.sharedImages.map { ($0.name, [UInt8](try Data(contentsOf: SharedData.image($0.name)))) }
            + validFiles().map { ("generated.\($0.0)", $0.1) }
        let start = Date()
        // Images are mutated on all cores; each image has its own seeded generator, so the set of
        // mutations does not depend on scheduling.
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var outcomes: [String: Int] = [:]
            var failures: [String] = []
            func record(_ outcome: String, failure: String? = nil) {
                lock.lock()
                defer { lock.unlock() }
                outcomes[outcome, default: 0] += 1
                if let failure { failures.append(failure) }
            }
        }
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: files.count) { index in
            let (name, bytes) = files[index]
            var generator = SeededGenerator(seed: 0xED6E_0000 + UInt64(index))
            for trial in 0..<mutationsPerImage {
                let mutated = Self.mutate(bytes, using: &generator)
                do {
                    let image = try ImageDecoder.decode(Data(mutated), limits: limits)
                    results.record("decoded", failure: image.pixels.width > 0 && image.pixels.height > 0 ? nil : "\(name) mutation \(trial): empty image")
                } catch let error as ImageError {
                    results.record(error.code.description, failure: error.message.isEmpty ? "\(name) mutation \(trial): empty message" : nil)
                } catch {
                    results.record("other", failure: "\(name) mutation \(trial): expected ImageError, got \(error)")
                }
            }
        }
        let outcomes = results.outcomes
        XCTAssertEqual(results.failures, [])
        let seconds = Date().timeIntervalSince(start)
        print("mutation test: \(files.count) images × \(mutationsPerImage) mutations in \(String(format: "%.1f", seconds)) s: \(outcomes.sorted { $0.key < $1.key })")
        XCTAssertGreaterThan(outcomes["decoded", default: 0], 0)
        XCTAssertGreaterThan(outcomes["corrupt", default: 0], 0)
    }
}
