import Foundation

/// A buffer of pixels: the CVPixelBuffer of this world.
///
/// Wraps caller memory (no copy) or owns its memory, in any ``PixelFormat``, with a row stride
/// (bytes per row) per plane. Dimensions, strides and the memory size are checked when the buffer
/// is created, so reading pixels afterwards never goes out of bounds.
///
/// Like CVPixelBuffer it is a reference type: copies share the pixels. Writing through
/// ``withUnsafeMutableBytes(_:)`` while another thread reads is the caller's responsibility.
public final class PixelBuffer: @unchecked Sendable {
    /// One plane: where it starts in the memory and its stride.
    public struct Plane: Sendable, Hashable {
        /// Byte offset of the plane's first row in the buffer.
        public let offset: Int
        /// Bytes from the start of one row to the start of the next (the stride).
        public let bytesPerRow: Int
        /// A plane starting at `offset` with rows `bytesPerRow` bytes apart.
        public init(offset: Int, bytesPerRow: Int) {
            self.offset = offset
            self.bytesPerRow = bytesPerRow
        }
    }

    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// How the pixels are laid out.
    public let format: PixelFormat
    /// Where each plane starts and its stride (one plane for packed formats; two or three for YUV).
    public let planes: [Plane]
    /// The colour space used to convert YUV formats to RGB.
    public let yuvColorSpace: YUVColorSpace
    let base: UnsafeMutableRawPointer
    /// Bytes of memory the buffer covers.
    public let byteCount: Int
    private let release: (@Sendable (UnsafeMutableRawPointer) -> Void)?

    /// Wraps caller memory without copying. `release` is called when the buffer is destroyed (pass
    /// nil if the caller keeps ownership and guarantees the memory outlives the buffer).
    public init(wrapping memory: UnsafeMutableRawPointer, byteCount: Int, width: Int, height: Int, format: PixelFormat,
                planes: [Plane], yuvColorSpace: YUVColorSpace = .bt601VideoRange, limits: ImageLimits = .default,
                release: (@Sendable (UnsafeMutableRawPointer) -> Void)? = nil) throws {
        try PixelBuffer.validate(width: width, height: height, format: format, planes: planes, byteCount: byteCount, limits: limits)
        self.width = width
        self.height = height
        self.format = format
        self.planes = planes
        self.yuvColorSpace = yuvColorSpace
        self.base = memory
        self.byteCount = byteCount
        self.release = release
    }

