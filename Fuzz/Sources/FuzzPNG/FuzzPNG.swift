// Fuzz target: ImageDecoder on PNG data (inputs without the PNG magic number get it prepended). Any
// input must decode to a complete pixel buffer or throw an ImageError.
import Foundation
import FuzzImageSupport
import FuzzSupport
import MediaIO

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    ImageFuzzing.run(data, size, as: .png)
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    FuzzHarness.writeSeedsIfAsked { write in
        for (name, pixels) in try ImageFuzzing.seedImages() { write("\(name).png", Array(try ImageEncoder.png(pixels))) }
    }
    return 0
}
