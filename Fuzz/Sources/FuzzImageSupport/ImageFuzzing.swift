import Foundation
import FuzzSupport
import MediaIO

/// Shared body of the per-decoder fuzz targets (FuzzJPEG, FuzzPNG, FuzzWebP, FuzzBMP).
public enum ImageFuzzing {
    /// Smaller than `ImageLimits.default` (100 megapixels) so that a hostile header cannot make every
    /// run allocate hundreds of MB; the limit checks themselves are the same code.
    public static let limits = ImageLimits(maximumPixelCount: 4 << 20, maximumDimension: 16_384)

    /// The bytes as `format`: inputs that do not already start with the format's magic number get it
    /// prepended, so that every run reaches the decoder under test.
    public static func framed(_ bytes: UnsafeRawBufferPointer, as format: ImageFormat) -> [UInt8] {
        if ImageFormat.sniff(bytes) == format { return Array(bytes) }
        switch format {
        case .jpeg: return [0xFF, 0xD8, 0xFF] + bytes
        case .png: return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + bytes
        case .bmp: return Array("BM".utf8) + bytes
        case .webp:
            let size = UInt32(truncatingIfNeeded: bytes.count + 4)
            return Array("RIFF".utf8) + (0..<4).map { UInt8(truncatingIfNeeded: size >> (8 * $0)) } + Array("WEBP".utf8) + bytes
        }
    }

    /// Decodes; an error must be an ImageError; a decoded image is read completely (so that a buffer
    /// smaller than its declared size is an AddressSanitizer report) and converted once.
    public static func run(_ data: UnsafePointer<UInt8>, _ size: Int, as format: ImageFormat) {
        let input = framed(UnsafeRawBufferPointer(start: data, count: size), as: format)
        FuzzHarness.expect(ImageError.self) {
            let image = try input.withUnsafeBytes { try ImageDecoder.decode($0, limits: limits) }
            guard image.format == format else {
                fputs("fuzz: decoded as \(image.format), expected \(format)\n", stderr)
                abort()
            }
            let pixels = image.pixels
            let rowBytes = pixels.width * (pixels.format == .rgba8 ? 4 : 3)
            let sum = pixels.withUnsafeBytes { raw -> Int in
                var sum = 0
                for y in 0..<pixels.height {
                    let row = pixels.planes[0].offset + y * pixels.planes[0].bytesPerRow
                    guard row + rowBytes <= raw.count else {
                        fputs("fuzz: row \(y) ends at \(row + rowBytes), past the buffer (\(raw.count) bytes)\n", stderr)
                        abort()
                    }
                    sum &+= Int(raw[row]) &+ Int(raw[row + rowBytes - 1])
                }
                return sum
            }
            _ = sum
            _ = try pixels.converted(to: .gray8)
        }
    }

    /// Small generated images in every layout the encoders write (seeds).
    public static func seedImages() throws -> [(name: String, pixels: PixelBuffer)] {
        var images: [(String, PixelBuffer)] = []
        for (width, height) in [(1, 1), (3, 2), (16, 9), (33, 17)] {
            for format in [PixelFormat.rgb8, .rgba8] {
                let channels = format == .rgba8 ? 4 : 3
                let bytes = (0..<(width * height * channels)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ $0 / 7) }
                images.append(("\(width)x\(height)-\(format.rawValue)",
                               try PixelBuffer(data: Data(bytes), width: width, height: height, format: format)))
            }
        }
        return images
    }

    /// A BMP file: `bitCount` 24 or 32 (BI_RGB), bottom-up unless `topDown`.
    public static func bmp(width: Int, height: Int, bitCount: Int, topDown: Bool) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        func u32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let rowBytes = (width * bitCount / 8 + 3) & ~3
        let pixels = (0..<(rowBytes * height)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        var out = Array("BM".utf8) + u32(54 + pixels.count) + u32(0) + u32(54)
        out += u32(40) + u32(width) + u32(topDown ? -height : height) + u16(1) + u16(bitCount) + u32(0)
        out += u32(pixels.count) + u32(2835) + u32(2835) + u32(0) + u32(0)
        return out + pixels
    }
}
