import Foundation
import MediaIO
import TestSupport
import XCTest

/// Boxes, labels, text and mask overlays drawn on an image, checked after a PNG round trip.
final class DrawingTests: XCTestCase {
    static let background: (UInt8, UInt8, UInt8) = (100, 100, 100)

    func greyImage(width: Int = 200, height: Int = 150, format: PixelFormat = .rgb8) throws -> PixelBuffer {
        let rgb = try makeRGB(width: width, height: height) { _, _ in Self.background }
        return format == .rgb8 ? rgb : try rgb.converted(to: format)
    }

    /// `a` blended over `b` at alpha `alpha`/255, as the canvas rounds it.
    static func blended(_ a: UInt8, over b: UInt8, alpha: Int) -> UInt8 {
        UInt8((Int(a) * alpha + Int(b) * (255 - alpha) + 127) / 255)
    }

    func testBoxLabelAndMaskSurvivePNGRoundTrip() throws {
        for font in [Font.default, Font.builtIn] {
            let image = try greyImage()
            let canvas = try Canvas(image)
            let box = Rect(x: 40, y: 60, width: 80, height: 50)
            canvas.stroke(box, color: .red, lineWidth: 4)
            let label = canvas.drawLabel("cat 0.93", for: box, textColor: .white, backgroundColor: .red, size: 14, font: font)
            // A mask covering the bottom-right quarter (mask 20×15 for the 200×150 image).
            var mask = [Float](repeating: 0, count: 20 * 15)
            for y in 10..<15 { for x in 15..<20 { mask[y * 20 + x] = 1 } }
            try canvas.overlay(mask: mask, width: 20, height: 15, color: .blue, alpha: 0.5, threshold: 0.5)

            let decoded = try ImageDecoder.decode(try ImageEncoder.png(image)).pixels
            let rgb = try rgbBytes(decoded)
            func at(_ x: Int, _ y: Int) -> [UInt8] { pixel(rgb, 200, x, y) }
            let grey: [UInt8] = [100, 100, 100]
            let context = font.name

            // The outline: 4 pixels centred on the edges (x 38..<42 on the left edge).
            for x in 38..<42 { XCTAssertEqual(at(x, 85), [255, 0, 0], "\(context) left edge x=\(x)") }
            for x in 118..<122 { XCTAssertEqual(at(x, 85), [255, 0, 0], "\(context) right edge x=\(x)") }
            for y in 108..<112 { XCTAssertEqual(at(80, y), [255, 0, 0], "\(context) bottom edge y=\(y)") }
            XCTAssertEqual(at(37, 85), grey, context)
            XCTAssertEqual(at(42, 85), grey, context)
            // Inside the box nothing changed.
            for y in 66..<104 { for x in 46..<114 { XCTAssertEqual(at(x, y), grey, "\(context) inside (\(x), \(y))") } }

            // The label sits just above the box, left-aligned with it, inside the image.
            XCTAssertEqual(label.maxY, 60, context)
            XCTAssertEqual(label.minX, 40, context)
            XCTAssertGreaterThan(label.width, 30, context)
            XCTAssertGreaterThanOrEqual(label.minY, 0, context)
            var red = 0, light = 0
            for y in Int(label.minY)..<Int(label.maxY) {
                for x in Int(label.minX)..<Int(label.maxX) {
                    let p = at(x, y)
                    if p == [255, 0, 0] { red += 1 }
                    if p[1] > 128 { light += 1 }  // white text (anti-aliased edges are pink)
                    XCTAssertNotEqual(p, grey, "\(context) label (\(x), \(y)) is covered")
                }
            }
            XCTAssertGreaterThan(red, light, "\(context): mostly background")
            XCTAssertGreaterThan(light, 20, "\(context): text drawn")

            // The mask: blue at alpha 0.5 (128/255) over grey in the bottom-right quarter.
            let a = 128
            let masked = [Self.blended(0, over: 100, alpha: a), Self.blended(0, over: 100, alpha: a), Self.blended(255, over: 100, alpha: a)]
            for (x, y) in [(160, 110), (199, 149), (155, 105), (180, 130)] { XCTAssertEqual(at(x, y), masked, "\(context) mask (\(x), \(y))") }
            // Outside the mask and the drawings: untouched.
            for (x, y) in [(0, 0), (199, 0), (0, 149), (140, 149), (199, 95), (10, 75), (139, 104)] {
                XCTAssertEqual(at(x, y), grey, "\(context) untouched (\(x), \(y))")
            }
            // Count: nothing changed outside the box outline, label and mask areas.
            var changedElsewhere = 0
            for y in 0..<150 {
                for x in 0..<200 {
                    let inOutline = x >= 38 && x < 122 && y >= 58 && y < 112
                    let inLabel = Double(x) >= label.minX && Double(x) < label.maxX && Double(y) >= label.minY && Double(y) < label.maxY
                    let inMask = x >= 145 && y >= 95
                    if !inOutline && !inLabel && !inMask && at(x, y) != grey { changedElsewhere += 1 }
                }
            }
            XCTAssertEqual(changedElsewhere, 0, context)
        }
    }

