import MediaIO
import VisionCore

/// What to do with the background of a segmented image.
public enum BackgroundEffect: Sendable {
    /// Cut the person out: the background becomes transparent (alpha = confidence).
    case remove
    /// Blur the background with a radius in pixels (three box-blur passes, close to a Gaussian).
    case blur(radius: Int)
    /// Replace the background with a colour.
    case color(red: UInt8, green: UInt8, blue: UInt8)
    /// Replace the background with another image (stretched to the image's size).
    case image(PixelBuffer)
}

extension SegmentationMask {
    /// Applies `effect` to the upright `image`, blending by the mask (out = person · m + background · (1 − m)).
    /// The mask must have the image's upright size (the default, not the raw size). Returns RGBA8.
    public func apply(_ effect: BackgroundEffect, to image: VisionImage) throws -> PixelBuffer {
        let upright = try image.pixelBuffer.oriented(image.orientation, format: .rgba8)
        guard upright.width == width, upright.height == height else {
            throw VisionError(.invalidImage,
                "The mask is \(width)×\(height) but the upright image is \(upright.width)×\(upright.height); use a full-size mask (shouldEnableRawSizeMask = false).")
        }
        let background: PixelBuffer?
        switch effect {
        case .remove, .color: background = nil
        case .blur(let radius):
            guard radius >= 0, radius <= 1000 else { throw VisionError(.invalidOptions, "Blur radius must be in 0...1000, got \(radius).") }
            background = try BackgroundEffect.boxBlur(upright, radius: radius)
        case .image(let pixels):
            background = try BackgroundEffect.stretch(pixels, width: width, height: height)
        }
        let out = try PixelBuffer(width: width, height: height, format: .rgba8)
        for y in 0..<height {
            let src = upright.row(y), dst = out.row(y)
            let bg = background?.row(y)
            for x in 0..<width {
                let m = min(max(values[y * width + x], 0), 1)
                switch effect {
                case .remove:
                    dst[4 * x] = src[4 * x]; dst[4 * x + 1] = src[4 * x + 1]; dst[4 * x + 2] = src[4 * x + 2]
                    dst[4 * x + 3] = UInt8((m * 255).rounded())
                case .color(let r, let g, let b):
                    for (c, value) in [r, g, b].enumerated() {
                        dst[4 * x + c] = BackgroundEffect.mix(src[4 * x + c], value, m)
                    }
                    dst[4 * x + 3] = 255
                case .blur, .image:
                    for c in 0..<3 {
                        dst[4 * x + c] = BackgroundEffect.mix(src[4 * x + c], bg?[4 * x + c] ?? 0, m)
                    }
                    dst[4 * x + 3] = 255
                }
            }
        }
        return out
    }
}

extension BackgroundEffect {
    @inline(__always)
    static func mix(_ person: UInt8, _ background: UInt8, _ m: Float) -> UInt8 {
        UInt8(min(max((Float(person) * m + Float(background) * (1 - m)).rounded(), 0), 255))
    }

    /// Nearest-neighbour stretch of any buffer to RGBA8 of the given size.
    static func stretch(_ pixels: PixelBuffer, width: Int, height: Int) throws -> PixelBuffer {
        let out = try PixelBuffer(width: width, height: height, format: .rgba8)
        for y in 0..<height {
            let sy = min(pixels.height - 1, y * pixels.height / height)
            let dst = out.row(y)
            for x in 0..<width {
                let sx = min(pixels.width - 1, x * pixels.width / width)
                let (r, g, b) = pixels.rgb(sx, sy)
                dst[4 * x] = r; dst[4 * x + 1] = g; dst[4 * x + 2] = b; dst[4 * x + 3] = 255
            }
        }
        return out
    }

    /// Three passes of a separable box blur (edges clamped).
    static func boxBlur(_ image: PixelBuffer, radius: Int) throws -> PixelBuffer {
        let width = image.width, height = image.height
        var a = [Float](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            let row = image.row(y)
            for x in 0..<width { for c in 0..<3 { a[(y * width + x) * 3 + c] = Float(row[4 * x + c]) } }
        }
        guard radius > 0 else { return try rgba(a, width: width, height: height) }
        var b = a
        let window = Float(2 * radius + 1)
        for _ in 0..<3 {
            for y in 0..<height {          // horizontal
                for c in 0..<3 {
                    var sum: Float = 0
                    for k in -radius...radius { sum += a[(y * width + min(max(k, 0), width - 1)) * 3 + c] }
                    for x in 0..<width {
                        b[(y * width + x) * 3 + c] = sum / window
                        let add = min(x + radius + 1, width - 1), remove = max(x - radius, 0)
                        sum += a[(y * width + add) * 3 + c] - a[(y * width + remove) * 3 + c]
                    }
                }
            }
            for x in 0..<width {           // vertical
                for c in 0..<3 {
                    var sum: Float = 0
                    for k in -radius...radius { sum += b[(min(max(k, 0), height - 1) * width + x) * 3 + c] }
                    for y in 0..<height {
                        a[(y * width + x) * 3 + c] = sum / window
                        let add = min(y + radius + 1, height - 1), remove = max(y - radius, 0)
                        sum += b[(add * width + x) * 3 + c] - b[(remove * width + x) * 3 + c]
                    }
                }
            }
        }
        return try rgba(a, width: width, height: height)
    }

    static func rgba(_ values: [Float], width: Int, height: Int) throws -> PixelBuffer {
        let out = try PixelBuffer(width: width, height: height, format: .rgba8)
        for y in 0..<height {
            let dst = out.row(y)
            for x in 0..<width {
                for c in 0..<3 { dst[4 * x + c] = UInt8(min(max(values[(y * width + x) * 3 + c].rounded(), 0), 255)) }
                dst[4 * x + 3] = 255
            }
        }
        return out
    }
}
