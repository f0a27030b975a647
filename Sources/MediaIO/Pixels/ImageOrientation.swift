/// How the stored pixels must be transformed to show the image upright, with the meaning of
/// `UIImage.Orientation` (and EXIF orientation 1–8).
///
/// `.right` means the stored image must be rotated 90° clockwise to be upright (a phone held in
/// portrait with the camera sensor in landscape; EXIF 6). Results of every task are reported in
/// the coordinate space of the *upright* image.
public enum ImageOrientation: String, Sendable, Hashable, CaseIterable {
    case up, down, left, right, upMirrored, downMirrored, leftMirrored, rightMirrored

    /// The EXIF orientation value (1–8).
    public var exifValue: Int {
        switch self {
        case .up: return 1
        case .upMirrored: return 2
        case .down: return 3
        case .downMirrored: return 4
        case .leftMirrored: return 5
        case .right: return 6
        case .rightMirrored: return 7
        case .left: return 8
        }
    }

    /// The orientation for an EXIF value; nil outside 1–8.
    public init?(exifValue: Int) {
        guard let match = ImageOrientation.allCases.first(where: { $0.exifValue == exifValue }) else { return nil }
        self = match
    }

    /// Whether width and height swap between the stored and the upright image.
    public var swapsDimensions: Bool {
        switch self {
        case .left, .right, .leftMirrored, .rightMirrored: return true
        default: return false
        }
    }

    /// Whether the orientation includes a mirror flip (the four `...Mirrored` cases).
    public var isMirrored: Bool {
        switch self {
        case .upMirrored, .downMirrored, .leftMirrored, .rightMirrored: return true
        default: return false
        }
    }

    /// Size of the upright image for a stored image of `width` × `height`.
    public func uprightSize(width: Int, height: Int) -> (width: Int, height: Int) {
        swapsDimensions ? (height, width) : (width, height)
    }

    /// The stored pixel shown at upright pixel (`u`, `v`), for a stored image of `width` × `height`
    /// (integer pixel indices).
    @inline(__always)
    public func storedPixel(u: Int, v: Int, width: Int, height: Int) -> (x: Int, y: Int) {
        switch self {
        case .up: return (u, v)
        case .down: return (width - 1 - u, height - 1 - v)
        case .right: return (v, height - 1 - u)
        case .left: return (width - 1 - v, u)
        case .upMirrored: return (width - 1 - u, v)
        case .downMirrored: return (u, height - 1 - v)
        case .leftMirrored: return (v, u)
        case .rightMirrored: return (width - 1 - v, height - 1 - u)
        }
    }

    /// The upright coordinate of stored pixel (`x`, `y`) (inverse of ``storedPixel(u:v:width:height:)``).
    @inline(__always)
    public func uprightPixel(x: Int, y: Int, width: Int, height: Int) -> (u: Int, v: Int) {
        switch self {
        case .up: return (x, y)
        case .down: return (width - 1 - x, height - 1 - y)
        case .right: return (height - 1 - y, x)
        case .left: return (y, width - 1 - x)
        case .upMirrored: return (width - 1 - x, y)
        case .downMirrored: return (x, height - 1 - y)
        case .leftMirrored: return (y, x)
        case .rightMirrored: return (height - 1 - y, width - 1 - x)
        }
    }

    /// Maps a point in continuous coordinates (pixel edges at integers) from the stored image to
    /// the upright image.
    public func uprightPoint(x: Double, y: Double, width: Double, height: Double) -> (x: Double, y: Double) {
        switch self {
        case .up: return (x, y)
        case .down: return (width - x, height - y)
        case .right: return (height - y, x)
        case .left: return (y, width - x)
        case .upMirrored: return (width - x, y)
        case .downMirrored: return (x, height - y)
        case .leftMirrored: return (y, x)
        case .rightMirrored: return (height - y, width - x)
        }
    }

    /// Maps a point in continuous coordinates from the upright image back to the stored image.
    public func storedPoint(x: Double, y: Double, width: Double, height: Double) -> (x: Double, y: Double) {
        switch self {
        case .up: return (x, y)
        case .down: return (width - x, height - y)
        case .right: return (y, height - x)
        case .left: return (width - y, x)
        case .upMirrored: return (width - x, y)
        case .downMirrored: return (x, height - y)
        case .leftMirrored: return (y, x)
        case .rightMirrored: return (width - y, height - x)
        }
    }
}

