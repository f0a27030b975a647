import Foundation
import TestSupport
import TFLiteFormat
import XCTest

/// Hand-made bad buffers, each rejected with a specific ``ModelFormatError`` code.
final class HandMadeBadInputTests: XCTestCase {
    // MARK: Helpers

    /// Asserts that `body` throws a `ModelFormatError` with `code` and a non-empty message.
    func assertError<T>(_ code: ModelFormatError.Code, _ context: String = "", file: StaticString = #filePath, line: UInt = #line,
                        _ body: () throws -> T) {
        do {
            let value = try body()
            XCTFail("\(context): expected \(code), got a value: \(String(describing: value).prefix(200))", file: file, line: line)
        } catch let error as ModelFormatError {
            XCTAssertEqual(error.code, code, "\(context): \(error.message)", file: file, line: line)
            XCTAssertFalse(error.message.isEmpty, context, file: file, line: line)
        } catch {
            XCTFail("\(context): expected ModelFormatError(\(code)), got \(type(of: error)): \(error)", file: file, line: line)
        }
    }

    func assertModelError(_ code: ModelFormatError.Code, _ bytes: [UInt8], _ context: String = "",
                          file: StaticString = #filePath, line: UInt = #line) {
        assertError(code, context, file: file, line: line) { try TFLiteModel(data: Data(bytes)) }
    }

    /// The base model: ADD of two float tensors, with a description and a quantized tensor.
    func baseModel() -> TinyModelBuilder {
        var b = TinyModelBuilder.addModel()
        b.description = "tiny model"
        b.tensors[2].quantization = .init(scale: 0.5, zeroPoint: 3)
        return b
    }

    func testBaseModelIsValid() throws {
        let model = try TFLiteModel(data: baseModel().data)
        XCTAssertEqual(model.description, "tiny model")
        XCTAssertEqual(model.mainSubgraph.operators.count, 1)
    }

    // MARK: Too short, wrong identifier, bad root

    func testEmptyData() {
        assertModelError(.outOfBounds, [], "empty")
        assertError(.outOfBounds, "file") {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("empty-\(UUID().uuidString).tflite")
            _ = FileManager.default.createFile(atPath: url.path, contents: Data())
            defer { try? FileManager.default.removeItem(at: url) }
            return try TFLiteModel(contentsOfFile: url.path)
        }
    }

    func testFourBytes() {
        assertModelError(.outOfBounds, [0x08, 0, 0, 0], "4 bytes")
        assertModelError(.outOfBounds, Array("TFL3".utf8), "4 bytes")
        assertModelError(.outOfBounds, [8, 0, 0, 0] + Array("TFL".utf8), "7 bytes")
    }

    func testWrongFileIdentifierWithGarbage() {
        var garbage = [UInt8](repeating: 0xAB, count: 64)
        garbage.replaceSubrange(4..<8, with: Array("JUNK".utf8))
        // Root offset 0xABABABAB lies past the end.
        assertModelError(.outOfBounds, garbage, "garbage root offset")
        // A plausible root offset, but the table's vtable offset (0xABABABAB) points outside.
        garbage.replaceSubrange(0..<4, with: [16, 0, 0, 0])
        assertModelError(.outOfBounds, garbage, "garbage table")
        // Zeros: the root table's vtable is at the table itself and has size 0.
        var zeros = [UInt8](repeating: 0, count: 64)
        zeros.replaceSubrange(0..<8, with: [16, 0, 0, 0] + Array("JUNK".utf8))
        assertModelError(.invalidStructure, zeros, "zero table")
        // Metadata requires its identifier.
        var metadata = FlatBufferBuilder.build(root: FBTable().with(0, .string("name")), fileIdentifier: "M001").bytes
        XCTAssertNoThrow(try metadata.withUnsafeBytes { try ModelMetadata(bytes: $0) })
        metadata.replaceSubrange(4..<8, with: Array("JUNK".utf8))
        assertError(.invalidMetadata, "metadata identifier") { try metadata.withUnsafeBytes { try ModelMetadata(bytes: $0) } }
    }

