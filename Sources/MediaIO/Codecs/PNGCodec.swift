import CSPNG
import Foundation

/// PNG through libspng.
enum PNGCodec {
    static func decode(_ bytes: UnsafeRawBufferPointer, limits: ImageLimits) throws -> PixelBuffer {
        guard let ctx = spng_ctx_new(0) else { throw ImageError(.corrupt, "libspng could not be initialized.") }
        defer { spng_ctx_free(ctx) }
        func check(_ status: Int32, _ what: String) throws {
            guard status == 0 else {
                throw ImageError(.corrupt, "The PNG data is corrupt or truncated (\(what): \(String(cString: spng_strerror(status)))); re-export or re-download the image.")
            }
        }
        // Bound chunk sizes and cache so a hostile file cannot make libspng allocate a lot.
        spng_set_chunk_limits(ctx, 16 << 20, 64 << 20)
        spng_set_crc_action(ctx, Int32(SPNG_CRC_ERROR.rawValue), Int32(SPNG_CRC_ERROR.rawValue))
        try check(spng_set_png_buffer(ctx, bytes.baseAddress, bytes.count), "buffer")
        // The declared size first: libspng reports sizes it cannot handle (e.g. 2^31-1 wide) as
        // "arithmetic overflow", but a size beyond the limits is a resource-limit error.
        if bytes.count >= 24, Array(bytes[12..<16]) == Array("IHDR".utf8) {
            let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
            if width > 0, height > 0 { try limits.check(width: width, height: height, what: "The PNG image") }
        }
        var header = spng_ihdr()
        try check(spng_get_ihdr(ctx, &header), "header")
        try limits.check(width: Int(header.width), height: Int(header.height), what: "The PNG image")
        // Colour type 4 (grey + alpha) and 6 (RGBA) carry alpha; palette images may (tRNS).
        var transparency = spng_trns()
        let hasAlpha = header.color_type == 4 || header.color_type == 6 || spng_get_trns(ctx, &transparency) == 0
        let format: PixelFormat = hasAlpha ? .rgba8 : .rgb8
        let spngFormat = hasAlpha ? Int32(SPNG_FMT_RGBA8.rawValue) : Int32(SPNG_FMT_RGB8.rawValue)
        var size = 0
        try check(spng_decoded_image_size(ctx, spngFormat, &size), "size")
        let pixels = try PixelBuffer(width: Int(header.width), height: Int(header.height), format: format, limits: limits)
        guard size == pixels.byteCount else { throw ImageError(.corrupt, "The PNG decoder reported an unexpected size.") }
        let flags = hasAlpha ? Int32(SPNG_DECODE_TRNS.rawValue) : 0
        try pixels.withUnsafeMutableBytes { out in
            try check(spng_decode_image(ctx, out.baseAddress, out.count, spngFormat, flags), "pixels")
        }
        return pixels
    }

    static func encode(_ pixels: PixelBuffer) throws -> Data {
        let source: PixelBuffer
        switch pixels.format {
        case .rgb8, .rgba8, .gray8: source = pixels
        default: source = try pixels.converted(to: .rgba8)
        }
        guard let ctx = spng_ctx_new(Int32(SPNG_CTX_ENCODER.rawValue)) else { throw ImageError(.encode, "libspng could not be initialized.") }
        defer { spng_ctx_free(ctx) }
        func check(_ status: Int32) throws {
            guard status == 0 else { throw ImageError(.encode, "PNG encoding failed: \(String(cString: spng_strerror(status))).") }
        }
        try check(spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1))
        var header = spng_ihdr()
        header.width = UInt32(source.width)
        header.height = UInt32(source.height)
        header.bit_depth = 8
        switch source.format {
        case .gray8: header.color_type = UInt8(SPNG_COLOR_TYPE_GRAYSCALE.rawValue)
        case .rgb8: header.color_type = UInt8(SPNG_COLOR_TYPE_TRUECOLOR.rawValue)
        default: header.color_type = UInt8(SPNG_COLOR_TYPE_TRUECOLOR_ALPHA.rawValue)
        }
        try check(spng_set_ihdr(ctx, &header))
        // Pack rows tightly if the buffer has padding.
        let rowBytes = source.format.minimumBytesPerRow(0, width: source.width)
        var packed = [UInt8](repeating: 0, count: rowBytes * source.height)
        packed.withUnsafeMutableBytes { dst in
            guard let base = dst.baseAddress else { return }
            for y in 0..<source.height { (base + y * rowBytes).copyMemory(from: source.row(y), byteCount: rowBytes) }
        }
        try packed.withUnsafeBytes { raw in
            try check(spng_encode_image(ctx, raw.baseAddress, raw.count, Int32(SPNG_FMT_PNG.rawValue), Int32(SPNG_ENCODE_FINALIZE.rawValue)))
        }
        var length = 0
        var status: Int32 = 0
        guard let buffer = spng_get_png_buffer(ctx, &length, &status) else {
            throw ImageError(.encode, "PNG encoding failed: \(String(cString: spng_strerror(status))).")
        }
        defer { free(buffer) }
        return Data(bytes: buffer, count: length)
    }
}
