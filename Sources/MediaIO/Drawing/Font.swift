import CFreeType
import Foundation

/// A font for ``Canvas`` text: a TrueType/OpenType file rendered with FreeType (anti-aliased), or
/// the built-in 5×7 bitmap font.
///
/// ``default`` is DejaVu Sans when it is installed (Debian: fonts-dejavu-core; the file named by
/// the `EDGEVISION_FONT` environment variable wins), else the built-in font, so drawing text never
/// fails. Rendered glyphs are cached; a font can be shared between threads.
public final class Font: @unchecked Sendable {
    /// A rendered glyph: coverage (0–255) of a `width` × `height` box whose top-left corner is
    /// `left` pixels right of the pen and `top` pixels above the baseline.
    struct Glyph {
        let width: Int
        let height: Int
        let left: Int
        let top: Int
        let advance: Int
        let coverage: [UInt8]
    }

    /// Ascent above and descent below the baseline, and the distance between baselines, in pixels.
    struct Metrics {
        let ascent: Int
        let descent: Int
        let lineHeight: Int
    }

    private struct CacheKey: Hashable {
        let scalar: UInt32
        let size: Int
    }

    /// A short name: the font file's name, or "built-in 5x7".
    public let name: String
    private let face: FT_Face?
    private let library: FT_Library?
    private let lock = NSLock()
    private var glyphs: [CacheKey: Glyph] = [:]
    private var metricsCache: [Int: Metrics] = [:]

    /// Whether this is the built-in bitmap font.
    public var isBuiltIn: Bool { face == nil }

    private init(name: String, library: FT_Library?, face: FT_Face?) {
        self.name = name
        self.library = library
        self.face = face
    }

    /// Loads a TrueType/OpenType font file with FreeType.
    public convenience init(contentsOfFile path: String) throws {
        var library: FT_Library?
        guard FT_Init_FreeType(&library) == 0, let library else {
            throw ImageError(.invalidArgument, "FreeType could not be initialized to load the font '\(path)'.")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            FT_Done_FreeType(library)
            throw ImageError(.io, "Cannot read the font file '\(path)': it does not exist or is not readable.")
        }
        var face: FT_Face?
        let status = FT_New_Face(library, path, 0, &face)
        guard status == 0, let face else {
            FT_Done_FreeType(library)
            throw ImageError(.unsupportedFormat, "'\(path)' is not a font FreeType can read (FreeType error \(status)); use a .ttf or .otf file.")
        }
        guard face.pointee.face_flags & FT_Long(FT_FACE_FLAG_SCALABLE) != 0 else {
            FT_Done_Face(face)
            FT_Done_FreeType(library)
            throw ImageError(.unsupportedFormat, "The font '\(path)' is not scalable; use a TrueType or OpenType font.")
        }
        self.init(name: URL(fileURLWithPath: path).lastPathComponent, library: library, face: face)
    }

    deinit {
        if let face { FT_Done_Face(face) }
        if let library { FT_Done_FreeType(library) }
    }

    /// The built-in 5×7 bitmap font (ASCII), scaled by whole pixels.
    public static let builtIn = Font(name: "built-in 5x7", library: nil, face: nil)

    /// DejaVu Sans if installed (or the font named by `EDGEVISION_FONT`), else ``builtIn``.
    public static let `default`: Font = {
        var candidates: [String] = []
        if let path = ProcessInfo.processInfo.environment["EDGEVISION_FONT"], !path.isEmpty { candidates.append(path) }
        candidates += [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",  // Debian, Ubuntu
            "/usr/share/fonts/dejavu/DejaVuSans.ttf",           // Fedora
            "/usr/share/fonts/TTF/DejaVuSans.ttf",              // Arch
            "/usr/local/share/fonts/DejaVuSans.ttf",
        ]
        for path in candidates {
            if let font = try? Font(contentsOfFile: path) { return font }
        }
        return builtIn
    }()

    // MARK: Rendering

    /// Pixel size used for the built-in font: whole multiples of its 7-pixel-high glyphs.
    static func bitmapScale(_ size: Int) -> Int { max(1, Int((Double(size) / 8).rounded())) }