    func testSoftMaskBlendsProportionally() throws {
        let image = try greyImage(width: 4, height: 1)
        try Canvas(image).overlay(mask: [0, 0.25, 1, 7], width: 4, height: 1, color: .green, alpha: 0.8)
        let rgb = try rgbBytes(image)
        for (x, value) in [Float(0), 0.25, 1, 1].enumerated() {
            let a = Int((0.8 * Double(value) * 255).rounded())
            XCTAssertEqual(pixel(rgb, 4, x, 0), [Self.blended(0, over: 100, alpha: a), Self.blended(255, over: 100, alpha: a), Self.blended(0, over: 100, alpha: a)], "x=\(x)")
        }
        // NaN counts as 0; arguments are checked.
        XCTAssertNoThrow(try Canvas(image).overlay(mask: [.nan], width: 1, height: 1, color: .red))
        assertImageError(.invalidArgument) { try Canvas(image).overlay(mask: [1, 2], width: 1, height: 1, color: .red) }
        assertImageError(.invalidArgument) { try Canvas(image).overlay(mask: [], width: 0, height: 0, color: .red) }
        assertImageError(.invalidArgument) { try Canvas(image).overlay(mask: [1], width: 1, height: 1, color: .red, alpha: 1.5) }
        assertImageError(.invalidArgument) { try Canvas(image).overlay(mask: [1], width: 1, height: 1, color: .red, threshold: .infinity) }
    }

    func testTranslucentFillAndRGBACanvas() throws {
        for format in [PixelFormat.rgba8, .bgra8, .rgb8] {
            let image = try greyImage(width: 10, height: 10, format: format)
            let canvas = try Canvas(image)
            canvas.fill(Rect(x: 2, y: 2, width: 3, height: 3), color: RGBAColor(red: 255, green: 0, blue: 0, alpha: 64))
            // A translucent outline blends once per pixel, also at the corners.
            canvas.stroke(Rect(x: 6, y: 6, width: 3, height: 3), color: RGBAColor(red: 0, green: 0, blue: 255, alpha: 128), lineWidth: 1)
            let rgb = try rgbBytes(image)
            XCTAssertEqual(pixel(rgb, 10, 3, 3), [Self.blended(255, over: 100, alpha: 64), Self.blended(0, over: 100, alpha: 64), Self.blended(0, over: 100, alpha: 64)], "\(format)")
            XCTAssertEqual(pixel(rgb, 10, 1, 3), [100, 100, 100], "\(format)")
            XCTAssertEqual(pixel(rgb, 10, 5, 3), [100, 100, 100], "\(format)")
            let corner = pixel(rgb, 10, 6, 6), side = pixel(rgb, 10, 7, 6)
            XCTAssertEqual(corner, side, "\(format)")
            XCTAssertEqual(corner, [Self.blended(0, over: 100, alpha: 128), Self.blended(0, over: 100, alpha: 128), Self.blended(255, over: 100, alpha: 128)], "\(format)")
            XCTAssertEqual(pixel(rgb, 10, 7, 7), [100, 100, 100], "\(format): the inside of a 1-pixel outline")
            if format != .rgb8 { XCTAssertEqual(image.withUnsafeBytes { $0[(3 * 10 + 3) * 4 + 3] }, 255, "alpha stays opaque") }
        }
        assertImageError(.invalidArgument) { try Canvas(try PixelBuffer(width: 4, height: 4, format: .gray8)) }
        assertImageError(.invalidArgument) { try Canvas(try PixelBuffer(width: 4, height: 4, format: .nv12)) }
    }

