// Fuzz target: ImageDecoder on BMP data (inputs without the BMP magic number get it prepended). Any
// input must decode to a complete pixel buffer or throw an ImageError.
import Foundation
import FuzzImageSupport
import FuzzSupport
import MediaIO

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    ImageFuzzing.run(data, size, as: .bmp)
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    FuzzHarness.writeSeedsIfAsked { write in
        for (width, height) in [(1, 1), (3, 2), (16, 9)] {
            for bits in [24, 32] {
                for topDown in [false, true] {
                    write("\(width)x\(height)-\(bits)-\(topDown ? "down" : "up").bmp", ImageFuzzing.bmp(width: width, height: height, bitCount: bits, topDown: topDown))
                }
            }
        }
    }
    return 0
}
