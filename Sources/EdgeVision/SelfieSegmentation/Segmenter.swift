import Dispatch
import Foundation
import InferenceEngine
import MediaIO
import TensorCore
import VisionCore

/// Options of the selfie segmenter (ML Kit's `SelfieSegmenterOptions`).
public final class SelfieSegmenterOptions: @unchecked Sendable {
    /// How successive calls relate (ML Kit's `SegmenterMode`).
    public enum SegmenterMode: Sendable, Hashable {
        /// Successive frames of a video or camera: masks are smoothed over frames (default).
        case stream
        /// Independent images: no smoothing.
        case singleImage
    }

    /// Which of MediaPipe's selfie models to use when no ``localModel`` is given.
    public enum ModelVariant: Sendable, Hashable {
        /// 256×256 input: the default, as in ML Kit.
        case general
        /// 144×256 input, for landscape video.
        case landscape

        var fileName: String {
            switch self {
            case .general: return "selfie_segmentation.tflite"
            case .landscape: return "selfie_segmentation_landscape.tflite"
            }
        }
    }

    /// Stream (default, smoothed over frames) or single-image mode.
    public var segmenterMode: SegmenterMode = .stream
    /// When true the mask has the model's output size (e.g. 256×256) instead of the image's size.
    public var shouldEnableRawSizeMask = false
    /// Beyond ML Kit: how strongly stream mode blends in the previous frame where the current mask
    /// is uncertain (MediaPipe's `combine_with_previous_ratio`, 0 = no smoothing, 1 = strongest).
    /// Default 0.7. Confident pixels (current confidence above 0.95 or below 0.05) are never held
    /// back: they are taken as they are, so the mask follows a moving person.
    public var smoothingRatio: Float = 0.7
    /// The default model variant (found by file name in the model directory).
    public var modelVariant: ModelVariant = .general
    /// Any compatible segmentation model instead of the default (output `[1, H, W, 1]` confidence
    /// or `[1, H, W, 2]` background/person scores).
    public var localModel: LocalModel?
    /// Queue of `process(_:completion:)` completions (main by default, as in ML Kit).
    public var callbackQueue: DispatchQueue = .main

    /// The defaults: stream mode, full-size masks, the general model.
    public init() {}
}

/// A one-channel Float32 mask: the foreground (person) confidence in [0, 1] per pixel
/// (ML Kit's `SegmentationMask`, whose buffer is a OneComponent32Float pixel buffer).
public struct SegmentationMask: Sendable, Hashable {
    /// Mask width in pixels.
    public let width: Int
    /// Mask height in pixels.
    public let height: Int
    /// Row-major confidences, `width * height` values.
    public let values: [Float]
    /// Bytes per row of ``values`` (rows are tightly packed).
    public var bytesPerRow: Int { width * MemoryLayout<Float>.size }

    /// A mask of `width` × `height` confidences, row-major.
    public init(width: Int, height: Int, values: [Float]) {
        self.width = width
        self.height = height
        self.values = values
    }

    /// The confidence at (x, y); 0 outside the mask.
    public subscript(x x: Int, y y: Int) -> Float {
        guard x >= 0, y >= 0, x < width, y < height else { return 0 }
        return values[y * width + x]
    }

    /// Fraction of pixels with confidence > 0.5.
    public var foregroundFraction: Double {
        values.isEmpty ? 0 : Double(values.lazy.filter { $0 > 0.5 }.count) / Double(values.count)
    }

