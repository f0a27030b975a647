import Foundation

/// SHA-256 (FIPS 180-4), written here because CryptoKit does not exist on Linux.
///
/// Incremental: `update` any number of times, then `finalize`. Used to verify downloaded and
/// installed models against pinned digests.
public struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    private var buffer = [UInt8](repeating: 0, count: 64)
    private var buffered = 0
    private var length: UInt64 = 0

    /// A hash of no bytes yet.
    public init() {}

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// Adds bytes to the message.
    public mutating func update<D: DataProtocol>(_ data: D) {
        for region in data.regions {
            region.withUnsafeBytes { raw in update(raw) }
        }
    }

    /// Adds bytes to the message.
    @_optimize(speed)
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        length &+= UInt64(bytes.count)
        var offset = 0
        let count = bytes.count
        if buffered > 0 {
            let take = min(64 - buffered, count)
            for i in 0..<take { buffer[buffered + i] = bytes[i] }
            buffered += take
            offset = take
            if buffered == 64 {
                let block = buffer
                block.withUnsafeBytes { raw in
                    if let pointer = raw.baseAddress { compress(pointer) }
                }
                buffered = 0
            }
        }
        while count - offset >= 64 {
            compress(base + offset)
            offset += 64
        }
        if offset < count {
            for i in offset..<count { buffer[buffered] = bytes[i]; buffered += 1 }
        }
    }

    /// The 32-byte digest. The hasher should not be used afterwards.
    public mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var padding: [UInt8] = [0x80]
        let padZeros = (buffered < 56 ? 55 - buffered : 119 - buffered)
        padding += [UInt8](repeating: 0, count: padZeros)
        for shift in stride(from: 56, through: 0, by: -8) { padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        let savedLength = length
        padding.withUnsafeBytes { update($0) }
        length = savedLength
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in words {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    /// The digest as 64 lowercase hex characters.
    public mutating func finalizeHex() -> String { SHA256.hex(finalize()) }

    /// The SHA-256 of `data`, as lowercase hex.
    public static func hex<D: DataProtocol>(of data: D) -> String {
        var hasher = SHA256()
        hasher.update(data)
        return hasher.finalizeHex()
    }

    /// The SHA-256 of the file at `path`, read in 1 MiB chunks, as lowercase hex.
    public static func hex(ofFileAt path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while true {
            guard let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty else { break }
            hasher.update(chunk)
        }
        return hasher.finalizeHex()
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// True when `text` is 64 hex digits (either case).
    public static func isValidHex(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
    }

    @_optimize(speed) @inline(__always) private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 &- n)) }

    // Optimized even in debug builds, so hashing a model file does not take seconds there.
    @_optimize(speed)
    private mutating func compress(_ block: UnsafeRawPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            compress(block, schedule: w)
        }
    }

    @_optimize(speed)
    private mutating func compress(_ block: UnsafeRawPointer, schedule w: UnsafeMutableBufferPointer<UInt32>) {
        for i in 0..<16 {
            let p = block + i * 4
            w[i] = UInt32(p.load(fromByteOffset: 0, as: UInt8.self)) << 24
                | UInt32(p.load(fromByteOffset: 1, as: UInt8.self)) << 16
                | UInt32(p.load(fromByteOffset: 2, as: UInt8.self)) << 8
                | UInt32(p.load(fromByteOffset: 3, as: UInt8.self))
        }
        for i in 16..<64 {
            let s0 = SHA256.rotr(w[i - 15], 7) ^ SHA256.rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
            let s1 = SHA256.rotr(w[i - 2], 17) ^ SHA256.rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = state
        SHA256.k.withUnsafeBufferPointer { k in
        for i in 0..<64 {
            let s1 = SHA256.rotr(e, 6) ^ SHA256.rotr(e, 11) ^ SHA256.rotr(e, 25)
            let ch = (e & f) ^ (~e & g)
            let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
            let s0 = SHA256.rotr(a, 2) ^ SHA256.rotr(a, 13) ^ SHA256.rotr(a, 22)
            let maj = (a & b) ^ (a & c) ^ (b & c)
            let t2 = s0 &+ maj
            h = g; g = f; f = e; e = d &+ t1
            d = c; c = b; b = a; a = t1 &+ t2
        }
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
    }
}
