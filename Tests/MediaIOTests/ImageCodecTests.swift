import Foundation
import MediaIO
import TestSupport
import XCTest

/// Decoding the shared images and encode → decode round trips.
final class ImageCodecTests: XCTestCase {
    /// Every shared image and its size (from the files' headers).
    static let sharedImages: [(name: String, width: Int, height: Int)] = [
        ("bird.bmp", 512, 343), ("bird_segmentation.bmp", 513, 513), ("bird_segmentation_mask.bmp", 513, 513),
        ("burger.jpg", 480, 325), ("businessman_pixabay.jpeg", 399, 640), ("cat.bmp", 512, 341),
        ("cat_720p.jpg", 1280, 720), ("cats_and_dogs.jpg", 1200, 600), ("dragonfly.bmp", 512, 418),
        ("face.jpg", 512, 355), ("grace_hopper.bmp", 512, 600), ("hot_dog.jpg", 512, 384),
        ("kite_and_cold.jpg", 1352, 900), ("missvickie_potato_chips.bmp", 500, 500), ("multi_objects.jpg", 902, 358),
        ("pets.jpg", 512, 430), ("segmentation_golden_rotation0.png", 257, 257), ("segmentation_input_rotation0.jpg", 257, 257),
        ("sergey.png", 600, 600), ("squat.bmp", 500, 610), ("sunflower.bmp", 512, 340), ("table.jpg", 640, 480),
        ("traffic_0001.bmp", 256, 256), ("traffic_0002.bmp", 256, 256), ("traffic_0003.bmp", 256, 256),
        ("yoga_tree_pose_pixabay.jpeg", 426, 640),
    ]

