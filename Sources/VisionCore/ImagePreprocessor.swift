import InferenceEngine
import MediaIO
import TensorCore

/// Turns an image into a model's input tensor in one pass: orientation, optional region of interest,
/// resize, colour conversion, then quantization or normalization — written straight into the
/// interpreter's input tensor.
///
/// The resize is plain bilinear with half-pixel centres and no antialiasing, computed in double
/// precision exactly as the reference goldens were made (../shared/reference/README.md §4): for
/// each axis `s = ((x + 0.5) * in) / out - 0.5`, clamped to `[0, in - 1]`; the four neighbours are
/// blended without fused multiply-add and rounded half up. The image is stretched (no crop, no
/// letterbox). uint8 inputs get the pixel value, int8 inputs `pixel - 128`, float32 inputs
/// `(pixel - mean) / std` in float32.
public enum ImagePreprocessor {
    /// A region of interest in the *stored* image, normalized to [0, 1] (MediaPipe's convention:
    /// the crop happens before rotation).
    public struct RegionOfInterest: Sendable, Hashable {
        /// Left, top, width and height, as fractions of the stored image's width and height.
        public var x: Double, y: Double, width: Double, height: Double
        /// A region with its top-left corner at (`x`, `y`), all normalized to [0, 1].
        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// The crop in stored pixels for a normalized region (rounded to whole pixels, at least 1×1).
    public static func cropRect(_ roi: RegionOfInterest?, width: Int, height: Int) throws -> (x: Int, y: Int, width: Int, height: Int) {
        guard let roi else { return (0, 0, width, height) }
        guard roi.x.isFinite, roi.y.isFinite, roi.width.isFinite, roi.height.isFinite,
              roi.x >= 0, roi.y >= 0, roi.width > 0, roi.height > 0,
              roi.x + roi.width <= 1 + 1e-9, roi.y + roi.height <= 1 + 1e-9 else {
            throw VisionError(.invalidImage,
                "The region of interest (\(roi.x), \(roi.y), \(roi.width), \(roi.height)) must lie inside [0, 1] × [0, 1] with a positive size.")
        }
        let x0 = min(width - 1, Int((roi.x * Double(width)).rounded()))
        let y0 = min(height - 1, Int((roi.y * Double(height)).rounded()))
        let x1 = max(x0 + 1, min(width, Int(((roi.x + roi.width) * Double(width)).rounded())))
        let y1 = max(y0 + 1, min(height, Int(((roi.y + roi.height) * Double(height)).rounded())))
        return (x0, y0, x1 - x0, y1 - y0)
    }

    /// Writes `pixels` (shown with `orientation`, cropped to `roi`) into the input tensor.
    public static func write(_ pixels: PixelBuffer, orientation: ImageOrientation = .up, roi: RegionOfInterest? = nil,
                             spec: ImageInputSpec, into interpreter: Interpreter) throws {
        try interpreter.withInputBuffer(at: spec.inputIndex) { buffer in
            try write(pixels, orientation: orientation, roi: roi, spec: spec, into: buffer)
        }
    }

    /// Writes into raw tensor memory of `spec`'s type and shape.
    public static func write(_ pixels: PixelBuffer, orientation: ImageOrientation = .up, roi: RegionOfInterest? = nil,
                             spec: ImageInputSpec, into buffer: UnsafeMutableRawBufferPointer) throws {
        let elementSize = spec.type == .float32 ? 4 : 1
        guard buffer.count >= spec.width * spec.height * spec.channels * elementSize, let base = buffer.baseAddress else {
            throw VisionError(.invalidImage, "The input tensor is smaller than \(spec.width)×\(spec.height)×\(spec.channels).")
        }
        let crop = try cropRect(roi, width: pixels.width, height: pixels.height)
        // Upright size of the crop.
        let upright = orientation.uprightSize(width: crop.width, height: crop.height)
        let xs = axis(input: upright.width, output: spec.width)
        let ys = axis(input: upright.height, output: spec.height)
        if let layout = PackedLayout(pixels.format) {
            writePacked(pixels, layout: layout, orientation: orientation, crop: crop, xs: xs, ys: ys, spec: spec, into: base)
            return
        }
        func sample(_ u: Int, _ v: Int) -> (Double, Double, Double) {
            let p = orientation.storedPixel(u: u, v: v, width: crop.width, height: crop.height)
            let (r, g, b) = pixels.rgb(crop.x + p.x, crop.y + p.y)
            return (Double(r), Double(g), Double(b))
        }
        let channels = spec.channels
        for oy in 0..<spec.height {
            let (y0, y1, fy) = ys[oy]
            for ox in 0..<spec.width {
                let (x0, x1, fx) = xs[ox]
                let p00 = sample(x0, y0), p01 = sample(x1, y0), p10 = sample(x0, y1), p11 = sample(x1, y1)
                let values = (blend(p00.0, p01.0, p10.0, p11.0, fx, fy), blend(p00.1, p01.1, p10.1, p11.1, fx, fy), blend(p00.2, p01.2, p10.2, p11.2, fx, fy))
                let index = (oy * spec.width + ox) * channels
                for c in 0..<channels {
                    let value: UInt8 = c == 0 ? values.0 : c == 1 ? values.1 : c == 2 ? values.2 : 255
                    switch spec.type {
                    case .uint8:
                        base.storeBytes(of: value, toByteOffset: index + c, as: UInt8.self)
                    case .int8:
                        base.storeBytes(of: Int8(Int(value) - 128), toByteOffset: index + c, as: Int8.self)
                    default:
                        let m = c < 3 ? spec.mean[c] : 0, s = c < 3 ? spec.std[c] : 1
                        base.storeBytes(of: (Float(value) - m) / s, toByteOffset: (index + c) * 4, as: Float.self)
                    }
                }
            }
        }
    }

