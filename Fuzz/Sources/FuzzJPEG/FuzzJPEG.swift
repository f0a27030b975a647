// Fuzz target: ImageDecoder on JPEG data (inputs without the JPEG magic number get it prepended). Any
// input must decode to a complete pixel buffer or throw an ImageError.
import Foundation
import FuzzImageSupport
import FuzzSupport
import MediaIO

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    ImageFuzzing.run(data, size, as: .jpeg)
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    FuzzHarness.writeSeedsIfAsked { write in
        for (name, pixels) in try ImageFuzzing.seedImages() {
            for quality in [10, 90] { write("\(name)-q\(quality).jpg", Array(try ImageEncoder.jpeg(pixels, quality: quality))) }
        }
    }
    return 0
}
