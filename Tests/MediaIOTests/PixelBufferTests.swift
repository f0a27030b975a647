import Foundation
import MediaIO
import XCTest

/// YUV conversion against BT.601 computed here, row padding, and buffer validation.
final class PixelBufferTests: XCTestCase {
    // MARK: BT.601 reference (written from the standard's formulas, independently of MediaIO)

    struct YUVSample: Equatable { var y: UInt8, u: UInt8, v: UInt8 }

    static func clamp(_ x: Double) -> UInt8 { UInt8(max(0, min(255, x.rounded()))) }

    /// RGB → Y'CbCr, BT.601. Video range: Y in 16...235, chroma 16...240; full range: 0...255.
    static func forward(_ r: Double, _ g: Double, _ b: Double, fullRange: Bool) -> YUVSample {
        let kr = 0.299, kb = 0.114, kg = 1 - kr - kb
        let y = kr * r + kg * g + kb * b                 // 0...255
        let pb = (b - y) / (2 * (1 - kb))                // -127.5...127.5
        let pr = (r - y) / (2 * (1 - kr))
        if fullRange {
            return YUVSample(y: clamp(y), u: clamp(128 + pb), v: clamp(128 + pr))
        }
        return YUVSample(y: clamp(16 + y * 219 / 255), u: clamp(128 + pb * 224 / 255), v: clamp(128 + pr * 224 / 255))
    }

    /// Y'CbCr → RGB, the exact inverse of ``forward`` (unrounded).
    static func inverse(_ s: YUVSample, fullRange: Bool) -> (Double, Double, Double) {
        let kr = 0.299, kb = 0.114, kg = 1 - kr - kb
        let y: Double, pb: Double, pr: Double
        if fullRange {
            (y, pb, pr) = (Double(s.y), Double(s.u) - 128, Double(s.v) - 128)
        } else {
            (y, pb, pr) = ((Double(s.y) - 16) * 255 / 219, (Double(s.u) - 128) * 255 / 224, (Double(s.v) - 128) * 255 / 224)
        }
        let r = y + 2 * (1 - kr) * pr
        let b = y + 2 * (1 - kb) * pb
        let g = (y - kr * r - kb * b) / kg
        return (r, g, b)
    }

    /// Builds a YUV 4:2:0 buffer of 2×2 blocks, block i of colour samples[i], in `format`.
    func yuvBuffer(_ samples: [YUVSample], blocksX: Int, blocksY: Int, format: PixelFormat, space: YUVColorSpace,
                   padding: Int = 0) throws -> PixelBuffer {
        let width = 2 * blocksX, height = 2 * blocksY
        let yStride = width + padding, cStride = (format == .i420 ? blocksX : 2 * blocksX) + padding
        var yPlane = [UInt8](repeating: 0xEE, count: yStride * height)
        var uPlane = [UInt8](repeating: 0xEE, count: cStride * blocksY)
        var vPlane = [UInt8](repeating: 0xEE, count: cStride * blocksY)
        for by in 0..<blocksY {
            for bx in 0..<blocksX {
                let s = samples[by * blocksX + bx]
                for dy in 0..<2 { for dx in 0..<2 { yPlane[(2 * by + dy) * yStride + 2 * bx + dx] = s.y } }
                switch format {
                case .nv12: uPlane[by * cStride + 2 * bx] = s.u; uPlane[by * cStride + 2 * bx + 1] = s.v
                case .nv21: uPlane[by * cStride + 2 * bx] = s.v; uPlane[by * cStride + 2 * bx + 1] = s.u
                default: uPlane[by * cStride + bx] = s.u; vPlane[by * cStride + bx] = s.v
                }
            }
        }
        let data = format == .i420 ? yPlane + uPlane + vPlane : yPlane + uPlane
        let strides = format == .i420 ? [yStride, cStride, cStride] : [yStride, cStride]
        return try PixelBuffer(data: Data(data), width: width, height: height, format: format, bytesPerRow: strides, yuvColorSpace: space)
    }

