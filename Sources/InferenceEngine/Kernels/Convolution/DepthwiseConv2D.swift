import CKernels
import TFLiteFormat
import TensorCore

/// DEPTHWISE_CONV_2D: inputs [input NHWC, filter [1, Kh, Kw, Cin * depth_multiplier], optional bias].
///
/// Output channel `ic * depth_multiplier + m` convolves input channel `ic`. Semantics of TFLite's
/// reference kernels (reference/depthwiseconv_float.h, depthwiseconv_uint8.h and
/// integer_ops/depthwise_conv.h with per-channel int8 weights along dimension 3). The filter's
/// layout already has output channels innermost, so it is read in place.
struct DepthwiseConv2DKernel: Kernel {
    enum Kind: Sendable { case float32, uint8, int8 }

    let kind: Kind
    let batches: Int, inputHeight: Int, inputWidth: Int, inputChannels: Int
    let outputHeight: Int, outputWidth: Int, outputChannels: Int
    let filterHeight: Int, filterWidth: Int, depthMultiplier: Int
    let strideHeight: Int, strideWidth: Int, dilationHeight: Int, dilationWidth: Int
    let padTop: Int, padLeft: Int
    let floatMin: Float, floatMax: Float
    let inputOffset: Int32
    let filterOffset: Int32
    let requantizer: ConvRequantizer?
    let pieces: Int
    let accumulatorStride: Int

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2...3, outputs: 1...1)
        guard case .depthwiseConv2D(let options) = context.options else {
            throw context.fail("has no DepthwiseConv2DOptions")
        }
        let input = try context.input(0), filter = try context.input(1), bias = context.optionalInput(2)
        var output = context.outputs[0]
        try ConvolutionSupport.checkOperands(input: input, filter: filter, output: output,
                                             strides: (options.strideHeight, options.strideWidth),
                                             dilations: (options.dilationHeight, options.dilationWidth),
                                             activation: options.activation, context)

        let (batches, height, width, channels) = (input.shape[0], input.shape[1], input.shape[2], input.shape[3])
        let (kh, kw, outChannels) = (filter.shape[1], filter.shape[2], filter.shape[3])
        guard filter.shape[0] == 1 else {
            throw context.fail("filter has shape \(Shape(filter.shape)); a depthwise filter is [1, Kh, Kw, channels]")
        }
        guard kh > 0, kw > 0, channels > 0 else {
            throw context.fail("filter \(Shape(filter.shape)) and input \(Shape(input.shape)) must have positive kernel size and channels")
        }
        guard outChannels % channels == 0 else {
            throw context.fail("filter has \(outChannels) channels, not a multiple of the input's \(channels) channels")
        }
        let depthMultiplier = outChannels / channels
        // The option is redundant; TFLite checks it against the shapes (0 = not set).
        guard options.depthMultiplier == 0 || options.depthMultiplier == depthMultiplier else {
            throw context.fail("depth_multiplier is \(options.depthMultiplier) but the filter has \(outChannels) channels for \(channels) input channels")
        }
        if let bias { try ConvolutionSupport.checkBias(bias, inputType: input.type, count: outChannels, context) }

        let (outHeight, outWidth, padTop, padLeft) = try ConvolutionSupport.geometry(
            padding: options.padding, input: (height, width), filter: (kh, kw),
            strides: (options.strideHeight, options.strideWidth), dilations: (options.dilationHeight, options.dilationWidth), context)
        output.shape = [batches, outHeight, outWidth, outChannels]
        context.outputs[0] = output

        let kind: Kind = input.type == .float32 ? .float32 : (input.type == .uint8 ? .uint8 : .int8)
        var requantizer: ConvRequantizer?
        var inputOffset: Int32 = 0, filterOffset: Int32 = 0
        if kind != .float32 {
            let (multipliers, shifts) = try ConvolutionSupport.outputMultipliers(
                input: input, filter: filter, bias: bias, output: output, channels: outChannels, channelDimension: 3, context)
            inputOffset = -(try ConvolutionSupport.zeroPoint(input, "input", context))
            filterOffset = kind == .uint8 ? -(try ConvolutionSupport.zeroPoint(filter, "filter", context)) : 0
            let outputZeroPoint = try ConvolutionSupport.zeroPoint(output, "output", context)
            let range = FixedPoint.activationRange(options.activation, scale: output.scale, zeroPoint: outputZeroPoint, type: output.type)
            requantizer = ConvRequantizer(multipliers: multipliers, shifts: shifts, outputZeroPoint: outputZeroPoint,
                                          activationMin: range.min, activationMax: range.max)
        }
        let (floatMin, floatMax) = FixedPoint.activationRange(options.activation)
        if let isa = context.instructionSet, kind == .float32, depthMultiplier == 1 {
            let geometry = ck_conv_geometry(inputHeight: height, inputWidth: width, inputChannels: channels,
                                            outputHeight: outHeight, outputWidth: outWidth, outputChannels: outChannels,
                                            filterHeight: kh, filterWidth: kw, strideHeight: options.strideHeight, strideWidth: options.strideWidth,
                                            dilationHeight: options.dilationHeight, dilationWidth: options.dilationWidth,
                                            padTop: padTop, padLeft: padLeft)
            if geometry.fitsOptimizedKernels {
                return OptimizedDepthwiseFloatKernel(isa: isa, geometry: geometry, batches: batches, pieces: max(1, min(outHeight, 16)),
                                                     floatMin: floatMin, floatMax: floatMax, hasBias: bias != nil)
            }
        }
        // Quantized, depth multiplier 1, constant weights: CKernels (bit-exact, same rounding).
        if let isa = context.instructionSet, kind != .float32, depthMultiplier == 1, let data = filter.constant, let requantizer,
           bias == nil || bias?.constant != nil,
           let geometry = ck_conv_geometry.quantized(
               inputHeight: height, inputWidth: width, inputChannels: channels,
               outputHeight: outHeight, outputWidth: outWidth, outputChannels: outChannels,
               filterHeight: kh, filterWidth: kw, strideHeight: options.strideHeight, strideWidth: options.strideWidth,
               dilationHeight: options.dilationHeight, dilationWidth: options.dilationWidth, padTop: padTop, padLeft: padLeft),
           let fast = OptimizedQuantizedDepthwiseKernel(
               isa: isa, geometry: geometry, batches: batches, isSigned: kind == .int8, inputZeroPoint: -inputOffset,
               filterZeroPoint: -filterOffset, filter: data, bias: bias?.constant, requantizer: requantizer, work: context.work) {
            return fast
        }
        let pieces = max(1, min(batches * outHeight, 16))
        let accumulatorStride = kind == .float32 ? 0 : ConvolutionSupport.align(outChannels * 4) / 4
        context.scratchByteCount = pieces * accumulatorStride * 4

        return DepthwiseConv2DKernel(
            kind: kind, batches: batches, inputHeight: height, inputWidth: width, inputChannels: channels,
            outputHeight: outHeight, outputWidth: outWidth, outputChannels: outChannels,
            filterHeight: kh, filterWidth: kw, depthMultiplier: depthMultiplier,
            strideHeight: options.strideHeight, strideWidth: options.strideWidth,
            dilationHeight: options.dilationHeight, dilationWidth: options.dilationWidth,
            padTop: padTop, padLeft: padLeft, floatMin: floatMin, floatMax: floatMax,
            inputOffset: inputOffset, filterOffset: filterOffset, requantizer: requantizer,
            pieces: pieces, accumulatorStride: accumulatorStride)
    }

    func run(_ io: KernelIO) {
        guard batches * outputHeight * outputWidth * outputChannels > 0 else { return }
        switch kind {
        case .float32: runFloat(io)
        case .uint8: runQuantized(io, UInt8.self)
        case .int8: runQuantized(io, Int8.self)
        }
    }

    private func runFloat(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let filter = io.input(1, as: Float.self)
        let output = io.output(0, as: Float.self)
        let bias: UnsafePointer<Float>? = io.hasInput(2) ? io.input(2, as: Float.self) : nil
        let rows = batches * outputHeight
        io.parallel.forEach(pieces) { piece in
            for row in ConvolutionSupport.range(piece: piece, of: pieces, count: rows) {
                let n = row / outputHeight, oy = row % outputHeight
                let inputBatch = input + n * inputHeight * inputWidth * inputChannels
                let iy0 = oy * strideHeight - padTop
                for ox in 0..<outputWidth {
                    let out = output + (row * outputWidth + ox) * outputChannels
                    let ix0 = ox * strideWidth - padLeft
                    out.update(repeating: 0, count: outputChannels)
                    for ky in 0..<filterHeight {
                        let iy = iy0 + ky * dilationHeight
                        if iy < 0 || iy >= inputHeight { continue }
                        for kx in 0..<filterWidth {
                            let ix = ix0 + kx * dilationWidth
                            if ix < 0 || ix >= inputWidth { continue }
                            let pixel = inputBatch + (iy * inputWidth + ix) * inputChannels
                            let w = filter + (ky * filterWidth + kx) * outputChannels
                            if depthMultiplier == 1 {
                                for c in 0..<outputChannels { out[c] += pixel[c] * w[c] }
                            } else {
                                for ic in 0..<inputChannels {
                                    let v = pixel[ic]
                                    let o = ic * depthMultiplier
                                    for m in o..<(o + depthMultiplier) { out[m] += v * w[m] }
                                }
                            }
                        }
                    }
                    for c in 0..<outputChannels {
                        var v = out[c]
                        if let bias { v += bias[c] }
                        out[c] = Swift.min(Swift.max(v, floatMin), floatMax)
                    }
                }
            }
        }
    }

    private func runQuantized<T: FixedWidthInteger>(_ io: KernelIO, _ type: T.Type) {
        guard let requantizer, let scratch = io.scratch else { return }
        let input = io.input(0, as: T.self)
        let filter = io.input(1, as: T.self)
        let output = io.output(0, as: T.self)
        let bias: UnsafePointer<Int32>? = io.hasInput(2) ? io.input(2, as: Int32.self) : nil
        let accumulators = scratch.assumingMemoryBound(to: Int32.self)
        let rows = batches * outputHeight
        let inputOffset = self.inputOffset, filterOffset = self.filterOffset
        let inputOffset16 = Int16(truncatingIfNeeded: inputOffset), filterOffset16 = Int16(truncatingIfNeeded: filterOffset)
        io.parallel.forEach(pieces) { piece in
            let acc = accumulators + piece * accumulatorStride
            for row in ConvolutionSupport.range(piece: piece, of: pieces, count: rows) {
                let n = row / outputHeight, oy = row % outputHeight
                let inputBatch = input + n * inputHeight * inputWidth * inputChannels
                let iy0 = oy * strideHeight - padTop
                for ox in 0..<outputWidth {
                    let ix0 = ox * strideWidth - padLeft
                    acc.update(repeating: 0, count: outputChannels)
                    for ky in 0..<filterHeight {
                        let iy = iy0 + ky * dilationHeight
                        if iy < 0 || iy >= inputHeight { continue }
                        for kx in 0..<filterWidth {
                            let ix = ix0 + kx * dilationWidth
                            if ix < 0 || ix >= inputWidth { continue }
                            let pixel = inputBatch + (iy * inputWidth + ix) * inputChannels
                            let w = filter + (ky * filterWidth + kx) * outputChannels
                            if depthMultiplier == 1 {
                                // Both operands are within ±255: 16x16→32-bit products.
                                for c in 0..<outputChannels {
                                    let x = Int16(truncatingIfNeeded: pixel[c]) &+ inputOffset16
                                    let f = Int16(truncatingIfNeeded: w[c]) &+ filterOffset16
                                    acc[c] = acc[c] &+ Int32(x) &* Int32(f)
                                }
                            } else {
                                for ic in 0..<inputChannels {
                                    let x = Int32(truncatingIfNeeded: pixel[ic]) &+ inputOffset
                                    let o = ic * depthMultiplier
                                    for m in o..<(o + depthMultiplier) {
                                        acc[m] = acc[m] &+ x &* (Int32(truncatingIfNeeded: w[m]) &+ filterOffset)
                                    }
                                }
                            }
                        }
                    }
                    requantizer.store(acc, bias: bias, count: outputChannels,
                                      to: output + (row * outputWidth + ox) * outputChannels)
                }
            }
        }
    }
}
