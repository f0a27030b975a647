import CKernels
import TFLiteFormat
import TensorCore

/// TRANSPOSE_CONV: inputs [output_shape int32[4] (constant), weights [Cout, Kh, Kw, Cin], input NHWC,
/// optional bias [Cout]]. The same kernel runs MediaPipe's custom op Convolution2DTransposeBias
/// (TransposeConvBias.swift).
///
/// Both follow the reference "scatter" loop (reference/transpose_conv.h, integer_ops/transpose_conv.h,
/// mediapipe/util/tflite/operations/transpose_conv_bias.cc): every input pixel adds
/// `input * weight` into the outputs at `in * stride - pad + k`, out-of-range ones dropped. The
/// builtin adds the bias afterwards (then the fused activation of newer versions); MediaPipe's op
/// starts from the bias. Quantized versions accumulate in int32 scratch and requantize per
/// output channel.
///
/// Weights are repacked to [Kh][Kw][Cin][Cout]; each output still receives its contributions in the
/// reference order (input pixel, then input channel).
struct TransposeConvKernel: Kernel {
    enum Kind: Sendable { case float32, uint8, int8 }

    let kind: Kind
    /// Operand positions (they differ between the builtin and the custom op).
    let inputIndex: Int, weightsIndex: Int, biasIndex: Int
    /// MediaPipe's variant: outputs start from the bias instead of getting it added at the end.
    let biasFirst: Bool
    let batches: Int, inputHeight: Int, inputWidth: Int, inputChannels: Int
    let outputHeight: Int, outputWidth: Int, outputChannels: Int
    let filterHeight: Int, filterWidth: Int
    let strideHeight: Int, strideWidth: Int
    let padTop: Int, padLeft: Int
    let floatMin: Float, floatMax: Float
    let packedFloat: [Float]
    let packedInteger: [Int16]
    let weightsConstant: Bool
    let inputOffset: Int32
    let filterZeroPoint: Int32
    let requantizer: ConvRequantizer?
    let packedScratchBytes: Int

    struct Geometry {
        var batches = 0, inputHeight = 0, inputWidth = 0, inputChannels = 0
        var outputHeight = 0, outputWidth = 0, outputChannels = 0
        var filterHeight = 0, filterWidth = 0
        var strideHeight = 1, strideWidth = 1
        var padTop = 0, padLeft = 0
    }

