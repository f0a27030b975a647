/// A bounds-checked reader over FlatBuffers bytes.
///
/// Every read checks its offset and size against the buffer and throws ``ModelFormatError`` on a
/// violation, so decoding a hostile buffer can fail but never read out of bounds. Decoding the
/// whole schema through this reader *is* the verifier: nothing is accessed before it is checked.
///
/// Besides bounds, the reader enforces a decoding budget (elements materialized into Swift arrays)
/// proportional to the buffer size, so that aliased vectors (many tables pointing at one huge
/// vector) cannot make decoding quadratic. Decoding follows the schema, which has no recursive
/// tables, so nesting depth is bounded by the schema itself (FlexBuffers, which can nest, have an
/// explicit depth limit).
final class FlatBufferReader {
    let base: UnsafeRawPointer
    let count: Int
    /// What the buffer is, for error messages ("model", "metadata").
    let name: String
    private var budget: Int

    init(_ bytes: UnsafeRawBufferPointer, name: String) {
        // An empty buffer has a nil base address; use a dummy that is never read (count is 0).
        base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 0x10)!
        count = bytes.count
        self.name = name
        budget = 2 * bytes.count + 65_536
    }

    @inline(__always)
    func check(_ offset: Int, _ size: Int, _ what: @autoclosure () -> String) throws {
        guard offset >= 0, size >= 0, offset <= count, size <= count &- offset else {
            throw ModelFormatError.bounds("\(name): \(what())", offset: offset, size: size, limit: count)
        }
    }

    func charge(_ elements: Int, _ what: @autoclosure () -> String) throws {
        budget -= elements
        guard budget >= 0 else {
            throw ModelFormatError(.resourceLimit,
                "The \(name) is not a valid FlatBuffer buffer: decoding \(what()) exceeds the work allowed for a \(count)-byte buffer (overlapping or aliased vectors).")
        }
    }

    @inline(__always)
    func load<T: FixedWidthInteger>(_ offset: Int, as type: T.Type, _ what: @autoclosure () -> String) throws -> T {
        try check(offset, MemoryLayout<T>.size, what())
        return T(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// The root table; checks the 4-byte file identifier when one is expected.
    func root(fileIdentifier: String?) throws -> FlatBufferTable {
        guard count >= 8 else {
            throw ModelFormatError(.outOfBounds, "The \(name) is not a valid FlatBuffer buffer: it is only \(count) bytes long.")
        }
        if let identifier = fileIdentifier {
            let found = (4..<8).map { base.load(fromByteOffset: $0, as: UInt8.self) }
            guard found == Array(identifier.utf8) else {
                let shown = String(decoding: found.map { (32...126).contains($0) ? $0 : 63 }, as: UTF8.self)
                throw ModelFormatError(.invalidStructure,
                    "The \(name) is not a valid FlatBuffer buffer: file identifier is '\(shown)', expected '\(identifier)'.")
            }
        }
        let rootOffset = Int(try load(0, as: UInt32.self, "root offset"))
        return try table(at: rootOffset, "root table")
    }

    /// The table whose start is at `position`, with its vtable checked.
    func table(at position: Int, _ what: @autoclosure () -> String) throws -> FlatBufferTable {
        let soffset = Int(try load(position, as: Int32.self, "\(what()) vtable offset"))
        let vtable = position - soffset
        let vtableSize = Int(try load(vtable, as: UInt16.self, "\(what()) vtable"))
        guard vtableSize >= 4, vtableSize % 2 == 0 else {
            throw ModelFormatError(.invalidStructure, "The \(name) is not a valid FlatBuffer buffer: \(what()) has a vtable of \(vtableSize) bytes at offset \(vtable).")
        }
        try check(vtable, vtableSize, "\(what()) vtable")
        let tableSize = Int(try load(vtable + 2, as: UInt16.self, "\(what()) vtable"))
        guard tableSize >= 4 else {
            throw ModelFormatError(.invalidStructure, "The \(name) is not a valid FlatBuffer buffer: \(what()) at offset \(position) declares \(tableSize) bytes.")
        }
        try check(position, tableSize, what())
        return FlatBufferTable(reader: self, position: position, vtable: vtable, vtableSize: vtableSize, tableSize: tableSize)
    }

    /// Follows a `uoffset_t` stored at `position`.
    func follow(_ position: Int, _ what: @autoclosure () -> String) throws -> Int {
        let relative = Int(try load(position, as: UInt32.self, what()))
        let target = position + relative
        try check(target, 4, what())
        return target
    }

    /// A vector whose length prefix is at `position`.
    func vector(at position: Int, elementSize: Int, _ what: @autoclosure () -> String) throws -> FlatBufferVector {
        let length = Int(try load(position, as: UInt32.self, "\(what()) length"))
        let (bytes, overflow) = length.multipliedReportingOverflow(by: elementSize)
        guard !overflow else { throw ModelFormatError.bounds(what(), offset: position + 4, size: Int.max, limit: count) }
        try check(position + 4, bytes, "\(what()) (\(length) elements)")
        return FlatBufferVector(reader: self, start: position + 4, count: length, elementSize: elementSize)
    }

    /// A string whose length prefix is at `position`; must be NUL-terminated inside the buffer.
    func string(at position: Int, _ what: @autoclosure () -> String) throws -> String {
        let length = Int(try load(position, as: UInt32.self, "\(what()) length"))
        try check(position + 4, length + 1, "\(what()) (\(length) bytes + terminator)")
        guard base.load(fromByteOffset: position + 4 + length, as: UInt8.self) == 0 else {
            throw ModelFormatError(.invalidStructure, "The \(name) is not a valid FlatBuffer buffer: \(what()) at offset \(position) is not NUL-terminated.")
        }
        try charge(length, what())
        let bytes = UnsafeRawBufferPointer(start: base + position + 4, count: length)
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A table inside a FlatBuffer: fields are looked up by slot (declaration order in the schema,
/// counting a union as two slots: its type and its value).
struct FlatBufferTable {
    let reader: FlatBufferReader
    let position: Int
    let vtable: Int
    let vtableSize: Int
    let tableSize: Int

    /// Absolute position of field `slot`, or nil if absent; the field must lie inside the table.
    func field(_ slot: Int, size: Int) throws -> Int? {
        let entry = 4 + 2 * slot
        guard entry + 2 <= vtableSize else { return nil }
        let offset = Int(try reader.load(vtable + entry, as: UInt16.self, "vtable entry"))
        guard offset != 0 else { return nil }
        guard offset >= 4, offset + size <= tableSize else {
            throw ModelFormatError(.invalidStructure,
                "The \(reader.name) is not a valid FlatBuffer buffer: field \(slot) of the table at offset \(position) lies outside the table (\(offset)+\(size) > \(tableSize)).")
        }
        return position + offset
    }

    func scalar<T: FixedWidthInteger>(_ slot: Int, default value: T) throws -> T {
        guard let p = try field(slot, size: MemoryLayout<T>.size) else { return value }
        return try reader.load(p, as: T.self, "field \(slot)")
    }

    func float(_ slot: Int, default value: Float) throws -> Float {
        Float(bitPattern: try scalar(slot, default: value.bitPattern))
    }

    func bool(_ slot: Int, default value: Bool) throws -> Bool {
        try scalar(slot, default: UInt8(value ? 1 : 0)) != 0
    }

    /// The target of an offset field.
    func offsetTarget(_ slot: Int, _ what: @autoclosure () -> String) throws -> Int? {
        guard let p = try field(slot, size: 4) else { return nil }
        return try reader.follow(p, what())
    }

    func table(_ slot: Int, _ what: @autoclosure () -> String) throws -> FlatBufferTable? {
        guard let target = try offsetTarget(slot, what()) else { return nil }
        return try reader.table(at: target, what())
    }

    func vector(_ slot: Int, elementSize: Int, _ what: @autoclosure () -> String) throws -> FlatBufferVector? {
        guard let target = try offsetTarget(slot, what()) else { return nil }
        return try reader.vector(at: target, elementSize: elementSize, what())
    }

    func string(_ slot: Int, _ what: @autoclosure () -> String) throws -> String? {
        guard let target = try offsetTarget(slot, what()) else { return nil }
        return try reader.string(at: target, what())
    }

    // Typed vector helpers (each element is charged to the reader's budget).
    func int32s(_ slot: Int, _ what: @autoclosure () -> String) throws -> [Int32]? {
        try vector(slot, elementSize: 4, what()).map { try $0.integers(Int32.self, what()) }
    }
    func int64s(_ slot: Int, _ what: @autoclosure () -> String) throws -> [Int64]? {
        try vector(slot, elementSize: 8, what()).map { try $0.integers(Int64.self, what()) }
    }
    func uint32s(_ slot: Int, _ what: @autoclosure () -> String) throws -> [UInt32]? {
        try vector(slot, elementSize: 4, what()).map { try $0.integers(UInt32.self, what()) }
    }
    func floats(_ slot: Int, _ what: @autoclosure () -> String) throws -> [Float]? {
        try vector(slot, elementSize: 4, what()).map { vector in
            try reader.charge(vector.count, what())
            #if _endian(little)
            return vector.scalars(Float.self)
            #else
            return vector.scalars(UInt32.self).map { Float(bitPattern: UInt32(littleEndian: $0)) }
            #endif
        }
    }
    func strings(_ slot: Int, _ what: @autoclosure () -> String) throws -> [String]? {
        guard let v = try vector(slot, elementSize: 4, what()) else { return nil }
        try reader.charge(v.count, what())
        return try (0..<v.count).map { try v.string($0, "\(what())[\($0)]") }
    }
    /// Decodes a vector of tables with `body`.
    func tables<T>(_ slot: Int, _ what: @autoclosure () -> String, _ body: (FlatBufferTable, Int) throws -> T) throws -> [T]? {
        guard let v = try vector(slot, elementSize: 4, what()) else { return nil }
        try reader.charge(v.count, what())
        let name = what()
        return try (0..<v.count).map { try body(try v.table($0, "\(name)[\($0)]"), $0) }
    }
    /// The byte range of a `[ubyte]` field, not copied.
    func byteRange(_ slot: Int, _ what: @autoclosure () -> String) throws -> Range<Int>? {
        guard let v = try vector(slot, elementSize: 1, what()) else { return nil }
        return v.start..<(v.start + v.count)
    }
}

/// A vector inside a FlatBuffer (its elements are already bounds-checked as a whole).
struct FlatBufferVector {
    let reader: FlatBufferReader
    let start: Int
    let count: Int
    let elementSize: Int

    func integers<T: FixedWidthInteger & BitwiseCopyable>(_ type: T.Type, _ what: @autoclosure () -> String) throws -> [T] {
        try reader.charge(count, what())
        #if _endian(little)
        return scalars(T.self)
        #else
        return scalars(T.self).map { T(littleEndian: $0) }
        #endif
    }

    /// The elements' bytes copied into an array as they are (little-endian values; callers convert).
    /// One copy of the whole vector: per-channel quantization vectors run to thousands of elements
    /// (tf2_mobilenet_v2's parse took a tenth of its compile element by element). `T` is as wide as
    /// the vector's elements; were it wider, the bytes past the vector's would be zeros (only the
    /// vector's checked bytes are read).
    func scalars<T: BitwiseCopyable>(_ type: T.Type) -> [T] {
        let base = reader.base + start, size = MemoryLayout<T>.size
        let copied = count * min(size, elementSize)
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            if let destination = buffer.baseAddress, count > 0 {
                let raw = UnsafeMutableRawPointer(destination)
                raw.copyMemory(from: base, byteCount: copied)
                if copied < count * size { (raw + copied).initializeMemory(as: UInt8.self, repeating: 0, count: count * size - copied) }
            }
            initialized = count
        }
    }

    func table(_ index: Int, _ what: @autoclosure () -> String) throws -> FlatBufferTable {
        let target = try reader.follow(start + index * 4, what())
        return try reader.table(at: target, what())
    }

    func string(_ index: Int, _ what: @autoclosure () -> String) throws -> String {
        let target = try reader.follow(start + index * 4, what())
        return try reader.string(at: target, what())
    }
}
