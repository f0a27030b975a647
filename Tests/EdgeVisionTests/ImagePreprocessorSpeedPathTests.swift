import EdgeVision
import Foundation
import MediaIO
import TensorCore
import TestSupport
import TFLiteFormat
import VisionCore
import XCTest

/// The optimized image-side paths against straightforward scalar implementations of their
/// documented rules, byte for byte:
/// - `ImagePreprocessor.write` on single-plane pixels (rgb8, rgba8, bgra8, gray8; padded rows)
///   against ../shared/reference/README.md §4 written out per output value: half-pixel
///   bilinear in Double without fused multiply-add, round half up, then uint8 `p`, int8 `p - 128`
///   or float32 `(Float(p) - mean) / std`; all eight orientations, regions of interest, upscaling,
///   downscaling and equal sizes, 3- and 4-channel inputs, mean/std other than 0/1;
/// - `SegmentationMask.resized` against the previous per-pixel Float formula.
final class ImagePreprocessorSpeedPathTests: XCTestCase {
    // MARK: Oracles

    /// The documented preprocessing rule, one output value at a time. `rgb` holds the stored
    /// image's R, G, B bytes (row-major, tightly packed), independent of the pixel format.
    private func reference(rgb: [UInt8], width: Int, height: Int, orientation: ImageOrientation,
                           crop: (x: Int, y: Int, width: Int, height: Int), spec: ImageInputSpec) -> [UInt8] {
        // The upright crop, as Doubles.
        let upright = orientation.uprightSize(width: crop.width, height: crop.height)
        var image = [[[Double]]](repeating: [[Double]](repeating: [0, 0, 0], count: upright.width), count: upright.height)
        for v in 0..<upright.height {
            for u in 0..<upright.width {
                let p = orientation.storedPixel(u: u, v: v, width: crop.width, height: crop.height)
                let i = ((crop.y + p.y) * width + crop.x + p.x) * 3
                image[v][u] = [Double(rgb[i]), Double(rgb[i + 1]), Double(rgb[i + 2])]
            }
        }
        func axis(_ x: Int, input: Int, output: Int) -> (Int, Int, Double) {
            if input == output { return (x, x, 0) }
            var s = ((Double(x) + 0.5) * Double(input)) / Double(output) - 0.5
            s = min(max(s, 0), Double(input - 1))
            let i0 = s.rounded(.down)
            return (Int(i0), min(Int(i0) + 1, input - 1), s - i0)
        }
        var out: [UInt8] = []
        for oy in 0..<spec.height {
            let (y0, y1, fy) = axis(oy, input: upright.height, output: spec.height)
            for ox in 0..<spec.width {
                let (x0, x1, fx) = axis(ox, input: upright.width, output: spec.width)
                for c in 0..<spec.channels {
                    var p: UInt8 = 255
                    if c < 3 {
                        let top = image[y0][x0][c] * (1 - fx) + image[y0][x1][c] * fx
                        let bottom = image[y1][x0][c] * (1 - fx) + image[y1][x1][c] * fx
                        let v = top * (1 - fy) + bottom * fy
                        p = UInt8(min(max((v + 0.5).rounded(.down), 0), 255))
                    }
                    switch spec.type {
                    case .uint8: out.append(p)
                    case .int8: out.append(UInt8(bitPattern: Int8(Int(p) - 128)))
                    default:
                        let mean: Float = c < 3 ? spec.mean[c] : 0, std: Float = c < 3 ? spec.std[c] : 1
                        let value = (Float(p) - mean) / std
                        withUnsafeBytes(of: value) { out.append(contentsOf: $0) }
                    }
                }
            }
        }
        return out
    }

