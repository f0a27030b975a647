import CZlib
import Foundation

/// The ZIP archive of associated files (labels, calibration, vocabularies) that the TFLite metadata
/// writer appends to a model file.
///
/// Reads the central directory, then stored (method 0) and deflated (method 8, via zlib) entries,
/// checking every offset and size against the bytes, the CRC-32 of every extracted file, and a size
/// limit, so a corrupt archive is a ``ModelFormatError`` with code `.invalidArchive`.
public struct ZipArchive: Sendable {
    public struct Entry: Sendable, Hashable {
        public let name: String
        public let method: UInt16
        public let compressedSize: Int
        public let uncompressedSize: Int
        public let crc32: UInt32
        let localHeaderOffset: Int
    }

    /// The entries in central-directory order.
    public let entries: [Entry]
    private let storage: ModelData
    /// Bytes before the archive (the model itself), added to the archive's own offsets.
    private let prefix: Int

    /// The largest file extracted (64 MiB): label and calibration files are far smaller.
    public static let maximumEntrySize = 64 << 20

    /// Finds the archive at the end of `data`; returns nil when there is none (no end-of-central-
    /// directory record), as MediaPipe treats such models as having no associated files.
    public init?(data: ModelData) throws {
        let bytes = data.bytes
        let n = bytes.count
        func u16(_ o: Int) -> Int { Int(UInt16(bytes[o]) | UInt16(bytes[o + 1]) << 8) }
        func u32(_ o: Int) -> Int { Int(UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24) }
        func fail(_ what: String) -> ModelFormatError {
            ModelFormatError(.invalidArchive, "The model's associated-files ZIP archive is corrupt: \(what).")
        }
        // End of central directory: 22 bytes + comment of up to 65535 bytes.
        guard n >= 22 else { return nil }
        var eocd = -1
        var p = n - 22
        let lowest = max(0, n - 22 - 65_535)
        while p >= lowest {
            if bytes[p] == 0x50, bytes[p + 1] == 0x4b, bytes[p + 2] == 0x05, bytes[p + 3] == 0x06, p + 22 + u16(p + 20) == n {
                eocd = p
                break
            }
            p -= 1
        }
        guard eocd >= 0 else { return nil }
        let entryCount = u16(eocd + 10)
        let directorySize = u32(eocd + 12)
        let directoryOffset = u32(eocd + 16)
        guard directorySize <= eocd, directoryOffset != 0xFFFF_FFFF else { throw fail("unsupported ZIP64 or oversized central directory") }
        // The metadata writer appends the archive to the model; its offsets may be relative to the
        // archive start. Whatever lies between the declared and the actual directory start is a prefix.
        let directoryStart = eocd - directorySize
        let prefix = directoryStart - directoryOffset
        guard prefix >= 0 else { throw fail("central directory offset \(directoryOffset) is past its actual position \(directoryStart)") }

        var entries: [Entry] = []
        var q = directoryStart
        for i in 0..<entryCount {
            guard q + 46 <= eocd, u32(q) == 0x0201_4b50 else { throw fail("central directory entry \(i) is missing") }
            let method = UInt16(u16(q + 10))
            let crc = UInt32(u32(q + 16))
            let compressed = u32(q + 20), uncompressed = u32(q + 24)
            let nameLength = u16(q + 28), extraLength = u16(q + 30), commentLength = u16(q + 32)
            let local = u32(q + 42) + prefix
            let next = q + 46 + nameLength + extraLength + commentLength
            guard next <= eocd else { throw fail("central directory entry \(i) runs past the directory") }
            let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(q + 46)..<(q + 46 + nameLength)]), as: UTF8.self)
            guard local >= 0, local + 30 <= directoryStart else { throw fail("entry '\(name)' has a local header outside the archive") }
            entries.append(Entry(name: name, method: method, compressedSize: compressed, uncompressedSize: uncompressed,
                                 crc32: crc, localHeaderOffset: local))
            q = next
        }
        self.entries = entries
        self.storage = data
        self.prefix = prefix
    }

    /// The entry named `name`, if present.
    public func entry(named name: String) -> Entry? { entries.first { $0.name == name } }

    /// Extracts an entry's bytes, verifying sizes and CRC-32.
    public func contents(of entry: Entry) throws -> Data {
        let bytes = storage.bytes
        func u16(_ o: Int) -> Int { Int(UInt16(bytes[o]) | UInt16(bytes[o + 1]) << 8) }
        func fail(_ what: String) -> ModelFormatError {
            ModelFormatError(.invalidArchive, "The model's associated file '\(entry.name)' cannot be read: \(what).")
        }
        let local = entry.localHeaderOffset
        guard local + 30 <= bytes.count, bytes[local] == 0x50, bytes[local + 1] == 0x4b, bytes[local + 2] == 0x03, bytes[local + 3] == 0x04 else {
            throw fail("bad local header")
        }
        let start = local + 30 + u16(local + 26) + u16(local + 28)
        guard start <= bytes.count, entry.compressedSize <= bytes.count - start else { throw fail("data runs past the end of the file") }
        guard entry.uncompressedSize <= ZipArchive.maximumEntrySize else {
            throw ModelFormatError(.resourceLimit, "The model's associated file '\(entry.name)' is \(entry.uncompressedSize) bytes, more than the limit of \(ZipArchive.maximumEntrySize).")
        }
        let source = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + entry.compressedSize)])
        let output: Data
        switch entry.method {
        case 0:
            guard entry.compressedSize == entry.uncompressedSize else { throw fail("stored entry with different sizes") }
            output = Data(source)
        case 8:
            output = try ZipArchive.inflate(source, expectedSize: entry.uncompressedSize, fail: fail)
        default:
            throw fail("compression method \(entry.method) is not supported (only stored and deflate)")
        }
        let crc = output.withUnsafeBytes { raw -> UInt32 in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return 0 }
            return UInt32(CZlib.crc32(0, base, uInt(raw.count)))
        }
        guard crc == entry.crc32 else { throw fail("CRC-32 mismatch (the file is corrupt)") }
        return output
    }

    /// Extracts the entry named `name`, or returns nil if there is none.
    public func contents(ofFileNamed name: String) throws -> Data? {
        guard let entry = entry(named: name) else { return nil }
        return try contents(of: entry)
    }

    static func inflate(_ source: UnsafeRawBufferPointer, expectedSize: Int, fail: (String) -> ModelFormatError) throws -> Data {
        var output = Data(count: expectedSize)
        var stream = z_stream()
        guard edgevision_inflateInit2(&stream, -15) == Z_OK else { throw fail("zlib could not be initialized") }
        defer { inflateEnd(&stream) }
        let status: Int32 = output.withUnsafeMutableBytes { out in
            stream.next_in = UnsafeMutablePointer(mutating: source.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(source.count)
            stream.next_out = out.bindMemory(to: Bytef.self).baseAddress
            stream.avail_out = uInt(out.count)
            return CZlib.inflate(&stream, Z_FINISH)
        }
        guard status == Z_STREAM_END, Int(stream.total_out) == expectedSize else {
            throw fail(status == Z_STREAM_END ? "inflated to \(stream.total_out) bytes, expected \(expectedSize)" : "deflate data is corrupt (zlib status \(status))")
        }
        return output
    }
}
