/// An error reading, writing or converting an image or video.
///
/// ``code`` says what kind of problem it is; ``message`` says what was wrong and what to do.
public struct ImageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of image or video error.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Value: Sendable, Hashable { case io, unsupportedFormat, corrupt, invalidDimensions, resourceLimit, invalidArgument, encode, video }
        let value: Value
        /// The file could not be read or written.
        public static let io = Code(value: .io)
        /// The bytes are not an image format EdgeVision reads (JPEG, PNG, WebP, BMP), or a variant of one it does not support.
        public static let unsupportedFormat = Code(value: .unsupportedFormat)
        /// The image data is truncated or corrupt.
        public static let corrupt = Code(value: .corrupt)
        /// Width, height or row stride are zero, negative, or inconsistent with the data.
        public static let invalidDimensions = Code(value: .invalidDimensions)
        /// The image is larger than the configured limit (``ImageLimits``).
        public static let resourceLimit = Code(value: .resourceLimit)
        /// An argument is out of range (orientation, region of interest, pixel format for an operation).
        public static let invalidArgument = Code(value: .invalidArgument)
        /// Encoding failed.
        public static let encode = Code(value: .encode)
        /// A video could not be opened or decoded.
        public static let video = Code(value: .video)

        /// The code's name, e.g. "corrupt".
        public var description: String {
            switch value {
            case .io: return "io"
            case .unsupportedFormat: return "unsupportedFormat"
            case .corrupt: return "corrupt"
            case .invalidDimensions: return "invalidDimensions"
            case .resourceLimit: return "resourceLimit"
            case .invalidArgument: return "invalidArgument"
            case .encode: return "encode"
            case .video: return "video"
            }
        }
    }

    /// What kind of problem it is.
    public let code: Code
    /// What was wrong and what to do about it, in one sentence or two.
    public let message: String

    /// An error of kind `code` explained by `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// Limits that protect memory: checked before any allocation.
public struct ImageLimits: Sendable, Hashable {
    /// The largest number of pixels (width × height) accepted (default 100 megapixels).
    public var maximumPixelCount: Int
    /// The largest width or height accepted.
    public var maximumDimension: Int

    /// Limits of `maximumPixelCount` pixels and `maximumDimension` pixels per side.
    public init(maximumPixelCount: Int = 100_000_000, maximumDimension: Int = 65_535) {
        self.maximumPixelCount = maximumPixelCount
        self.maximumDimension = maximumDimension
    }

    /// 100 megapixels, 65,535 pixels per side: the limits used unless a call passes others.
    public static let `default` = ImageLimits()

    /// Throws unless `width` × `height` is a valid size within these limits.
    public func check(width: Int, height: Int, what: String = "The image") throws {
        guard width > 0, height > 0 else {
            throw ImageError(.invalidDimensions, "\(what) has size \(width)×\(height); width and height must be positive.")
        }
        guard width <= maximumDimension, height <= maximumDimension else {
            throw ImageError(.resourceLimit, "\(what) is \(width)×\(height), larger than the limit of \(maximumDimension) pixels per side (ImageLimits.maximumDimension). Scale it down, or pass larger ImageLimits if it is trusted.")
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, pixels <= maximumPixelCount else {
            throw ImageError(.resourceLimit, "\(what) is \(width)×\(height) = \(overflow ? "more than \(Int.max)" : "\(pixels)") pixels, more than the limit of \(maximumPixelCount) (ImageLimits.maximumPixelCount). Scale it down, or pass larger ImageLimits if it is trusted.")
        }
    }
}