    func testRootOffsetPastTheEnd() {
        var bytes = baseModel().build().bytes
        for root in [bytes.count, bytes.count + 4, bytes.count - 2, Int(UInt32.max)] {
            FBBytes.write(UInt32(root), at: 0, in: &bytes)
            assertModelError(.outOfBounds, bytes, "root \(root)")
        }
    }

    // MARK: Tables and vtables

    func testVTableOffsetPointingOutside() {
        let output = baseModel().build()
        let model = output.position("model")
        var bytes = output.bytes
        // vtable = table - soffset: before the buffer...
        FBBytes.write(Int32(model + 100), at: model, in: &bytes)
        assertModelError(.outOfBounds, bytes, "vtable before the buffer")
        // ...and after it.
        FBBytes.write(Int32(-bytes.count), at: model, in: &bytes)
        assertModelError(.outOfBounds, bytes, "vtable after the buffer")
        FBBytes.write(Int32.min, at: model, in: &bytes)
        assertModelError(.outOfBounds, bytes, "vtable at Int32.min")
        // A nested table (a tensor) with a bad vtable offset.
        var nested = output.bytes
        FBBytes.write(Int32(-nested.count), at: output.position("tensor1"), in: &nested)
        assertModelError(.outOfBounds, nested, "tensor vtable after the buffer")
    }

    func testVTableSizeOddOrTooSmall() {
        let output = baseModel().build()
        let vtable = output.position("tensor0.vtable")
        for size: UInt16 in [0, 2, 3, 7, 9] {
            var bytes = output.bytes
            FBBytes.write(size, at: vtable, in: &bytes)
            assertModelError(.invalidStructure, bytes, "vtable size \(size)")
        }
        // A vtable that runs past the end of the buffer.
        var long = output.bytes
        FBBytes.write(UInt16(0xFFFE), at: output.position("model.vtable"), in: &long)
        assertModelError(.outOfBounds, long, "vtable size 0xFFFE")
        // A table size below 4 bytes, and a field outside the table.
        var small = output.bytes
        FBBytes.write(UInt16(2), at: vtable + 2, in: &small)
        assertModelError(.invalidStructure, small, "table size 2")
        var field = output.bytes
        FBBytes.write(UInt16(0x4000), at: vtable + 4, in: &field)
        assertModelError(.invalidStructure, field, "field offset outside the table")
        // A table that declares more bytes than the buffer has left.
        var huge = output.bytes
        FBBytes.write(UInt16(0xFFFF), at: output.position("model.vtable") + 2, in: &huge)
        assertModelError(.outOfBounds, huge, "table size 0xFFFF")
    }

    // MARK: Vectors and strings

    func testHugeVectorLength() {
        let output = baseModel().build()
        for label in ["tensors", "operators", "subgraphs", "buffers", "shape0", "op_inputs0", "inputs"] {
            for length: UInt32 in [0x7FFF_FFFF, 0xFFFF_FFFF, UInt32(output.bytes.count)] {
                var bytes = output.bytes
                FBBytes.write(length, at: output.position(label), in: &bytes)
                assertModelError(.outOfBounds, bytes, "\(label) length \(length)")
            }
        }
    }

    func testStringWithoutTerminatorInsideTheBuffer() {
        let output = baseModel().build()
        let description = output.position("description")
        let length = Int(FBBytes.read(UInt32.self, at: description, in: output.bytes))
        XCTAssertEqual(length, "tiny model".utf8.count)
        // Cut right after the characters: the terminator would be the first byte past the end.
        assertModelError(.outOfBounds, Array(output.bytes[..<(description + 4 + length)]), "truncated after the string")
        // A length that reaches exactly the end of the buffer.
        var exact = output.bytes
        FBBytes.write(UInt32(exact.count - description - 4), at: description, in: &exact)
        assertModelError(.outOfBounds, exact, "string up to the end")
        var huge = output.bytes
        FBBytes.write(UInt32(0x7FFF_FFFF), at: description, in: &huge)
        assertModelError(.outOfBounds, huge, "string length 0x7FFFFFFF")
        // The terminator position is inside the buffer but holds no NUL.
        var unterminated = output.bytes
        unterminated[description + 4 + length] = UInt8(ascii: "X")
        assertModelError(.invalidStructure, unterminated, "no NUL after the string")
    }

