import EdgeVision
import Foundation
import MediaIO

/// Drawing results on pictures for `--annotate`: label lists (label, classify), mask overlays
/// (segment) and where the pictures go.
enum Annotation {
    /// The colour of person masks drawn by `segment --annotate` (blended at ``maskAlpha``).
    static let maskColor = RGBAColor(red: 255, green: 0, blue: 200)
    static let maskAlpha = 0.5

    /// An upright rgb8 copy of stored pixels, to draw on.
    static func upright(_ pixels: PixelBuffer, _ orientation: ImageOrientation) throws -> PixelBuffer {
        try pixels.oriented(orientation, format: .rgb8)
    }

    /// Creates the output directory when several images are annotated.
    static func prepare(_ annotate: String, several: Bool) throws {
        guard several else { return }
        do {
            try FileManager.default.createDirectory(atPath: annotate, withIntermediateDirectories: true)
        } catch {
            throw CLIError("cannot create the --annotate directory '\(annotate)': \(error.localizedDescription)")
        }
    }

    /// `annotate` itself for one input; `annotate/<input name>.png` when several inputs are annotated.
    static func outputURL(_ annotate: String, input: String, several: Bool) -> URL {
        several
            ? URL(fileURLWithPath: annotate).appendingPathComponent(URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent + ".png")
            : URL(fileURLWithPath: annotate)
    }

    /// Writes an annotated picture (PNG, JPEG or WebP by the file's extension).
    static func write(_ pixels: PixelBuffer, to url: URL) throws {
        try ImageEncoder.write(pixels, to: url)
    }

    /// Text size for label boxes: about 1/22 of the image's shorter side, 12...48 pixels.
    static func textSize(width: Int, height: Int) -> Double {
        Double(max(12, min(48, min(width, height) / 22)))
    }

    /// Draws one label box per line, stacked down from the top-left corner: white text on a dark,
    /// mostly opaque box with a coloured bar on its left, so it reads on any picture. Lines that do
    /// not fit in the image's height are left out.
    static func drawLabelList(_ lines: [String], on canvas: Canvas) {
        let size = textSize(width: canvas.width, height: canvas.height)
        let pad = max(2, Int(size / 4)), bar = max(3, Int(size / 5)), margin = pad
        var y = margin
        for (i, text) in lines.enumerated() {
            let line = fit(text, width: canvas.width - 2 * margin - bar - 2 * pad, size: size)
            let measured = Canvas.textSize(line, size: size)
            let boxHeight = measured.height + 2 * pad
            guard y + boxHeight <= canvas.height else { break }
            let boxWidth = min(canvas.width - margin, bar + measured.width + 2 * pad)
            canvas.fill(Rect(x: Double(margin), y: Double(y), width: Double(boxWidth), height: Double(boxHeight)),
                        color: RGBAColor(red: 0, green: 0, blue: 0, alpha: 200))
            canvas.fill(Rect(x: Double(margin), y: Double(y), width: Double(bar), height: Double(boxHeight)), color: .palette(i))
            canvas.drawText(line, x: Double(margin + bar + pad), y: Double(y + pad), size: size, color: .white)
            y += boxHeight + max(1, pad / 2)
        }
    }

    /// `text`, shortened with "..." in the middle until it fits in `width` pixels (the score at its
    /// end stays readable).
    static func fit(_ text: String, width: Int, size: Double) -> String {
        guard Canvas.textSize(text, size: size).width > width else { return text }
        var head = Array(text.dropLast(5))
        let tail = String(text.suffix(5))
        while !head.isEmpty {
            head.removeLast()
            let candidate = String(head).trimmingCharacters(in: .whitespaces) + "..." + tail
            if Canvas.textSize(candidate, size: size).width <= width { return candidate }
        }
        return "..." + tail
    }

    /// "text 0.93", or "class INDEX 0.93" when the model has no label for it.
    static func labelLine(_ text: String?, index: Int, score: Float) -> String {
        let name = text.flatMap { $0.isEmpty ? nil : $0 } ?? "class \(index)"
        return "\(name) \(String(format: "%.2f", score))"
    }

    /// Blends a person mask over the upright picture in ``maskColor`` at 50% (× the confidence).
    static func overlay(_ mask: SegmentationMask, on canvas: Canvas) throws {
        try canvas.overlay(mask: mask.values, width: mask.width, height: mask.height, color: maskColor, alpha: maskAlpha)
    }
}

/// An annotated video being written: an MP4 at the input's frame rate (30 when the file declares
/// none), created at the first frame, whose size it takes. Used from one thread at a time (the
/// main thread, or the delivery queue of a live run).
final class AnnotatedVideo: @unchecked Sendable {
    let path: String
    let frameRate: Double
    private var writer: VideoWriter?

    init(path: String, frameRate: Double) {
        self.path = path
        self.frameRate = frameRate > 0 && frameRate.isFinite ? frameRate : 30
    }

    /// Frames written so far.
    var frameCount: Int { writer?.frameCount ?? 0 }

    func write(_ pixels: PixelBuffer) throws {
        if writer == nil { writer = try VideoWriter(path: path, width: pixels.width, height: pixels.height, frameRate: frameRate) }
        try writer?.write(pixels)
    }

    /// Completes the file.
    func finish() throws { try writer?.finish() }
}
