import CTurboJPEG
import Foundation

/// JPEG through libjpeg-turbo's TurboJPEG API, with EXIF orientation read here.
enum JPEGCodec {
    static func decode(_ bytes: UnsafeRawBufferPointer, limits: ImageLimits) throws -> DecodedImage {
        guard let handle = tjInitDecompress() else { throw ImageError(.corrupt, "libjpeg-turbo could not be initialized.") }
        defer { tjDestroy(handle) }
        guard let source = bytes.bindMemory(to: UInt8.self).baseAddress else { throw ImageError(.corrupt, "The JPEG data is empty.") }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        guard tjDecompressHeader3(handle, source, UInt(bytes.count), &width, &height, &subsampling, &colorspace) == 0 else {
            let text = message(handle)
            if text.contains("Maximum supported image dimension") {
                throw ImageError(.resourceLimit, "The JPEG image is larger than libjpeg-turbo's limit of 65,500 pixels per side (\(text)); scale it down before decoding.")
            }
            throw ImageError(.corrupt, "The JPEG header is corrupt: \(text). The file is damaged or not a JPEG; re-export or re-download it.")
        }
        try limits.check(width: Int(width), height: Int(height), what: "The JPEG image")
        let pixels = try PixelBuffer(width: Int(width), height: Int(height), format: .rgb8, limits: limits)
        let status = pixels.withUnsafeMutableBytes { out -> Int32 in
            guard let destination = out.bindMemory(to: UInt8.self).baseAddress else { return -1 }
            return tjDecompress2(handle, source, UInt(bytes.count), destination, width, Int32(pixels.planes[0].bytesPerRow), height, Int32(TJPF_RGB.rawValue), 0)
        }
        if status != 0 {
            // Minor warnings (e.g. extraneous bytes before a marker) still produce the image, as in
            // other decoders; fatal errors and truncation ("Premature end of JPEG file") do not.
            let text = message(handle)
            if tjGetErrorCode(handle) == Int32(TJERR_FATAL.rawValue) || text.contains("Premature end") {
                throw ImageError(.corrupt, "The JPEG data is corrupt or truncated: \(text). Re-export or re-download the image.")
            }
        }
        return DecodedImage(pixels: pixels, orientation: EXIF.orientation(inJPEG: bytes) ?? .up, format: .jpeg)
    }

    static func encode(_ pixels: PixelBuffer, quality: Int) throws -> Data {
        guard (1...100).contains(quality) else { throw ImageError(.invalidArgument, "JPEG quality must be 1...100, got \(quality).") }
        let source = pixels.format == .rgb8 || pixels.format == .rgba8 || pixels.format == .bgra8 || pixels.format == .gray8
            ? pixels : try pixels.converted(to: .rgb8)
        let pixelFormat: TJPF
        switch source.format {
        case .rgba8: pixelFormat = TJPF_RGBA
        case .bgra8: pixelFormat = TJPF_BGRA
        case .gray8: pixelFormat = TJPF_GRAY
        default: pixelFormat = TJPF_RGB
        }
        guard let handle = tjInitCompress() else { throw ImageError(.encode, "libjpeg-turbo could not be initialized.") }
        defer { tjDestroy(handle) }
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let status = source.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return -1 }
            return tjCompress2(handle, base, Int32(source.width), Int32(source.planes[0].bytesPerRow), Int32(source.height),
                               Int32(pixelFormat.rawValue), &output, &size,
                               source.format == .gray8 ? Int32(TJSAMP_GRAY.rawValue) : Int32(TJSAMP_420.rawValue), Int32(quality), 0)
        }
        defer { if let output { tjFree(output) } }
        guard status == 0, let output else { throw ImageError(.encode, "JPEG encoding failed: \(message(handle)).") }
        return Data(bytes: output, count: Int(size))
    }

    static func message(_ handle: tjhandle) -> String {
        guard let text = tjGetErrorStr2(handle) else { return "unknown error" }
        return String(cString: text)
    }
}

/// Reads the orientation tag (0x0112) from a JPEG's EXIF APP1 segment, with every offset checked.
enum EXIF {
    static func orientation(inJPEG bytes: UnsafeRawBufferPointer) -> ImageOrientation? {
        var p = 2
        while p + 4 <= bytes.count {
            guard bytes[p] == 0xFF else { return nil }
            let marker = bytes[p + 1]
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { p += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return nil }  // start of scan: no more metadata
            let length = Int(bytes[p + 2]) << 8 | Int(bytes[p + 3])
            guard length >= 2, p + 2 + length <= bytes.count else { return nil }
            if marker == 0xE1, length >= 8 {
                let segment = UnsafeRawBufferPointer(rebasing: bytes[(p + 4)..<(p + 2 + length)])
                if segment.count >= 6, Array(segment[0..<6]) == [0x45, 0x78, 0x69, 0x66, 0, 0] {
                    return orientation(inTIFF: UnsafeRawBufferPointer(rebasing: segment[6...]))
                }
            }
            p += 2 + length
        }
        return nil
    }

    static func orientation(inTIFF tiff: UnsafeRawBufferPointer) -> ImageOrientation? {
        guard tiff.count >= 8 else { return nil }
        let little: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        func u16(_ o: Int) -> Int? {
            guard o >= 0, o + 2 <= tiff.count else { return nil }
            return little ? Int(tiff[o]) | Int(tiff[o + 1]) << 8 : Int(tiff[o]) << 8 | Int(tiff[o + 1])
        }
        func u32(_ o: Int) -> Int? {
            guard let a = u16(o), let b = u16(o + 2) else { return nil }
            return little ? a | b << 16 : a << 16 | b
        }
        guard let ifd = u32(4), let count = u16(ifd) else { return nil }
        for i in 0..<min(count, 1000) {
            let entry = ifd + 2 + 12 * i
            guard let tag = u16(entry) else { return nil }
            if tag == 0x0112, let value = u16(entry + 8) {
                return ImageOrientation(exifValue: value)
            }
        }
        return nil
    }
}