    // MARK: Self-references and aliasing

    func testSelfReferentialOffsetsTerminate() {
        let output = baseModel().build()
        // uoffsets point forward, so the closest thing to a cycle is an offset of 0: the field
        // points at itself. As a table, its vtable offset is 0 (vtable = the table itself, size 0).
        var quantization = output.bytes
        FBBytes.write(UInt32(0), at: output.position("tensor2.field.4"), in: &quantization)
        assertModelError(.invalidStructure, quantization, "quantization field pointing at itself")
        // As a vector, its length is 0: the model then has no subgraph.
        var subgraphs = output.bytes
        FBBytes.write(UInt32(0), at: output.position("model.field.2"), in: &subgraphs)
        assertModelError(.invalidStructure, subgraphs, "subgraphs field pointing at itself")
        // A table whose vtable offset is 0 (its vtable is the table itself).
        var table = output.bytes
        FBBytes.write(Int32(0), at: output.position("subgraph"), in: &table)
        assertModelError(.invalidStructure, table, "table that is its own vtable")
        // A vtable that lies inside its own table, its entries being the table's bytes.
        var inside = output.bytes
        FBBytes.write(Int32(-4), at: output.position("operator0"), in: &inside)
        assertError(.invalidStructure, "vtable inside the table") { try TFLiteModel(data: Data(inside)) }
    }