    func metrics(size: Int) -> Metrics {
        lock.lock()
        defer { lock.unlock() }
        if let cached = metricsCache[size] { return cached }
        let result: Metrics
        if let face, FT_Set_Pixel_Sizes(face, 0, FT_UInt(size)) == 0, let sizeInfo = face.pointee.size {
            let m = sizeInfo.pointee.metrics
            let ascent = Int((m.ascender + 63) >> 6), descent = Int((-m.descender + 63) >> 6)
            result = Metrics(ascent: max(1, ascent), descent: max(0, descent), lineHeight: max(ascent + descent, Int((m.height + 63) >> 6)))
        } else {
            let scale = Font.bitmapScale(size)
            result = Metrics(ascent: BitmapFont.glyphHeight * scale, descent: scale, lineHeight: (BitmapFont.glyphHeight + 2) * scale)
        }
        metricsCache[size] = result
        return result
    }

    func glyph(_ scalar: Unicode.Scalar, size: Int) -> Glyph {
        let key = CacheKey(scalar: scalar.value, size: size)
        lock.lock()
        defer { lock.unlock() }
        if let cached = glyphs[key] { return cached }
        let result = (face.flatMap { renderFreeType($0, scalar, size: size) }) ?? renderBitmap(scalar, size: size)
        if glyphs.count > 4096 { glyphs.removeAll(keepingCapacity: true) }
        glyphs[key] = result
        return result
    }

    /// Renders with FreeType (called with the lock held); nil if FreeType fails.
    private func renderFreeType(_ face: FT_Face, _ scalar: Unicode.Scalar, size: Int) -> Glyph? {
        guard FT_Set_Pixel_Sizes(face, 0, FT_UInt(size)) == 0,
              FT_Load_Char(face, FT_ULong(scalar.value), edgevision_ft_load_render()) == 0,
              let slot = face.pointee.glyph else { return nil }
        let bitmap = slot.pointee.bitmap
        let width = Int(bitmap.width), height = Int(bitmap.rows), pitch = Int(bitmap.pitch)
        var coverage = [UInt8](repeating: 0, count: width * height)
        if width > 0, height > 0, let buffer = bitmap.buffer {
            let mode = bitmap.pixel_mode
            for y in 0..<height {
                // A negative pitch means the rows are stored bottom-up.
                let row = pitch >= 0 ? buffer + y * pitch : buffer + (height - 1 - y) * (-pitch)
                for x in 0..<width {
                    if mode == UInt8(FT_PIXEL_MODE_GRAY.rawValue) {
                        coverage[y * width + x] = row[x]
                    } else if mode == UInt8(FT_PIXEL_MODE_MONO.rawValue) {
                        coverage[y * width + x] = (row[x / 8] >> UInt8(7 - x % 8)) & 1 == 1 ? 255 : 0
                    } else {
                        return nil
                    }
                }
            }
        }
        return Glyph(width: width, height: height, left: Int(slot.pointee.bitmap_left), top: Int(slot.pointee.bitmap_top),
                     advance: Int((slot.pointee.advance.x + 32) >> 6), coverage: coverage)
    }

    /// The built-in glyph, scaled by whole pixels.
    private func renderBitmap(_ scalar: Unicode.Scalar, size: Int) -> Glyph {
        let scale = Font.bitmapScale(size)
        let rows = BitmapFont.rows(for: scalar)
        let width = BitmapFont.glyphWidth * scale, height = BitmapFont.glyphHeight * scale
        var coverage = [UInt8](repeating: 0, count: width * height)
        for (r, bits) in rows.enumerated() {
            for c in 0..<BitmapFont.glyphWidth where (bits >> UInt8(BitmapFont.glyphWidth - 1 - c)) & 1 == 1 {
                for dy in 0..<scale {
                    for dx in 0..<scale { coverage[(r * scale + dy) * width + c * scale + dx] = 255 }
                }
            }
        }
        return Glyph(width: width, height: height, left: 0, top: height, advance: BitmapFont.advance * scale, coverage: coverage)
    }
}
