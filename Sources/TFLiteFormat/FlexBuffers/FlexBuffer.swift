import Foundation

/// A decoded FlexBuffers value (the schemaless format of custom op options, e.g.
/// `TFLite_Detection_PostProcess`).
public indirect enum FlexValue: Sendable, Hashable {
    case null
    case int(Int64)
    case uint(UInt64)
    case float(Double)
    case bool(Bool)
    case string(String)
    case key(String)
    case blob([UInt8])
    case vector([FlexValue])
    case map([String: FlexValue])

    /// Numeric value as Double (ints, uints, floats, bools).
    public var doubleValue: Double? {
        switch self {
        case .int(let v): return Double(v)
        case .uint(let v): return Double(v)
        case .float(let v): return v
        case .bool(let v): return v ? 1 : 0
        default: return nil
        }
    }

    /// Numeric value as Int (floats truncated; nil if out of range or not numeric).
    public var intValue: Int? {
        switch self {
        case .int(let v): return Int(exactly: v)
        case .uint(let v): return Int(exactly: v)
        case .float(let v): return v.isFinite && abs(v) < 9e18 ? Int(v) : nil
        case .bool(let v): return v ? 1 : 0
        default: return nil
        }
    }

    public var boolValue: Bool? {
        switch self {
        case .bool(let v): return v
        case .int(let v): return v != 0
        case .uint(let v): return v != 0
        default: return nil
        }
    }

    /// Member of a map.
    public subscript(key: String) -> FlexValue? {
        if case .map(let m) = self { return m[key] }
        return nil
    }
}

/// Reads a FlexBuffer, checking every offset and width against the bytes, with a nesting limit
/// and an element budget; corrupt input is a ``ModelFormatError`` (`.invalidFlexBuffer`).
public enum FlexBuffer {
    public static let maximumDepth = 32

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> FlexValue {
        var decoder = Decoder(bytes: bytes)
        return try decoder.root()
    }

    public static func decode(_ data: Data) throws -> FlexValue {
        try data.withUnsafeBytes { try decode($0) }
    }

    struct Decoder {
        let bytes: UnsafeRawBufferPointer
        var budget: Int
        var byteBudget: Int

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
            budget = bytes.count + 1024
            byteBudget = 4 * bytes.count + 65_536
        }

        func fail(_ what: String) -> ModelFormatError {
            ModelFormatError(.invalidFlexBuffer, "The custom options are not a valid FlexBuffer: \(what).")
        }

        func check(_ offset: Int, _ size: Int) throws {
            guard offset >= 0, size >= 0, offset <= bytes.count, size <= bytes.count - offset else {
                throw fail("\(size) bytes at offset \(offset) lie outside the \(bytes.count)-byte buffer")
            }
        }