    func testAliasedVectorsHitTheDecodingBudget() throws {
        // 50,000 tensor offsets that all point at one tensor whose shape has 50,000 dimensions:
        // a 2.5 MB buffer that would decode 2.5 billion shape elements.
        let count = 50_000
        var b = TinyModelBuilder()
        b.addTensor("big", shape: [Int32](repeating: 1, count: count))
        for i in 1..<count { b.addTensor("t\(i)", shape: []) }
        let add = b.addOperatorCode(builtin: TinyModelBuilder.Builtin.add)
        b.addOperator(opcodeIndex: add, inputs: [0, 0], outputs: [0])
        b.inputs = [0]
        b.outputs = [0]
        let output = b.build()
        XCTAssertEqual(try TFLiteModel(data: output.data).mainSubgraph.tensors.count, count)
        var bytes = output.bytes
        let vector = output.position("tensors"), first = output.position("tensor0")
        for i in 1..<count {
            let element = vector + 4 + 4 * i
            FBBytes.write(UInt32(first - element), at: element, in: &bytes)
        }
        let start = Date()
        assertModelError(.resourceLimit, bytes, "aliased tensors")
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    // MARK: Indices

    func testOperatorCodeIndexOutOfRange() {
        var b = baseModel()
        b.operators[0].opcodeIndex = 1
        assertModelError(.invalidStructure, b.build().bytes, "opcode index 1 of 1")
        b.operators[0].opcodeIndex = UInt32.max
        assertModelError(.invalidStructure, b.build().bytes, "opcode index UInt32.max")
    }

    func testTensorIndexOutOfRange() {
        var b = baseModel()
        b.operators[0].inputs = [0, 3]
        assertModelError(.invalidStructure, b.build().bytes, "operator input 3 of 3 tensors")
        b.operators[0].inputs = [0, -2]
        assertModelError(.invalidStructure, b.build().bytes, "operator input -2")
        b = baseModel()
        b.operators[0].outputs = [Int32.max]
        assertModelError(.invalidStructure, b.build().bytes, "operator output Int32.max")
        b = baseModel()
        b.outputs = [7]
        assertModelError(.invalidStructure, b.build().bytes, "subgraph output 7")
        b = baseModel()
        b.inputs = [-1]
        assertModelError(.invalidStructure, b.build().bytes, "subgraph input -1")
        b = baseModel()
        b.tensors[0].bufferOverride = 9
        assertModelError(.invalidStructure, b.build().bytes, "buffer index 9")
        // -1 (an omitted optional input) is allowed.
        b = baseModel()
        b.operators[0].inputs = [0, -1]
        XCTAssertNoThrow(try TFLiteModel(data: b.data))
    }

    func testOtherInvalidValues() {
        var b = baseModel()
        b.tensors[1].type = 99
        assertModelError(.invalidStructure, b.build().bytes, "unknown tensor type")
        b = baseModel()
        b.version = 4
        assertModelError(.unsupported, b.build().bytes, "schema version 4")
        // Options type ADD, but the options table's vtable entry (slot 4) cleared.
        let withOptions = baseModel().build()
        var noTable = withOptions.bytes
        FBBytes.write(UInt16(0), at: withOptions.position("operator0.vtable") + 4 + 2 * 4, in: &noTable)
        assertModelError(.invalidStructure, noTable, "options type without table")
        b = baseModel()
        b.operators[0].builtinOptions = FBTable([(0, .int8(42))])
        assertModelError(.invalidStructure, b.build().bytes, "unknown fused activation")
        b = baseModel()
        b.metadata = [("TFLITE_METADATA", [1, 2, 3])]
        var metadataBytes = b.build().bytes
        XCTAssertNoThrow(try TFLiteModel(data: Data(metadataBytes)))
        assertError(.invalidMetadata, "3-byte metadata") { try TFLiteModel(data: Data(metadataBytes)).metadata() }
        // A metadata entry naming a buffer that does not exist.
        let output = b.build()
        metadataBytes = output.bytes
        FBBytes.write(UInt32(50), at: output.position("metadata0.field.1"), in: &metadataBytes)
        assertModelError(.invalidStructure, metadataBytes, "metadata buffer index")
    }

    // MARK: FlexBuffers

    /// A FlexBuffer whose root is an untyped vector (width 4) of `count` strings that all alias one
    /// string of `length` bytes.
    func aliasedStringVector(count: Int, length: Int) -> [UInt8] {
        var bytes = FBBytes.littleEndian(UInt32(length)) + [UInt8](repeating: UInt8(ascii: "a"), count: length) + [0]
        while bytes.count % 4 != 0 { bytes.append(0) }
        bytes += FBBytes.littleEndian(UInt32(count))
        let start = bytes.count
        for i in 0..<count { bytes += FBBytes.littleEndian(UInt32(start + 4 * i - 4)) }
        bytes += [UInt8](repeating: 5 << 2 | 2, count: count)          // STRING, width 4
        let root = bytes.count
        bytes += FBBytes.littleEndian(UInt32(root - start))
        bytes += [10 << 2 | 2, 4]                                      // VECTOR, width 4; root width 4
        return bytes
    }

    /// A FlexBuffer map with `count` values whose keys all alias one key of `length` bytes.
    func aliasedKeyMap(count: Int, length: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: UInt8(ascii: "k"), count: length) + [0]
        while bytes.count % 4 != 0 { bytes.append(0) }
        bytes += FBBytes.littleEndian(UInt32(count))                   // keys vector length
        let keys = bytes.count
        for i in 0..<count { bytes += FBBytes.littleEndian(UInt32(keys + 4 * i)) }
        let prefix = bytes.count
        bytes += FBBytes.littleEndian(UInt32(prefix - keys))            // keys offset
        bytes += FBBytes.littleEndian(UInt32(4))                        // key width
        bytes += FBBytes.littleEndian(UInt32(count))                    // length
        let values = bytes.count
        for i in 0..<count { bytes += FBBytes.littleEndian(UInt32(i)) }
        bytes += [UInt8](repeating: 1 << 2 | 2, count: count)          // INT, width 4
        let root = bytes.count
        bytes += FBBytes.littleEndian(UInt32(root - values))
        bytes += [9 << 2 | 2, 4]                                       // MAP, width 4; root width 4
        return bytes
    }

