import Foundation
import MediaIO
import TestSupport
import TFLiteFormat
import VisionCore
import XCTest

/// The preprocessor's single-plane path (affine addressing of the stored pixels) against the
/// straightforward per-sample computation — orientation mapping, `rgb(x, y)`, the golden half-pixel
/// bilinear rule in Double — for all eight orientations, four pixel formats, regions of interest,
/// odd sizes and uint8 / float32 inputs, byte for byte.
final class PreprocessingOrientationTests: XCTestCase {
    /// The original per-sample algorithm, kept here as the oracle.
    private func naive(_ pixels: PixelBuffer, _ orientation: ImageOrientation, _ crop: (x: Int, y: Int, width: Int, height: Int),
                       _ spec: ImageInputSpec) -> [UInt8] {
        func axis(_ input: Int, _ output: Int) -> [(Int, Int, Double)] {
            (0..<output).map { x in
                if input == output { return (x, x, 0) }
                var s = ((Double(x) + 0.5) * Double(input)) / Double(output) - 0.5
                s = min(max(s, 0), Double(input - 1))
                let i0 = Int(s.rounded(.down))
                return (i0, min(i0 + 1, input - 1), s - Double(i0))
            }
        }
        func blend(_ a: Double, _ b: Double, _ c: Double, _ d: Double, _ fx: Double, _ fy: Double) -> UInt8 {
            let v = (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy
            return UInt8(min(max((v + 0.5).rounded(.down), 0), 255))
        }
        let upright = orientation.uprightSize(width: crop.width, height: crop.height)
        let xs = axis(upright.width, spec.width), ys = axis(upright.height, spec.height)
        func sample(_ u: Int, _ v: Int) -> [Double] {
            let p = orientation.storedPixel(u: u, v: v, width: crop.width, height: crop.height)
            let (r, g, b) = pixels.rgb(crop.x + p.x, crop.y + p.y)
            return [Double(r), Double(g), Double(b)]
        }
        var out: [UInt8] = []
        for (y0, y1, fy) in ys {
            for (x0, x1, fx) in xs {
                let p00 = sample(x0, y0), p01 = sample(x1, y0), p10 = sample(x0, y1), p11 = sample(x1, y1)
                let rgb = (0..<3).map { blend(p00[$0], p01[$0], p10[$0], p11[$0], fx, fy) }
                for c in 0..<spec.channels {
                    let value = c < 3 ? rgb[c] : 255
                    if spec.type == .float32 {
                        let m = c < 3 ? spec.mean[c] : 0, s = c < 3 ? spec.std[c] : 1
                        out.append(contentsOf: withUnsafeBytes(of: (Float(value) - m) / s) { Array($0) })
                    } else {
                        out.append(spec.type == .int8 ? value ^ 0x80 : value)
                    }
                }
            }
        }
        return out
    }

    func testEveryOrientationFormatAndRegionMatchesThePerSampleComputation() throws {
        var rng = SeededGenerator(seed: 51)
        let (width, height) = (37, 23)
        let rgba = (0..<(width * height * 4)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let source = try rgba.withUnsafeBytes { try PixelBuffer(copying: $0, width: width, height: height, format: .rgba8) }
        let buffers = [source, try source.converted(to: .rgb8), try source.converted(to: .bgra8), try source.converted(to: .gray8)]
        var specs: [ImageInputSpec] = []
        for name in ["mobilenet_v2_1.0_224_quant.tflite", "mobilenet_v1_0.25_224_1_metadata_1.tflite"] {
            let model = try TFLiteModel(contentsOfFile: SharedData.model(name).path)
            specs.append(try ImageInputSpec(model: model, metadata: try model.metadata()))
        }
        let regions: [ImagePreprocessor.RegionOfInterest?] = [nil, .init(x: 0.2, y: 0.1, width: 0.5, height: 0.7)]
        var checked = 0
        for pixels in buffers {
            for orientation in ImageOrientation.allCases {
                for roi in regions {
                    for spec in specs {
                        let count = spec.width * spec.height * spec.channels * (spec.type == .float32 ? 4 : 1)
                        var ours = [UInt8](repeating: 0, count: count)
                        try ours.withUnsafeMutableBytes { buffer in
                            try ImagePreprocessor.write(pixels, orientation: orientation, roi: roi, spec: spec, into: buffer)
                        }
                        let crop = try ImagePreprocessor.cropRect(roi, width: width, height: height)
                        XCTAssertEqual(ours, naive(pixels, orientation, crop, spec), "\(pixels.format) \(orientation) \(String(describing: roi)) \(spec.type)")
                        checked += 1
                    }
                }
            }
        }
        XCTAssertEqual(checked, 4 * 8 * 2 * 2)
    }
}