        func readUInt(_ offset: Int, _ width: Int) throws -> UInt64 {
            try check(offset, width)
            var v: UInt64 = 0
            for i in 0..<width { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
            return v
        }

        func readInt(_ offset: Int, _ width: Int) throws -> Int64 {
            let u = try readUInt(offset, width)
            let shift = UInt64(64 - 8 * width)
            return Int64(bitPattern: u << shift) >> Int64(shift)
        }

        func readFloat(_ offset: Int, _ width: Int) throws -> Double {
            switch width {
            case 4: return Double(Float(bitPattern: UInt32(try readUInt(offset, 4))))
            case 8: return Double(bitPattern: try readUInt(offset, 8))
            default: throw fail("float of width \(width)")
            }
        }

        /// Follows an offset stored at `offset` (relative, pointing backwards).
        func indirect(_ offset: Int, _ width: Int) throws -> Int {
            let delta = try readUInt(offset, width)
            guard delta <= UInt64(offset) else { throw fail("offset \(delta) at \(offset) points before the buffer") }
            return offset - Int(delta)
        }

        /// Charges `count` decoded bytes (strings, blobs, scanned keys) to their own budget, so that
        /// many references to one long string or key cannot make decoding quadratic. Maps sharing a
        /// keys vector, as FlexBuffers writers do, stay well within it.
        mutating func charge(bytes count: Int) throws {
            byteBudget -= count
            guard byteBudget >= 0 else { throw fail("more string data than the buffer can hold (aliased strings or keys)") }
        }

        mutating func cString(_ offset: Int) throws -> String {
            try check(offset, 0)
            var end = offset
            while end < bytes.count, bytes[end] != 0 { end += 1 }
            guard end < bytes.count else { throw fail("unterminated key at \(offset)") }
            try charge(bytes: end - offset)
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), as: UTF8.self)
        }

        mutating func root() throws -> FlexValue {
            guard bytes.count >= 3 else { throw fail("it is only \(bytes.count) bytes long") }
            let byteWidth = Int(bytes[bytes.count - 1])
            let packed = bytes[bytes.count - 2]
            guard [1, 2, 4, 8].contains(byteWidth), bytes.count >= 2 + byteWidth else { throw fail("root width \(byteWidth)") }
            return try value(at: bytes.count - 2 - byteWidth, parentWidth: byteWidth, packedType: packed, depth: 0)
        }

        /// Decodes the value stored at `offset` in a slot of width `parentWidth`.
        mutating func value(at offset: Int, parentWidth: Int, packedType: UInt8, depth: Int) throws -> FlexValue {
            guard depth < FlexBuffer.maximumDepth else { throw fail("nesting deeper than \(FlexBuffer.maximumDepth)") }
            budget -= 1
            guard budget >= 0 else { throw fail("more elements than the buffer can hold (aliased vectors)") }
            let type = Int(packedType >> 2)
            let childWidth = 1 << Int(packedType & 3)
            switch type {
            case 0: return .null
            case 1: return .int(try readInt(offset, parentWidth))
            case 2: return .uint(try readUInt(offset, parentWidth))
            case 3: return .float(try readFloat(offset, parentWidth))
            case 26: return .bool(try readUInt(offset, parentWidth) != 0)
            case 6: return .int(try readInt(try indirect(offset, parentWidth), childWidth))
            case 7: return .uint(try readUInt(try indirect(offset, parentWidth), childWidth))
            case 8: return .float(try readFloat(try indirect(offset, parentWidth), childWidth))
            case 4: return .key(try cString(try indirect(offset, parentWidth)))
            case 5, 25:
                let start = try indirect(offset, parentWidth)
                guard start >= childWidth else { throw fail("string length before the buffer") }
                let length = try readUInt(start - childWidth, childWidth)
                guard length <= UInt64(bytes.count) else { throw fail("string of \(length) bytes") }
                try check(start, Int(length))
                try charge(bytes: Int(length))
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + Int(length))])
                return type == 5 ? .string(String(decoding: slice, as: UTF8.self)) : .blob(Array(slice))
            case 9, 10:
                let start = try indirect(offset, parentWidth)
                let count = try length(at: start, width: childWidth)
                try check(start, count * childWidth + count)
                let typesStart = start + count * childWidth
                var elements: [FlexValue] = []
                elements.reserveCapacity(count)
                for i in 0..<count {
                    elements.append(try value(at: start + i * childWidth, parentWidth: childWidth, packedType: bytes[typesStart + i], depth: depth + 1))
                }
                guard type == 9 else { return .vector(elements) }
                // Map: keys vector offset and width precede the length.
                guard start >= 3 * childWidth else { throw fail("map prefix before the buffer") }
                let keysStart = try indirect(start - 3 * childWidth, childWidth)
                let storedKeyWidth = try readUInt(start - 2 * childWidth, childWidth)
                guard [1, 2, 4, 8].contains(storedKeyWidth) else { throw fail("map key width \(storedKeyWidth)") }
                let keyWidth = Int(storedKeyWidth)
                let keyCount = try length(at: keysStart, width: keyWidth)
                guard keyCount == count else { throw fail("map with \(count) values and \(keyCount) keys") }
                try check(keysStart, count * keyWidth)
                var map: [String: FlexValue] = [:]
                for i in 0..<count {
                    let key = try cString(try indirect(keysStart + i * keyWidth, keyWidth))
                    map[key] = elements[i]
                }
                return .map(map)
            case 11, 12, 13, 14, 15:
                // Typed vectors: INT, UINT, FLOAT, KEY, STRING (deprecated).
                let start = try indirect(offset, parentWidth)
                let count = try length(at: start, width: childWidth)
                try check(start, count * childWidth)
                let elementType = UInt8((type - 11 + 1) << 2) | (packedType & 3)
                return .vector(try (0..<count).map {
                    try value(at: start + $0 * childWidth, parentWidth: childWidth, packedType: type == 15 ? UInt8(5 << 2) | (packedType & 3) : elementType, depth: depth + 1)
                })
            case 16...24:
                // Fixed-length typed vectors: INT2, UINT2, FLOAT2, INT3, ..., FLOAT4.
                let group = (type - 16) / 3, kind = (type - 16) % 3
                let count = group + 2
                let start = try indirect(offset, parentWidth)
                try check(start, count * childWidth)
                let elementType = UInt8((kind + 1) << 2) | (packedType & 3)
                return .vector(try (0..<count).map { try value(at: start + $0 * childWidth, parentWidth: childWidth, packedType: elementType, depth: depth + 1) })
            case 36:
                let start = try indirect(offset, parentWidth)
                let count = try length(at: start, width: childWidth)
                try check(start, count * childWidth)
                return .vector(try (0..<count).map { .bool(try readUInt(start + $0 * childWidth, childWidth) != 0) })
            default:
                throw fail("unknown value type \(type)")
            }
        }

        mutating func length(at start: Int, width: Int) throws -> Int {
            guard start >= width else { throw fail("vector length before the buffer") }
            let n = try readUInt(start - width, width)
            guard n <= UInt64(bytes.count) else { throw fail("vector of \(n) elements in a \(bytes.count)-byte buffer") }
            budget -= Int(n)
            guard budget >= 0 else { throw fail("more elements than the buffer can hold (aliased vectors)") }
            return Int(n)
        }
    }
}