    /// The previous `SegmentationMask.resized`, per output pixel.
    private func referenceResize(_ mask: SegmentationMask, width newWidth: Int, height newHeight: Int) -> [Float] {
        let (width, height, src) = (mask.width, mask.height, mask.values)
        func axis(_ input: Int, _ output: Int) -> [(Int, Int, Float)] {
            (0..<output).map { x in
                var s = (Float(x) + 0.5) * Float(input) / Float(output) - 0.5
                s = min(max(s, 0), Float(input - 1))
                let i0 = Int(s)
                return (i0, min(i0 + 1, input - 1), s - Float(i0))
            }
        }
        let xs = axis(width, newWidth), ys = axis(height, newHeight)
        var out = [Float](repeating: 0, count: newWidth * newHeight)
        for (y, (y0, y1, fy)) in ys.enumerated() {
            let r0 = y0 * width, r1 = y1 * width
            for (x, (x0, x1, fx)) in xs.enumerated() {
                let top = src[r0 + x0] + (src[r0 + x1] - src[r0 + x0]) * fx
                let bottom = src[r1 + x0] + (src[r1 + x1] - src[r1 + x0]) * fx
                out[y * newWidth + x] = top + (bottom - top) * fy
            }
        }
        return out
    }

    // MARK: Inputs

    /// An input contract read from a generated model with one image input `[1, height, width, channels]`.
    private func makeSpec(width: Int, height: Int, channels: Int, type: ElementType,
                          normalization: (mean: [Float], std: [Float])? = nil) throws -> ImageInputSpec {
        var b = TinyModelBuilder()
        let tensorType: Int8 = switch type {
        case .uint8: TinyModelBuilder.TensorType.uint8
        case .int8: TinyModelBuilder.TensorType.int8
        default: TinyModelBuilder.TensorType.float32
        }
        let input = b.addTensor("image", type: tensorType, shape: [1, Int32(height), Int32(width), Int32(channels)],
                                quantization: type == .float32 ? nil : .init(scale: 1, zeroPoint: type == .int8 ? -128 : 0))
        b.inputs = [input]
        b.outputs = [input]
        if let normalization {
            let metadata = TinyClassifier(width: width, height: height, inputType: .float32, normalization: normalization,
                                          heads: [], includesOutputMetadata: false).metadataBytes()
            b.addMetadata(name: "TFLITE_METADATA", data: metadata)
        }
        let model = try TFLiteModel(data: b.data)
        let spec = try ImageInputSpec(model: model, metadata: try model.metadata())
        XCTAssertEqual([spec.width, spec.height, spec.channels], [width, height, channels])
        XCTAssertEqual(spec.type, type)
        return spec
    }

