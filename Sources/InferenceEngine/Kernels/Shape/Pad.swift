import CKernels
import TFLiteFormat
import TensorCore

/// PAD (tensorflow/lite/kernels/pad.cc): constant `paddings` [rank, 2] (int32/int64, non-negative)
/// give the entries added before and after every dimension. Padding is 0, or the output's zero
/// point for quantized tensors. PADV2 (``PadV2``) shares this kernel with a constant-value input.
struct Pad: Kernel {
    let fill: PadFill
    let outputCount: Int
    let copy: StridedCopy

    /// The padding value, as the output's element type.
    enum PadFill: Sendable {
        case bytes(UInt64, size: Int)
    }

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        return try prepare(&context, constantValue: nil)
    }

    /// Shared by PAD and PADV2; `constantValue` is PADV2's third input, if present.
    static func prepare(_ context: inout OpContext, constantValue: TensorInfo?) throws -> any Kernel {
        let input = try context.input(0)
        let paddingsTensor = try context.input(1)
        let output = context.outputs[0]
        let elementSize = try ShapeSupport.elementSize(context, input, "input")
        try ShapeSupport.expectSameType(context, input: input, output: output)
        guard elementSize <= 8 else { throw context.fail("input type \(input.type) is not supported", code: .unsupportedOperator) }
        let rank = input.rank
        guard paddingsTensor.rank == 2, paddingsTensor.shape[0] == rank, paddingsTensor.shape[1] == 2 else {
            throw context.fail("paddings has shape \(Shape(paddingsTensor.shape)), expected [\(rank),2] for input shape \(Shape(input.shape))")
        }
        let paddings = try ShapeSupport.constantIntegers(context, paddingsTensor, "paddings")
        var shape: [Int] = []
        for d in 0..<rank {
            let before = paddings[2 * d], after = paddings[2 * d + 1]
            guard before >= 0, after >= 0, before <= Int(Int32.max), after <= Int(Int32.max) else {
                throw context.fail("paddings \(paddings) must be non-negative")
            }
            shape.append(input.shape[d] + before + after)
        }
        // Checked here, before the strides and offsets below are computed from it: the output
        // tensor's own size check comes after prepare.
        guard Shape(shape).elementCount != nil else {
            throw context.fail("paddings \(paddings) make an output of shape \(Shape(shape)), whose element count overflows",
                               code: .resourceLimit)
        }

        // The fill value, as raw bytes of the element type.
        var raw: UInt64 = 0
        if let value = constantValue {
            guard value.type == input.type else {
                throw context.fail("constant value has type \(value.type), the input has type \(input.type)")
            }
            guard value.elementCount == 1 else { throw context.fail("constant value must hold one element, has \(value.elementCount)") }
            guard let data = value.constant else {
                throw context.fail("constant value must be a constant tensor", code: .unsupportedOperator)
            }
            if (input.type == .uint8 || input.type == .int8 || input.type == .int16), output.quantization?.isQuantized == true {
                guard value.zeroPoint == output.zeroPoint, value.scale == output.scale else {
                    throw context.fail("constant value must have the output's quantization parameters", code: .invalidQuantization)
                }
            }
            withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: data[0..<elementSize])) }
        } else if input.type == .uint8 || input.type == .int8 || input.type == .int16 {
            let zp = Int64(output.quantization?.zeroPoint ?? 0)
            let (lo, hi) = FixedPoint.integerRange(input.type)
            guard zp >= Int64(lo) && zp <= Int64(hi) else {
                throw context.fail("output zero point \(zp) is not representable in \(input.type)", code: .invalidQuantization)
            }
            switch input.type {
            case .uint8: raw = UInt64(UInt8(zp))
            case .int8: raw = UInt64(UInt8(bitPattern: Int8(zp)))
            default: raw = UInt64(UInt16(bitPattern: Int16(zp)))
            }
        }

        // Only the innermost dimension padded, with a fill whose bytes are all equal (0.0, a zero
        // point): rows of [fill][input row][fill] by CKernels.
        let fillBytes = withUnsafeBytes(of: raw) { Array($0.prefix(elementSize)) }
        if let isa = context.instructionSet, rank >= 1, (0..<(2 * rank - 2)).allSatisfy({ paddings[$0] == 0 }),
           let first = fillBytes.first, fillBytes.allSatisfy({ $0 == first }) {
            let inner = input.shape[rank - 1]
            context.outputs[0].shape = shape
            return OptimizedPadRowsKernel(isa: isa, rows: inner == 0 ? 0 : input.elementCount / inner,
                                          inputRowBytes: inner * elementSize, beforeBytes: paddings[2 * rank - 2] * elementSize,
                                          afterBytes: paddings[2 * rank - 1] * elementSize, fill: first)
        }
        let outputStrides = ShapeSupport.strides(shape)
        let base = (0..<rank).reduce(0) { $0 + paddings[2 * $1] * outputStrides[$1] }
        context.outputs[0].shape = shape
        return Pad(fill: .bytes(raw, size: elementSize), outputCount: ShapeSupport.count(shape),
                   copy: StridedCopy(counts: input.shape, inputStrides: ShapeSupport.strides(input.shape),
                                     outputStrides: outputStrides, outputBase: base, elementSize: elementSize))
    }

    func run(_ io: KernelIO) {
        let out = io.output(0)
        switch fill {
        case .bytes(let raw, let size):
            switch size {
            case 1: out.initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: raw), count: outputCount)
            case 2: out.initializeMemory(as: UInt16.self, repeating: UInt16(truncatingIfNeeded: raw), count: outputCount)
            case 4: out.initializeMemory(as: UInt32.self, repeating: UInt32(truncatingIfNeeded: raw), count: outputCount)
            default: out.initializeMemory(as: UInt64.self, repeating: raw, count: outputCount)
            }
        }
        copy.run(from: io.input(0), to: out)
    }
}

/// PAD of the innermost dimension only: each output row is fill, the input row, fill (CKernels).
struct OptimizedPadRowsKernel: Kernel {
    let isa: Int32
    let rows: Int
    let inputRowBytes: Int
    let beforeBytes: Int
    let afterBytes: Int
    let fill: UInt8

    func run(_ io: KernelIO) {
        let input = io.input(0), output = io.output(0)
        forEachChunk(rows, io.parallel) { start, end in
            ck_pad_rows(isa, input, output, start, end, inputRowBytes, beforeBytes, afterBytes, fill)
        }
    }
}
