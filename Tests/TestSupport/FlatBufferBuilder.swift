import Foundation

/// A scalar field value of a FlatBuffer table, stored little-endian at its natural size.
public enum FBScalar: Sendable, Hashable {
    case bool(Bool)
    case int8(Int8), uint8(UInt8)
    case int16(Int16), uint16(UInt16)
    case int32(Int32), uint32(UInt32)
    case int64(Int64), uint64(UInt64)
    case float32(Float), float64(Double)

    /// The little-endian bytes of the value.
    public var bytes: [UInt8] {
        switch self {
        case .bool(let v): return [v ? 1 : 0]
        case .int8(let v): return FBBytes.littleEndian(v)
        case .uint8(let v): return [v]
        case .int16(let v): return FBBytes.littleEndian(v)
        case .uint16(let v): return FBBytes.littleEndian(v)
        case .int32(let v): return FBBytes.littleEndian(v)
        case .uint32(let v): return FBBytes.littleEndian(v)
        case .int64(let v): return FBBytes.littleEndian(v)
        case .uint64(let v): return FBBytes.littleEndian(v)
        case .float32(let v): return FBBytes.littleEndian(v.bitPattern)
        case .float64(let v): return FBBytes.littleEndian(v.bitPattern)
        }
    }
}

/// Little-endian encoding helpers.
public enum FBBytes {
    public static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<MemoryLayout<T>.size).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    public static func littleEndian<T: FixedWidthInteger>(_ values: [T]) -> [UInt8] {
        values.flatMap { littleEndian($0) }
    }

    /// Overwrites `value` at `offset` (little-endian) in `bytes`.
    public static func write<T: FixedWidthInteger>(_ value: T, at offset: Int, in bytes: inout [UInt8]) {
        for (i, b) in littleEndian(value).enumerated() { bytes[offset + i] = b }
    }

    /// Reads a little-endian value at `offset`.
    public static func read<T: FixedWidthInteger>(_ type: T.Type, at offset: Int, in bytes: [UInt8]) -> T {
        var v: T = 0
        for i in 0..<MemoryLayout<T>.size { v |= T(truncatingIfNeeded: bytes[offset + i]) << (8 * i) }
        return v
    }
}

/// A node that a table field (or a vector of offsets) refers to: a table, a string or a vector.
public struct FBNode: Sendable {
    public indirect enum Kind: Sendable {
        case table(FBTable)
        /// UTF-8 bytes; written with a length prefix and a NUL terminator.
        case string([UInt8])
        /// A vector of scalars: raw little-endian element bytes.
        case scalars(bytes: [UInt8], count: Int, elementSize: Int, alignment: Int)
        /// A vector of offsets to tables, strings or vectors.
        case offsets([FBNode])
    }

    public var kind: Kind
    /// When set, ``FlatBufferBuilder/Output/positions`` records where the node was written under this name.
    public var label: String?

    public init(_ kind: Kind, label: String? = nil) {
        self.kind = kind
        self.label = label
    }

    public static func table(_ table: FBTable) -> FBNode { FBNode(.table(table), label: table.label) }
    public static func string(_ s: String, label: String? = nil) -> FBNode { FBNode(.string(Array(s.utf8)), label: label) }
    /// A vector of integers (any width).
    public static func vector<T: FixedWidthInteger>(_ values: [T], alignment: Int? = nil, label: String? = nil) -> FBNode {
        let size = MemoryLayout<T>.size
        return FBNode(.scalars(bytes: FBBytes.littleEndian(values), count: values.count, elementSize: size,
                               alignment: max(alignment ?? size, 4)), label: label)
    }
    public static func floats(_ values: [Float], label: String? = nil) -> FBNode {
        FBNode(.scalars(bytes: FBBytes.littleEndian(values.map(\.bitPattern)), count: values.count, elementSize: 4, alignment: 4), label: label)
    }
    /// A `[ubyte]` vector whose data starts at a multiple of `alignment`.
    public static func bytes(_ values: [UInt8], alignment: Int = 4, label: String? = nil) -> FBNode {
        FBNode(.scalars(bytes: values, count: values.count, elementSize: 1, alignment: max(alignment, 4)), label: label)
    }
    public static func tables(_ tables: [FBTable], label: String? = nil) -> FBNode {
        FBNode(.offsets(tables.map { .table($0) }), label: label)
    }
    public static func strings(_ strings: [String], label: String? = nil) -> FBNode {
        FBNode(.offsets(strings.map { .string($0) }), label: label)
    }
}

/// A table field: a scalar stored inline, or an offset to a node.
public enum FBField: Sendable {
    case scalar(FBScalar)
    case offset(FBNode)
}

/// A FlatBuffer table under construction: fields by slot (the field's index in the schema, a union
/// counting as two slots, type then value).
public struct FBTable: Sendable {
    public var fields: [Int: FBField] = [:]
    /// When set, the output records the table (`label`), its vtable (`label.vtable`) and each field
    /// (`label.field.<slot>`) positions.
    public var label: String?

    public init(label: String? = nil) { self.label = label }

    public init(label: String? = nil, _ scalars: [(slot: Int, value: FBScalar)]) {
        self.label = label
        for (slot, value) in scalars { fields[slot] = .scalar(value) }
    }

    public mutating func set(_ slot: Int, _ value: FBScalar) { fields[slot] = .scalar(value) }
    public mutating func set(_ slot: Int, _ node: FBNode) { fields[slot] = .offset(node) }
    public mutating func set(_ slot: Int, table: FBTable) { fields[slot] = .offset(.table(table)) }
    public mutating func set(_ slot: Int, string: String, label: String? = nil) { fields[slot] = .offset(.string(string, label: label)) }

