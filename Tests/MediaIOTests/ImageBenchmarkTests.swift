import Foundation
import MediaIO
import TestSupport
import TFLiteFormat
import VisionCore
import XCTest

/// Timing of decode + preprocess for a 12-megapixel camera JPEG. Prints only (no assertion on
/// time); skipped unless EDGEVISION_BENCH=1. Run it with scripts/bench-image.sh.
final class ImageBenchmarkTests: XCTestCase {
    /// Upscales bilinearly (written here, not MediaIO's code) to `width` × `height` rgb8.
    static func upscale(_ source: PixelBuffer, width: Int, height: Int) throws -> PixelBuffer {
        let src = try rgbBytes(source)
        let sw = source.width, sh = source.height
        var out = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            let fy = max(0, min(Double(sh - 1), (Double(y) + 0.5) * Double(sh) / Double(height) - 0.5))
            let y0 = Int(fy), y1 = min(y0 + 1, sh - 1), wy = fy - Double(y0)
            for x in 0..<width {
                let fx = max(0, min(Double(sw - 1), (Double(x) + 0.5) * Double(sw) / Double(width) - 0.5))
                let x0 = Int(fx), x1 = min(x0 + 1, sw - 1), wx = fx - Double(x0)
                for c in 0..<3 {
                    let top = Double(src[(y0 * sw + x0) * 3 + c]) * (1 - wx) + Double(src[(y0 * sw + x1) * 3 + c]) * wx
                    let bottom = Double(src[(y1 * sw + x0) * 3 + c]) * (1 - wx) + Double(src[(y1 * sw + x1) * 3 + c]) * wx
                    out[(y * width + x) * 3 + c] = UInt8(min(255, (top * (1 - wy) + bottom * wy).rounded()))
                }
            }
        }
        return try PixelBuffer(data: Data(out), width: width, height: height, format: .rgb8)
    }

    func testDecodeAndPreprocess4000x3000JPEG() throws {
        guard ProcessInfo.processInfo.environment["EDGEVISION_BENCH"] == "1" else {
            throw XCTSkip("Benchmark: run with EDGEVISION_BENCH=1 (scripts/bench-image.sh).")
        }
        let model = try TFLiteModel(contentsOfFile: SharedData.model("mobilenet_v2_1.0_224_quant.tflite").path)
        let spec = try ImageInputSpec(model: model, metadata: try model.metadata())
        XCTAssertEqual(spec.width, 224)
        let source = try ImageDecoder.decode(contentsOf: SharedData.image("kite_and_cold.jpg")).pixels
        let large = try Self.upscale(source, width: 4000, height: 3000)
        let jpeg = try ImageEncoder.jpeg(large, quality: 90)
        var tensor = [UInt8](repeating: 0, count: spec.width * spec.height * spec.channels * (spec.type == .float32 ? 4 : 1))

        var decodeTimes: [Double] = [], preprocessTimes: [Double] = []
        for _ in 0..<7 {
            let t0 = DispatchTime.now().uptimeNanoseconds
            let image = try ImageDecoder.decode(jpeg)
            let t1 = DispatchTime.now().uptimeNanoseconds
            try tensor.withUnsafeMutableBytes { buffer in
                try ImagePreprocessor.write(image.pixels, orientation: image.orientation, spec: spec, into: buffer)
            }
            let t2 = DispatchTime.now().uptimeNanoseconds
            decodeTimes.append(Double(t1 - t0) / 1e6)
            preprocessTimes.append(Double(t2 - t1) / 1e6)
        }
        func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
        func f(_ v: Double) -> String { String(format: "%.1f", v) }
        print("bench-image: 4000x3000 JPEG (\(jpeg.count / 1024) KiB, q90) → 224x224 \(spec.type): decode median \(f(median(decodeTimes))) ms (min \(f(decodeTimes.min() ?? 0))), preprocess median \(f(median(preprocessTimes))) ms (min \(f(preprocessTimes.min() ?? 0))), total median \(f(median(zip(decodeTimes, preprocessTimes).map { $0 + $1 }))) ms")
    }
}
