import Foundation

/// CRC-32 (ISO-HDLC / zlib / ZIP: reflected polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF).
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The CRC-32 of `bytes` (continuing from `crc`, 0 to start).
    public static func checksum<S: Sequence>(_ bytes: S, crc: UInt32 = 0) -> UInt32 where S.Element == UInt8 {
        var c = ~crc
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return ~c
    }
}

/// Writes minimal ZIP archives of *stored* (uncompressed) entries, for tests that append associated
/// files (labels, score calibration) to a model as the TFLite metadata writer does.
public enum TinyZip {
    public struct Entry: Sendable {
        public var name: String
        public var contents: [UInt8]
        public init(name: String, contents: [UInt8]) {
            self.name = name
            self.contents = contents
        }
        public init(name: String, text: String) { self.init(name: name, contents: Array(text.utf8)) }
    }

    /// The archive bytes. Offsets in the headers are `baseOffset` + the position in the archive:
    /// 0 gives offsets relative to the archive start (Python's zipfile in append mode), the length of
    /// the bytes the archive is appended to gives offsets relative to the start of the file.
    public static func archive(_ entries: [Entry], baseOffset: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        var central: [UInt8] = []
        func u16(_ v: Int) -> [UInt8] { FBBytes.littleEndian(UInt16(truncatingIfNeeded: v)) }
        func u32(_ v: Int) -> [UInt8] { FBBytes.littleEndian(UInt32(truncatingIfNeeded: v)) }
        for entry in entries {
            let name = Array(entry.name.utf8)
            let crc = Int(CRC32.checksum(entry.contents))
            let local = out.count + baseOffset
            // Local file header.
            out += u32(0x0403_4b50) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0x21)
            out += u32(crc) + u32(entry.contents.count) + u32(entry.contents.count) + u16(name.count) + u16(0)
            out += name + entry.contents
            // Central directory header.
            central += u32(0x0201_4b50) + u16(20) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0x21)
            central += u32(crc) + u32(entry.contents.count) + u32(entry.contents.count)
            central += u16(name.count) + u16(0) + u16(0) + u16(0) + u16(0) + u32(0) + u32(local)
            central += name
        }
        let directoryOffset = out.count + baseOffset
        out += central
        // End of central directory.
        out += u32(0x0605_4b50) + u16(0) + u16(0) + u16(entries.count) + u16(entries.count)
        out += u32(central.count) + u32(directoryOffset) + u16(0)
        return out
    }
}
