import TFLiteFormat
import TensorCore

/// RESIZE_NEAREST_NEIGHBOR (tensorflow/lite/kernels/resize_nearest_neighbor.cc) on NHWC tensors of
/// any fixed-size type, to the size in the constant int32 [2] input. The source index follows
/// reference GetNearestNeighbor: scale = in/out (or (in-1)/(out-1) with align_corners), offset 0.5
/// with half_pixel_centers, rounded half away from zero with align_corners else floored, clamped
/// to [0, in-1].
struct ResizeNearestNeighbor: Kernel {
    let batches: Int, inputHeight: Int, inputWidth: Int
    let outputHeight: Int, outputWidth: Int
    /// Bytes of one pixel (all channels).
    let pixelBytes: Int
    let sourceY: [Int], sourceX: [Int]

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        guard case .resizeNearestNeighbor(let options) = context.options else {
            throw context.fail("missing ResizeNearestNeighborOptions")
        }
        let input = try context.input(0)
        let elementSize = try ShapeSupport.elementSize(context, input, "input")
        try context.expect(input, rank: 4, "input")
        try ShapeSupport.expectSameType(context, input: input, output: context.outputs[0])
        let (outH, outW) = try ResizeSupport.outputSize(context, try context.input(1))
        let b = input.shape[0], inH = input.shape[1], inW = input.shape[2], c = input.shape[3]
        guard inH > 0 && inW > 0 else { throw context.fail("input shape \(Shape(input.shape)) has no pixels to resize") }
        context.outputs[0].shape = [b, outH, outW, c]
        func nearest(_ outSize: Int, _ inSize: Int) -> [Int] {
            let scale = options.alignCorners && outSize > 1
                ? Float(inSize - 1) / Float(outSize - 1) : Float(inSize) / Float(outSize)
            let offset: Float = options.halfPixelCenters ? 0.5 : 0
            return (0..<outSize).map { v in
                let scaled = (Float(v) + offset) * scale
                let r = options.alignCorners ? scaled.rounded(.toNearestOrAwayFromZero) : scaled.rounded(.down)
                var index = min(ResizeSupport.integer(r), inSize - 1)
                if options.halfPixelCenters { index = max(0, index) }
                return index
            }
        }
        return ResizeNearestNeighbor(batches: b, inputHeight: inH, inputWidth: inW, outputHeight: outH, outputWidth: outW,
                                     pixelBytes: c * elementSize, sourceY: nearest(outH, inH), sourceX: nearest(outW, inW))
    }

    func run(_ io: KernelIO) {
        let src = io.input(0), dst = io.output(0)
        guard pixelBytes > 0 else { return }
        io.parallel.forEach(batches * outputHeight) { row in
            let b = row / outputHeight, y = row % outputHeight
            let inputRow = src + (b * inputHeight + sourceY[y]) * inputWidth * pixelBytes
            var out = dst + row * outputWidth * pixelBytes
            for x in 0..<outputWidth {
                out.copyMemory(from: inputRow + sourceX[x] * pixelBytes, byteCount: pixelBytes)
                out += pixelBytes
            }
        }
    }
}
