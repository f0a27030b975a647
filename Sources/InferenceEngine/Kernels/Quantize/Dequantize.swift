import CKernels
import TFLiteFormat
import TensorCore

/// DEQUANTIZE (dequantize.cc, reference kernels as used on x86):
///
/// - uint8/int8/int16 per-tensor: `(float)(double(scale) * (q - zero_point))`; int16 needs zero point 0.
/// - uint8/int8 per-channel (along the quantized dimension): `scale[c] * (q - zero_point[c])` in float.
/// - float16 -> float32 (IEEE half, including subnormals, infinities and NaN), e.g. fp16 weights.
enum Dequantize {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 1, outputs: 1)
        let input = try context.input(0)
        try context.expect(input, type: [.uint8, .int8, .int16, .float16], "input")
        try context.expect(context.outputs[0], type: [.float32], "output")
        context.outputs[0].shape = input.shape
        let count = input.elementCount
        if input.type == .float16 {
            return DequantizeFloat16Kernel(count: count, isa: context.instructionSet)
        }
        guard let q = input.quantization, q.isQuantized else {
            throw context.fail("\(input.type) input must carry quantization parameters", code: .invalidQuantization)
        }
        guard q.scales.allSatisfy({ $0 >= 0 && $0.isFinite }) else {
            throw context.fail("input has quantization scales \(q.scales)", code: .invalidQuantization)
        }
        let zeroPoints = q.zeroPoints.isEmpty ? [Int64](repeating: 0, count: q.scales.count)
            : q.zeroPoints.count == q.scales.count ? q.zeroPoints : [Int64](repeating: q.zeroPoints[0], count: q.scales.count)
        if q.scales.count > 1 {
            guard input.type != .int16 else {
                throw context.fail("per-channel dequantization supports uint8 and int8 inputs, not int16", code: .unsupportedOperator)
            }
            let axis = q.quantizedDimension
            guard axis >= 0, axis < input.rank, input.shape[axis] == q.scales.count else {
                throw context.fail("input has \(q.scales.count) per-channel scales along dimension \(axis) but shape \(Shape(input.shape))", code: .invalidQuantization)
            }
            let inner = input.shape[(axis + 1)...].reduce(1, *)
            let zp = zeroPoints.map { Int32(clamping: $0) }
            if input.type == .uint8 {
                return SpecializedKernel(DequantizePerChannelKernel<UInt8>(count: count, inner: inner, scales: q.scales, zeroPoints: zp))
            }
            return SpecializedKernel(DequantizePerChannelKernel<Int8>(count: count, inner: inner, scales: q.scales, zeroPoints: zp))
        }
        let zeroPoint = Int32(clamping: zeroPoints[0])
        if input.type == .int16 && zeroPoint != 0 {
            throw context.fail("int16 input must have zero point 0, has \(zeroPoint)", code: .invalidQuantization)
        }
        let scale = Double(q.scales[0])
        func value(_ v: Int32) -> Float { Float(scale * Double(v - zeroPoint)) }
        switch input.type {
        case .uint8:
            return DequantizeTableKernel(count: count, table: (0..<256).map { value(Int32($0)) })
        case .int8:
            return DequantizeTableKernel(count: count, table: (0..<256).map { value(Int32(Int8(truncatingIfNeeded: $0))) })
        default:
            return DequantizeInt16Kernel(count: count, scale: scale, zeroPoint: zeroPoint)
        }
    }
}

/// 8-bit dequantization through a table indexed by the input's bit pattern.
struct DequantizeTableKernel: Kernel {
    let count: Int
    let table: [Float]

    func run(_ io: KernelIO) {
        let input = io.input(0, as: UInt8.self)
        let output = io.output(0, as: Float.self)
        table.withUnsafeBufferPointer { t in
            guard let lut = t.baseAddress else { return }
            forEachChunk(count, io.parallel) { start, end in
                for i in start..<end { output[i] = lut[Int(input[i])] }
            }
        }
    }
}

struct DequantizeInt16Kernel: Kernel {
    let count: Int
    let scale: Double
    let zeroPoint: Int32

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Int16.self)
        let output = io.output(0, as: Float.self)
        let scale = scale, zeroPoint = zeroPoint
        forEachChunk(count, io.parallel) { start, end in
            for i in start..<end { output[i] = Float(scale * Double(Int32(input[i]) - zeroPoint)) }
        }
    }
}

struct DequantizePerChannelKernel<T: FixedWidthInteger & Sendable>: SpecializedKernelBody {
    let count: Int
    let inner: Int
    let scales: [Float]
    let zeroPoints: [Int32]

    func execute(_ io: KernelIO) {
        let input = io.input(0, as: T.self)
        let output = io.output(0, as: Float.self)
        let channels = scales.count, inner = inner
        guard channels > 0, inner > 0 else { return }
        let blocks = count / (channels * inner)
        scales.withUnsafeBufferPointer { scales in
            zeroPoints.withUnsafeBufferPointer { zeroPoints in
                for block in 0..<blocks {
                    for c in 0..<channels {
                        let base = (block * channels + c) * inner
                        let scale = scales[c], zeroPoint = zeroPoints[c]
                        for i in base..<(base + inner) {
                            output[i] = scale * Float(Int32(input[i]) - zeroPoint)
                        }
                    }
                }
            }
        }
    }
}

/// float16 → float32; with an instruction set, CKernels' `ck_f16_to_f32` (the same bits, 8 at a
/// time: float16 weights are converted while the model compiles, where the scalar loop was a tenth
/// of BlazeFace's compile).
struct DequantizeFloat16Kernel: Kernel {
    let count: Int
    /// The CKernels level, or nil: the reference loop.
    let isa: Int32?

    func run(_ io: KernelIO) {
        let input = io.input(0, as: UInt16.self)
        let output = io.output(0, as: Float.self)
        forEachChunk(count, io.parallel) { start, end in
            if let isa {
                ck_f16_to_f32(isa, input, output, start, end)
            } else {
                for i in start..<end { output[i] = Float16Bits.float(input[i]) }
            }
        }
    }
}
