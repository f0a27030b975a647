import Foundation

/// A colour with alpha (0 transparent ... 255 opaque) for drawing.
public struct RGBAColor: Sendable, Hashable, CustomStringConvertible {
    /// Red, 0...255.
    public var red: UInt8
    /// Green, 0...255.
    public var green: UInt8
    /// Blue, 0...255.
    public var blue: UInt8
    /// Opacity: 0 transparent ... 255 opaque.
    public var alpha: UInt8

    /// A colour from its channels; opaque unless `alpha` says otherwise.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    /// The same colour with another alpha.
    public func withAlpha(_ alpha: UInt8) -> RGBAColor { RGBAColor(red: red, green: green, blue: blue, alpha: alpha) }

    /// Opaque black.
    public static let black = RGBAColor(red: 0, green: 0, blue: 0)
    /// Opaque white.
    public static let white = RGBAColor(red: 255, green: 255, blue: 255)
    /// Opaque red.
    public static let red = RGBAColor(red: 255, green: 0, blue: 0)
    /// Opaque green.
    public static let green = RGBAColor(red: 0, green: 255, blue: 0)
    /// Opaque blue.
    public static let blue = RGBAColor(red: 0, green: 0, blue: 255)
    /// Opaque yellow.
    public static let yellow = RGBAColor(red: 255, green: 255, blue: 0)
    /// Opaque cyan.
    public static let cyan = RGBAColor(red: 0, green: 255, blue: 255)
    /// Opaque magenta.
    public static let magenta = RGBAColor(red: 255, green: 0, blue: 255)

    /// A distinct, saturated colour for category or track `index` (a fixed palette, repeating).
    public static func palette(_ index: Int) -> RGBAColor {
        let colors: [RGBAColor] = [
            RGBAColor(red: 230, green: 25, blue: 75), RGBAColor(red: 60, green: 180, blue: 75), RGBAColor(red: 0, green: 130, blue: 200),
            RGBAColor(red: 245, green: 130, blue: 48), RGBAColor(red: 145, green: 30, blue: 180), RGBAColor(red: 70, green: 240, blue: 240),
            RGBAColor(red: 240, green: 50, blue: 230), RGBAColor(red: 210, green: 245, blue: 60), RGBAColor(red: 250, green: 190, blue: 212),
            RGBAColor(red: 0, green: 128, blue: 128), RGBAColor(red: 170, green: 110, blue: 40), RGBAColor(red: 128, green: 0, blue: 0),
        ]
        let i = index % colors.count
        return colors[i < 0 ? i + colors.count : i]
    }

    /// `RGBA(r, g, b, a)`.
    public var description: String { "RGBA(\(red), \(green), \(blue), \(alpha))" }
}

/// Draws on a ``PixelBuffer`` in place: rectangles, text, labels and segmentation masks, alpha
/// blended. For annotating results in images and videos.
///
/// The buffer must be rgb8, rgba8 or bgra8. Coordinates are pixels of the buffer, origin top-left,
/// pixel edges at integers (like ``Rect``); everything is clipped to the image, so any geometry is
/// safe to draw (non-finite coordinates draw nothing). On rgba8/bgra8 buffers colours are blended
/// as over an opaque background and the alpha channel accumulates coverage.
public struct Canvas {
    /// The buffer drawn on (in place).
    public let pixels: PixelBuffer

    /// A canvas drawing on `pixels` in place.
    ///
    /// - Throws: ``ImageError`` `.invalidArgument` unless the buffer is rgb8, rgba8 or bgra8.
    public init(_ pixels: PixelBuffer) throws {
        guard pixels.format == .rgb8 || pixels.format == .rgba8 || pixels.format == .bgra8 else {
            throw ImageError(.invalidArgument,
                "A Canvas draws on rgb8, rgba8 or bgra8 buffers, not \(pixels.format.rawValue); convert it first with converted(to: .rgb8).")
        }
        self.pixels = pixels
    }

    /// Width of the buffer in pixels.
    public var width: Int { pixels.width }
    /// Height of the buffer in pixels.
    public var height: Int { pixels.height }

    // MARK: Rectangles

    /// Fills `rect` (pixels whose centres lie inside it).
    public func fill(_ rect: Rect, color: RGBAColor) {
        guard let span = Canvas.span(rect) else { return }
        fill(x0: span.x0, y0: span.y0, x1: span.x1, y1: span.y1, color: color)
    }

    /// Draws the outline of `rect`, `lineWidth` pixels wide and centred on its edges.
    public func stroke(_ rect: Rect, color: RGBAColor, lineWidth: Double = 2) {
        guard lineWidth.isFinite, lineWidth > 0 else { return }
        let w = max(1, Int(min(lineWidth, 10_000).rounded()))
        let half = Double(w) / 2
        let outer = Rect(x: rect.x - half, y: rect.y - half, width: rect.width + Double(w), height: rect.height + Double(w))
        guard let o = Canvas.span(outer) else { return }
        // The four bands do not overlap, so translucent outlines blend once per pixel.
        if o.x1 - o.x0 <= 2 * w || o.y1 - o.y0 <= 2 * w {
            fill(x0: o.x0, y0: o.y0, x1: o.x1, y1: o.y1, color: color)
            return
        }
        fill(x0: o.x0, y0: o.y0, x1: o.x1, y1: o.y0 + w, color: color)
        fill(x0: o.x0, y0: o.y1 - w, x1: o.x1, y1: o.y1, color: color)
        fill(x0: o.x0, y0: o.y0 + w, x1: o.x0 + w, y1: o.y1 - w, color: color)
        fill(x0: o.x1 - w, y0: o.y0 + w, x1: o.x1, y1: o.y1 - w, color: color)
    }

