import TFLiteFormat
import TensorCore

/// MediaPipe's custom op Convolution2DTransposeBias (mediapipe/util/tflite/operations/transpose_conv_bias.cc):
/// inputs [input NHWC float32, weights [Cout, Kh, Kw, Cin], bias [Cout]]. Its custom options are not
/// FlexBuffers but the raw bytes of `TfLiteTransposeConvParams`. Output size and padding follow
/// MediaPipe's own rule (not TRANSPOSE_CONV's), and outputs start from the bias.
extension TransposeConvKernel {
    /// MediaPipe's custom options: the raw bytes of `TfLiteTransposeConvParams`
    /// {int32 padding (0 unknown, 1 SAME, 2 VALID), int32 stride_width, int32 stride_height}.
    static func prepareMediaPipe(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 3...3, outputs: 1...1)
        let raw = context.customOptions
        guard raw.count >= 12 else {
            throw context.fail("custom options are \(raw.count) bytes; expected the 12-byte TfLiteTransposeConvParams (padding, stride_width, stride_height)")
        }
        let padding = Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: Int32.self))
        let strideWidth = Int(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: Int32.self)))
        let strideHeight = Int(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: Int32.self)))
        guard (0...2).contains(padding) else {
            throw context.fail("custom options have unknown padding \(padding) (expected 0, 1 = SAME or 2 = VALID)")
        }
        guard strideWidth > 0, strideHeight > 0 else {
            throw context.fail("strides must be positive, are \(strideHeight)x\(strideWidth)")
        }
        let input = try context.input(0), weights = try context.input(1), bias = try context.input(2)
        try context.expect(input, type: [.float32], "input")
        try context.expect(input, rank: 4, "input")
        try context.expect(weights, rank: 4, "weights")
        try context.expect(weights, type: [.float32], "weights")
        try context.expect(bias, rank: 1, "bias")
        var geometry = try commonGeometry(input: input, weights: weights, context)
        geometry.strideHeight = strideHeight
        geometry.strideWidth = strideWidth
        // MediaPipe: SAME removes max(0, filter - (in - 1) % stride - 1) from the full size and pads
        // half of it (rounded down) in front; any other padding value removes nothing.
        var totalHeight = 0, totalWidth = 0
        if padding == 1 {
            totalHeight = max(0, geometry.filterHeight - (geometry.inputHeight - 1) % strideHeight - 1)
            totalWidth = max(0, geometry.filterWidth - (geometry.inputWidth - 1) % strideWidth - 1)
        }
        geometry.outputHeight = strideHeight * (geometry.inputHeight - 1) + geometry.filterHeight - totalHeight
        geometry.outputWidth = strideWidth * (geometry.inputWidth - 1) + geometry.filterWidth - totalWidth
        guard geometry.outputHeight >= 0, geometry.outputWidth >= 0 else {
            throw context.fail("computes a negative output size \(geometry.outputHeight)x\(geometry.outputWidth)")
        }
        geometry.padTop = totalHeight / 2
        geometry.padLeft = totalWidth / 2
        return try make(&context, geometry: geometry, input: input, weights: weights, bias: bias, activation: .none,
                        inputIndex: 0, weightsIndex: 1, biasIndex: 2, biasFirst: true)
    }
}
