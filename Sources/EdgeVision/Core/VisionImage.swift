import Foundation
import MediaIO

/// An image for the ML Kit-style tasks (ML Kit's `VisionImage`).
///
/// On iOS it wraps a `UIImage` or a `CMSampleBuffer`; here it wraps a ``PixelBuffer`` (raw camera or
/// application pixels in RGBA, BGRA, RGB, grey, NV12, NV21 or I420), a decoded image, an image file
/// or encoded bytes. ``orientation`` has `UIImage.Orientation`'s meaning (all eight values, mirrored
/// included); results are reported in the coordinate space of the upright image.
public final class VisionImage: @unchecked Sendable {
    /// The stored pixels.
    public let pixelBuffer: PixelBuffer
    private let lock = NSLock()
    private var storedOrientation: ImageOrientation

    /// How the stored pixels must be turned to be upright. Defaults to `.up`, or to the EXIF
    /// orientation of a decoded JPEG.
    public var orientation: ImageOrientation {
        get { lock.lock(); defer { lock.unlock() }; return storedOrientation }
        set { lock.lock(); storedOrientation = newValue; lock.unlock() }
    }

    /// Wraps pixels (the `VisionImage(buffer:)` of iOS).
    public init(buffer: PixelBuffer, orientation: ImageOrientation = .up) {
        pixelBuffer = buffer
        storedOrientation = orientation
    }

    /// Wraps a decoded image, with the orientation its file asked for (the `VisionImage(image:)` of iOS).
    public init(image: DecodedImage) {
        pixelBuffer = image.pixels
        storedOrientation = image.orientation
    }

    /// Decodes an image file (JPEG, PNG, WebP, BMP).
    public convenience init(contentsOf url: URL, limits: ImageLimits = .default) throws {
        self.init(image: try ImageDecoder.decode(contentsOf: url, limits: limits))
    }

    /// Decodes encoded image bytes (JPEG, PNG, WebP, BMP).
    public convenience init(data: Data, limits: ImageLimits = .default) throws {
        self.init(image: try ImageDecoder.decode(data, limits: limits))
    }

    /// Width of the upright image.
    public var width: Int { orientation.uprightSize(width: pixelBuffer.width, height: pixelBuffer.height).width }
    /// Height of the upright image.
    public var height: Int { orientation.uprightSize(width: pixelBuffer.width, height: pixelBuffer.height).height }
}
