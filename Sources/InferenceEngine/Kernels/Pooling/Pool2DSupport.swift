import CKernels
import TFLiteFormat
import TensorCore

/// The geometry of AVERAGE_POOL_2D / MAX_POOL_2D, validated and precomputed at prepare time
/// (tensorflow/lite/kernels/pooling.cc GenericPrepare and padding.h ComputePaddingHeightWidth).
struct Pool2DGeometry: Sendable {
    let batches: Int, inputHeight: Int, inputWidth: Int, depth: Int
    let outputHeight: Int, outputWidth: Int
    let strideHeight: Int, strideWidth: Int
    let filterHeight: Int, filterWidth: Int
    /// Padding before the first row / column (TFLite's padding_values.height / width).
    let padTop: Int, padLeft: Int
    let activation: FusedActivation

    /// Checks the operator and sets the output shape. Quantized inputs must share the output's
    /// parameters (TFLite: scales within 1e-6, equal zero points).
    init(_ context: inout OpContext, types: Set<ElementType>) throws {
        try context.expect(inputs: 1, outputs: 1)
        guard case .pool2D(let options) = context.options else { throw context.fail("missing Pool2DOptions") }
        let input = try context.input(0)
        let output = context.outputs[0]
        try context.expect(input, type: types, "input")
        try context.expect(input, rank: 4, "input")
        guard output.type == input.type else {
            throw context.fail("output has type \(output.type) but the input has type \(input.type)")
        }
        if input.type != .float32, input.quantization?.isQuantized == true || output.quantization?.isQuantized == true {
            guard abs(input.scale - output.scale) <= 1e-6, input.zeroPoint == output.zeroPoint else {
                throw context.fail("input (scale \(input.scale), zero point \(input.zeroPoint)) and output (scale \(output.scale), zero point \(output.zeroPoint)) must have the same quantization parameters",
                                   code: .invalidQuantization)
            }
        }
        guard options.strideHeight > 0, options.strideWidth > 0 else {
            throw context.fail("strides (\(options.strideHeight), \(options.strideWidth)) must be positive")
        }
        guard options.filterHeight > 0, options.filterWidth > 0 else {
            throw context.fail("filter size (\(options.filterHeight), \(options.filterWidth)) must be positive")
        }
        switch options.activation {
        case .none, .relu, .relu6, .reluN1To1: break
        default: throw context.fail("fused activation \(options.activation) is not supported", code: .unsupportedOperator)
        }
        batches = input.shape[0]; inputHeight = input.shape[1]; inputWidth = input.shape[2]; depth = input.shape[3]
        strideHeight = options.strideHeight; strideWidth = options.strideWidth
        filterHeight = options.filterHeight; filterWidth = options.filterWidth
        activation = options.activation
        (outputHeight, padTop) = Self.outputSizeAndPadding(options.padding, inputHeight, filterHeight, strideHeight)
        (outputWidth, padLeft) = Self.outputSizeAndPadding(options.padding, inputWidth, filterWidth, strideWidth)
        context.outputs[0].shape = [batches, outputHeight, outputWidth, depth]
    }

    /// TFLite's ComputeOutSize and ComputePaddingWithOffset (dilation 1). A negative size (filter
    /// larger than the input with VALID) gives an empty output, as in TFLite.
    static func outputSizeAndPadding(_ padding: Padding, _ size: Int, _ filter: Int, _ stride: Int) -> (Int, Int) {
        var out: Int
        switch padding {
        case .same: out = (size + stride - 1) / stride
        case .valid: out = (size + stride - filter) / stride
        }
        if out < 0 { out = 0 }
        let total = max((out - 1) * stride + filter - size, 0)
        return (out, out == 0 ? 0 : total / 2)
    }

    /// The window of output position (y, x) clipped to the input: rows y0..<y1, columns x0..<x1.
    @inline(__always)
    func window(_ y: Int, _ x: Int) -> (y0: Int, y1: Int, x0: Int, x1: Int) {
        let originY = y * strideHeight - padTop, originX = x * strideWidth - padLeft
        return (originY + max(0, -originY), originY + min(filterHeight, inputHeight - originY),
                originX + max(0, -originX), originX + min(filterWidth, inputWidth - originX))
    }

    /// Whether every output position sees at least one input element (TFLite fails at run time
    /// otherwise).
    var everyWindowNonEmpty: Bool {
        for y in 0..<outputHeight {
            let w = window(y, 0)
            if w.y1 <= w.y0 { return false }
        }
        for x in 0..<outputWidth {
            let w = window(0, x)
            if w.x1 <= w.x0 { return false }
        }
        return true
    }
}

extension Pool2DGeometry {
    /// The CKernels float pooling kernel for this geometry (MAX_POOL_2D, or AVERAGE_POOL_2D when
    /// `average`), or nil when the shapes exceed the C kernels' 32-bit index arithmetic.
    func optimizedFloatKernel(isa: Int32, average: Bool, floatMin: Float, floatMax: Float) -> OptimizedPoolFloatKernel? {
        guard batches > 0 else { return nil }
        var g = ck_conv_geometry(inputHeight: inputHeight, inputWidth: inputWidth, inputChannels: depth,
                                 outputHeight: outputHeight, outputWidth: outputWidth, outputChannels: depth,
                                 filterHeight: 1, filterWidth: 1, strideHeight: strideHeight, strideWidth: strideWidth,
                                 dilationHeight: 1, dilationWidth: 1, padTop: padTop, padLeft: padLeft)
        g.k_h = Int32(clamping: filterHeight)
        g.k_w = Int32(clamping: filterWidth)
        guard g.fitsImageKernels else { return nil }
        return OptimizedPoolFloatKernel(isa: isa, geometry: g, batches: batches, pieces: max(1, min(outputHeight, 16)),
                                        floatMin: floatMin, floatMax: floatMax, average: average)
    }
}
