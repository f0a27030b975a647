import Foundation

/// What every fuzz target shares: running one input with a typed-error expectation, reading the
/// fuzz input as a stream of choices, and writing generated seeds.
public enum FuzzHarness {
    /// Runs `body`; a thrown error must be of type `E` (the typed error the API documents). Any other
    /// error is a bug (an untyped failure escaping to the user), reported as a crash so libFuzzer keeps it.
    public static func expect<E: Error>(_ type: E.Type, _ body: () throws -> Void) {
        do {
            try body()
        } catch is E {
        } catch {
            fputs("fuzz: unexpected error type \(Swift.type(of: error)): \(error)\n", stderr)
            abort()
        }
    }

    /// The bytes libFuzzer passes, as `Data` (copied: the API under test may keep it).
    public static func data(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> Data {
        Data(bytes: bytes, count: size)
    }

    /// When EDGEVISION_FUZZ_WRITE_SEEDS names a directory, calls `generate` to write seeds into it and
    /// exits (used by scripts/fuzz.sh before fuzzing); otherwise returns.
    public static func writeSeedsIfAsked(_ generate: (_ write: (String, [UInt8]) -> Void) throws -> Void) {
        guard let directory = ProcessInfo.processInfo.environment["EDGEVISION_FUZZ_WRITE_SEEDS"], !directory.isEmpty else { return }
        var count = 0
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try generate { name, bytes in
                let url = URL(fileURLWithPath: directory).appendingPathComponent("gen-" + name)
                if (try? Data(bytes).write(to: url)) != nil { count += 1 }
            }
        } catch {
            fputs("fuzz: seed generation failed: \(error)\n", stderr)
            exit(1)
        }
        fputs("fuzz: wrote \(count) generated seeds to \(directory)\n", stderr)
        exit(0)
    }

    /// Model files named by EDGEVISION_FUZZ_MODELS (colon-separated) or found in EDGEVISION_MODELS.
    public static func modelFiles(maximumSize: Int = 1 << 30) -> [URL] {
        let env = ProcessInfo.processInfo.environment
        if let list = env["EDGEVISION_FUZZ_MODELS"], !list.isEmpty {
            return list.split(separator: ":").map { URL(fileURLWithPath: String($0)) }
        }
        guard let directory = env["EDGEVISION_MODELS"],
              let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.sorted().filter { $0.hasSuffix(".tflite") }.map { URL(fileURLWithPath: directory).appendingPathComponent($0) }
            .filter { ((try? FileManager.default.attributesOfItem(atPath: $0.path))?[.size] as? NSNumber)?.intValue ?? .max <= maximumSize }
    }
}

/// Reads the fuzz input as a stream of choices; past the end every read returns zero, so any input
/// (even empty) decodes to something.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var position = 0

    public init(_ bytes: UnsafePointer<UInt8>, _ size: Int) {
        self.bytes = Array(UnsafeBufferPointer(start: bytes, count: size))
    }

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { position >= bytes.count }
    public var remaining: Int { max(0, bytes.count - position) }

    public mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A value in 0..<count (0 when count is 0).
    public mutating func choose(_ count: Int) -> Int {
        guard count > 1 else { return 0 }
        return Int(u16()) % count
    }

    public mutating func pick<T>(_ values: [T]) -> T { values[choose(values.count)] }

    public mutating func u16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    public mutating func u32() -> UInt32 { UInt32(u16()) | UInt32(u16()) << 16 }

    public mutating func u64() -> UInt64 { UInt64(u32()) | UInt64(u32()) << 32 }

    /// Up to `count` bytes (fewer at the end of the input).
    public mutating func take(_ count: Int) -> [UInt8] {
        let n = min(max(0, count), remaining)
        defer { position += n }
        return Array(bytes[position..<(position + n)])
    }

    /// The rest of the input.
    public mutating func rest() -> [UInt8] { take(remaining) }
}