    /// Where R, G and B sit in a pixel of a single-plane format, and its size in bytes.
    struct PackedLayout {
        let bytesPerPixel: Int, red: Int, green: Int, blue: Int

        init?(_ format: PixelFormat) {
            switch format {
            case .rgb8: (bytesPerPixel, red, green, blue) = (3, 0, 1, 2)
            case .rgba8: (bytesPerPixel, red, green, blue) = (4, 0, 1, 2)
            case .bgra8: (bytesPerPixel, red, green, blue) = (4, 2, 1, 0)
            case .gray8: (bytesPerPixel, red, green, blue) = (1, 0, 0, 0)
            default: return nil
            }
        }
    }

    /// The general path's arithmetic for single-plane formats, without a per-sample orientation
    /// and format switch: the stored byte address of upright pixel (u, v) of the crop is affine in
    /// u and v for every orientation, so each output row needs two row offsets and each column
    /// two precomputed column offsets. Same samples, same Double arithmetic: byte-identical.
    private static func writePacked(_ pixels: PixelBuffer, layout: PackedLayout, orientation: ImageOrientation,
                                    crop: (x: Int, y: Int, width: Int, height: Int),
                                    xs: [(Int, Int, Double)], ys: [(Int, Int, Double)],
                                    spec: ImageInputSpec, into base: UnsafeMutableRawPointer) {
        let bytesPerRow = pixels.planes[0].bytesPerRow, bpp = layout.bytesPerPixel
        func address(_ u: Int, _ v: Int) -> Int {
            let p = orientation.storedPixel(u: u, v: v, width: crop.width, height: crop.height)
            return (crop.y + p.y) * bytesPerRow + (crop.x + p.x) * bpp
        }
        let origin = address(0, 0), du = address(1, 0) - origin, dv = address(0, 1) - origin
        let columns0 = xs.map { $0.0 * du }, columns1 = xs.map { $0.1 * du }
        let start = UnsafePointer(pixels.row(0)) + origin
        let (red, green, blue) = (layout.red, layout.green, layout.blue)
        let channels = spec.channels
        let output8 = base.assumingMemoryBound(to: UInt8.self), outputF = base.assumingMemoryBound(to: Float.self)
        let mean = spec.mean, std = spec.std
        columns0.withUnsafeBufferPointer { c0 in
            columns1.withUnsafeBufferPointer { c1 in
                for oy in 0..<spec.height {
                    let (y0, y1, fy) = ys[oy]
                    let row0 = start + y0 * dv, row1 = start + y1 * dv
                    var index = oy * spec.width * channels
                    for ox in 0..<spec.width {
                        let fx = xs[ox].2
                        let p00 = row0 + c0[ox], p01 = row0 + c1[ox], p10 = row1 + c0[ox], p11 = row1 + c1[ox]
                        let r = blend(Double(p00[red]), Double(p01[red]), Double(p10[red]), Double(p11[red]), fx, fy)
                        let g = blend(Double(p00[green]), Double(p01[green]), Double(p10[green]), Double(p11[green]), fx, fy)
                        let b = blend(Double(p00[blue]), Double(p01[blue]), Double(p10[blue]), Double(p11[blue]), fx, fy)
                        for c in 0..<channels {
                            let value: UInt8 = c == 0 ? r : c == 1 ? g : c == 2 ? b : 255
                            switch spec.type {
                            case .uint8: output8[index + c] = value
                            case .int8: output8[index + c] = value ^ 0x80   // Int8(value - 128)'s bit pattern
                            default:
                                let m = c < 3 ? mean[c] : 0, s = c < 3 ? std[c] : 1
                                outputF[index + c] = (Float(value) - m) / s
                            }
                        }
                        index += channels
                    }
                }
            }
        }
    }

    /// Source indices and weight for each output position along one axis (the golden rule).
    static func axis(input: Int, output: Int) -> [(Int, Int, Double)] {
        (0..<output).map { x in
            if input == output { return (x, x, 0) }
            var s = ((Double(x) + 0.5) * Double(input)) / Double(output) - 0.5
            s = min(max(s, 0), Double(input - 1))
            let i0 = Int(s.rounded(.down))
            return (i0, min(i0 + 1, input - 1), s - Double(i0))
        }
    }

    @inline(__always)
    static func blend(_ p00: Double, _ p01: Double, _ p10: Double, _ p11: Double, _ fx: Double, _ fy: Double) -> UInt8 {
        let top = p00 * (1 - fx) + p01 * fx
        let bottom = p10 * (1 - fx) + p11 * fx
        let v = top * (1 - fy) + bottom * fy
        return UInt8(min(max((v + 0.5).rounded(.down), 0), 255))
    }
}
