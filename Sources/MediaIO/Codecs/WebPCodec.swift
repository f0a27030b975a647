import CWebP
import Foundation

/// WebP through libwebp.
enum WebPCodec {
    static func decode(_ bytes: UnsafeRawBufferPointer, limits: ImageLimits) throws -> PixelBuffer {
        guard let source = bytes.bindMemory(to: UInt8.self).baseAddress else { throw ImageError(.corrupt, "The WebP data is empty.") }
        var features = WebPBitstreamFeatures()
        guard edgevision_webp_get_features(source, bytes.count, &features) != 0 else {
            throw ImageError(.corrupt, "The WebP header is corrupt or truncated; re-export or re-download the image.")
        }
        try limits.check(width: Int(features.width), height: Int(features.height), what: "The WebP image")
        let hasAlpha = features.has_alpha != 0
        let pixels = try PixelBuffer(width: Int(features.width), height: Int(features.height), format: hasAlpha ? .rgba8 : .rgb8, limits: limits)
        let stride = Int32(pixels.planes[0].bytesPerRow)
        let decoded = pixels.withUnsafeMutableBytes { out -> Bool in
            guard let destination = out.bindMemory(to: UInt8.self).baseAddress else { return false }
            return hasAlpha
                ? WebPDecodeRGBAInto(source, bytes.count, destination, out.count, stride) != nil
                : WebPDecodeRGBInto(source, bytes.count, destination, out.count, stride) != nil
        }
        guard decoded else { throw ImageError(.corrupt, "The WebP data is corrupt or truncated; re-export or re-download the image.") }
        return pixels
    }

    /// Lossy WebP at `quality` (0–100), or lossless when `quality` is nil, of an rgb8 or rgba8
    /// buffer (other formats are converted; alpha is kept for rgba8/bgra8).
    static func encode(_ pixels: PixelBuffer, quality: Int?) throws -> Data {
        if let quality, !(0...100).contains(quality) {
            throw ImageError(.invalidArgument, "WebP quality must be 0...100 (or nil for lossless), got \(quality).")
        }
        guard pixels.width <= Int(WEBP_MAX_DIMENSION), pixels.height <= Int(WEBP_MAX_DIMENSION) else {
            throw ImageError(.encode, "WebP images can be at most \(WEBP_MAX_DIMENSION) pixels per side; this one is \(pixels.width)×\(pixels.height).")
        }
        let source: PixelBuffer
        switch pixels.format {
        case .rgb8, .rgba8: source = pixels
        case .bgra8: source = try pixels.converted(to: .rgba8)
        default: source = try pixels.converted(to: .rgb8)
        }
        let hasAlpha = source.format == .rgba8
        var output: UnsafeMutablePointer<UInt8>?
        let width = Int32(source.width), height = Int32(source.height), stride = Int32(source.planes[0].bytesPerRow)
        let size = source.withUnsafeBytes { raw -> Int in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return 0 }
            switch (hasAlpha, quality) {
            case (true, let q?): return WebPEncodeRGBA(base, width, height, stride, Float(q), &output)
            case (false, let q?): return WebPEncodeRGB(base, width, height, stride, Float(q), &output)
            case (true, nil): return WebPEncodeLosslessRGBA(base, width, height, stride, &output)
            case (false, nil): return WebPEncodeLosslessRGB(base, width, height, stride, &output)
            }
        }
        defer { if let output { WebPFree(output) } }
        guard size > 0, let output else { throw ImageError(.encode, "WebP encoding of a \(source.width)×\(source.height) image failed.") }
        return Data(bytes: output, count: size)
    }
}