    func checkConversion(fullRange: Bool, padding: Int) throws {
        let space: YUVColorSpace = fullRange ? .bt601FullRange : .bt601VideoRange
        // Black, white, and saturated colours computed with the formulas above.
        let colors: [(Double, Double, Double)] = [(0, 0, 0), (255, 255, 255), (255, 0, 0), (0, 160, 255), (200, 40, 90), (30, 220, 60)]
        let samples = colors.map { Self.forward($0.0, $0.1, $0.2, fullRange: fullRange) }
        // The fixed points every implementation must hit.
        XCTAssertEqual(samples[0], fullRange ? YUVSample(y: 0, u: 128, v: 128) : YUVSample(y: 16, u: 128, v: 128))
        XCTAssertEqual(samples[1], fullRange ? YUVSample(y: 255, u: 128, v: 128) : YUVSample(y: 235, u: 128, v: 128))
        for format in [PixelFormat.nv12, .nv21, .i420] {
            let buffer = try yuvBuffer(samples, blocksX: 3, blocksY: 2, format: format, space: space, padding: padding)
            let rgb = try rgbBytes(buffer)
            for (i, sample) in samples.enumerated() {
                let expected = Self.inverse(sample, fullRange: fullRange)
                let original = colors[i]
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let p = pixel(rgb, buffer.width, 2 * (i % 3) + dx, 2 * (i / 3) + dy)
                    let context = "\(format) \(space) padding \(padding) colour \(i) \(sample) → \(p)"
                    // Against the exact inverse: rounding only.
                    XCTAssertEqual(Double(p[0]), min(255, max(0, expected.0)), accuracy: 1.01, context)
                    XCTAssertEqual(Double(p[1]), min(255, max(0, expected.1)), accuracy: 1.01, context)
                    XCTAssertEqual(Double(p[2]), min(255, max(0, expected.2)), accuracy: 1.01, context)
                    // Against the colour we started from: YUV quantization costs a few levels.
                    XCTAssertEqual(Double(p[0]), original.0, accuracy: 4, context)
                    XCTAssertEqual(Double(p[1]), original.1, accuracy: 4, context)
                    XCTAssertEqual(Double(p[2]), original.2, accuracy: 4, context)
                }
            }
            // Black and white are exact.
            XCTAssertEqual(pixel(rgb, buffer.width, 0, 0), [0, 0, 0], "\(format)")
            XCTAssertEqual(pixel(rgb, buffer.width, 2, 0), [255, 255, 255], "\(format)")
            // Grey via gray8 is the luma.
            let gray = try buffer.converted(to: .gray8)
            XCTAssertEqual(gray.withUnsafeBytes { $0[0] }, 0)
        }
    }

    func testYUVVideoRange() throws { try checkConversion(fullRange: false, padding: 0) }
    func testYUVFullRange() throws { try checkConversion(fullRange: true, padding: 0) }
    func testYUVWithRowPadding() throws {
        try checkConversion(fullRange: false, padding: 3)
        try checkConversion(fullRange: true, padding: 8)
    }

    func testOddSizedYUV() throws {
        // 3×3 NV12: chroma planes are 2×2 (rounded up).
        let y = [UInt8](repeating: 235, count: 9), uv: [UInt8] = [128, 128, 128, 128, 128, 128, 128, 128]
        let buffer = try PixelBuffer(data: Data(y + uv), width: 3, height: 3, format: .nv12)
        XCTAssertEqual(try rgbBytes(buffer), [UInt8](repeating: 255, count: 27))
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(y + uv.prefix(7)), width: 3, height: 3, format: .nv12) }
    }

    func testRowPaddingReadsTheRightPixels() throws {
        // 5×3 rgb8 with 20-byte rows (15 used): padding bytes are 0xAB and must never appear.
        let (w, h, stride) = (5, 3, 20)
        var bytes = [UInt8](repeating: 0xAB, count: stride * h)
        for y in 0..<h { for x in 0..<w { for c in 0..<3 { bytes[y * stride + 3 * x + c] = UInt8(10 * (y * w + x) + c) } } }
        let buffer = try PixelBuffer(data: Data(bytes), width: w, height: h, format: .rgb8, bytesPerRow: [stride])
        XCTAssertEqual(buffer.planes[0].bytesPerRow, stride)
        let packed = try rgbBytes(buffer)
        XCTAssertEqual(packed.count, w * h * 3)
        for y in 0..<h { for x in 0..<w { XCTAssertEqual(pixel(packed, w, x, y), (0..<3).map { UInt8(10 * (y * w + x) + $0) }) } }
        XCTAssertFalse(packed.contains(0xAB))
        // Orientation and conversion respect the stride too.
        let rotated = try buffer.oriented(.down)
        XCTAssertEqual(pixel(try rgbBytes(rotated), w, 0, 0), pixel(packed, w, w - 1, h - 1))
        // Wrapping caller memory with padding (BGRA, 4 pixels in 24-byte rows).
        var bgra = [UInt8](repeating: 0xCD, count: 24 * 2)
        for y in 0..<2 { for x in 0..<4 { bgra[y * 24 + 4 * x] = 1; bgra[y * 24 + 4 * x + 1] = 2; bgra[y * 24 + 4 * x + 2] = UInt8(x + 4 * y); bgra[y * 24 + 4 * x + 3] = 255 } }
        try bgra.withUnsafeMutableBytes { raw in
            let base = try XCTUnwrap(raw.baseAddress)
            let wrapped = try PixelBuffer(wrapping: base, byteCount: raw.count, width: 4, height: 2, format: .bgra8,
                                          planes: [.init(offset: 0, bytesPerRow: 24)])
            let rgb = try rgbBytes(wrapped)
            XCTAssertEqual(pixel(rgb, 4, 3, 1), [7, 2, 1])
        }
    }

    func testStridesAndSizesAreValidated() throws {
        // Stride smaller than a row.
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(count: 100), width: 5, height: 3, format: .rgb8, bytesPerRow: [14]) }
        assertImageError(.invalidDimensions) { try PixelBuffer(width: 5, height: 3, format: .rgba8, bytesPerRow: [19]) }
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(count: 100), width: 4, height: 4, format: .nv12, bytesPerRow: [4, 3]) }
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(count: 100), width: 4, height: 4, format: .i420, bytesPerRow: [4, 1, 2]) }
        // Wrong number of strides.
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(count: 100), width: 4, height: 4, format: .nv12, bytesPerRow: [4]) }
        // Buffer too small.
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(count: 44), width: 5, height: 3, format: .rgb8) }
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(count: 59), width: 5, height: 3, format: .rgb8, bytesPerRow: [20]) }
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(count: 16 + 7), width: 4, height: 4, format: .nv12) }
        assertImageError(.invalidDimensions) { try PixelBuffer(data: Data(count: 16 + 7), width: 4, height: 4, format: .i420) }
        var memory = [UInt8](repeating: 0, count: 64)
        try memory.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return XCTFail("no memory") }
            // A plane that starts past the end, one that runs past it, a negative offset.
            assertImageError(.invalidDimensions) {
                try PixelBuffer(wrapping: base, byteCount: 64, width: 4, height: 4, format: .nv12, planes: [.init(offset: 0, bytesPerRow: 4), .init(offset: 60, bytesPerRow: 4)])
            }
            assertImageError(.invalidDimensions) {
                try PixelBuffer(wrapping: base, byteCount: 64, width: 4, height: 4, format: .rgba8, planes: [.init(offset: 4, bytesPerRow: 16)])
            }
            assertImageError(.invalidDimensions) {
                try PixelBuffer(wrapping: base, byteCount: 64, width: 4, height: 5, format: .rgba8, planes: [.init(offset: 0, bytesPerRow: 16)])
            }
            assertImageError(.invalidDimensions) {
                try PixelBuffer(wrapping: base, byteCount: 64, width: 2, height: 2, format: .rgb8, planes: [.init(offset: -1, bytesPerRow: 6)])
            }
            assertImageError(.invalidDimensions) {
                try PixelBuffer(wrapping: base, byteCount: 64, width: 2, height: 2, format: .rgb8, planes: [])
            }
            // And one that fits exactly is accepted.
            XCTAssertNoThrow(try PixelBuffer(wrapping: base, byteCount: 64, width: 4, height: 4, format: .rgba8, planes: [.init(offset: 0, bytesPerRow: 16)]))
        }
        // Overflowing strides.
        assertImageError(.invalidDimensions) { try PixelBuffer(width: 4, height: 4, format: .rgb8, bytesPerRow: [Int.max / 2]) }
    }

    func testZeroAndHugeDimensions() {
        for (w, h) in [(0, 5), (5, 0), (-1, 5), (5, -3), (0, 0)] {
            assertImageError(.invalidDimensions, "\(w)×\(h)") { try PixelBuffer(width: w, height: h, format: .rgb8) }
            assertImageError(.invalidDimensions, "\(w)×\(h)") { try PixelBuffer(data: Data(count: 16), width: w, height: h, format: .gray8) }
        }
        assertImageError(.resourceLimit) { try PixelBuffer(width: 70_000, height: 2, format: .gray8) }
        assertImageError(.resourceLimit) { try PixelBuffer(width: 20_000, height: 20_000, format: .gray8) }
        assertImageError(.resourceLimit) { try PixelBuffer(width: Int.max, height: Int.max, format: .rgba8) }
        let small = ImageLimits(maximumPixelCount: 100, maximumDimension: 50)
        assertImageError(.resourceLimit) { try PixelBuffer(width: 11, height: 10, format: .gray8, limits: small) }
        assertImageError(.resourceLimit) { try PixelBuffer(width: 51, height: 1, format: .gray8, limits: small) }
        XCTAssertNoThrow(try PixelBuffer(width: 10, height: 10, format: .gray8, limits: small))
    }

    func testConversionsBetweenPackedFormats() throws {
        let rgb = try makeRGB(width: 3, height: 2) { x, y in (UInt8(10 + x), UInt8(20 + y), 200) }
        let rgba = try rgb.converted(to: .rgba8)
        XCTAssertEqual(rgba.withUnsafeBytes { Array($0.prefix(4)) }, [10, 20, 200, 255])
        let bgra = try rgb.converted(to: .bgra8)
        XCTAssertEqual(bgra.withUnsafeBytes { Array($0.prefix(4)) }, [200, 20, 10, 255])
        XCTAssertEqual(try rgbBytes(bgra), try rgbBytes(rgb))
        let gray = try rgb.converted(to: .gray8)
        // BT.601 luma of (10, 20, 200): 0.299·10 + 0.587·20 + 0.114·200 = 37.59 → 38
        XCTAssertEqual(gray.withUnsafeBytes { $0[0] }, 38)
        assertImageError(.invalidArgument) { try rgb.converted(to: .i420) }
    }
}
