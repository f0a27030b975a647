import Foundation
import MediaIO
import XCTest

/// Inputs found by the libFuzzer targets (Fuzz/, scripts/fuzz.sh, docs/FUZZING.md) that crashed a
/// decoder, rebuilt in code: each must now be a typed ``ImageError`` (and its valid neighbour must
/// still decode, so the test can fail).
final class FuzzRegressionTests: XCTestCase {
    /// A 1×1 32-bit BI_BITFIELDS BMP with the given channel masks (after a 40-byte header) and pixel value.
    static func bitfieldsBMP(masks: (UInt32, UInt32, UInt32), pixel: UInt32) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
        let dataOffset: UInt32 = 14 + 40 + 12
        var out = Array("BM".utf8) + u32(dataOffset + 4) + u32(0) + u32(dataOffset)
        out += u32(40) + u32(1) + u32(1) + u16(1) + u16(32) + u32(3) + u32(4) + u32(2835) + u32(2835) + u32(0) + u32(0)
        out += u32(masks.0) + u32(masks.1) + u32(masks.2)
        return out + u32(pixel)
    }

    /// FuzzBMP, crash-422804fe: a colour mask that is not one run of bits (0x00F00032) made the channel
    /// value exceed the mask's bit count, and scaling it to 0...255 trapped on UInt8 overflow.
    func testBMPNonContiguousColourMaskIsAnError() throws {
        let valid = try ImageDecoder.decode(Data(Self.bitfieldsBMP(masks: (0x00FF_0000, 0x0000_FF00, 0x0000_00FF), pixel: 0x0011_2233)))
        XCTAssertEqual(try rgbBytes(valid.pixels), [0x11, 0x22, 0x33])
        let error = assertImageError(.unsupportedFormat) {
            try ImageDecoder.decode(Data(Self.bitfieldsBMP(masks: (0x00F0_0032, 0x0000_FF00, 0x0000_00FF), pixel: 0xFFFF_FFFF)))
        }
        XCTAssertTrue(error?.message.contains("0xf00032") ?? false, error?.message ?? "")
    }
}
