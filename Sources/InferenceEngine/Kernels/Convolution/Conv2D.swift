import CKernels
import TFLiteFormat
import TensorCore

/// CONV_2D: inputs [input NHWC, filter [Cout, Kh, Kw, Cin / groups], optional bias [Cout]].
///
/// Semantics of TFLite's reference kernels (reference/conv.h for float and uint8,
/// reference/integer_ops/conv.h for int8 with per-channel weights): taps outside the image are
/// skipped, quantized accumulation is `(input - input_zp) * (filter - filter_zp)` in int32, then
/// bias, MultiplyByQuantizedMultiplier, output zero point and the activation clamp. Grouped
/// convolution when the input has a multiple of the filter's input channels.
///
/// The weights are repacked to [group][Kh][Kw][Cin/groups][Cout/groups] so the inner loop runs over
/// contiguous output channels (each output is still summed in the reference order Kh, Kw, Cin, so
/// float results equal the reference kernel's).
struct Conv2DKernel: Kernel {
    enum Kind: Sendable { case float32, uint8, int8 }

    let kind: Kind
    let batches: Int, inputHeight: Int, inputWidth: Int, inputChannels: Int
    let outputHeight: Int, outputWidth: Int, outputChannels: Int
    let filterHeight: Int, filterWidth: Int, filterChannels: Int
    let groups: Int, outputsPerGroup: Int
    let strideHeight: Int, strideWidth: Int, dilationHeight: Int, dilationWidth: Int
    let padTop: Int, padLeft: Int
    let floatMin: Float, floatMax: Float
    /// Packed float weights (empty when the weights are not constant: then packed into scratch).
    let packedFloat: [Float]
    /// Packed quantized weights minus the filter zero point (empty when not constant).
    let packedInteger: [Int16]
    let weightsConstant: Bool
    let inputOffset: Int32
    let filterZeroPoint: Int32
    let requantizer: ConvRequantizer?
    let pieces: Int
    /// Bytes of scratch taken by run-time packed weights (0 for constant weights).
    let packedScratchBytes: Int
    /// Int32 accumulators per piece in scratch (quantized kinds).
    let accumulatorStride: Int

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2...3, outputs: 1...1)
        guard case .conv2D(let options) = context.options else {
            throw context.fail("has no Conv2DOptions")
        }
        let input = try context.input(0), filter = try context.input(1), bias = context.optionalInput(2)
        var output = context.outputs[0]
        try ConvolutionSupport.checkOperands(input: input, filter: filter, output: output,
                                             strides: (options.strideHeight, options.strideWidth),
                                             dilations: (options.dilationHeight, options.dilationWidth),
                                             activation: options.activation, context)

        let (batches, height, width, channels) = (input.shape[0], input.shape[1], input.shape[2], input.shape[3])
        let (outChannels, kh, kw, filterChannels) = (filter.shape[0], filter.shape[1], filter.shape[2], filter.shape[3])
        guard kh > 0, kw > 0, filterChannels > 0 else {
            throw context.fail("filter has shape \(Shape(filter.shape)); kernel size and input channels must be positive")
        }
        guard channels % filterChannels == 0 else {
            throw context.fail("input has \(channels) channels, not a multiple of the filter's \(filterChannels) input channels")
        }
        let groups = channels / filterChannels
        guard groups > 0, outChannels % groups == 0 else {
            throw context.fail("filter has \(outChannels) output channels, not a multiple of the \(max(groups, 1)) groups (input channels \(channels) / filter channels \(filterChannels))")
        }
        if let bias { try ConvolutionSupport.checkBias(bias, inputType: input.type, count: outChannels, context) }

        let (outHeight, outWidth, padTop, padLeft) = try ConvolutionSupport.geometry(
            padding: options.padding, input: (height, width), filter: (kh, kw),
            strides: (options.strideHeight, options.strideWidth), dilations: (options.dilationHeight, options.dilationWidth), context)
        output.shape = [batches, outHeight, outWidth, outChannels]
        context.outputs[0] = output

        let kind: Kind = input.type == .float32 ? .float32 : (input.type == .uint8 ? .uint8 : .int8)
        var requantizer: ConvRequantizer?
        var inputOffset: Int32 = 0, filterZeroPoint: Int32 = 0
        if kind != .float32 {
            let (multipliers, shifts) = try ConvolutionSupport.outputMultipliers(
                input: input, filter: filter, bias: bias, output: output, channels: outChannels, channelDimension: 0, context)
            inputOffset = -(try ConvolutionSupport.zeroPoint(input, "input", context))
            filterZeroPoint = kind == .uint8 ? try ConvolutionSupport.zeroPoint(filter, "filter", context) : 0
            let outputZeroPoint = try ConvolutionSupport.zeroPoint(output, "output", context)
            let range = FixedPoint.activationRange(options.activation, scale: output.scale, zeroPoint: outputZeroPoint, type: output.type)
            // LiteRT's builtin CONV_2D (uint8 and int8 per-channel) is im2col + cpu_backend_gemm; on x86 its
            // requantization rounds halves up (ruy). The reference kernels round them away from zero.
            requantizer = ConvRequantizer(multipliers: multipliers, shifts: shifts, outputZeroPoint: outputZeroPoint,
                                          activationMin: range.min, activationMax: range.max, rounding: .gemmHalfUp)
        }
        let (floatMin, floatMax) = FixedPoint.activationRange(options.activation)

        if let isa = context.instructionSet, kind == .float32, groups == 1, let data = filter.constant,
           bias == nil || bias?.constant != nil,
           let fast = OptimizedConvFloatKernel(
               isa: isa,
               geometry: ck_conv_geometry(inputHeight: height, inputWidth: width, inputChannels: channels,
                                          outputHeight: outHeight, outputWidth: outWidth, outputChannels: outChannels,
                                          filterHeight: kh, filterWidth: kw, strideHeight: options.strideHeight, strideWidth: options.strideWidth,
                                          dilationHeight: options.dilationHeight, dilationWidth: options.dilationWidth,
                                          padTop: padTop, padLeft: padLeft),
               batches: batches, filter: data, bias: bias?.constant, floatMin: floatMin, floatMax: floatMax, work: context.work) {
            return fast
        }

        // Quantized with constant weights: the CKernels implicit GEMM (bit-exact, same rounding).
        if let isa = context.instructionSet, kind != .float32, groups == 1, let data = filter.constant, let requantizer,
           bias == nil || bias?.constant != nil,
           let geometry = ck_conv_geometry.quantized(
               inputHeight: height, inputWidth: width, inputChannels: channels,
               outputHeight: outHeight, outputWidth: outWidth, outputChannels: outChannels,
               filterHeight: kh, filterWidth: kw, strideHeight: options.strideHeight, strideWidth: options.strideWidth,
               dilationHeight: options.dilationHeight, dilationWidth: options.dilationWidth, padTop: padTop, padLeft: padLeft),
           let fast = OptimizedQuantizedConvKernel(
               isa: isa, geometry: geometry, batches: batches, isSigned: kind == .int8, inputZeroPoint: -inputOffset,
               filterZeroPoint: filterZeroPoint, filter: data, bias: bias?.constant, requantizer: requantizer, work: context.work) {
            context.scratchByteCount = fast.scratchByteCount
            return fast
        }

        let rows = batches * outHeight
        let pieces = max(1, min(rows, 16))
        let weightCount = filter.elementCount
        var packedFloat: [Float] = [], packedInteger: [Int16] = []
        var packedScratchBytes = 0
        let geometry = PackGeometry(outputChannels: outChannels, kh: kh, kw: kw, filterChannels: filterChannels, groups: groups)
        if let data = filter.constant {
            switch kind {
            case .float32:
                packedFloat = ConvolutionSupport.packed(data, as: Float.self, count: weightCount) { source, destination in
                    geometry.pack(source, into: destination) { $0 }
                }
            case .uint8:
                let zp = filterZeroPoint
                packedInteger = ConvolutionSupport.packed(data, as: UInt8.self, count: weightCount) { source, destination in
                    geometry.pack(source, into: destination) { Int16(Int32($0) - zp) }
                }
            case .int8:
                packedInteger = ConvolutionSupport.packed(data, as: Int8.self, count: weightCount) { source, destination in
                    geometry.pack(source, into: destination) { Int16($0) }
                }
            }
        } else {
            packedScratchBytes = ConvolutionSupport.align(weightCount * (kind == .float32 ? 4 : 2))
        }
        let accumulatorStride = kind == .float32 ? 0 : ConvolutionSupport.align(outChannels * 4) / 4
        context.scratchByteCount = packedScratchBytes + pieces * accumulatorStride * 4

        return Conv2DKernel(
            kind: kind, batches: batches, inputHeight: height, inputWidth: width, inputChannels: channels,
            outputHeight: outHeight, outputWidth: outWidth, outputChannels: outChannels,
            filterHeight: kh, filterWidth: kw, filterChannels: filterChannels,
            groups: groups, outputsPerGroup: outChannels / groups,
            strideHeight: options.strideHeight, strideWidth: options.strideWidth,
            dilationHeight: options.dilationHeight, dilationWidth: options.dilationWidth,
            padTop: padTop, padLeft: padLeft, floatMin: floatMin, floatMax: floatMax,
            packedFloat: packedFloat, packedInteger: packedInteger, weightsConstant: filter.isConstant,
            inputOffset: inputOffset, filterZeroPoint: filterZeroPoint, requantizer: requantizer,
            pieces: pieces, packedScratchBytes: packedScratchBytes, accumulatorStride: accumulatorStride)
    }

    /// Weight repacking [Cout][Kh][Kw][Cin/g] → [g][Kh][Kw][Cin/g][Cout/g].
    struct PackGeometry {
        let outputChannels: Int, kh: Int, kw: Int, filterChannels: Int, groups: Int

        @inline(__always)
        func pack<S, D>(_ source: UnsafePointer<S>, into destination: UnsafeMutablePointer<D>, _ convert: (S) -> D) {
            let perGroup = outputChannels / groups
            for g in 0..<groups {
                for j in 0..<perGroup {
                    let oc = g * perGroup + j
                    for ky in 0..<kh {
                        for kx in 0..<kw {
                            let src = source + ((oc * kh + ky) * kw + kx) * filterChannels
                            let dst = destination + (((g * kh + ky) * kw + kx) * filterChannels) * perGroup + j
                            for ic in 0..<filterChannels {
                                (dst + ic * perGroup).initialize(to: convert(src[ic]))
                            }
                        }
                    }
                }
            }
        }
    }

    var geometry: PackGeometry {
        PackGeometry(outputChannels: outputChannels, kh: filterHeight, kw: filterWidth, filterChannels: filterChannels, groups: groups)
    }

    func run(_ io: KernelIO) {
        guard batches * outputHeight * outputWidth * outputChannels > 0 else { return }
        switch kind {
        case .float32: runFloat(io)
        case .uint8: runQuantized(io, UInt8.self)
        case .int8: runQuantized(io, Int8.self)
        }
    }

    // MARK: Float

    private func runFloat(_ io: KernelIO) {
        if weightsConstant {
            packedFloat.withUnsafeBufferPointer { weights in
                if let base = weights.baseAddress { computeFloat(io, weights: base) }
            }
        } else {
            guard let scratch = io.scratch else { return }
            let weights = scratch.assumingMemoryBound(to: Float.self)
            geometry.pack(io.input(1, as: Float.self), into: weights) { $0 }
            computeFloat(io, weights: UnsafePointer(weights))
        }
    }

    private func computeFloat(_ io: KernelIO, weights: UnsafePointer<Float>) {
        let input = io.input(0, as: Float.self)
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
                    for g in 0..<groups {
                        let acc = out + g * outputsPerGroup
                        for ky in 0..<filterHeight {
                            let iy = iy0 + ky * dilationHeight
                            if iy < 0 || iy >= inputHeight { continue }
                            for kx in 0..<filterWidth {
                                let ix = ix0 + kx * dilationWidth
                                if ix < 0 || ix >= inputWidth { continue }
                                let pixel = inputBatch + (iy * inputWidth + ix) * inputChannels + g * filterChannels
                                var w = weights + (((g * filterHeight + ky) * filterWidth + kx) * filterChannels) * outputsPerGroup
                                for ic in 0..<filterChannels {
                                    let v = pixel[ic]
                                    for j in 0..<outputsPerGroup { acc[j] += v * w[j] }
                                    w += outputsPerGroup
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

    // MARK: Quantized

    private func runQuantized<T: FixedWidthInteger>(_ io: KernelIO, _ type: T.Type) {
        if weightsConstant {
            packedInteger.withUnsafeBufferPointer { weights in
                if let base = weights.baseAddress { computeQuantized(io, T.self, weights: base) }
            }
        } else {
            guard let scratch = io.scratch else { return }
            let weights = scratch.assumingMemoryBound(to: Int16.self)
            let zp = filterZeroPoint
            geometry.pack(io.input(1, as: T.self), into: weights) { Int16(Int32($0) - zp) }
            computeQuantized(io, T.self, weights: UnsafePointer(weights))
        }
    }

    private func computeQuantized<T: FixedWidthInteger>(_ io: KernelIO, _ type: T.Type, weights: UnsafePointer<Int16>) {
        guard let requantizer, let scratch = io.scratch else { return }
        let input = io.input(0, as: T.self)
        let output = io.output(0, as: T.self)
        let bias: UnsafePointer<Int32>? = io.hasInput(2) ? io.input(2, as: Int32.self) : nil
        let accumulators = (scratch + packedScratchBytes).assumingMemoryBound(to: Int32.self)
        let rows = batches * outputHeight
        let inputOffset = self.inputOffset
        io.parallel.forEach(pieces) { piece in
            let acc0 = accumulators + piece * accumulatorStride
            for row in ConvolutionSupport.range(piece: piece, of: pieces, count: rows) {
                let n = row / outputHeight, oy = row % outputHeight
                let inputBatch = input + n * inputHeight * inputWidth * inputChannels
                let iy0 = oy * strideHeight - padTop
                for ox in 0..<outputWidth {
                    let ix0 = ox * strideWidth - padLeft
                    acc0.update(repeating: 0, count: outputChannels)
                    for g in 0..<groups {
                        let acc = acc0 + g * outputsPerGroup
                        for ky in 0..<filterHeight {
                            let iy = iy0 + ky * dilationHeight
                            if iy < 0 || iy >= inputHeight { continue }
                            for kx in 0..<filterWidth {
                                let ix = ix0 + kx * dilationWidth
                                if ix < 0 || ix >= inputWidth { continue }
                                let pixel = inputBatch + (iy * inputWidth + ix) * inputChannels + g * filterChannels
                                var w = weights + (((g * filterHeight + ky) * filterWidth + kx) * filterChannels) * outputsPerGroup
                                for ic in 0..<filterChannels {
                                    // |input - zero point| <= 255: a 16-bit operand, so the products
                                    // are 16x16→32-bit multiplies (vectorizable without pmulld).
                                    let v = Int32(Int16(truncatingIfNeeded: Int32(truncatingIfNeeded: pixel[ic]) &+ inputOffset))
                                    for j in 0..<outputsPerGroup { acc[j] = acc[j] &+ v &* Int32(w[j]) }
                                    w += outputsPerGroup
                                }
                            }
                        }
                    }
                    requantizer.store(acc0, bias: bias, count: outputChannels,
                                      to: output + (row * outputWidth + ox) * outputChannels)
                }
            }
        }
    }
}
