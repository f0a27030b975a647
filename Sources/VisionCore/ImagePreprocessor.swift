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

    /// The general path's arithmetic for single-plane formats, restructured for speed but with
    /// the same samples and the same Double operations in the same order, so byte-identical:
    ///
    /// - the stored byte address of upright pixel (u, v) of the crop is affine in u and v for every
    ///   orientation, so each source row is one pointer and each output column two precomputed
    ///   byte offsets and its weights `(1 - fx, fx)`, side by side;
    /// - the horizontal blends `p[y][x0] * (1 - fx) + p[y][x1] * fx` depend only on the source row
    ///   `y` and the output column, so they are computed once per source row into a row of Doubles
    ///   (two rows are kept: consecutive output rows that share a source row reuse it);
    /// - each output row is then `top * (1 - fy) + bottom * fy` over two such rows, rounded half
    ///   up by ``roundHalfUp(_:)`` (a loop the compiler vectorizes), and written with one loop per
    ///   output type and channel count; float32 inputs look the value up in a 256-entry table per
    ///   channel holding `(Float(p) - mean) / std`, the same Float arithmetic;
    /// - bytes become Doubles through a 256-entry table (`Double(p)`, exact);
    /// - grey pixels are blended once and replicated to the three channels.
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
        let start = UnsafePointer(pixels.row(0)) + origin
        let width = spec.width, channels = spec.channels
        // Grey pixels: one blended plane, replicated; colour: R, G, B interleaved.
        let planes = layout.red == layout.green && layout.green == layout.blue ? 1 : 3
        let rowCount = width * planes
        let isFloat = spec.type != .uint8 && spec.type != .int8
        // Scratch, one allocation: per output column its two byte offsets and weights; Double(p)
        // for every byte p; two rows of horizontal blends (Double); for float32 inputs the three
        // 256-entry tables (Float); one row of rounded values (UInt8).
        let doubleCount = 256 + 2 * rowCount, tableCount = isFloat ? 3 * 256 : 0
        let columnBytes = MemoryLayout<Column>.stride * width
        let scratch = UnsafeMutableRawPointer.allocate(
            byteCount: columnBytes + 8 * doubleCount + 4 * tableCount + rowCount, alignment: 16)
        defer { scratch.deallocate() }
        let columns = scratch.bindMemory(to: Column.self, capacity: width)
        let toDouble = (scratch + columnBytes).bindMemory(to: Double.self, capacity: doubleCount)
        let buffer0 = toDouble + 256, buffer1 = buffer0 + rowCount
        let table = (scratch + columnBytes + 8 * doubleCount).bindMemory(to: Float.self, capacity: tableCount)
        let quantized = (scratch + columnBytes + 8 * doubleCount + 4 * tableCount).bindMemory(to: UInt8.self, capacity: rowCount)
        for ox in 0..<width {
            let (x0, x1, fx) = xs[ox]
            (columns + ox).initialize(to: Column(offset0: x0 * du, offset1: x1 * du, weight0: 1 - fx, weight1: fx))
        }
        for p in 0..<256 { toDouble[p] = Double(p) }
        if isFloat {
            // (Float(p) - mean[c]) / std[c] for every byte value p.
            for c in 0..<3 {
                let m = spec.mean[c], s = spec.std[c]
                for p in 0..<256 { table[c * 256 + p] = (Float(UInt8(p)) - m) / s }
            }
        }
        let alphaFloat: Float = (Float(UInt8(255)) - 0) / 1   // the fourth channel: 255, mean 0, std 1
        let flip: UInt8 = spec.type == .int8 ? 0x80 : 0       // int8: Int8(value - 128)'s bit pattern
        let (red, green, blue) = (layout.red, layout.green, layout.blue)

        /// The horizontal blends of upright source row `y`, into `h`.
        func blendRow(_ y: Int, into h: UnsafeMutablePointer<Double>) {
            let row = start + y * dv
            let r = row + red, g = row + green, b = row + blue
            if planes == 1 {
                for ox in 0..<width {
                    let column = columns[ox]
                    h[ox] = toDouble[Int(r[column.offset0])] * column.weight0 + toDouble[Int(r[column.offset1])] * column.weight1
                }
            } else {
                var out = h
                for ox in 0..<width {
                    let column = columns[ox]
                    let o0 = column.offset0, o1 = column.offset1, w0 = column.weight0, w1 = column.weight1
                    out[0] = toDouble[Int(r[o0])] * w0 + toDouble[Int(r[o1])] * w1
                    out[1] = toDouble[Int(g[o0])] * w0 + toDouble[Int(g[o1])] * w1
                    out[2] = toDouble[Int(b[o0])] * w0 + toDouble[Int(b[o1])] * w1
                    out += 3
                }
            }
        }

        var pair = BlendedRowPair(buffer0, buffer1)
        for oy in 0..<spec.height {
            let (y0, y1, fy) = ys[oy]
            // The blended source rows y0 and y1, each computed only when not already held.
            let (top, bottom) = pair.rows(y0, y1, blend: blendRow)
            // Vertical blend, rounded half up; straight into the output for uint8/int8 RGB.
            let wy0 = 1 - fy
            let index = oy * width * channels
            if !isFloat && planes == 3 && channels == 3 {
                let out = base.assumingMemoryBound(to: UInt8.self) + index
                for i in 0..<rowCount {
                    out[i] = roundHalfUp(top[i] * wy0 + bottom[i] * fy) ^ flip
                }
                continue
            }
            for i in 0..<rowCount {
                quantized[i] = roundHalfUp(top[i] * wy0 + bottom[i] * fy)
            }
            // The output row, one loop per type and channel layout.
            if isFloat {
                let out = base + 4 * index
                if planes == 3 && channels == 3 {
                    for i in 0..<width {
                        let q = quantized + 3 * i, o = out + 12 * i
                        o.storeBytes(of: table[Int(q[0])], as: Float.self)
                        o.storeBytes(of: table[256 + Int(q[1])], toByteOffset: 4, as: Float.self)
                        o.storeBytes(of: table[512 + Int(q[2])], toByteOffset: 8, as: Float.self)
                    }
                } else {
                    for i in 0..<width {
                        let o = out + 4 * channels * i
                        for c in 0..<3 {
                            let q = quantized[planes == 3 ? 3 * i + c : i]
                            o.storeBytes(of: table[c * 256 + Int(q)], toByteOffset: 4 * c, as: Float.self)
                        }
                        if channels == 4 { o.storeBytes(of: alphaFloat, toByteOffset: 12, as: Float.self) }
                    }
                }
            } else {
                let out = base.assumingMemoryBound(to: UInt8.self) + index
                if planes == 3 {
                    for i in 0..<width {
                        let q = quantized + 3 * i, o = out + channels * i
                        o[0] = q[0] ^ flip
                        o[1] = q[1] ^ flip
                        o[2] = q[2] ^ flip
                        if channels == 4 { o[3] = 255 ^ flip }
                    }
                } else {
                    for i in 0..<width {
                        let value = quantized[i] ^ flip, o = out + channels * i
                        o[0] = value
                        o[1] = value
                        o[2] = value
                        if channels == 4 { o[3] = 255 ^ flip }
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

    /// One output column of the packed path: the byte offsets of its two source pixels in a row
    /// and their weights `(1 - fx, fx)`.
    private struct Column {
        let offset0: Int, offset1: Int, weight0: Double, weight1: Double
    }

    /// `UInt8(min(max((v + 0.5).rounded(.down), 0), 255))` for every non-NaN `v`, without a call
    /// to `floor` or a checked conversion: with `t = v + 0.5` clamped to [0, 255.5], `t + 2^52`
    /// is `t` rounded to the nearest integer (exactly: its spacing there is 1), which sits in the
    /// low bits of its bit pattern; one less when that rounded up.
    @inline(__always)
    package static func roundHalfUp(_ v: Double) -> UInt8 {
        // floor(min(max(t, 0), 255.5)) = min(max(floor(t), 0), 255).
        let t = min(max(v + 0.5, 0), 255.5)
        let shifted = t + 0x1p52
        return UInt8(truncatingIfNeeded: shifted.bitPattern &- (shifted - 0x1p52 > t ? 1 : 0))
    }

    @inline(__always)
    static func blend(_ p00: Double, _ p01: Double, _ p10: Double, _ p11: Double, _ fx: Double, _ fy: Double) -> UInt8 {
        let top = p00 * (1 - fx) + p01 * fx
        let bottom = p10 * (1 - fx) + p11 * fx
        return roundHalfUp(top * (1 - fy) + bottom * fy)
    }
}
