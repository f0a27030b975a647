import CKernels
import TestSupport
import XCTest

/// The int16 weight packing (ck_conv_q8_pack) transposes 16 × 16 bytes at a time with AVX2; the
/// byte-path weight packing (ck_conv_q8b_pack) transposes 16 × 16 dwords of filter rows with AVX-512
/// and sums the operands in vector registers where the CPU has AVX-512; the packed bytes, the folded biases
/// and the short-requantization flags must be exactly those of the plain C packing.
final class QuantizedPackTests: XCTestCase {
    /// Full blocks and chunks of 16 input channels take the AVX2 transposes, the rest (partial
    /// blocks, channels past the last chunk) the plain loop; a zero point outside the type's range
    /// keeps the plain loop throughout. Every packed value must be the plain C packing's.
    func testTransposedInt16PackingIsThePlainPacking() throws {
        let best = ck_best_isa()
        guard best >= Int32(CK_ISA_AVX2) else { throw XCTSkip("no AVX2 on this CPU: only the plain C packing runs") }
        var random = SeededGenerator(seed: 31)
        // (out_c, in_c, k): one chunk, chunks plus a tail, fewer than 16 channels, block tails, 3×3 taps.
        let shapes = [(16, 16, 1), (32, 40, 1), (17, 33, 1), (40, 7, 3), (48, 96, 3), (5, 64, 1), (160, 960, 1)]
        for (outputChannels, inputChannels, k) in shapes {
            for (isSigned, filterZeroPoint) in [(Int32(0), Int32(131)), (1, 0), (1, -7), (0, 300), (1, 200)] {
                var g = ck_conv_geometry(in_h: 6, in_w: 6, in_c: Int32(inputChannels), out_h: 6, out_w: 6, out_c: Int32(outputChannels),
                                         k_h: Int32(k), k_w: Int32(k), stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1,
                                         pad_top: Int32(k / 2), pad_left: Int32(k / 2))
                let filter = (0..<outputChannels * k * k * inputChannels).map { _ in UInt8.random(in: 0...255, using: &random) }
                let count = ck_conv_q8_packed_count(&g)
                func pack(_ isa: Int32) -> [Int16] {
                    var packed = [Int16](repeating: 0x55, count: count)
                    filter.withUnsafeBytes { f in ck_conv_q8_pack(isa, &g, f.baseAddress, isSigned, filterZeroPoint, &packed) }
                    return packed
                }
                let plain = pack(Int32(CK_ISA_PORTABLE)), transposed = pack(Int32(CK_ISA_AVX2))
                let difference = plain.indices.first { transposed[$0] != plain[$0] }
                XCTAssertNil(difference, "out_c \(outputChannels) in_c \(inputChannels) k \(k) signed \(isSigned) zw \(filterZeroPoint): first difference at value \(difference ?? -1) of \(count)")
                // Every value from the layout's definition ([block][tap][input pair][16 channels][2],
                // w - zw as int16), the padding (channels past out_c, an odd input channel) zero: the
                // packing writes every value of the buffer, whatever was there before.
                let taps = k * k, pairs = (inputChannels + 1) / 2
                var expected = [Int16](repeating: 0, count: count)
                for oc in 0..<outputChannels {
                    for t in 0..<taps {
                        for i in 0..<inputChannels {
                            let byte = filter[(oc * taps + t) * inputChannels + i]
                            let value = (isSigned == 1 ? Int(Int8(bitPattern: byte)) : Int(byte)) - Int(filterZeroPoint)
                            let at = (((oc / 16) * taps + t) * pairs + i / 2) * 32 + (oc % 16) * 2 + i % 2
                            expected[at] = Int16(truncatingIfNeeded: value)
                        }
                    }
                }
                let wrong = expected.indices.first { plain[$0] != expected[$0] }
                XCTAssertNil(wrong, "out_c \(outputChannels) in_c \(inputChannels) k \(k) signed \(isSigned) zw \(filterZeroPoint): value \(wrong ?? -1) of \(count) is \(wrong.map { plain[$0] } ?? 0), not \(wrong.map { expected[$0] } ?? 0)")
                // The packing's own first value, read back: filter[0] - zw (int8 or uint8).
                let first = isSigned == 1 ? Int(Int8(bitPattern: filter[0])) : Int(filter[0])
                XCTAssertEqual(Int(plain[0]), Int(Int16(truncatingIfNeeded: first - Int(filterZeroPoint))))
            }
        }
    }

    func testGatheredPackingIsThePlainPacking() throws {
        let best = ck_best_isa()
        guard best >= Int32(CK_ISA_AVX512) else { throw XCTSkip("no AVX-512 on this CPU: only the plain C packing runs") }
        var random = SeededGenerator(seed: 29)
        // (out_c, in_c, k): block tails, channel tails (groups composed in C), 3×3 taps, a
        // reduction long enough that int8 filters are not flipped (K > 2048), uint8 filters; 16 groups of
        // 4 channels at a time go through one transpose, the last 1-15 full groups through one of
        // masked row loads (in_c 20: one masked; 96: one whole + 8 masked; 70: one whole + 1 masked
        // + a composed group; 2100: 32 whole + 13 masked; 320 and 64: whole ones only).
        let shapes = [(40, 20, 1), (17, 5, 1), (24, 3, 3), (37, 13, 3), (160, 96, 1), (33, 70, 1), (20, 2100, 1), (48, 320, 3), (16, 64, 1)]
        for (outputChannels, inputChannels, k) in shapes {
            for isSigned: Int32 in [0, 1] {
                var g = ck_conv_geometry(in_h: 6, in_w: 6, in_c: Int32(inputChannels), out_h: 6, out_w: 6, out_c: Int32(outputChannels),
                                         k_h: Int32(k), k_w: Int32(k), stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1,
                                         pad_top: Int32(k / 2), pad_left: Int32(k / 2))
                let filter = (0..<outputChannels * k * k * inputChannels).map { _ in UInt8.random(in: 0...255, using: &random) }
                let count = ck_conv_q8b_packed_count(&g)
                let blocks = (outputChannels + Int(CK_Q8_NR) - 1) / Int(CK_Q8_NR)
                let initial = (0..<blocks * Int(CK_Q8_PARAMS_PER_BLOCK)).map { _ in Int32.random(in: -5000...5000, using: &random) }
                let filterZeroPoint: Int32 = isSigned == 1 ? 0 : 131
                func pack(_ isa: Int32) -> (bytes: [Int8], params: [Int32]) {
                    var bytes = [Int8](repeating: 0x55, count: count), params = initial
                    filter.withUnsafeBytes { f in
                        ck_conv_q8b_pack(isa, &g, f.baseAddress, isSigned, filterZeroPoint, 7, &bytes, &params)
                    }
                    return (bytes, params)
                }
                let plain = pack(Int32(CK_ISA_PORTABLE)), gathered = pack(best)
                let what = "out_c \(outputChannels) in_c \(inputChannels) k \(k) signed \(isSigned)"
                XCTAssertEqual(gathered.bytes, plain.bytes, "\(what): packed bytes")
                XCTAssertEqual(gathered.params, plain.params, "\(what): biases and flags")
                XCTAssertNotEqual(plain.params, initial, "\(what): the packing folds the operand sums into the biases")
            }
        }
    }
}