    // MARK: Text

    /// The size in pixels `text` takes at `size` (the font's pixel size); lines split at "\n".
    public static func textSize(_ text: String, size: Double = 16, font: Font = .default) -> (width: Int, height: Int) {
        let pixelSize = Canvas.pixelSize(size)
        let metrics = font.metrics(size: pixelSize)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var width = 0
        for line in lines {
            width = max(width, line.unicodeScalars.reduce(0) { $0 + font.glyph($1, size: pixelSize).advance })
        }
        let height = metrics.ascent + metrics.descent + (lines.count - 1) * metrics.lineHeight
        return (width, height)
    }

    /// Draws `text` with its box's top-left corner at (`x`, `y`); returns the box it covers
    /// (before clipping).
    @discardableResult
    public func drawText(_ text: String, x: Double, y: Double, size: Double = 16, color: RGBAColor, font: Font = .default) -> Rect {
        let pixelSize = Canvas.pixelSize(size)
        let measured = Canvas.textSize(text, size: size, font: font)
        guard x.isFinite, y.isFinite, abs(x) < 1e9, abs(y) < 1e9 else { return Rect(x: 0, y: 0, width: 0, height: 0) }
        let metrics = font.metrics(size: pixelSize)
        let originX = Int(x.rounded()), originY = Int(y.rounded())
        var baseline = originY + metrics.ascent
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var pen = originX
            for scalar in line.unicodeScalars {
                let glyph = font.glyph(scalar, size: pixelSize)
                draw(glyph, x: pen + glyph.left, y: baseline - glyph.top, color: color)
                pen += glyph.advance
                if pen > width { break }
            }
            baseline += metrics.lineHeight
            if baseline - metrics.ascent > height { break }
        }
        return Rect(x: Double(originX), y: Double(originY), width: Double(measured.width), height: Double(measured.height))
    }

    /// Draws `text` on a filled box attached to `box` (a detection): just above its top-left
    /// corner when there is room, else inside its top edge; the label is moved to lie inside the
    /// image. Returns the label's box.
    @discardableResult
    public func drawLabel(_ text: String, for box: Rect, textColor: RGBAColor = .white, backgroundColor: RGBAColor,
                          size: Double = 14, font: Font = .default, padding: Int = 3) -> Rect {
        let pad = max(0, min(padding, 1000))
        let measured = Canvas.textSize(text, size: size, font: font)
        let labelWidth = measured.width + 2 * pad, labelHeight = measured.height + 2 * pad
        let anchorX = box.minX.isFinite ? box.minX : 0, anchorY = box.minY.isFinite ? box.minY : 0
        var x = anchorX.rounded()
        var y = (anchorY - Double(labelHeight) >= 0 ? anchorY - Double(labelHeight) : anchorY).rounded()
        x = max(0, min(x, Double(width - labelWidth)))
        y = max(0, min(y, Double(height - labelHeight)))
        let label = Rect(x: x, y: y, width: Double(labelWidth), height: Double(labelHeight))
        fill(label, color: backgroundColor)
        drawText(text, x: x + Double(pad), y: y + Double(pad), size: size, color: textColor, font: font)
        return label
    }

    // MARK: Masks

    /// Blends `color` over the image where a mask says so. `mask` is `maskWidth` × `maskHeight`
    /// values (row-major) covering the whole image, resampled bilinearly to the image size.
    ///
    /// With a `threshold`, pixels whose mask value is above it get `color` at `alpha` (0...1);
    /// without one, each pixel gets `alpha` × its mask value clamped to 0...1 (a soft mask, e.g.
    /// a person's confidence). The colour's own alpha is ignored. NaN mask values count as 0.
    public func overlay(mask: [Float], width maskWidth: Int, height maskHeight: Int, color: RGBAColor,
                        alpha: Double = 0.5, threshold: Float? = nil) throws {
        guard maskWidth > 0, maskHeight > 0 else {
            throw ImageError(.invalidArgument, "The mask size \(maskWidth)×\(maskHeight) is invalid; width and height must be positive.")
        }
        let (count, overflow) = maskWidth.multipliedReportingOverflow(by: maskHeight)
        guard !overflow, mask.count == count else {
            throw ImageError(.invalidArgument, "A \(maskWidth)×\(maskHeight) mask needs \(maskWidth)×\(maskHeight) values, but \(mask.count) were given.")
        }
        guard alpha.isFinite, (0...1).contains(alpha) else {
            throw ImageError(.invalidArgument, "The overlay alpha must be between 0 and 1, got \(alpha).")
        }
        if let threshold, !threshold.isFinite {
            throw ImageError(.invalidArgument, "The mask threshold must be a finite number, got \(threshold).")
        }
        let xs = Canvas.axis(input: maskWidth, output: width)
        let ys = Canvas.axis(input: maskHeight, output: height)
        let opaque = color.withAlpha(255)
        mask.withUnsafeBufferPointer { values in
            func value(_ x: Int, _ y: Int) -> Float {
                let v = values[y * maskWidth + x]
                return v.isNaN ? 0 : v
            }
            for py in 0..<height {
                let (y0, y1, fy) = ys[py]
                for px in 0..<width {
                    let (x0, x1, fx) = xs[px]
                    let top = value(x0, y0) * (1 - fx) + value(x1, y0) * fx
                    let bottom = value(x0, y1) * (1 - fx) + value(x1, y1) * fx
                    let v = top * (1 - fy) + bottom * fy
                    let weight: Double
                    if let threshold {
                        weight = v > threshold ? alpha : 0
                    } else {
                        weight = alpha * Double(min(max(v, 0), 1))
                    }
                    let a = Int((weight * 255).rounded())
                    if a > 0 { blend(px, py, opaque, coverage: a) }
                }
            }
        }
    }

    // MARK: Pixels

    /// Blends `color` (its alpha × `coverage`/255) into pixel (x, y), which must be in range.
    @inline(__always)
    func blend(_ x: Int, _ y: Int, _ color: RGBAColor, coverage: Int) {
        let a = (Int(color.alpha) * coverage + 127) / 255
        guard a > 0 else { return }
        let inverse = 255 - a
        @inline(__always) func mix(_ source: UInt8, _ destination: UInt8) -> UInt8 {
            UInt8((Int(source) * a + Int(destination) * inverse + 127) / 255)
        }
        let row = pixels.row(y)
        switch pixels.format {
        case .rgb8:
            let p = row + 3 * x
            p[0] = mix(color.red, p[0]); p[1] = mix(color.green, p[1]); p[2] = mix(color.blue, p[2])
        case .rgba8:
            let p = row + 4 * x
            p[0] = mix(color.red, p[0]); p[1] = mix(color.green, p[1]); p[2] = mix(color.blue, p[2])
            p[3] = UInt8(a + (Int(p[3]) * inverse + 127) / 255)
        case .bgra8:
            let p = row + 4 * x
            p[0] = mix(color.blue, p[0]); p[1] = mix(color.green, p[1]); p[2] = mix(color.red, p[2])
            p[3] = UInt8(a + (Int(p[3]) * inverse + 127) / 255)
        default:
            break
        }
    }

    /// Fills pixel columns x0..<x1 of rows y0..<y1, clipped to the image.
    private func fill(x0: Int, y0: Int, x1: Int, y1: Int, color: RGBAColor) {
        let left = max(0, x0), right = min(width, x1), top = max(0, y0), bottom = min(height, y1)
        guard left < right, top < bottom, color.alpha > 0 else { return }
        for y in top..<bottom {
            for x in left..<right { blend(x, y, color, coverage: 255) }
        }
    }

    private func draw(_ glyph: Font.Glyph, x: Int, y: Int, color: RGBAColor) {
        guard glyph.width > 0, glyph.height > 0 else { return }
        let gx0 = max(0, -x), gy0 = max(0, -y)
        let gx1 = min(glyph.width, width - x), gy1 = min(glyph.height, height - y)
        guard gx0 < gx1, gy0 < gy1 else { return }
        for gy in gy0..<gy1 {
            for gx in gx0..<gx1 {
                let coverage = Int(glyph.coverage[gy * glyph.width + gx])
                if coverage > 0 { blend(x + gx, y + gy, color, coverage: coverage) }
            }
        }
    }

    /// Whole-pixel span (x0, y0, x1, y1) of the pixels whose centres lie in `rect`; nil if the
    /// rectangle is not finite. Values are clamped far outside any image so they cannot overflow.
    static func span(_ rect: Rect) -> (x0: Int, y0: Int, x1: Int, y1: Int)? {
        guard rect.x.isFinite, rect.y.isFinite, rect.width.isFinite, rect.height.isFinite else { return nil }
        func edge(_ v: Double) -> Int { Int(max(-1e9, min(1e9, v.rounded()))) }
        return (edge(rect.minX), edge(rect.minY), edge(rect.maxX), edge(rect.maxY))
    }

    static func pixelSize(_ size: Double) -> Int {
        guard size.isFinite else { return 16 }
        return max(4, min(512, Int(size.rounded())))
    }

    /// Bilinear source positions with half-pixel centres (as in image resizing).
    static func axis(input: Int, output: Int) -> [(Int, Int, Float)] {
        (0..<output).map { x in
            var s = ((Double(x) + 0.5) * Double(input)) / Double(output) - 0.5
            s = min(max(s, 0), Double(input - 1))
            let i0 = Int(s.rounded(.down))
            return (i0, min(i0 + 1, input - 1), Float(s - Double(i0)))
        }
    }
}
