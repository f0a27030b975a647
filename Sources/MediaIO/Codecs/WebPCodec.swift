import CWebP
import Foundation

/// WebP through libwebp.
enum WebPCodec {
    static func decode(_ bytes: UnsafeRawBufferPointer, limits: ImageLimits) throws -> PixelBuffer {
        guard let source = bytes.bindMemory(to: UInt8.self).baseAddress else { throw ImageError(.corrupt, "The WebP data is empty.") }
        var features = WebPBitstreamFeatures()
        guard edgevision_webp_get_features(source, bytes.count, &features) != 0 else {
            throw ImageError(.corrupt, "The WebP header is corrupt or truncated.")
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
        guard decoded else { throw ImageError(.corrupt, "The WebP data is corrupt or truncated.") }
        return pixels
    }
}