    func testFlexBufferHandMade() throws {
        XCTAssertEqual(try FlexBuffer.decode(Data([7, 1 << 2, 1])), .int(7))
        XCTAssertEqual(try FlexBuffer.decode(Data(aliasedStringVector(count: 3, length: 5))),
                       .vector([.string("aaaaa"), .string("aaaaa"), .string("aaaaa")]))
        XCTAssertEqual(try FlexBuffer.decode(Data(aliasedKeyMap(count: 1, length: 3))), .map(["kkk": .int(0)]))
        assertError(.invalidFlexBuffer, "empty") { try FlexBuffer.decode(Data()) }
        assertError(.invalidFlexBuffer, "2 bytes") { try FlexBuffer.decode(Data([1, 4])) }
        assertError(.invalidFlexBuffer, "root width 3") { try FlexBuffer.decode(Data([7, 4, 3])) }
        assertError(.invalidFlexBuffer, "root width 8 in 3 bytes") { try FlexBuffer.decode(Data([7, 4, 8])) }
        assertError(.invalidFlexBuffer, "unknown type") { try FlexBuffer.decode(Data([7, 60 << 2, 1])) }
        assertError(.invalidFlexBuffer, "float of width 1") { try FlexBuffer.decode(Data([7, 3 << 2, 1])) }
        assertError(.invalidFlexBuffer, "offset before the buffer") { try FlexBuffer.decode(Data([200, 5 << 2, 1])) }
        // A map (8-byte slots) of no values whose key-width slot holds 0xEC << 56 (the fuzzer's input):
        // the width is checked as stored, not converted to Int first (that trapped).
        var hugeKeyWidth = [UInt8](repeating: 0, count: 52)
        hugeKeyWidth[36] = 0xEC                                   // key width, bytes 29...36
        hugeKeyWidth[49] = 4                                      // root: the map starts 4 bytes back, at 45
        (hugeKeyWidth[50], hugeKeyWidth[51]) = (9 << 2 | 3, 1)    // MAP of width 8, root width 1
        assertError(.invalidFlexBuffer, "map key width") { try FlexBuffer.decode(Data(hugeKeyWidth)) }
        // A vector that contains itself: offset 0 from its element back to its start.
        // [len=1][elem: offset 0 -> the vector itself][type: VECTOR w1][root: offset 2 -> 1][VECTOR w1][1]
        let selfContaining: [UInt8] = [1, 0, 10 << 2, 2, 10 << 2, 1]
        assertError(.invalidFlexBuffer, "self-containing vector") { try FlexBuffer.decode(Data(selfContaining)) }
        // Aliasing: 4,000 references to one 250 kB string or key would expand a 266 kB buffer to 1 GB.
        let start = Date()
        assertError(.invalidFlexBuffer, "aliased strings") { try FlexBuffer.decode(Data(aliasedStringVector(count: 4_000, length: 250_000))) }
        assertError(.invalidFlexBuffer, "aliased keys") { try FlexBuffer.decode(Data(aliasedKeyMap(count: 4_000, length: 250_000))) }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    // MARK: ZIP archive

    func testCorruptArchiveDirectory() throws {
        // An end-of-central-directory record whose directory is larger than the file.
        var eocd: [UInt8] = [0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0, 1, 0, 1, 0]
        eocd += FBBytes.littleEndian(UInt32(1000)) + FBBytes.littleEndian(UInt32(0)) + [0, 0]
        var b = baseModel()
        b.trailingBytes = eocd
        let model = try TFLiteModel(data: b.data)
        assertError(.invalidArchive, "oversized directory") { try model.associatedFiles() }
        // A directory that claims one entry but holds none.
        eocd.replaceSubrange(12..<16, with: FBBytes.littleEndian(UInt32(0)))
        b.trailingBytes = eocd
        assertError(.invalidArchive, "missing entry") { try TFLiteModel(data: b.data).associatedFiles() }
        // No archive at all is not an error.
        XCTAssertNil(try TFLiteModel(data: baseModel().data).associatedFiles())
    }
}