    /// Bilinear resize with half-pixel centres (the rule used for full-size masks), in Float:
    /// per axis `s = (x + 0.5) * in / out - 0.5` clamped to `[0, in - 1]`, `i0 = floor(s)`,
    /// `f = s - i0`; `top = p[y0][x0] + (p[y0][x1] - p[y0][x0]) * fx`, the same for `bottom` on row
    /// `y1`, and `top + (bottom - top) * fy`. The horizontal blends depend only on the source row,
    /// so they are computed once per source row (two rows kept, reused by the output rows that
    /// share them); the arithmetic and its order are unchanged. Values missing from a short
    /// ``values`` array read as 0.
    public func resized(width newWidth: Int, height newHeight: Int) -> SegmentationMask {
        guard newWidth > 0, newHeight > 0, width > 0, height > 0 else { return SegmentationMask(width: max(newWidth, 0), height: max(newHeight, 0), values: []) }
        if newWidth == width, newHeight == height { return self }
        func axis(_ input: Int, _ output: Int) -> [(Int, Int, Float)] {
            (0..<output).map { x in
                var s = (Float(x) + 0.5) * Float(input) / Float(output) - 0.5
                s = min(max(s, 0), Float(input - 1))
                let i0 = Int(s)
                return (i0, min(i0 + 1, input - 1), s - Float(i0))
            }
        }
        let xs = axis(width, newWidth), ys = axis(height, newHeight)
        let count = width * height
        let source = values.count >= count ? values : values + [Float](repeating: 0, count: count - values.count)
        // Scratch: per column x0, x1 (Int) and fx (Float); two rows of horizontal blends.
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: 16 * newWidth + 4 * newWidth + 8 * newWidth, alignment: 16)
        defer { scratch.deallocate() }
        let column0 = scratch.bindMemory(to: Int.self, capacity: 2 * newWidth), column1 = column0 + newWidth
        let weights = (scratch + 16 * newWidth).bindMemory(to: Float.self, capacity: 3 * newWidth)
        let buffer0 = weights + newWidth, buffer1 = buffer0 + newWidth
        for (x, (x0, x1, fx)) in xs.enumerated() {
            column0[x] = x0
            column1[x] = x1
            weights[x] = fx
        }
        let out = [Float](unsafeUninitializedCapacity: newWidth * newHeight) { dst, initialized in
            guard let dst = dst.baseAddress else { return }
            source.withUnsafeBufferPointer { src in
                guard let src = src.baseAddress else { return }
                func blendRow(_ y: Int, into h: UnsafeMutablePointer<Float>) {
                    let row = src + y * width
                    for x in 0..<newWidth {
                        let a = row[column0[x]], b = row[column1[x]]
                        h[x] = a + (b - a) * weights[x]
                    }
                }
                var pair = BlendedRowPair(buffer0, buffer1)
                for (y, (y0, y1, fy)) in ys.enumerated() {
                    let (top, bottom) = pair.rows(y0, y1, blend: blendRow)
                    let row = dst + y * newWidth
                    for x in 0..<newWidth {
                        let t = top[x]
                        row[x] = t + (bottom[x] - t) * fy
                    }
                }
            }
            initialized = newWidth * newHeight
        }
        return SegmentationMask(width: newWidth, height: newHeight, values: out)
    }
}

/// Separates people from the background (ML Kit's `Segmenter` with selfie options).
///
/// Thread safety: single-image mode can be used from several threads at once. Stream mode keeps
/// the previous mask for smoothing, so its calls are serialized, and results depend on call order.
public final class Segmenter: @unchecked Sendable {
    let model: TaskModel
    let options: (mode: SelfieSegmenterOptions.SegmenterMode, rawSize: Bool, ratio: Float)
    let callbackQueue: DispatchQueue
    let outputIndex: Int
    let outputShape: (height: Int, width: Int, channels: Int)
    private let streamLock = NSLock()
    private var previous: [Float]?

    /// A segmenter with `options` (ML Kit's `Segmenter.segmenter(options:)`).
    ///
    /// - Throws: `VisionError`: the model is missing (`.modelNotFound`) or incompatible, or an option is invalid.
    public static func segmenter(options: SelfieSegmenterOptions) throws -> Segmenter {
        try Segmenter(options: options)
    }

    init(options: SelfieSegmenterOptions) throws {
        guard options.smoothingRatio.isFinite, (0...1).contains(options.smoothingRatio) else {
            throw VisionError(.invalidOptions, "smoothingRatio must be in [0, 1], got \(options.smoothingRatio).")
        }
        let path = try options.localModel?.path ?? ModelDirectory.locate(options.modelVariant.fileName)
        model = try TaskModel(path: path)
        guard model.engine.outputs.count == 1 else {
            throw VisionError(.incompatibleModel, "A segmentation model must have one output; this one has \(model.engine.outputs.count).")
        }
        let output = model.engine.outputs[0]
        let dims = output.shape.dimensions
        guard dims.count == 4, dims[0] == 1, dims[1] > 0, dims[2] > 0, dims[3] == 1 || dims[3] == 2 else {
            throw VisionError(.incompatibleModel,
                "The model's output '\(output.name)' has shape \(output.shape); a selfie segmentation model outputs [1, H, W, 1] (person confidence) or [1, H, W, 2] (background, person).")
        }
        guard [.float32, .uint8, .int8].contains(output.type) else {
            throw VisionError(.incompatibleModel, "The model's output has type \(output.type); expected float32, uint8 or int8.")
        }
        outputIndex = 0
        outputShape = (dims[1], dims[2], dims[3])
        self.options = (options.segmenterMode, options.shouldEnableRawSizeMask, options.smoothingRatio)
        callbackQueue = options.callbackQueue
    }