    // MARK: TRANSPOSE_CONV

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 3...4, outputs: 1...1)
        guard case .transposeConv(let options) = context.options else {
            throw context.fail("has no TransposeConvOptions")
        }
        let shapeTensor = try context.input(0), weights = try context.input(1), input = try context.input(2)
        let bias = context.optionalInput(3)
        try context.expect(input, type: [.float32, .uint8, .int8], "input")
        try context.expect(input, rank: 4, "input")
        try context.expect(weights, rank: 4, "weights")
        try context.expect(shapeTensor, type: [.int32], "output_shape")
        guard shapeTensor.rank == 1, shapeTensor.elementCount == 4 else {
            throw context.fail("output_shape has shape \(Shape(shapeTensor.shape)), expected [4]")
        }
        guard let outputShape = shapeTensor.constantIntegers() else {
            throw context.fail("output_shape is not a constant tensor; dynamic output shapes are not supported", code: .unsupportedOperator)
        }
        guard options.strideWidth > 0, options.strideHeight > 0 else {
            throw context.fail("strides must be positive, are \(options.strideHeight)x\(options.strideWidth)")
        }
        try ConvolutionSupport.checkActivation(options.activation, context)
        var geometry = try commonGeometry(input: input, weights: weights, context)
        guard outputShape.allSatisfy({ $0 >= 0 }) else {
            throw context.fail("output_shape \(outputShape) has a negative dimension")
        }
        guard outputShape[0] == geometry.batches, outputShape[3] == geometry.outputChannels else {
            throw context.fail("output_shape \(outputShape) must have the input's batch \(geometry.batches) and the weights' \(geometry.outputChannels) output channels")
        }
        // Checked here, before the scratch and geometry below are computed from it: the output
        // tensor's own size check comes after prepare.
        guard let outputCount = Shape(outputShape).elementCount, outputCount <= Int.max / 16 else {
            throw context.fail("output_shape \(outputShape) has more elements than the engine can address", code: .resourceLimit)
        }
        geometry.outputHeight = outputShape[1]
        geometry.outputWidth = outputShape[2]
        geometry.strideHeight = options.strideHeight
        geometry.strideWidth = options.strideWidth
        // TFLite: ComputePaddingHeightWidth(stride, dilation 1, in = the output size, filter, padding).
        let convHeight = ConvolutionSupport.outputSize(padding: options.padding, imageSize: geometry.outputHeight,
                                                       filterSize: geometry.filterHeight, stride: geometry.strideHeight, dilation: 1)
        let convWidth = ConvolutionSupport.outputSize(padding: options.padding, imageSize: geometry.outputWidth,
                                                      filterSize: geometry.filterWidth, stride: geometry.strideWidth, dilation: 1)
        geometry.padTop = ConvolutionSupport.padding(stride: geometry.strideHeight, dilation: 1, inputSize: geometry.outputHeight,
                                                     filterSize: geometry.filterHeight, outputSize: convHeight)
        geometry.padLeft = ConvolutionSupport.padding(stride: geometry.strideWidth, dilation: 1, inputSize: geometry.outputWidth,
                                                      filterSize: geometry.filterWidth, outputSize: convWidth)
        return try make(&context, geometry: geometry, input: input, weights: weights, bias: bias, activation: options.activation,
                        inputIndex: 2, weightsIndex: 1, biasIndex: 3, biasFirst: false)
    }

    // MARK: Shared preparation

    static func commonGeometry(input: TensorInfo, weights: TensorInfo, _ context: OpContext) throws -> Geometry {
        var g = Geometry()
        (g.batches, g.inputHeight, g.inputWidth, g.inputChannels) = (input.shape[0], input.shape[1], input.shape[2], input.shape[3])
        (g.outputChannels, g.filterHeight, g.filterWidth) = (weights.shape[0], weights.shape[1], weights.shape[2])
        guard weights.shape[3] == g.inputChannels else {
            throw context.fail("weights \(Shape(weights.shape)) must have the input's \(g.inputChannels) channels in dimension 3")
        }
        guard g.filterHeight > 0, g.filterWidth > 0 else {
            throw context.fail("weights have shape \(Shape(weights.shape)); the kernel size must be positive")
        }
        return g
    }

    static func make(_ context: inout OpContext, geometry g: Geometry, input: TensorInfo, weights: TensorInfo,
                             bias: TensorInfo?, activation: FusedActivation,
                             inputIndex: Int, weightsIndex: Int, biasIndex: Int, biasFirst: Bool) throws -> any Kernel {
        var output = context.outputs[0]
        guard weights.type == input.type else {
            throw context.fail("weights have type \(weights.type) but input has type \(input.type)", code: .unsupportedOperator)
        }
        guard output.type == input.type else {
            throw context.fail("output has type \(output.type) but input has type \(input.type)", code: .unsupportedOperator)
        }
        if let bias { try ConvolutionSupport.checkBias(bias, inputType: input.type, count: g.outputChannels, context) }
        output.shape = [g.batches, g.outputHeight, g.outputWidth, g.outputChannels]
        context.outputs[0] = output

        let kind: Kind = input.type == .float32 ? .float32 : (input.type == .uint8 ? .uint8 : .int8)
        var requantizer: ConvRequantizer?
        var inputOffset: Int32 = 0, filterZeroPoint: Int32 = 0
        if kind != .float32 {
            let (multipliers, shifts) = try ConvolutionSupport.outputMultipliers(
                input: input, filter: weights, bias: bias, output: output, channels: g.outputChannels, channelDimension: 0, context)
            inputOffset = -(try ConvolutionSupport.zeroPoint(input, "input", context))
            filterZeroPoint = kind == .uint8 ? try ConvolutionSupport.zeroPoint(weights, "weights", context) : 0
            let outputZeroPoint = try ConvolutionSupport.zeroPoint(output, "output", context)
            let range = FixedPoint.activationRange(activation, scale: output.scale, zeroPoint: outputZeroPoint, type: output.type)
            requantizer = ConvRequantizer(multipliers: multipliers, shifts: shifts, outputZeroPoint: outputZeroPoint,
                                          activationMin: range.min, activationMax: range.max)
        }
        let (floatMin, floatMax) = FixedPoint.activationRange(activation)

        if let isa = context.instructionSet, kind == .float32, g.batches > 0 {
            // Both variants compute clamp(bias + sum): MediaPipe's starts from the bias with no clamp
            // (activation NONE), the builtin adds the bias before its clamp.
            let geometry = ck_conv_geometry(inputHeight: g.inputHeight, inputWidth: g.inputWidth, inputChannels: g.inputChannels,
                                            outputHeight: g.outputHeight, outputWidth: g.outputWidth, outputChannels: g.outputChannels,
                                            filterHeight: g.filterHeight, filterWidth: g.filterWidth,
                                            strideHeight: g.strideHeight, strideWidth: g.strideWidth, dilationHeight: 1, dilationWidth: 1,
                                            padTop: g.padTop, padLeft: g.padLeft)
            if let data = weights.constant,
               let tile = OptimizedTransposeConvTileKernel(isa: isa, geometry: geometry, batches: g.batches, filter: data,
                                                           inputIndex: inputIndex, biasIndex: biasIndex,
                                                           floatMin: floatMin, floatMax: floatMax) {
                return tile
            }
            if let data = weights.constant,
               let gemm = OptimizedTransposeConvGemmKernel(isa: isa, geometry: geometry, batches: g.batches, weights: data,
                                                           inputIndex: inputIndex, biasIndex: biasIndex,
                                                           floatMin: floatMin, floatMax: floatMax) {
                context.scratchByteCount = gemm.scratchBytes
                return gemm
            }
            if geometry.fitsImageKernels {
                return OptimizedTransposeConvFloatKernel(isa: isa, geometry: geometry, batches: g.batches,
                                                         inputIndex: inputIndex, weightsIndex: weightsIndex, biasIndex: biasIndex,
                                                         pieces: max(1, min(g.outputHeight, 16)), floatMin: floatMin, floatMax: floatMax)
            }
        }

        let count = weights.elementCount
        let pack = PackGeometry(outputChannels: g.outputChannels, kh: g.filterHeight, kw: g.filterWidth, inputChannels: g.inputChannels)
        var packedFloat: [Float] = [], packedInteger: [Int16] = []
        var packedScratchBytes = 0
        if let data = weights.constant {
            switch kind {
            case .float32:
                packedFloat = ConvolutionSupport.packed(data, as: Float.self, count: count) { s, d in pack.pack(s, into: d) { $0 } }
            case .uint8:
                let zp = filterZeroPoint
                packedInteger = ConvolutionSupport.packed(data, as: UInt8.self, count: count) { s, d in pack.pack(s, into: d) { Int16(Int32($0) - zp) } }
            case .int8:
                packedInteger = ConvolutionSupport.packed(data, as: Int8.self, count: count) { s, d in pack.pack(s, into: d) { Int16($0) } }
            }
        } else {
            packedScratchBytes = ConvolutionSupport.align(count * (kind == .float32 ? 4 : 2))
        }
        context.scratchByteCount = packedScratchBytes + (kind == .float32 ? 0 : ConvolutionSupport.align(output.elementCount * 4))

        return TransposeConvKernel(
            kind: kind, inputIndex: inputIndex, weightsIndex: weightsIndex, biasIndex: biasIndex, biasFirst: biasFirst,
            batches: g.batches, inputHeight: g.inputHeight, inputWidth: g.inputWidth, inputChannels: g.inputChannels,
            outputHeight: g.outputHeight, outputWidth: g.outputWidth, outputChannels: g.outputChannels,
            filterHeight: g.filterHeight, filterWidth: g.filterWidth, strideHeight: g.strideHeight, strideWidth: g.strideWidth,
            padTop: g.padTop, padLeft: g.padLeft, floatMin: floatMin, floatMax: floatMax,
            packedFloat: packedFloat, packedInteger: packedInteger, weightsConstant: weights.isConstant,
            inputOffset: inputOffset, filterZeroPoint: filterZeroPoint, requantizer: requantizer,
            packedScratchBytes: packedScratchBytes)
    }

    /// Weight repacking [Cout][Kh][Kw][Cin] → [Kh][Kw][Cin][Cout].
    struct PackGeometry {
        let outputChannels: Int, kh: Int, kw: Int, inputChannels: Int

        @inline(__always)
        func pack<S, D>(_ source: UnsafePointer<S>, into destination: UnsafeMutablePointer<D>, _ convert: (S) -> D) {
            for oc in 0..<outputChannels {
                for k in 0..<(kh * kw) {
                    let src = source + (oc * kh * kw + k) * inputChannels
                    let dst = destination + k * inputChannels * outputChannels + oc
                    for ic in 0..<inputChannels {
                        (dst + ic * outputChannels).initialize(to: convert(src[ic]))
                    }
                }
            }
        }
    }

    private var packGeometry: PackGeometry {
        PackGeometry(outputChannels: outputChannels, kh: filterHeight, kw: filterWidth, inputChannels: inputChannels)
    }

    // MARK: Run

    func run(_ io: KernelIO) {
        let outputCount = batches * outputHeight * outputWidth * outputChannels
        guard outputCount > 0 else { return }
        switch kind {
        case .float32:
            if weightsConstant {
                packedFloat.withUnsafeBufferPointer { w in
                    if let base = w.baseAddress { computeFloat(io, weights: base) } else { zeroFloat(io) }
                }
            } else {
                guard let scratch = io.scratch else { zeroFloat(io); return }
                let w = scratch.assumingMemoryBound(to: Float.self)
                packGeometry.pack(io.input(weightsIndex, as: Float.self), into: w) { $0 }
                computeFloat(io, weights: UnsafePointer(w))
            }
        case .uint8: runQuantized(io, UInt8.self)
        case .int8: runQuantized(io, Int8.self)
        }
    }

    /// Empty weights (no input channels): the output is the bias alone.
    private func zeroFloat(_ io: KernelIO) {
        computeFloat(io, weights: nil)
    }

    private func computeFloat(_ io: KernelIO, weights: UnsafePointer<Float>?) {
        let input = io.input(inputIndex, as: Float.self)
        let output = io.output(0, as: Float.self)
        let bias: UnsafePointer<Float>? = io.hasInput(biasIndex) ? io.input(biasIndex, as: Float.self) : nil
        let pixels = outputHeight * outputWidth
        io.parallel.forEach(batches) { n in
            let outBatch = output + n * pixels * outputChannels
            if biasFirst, let bias {
                for p in 0..<pixels { (outBatch + p * outputChannels).update(from: bias, count: outputChannels) }
            } else {
                outBatch.update(repeating: 0, count: pixels * outputChannels)
            }
            if let weights {
                let inBatch = input + n * inputHeight * inputWidth * inputChannels
                for iy in 0..<inputHeight {
                    let oy0 = iy * strideHeight - padTop
                    for ix in 0..<inputWidth {
                        let ox0 = ix * strideWidth - padLeft
                        let pixel = inBatch + (iy * inputWidth + ix) * inputChannels
                        for ky in 0..<filterHeight {
                            let oy = oy0 + ky
                            if oy < 0 || oy >= outputHeight { continue }
                            for kx in 0..<filterWidth {
                                let ox = ox0 + kx
                                if ox < 0 || ox >= outputWidth { continue }
                                let out = outBatch + (oy * outputWidth + ox) * outputChannels
                                var w = weights + (ky * filterWidth + kx) * inputChannels * outputChannels
                                for ic in 0..<inputChannels {
                                    let v = pixel[ic]
                                    for oc in 0..<outputChannels { out[oc] += v * w[oc] }
                                    w += outputChannels
                                }
                            }
                        }
                    }
                }
            }
            if !biasFirst {
                for p in 0..<pixels {
                    let out = outBatch + p * outputChannels
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
        guard let scratch = io.scratch else { return }
        if weightsConstant {
            packedInteger.withUnsafeBufferPointer { w in
                computeQuantized(io, T.self, weights: w.baseAddress, scratch: scratch)
            }
        } else {
            let w = scratch.assumingMemoryBound(to: Int16.self)
            let zp = filterZeroPoint
            packGeometry.pack(io.input(weightsIndex, as: T.self), into: w) { Int16(Int32($0) - zp) }
            computeQuantized(io, T.self, weights: UnsafePointer(w), scratch: scratch)
        }
    }

    private func computeQuantized<T: FixedWidthInteger>(_ io: KernelIO, _ type: T.Type, weights: UnsafePointer<Int16>?,
                                                        scratch: UnsafeMutableRawPointer) {
        guard let requantizer else { return }
        let input = io.input(inputIndex, as: T.self)
        let output = io.output(0, as: T.self)
        let bias: UnsafePointer<Int32>? = io.hasInput(biasIndex) ? io.input(biasIndex, as: Int32.self) : nil
        let accumulators = (scratch + packedScratchBytes).assumingMemoryBound(to: Int32.self)
        let pixels = outputHeight * outputWidth
        let inputOffset = self.inputOffset
        io.parallel.forEach(batches) { n in
            let accBatch = accumulators + n * pixels * outputChannels
            accBatch.update(repeating: 0, count: pixels * outputChannels)
            if let weights {
                let inBatch = input + n * inputHeight * inputWidth * inputChannels
                for iy in 0..<inputHeight {
                    let oy0 = iy * strideHeight - padTop
                    for ix in 0..<inputWidth {
                        let ox0 = ix * strideWidth - padLeft
                        let pixel = inBatch + (iy * inputWidth + ix) * inputChannels
                        for ky in 0..<filterHeight {
                            let oy = oy0 + ky
                            if oy < 0 || oy >= outputHeight { continue }
                            for kx in 0..<filterWidth {
                                let ox = ox0 + kx
                                if ox < 0 || ox >= outputWidth { continue }
                                let acc = accBatch + (oy * outputWidth + ox) * outputChannels
                                var w = weights + (ky * filterWidth + kx) * inputChannels * outputChannels
                                for ic in 0..<inputChannels {
                                    let v = Int32(Int16(truncatingIfNeeded: Int32(truncatingIfNeeded: pixel[ic]) &+ inputOffset))
                                    for oc in 0..<outputChannels { acc[oc] = acc[oc] &+ v &* Int32(w[oc]) }
                                    w += outputChannels
                                }
                            }
                        }
                    }
                }
            }
            let outBatch = output + n * pixels * outputChannels
            for p in 0..<pixels {
                requantizer.store(accBatch + p * outputChannels, bias: bias, count: outputChannels,
                                  to: outBatch + p * outputChannels)
            }
        }
    }
}
