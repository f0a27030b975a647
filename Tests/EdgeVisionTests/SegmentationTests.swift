import EdgeVision
import Foundation
import MediaIO
import TestSupport
import VisionCore
import XCTest

/// Selfie segmentation: raw masks against LiteRT's goldens, full-size masks, orientation, stream
/// smoothing, model contract errors and background effects.
final class SegmentationTests: XCTestCase {
    /// One golden run: the image and LiteRT's output `[1, H, W, 1]`.
    struct MaskGolden {
        var model: String
        var image: String
        var imageFile: URL
        var width: Int
        var height: Int
        var values: [Float]
    }

    static let models = ["selfie_segmentation", "selfie_segmentation_landscape"]

    func goldens(_ model: String) throws -> [MaskGolden] {
        let directory = SharedData.goldens.appendingPathComponent(model)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") && $0 != "summary.json" }.sorted()
        return try files.map { file in
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent(file))) as? [String: Any])
            let output = try XCTUnwrap((json["outputs"] as? [[String: Any]])?.first)
            let shape = try XCTUnwrap(output["shape"] as? [Int])
            XCTAssertEqual(shape.count, 4)
            XCTAssertEqual(output["dtype"] as? String, "float32")
            let bytes = try Data(contentsOf: directory.appendingPathComponent(try XCTUnwrap(output["file"] as? String)))
            let values = bytes.withUnsafeBytes { raw in (0..<(raw.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) } }
            XCTAssertEqual(values.count, shape[1] * shape[2])
            return MaskGolden(model: model, image: try XCTUnwrap(json["image"] as? String),
                              imageFile: SharedData.root.appendingPathComponent(try XCTUnwrap(json["image_file"] as? String)),
                              width: shape[2], height: shape[1], values: values)
        }
    }

    func segmenter(_ configure: (SelfieSegmenterOptions) -> Void) throws -> Segmenter {
        let options = SelfieSegmenterOptions()
        configure(options)
        return try withSharedModels { try Segmenter.segmenter(options: options) }
    }

    func maxDifference(_ a: [Float], _ b: [Float]) -> Float {
        XCTAssertEqual(a.count, b.count)
        return zip(a, b).map { abs($0 - $1) }.max() ?? .infinity
    }

    // MARK: Raw masks against the goldens

    /// The raw-size mask of the original image equals LiteRT's output within 1e-3 per pixel, for
    /// the general and the landscape model, loaded as a local model and as the default model.
    func testRawMaskMatchesLiteRTGolden() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        var report: [String] = []
        for (model, variant) in zip(Self.models, [SelfieSegmenterOptions.ModelVariant.general, .landscape]) {
            let goldens = try goldens(model)
            XCTAssertGreaterThanOrEqual(goldens.count, 2, model)
            let local = try segmenter {
                $0.segmenterMode = .singleImage
                $0.shouldEnableRawSizeMask = true
                $0.localModel = LocalModel(url: SharedData.model("\(model).tflite"))
            }
            let byDefault = try segmenter {
                $0.segmenterMode = .singleImage
                $0.shouldEnableRawSizeMask = true
                $0.modelVariant = variant
            }
            for golden in goldens {
                let image = try VisionImage(contentsOf: golden.imageFile)
                let mask = try local.results(in: image)
                XCTAssertEqual(mask.width, golden.width, "\(model) \(golden.image)")
                XCTAssertEqual(mask.height, golden.height, "\(model) \(golden.image)")
                XCTAssertEqual(mask.bytesPerRow, golden.width * 4)
                let worst = maxDifference(mask.values, golden.values)
                XCTAssertLessThanOrEqual(worst, 1e-3, "\(model) \(golden.image)")
                XCTAssertTrue(mask.values.allSatisfy { (0...1).contains($0) })
                XCTAssertEqual(try byDefault.results(in: image), mask, "\(model): the default model is the same file")
                report.append("\(model) \(golden.image): max |d| \(worst), foreground \(mask.foregroundFraction)")
            }
        }
        print("Selfie segmentation vs LiteRT:\n" + report.joined(separator: "\n"))
    }

    // MARK: Full-size masks and orientation

    /// Bilinear resize with half-pixel centres, written independently (double precision).
    func upsample(_ mask: SegmentationMask, width: Int, height: Int) -> [Float] {
        func axis(_ input: Int, _ output: Int, _ i: Int) -> (Int, Int, Double) {
            let s = min(max((Double(i) + 0.5) * Double(input) / Double(output) - 0.5, 0), Double(input - 1))
            let lower = Int(s.rounded(.down))
            return (lower, min(lower + 1, input - 1), s - Double(lower))
        }
        var out = [Float](repeating: 0, count: width * height)
        for y in 0..<height {
            let (y0, y1, fy) = axis(mask.height, height, y)
            for x in 0..<width {
                let (x0, x1, fx) = axis(mask.width, width, x)
                func v(_ xx: Int, _ yy: Int) -> Double { Double(mask.values[yy * mask.width + xx]) }
                let top = v(x0, y0) * (1 - fx) + v(x1, y0) * fx
                let bottom = v(x0, y1) * (1 - fx) + v(x1, y1) * fx
                out[y * width + x] = Float(top * (1 - fy) + bottom * fy)
            }
        }
        return out
    }

    /// The default (full-size) mask has the upright image's size and equals the bilinear upsampling
    /// of the raw mask; the subscript reads it.
    func testFullSizeMaskIsBilinearUpsamplingOfTheRawMask() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        for model in Self.models {
            let raw = try segmenter { $0.segmenterMode = .singleImage; $0.shouldEnableRawSizeMask = true; $0.localModel = LocalModel(url: SharedData.model("\(model).tflite")) }
            let full = try segmenter { $0.segmenterMode = .singleImage; $0.localModel = LocalModel(url: SharedData.model("\(model).tflite")) }
            for name in ["sergey.png", "businessman_pixabay.jpeg"] {
                let image = try VisionImage(contentsOf: SharedData.image(name))
                let small = try raw.results(in: image)
                let large = try full.results(in: image)
                XCTAssertEqual(large.width, image.width)
                XCTAssertEqual(large.height, image.height)
                XCTAssertLessThanOrEqual(maxDifference(large.values, upsample(small, width: image.width, height: image.height)), 1e-5, "\(model) \(name)")
                XCTAssertEqual(large[x: 3, y: 5], large.values[5 * large.width + 3])
                XCTAssertEqual(large[x: -1, y: 0], 0)
                XCTAssertEqual(large[x: large.width, y: 0], 0)
            }
        }
    }

    /// The picture stored turned or mirrored (all 8 orientations), with the orientation that makes
    /// it upright again: the raw and full-size masks equal those of the original.
    func testAllOrientationsGiveTheMaskOfTheUprightImage() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let original = try ImageDecoder.decode(contentsOf: SharedData.image("businessman_pixabay.jpeg")).pixels
        let raw = try segmenter { $0.segmenterMode = .singleImage; $0.shouldEnableRawSizeMask = true }
        let full = try segmenter { $0.segmenterMode = .singleImage }
        let expectedRaw = try raw.results(in: VisionImage(buffer: original))
        let expectedFull = try full.results(in: VisionImage(buffer: original))
        XCTAssertGreaterThan(expectedFull.foregroundFraction, 0.05)
        for orientation in ImageOrientation.allCases {
            let stored = try original.oriented(orientation)
            let image = VisionImage(buffer: stored, orientation: try inverseOrientation(of: orientation))
            let rawMask = try raw.results(in: image)
            let fullMask = try full.results(in: image)
            XCTAssertEqual(fullMask.width, original.width, "\(orientation)")
            XCTAssertEqual(fullMask.height, original.height, "\(orientation)")
            XCTAssertLessThanOrEqual(maxDifference(rawMask.values, expectedRaw.values), 1e-5, "\(orientation)")
            XCTAssertLessThanOrEqual(maxDifference(fullMask.values, expectedFull.values), 1e-5, "\(orientation)")
        }
        // Without the orientation the mask is of the turned picture, not the upright one.
        let turned = try full.results(in: VisionImage(buffer: original.oriented(.right)))
        XCTAssertEqual(turned.width, original.height)
    }

    // MARK: Stream smoothing

    /// MediaPipe's uncertainty of a confidence, written out independently, with the documented
    /// exception: confident pixels (> 0.95 or < 0.05) are never held back.
    func uncertainty(_ p: Float) -> Float {
        if p > 0.95 || p < 0.05 { return 0 }
        let x = (p - 0.5) * (p - 0.5)
        return 1 - min(1, x * (5.68842 + x * (-0.748699 + x * (-57.8051 + x * (291.309 + x * -624.717)))))
    }

    func masks(_ segmenter: Segmenter, _ frames: [VisionImage]) throws -> [[Float]] {
        try frames.map { try segmenter.results(in: $0).values }
    }

    /// A still picture with fresh noise in every frame: stream mode changes less from frame to
    /// frame than single-image mode where the mask is uncertain; the first frame is not smoothed;
    /// single-image mode never smooths (a frame's mask does not depend on earlier frames).
    func testStreamSmoothingReducesFlickerOnAStaticScene() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let picture = try TestRGBImage.shared("sergey.png").cropped(x: 0, y: 0, width: 600, height: 600)
        var generator = SeededGenerator(seed: 2024)
        let frames = try (0..<8).map { _ in VisionImage(buffer: try picture.withNoise(amplitude: 24, generator: &generator).pixelBuffer()) }
        let single = try masks(segmenter { $0.segmenterMode = .singleImage; $0.shouldEnableRawSizeMask = true }, frames)
        let stream = try masks(segmenter { $0.shouldEnableRawSizeMask = true }, frames)
        XCTAssertEqual(stream[0], single[0], "nothing to smooth with in the first frame")
        // Single-image mode: the last frame alone gives the same mask as after the sequence.
        let fresh = try segmenter { $0.segmenterMode = .singleImage; $0.shouldEnableRawSizeMask = true }.results(in: frames[7])
        XCTAssertEqual(fresh.values, single[7])

        var singleChange: Double = 0, streamChange: Double = 0, count = 0
        for t in 1..<frames.count {
            for i in single[t].indices where single[t][i] >= 0.05 && single[t][i] <= 0.95 {
                singleChange += Double(abs(single[t][i] - single[t - 1][i]))
                streamChange += Double(abs(stream[t][i] - stream[t - 1][i]))
                count += 1
            }
        }
        XCTAssertGreaterThan(count, 500, "the noisy frames have uncertain pixels")
        print("Static scene with noise: mean frame-to-frame change of uncertain pixels: single \(singleChange / Double(count)), stream \(streamChange / Double(count)) over \(count) pixel-frames")
        XCTAssertLessThan(streamChange, 0.8 * singleChange)
        // Each stream mask is the documented rule applied to the single-image mask and the previous
        // stream mask.
        for t in 1..<frames.count {
            var worst: Float = 0
            for i in single[t].indices {
                let p = single[t][i]
                let expected = p + (stream[t - 1][i] - p) * uncertainty(p) * 0.7
                worst = max(worst, abs(stream[t][i] - expected))
            }
            XCTAssertLessThanOrEqual(worst, 1e-5, "frame \(t)")
        }
    }

    /// The person moves (the picture shifts 8 px per frame): confident pixels of the current frame
    /// (> 0.95 or < 0.05) are exactly the single-image values (never held back), so the mask
    /// follows the motion; `reset()` starts over; ratio 0 means no smoothing.
    func testStreamSmoothingNeverHoldsBackConfidentPixels() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let picture = try TestRGBImage.shared("businessman_pixabay.jpeg")
        let frames = try (0..<6).map { VisionImage(buffer: try picture.shifted(dx: 8 * $0, dy: 0).pixelBuffer()) }
        let single = try masks(segmenter { $0.segmenterMode = .singleImage; $0.shouldEnableRawSizeMask = true }, frames)
        let streamer = try segmenter { $0.shouldEnableRawSizeMask = true; $0.smoothingRatio = 0.9 }
        let stream = try masks(streamer, frames)
        var confident = 0, moved = 0
        for t in 1..<frames.count {
            for i in single[t].indices where single[t][i] > 0.95 || single[t][i] < 0.05 {
                confident += 1
                if stream[t][i] != single[t][i] {
                    XCTFail("frame \(t) pixel \(i): confident \(single[t][i]) held back to \(stream[t][i])")
                    break
                }
                if abs(single[t][i] - single[t - 1][i]) > 0.9 { moved += 1 }
            }
        }
        XCTAssertGreaterThan(confident, 100_000)
        XCTAssertGreaterThan(moved, 200, "the motion flips pixels between confident background and person")
        // The foreground follows the person: its centroid moves like single-image mode's.
        func centroidX(_ values: [Float], width: Int) -> Double {
            var sum = 0.0, n = 0.0
            for (i, v) in values.enumerated() where v > 0.5 { sum += Double(i % width); n += 1 }
            return sum / max(n, 1)
        }
        let width = try streamer.results(in: frames[0]).width
        for t in 0..<frames.count {
            XCTAssertEqual(centroidX(stream[t], width: width), centroidX(single[t], width: width), accuracy: 0.5, "frame \(t)")
        }
        // reset() forgets the previous frame.
        streamer.reset()
        XCTAssertEqual(try streamer.results(in: frames[3]).values, single[3])
        // Ratio 0: stream mode equals single-image mode.
        let unsmoothed = try masks(segmenter { $0.shouldEnableRawSizeMask = true; $0.smoothingRatio = 0 }, frames)
        XCTAssertEqual(unsmoothed, single)
        // Full-size masks in stream mode are the upsampled smoothed raw masks.
        let fullStream = try segmenter { $0.smoothingRatio = 0.9 }
        for (t, frame) in frames.prefix(3).enumerated() {
            let mask = try fullStream.results(in: frame)
            let expected = upsample(SegmentationMask(width: width, height: stream[t].count / width, values: stream[t]), width: frame.width, height: frame.height)
            XCTAssertLessThanOrEqual(maxDifference(mask.values, expected), 1e-5, "frame \(t)")
        }
    }

    /// Options and model contract: invalid smoothing ratios and models that are not segmenters are
    /// typed errors; defaults are ML Kit's.
    func testOptionsAndModelContractErrors() throws {
        let options = SelfieSegmenterOptions()
        XCTAssertEqual(options.segmenterMode, .stream)
        XCTAssertFalse(options.shouldEnableRawSizeMask)
        XCTAssertEqual(options.smoothingRatio, 0.7)
        XCTAssertEqual(options.modelVariant, .general)
        for ratio: Float in [-0.1, 1.01, .nan, .infinity, -.infinity] {
            assertThrowsVisionError(try segmenter { $0.smoothingRatio = ratio }, .invalidOptions, contains: "smoothingRatio")
        }
        XCTAssertNoThrow(try segmenter { $0.smoothingRatio = 1 })
        XCTAssertNoThrow(try segmenter { $0.smoothingRatio = 0 })
        for classifier in ["mobilenet_v1_0.25_224_quant.tflite", "mobilenet_v1_0.25_224_1_metadata_1.tflite"] {
            assertThrowsVisionError(try segmenter { $0.localModel = LocalModel(url: SharedData.model(classifier)) }, .incompatibleModel, contains: "[1, H, W, 1]")
        }
        assertThrowsVisionError(try segmenter { $0.localModel = LocalModel(url: SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite")) },
                                .incompatibleModel, contains: "one output")
        assertThrowsVisionError(try segmenter { $0.localModel = LocalModel(path: "/nonexistent/selfie.tflite") }, .modelNotFound)
        let empty = try makeTemporaryDirectory()
        try withEnvironment(["EDGEVISION_MODELS": empty.path, "XDG_CACHE_HOME": empty.path]) {
            assertThrowsVisionError(try Segmenter.segmenter(options: SelfieSegmenterOptions()), .modelNotFound, contains: "selfie_segmentation.tflite")
        }
    }

    // MARK: Background effects

    /// A small picture and a hand-made mask: person (1) on the left, background (0) on the right,
    /// a ramp in between.
    func effectFixture() throws -> (image: VisionImage, pixels: TestRGBImage, mask: SegmentationMask) {
        var generator = SeededGenerator(seed: 5)
        let (width, height) = (48, 32)
        let pixels = TestRGBImage(width: width, height: height, bytes: (0..<(width * height * 3)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let values = (0..<(width * height)).map { i -> Float in
            let x = i % width
            return x < 16 ? 1 : x >= 32 ? 0 : Float(31 - x) / 16
        }
        return (VisionImage(buffer: try pixels.pixelBuffer()), pixels, SegmentationMask(width: width, height: height, values: values))
    }

    func rgba(_ buffer: PixelBuffer) throws -> [UInt8] {
        let converted = try buffer.converted(to: .rgba8)
        return converted.withUnsafeBytes { Array($0.prefix(converted.width * converted.height * 4)) }
    }

    /// Remove: the colours stay, alpha = mask × 255. Colour and image: pixels where the mask is 1
    /// keep the person, where it is 0 get the effect, in between the blend person·m + effect·(1−m).
    func testBackgroundEffectsRemoveColorAndImage() throws {
        let (image, pixels, mask) = try effectFixture()
        let count = mask.width * mask.height
        func mix(_ person: UInt8, _ background: UInt8, _ m: Float) -> Int {
            Int((Float(person) * m + Float(background) * (1 - m)).rounded())
        }

        let removed = try rgba(mask.apply(.remove, to: image))
        for i in 0..<count {
            XCTAssertEqual(Array(removed[(4 * i)..<(4 * i + 3)]), Array(pixels.bytes[(3 * i)..<(3 * i + 3)]))
            XCTAssertEqual(removed[4 * i + 3], UInt8((mask.values[i] * 255).rounded()))
        }

        let colored = try rgba(mask.apply(.color(red: 10, green: 200, blue: 30), to: image))
        for i in 0..<count {
            for (c, value) in [UInt8(10), 200, 30].enumerated() {
                let expected = mix(pixels.bytes[3 * i + c], value, mask.values[i])
                XCTAssertLessThanOrEqual(abs(Int(colored[4 * i + c]) - expected), 1, "pixel \(i) channel \(c)")
                if mask.values[i] == 1 { XCTAssertEqual(colored[4 * i + c], pixels.bytes[3 * i + c]) }
                if mask.values[i] == 0 { XCTAssertEqual(colored[4 * i + c], value) }
            }
            XCTAssertEqual(colored[4 * i + 3], 255)
        }

        // Background image of the same size, and one stretched from a smaller picture (nearest neighbour).
        var generator = SeededGenerator(seed: 9)
        let backdrop = TestRGBImage(width: mask.width, height: mask.height, bytes: (0..<(count * 3)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let replaced = try rgba(mask.apply(.image(backdrop.pixelBuffer()), to: image))
        for i in 0..<count {
            for c in 0..<3 {
                XCTAssertLessThanOrEqual(abs(Int(replaced[4 * i + c]) - mix(pixels.bytes[3 * i + c], backdrop.bytes[3 * i + c], mask.values[i])), 1)
            }
        }
        let tiny = TestRGBImage(width: 2, height: 2, bytes: [255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255])
        let stretched = try rgba(mask.apply(.image(tiny.pixelBuffer()), to: image))
        for (x, y, quadrant) in [(40, 3, 1), (47, 10, 1), (40, 20, 3), (45, 31, 3)] {
            let i = y * mask.width + x
            XCTAssertEqual(mask.values[i], 0)
            XCTAssertEqual(Array(stretched[(4 * i)..<(4 * i + 3)]), Array(tiny.bytes[(3 * quadrant)..<(3 * quadrant + 3)]), "(\(x), \(y))")
        }
        // A mask of another size (e.g. the raw size) is rejected.
        let raw = SegmentationMask(width: 16, height: 16, values: [Float](repeating: 1, count: 256))
        assertThrowsVisionError(try raw.apply(.remove, to: image), .invalidImage, contains: "shouldEnableRawSizeMask")
        assertThrowsVisionError(try mask.apply(.blur(radius: -1), to: image), .invalidOptions)
    }

    /// Blur: where the mask is 1 the person stays sharp; where it is 0 the pixel is the background
    /// blurred by three box-blur passes with clamped edges (computed here independently).
    func testBackgroundEffectBlur() throws {
        let (image, pixels, mask) = try effectFixture()
        let radius = 2
        let (width, height) = (mask.width, mask.height)
        var plane = pixels.bytes.map(Double.init)
        for _ in 0..<3 {
            var horizontal = plane
            for y in 0..<height { for x in 0..<width { for c in 0..<3 {
                var sum = 0.0
                for k in -radius...radius { sum += plane[(y * width + min(max(x + k, 0), width - 1)) * 3 + c] }
                horizontal[(y * width + x) * 3 + c] = sum / Double(2 * radius + 1)
            } } }
            for y in 0..<height { for x in 0..<width { for c in 0..<3 {
                var sum = 0.0
                for k in -radius...radius { sum += horizontal[(min(max(y + k, 0), height - 1) * width + x) * 3 + c] }
                plane[(y * width + x) * 3 + c] = sum / Double(2 * radius + 1)
            } } }
        }
        let blurred = try rgba(mask.apply(.blur(radius: radius), to: image))
        for i in 0..<(width * height) {
            for c in 0..<3 {
                let m = Double(mask.values[i])
                let expected = Double(pixels.bytes[3 * i + c]) * m + plane[3 * i + c].rounded() * (1 - m)
                XCTAssertLessThanOrEqual(abs(Double(blurred[4 * i + c]) - expected), 1.51, "pixel \(i) channel \(c)")
            }
        }
        // Radius 0 keeps the background as it is.
        let sharp = try rgba(mask.apply(.blur(radius: 0), to: image))
        for i in 0..<(width * height) { for c in 0..<3 { XCTAssertLessThanOrEqual(abs(Int(sharp[4 * i + c]) - Int(pixels.bytes[3 * i + c])), 1) } }
    }

    /// The effects on a real mask of a real photograph, and on a picture stored turned: the output
    /// is the upright image.
    func testBackgroundEffectsOnARealMask() throws {
        try XCTSkipIf(_isDebugAssertConfiguration(), "needs swift test -c release")
        let segmenter = try segmenter { $0.segmenterMode = .singleImage }
        let original = try ImageDecoder.decode(contentsOf: SharedData.image("sergey.png")).pixels
        let image = VisionImage(buffer: original)
        let mask = try segmenter.results(in: image)
        let pixels = try TestRGBImage(original)
        let colored = try rgba(mask.apply(.color(red: 0, green: 255, blue: 0), to: image))
        var person = 0, background = 0
        for i in 0..<(mask.width * mask.height) {
            let m = mask.values[i]
            let px = Array(colored[(4 * i)..<(4 * i + 3)]).map(Int.init), source = Array(pixels.bytes[(3 * i)..<(3 * i + 3)]).map(Int.init)
            if m >= 0.999 {
                person += 1
                XCTAssertLessThanOrEqual(zip(px, source).map { abs($0 - $1) }.max() ?? 0, 1)
            } else if m <= 0.001 {
                background += 1
                XCTAssertLessThanOrEqual(zip(px, [0, 255, 0]).map { abs($0 - $1) }.max() ?? 0, 1)
            }
        }
        XCTAssertGreaterThan(person, 50_000)
        XCTAssertGreaterThan(background, 20_000)
        // Turned storage with its orientation: same cut-out as the upright original.
        let turned = VisionImage(buffer: try original.oriented(.left), orientation: try inverseOrientation(of: .left))
        let turnedMask = try segmenter.results(in: turned)
        XCTAssertEqual(try rgba(turnedMask.apply(.remove, to: turned)), try rgba(mask.apply(.remove, to: image)))
    }
}
