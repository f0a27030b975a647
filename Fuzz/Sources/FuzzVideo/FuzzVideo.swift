// Fuzz target: VideoReader (FFmpeg demuxing + decoding behind a Swift wrapper) on arbitrary file
// contents. VideoReader reads files only (the file protocol is the only one it allows), so each input
// is written to a per-process temporary file. Any input must open and yield frames, or throw an
// ImageError; at most `maximumFrames` frames are decoded per input.
import Foundation
import FuzzImageSupport
import FuzzSupport
import MediaIO

let path = FileManager.default.temporaryDirectory.appendingPathComponent("edgevision-fuzz-video-\(getpid()).bin").path
let maximumFrames = 12

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes: data, count: size)) else {
        fputs("fuzz: cannot write \(path)\n", stderr)
        abort()
    }
    FuzzHarness.expect(ImageError.self) {
        let reader = try VideoReader(path: path, limits: ImageFuzzing.limits)
        var count = 0
        while count < maximumFrames, let frame = try reader.nextFrame() {
            let pixels = frame.pixels
            let plane = pixels.planes[0]
            let needed = plane.offset + (pixels.height - 1) * plane.bytesPerRow + pixels.width * 3
            guard pixels.format == .rgb8, pixels.byteCount >= needed else {
                fputs("fuzz: frame \(count) (\(pixels.width)x\(pixels.height) \(pixels.format)) needs \(needed) bytes, has \(pixels.byteCount)\n", stderr)
                abort()
            }
            _ = pixels.withUnsafeBytes { raw in raw.isEmpty ? 0 : Int(raw[0]) &+ Int(raw[raw.count - 1]) }
            count += 1
        }
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    atexit { unlink(path) }
    FuzzHarness.writeSeedsIfAsked { write in
        // Tiny MP4s (H.264 if the system's FFmpeg has libx264, else MPEG-4 part 2).
        for (width, height, frames) in [(16, 16, 3), (32, 18, 5)] {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("edgevision-fuzz-seed-\(getpid()).mp4").path
            let writer = try VideoWriter(path: file, width: width, height: height, frameRate: 10, quality: 20)
            for i in 0..<frames {
                let bytes = (0..<(width * height * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i &* 40) }
                try writer.write(try PixelBuffer(data: Data(bytes), width: width, height: height, format: .rgb8))
            }
            try writer.finish()
            write("\(width)x\(height)-\(frames)f-\(writer.codecName).mp4", Array(try Data(contentsOf: URL(fileURLWithPath: file))))
            unlink(file)
        }
    }
    return 0
}