    func testEverySharedImageDecodesToItsSize() throws {
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: SharedData.images.path)
            .filter { ["bmp", "jpg", "jpeg", "png", "webp"].contains(URL(fileURLWithPath: $0).pathExtension.lowercased()) }
        XCTAssertEqual(Set(onDisk), Set(Self.sharedImages.map(\.name)), "the list of shared images changed; update the table")
        for (name, width, height) in Self.sharedImages {
            let image = try ImageDecoder.decode(contentsOf: SharedData.image(name))
            XCTAssertEqual(image.pixels.width, width, name)
            XCTAssertEqual(image.pixels.height, height, name)
            let ext = URL(fileURLWithPath: name).pathExtension.lowercased()
            XCTAssertEqual(image.format, ext == "jpg" || ext == "jpeg" ? .jpeg : ext == "png" ? .png : .bmp, name)
            XCTAssertEqual(image.orientation, .up, name)  // none of them asks for a rotation
            // RGBA only where the file has alpha (sergey.png is RGBA).
            XCTAssertEqual(image.pixels.format, name == "sergey.png" ? .rgba8 : .rgb8, name)
            // Not all black: the pixels were really decoded.
            let bytes = try rgbBytes(image.pixels)
            XCTAssertGreaterThan(bytes.reduce(0) { $0 + Int($1) }, 0, name)
        }
    }

    func testBMPPaletteImageMatchesItsPalette() throws {
        // The 8-bit mask BMP is a palette image; decoding must give grey values or palette colours,
        // with more than one distinct value.
        let image = try ImageDecoder.decode(contentsOf: SharedData.image("bird_segmentation_mask.bmp"))
        let bytes = try rgbBytes(image.pixels)
        var distinct = Set<[UInt8]>()
        for i in stride(from: 0, to: bytes.count, by: 3 * 97) { distinct.insert(Array(bytes[i..<(i + 3)])) }
        XCTAssertGreaterThan(distinct.count, 1)
    }

    func testPNGRoundTripIsExact() throws {
        let source = try ImageDecoder.decode(contentsOf: SharedData.image("burger.jpg")).pixels
        let png = try ImageEncoder.png(source)
        let decoded = try ImageDecoder.decode(png)
        XCTAssertEqual(decoded.format, .png)
        XCTAssertEqual(decoded.pixels.format, .rgb8)
        XCTAssertEqual(try rgbBytes(decoded.pixels), try rgbBytes(source))

        // RGBA keeps its alpha.
        let rgba = try PixelBuffer(width: 7, height: 5, format: .rgba8)
        rgba.withUnsafeMutableBytes { raw in
            for i in 0..<raw.count { raw[i] = UInt8(truncatingIfNeeded: i * 37 + 11) }
        }
        let back = try ImageDecoder.decode(try ImageEncoder.png(rgba)).pixels
        XCTAssertEqual(back.format, .rgba8)
        XCTAssertEqual(back.withUnsafeBytes { Array($0) }, rgba.withUnsafeBytes { Array($0) })

        // gray8 stays grey, and a padded buffer is written without its padding.
        let gray = try PixelBuffer(data: Data((0..<(6 * 4)).map { UInt8($0 * 10) }), width: 5, height: 4, format: .gray8, bytesPerRow: [6])
        let grayBack = try ImageDecoder.decode(try ImageEncoder.png(gray)).pixels
        XCTAssertEqual(try rgbBytes(grayBack), try rgbBytes(gray))
    }

    func testJPEGRoundTripIsClose() throws {
        let source = try ImageDecoder.decode(contentsOf: SharedData.image("grace_hopper.bmp")).pixels
        let jpeg = try ImageEncoder.jpeg(source, quality: 95)
        let decoded = try ImageDecoder.decode(jpeg)
        XCTAssertEqual(decoded.format, .jpeg)
        XCTAssertEqual(decoded.pixels.width, source.width)
        XCTAssertEqual(decoded.pixels.height, source.height)
        let a = try rgbBytes(source), b = try rgbBytes(decoded.pixels)
        let meanError = Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
        XCTAssertLessThan(meanError, 3.0, "JPEG q95 should be close to the original")
        // Lower quality gives a smaller file.
        XCTAssertLessThan(try ImageEncoder.jpeg(source, quality: 30).count, jpeg.count)
        assertImageError(.invalidArgument) { try ImageEncoder.jpeg(source, quality: 0) }
        assertImageError(.invalidArgument) { try ImageEncoder.jpeg(source, quality: 101) }
    }

    func testWebPRoundTrip() throws {
        let source = try ImageDecoder.decode(contentsOf: SharedData.image("traffic_0001.bmp")).pixels
        let lossless = try ImageEncoder.webp(source, quality: nil)
        let decoded = try ImageDecoder.decode(lossless)
        XCTAssertEqual(decoded.format, .webp)
        XCTAssertEqual(try rgbBytes(decoded.pixels), try rgbBytes(source))
        let lossy = try ImageDecoder.decode(try ImageEncoder.webp(source, quality: 90)).pixels
        let a = try rgbBytes(source), b = try rgbBytes(lossy)
        let meanError = Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(a.count)
        XCTAssertLessThan(meanError, 6.0)
    }

    func testWriteByExtension() throws {
        let pixels = try makeRGB(width: 9, height: 4) { x, y in (UInt8(x * 20), UInt8(y * 50), 7) }
        for ext in ["png", "jpg", "webp"] {
            let url = temporaryFile("write.\(ext)")
            defer { try? FileManager.default.removeItem(at: url) }
            try ImageEncoder.write(pixels, to: url)
            let back = try ImageDecoder.decode(contentsOf: url)
            XCTAssertEqual(back.pixels.width, 9, ext)
            XCTAssertEqual(back.pixels.height, 4, ext)
        }
        assertImageError(.invalidArgument) { try ImageEncoder.write(pixels, to: temporaryFile("x.gif")) }
        assertImageError(.io) { try ImageEncoder.write(pixels, to: URL(fileURLWithPath: "/nonexistent-dir-\(UUID().uuidString)/x.png")) }
        assertImageError(.io) { try ImageDecoder.decode(contentsOf: URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString).png")) }
    }
}
