/// The layout of pixels in a ``PixelBuffer`` (the `OSType` pixel formats of CVPixelBuffer).
public enum PixelFormat: String, Sendable, Hashable, CaseIterable {
    /// 8-bit R, G, B, A per pixel.
    case rgba8
    /// 8-bit B, G, R, A per pixel (the iOS camera default, kCVPixelFormatType_32BGRA).
    case bgra8
    /// 8-bit R, G, B per pixel.
    case rgb8
    /// 8-bit luminance.
    case gray8
    /// Y plane, then one interleaved U,V plane at half resolution (camera YUV 4:2:0).
    case nv12
    /// Y plane, then one interleaved V,U plane at half resolution (Android camera default).
    case nv21
    /// Y plane, U plane, V plane; chroma at half resolution (planar YUV 4:2:0).
    case i420

    /// Number of planes.
    public var planeCount: Int {
        switch self {
        case .rgba8, .bgra8, .rgb8, .gray8: return 1
        case .nv12, .nv21: return 2
        case .i420: return 3
        }
    }

    /// Bytes per pixel of a packed format (1 for the Y plane of YUV formats).
    public var bytesPerPixel: Int {
        switch self {
        case .rgba8, .bgra8: return 4
        case .rgb8: return 3
        case .gray8, .nv12, .nv21, .i420: return 1
        }
    }

    /// Whether the format is planar YUV (NV12, NV21, I420).
    public var isYUV: Bool { planeCount > 1 }

    /// Width in pixels and height in rows of plane `plane` for an image of `width` × `height`.
    public func planeSize(_ plane: Int, width: Int, height: Int) -> (width: Int, height: Int) {
        guard plane > 0 else { return (width, height) }
        return ((width + 1) / 2, (height + 1) / 2)
    }

    /// Minimum bytes per row of plane `plane`.
    public func minimumBytesPerRow(_ plane: Int, width: Int) -> Int {
        switch (self, plane) {
        case (.nv12, 1), (.nv21, 1): return ((width + 1) / 2) * 2
        case (.i420, 1), (.i420, 2): return (width + 1) / 2
        default: return width * bytesPerPixel
        }
    }
}

/// YUV to RGB conversion matrix and range.
public enum YUVColorSpace: String, Sendable, Hashable {
    /// BT.601, Y in [16, 235] (video range; libyuv's default, what camera "420v" buffers use).
    case bt601VideoRange
    /// BT.601, Y in [0, 255] (full range; camera "420f" buffers, JPEG).
    case bt601FullRange
}
