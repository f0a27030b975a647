/// IEEE 754 half-precision conversion on raw bits (Swift's `Float16` is unavailable on x86 Linux).
enum Float16Bits {
    /// The float32 value of half-precision bits: normals, subnormals, signed zeros, infinities and
    /// NaNs (the payload is kept in the high mantissa bits).
    @inline(__always)
    static func float(_ h: UInt16) -> Float {
        let sign = UInt32(h & 0x8000) << 16
        let exponent = UInt32((h >> 10) & 0x1f)
        let mantissa = UInt32(h & 0x3ff)
        if exponent == 0 {
            // Zero or subnormal: mantissa * 2^-24 (exact in float32).
            let magnitude = Float(mantissa) * (1.0 / 16_777_216.0)
            return sign != 0 ? -magnitude : magnitude
        }
        if exponent == 31 {
            return Float(bitPattern: sign | 0x7f80_0000 | (mantissa << 13))
        }
        return Float(bitPattern: sign | ((exponent + 112) << 23) | (mantissa << 13))
    }
}