    /// Allocates a zeroed buffer with tightly packed rows (or the given strides) and contiguous planes.
    public convenience init(width: Int, height: Int, format: PixelFormat, bytesPerRow: [Int]? = nil,
                            yuvColorSpace: YUVColorSpace = .bt601VideoRange, limits: ImageLimits = .default) throws {
        try limits.check(width: width, height: height)
        let layout = try PixelBuffer.contiguousLayout(width: width, height: height, format: format, bytesPerRow: bytesPerRow)
        // Validate before allocating, so a bad stride cannot leak the memory.
        try PixelBuffer.validate(width: width, height: height, format: format, planes: layout.planes, byteCount: layout.byteCount, limits: limits)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: max(layout.byteCount, 1), alignment: 64)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: max(layout.byteCount, 1))
        try self.init(wrapping: memory, byteCount: layout.byteCount, width: width, height: height, format: format,
                      planes: layout.planes, yuvColorSpace: yuvColorSpace, limits: limits, release: { $0.deallocate() })
    }

    /// Copies pixel bytes (contiguous planes, rows of `bytesPerRow` or tightly packed) into a new buffer.
    public convenience init(copying bytes: UnsafeRawBufferPointer, width: Int, height: Int, format: PixelFormat,
                            bytesPerRow: [Int]? = nil, yuvColorSpace: YUVColorSpace = .bt601VideoRange, limits: ImageLimits = .default) throws {
        try limits.check(width: width, height: height)
        let layout = try PixelBuffer.contiguousLayout(width: width, height: height, format: format, bytesPerRow: bytesPerRow)
        guard bytes.count >= layout.byteCount else {
            throw ImageError(.invalidDimensions,
                "A \(width)×\(height) \(format.rawValue) buffer with rows of \(layout.planes.map(\.bytesPerRow)) bytes needs \(layout.byteCount) bytes, but \(bytes.count) were given.")
        }
        try self.init(width: width, height: height, format: format, bytesPerRow: layout.planes.map(\.bytesPerRow), yuvColorSpace: yuvColorSpace, limits: limits)
        if let source = bytes.baseAddress { base.copyMemory(from: source, byteCount: layout.byteCount) }
    }

    /// Copies `data` (see ``init(copying:width:height:format:bytesPerRow:yuvColorSpace:limits:)``).
    public convenience init(data: Data, width: Int, height: Int, format: PixelFormat, bytesPerRow: [Int]? = nil,
                            yuvColorSpace: YUVColorSpace = .bt601VideoRange, limits: ImageLimits = .default) throws {
        try limits.check(width: width, height: height)
        let layout = try PixelBuffer.contiguousLayout(width: width, height: height, format: format, bytesPerRow: bytesPerRow)
        guard data.count >= layout.byteCount else {
            throw ImageError(.invalidDimensions,
                "A \(width)×\(height) \(format.rawValue) buffer with rows of \(layout.planes.map(\.bytesPerRow)) bytes needs \(layout.byteCount) bytes, but \(data.count) were given.")
        }
        try self.init(width: width, height: height, format: format, bytesPerRow: layout.planes.map(\.bytesPerRow), yuvColorSpace: yuvColorSpace, limits: limits)
        let destination = base
        data.withUnsafeBytes { raw in
            if let source = raw.baseAddress { destination.copyMemory(from: source, byteCount: layout.byteCount) }
        }
    }

    deinit { release?(base) }

    /// Read access to the whole memory.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: byteCount))
    }

    /// Write access to the whole memory.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: base, count: byteCount))
    }

    /// Start of row `y` of plane `plane` (both must be in range; internal callers check).
    @inline(__always)
    package func row(_ y: Int, plane: Int = 0) -> UnsafeMutablePointer<UInt8> {
        (base + planes[plane].offset + y * planes[plane].bytesPerRow).assumingMemoryBound(to: UInt8.self)
    }

    /// The RGB value of pixel (x, y), converting from the buffer's format. `x` and `y` must be in range.
    @inline(__always)
    package func rgb(_ x: Int, _ y: Int) -> (UInt8, UInt8, UInt8) {
        switch format {
        case .rgba8:
            let p = row(y) + 4 * x
            return (p[0], p[1], p[2])
        case .bgra8:
            let p = row(y) + 4 * x
            return (p[2], p[1], p[0])
        case .rgb8:
            let p = row(y) + 3 * x
            return (p[0], p[1], p[2])
        case .gray8:
            let v = row(y)[x]
            return (v, v, v)
        case .nv12, .nv21:
            let luma = row(y)[x]
            let c = row(y / 2, plane: 1) + 2 * (x / 2)
            let (u, v) = format == .nv12 ? (c[0], c[1]) : (c[1], c[0])
            return YUV.toRGB(luma, u, v, yuvColorSpace)
        case .i420:
            return YUV.toRGB(row(y)[x], row(y / 2, plane: 1)[x / 2], row(y / 2, plane: 2)[x / 2], yuvColorSpace)
        }
    }

    /// A new tightly packed buffer of this image in `format` (YUV → RGB conversion, alpha 255 added,
    /// grey replicated, or RGB → grey by BT.601 luma).
    public func converted(to target: PixelFormat) throws -> PixelBuffer {
        guard !target.isYUV else {
            throw ImageError(.invalidArgument, "Converting to \(target.rawValue) is not supported; convert to rgb8, rgba8, bgra8 or gray8.")
        }
        let out = try PixelBuffer(width: width, height: height, format: target)
        for y in 0..<height {
            let dst = out.row(y)
            for x in 0..<width {
                let (r, g, b) = rgb(x, y)
                switch target {
                case .rgba8: dst[4 * x] = r; dst[4 * x + 1] = g; dst[4 * x + 2] = b; dst[4 * x + 3] = alpha(x, y)
                case .bgra8: dst[4 * x] = b; dst[4 * x + 1] = g; dst[4 * x + 2] = r; dst[4 * x + 3] = alpha(x, y)
                case .rgb8: dst[3 * x] = r; dst[3 * x + 1] = g; dst[3 * x + 2] = b
                case .gray8: dst[x] = YUV.luma(r, g, b)
                default: break
                }
            }
        }
        return out
    }

    /// Alpha of pixel (x, y): the stored alpha for RGBA/BGRA, else 255.
    @inline(__always)
    package func alpha(_ x: Int, _ y: Int) -> UInt8 {
        switch format {
        case .rgba8, .bgra8: return row(y)[4 * x + 3]
        default: return 255
        }
    }

    // MARK: Validation

    static func contiguousLayout(width: Int, height: Int, format: PixelFormat, bytesPerRow: [Int]?) throws -> (planes: [Plane], byteCount: Int) {
        if let strides = bytesPerRow, strides.count != format.planeCount {
            throw ImageError(.invalidDimensions, "A \(format.rawValue) buffer has \(format.planeCount) planes, but \(strides.count) row strides were given.")
        }
        var planes: [Plane] = []
        var offset = 0
        for plane in 0..<format.planeCount {
            let stride = bytesPerRow?[plane] ?? format.minimumBytesPerRow(plane, width: width)
            let rows = format.planeSize(plane, width: width, height: height).height
            planes.append(Plane(offset: offset, bytesPerRow: stride))
            let (size, overflow) = stride.multipliedReportingOverflow(by: rows)
            guard !overflow, stride >= 0 else { throw ImageError(.invalidDimensions, "Row stride \(stride) is invalid.") }
            offset += size
        }
        return (planes, offset)
    }

    static func validate(width: Int, height: Int, format: PixelFormat, planes: [Plane], byteCount: Int, limits: ImageLimits) throws {
        try limits.check(width: width, height: height, what: "The pixel buffer")
        guard planes.count == format.planeCount else {
            throw ImageError(.invalidDimensions, "A \(format.rawValue) buffer has \(format.planeCount) planes, but \(planes.count) were described.")
        }
        for (index, plane) in planes.enumerated() {
            let minimum = format.minimumBytesPerRow(index, width: width)
            guard plane.bytesPerRow >= minimum else {
                throw ImageError(.invalidDimensions,
                    "Plane \(index) of a \(width)-pixel-wide \(format.rawValue) buffer needs at least \(minimum) bytes per row, but the stride is \(plane.bytesPerRow).")
            }
            let rows = format.planeSize(index, width: width, height: height).height
            let (span, overflow) = plane.bytesPerRow.multipliedReportingOverflow(by: rows - 1)
            guard plane.offset >= 0, !overflow, plane.offset <= byteCount, span <= byteCount - plane.offset,
                  minimum <= byteCount - plane.offset - span else {
                throw ImageError(.invalidDimensions,
                    "Plane \(index) (offset \(plane.offset), \(rows) rows of \(plane.bytesPerRow) bytes) does not fit in the buffer's \(byteCount) bytes.")
            }
        }
    }
}

