import Foundation
import MediaIO
import VisionCore

/// An image for the MediaPipe-style tasks (MediaPipe's `MPImage`).
///
/// From a ``PixelBuffer`` (raw pixels in any supported format), a decoded image, an image file or
/// encoded bytes. ``orientation`` says how the stored pixels must be turned to be upright
/// (`UIImage.Orientation` meaning). As in MediaPipe, mirrored orientations are rejected.
public final class MPImage: @unchecked Sendable {
    /// The stored pixels.
    public let pixelBuffer: PixelBuffer
    /// How the stored pixels must be turned to be upright (never a mirrored orientation).
    public let orientation: ImageOrientation

    /// MediaPipe's error text for mirrored orientations (MPPVisionTaskRunner.mm, verbatim).
    public static let mirroredOrientationMessage =
        "Unsupported UIImageOrientation. `imageOrientation` cannot be equal to any of the mirrored orientations "
        + "(`UIImageOrientationUpMirrored`,`UIImageOrientationDownMirrored`,`UIImageOrientationLeftMirrored`,`UIImageOrientationRightMirrored`)"

    /// Wraps pixels (MediaPipe's `MPImage(pixelBuffer:orientation:)`).
    ///
    /// - Throws: `VisionError` `.invalidImage` with ``mirroredOrientationMessage`` for a mirrored orientation.
    public init(pixelBuffer: PixelBuffer, orientation: ImageOrientation = .up) throws {
        guard !orientation.isMirrored else { throw VisionError(.invalidImage, MPImage.mirroredOrientationMessage) }
        self.pixelBuffer = pixelBuffer
        self.orientation = orientation
    }

    /// A decoded image; its EXIF orientation is used unless `orientation` is given.
    public convenience init(image: DecodedImage, orientation: ImageOrientation? = nil) throws {
        try self.init(pixelBuffer: image.pixels, orientation: orientation ?? image.orientation)
    }

    /// Decodes an image file (JPEG, PNG, WebP, BMP).
    public convenience init(contentsOf url: URL, orientation: ImageOrientation? = nil, limits: ImageLimits = .default) throws {
        try self.init(image: try ImageDecoder.decode(contentsOf: url, limits: limits), orientation: orientation)
    }

    /// Decodes encoded image bytes.
    public convenience init(data: Data, orientation: ImageOrientation? = nil, limits: ImageLimits = .default) throws {
        try self.init(image: try ImageDecoder.decode(data, limits: limits), orientation: orientation)
    }

    /// Width of the upright image.
    public var width: Int { orientation.uprightSize(width: pixelBuffer.width, height: pixelBuffer.height).width }
    /// Height of the upright image.
    public var height: Int { orientation.uprightSize(width: pixelBuffer.width, height: pixelBuffer.height).height }
}
