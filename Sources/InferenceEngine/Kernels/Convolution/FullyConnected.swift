import CKernels
import TFLiteFormat
import TensorCore

/// FULLY_CONNECTED: inputs [input (flattened to [batches, In]), weights [Out, In], optional bias [Out]].
///
/// Output [batches, Out], or with keep_num_dims the input's shape with its last dimension replaced
/// by Out. Semantics of TFLite's reference kernels (reference/fully_connected.h,
/// integer_ops/fully_connected.h): quantized accumulation `(input - input_zp) * (weight - weight_zp)`
/// in int32, bias, MultiplyByQuantizedMultiplier, output zero point, activation clamp; int8
/// weights may be per-channel (along Out, symmetric).
///
/// Weights are transposed to [In][Out] so the inner loop runs over contiguous outputs (each
/// output still sums over In in order, as the reference does).
struct FullyConnectedKernel: Kernel {
    enum Kind: Sendable { case float32, uint8, int8 }

    let kind: Kind
    let batches: Int, inputSize: Int, outputSize: Int
    let floatMin: Float, floatMax: Float
    let packedFloat: [Float]
    let packedInteger: [Int16]
    let weightsConstant: Bool
    let inputOffset: Int32
    let filterZeroPoint: Int32
    let requantizer: ConvRequantizer?
    let pieces: Int
    let packedScratchBytes: Int

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2...3, outputs: 1...1)
        guard case .fullyConnected(let options) = context.options else {
            throw context.fail("has no FullyConnectedOptions")
        }
        guard options.weightsFormat == 0 else {
            throw context.fail("weights format \(options.weightsFormat) (shuffled) is not supported", code: .unsupportedOperator)
        }
        let input = try context.input(0), weights = try context.input(1), bias = context.optionalInput(2)
        var output = context.outputs[0]
        try context.expect(input, type: [.float32, .uint8, .int8], "input")
        try context.expect(weights, rank: 2, "weights")
        guard weights.type == input.type else {
            throw context.fail("weights have type \(weights.type) but input has type \(input.type) (hybrid or mixed-type FULLY_CONNECTED is not supported)",
                               code: .unsupportedOperator)
        }
        guard output.type == input.type else {
            throw context.fail("output has type \(output.type) but input has type \(input.type)", code: .unsupportedOperator)
        }
        try ConvolutionSupport.checkActivation(options.activation, context)

        let (units, inputSize) = (weights.shape[0], weights.shape[1])
        guard inputSize > 0 else {
            throw context.fail("weights have shape \(Shape(weights.shape)); the input size (dimension 1) must be positive")
        }
        let total = input.elementCount
        guard total % inputSize == 0 else {
            throw context.fail("input \(Shape(input.shape)) has \(total) elements, not a multiple of the weights' input size \(inputSize)")
        }
        let batches = total / inputSize
        if let bias { try ConvolutionSupport.checkBias(bias, inputType: input.type, count: units, context) }
        if options.keepNumDims {
            guard input.rank >= 1, input.shape[input.rank - 1] == inputSize else {
                throw context.fail("keep_num_dims needs the input's last dimension (\(Shape(input.shape))) to equal the weights' input size \(inputSize)")
            }
            output.shape = Array(input.shape.dropLast()) + [units]
        } else {
            output.shape = [batches, units]
        }
        context.outputs[0] = output

        let kind: Kind = input.type == .float32 ? .float32 : (input.type == .uint8 ? .uint8 : .int8)
        var requantizer: ConvRequantizer?
        var inputOffset: Int32 = 0, filterZeroPoint: Int32 = 0
        if kind != .float32 {
            let (multipliers, shifts) = try ConvolutionSupport.outputMultipliers(
                input: input, filter: weights, bias: bias, output: output, channels: units, channelDimension: 0,
                fullyConnected: true, context)
            inputOffset = -(try ConvolutionSupport.zeroPoint(input, "input", context))
            filterZeroPoint = try ConvolutionSupport.zeroPoint(weights, "weights", context)
            let outputZeroPoint = try ConvolutionSupport.zeroPoint(output, "output", context)
            let range = FixedPoint.activationRange(options.activation, scale: output.scale, zeroPoint: outputZeroPoint, type: output.type)
            requantizer = ConvRequantizer(multipliers: multipliers, shifts: shifts, outputZeroPoint: outputZeroPoint,
                                          activationMin: range.min, activationMax: range.max)
        }
        let (floatMin, floatMax) = FixedPoint.activationRange(options.activation)

        // Float with constant weights: a 1×1 convolution over a 1×batches image in CKernels.
        if let isa = context.instructionSet, kind == .float32, let data = weights.constant,
           bias == nil || bias?.constant != nil, batches < Int(Int32.max), units < Int(Int32.max),
           let fast = OptimizedConvFloatKernel(
               isa: isa,
               geometry: ck_conv_geometry(inputHeight: 1, inputWidth: batches, inputChannels: inputSize,
                                          outputHeight: 1, outputWidth: batches, outputChannels: units,
                                          filterHeight: 1, filterWidth: 1, strideHeight: 1, strideWidth: 1,
                                          dilationHeight: 1, dilationWidth: 1, padTop: 0, padLeft: 0),
               batches: 1, filter: data, bias: bias?.constant, floatMin: floatMin, floatMax: floatMax, work: context.work) {
            return fast
        }

        // Quantized with constant weights: the CKernels GEMM as a 1×1 convolution (reference rounding).
        if let isa = context.instructionSet, kind != .float32, let data = weights.constant, let requantizer,
           bias == nil || bias?.constant != nil,
           let geometry = ck_conv_geometry.quantized(
               inputHeight: 1, inputWidth: batches, inputChannels: inputSize, outputHeight: 1, outputWidth: batches, outputChannels: units,
               filterHeight: 1, filterWidth: 1, strideHeight: 1, strideWidth: 1, dilationHeight: 1, dilationWidth: 1, padTop: 0, padLeft: 0),
           let fast = OptimizedQuantizedConvKernel(
               isa: isa, geometry: geometry, batches: 1, isSigned: kind == .int8, inputZeroPoint: -inputOffset,
               filterZeroPoint: filterZeroPoint, filter: data, bias: bias?.constant, requantizer: requantizer, work: context.work) {
            context.scratchByteCount = fast.scratchByteCount
            return fast
        }

        let count = weights.elementCount
        var packedFloat: [Float] = [], packedInteger: [Int16] = []
        var packedScratchBytes = 0
        if let data = weights.constant {
            switch kind {
            case .float32:
                packedFloat = ConvolutionSupport.packed(data, as: Float.self, count: count) { source, destination in
                    transpose(source, into: destination, units: units, inputSize: inputSize) { $0 }
                }
            case .uint8:
                let zp = filterZeroPoint
                packedInteger = ConvolutionSupport.packed(data, as: UInt8.self, count: count) { source, destination in
                    transpose(source, into: destination, units: units, inputSize: inputSize) { Int16(Int32($0) - zp) }
                }
            case .int8:
                let zp = filterZeroPoint
                packedInteger = ConvolutionSupport.packed(data, as: Int8.self, count: count) { source, destination in
                    transpose(source, into: destination, units: units, inputSize: inputSize) { Int16(Int32($0) - zp) }
                }
            }
        } else {
            packedScratchBytes = ConvolutionSupport.align(count * (kind == .float32 ? 4 : 2))
        }
        let pieces = max(1, min(16, units / 32))
        context.scratchByteCount = packedScratchBytes + (kind == .float32 ? 0 : ConvolutionSupport.align(units * 4))

        return FullyConnectedKernel(
            kind: kind, batches: batches, inputSize: inputSize, outputSize: units, floatMin: floatMin, floatMax: floatMax,
            packedFloat: packedFloat, packedInteger: packedInteger, weightsConstant: weights.isConstant,
            inputOffset: inputOffset, filterZeroPoint: filterZeroPoint, requantizer: requantizer,
            pieces: pieces, packedScratchBytes: packedScratchBytes)
    }

    /// [units][inputSize] → [inputSize][units].
    @inline(__always)
    static func transpose<S, D>(_ source: UnsafePointer<S>, into destination: UnsafeMutablePointer<D>,
                                units: Int, inputSize: Int, _ convert: (S) -> D) {
        for o in 0..<units {
            let row = source + o * inputSize
            for i in 0..<inputSize {
                (destination + i * units + o).initialize(to: convert(row[i]))
            }
        }
    }

    func run(_ io: KernelIO) {
        guard batches * outputSize > 0 else { return }
        switch kind {
        case .float32:
            if weightsConstant {
                packedFloat.withUnsafeBufferPointer { w in
                    if let base = w.baseAddress { computeFloat(io, weights: base) }
                }
            } else {
                guard let scratch = io.scratch else { return }
                let w = scratch.assumingMemoryBound(to: Float.self)
                Self.transpose(io.input(1, as: Float.self), into: w, units: outputSize, inputSize: inputSize) { $0 }
                computeFloat(io, weights: UnsafePointer(w))
            }
        case .uint8: runQuantized(io, UInt8.self)
        case .int8: runQuantized(io, Int8.self)
        }
    }

    private func computeFloat(_ io: KernelIO, weights: UnsafePointer<Float>) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
        let bias: UnsafePointer<Float>? = io.hasInput(2) ? io.input(2, as: Float.self) : nil
        io.parallel.forEach(pieces) { piece in
            let units = ConvolutionSupport.range(piece: piece, of: pieces, count: outputSize)
            let width = units.count, first = units.lowerBound
            for b in 0..<batches {
                let row = input + b * inputSize
                let acc = output + b * outputSize + first
                acc.update(repeating: 0, count: width)
                var w = weights + first
                for i in 0..<inputSize {
                    let v = row[i]
                    for j in 0..<width { acc[j] += v * w[j] }
                    w += outputSize
                }
                for j in 0..<width {
                    var v = acc[j]
                    if let bias { v += bias[first + j] }
                    acc[j] = Swift.min(Swift.max(v, floatMin), floatMax)
                }
            }
        }
    }

    private func runQuantized<T: FixedWidthInteger>(_ io: KernelIO, _ type: T.Type) {
        guard let scratch = io.scratch else { return }
        if weightsConstant {
            packedInteger.withUnsafeBufferPointer { w in
                if let base = w.baseAddress { computeQuantized(io, T.self, weights: base, scratch: scratch) }
            }
        } else {
            let w = scratch.assumingMemoryBound(to: Int16.self)
            let zp = filterZeroPoint
            Self.transpose(io.input(1, as: T.self), into: w, units: outputSize, inputSize: inputSize) { Int16(Int32($0) - zp) }
            computeQuantized(io, T.self, weights: UnsafePointer(w), scratch: scratch)
        }
    }

    private func computeQuantized<T: FixedWidthInteger>(_ io: KernelIO, _ type: T.Type, weights: UnsafePointer<Int16>,
                                                        scratch: UnsafeMutableRawPointer) {
        guard let requantizer else { return }
        let input = io.input(0, as: T.self)
        let output = io.output(0, as: T.self)
        let bias: UnsafePointer<Int32>? = io.hasInput(2) ? io.input(2, as: Int32.self) : nil
        let accumulators = (scratch + packedScratchBytes).assumingMemoryBound(to: Int32.self)
        let inputOffset = self.inputOffset
        io.parallel.forEach(pieces) { piece in
            let units = ConvolutionSupport.range(piece: piece, of: pieces, count: outputSize)
            let width = units.count, first = units.lowerBound
            let acc = accumulators + first
            for b in 0..<batches {
                let row = input + b * inputSize
                acc.update(repeating: 0, count: width)
                var w = weights + first
                for i in 0..<inputSize {
                    let v = Int32(Int16(truncatingIfNeeded: Int32(truncatingIfNeeded: row[i]) &+ inputOffset))
                    for j in 0..<width { acc[j] = acc[j] &+ v &* Int32(w[j]) }
                    w += outputSize
                }
                requantizer.store(acc, bias: bias, count: width, firstChannel: first, to: output + b * outputSize + first)
            }
        }
    }
}
