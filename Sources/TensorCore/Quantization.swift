/// Affine quantization of a tensor: `real = scale * (q - zeroPoint)`.
///
/// Per-tensor quantization has one scale and one zero point; per-channel quantization has one per
/// index along ``quantizedDimension``.
public struct QuantizationParameters: Sendable, Hashable {
    public var scales: [Float]
    public var zeroPoints: [Int64]
    public var quantizedDimension: Int
    /// Calibration range recorded by the converter, if any (informational).
    public var min: [Float]
    public var max: [Float]

    public init(scales: [Float], zeroPoints: [Int64], quantizedDimension: Int = 0, min: [Float] = [], max: [Float] = []) {
        self.scales = scales
        self.zeroPoints = zeroPoints
        self.quantizedDimension = quantizedDimension
        self.min = min
        self.max = max
    }

    /// Convenience for per-tensor parameters.
    public init(scale: Float, zeroPoint: Int64) {
        self.init(scales: [scale], zeroPoints: [zeroPoint])
    }

    /// Whether there is a scale at all (TFLite marks "not quantized" by empty scale vectors).
    public var isQuantized: Bool { !scales.isEmpty }

    /// Whether there is more than one scale (per-channel / per-axis quantization).
    public var isPerChannel: Bool { scales.count > 1 }

    /// The per-tensor scale (the first one), or 0 if not quantized.
    public var scale: Float { scales.first ?? 0 }

    /// The per-tensor zero point (the first one), or 0.
    public var zeroPoint: Int64 { zeroPoints.first ?? 0 }
}