    func testDrawingAnywhereIsSafe() throws {
        let image = try greyImage(width: 20, height: 10)
        let canvas = try Canvas(image)
        let before = try rgbBytes(image)
        for rect in [Rect(x: .nan, y: 0, width: 5, height: 5), Rect(x: 0, y: 0, width: .infinity, height: 3),
                     Rect(x: 1e300, y: -1e300, width: 1e300, height: 1e300), Rect(x: 30, y: 30, width: 5, height: 5),
                     Rect(x: -10, y: -10, width: 5, height: 5), Rect(x: 5, y: 5, width: -3, height: -3)] {
            canvas.fill(rect, color: .red)
            canvas.stroke(rect, color: .red, lineWidth: 3)
            canvas.stroke(rect, color: .red, lineWidth: .nan)
            canvas.stroke(rect, color: .red, lineWidth: -2)
        }
        canvas.drawText("far away", x: 1e12, y: -1e12, color: .red)
        canvas.drawText("", x: 0, y: 0, color: .red)
        canvas.drawText("off the edge", x: 25, y: 0, color: .red)
        XCTAssertEqual(try rgbBytes(image), before, "nothing visible was drawn")
        // Labels are always moved into the image, whatever the box.
        let labelCanvas = try Canvas(try greyImage(width: 60, height: 40))
        for rect in [Rect(x: .nan, y: 0, width: 5, height: 5), Rect(x: 1e300, y: -1e300, width: 1e300, height: 1e300),
                     Rect(x: 70, y: 70, width: 5, height: 5), Rect(x: -30, y: 20, width: 5, height: 5)] {
            let label = labelCanvas.drawLabel("x", for: rect, backgroundColor: .red, size: 10)
            XCTAssertGreaterThanOrEqual(label.minX, 0, "\(rect)")
            XCTAssertGreaterThanOrEqual(label.minY, 0, "\(rect)")
            XCTAssertLessThanOrEqual(label.maxX, 60, "\(rect)")
            XCTAssertLessThanOrEqual(label.maxY, 40, "\(rect)")
        }
        // A partly visible rectangle is clipped.
        let clipped = try greyImage(width: 20, height: 10)
        try Canvas(clipped).fill(Rect(x: -5, y: -5, width: 10, height: 10), color: .red)
        let rgb = try rgbBytes(clipped)
        XCTAssertEqual(pixel(rgb, 20, 0, 0), [255, 0, 0])
        XCTAssertEqual(pixel(rgb, 20, 4, 4), [255, 0, 0])
        XCTAssertEqual(pixel(rgb, 20, 5, 5), [100, 100, 100])
        // A label larger than the image starts at its top-left corner.
        let tiny = try greyImage(width: 8, height: 6)
        let label = try Canvas(tiny).drawLabel("a long label", for: Rect(x: 4, y: 4, width: 2, height: 2), backgroundColor: .blue)
        XCTAssertEqual(label.minX, 0)
        XCTAssertEqual(label.minY, 0)
    }

    func testTextRendering() throws {
        let image = try greyImage(width: 120, height: 40)
        let canvas = try Canvas(image)
        let box = canvas.drawText("Hello 42", x: 5, y: 5, size: 20, color: .black)
        let size = Canvas.textSize("Hello 42", size: 20)
        XCTAssertEqual(box, Rect(x: 5, y: 5, width: Double(size.width), height: Double(size.height)))
        XCTAssertGreaterThan(size.width, 40)
        XCTAssertGreaterThan(size.height, 12)
        let rgb = try rgbBytes(image)
        var dark = 0, outside = 0
        for y in 0..<40 {
            for x in 0..<120 where pixel(rgb, 120, x, y)[0] < 100 {
                dark += 1
                if !(x >= 5 && x < 5 + size.width + 2 && y >= 5 && y < 5 + size.height + 2) { outside += 1 }
            }
        }
        XCTAssertGreaterThan(dark, 50)
        XCTAssertEqual(outside, 0)
        // Multi-line text is taller; the built-in font renders even non-ASCII as '?'.
        XCTAssertGreaterThan(Canvas.textSize("a\nb", size: 16).height, Canvas.textSize("a", size: 16).height)
        let builtIn = Canvas.textSize("é", size: 16, font: .builtIn)
        XCTAssertEqual(builtIn.width, Canvas.textSize("?", size: 16, font: .builtIn).width)
    }

    func testFonts() throws {
        XCTAssertTrue(Font.builtIn.isBuiltIn)
        if FileManager.default.fileExists(atPath: "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf") {
            XCTAssertFalse(Font.default.isBuiltIn)
            XCTAssertEqual(Font.default.name, "DejaVuSans.ttf")
        }
        assertImageError(.io) { try Font(contentsOfFile: "/nonexistent-\(UUID().uuidString).ttf") }
        assertImageError(.unsupportedFormat) { try Font(contentsOfFile: SharedData.image("burger.jpg").path) }
    }
}
