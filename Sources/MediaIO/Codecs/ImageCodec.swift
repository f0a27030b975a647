import Foundation

/// Encoded image formats.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, webp, bmp

    /// Recognizes a format from the first bytes (magic numbers); nil if none matches.
    public static func sniff(_ bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + magic.count && magic.enumerated().allSatisfy { bytes[offset + $0.offset] == $0.element }
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts(Array("BM".utf8)) { return .bmp }
        return nil
    }
}

/// A decoded image: its pixels as stored in the file, and the orientation the file asks for (EXIF
/// for JPEG; `.up` otherwise).
public struct DecodedImage: Sendable {
    /// RGB8 (opaque images) or RGBA8 (images with alpha).
    public let pixels: PixelBuffer
    /// The orientation from the file's metadata; apply it to show the image upright.
    public let orientation: ImageOrientation
    /// The format the image was encoded in.
    public let format: ImageFormat
}

/// Decodes JPEG (libjpeg-turbo), PNG (libspng), WebP (libwebp) and BMP (written here).
///
/// Every decoder checks the declared dimensions against ``ImageLimits`` before allocating, and
/// turns truncated or corrupt data into an ``ImageError``.
public enum ImageDecoder {
    /// Decodes encoded image bytes (JPEG with its EXIF orientation, PNG, WebP, BMP; the format is sniffed from the bytes).
    ///
    /// - Throws: ``ImageError``: unsupported format, corrupt data, or a size beyond `limits`.
    public static func decode(_ data: Data, limits: ImageLimits = .default) throws -> DecodedImage {
        try data.withUnsafeBytes { try decode($0, limits: limits) }
    }

    /// Decodes encoded image bytes in memory (JPEG with its EXIF orientation, PNG, WebP, BMP).
    ///
    /// - Throws: ``ImageError``: unsupported format, corrupt data, or a size beyond `limits`.
    public static func decode(_ bytes: UnsafeRawBufferPointer, limits: ImageLimits = .default) throws -> DecodedImage {
        guard let format = ImageFormat.sniff(bytes) else {
            throw ImageError(.unsupportedFormat,
                bytes.isEmpty ? "The image data is empty; pass the bytes of a JPEG, PNG, WebP or BMP file." : "The data is not a JPEG, PNG, WebP or BMP image (unrecognized first bytes); convert it to one of these formats.")
        }
        switch format {
        case .jpeg: return try JPEGCodec.decode(bytes, limits: limits)
        case .png: return DecodedImage(pixels: try PNGCodec.decode(bytes, limits: limits), orientation: .up, format: .png)
        case .webp: return DecodedImage(pixels: try WebPCodec.decode(bytes, limits: limits), orientation: .up, format: .webp)
        case .bmp: return DecodedImage(pixels: try BMPCodec.decode(bytes, limits: limits), orientation: .up, format: .bmp)
        }
    }

    /// Reads and decodes an image file.
    public static func decode(contentsOf url: URL, limits: ImageLimits = .default) throws -> DecodedImage {
        let data: Data
        do {
            data = try Data(contentsOf: url, options: .mappedIfSafe)
        } catch {
            throw ImageError(.io, "Cannot read image file '\(url.path)': \(error.localizedDescription) Check the path and its permissions.")
        }
        return try decode(data, limits: limits)
    }
}

/// Encodes PNG, JPEG and WebP.
public enum ImageEncoder {
    /// PNG of an rgb8, rgba8 or gray8 buffer (other formats are converted to rgba8 first).
    public static func png(_ pixels: PixelBuffer) throws -> Data { try PNGCodec.encode(pixels) }

    /// JPEG of a buffer at `quality` (1–100); alpha is dropped.
    public static func jpeg(_ pixels: PixelBuffer, quality: Int = 90) throws -> Data { try JPEGCodec.encode(pixels, quality: quality) }

    /// WebP of a buffer: lossy at `quality` (0–100), or lossless when `quality` is nil.
    public static func webp(_ pixels: PixelBuffer, quality: Int? = 90) throws -> Data { try WebPCodec.encode(pixels, quality: quality) }

    /// Encodes by the file extension of `url` (.png, .jpg/.jpeg, .webp) and writes the file.
    public static func write(_ pixels: PixelBuffer, to url: URL, quality: Int = 90) throws {
        let data: Data
        switch url.pathExtension.lowercased() {
        case "png": data = try png(pixels)
        case "jpg", "jpeg": data = try jpeg(pixels, quality: quality)
        case "webp": data = try webp(pixels, quality: quality)
        default:
            throw ImageError(.invalidArgument, "Cannot write '\(url.lastPathComponent)': use a .png, .jpg, .jpeg or .webp file name.")
        }
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw ImageError(.io, "Cannot write image file '\(url.path)': \(error.localizedDescription)")
        }
    }
}