/// YUV → RGB conversion (BT.601), rounded to nearest and clamped.
enum YUV {
    /// BT.601 luma of an RGB pixel, rounded.
    @inline(__always)
    static func luma(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> UInt8 {
        let sum: Int = 299 * Int(r) + 587 * Int(g) + 114 * Int(b) + 500
        return UInt8(sum / 1000)
    }

    @inline(__always)
    static func toRGB(_ y: UInt8, _ u: UInt8, _ v: UInt8, _ space: YUVColorSpace) -> (UInt8, UInt8, UInt8) {
        let d = Double(u) - 128, e = Double(v) - 128
        let luma: Double
        let (rv, gu, gv, bu): (Double, Double, Double, Double)
        switch space {
        case .bt601VideoRange:
            luma = 1.164383 * (Double(y) - 16)
            (rv, gu, gv, bu) = (1.596027, 0.391762, 0.812968, 2.017232)
        case .bt601FullRange:
            luma = Double(y)
            (rv, gu, gv, bu) = (1.402, 0.344136, 0.714136, 1.772)
        }
        func clamp(_ x: Double) -> UInt8 { UInt8(max(0, min(255, (x + 0.5).rounded(.down)))) }
        return (clamp(luma + rv * e), clamp(luma - gu * d - gv * e), clamp(luma + bu * d))
    }
}