    /// Chaining variants of ``set(_:_:)``.
    public func with(_ slot: Int, _ value: FBScalar) -> FBTable { var t = self; t.set(slot, value); return t }
    public func with(_ slot: Int, _ node: FBNode) -> FBTable { var t = self; t.set(slot, node); return t }
}

/// Serializes a tree of ``FBTable``/``FBNode`` into a little-endian FlatBuffer, for tests.
///
/// The layout is front to back: the root offset (and file identifier), then each table preceded by
/// its vtable, then its children in slot order (depth first), so every `uoffset` points forward as
/// the format requires. Scalars are aligned to their size, vectors to their element size (or the
/// alignment asked for), tables to 8 bytes when they hold 8-byte scalars.
public enum FlatBufferBuilder {
    public struct Output: Sendable {
        public var bytes: [UInt8]
        /// Positions of labelled nodes: tables (`name`, `name.vtable`, `name.field.<slot>`) and
        /// vectors/strings (`name`, the position of the length prefix).
        public var positions: [String: Int]
        public var data: Data { Data(bytes) }

        /// The position of a label (trapping on an unknown label: a test-construction error).
        public func position(_ label: String) -> Int {
            guard let p = positions[label] else { fatalError("FlatBufferBuilder: no node labelled '\(label)'") }
            return p
        }
    }

    public static func build(root: FBTable, fileIdentifier: String? = nil) -> Output {
        var writer = Writer()
        writer.bytes = [0, 0, 0, 0]
        if let identifier = fileIdentifier {
            let id = Array(identifier.utf8)
            writer.bytes += (0..<4).map { $0 < id.count ? id[$0] : 0 }
        }
        let rootPosition = writer.emit(.table(root))
        FBBytes.write(UInt32(rootPosition), at: 0, in: &writer.bytes)
        return Output(bytes: writer.bytes, positions: writer.positions)
    }

    struct Writer {
        var bytes: [UInt8] = []
        var positions: [String: Int] = [:]

        mutating func pad(to alignment: Int) {
            while bytes.count % alignment != 0 { bytes.append(0) }
        }

        /// Pads so that `bytes.count + extra` is a multiple of `alignment`.
        mutating func pad(to alignment: Int, after extra: Int) {
            while (bytes.count + extra) % alignment != 0 { bytes.append(0) }
        }

        mutating func patchOffset(at position: Int, to target: Int) {
            FBBytes.write(UInt32(target - position), at: position, in: &bytes)
        }

        /// Writes `node` and returns its position (table start, or vector/string length prefix).
        mutating func emit(_ node: FBNode) -> Int {
            let position: Int
            switch node.kind {
            case .table(let table):
                position = emitTable(table)
            case .string(let utf8):
                pad(to: 4)
                position = bytes.count
                bytes += FBBytes.littleEndian(UInt32(utf8.count)) + utf8 + [0]
            case .scalars(let data, let count, _, let alignment):
                pad(to: alignment, after: 4)
                position = bytes.count
                bytes += FBBytes.littleEndian(UInt32(count)) + data
            case .offsets(let children):
                pad(to: 4)
                position = bytes.count
                bytes += FBBytes.littleEndian(UInt32(children.count))
                let slots = children.indices.map { _ -> Int in
                    bytes += [0, 0, 0, 0]
                    return bytes.count - 4
                }
                for (slot, child) in zip(slots, children) {
                    patchOffset(at: slot, to: emit(child))
                }
            }
            if let label = node.label, positions[label] == nil { positions[label] = position }
            return position
        }

        mutating func emitTable(_ table: FBTable) -> Int {
            let fields = table.fields.sorted { $0.key < $1.key }
            let maxSlot = fields.last?.key ?? -1
            // Inline layout: after the 4-byte soffset, fields by decreasing size, each aligned to its size.
            func size(_ f: FBField) -> Int {
                switch f {
                case .scalar(let s): return s.bytes.count
                case .offset: return 4
                }
            }
            let bySize = fields.sorted { (size($0.value), $1.key) > (size($1.value), $0.key) }
            var fieldOffsets: [Int: Int] = [:]
            var cursor = 4
            var alignment = 4
            for (slot, field) in bySize {
                let s = size(field)
                alignment = max(alignment, s)
                while cursor % s != 0 { cursor += 1 }
                fieldOffsets[slot] = cursor
                cursor += s
            }
            let tableSize = cursor
            // vtable: [vtable size, table size, field offsets...]
            pad(to: 2)
            let vtableSize = 4 + 2 * (maxSlot + 1)
            // Place the vtable so that the table right after it is aligned.
            pad(to: alignment, after: vtableSize)
            let vtable = bytes.count
            bytes += FBBytes.littleEndian(UInt16(vtableSize)) + FBBytes.littleEndian(UInt16(tableSize))
            for slot in 0...max(maxSlot, 0) where maxSlot >= 0 {
                bytes += FBBytes.littleEndian(UInt16(fieldOffsets[slot] ?? 0))
            }
            let start = bytes.count
            bytes += [UInt8](repeating: 0, count: tableSize)
            FBBytes.write(Int32(start - vtable), at: start, in: &bytes)
            var children: [(Int, FBNode)] = []
            for (slot, field) in fields {
                let p = start + (fieldOffsets[slot] ?? 0)
                switch field {
                case .scalar(let s):
                    for (i, b) in s.bytes.enumerated() { bytes[p + i] = b }
                case .offset(let node):
                    children.append((p, node))
                }
                if let label = table.label { positions["\(label).field.\(slot)"] = p }
            }
            if let label = table.label {
                positions[label] = start
                positions["\(label).vtable"] = vtable
            }
            for (p, node) in children {
                patchOffset(at: p, to: emit(node))
            }
            return start
        }
    }
}