    /// Segments an image synchronously. The mask is aligned with the upright image; by default it
    /// has the image's (upright) size, upsampled bilinearly from the model output.
    public func results(in image: VisionImage) throws -> SegmentationMask {
        let orientation = image.orientation
        var raw = try model.withInterpreter { interpreter -> [Float] in
            try ImagePreprocessor.write(image.pixelBuffer, orientation: orientation, spec: model.imageInput, into: interpreter)
            interpreter.invoke()
            return try interpreter.outputFloats(at: outputIndex)
        }
        raw = foreground(raw)
        if options.mode == .stream, options.ratio > 0 {
            streamLock.lock()
            if let previous, previous.count == raw.count {
                Segmenter.smooth(&raw, previous: previous, ratio: options.ratio)
            }
            previous = raw
            streamLock.unlock()
        }
        let mask = SegmentationMask(width: outputShape.width, height: outputShape.height, values: raw)
        if options.rawSize { return mask }
        return mask.resized(width: image.width, height: image.height)
    }

    /// Person confidence per pixel: the single channel clamped to [0, 1], or for two channels the
    /// softmax probability of channel 1 (person).
    func foreground(_ raw: [Float]) -> [Float] {
        if outputShape.channels == 1 { return raw.map { min(max($0, 0), 1) } }
        return stride(from: 0, to: raw.count - 1, by: 2).map { i in
            let background = raw[i], person = raw[i + 1]
            let m = max(background, person)
            let eb = exp(background - m), ep = exp(person - m)
            return ep / (eb + ep)
        }
    }

    /// MediaPipe's SegmentationSmoothingCalculator rule: blend the previous mask in where the
    /// current one is uncertain. uncertainty = 1 - min(1, x·(c1 + x·(c2 + x·(c3 + x·(c4 + x·c5))))),
    /// x = (p - 0.5)²; out = p + (prev - p) · uncertainty · ratio. One deliberate difference:
    /// MediaPipe's polynomial still gives confident pixels some weight (0.08 at p = 0.95, 0.02 at
    /// 0.98), which holds a moving person's edge back; pixels above 0.95 or below 0.05 are kept
    /// exactly as they are.
    static func smooth(_ current: inout [Float], previous: [Float], ratio: Float) {
        let c1: Float = 5.68842, c2: Float = -0.748699, c3: Float = -57.8051, c4: Float = 291.309, c5: Float = -624.717
        for i in current.indices {
            let p = current[i]
            if p > 0.95 || p < 0.05 { continue }
            let t = p - 0.5
            let x = t * t
            let uncertainty = 1 - min(1, x * (c1 + x * (c2 + x * (c3 + x * (c4 + x * c5)))))
            current[i] = p + (previous[i] - p) * uncertainty * ratio
        }
    }

    /// Forgets the previous frame (start of a new stream).
    public func reset() {
        streamLock.lock()
        previous = nil
        streamLock.unlock()
    }

    /// Segments on a background queue; `completion` runs on the options' callback queue.
    public func process(_ image: VisionImage, completion: @escaping @Sendable (SegmentationMask?, Error?) -> Void) {
        let queue = callbackQueue
        DispatchQueue.global(qos: .userInitiated).async {
            do {
                let mask = try self.results(in: image)
                queue.async { completion(mask, nil) }
            } catch {
                queue.async { completion(nil, error) }
            }
        }
    }

    /// Segments without blocking the caller's thread.
    public func process(_ image: VisionImage) async throws -> SegmentationMask {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                do { continuation.resume(returning: try self.results(in: image)) } catch { continuation.resume(throwing: error) }
            }
        }
    }
}