/// A rectangle in pixel coordinates (origin top-left), like CGRect.
public struct Rect: Sendable, Hashable, CustomStringConvertible {
    /// Left edge, top edge, width and height, in pixels.
    public var x: Double, y: Double, width: Double, height: Double
    /// A rectangle with its top-left corner at (`x`, `y`).
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
    /// The left edge.
    public var minX: Double { x }
    /// The top edge.
    public var minY: Double { y }
    /// The right edge.
    public var maxX: Double { x + width }
    /// The bottom edge.
    public var maxY: Double { y + height }
    /// Width × height; 0 for an empty (or inverted) rectangle.
    public var area: Double { max(0, width) * max(0, height) }
    /// `(x, y, width, height)`.
    public var description: String { "(\(x), \(y), \(width), \(height))" }

    /// Intersection over union with another rectangle (0 when either is empty).
    public func iou(_ other: Rect) -> Double {
        let w = min(maxX, other.maxX) - max(minX, other.minX)
        let h = min(maxY, other.maxY) - max(minY, other.minY)
        guard w > 0, h > 0 else { return 0 }
        let intersection = w * h
        let union = area + other.area - intersection
        return union > 0 ? intersection / union : 0
    }
}

extension ImageOrientation {
    /// Maps a rectangle from the stored (buffer) image of `width` × `height` to the upright image.
    public func uprightRect(_ rect: Rect, width: Int, height: Int) -> Rect {
        let a = uprightPoint(x: rect.minX, y: rect.minY, width: Double(width), height: Double(height))
        let b = uprightPoint(x: rect.maxX, y: rect.maxY, width: Double(width), height: Double(height))
        return Rect(x: min(a.x, b.x), y: min(a.y, b.y), width: abs(b.x - a.x), height: abs(b.y - a.y))
    }

    /// Maps a rectangle from the upright image back to the stored (buffer) image of `width` × `height`.
    public func storedRect(_ rect: Rect, width: Int, height: Int) -> Rect {
        let a = storedPoint(x: rect.minX, y: rect.minY, width: Double(width), height: Double(height))
        let b = storedPoint(x: rect.maxX, y: rect.maxY, width: Double(width), height: Double(height))
        return Rect(x: min(a.x, b.x), y: min(a.y, b.y), width: abs(b.x - a.x), height: abs(b.y - a.y))
    }
}

extension PixelBuffer {
    /// A new buffer with the orientation applied (the upright image), in `format` (default: this
    /// buffer's format, or rgb8 for YUV buffers).
    public func oriented(_ orientation: ImageOrientation, format target: PixelFormat? = nil) throws -> PixelBuffer {
        let outFormat = target ?? (format.isYUV ? .rgb8 : format)
        guard !outFormat.isYUV else {
            throw ImageError(.invalidArgument, "Orienting into \(outFormat.rawValue) is not supported; use rgb8, rgba8, bgra8 or gray8.")
        }
        let size = orientation.uprightSize(width: width, height: height)
        let out = try PixelBuffer(width: size.width, height: size.height, format: outFormat)
        for v in 0..<size.height {
            let dst = out.row(v)
            for u in 0..<size.width {
                let (x, y) = orientation.storedPixel(u: u, v: v, width: width, height: height)
                let (r, g, b) = rgb(x, y)
                switch outFormat {
                case .rgba8: dst[4 * u] = r; dst[4 * u + 1] = g; dst[4 * u + 2] = b; dst[4 * u + 3] = alpha(x, y)
                case .bgra8: dst[4 * u] = b; dst[4 * u + 1] = g; dst[4 * u + 2] = r; dst[4 * u + 3] = alpha(x, y)
                case .rgb8: dst[3 * u] = r; dst[3 * u + 1] = g; dst[3 * u + 2] = b
                case .gray8: dst[u] = format == .gray8 ? r : YUV.luma(r, g, b)
                default: break
                }
            }
        }
        return out
    }
}
