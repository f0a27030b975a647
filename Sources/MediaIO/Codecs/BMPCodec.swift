/// Windows BMP, written here: 1/4/8-bit palette, 16-bit (5-5-5 or bit fields), 24-bit and 32-bit
/// (BI_RGB or BI_BITFIELDS), bottom-up or top-down. RLE compression is reported as unsupported.
enum BMPCodec {
    static func decode(_ bytes: UnsafeRawBufferPointer, limits: ImageLimits) throws -> PixelBuffer {
        func corrupt(_ what: String) -> ImageError { ImageError(.corrupt, "The BMP data is corrupt or truncated: \(what). Re-export or re-download the image.") }
        func u16(_ o: Int) throws -> Int {
            guard o >= 0, o + 2 <= bytes.count else { throw corrupt("header ends early") }
            return Int(bytes[o]) | Int(bytes[o + 1]) << 8
        }
        func u32(_ o: Int) throws -> UInt32 {
            guard o >= 0, o + 4 <= bytes.count else { throw corrupt("header ends early") }
            return UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
        }
        let dataOffset = Int(try u32(10))
        let headerSize = Int(try u32(14))
        let width: Int, height: Int, bitCount: Int, compression: UInt32
        var colorsUsed = 0
        if headerSize == 12 {
            width = try u16(18)
            height = Int(Int16(truncatingIfNeeded: try u16(20)))
            bitCount = try u16(24)
            compression = 0
        } else if headerSize >= 40 {
            width = Int(Int32(bitPattern: try u32(18)))
            height = Int(Int32(bitPattern: try u32(22)))
            bitCount = try u16(28)
            compression = try u32(30)
            colorsUsed = Int(try u32(46))
        } else {
            throw ImageError(.unsupportedFormat, "The BMP header has an unknown size of \(headerSize) bytes.")
        }
        let topDown = height < 0
        let rows = abs(height)
        try limits.check(width: width, height: rows, what: "The BMP image")
        guard [1, 4, 8, 16, 24, 32].contains(bitCount) else {
            throw ImageError(.unsupportedFormat, "BMP images with \(bitCount) bits per pixel are not supported.")
        }
        guard compression == 0 || (compression == 3 && (bitCount == 16 || bitCount == 32)) || (compression == 6 && (bitCount == 16 || bitCount == 32)) else {
            throw ImageError(.unsupportedFormat, "BMP compression \(compression) (RLE or embedded JPEG/PNG) is not supported.")
        }
        // Channel masks for 16/32-bit images.
        var masks: (r: UInt32, g: UInt32, b: UInt32) = bitCount == 16 ? (0x7C00, 0x03E0, 0x001F) : (0xFF_0000, 0xFF00, 0xFF)
        if compression == 3 || compression == 6 {
            // Masks follow a 40-byte header, or sit inside a V4/V5 header.
            masks = (try u32(54), try u32(58), try u32(62))
            guard masks.r != 0, masks.g != 0, masks.b != 0 else { throw corrupt("zero colour masks") }
            // A mask must be one run of bits (a channel value cannot be scaled otherwise).
            for mask in [masks.r, masks.g, masks.b] where (mask >> UInt32(mask.trailingZeroBitCount)) & ((mask >> UInt32(mask.trailingZeroBitCount)) &+ 1) != 0 {
                throw ImageError(.unsupportedFormat, "BMP colour mask 0x\(String(mask, radix: 16)) is not one contiguous run of bits; such images are not supported.")
            }
        }
        // Palette for 1/4/8-bit images: entries of 4 bytes (3 for the OS/2 header), B, G, R.
        var palette: [(UInt8, UInt8, UInt8)] = []
        if bitCount <= 8 {
            let entrySize = headerSize == 12 ? 3 : 4
            let maximum = 1 << bitCount
            let count = colorsUsed > 0 ? min(colorsUsed, maximum) : maximum
            let start = 14 + headerSize
            for i in 0..<count {
                let o = start + i * entrySize
                guard o + 3 <= bytes.count, o + 3 <= dataOffset else { break }
                palette.append((bytes[o + 2], bytes[o + 1], bytes[o]))
            }
            guard !palette.isEmpty else { throw corrupt("missing palette") }
        }
        let (bitsPerRow, overflow) = width.multipliedReportingOverflow(by: bitCount)
        guard !overflow else { throw corrupt("row size overflows") }
        let rowBytes = (bitsPerRow + 31) / 32 * 4
        let (imageBytes, overflow2) = rowBytes.multipliedReportingOverflow(by: rows)
        guard !overflow2, dataOffset >= 14 + headerSize || headerSize == 12, dataOffset <= bytes.count, imageBytes <= bytes.count - dataOffset else {
            throw corrupt("pixel data (\(rows) rows of \(rowBytes) bytes at offset \(dataOffset)) runs past the end of the \(bytes.count)-byte file")
        }
        func channel(_ value: UInt32, _ mask: UInt32) -> UInt8 {
            let shift = UInt32(mask.trailingZeroBitCount)
            let bits = UInt32((mask >> shift).nonzeroBitCount)
            let v = (value & mask) >> shift
            guard bits > 0 else { return 0 }
            let maximum = (UInt64(1) << UInt64(bits)) - 1
            return UInt8((UInt64(v) * 255 + maximum / 2) / maximum)
        }
        let pixels = try PixelBuffer(width: width, height: rows, format: .rgb8, limits: limits)
        for r in 0..<rows {
            let sourceRow = dataOffset + (topDown ? r : rows - 1 - r) * rowBytes
            let dst = pixels.row(r)
            for x in 0..<width {
                let (red, green, blue): (UInt8, UInt8, UInt8)
                switch bitCount {
                case 24:
                    let o = sourceRow + 3 * x
                    (red, green, blue) = (bytes[o + 2], bytes[o + 1], bytes[o])
                case 32:
                    let o = sourceRow + 4 * x
                    let v = UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
                    (red, green, blue) = (channel(v, masks.r), channel(v, masks.g), channel(v, masks.b))
                case 16:
                    let o = sourceRow + 2 * x
                    let v = UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8
                    (red, green, blue) = (channel(v, masks.r), channel(v, masks.g), channel(v, masks.b))
                default:
                    let bit = x * bitCount
                    let byte = bytes[sourceRow + bit / 8]
                    let index = Int(byte >> UInt8(8 - bitCount - bit % 8)) & ((1 << bitCount) - 1)
                    (red, green, blue) = index < palette.count ? palette[index] : (0, 0, 0)
                }
                dst[3 * x] = red
                dst[3 * x + 1] = green
                dst[3 * x + 2] = blue
            }
        }
        return pixels
    }
}
