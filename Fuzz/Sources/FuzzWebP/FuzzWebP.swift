// Fuzz target: ImageDecoder on WebP data (inputs without the WebP magic number get it prepended). Any
// input must decode to a complete pixel buffer or throw an ImageError.
import Foundation
import FuzzImageSupport
import FuzzSupport
import MediaIO

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    ImageFuzzing.run(data, size, as: .webp)
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    FuzzHarness.writeSeedsIfAsked { write in
        for (name, pixels) in try ImageFuzzing.seedImages() {
            write("\(name)-lossy.webp", Array(try ImageEncoder.webp(pixels, quality: 50)))
            write("\(name)-lossless.webp", Array(try ImageEncoder.webp(pixels, quality: nil)))
        }
    }
    return 0
}
