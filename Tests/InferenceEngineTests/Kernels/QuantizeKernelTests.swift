import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore

/// QUANTIZE (float -> int, per-tensor and per-channel, and requantization), DEQUANTIZE (8/16-bit,
/// per-channel, IEEE half) and CAST with C++/TFLite semantics.
final class QuantizeKernelTests: XCTestCase {
    // MARK: - Helpers

    func q(_ scale: Float, _ zeroPoint: Int64) -> QuantizationParameters {
        QuantizationParameters(scale: scale, zeroPoint: zeroPoint)
    }

    func quantize(_ x: [Float], to type: ElementType, _ params: QuantizationParameters, shape: [Int]? = nil) throws -> TensorValue {
        try KernelRunner.run(.quantize, inputs: [.float32(x, shape: shape ?? [x.count])], outputs: [OutputSpec(type: type, quantization: params)])[0]
    }

    func cast(_ input: TensorValue, to type: ElementType) throws -> TensorValue {
        try KernelRunner.run(.cast, options: .cast(input: input.type, output: type), inputs: [input], outputs: [OutputSpec(type: type)])[0]
    }

    func assertThrows(_ code: EngineError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let e = error as? EngineError else { return XCTFail("not an EngineError: \(error)", file: file, line: line) }
            XCTAssertEqual(e.code, code, "\(e.message)", file: file, line: line)
        }
    }

    // MARK: - QUANTIZE

    func testQuantizeFloatToUInt8RoundsHalfAwayFromZero() throws {
        let r = try quantize([0, 0.25, -0.25, 0.75, 1.0, 200, -100], to: .uint8, q(0.5, 10), shape: [1, 7])
        XCTAssertEqual(r.shape, [1, 7])
        // x / 0.5 = [0, 0.5, -0.5, 1.5, 2, 400, -200] -> [0, 1, -1, 2, 2, ...] + 10, clamped.
        XCTAssertEqual(r.values(as: UInt8.self), [10, 11, 9, 12, 12, 255, 0])
    }

    func testQuantizeFloatToInt8AndInt16() throws {
        let i8 = try quantize([-1.25, 0.25, 63.9, -70], to: .int8, q(0.5, -3))
        XCTAssertEqual(i8.values(as: Int8.self), [-6, -2, 125, -128])
        let i16 = try quantize([1.5, -1.5, 1e9, -2.2], to: .int16, q(0.001, 0))
        XCTAssertEqual(i16.values(as: Int16.self), [1500, -1500, 32767, -2200])
    }

    func testQuantizeNaNAndHugeValuesSaturate() throws {
        let r = try quantize([.nan, .infinity, -.infinity, 3e38], to: .uint8, q(1e-3, 7))
        XCTAssertEqual(r.values(as: UInt8.self), [7, 255, 0, 255])
    }

    func testQuantizePerChannelInt8() throws {
        // Axis 1: channel 0 scale 0.5 zero point 0, channel 1 scale 2 zero point -5.
        let params = QuantizationParameters(scales: [0.5, 2], zeroPoints: [0, -5], quantizedDimension: 1)
        let r = try quantize([0.25, 2.6, -0.35, -3.5], to: .int8, params, shape: [2, 2])
        XCTAssertEqual(r.values(as: Int8.self), [1, -4, -1, -7])
    }

    func testRequantizeUInt8ToInt8ShiftsZeroPoint() throws {
        let r = try KernelRunner.run(.quantize, inputs: [.uint8([0, 128, 255, 1], shape: [4], scale: 0.00784, zeroPoint: 127)],
                                     outputs: [.int8(scale: 0.00784, zeroPoint: -1)])[0]
        XCTAssertEqual(r.values(as: Int8.self), [-128, 0, 127, -127])
    }

    func testRequantizeInt8ToUInt8() throws {
        let r = try KernelRunner.run(.quantize, inputs: [.int8([-128, 0, 127], shape: [3], quantization: q(1.0 / 256, -128))],
                                     outputs: [.uint8(scale: 1.0 / 256, zeroPoint: 0)])[0]
        XCTAssertEqual(r.values(as: UInt8.self), [0, 128, 255])
    }

    func testRequantizeUInt8ToUInt8WithScaleChange() throws {
        // Multiplier 1 / 0.5 = 2: out = 3 + 2 * q, clamped.
        let r = try KernelRunner.run(.quantize, inputs: [.uint8([0, 1, 100, 200], shape: [4], scale: 1, zeroPoint: 0)],
                                     outputs: [.uint8(scale: 0.5, zeroPoint: 3)])[0]
        XCTAssertEqual(r.values(as: UInt8.self), [3, 5, 203, 255])
        // Multiplier 0.25 with a round-half-away-from-zero fixed-point division.
        let down = try KernelRunner.run(.quantize, inputs: [.uint8([126, 130, 138, 0], shape: [4], scale: 1, zeroPoint: 128)],
                                        outputs: [.uint8(scale: 4, zeroPoint: 128)])[0]
        XCTAssertEqual(down.values(as: UInt8.self), [127, 129, 131, 96])
    }

    func testRequantizeInt16ToInt8() throws {
        let r = try KernelRunner.run(.quantize, inputs: [TensorValue([Int16(-1000), 0, 400, 30000], type: .int16, shape: [4], quantization: q(0.01, 0))],
                                     outputs: [.int8(scale: 0.1, zeroPoint: 5)])[0]
        XCTAssertEqual(r.values(as: Int8.self), [-95, 5, 45, 127])
    }

    func testQuantizeErrors() {
        assertThrows(.invalidQuantization) { _ = try self.quantize([1], to: .uint8, QuantizationParameters(scales: [], zeroPoints: [])) }
        assertThrows(.unsupportedOperator) { _ = try self.quantize([1], to: .int32, self.q(1, 0)) }
        assertThrows(.invalidQuantization) {
            _ = try KernelRunner.run(.quantize, inputs: [TensorValue([Int16(1)], type: .int16, shape: [1], quantization: self.q(1, 2))],
                                     outputs: [OutputSpec(type: .int16, quantization: self.q(1, 0))])
        }
    }

    // MARK: - DEQUANTIZE

    func testDequantizeUInt8AndInt8() throws {
        let u = try KernelRunner.run(.dequantize, inputs: [.uint8([0, 128, 255], shape: [3], scale: 0.5, zeroPoint: 128)], outputs: [.float32])[0]
        XCTAssertEqual(u.floats, [-64, 0, 63.5])
        let i = try KernelRunner.run(.dequantize, inputs: [.int8([-128, -3, 127], shape: [1, 3], quantization: q(0.25, -3))], outputs: [.float32])[0]
        XCTAssertEqual(i.shape, [1, 3])
        XCTAssertEqual(i.floats, [-31.25, 0, 32.5])
    }

    func testDequantizeInt16AndTinyScale() throws {
        let r = try KernelRunner.run(.dequantize, inputs: [TensorValue([Int16(-32768), 2, 32767], type: .int16, shape: [3], quantization: q(0.5, 0))],
                                     outputs: [.float32])[0]
        XCTAssertEqual(r.floats, [-16384, 1, 16383.5])
        let tiny = try KernelRunner.run(.dequantize, inputs: [.uint8([0, 255], shape: [2], scale: 1e-35, zeroPoint: 0)], outputs: [.float32])[0]
        XCTAssertEqual(tiny.floats[0], 0)
        XCTAssertEqual(tiny.floats[1], 2.55e-33, accuracy: 1e-38)
        XCTAssertTrue(tiny.floats.allSatisfy { $0.isFinite })
    }

    func testDequantizePerChannelInt8() throws {
        // Axis 0: scales [0.1, 0.25, 2], zero points [0, 1, -3].
        let params = QuantizationParameters(scales: [0.1, 0.25, 2], zeroPoints: [0, 1, -3], quantizedDimension: 0)
        let r = try KernelRunner.run(.dequantize, inputs: [.int8([10, -10, 5, 1, -3, 0], shape: [3, 2], quantization: params)], outputs: [.float32])[0]
        let f = r.floats
        XCTAssertEqual(f[0], 1, accuracy: 1e-6)
        XCTAssertEqual(f[1], -1, accuracy: 1e-6)
        XCTAssertEqual(Array(f[2...]), [1, 0, 0, 6])
    }

    /// Every one of the 65,536 half-precision patterns (and a run whose length is no multiple of
    /// the 8-lane blocks) gives the same float32 bits with every kernel selection as with the
    /// reference kernel, and those are the value the pattern encodes: normals and subnormals
    /// exactly, signed zeros and infinities, NaNs with their payload in the high mantissa bits and
    /// not quieted (the optimized path is CKernels' `ck_f16_to_f32`).
    func testDequantizeFloat16EveryPatternOnEveryKernelSelection() throws {
        let bits = (0...0xFFFF).map { UInt16($0) } + [0x7C01, 0x3C00, 0x0001]
        func expected(_ h: UInt16) -> UInt32 {
            let sign: UInt32 = h & 0x8000 != 0 ? 0x8000_0000 : 0
            let exponent = Int((h >> 10) & 0x1F), mantissa = UInt32(h & 0x3FF)
            switch exponent {
            case 0: return Float(sign: sign != 0 ? .minus : .plus, exponent: -24, significand: Float(mantissa)).bitPattern | sign
            case 31: return sign | 0x7F80_0000 | mantissa << 13
            default: return (Float(sign: sign != 0 ? .minus : .plus, exponent: exponent - 15, significand: 1 + Float(mantissa) / 1024)).bitPattern
            }
        }
        let want = bits.map(expected)
        for kernels in KernelSelection.allCases {
            let r = try KernelRunner.run(.dequantize, inputs: [TensorValue(bits, type: .float16, shape: [bits.count], isConstant: true)],
                                         outputs: [.float32], kernels: kernels)[0]
            let got = r.floats.map(\.bitPattern)
            let wrong = got.indices.filter { got[$0] != want[$0] }
            XCTAssertTrue(got.count == want.count && wrong.isEmpty,
                          "\(kernels): \(wrong.count) patterns differ, e.g. 0x\(String(bits[wrong.first ?? 0], radix: 16)) -> 0x\(String(got[wrong.first ?? 0], radix: 16)), expected 0x\(String(want[wrong.first ?? 0], radix: 16))")
        }
    }

    func testDequantizeFloat16Bits() throws {
        let bits: [UInt16] = [0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x0400, 0x7C00, 0xFC00, 0x7E00, 0x8000, 0x3555]
        let r = try KernelRunner.run(.dequantize, inputs: [TensorValue(bits, type: .float16, shape: [bits.count], isConstant: true)], outputs: [.float32])[0]
        let f = r.floats
        XCTAssertEqual(f[0], 1)
        XCTAssertEqual(f[1], -2)
        XCTAssertEqual(f[2], 65504)
        XCTAssertEqual(f[3], 5.9604645e-08)          // smallest subnormal, 2^-24
        XCTAssertEqual(f[4], 6.097555e-05)           // largest subnormal, 1023 * 2^-24
        XCTAssertEqual(f[5], 6.1035156e-05)          // smallest normal, 2^-14
        XCTAssertEqual(f[6], .infinity)
        XCTAssertEqual(f[7], -.infinity)
        XCTAssertTrue(f[8].isNaN)
        XCTAssertEqual(f[9], 0)
        XCTAssertEqual(f[9].sign, .minus)
        XCTAssertEqual(f[10], 0.33325195)
    }

    func testDequantizeErrors() {
        assertThrows(.invalidQuantization) {
            _ = try KernelRunner.run(.dequantize, inputs: [TensorValue([Int16(1)], type: .int16, shape: [1], quantization: self.q(1, 4))], outputs: [.float32])
        }
        assertThrows(.invalidQuantization) {
            _ = try KernelRunner.run(.dequantize, inputs: [TensorValue([UInt8(1)], type: .uint8, shape: [1])], outputs: [.float32])
        }
        assertThrows(.unsupportedOperator) {
            _ = try KernelRunner.run(.dequantize, inputs: [.float32([1], shape: [1])], outputs: [.float32])
        }
    }

    // MARK: - CAST

    func testCastFloatToInt32TruncatesAndSaturates() throws {
        let r = try cast(.float32([1.9, -1.9, 3e9, -3e9, .nan, -0.5], shape: [6]), to: .int32)
        XCTAssertEqual(r.values(as: Int32.self), [1, -1, Int32.max, Int32.min, Int32.max, 0])
    }

    func testCastFloatToUInt8AndInt64() throws {
        XCTAssertEqual(try cast(.float32([-1.5, 255.9, 300, 7.7], shape: [4]), to: .uint8).values(as: UInt8.self), [0, 255, 255, 7])
        XCTAssertEqual(try cast(.float32([-2.5, 1e10], shape: [2]), to: .int64).values(as: Int64.self), [-2, 10_000_000_000])
    }

    func testCastIntegersWrapLikeStaticCast() throws {
        XCTAssertEqual(try cast(.int32([256, -1, 300, 127], shape: [4], isConstant: false), to: .uint8).values(as: UInt8.self), [0, 255, 44, 127])
        XCTAssertEqual(try cast(TensorValue([Int64(1) << 32 | 5, -1], type: .int64, shape: [2]), to: .int32).values(as: Int32.self), [5, -1])
        XCTAssertEqual(try cast(.int8([-128, -1, 5], shape: [3], quantization: QuantizationParameters(scales: [], zeroPoints: [])), to: .int32).values(as: Int32.self),
                       [-128, -1, 5])
        XCTAssertEqual(try cast(TensorValue([UInt8(200)], type: .uint8, shape: [1]), to: .int8).values(as: Int8.self), [-56])
    }

    func testCastToAndFromBoolAndFloat() throws {
        XCTAssertEqual(try cast(.float32([0, -0.0, 0.1, .nan], shape: [4]), to: .bool).values(as: UInt8.self), [0, 0, 1, 1])
        XCTAssertEqual(try cast(TensorValue([UInt8(0), 1], type: .bool, shape: [2]), to: .float32).floats, [0, 1])
        XCTAssertEqual(try cast(.int32([0, -7], shape: [2], isConstant: false), to: .bool).values(as: UInt8.self), [0, 1])
        XCTAssertEqual(try cast(.int32([-7, 16_777_217], shape: [2], isConstant: false), to: .float32).floats, [-7, 16_777_216])
    }

    func testCastFloat16Source() throws {
        XCTAssertEqual(try cast(TensorValue([UInt16(0xC100), 0x3C00], type: .float16, shape: [2]), to: .int32).values(as: Int32.self), [-2, 1])
    }

    func testCastUnsupportedTypeThrows() {
        assertThrows(.unsupportedOperator) {
            _ = try self.cast(TensorValue([UInt8(0)], type: .uint8, shape: [1]), to: .float16)
        }
    }
}