    /// A stored image in `format` with rows padded by `padding` bytes, and its R, G, B bytes.
    private func makeImage(width: Int, height: Int, format: PixelFormat, padding: Int,
                           using rng: inout SeededGenerator) throws -> (PixelBuffer, [UInt8]) {
        let bytesPerPixel = format == .gray8 ? 1 : format == .rgb8 ? 3 : 4
        let bytesPerRow = width * bytesPerPixel + padding
        var bytes = [UInt8](repeating: 0, count: bytesPerRow * height)
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = (UInt8.random(in: 0...255, using: &rng), UInt8.random(in: 0...255, using: &rng), UInt8.random(in: 0...255, using: &rng))
                let i = y * bytesPerRow + x * bytesPerPixel, o = (y * width + x) * 3
                switch format {
                case .gray8:
                    bytes[i] = r
                    (rgb[o], rgb[o + 1], rgb[o + 2]) = (r, r, r)
                case .bgra8:
                    (bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]) = (b, g, r, UInt8.random(in: 0...255, using: &rng))
                    (rgb[o], rgb[o + 1], rgb[o + 2]) = (r, g, b)
                default:
                    (bytes[i], bytes[i + 1], bytes[i + 2]) = (r, g, b)
                    if format == .rgba8 { bytes[i + 3] = UInt8.random(in: 0...255, using: &rng) }
                    (rgb[o], rgb[o + 1], rgb[o + 2]) = (r, g, b)
                }
            }
        }
        let pixels = try bytes.withUnsafeBytes {
            try PixelBuffer(copying: $0, width: width, height: height, format: format, bytesPerRow: [bytesPerRow])
        }
        return (pixels, rgb)
    }

    // MARK: Tests

    func testPreprocessorMatchesTheDocumentedRuleByteForByte() throws {
        var rng = SeededGenerator(seed: 2026)
        let formats: [PixelFormat] = [.rgb8, .rgba8, .bgra8, .gray8]
        let normalizations: [(mean: [Float], std: [Float])] = [([127.5], [127.5]), ([0], [255]), ([123.675, 116.28, 103.53], [58.395, 57.12, 57.375]),
                                                              ([-3.25, 200, 0.1], [0.37, 1e-3, -41.5])]
        // (stored width, height) → (input width, height): downscale, upscale, mixed, equal, 1-pixel edges.
        let sizes: [((Int, Int), (Int, Int))] = [((37, 23), (16, 12)), ((13, 9), (40, 31)), ((50, 7), (9, 30)), ((17, 11), (17, 11)),
                                                  ((1, 1), (5, 3)), ((29, 1), (7, 4)), ((97, 61), (33, 47)), ((6, 5), (6, 11))]
        let regions: [ImagePreprocessor.RegionOfInterest?] = [nil, .init(x: 0.2, y: 0.1, width: 0.5, height: 0.7), .init(x: 0.6, y: 0.55, width: 0.4, height: 0.45)]
        var checked = 0
        for (sizeIndex, ((width, height), (inputWidth, inputHeight))) in sizes.enumerated() {
            var specs: [ImageInputSpec] = []
            for channels in [3, 4] {
                specs.append(try makeSpec(width: inputWidth, height: inputHeight, channels: channels, type: .uint8))
                specs.append(try makeSpec(width: inputWidth, height: inputHeight, channels: channels, type: .int8))
                specs.append(try makeSpec(width: inputWidth, height: inputHeight, channels: channels, type: .float32,
                                          normalization: normalizations[(sizeIndex + channels) % normalizations.count]))
            }
            for format in formats {
                let (pixels, rgb) = try makeImage(width: width, height: height, format: format, padding: sizeIndex % 3 * 5, using: &rng)
                for orientation in ImageOrientation.allCases {
                    for roi in regions {
                        let crop = try ImagePreprocessor.cropRect(roi, width: width, height: height)
                        for spec in specs {
                            let count = spec.width * spec.height * spec.channels * (spec.type == .float32 ? 4 : 1)
                            var ours = [UInt8](repeating: 0xA5, count: count)
                            try ours.withUnsafeMutableBytes { buffer in
                                try ImagePreprocessor.write(pixels, orientation: orientation, roi: roi, spec: spec, into: buffer)
                            }
                            let expected = reference(rgb: rgb, width: width, height: height, orientation: orientation, crop: crop, spec: spec)
                            if ours != expected {
                                let first = zip(ours, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1
                                XCTFail("\(width)x\(height) \(format) \(orientation) \(String(describing: roi)) → \(spec.width)x\(spec.height)x\(spec.channels) \(spec.type): first difference at byte \(first)")
                            }
                            checked += 1
                        }
                    }
                }
            }
        }
        XCTAssertEqual(checked, sizes.count * formats.count * 8 * regions.count * 6)
    }

    /// A real image and a real model contract: the burger through mobilenet_v1's float input.
    func testPreprocessorMatchesTheRuleOnARealImage() throws {
        let model = try TFLiteModel(contentsOfFile: SharedData.model("mobilenet_v1_0.25_224_1_metadata_1.tflite").path)
        let spec = try ImageInputSpec(model: model, metadata: try model.metadata())
        let decoded = try ImageDecoder.decode(contentsOf: SharedData.image("burger.jpg")).pixels
        let pixels = try decoded.converted(to: .rgb8)
        var rgb = [UInt8](repeating: 0, count: pixels.width * pixels.height * 3)
        for y in 0..<pixels.height {
            for x in 0..<pixels.width {
                let (r, g, b) = pixels.rgb(x, y)
                (rgb[(y * pixels.width + x) * 3], rgb[(y * pixels.width + x) * 3 + 1], rgb[(y * pixels.width + x) * 3 + 2]) = (r, g, b)
            }
        }
        for orientation in [ImageOrientation.up, .right, .downMirrored] {
            var ours = [UInt8](repeating: 0, count: spec.width * spec.height * spec.channels * 4)
            try ours.withUnsafeMutableBytes { try ImagePreprocessor.write(pixels, orientation: orientation, spec: spec, into: $0) }
            let crop = try ImagePreprocessor.cropRect(nil, width: pixels.width, height: pixels.height)
            XCTAssertTrue(ours == reference(rgb: rgb, width: pixels.width, height: pixels.height, orientation: orientation, crop: crop, spec: spec),
                          "\(orientation)")
        }
    }

    func testMaskResizeMatchesThePerPixelFormula() throws {
        var rng = SeededGenerator(seed: 7)
        let cases: [((Int, Int), (Int, Int))] = [((256, 256), (600, 600)), ((256, 256), (480, 325)), ((144, 256), (1080, 1920)),
                                                  ((37, 23), (16, 12)), ((13, 9), (40, 31)), ((50, 7), (9, 30)), ((1, 1), (5, 3)),
                                                  ((29, 1), (7, 4)), ((1, 17), (3, 40)), ((6, 5), (6, 11)), ((6, 5), (13, 5)), ((64, 64), (64, 63))]
        for ((width, height), (newWidth, newHeight)) in cases {
            let values = (0..<(width * height)).map { _ in Float.random(in: -0.25...1.25, using: &rng) }
            let mask = SegmentationMask(width: width, height: height, values: values)
            let ours = mask.resized(width: newWidth, height: newHeight)
            XCTAssertEqual(ours.width, newWidth)
            XCTAssertEqual(ours.height, newHeight)
            let expected = referenceResize(mask, width: newWidth, height: newHeight)
            XCTAssertTrue(ours.values.map(\.bitPattern) == expected.map(\.bitPattern), "\(width)x\(height) → \(newWidth)x\(newHeight)")
        }
        // Same size: unchanged; empty sizes: empty.
        let small = SegmentationMask(width: 2, height: 2, values: [0, 0.25, 0.5, 1])
        XCTAssertEqual(small.resized(width: 2, height: 2), small)
        XCTAssertEqual(small.resized(width: 0, height: 3).values, [])
        // A short values array reads as zeros instead of out of bounds.
        let short = SegmentationMask(width: 3, height: 2, values: [1, 1, 1])
        let padded = SegmentationMask(width: 3, height: 2, values: [1, 1, 1, 0, 0, 0])
        XCTAssertEqual(short.resized(width: 7, height: 5).values, padded.resized(width: 7, height: 5).values)
    }

    func testRoundHalfUpIsFloorOfVPlusOneHalf() {
        var rng = SeededGenerator(seed: 99)
        var values: [Double] = [0, 0.5, 254.5, 255, 255.49999999999997, 255.5, 256, 1e6, 0x1p60, .greatestFiniteMagnitude, .infinity,
                                -0.0, -0.25, -0.5, -0.75, -1, -1e6, -.infinity, .leastNonzeroMagnitude]
        for k in 0...256 {
            for base in [Double(k), Double(k) - 0.5, Double(k) + 0.5] where base >= 0 {
                values += [base, base.nextUp, base.nextDown].filter { $0 >= 0 }
            }
        }
        values += (0..<100_000).map { _ in Double.random(in: 0...255.5, using: &rng) }
        for v in values {
            XCTAssertEqual(ImagePreprocessor.roundHalfUp(v), UInt8(min(max((v + 0.5).rounded(.down), 0), 255)), "\(v)")
        }
    }
}
