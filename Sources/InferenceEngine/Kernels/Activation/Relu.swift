import TFLiteFormat
import TensorCore

/// RELU, RELU6, RELU_N1_TO_1 and RELU_0_TO_1: float32, and uint8/int8 (int16 for RELU/RELU6)
/// requantized from the input to the output scale and clamped (activations.cc QuantizedReluX).
enum Relu {
    static func prepareRelu(_ context: inout OpContext) throws -> any Kernel {
        try prepare(&context, min: 0, max: .infinity, types: [.float32, .uint8, .int8, .int16])
    }

    static func prepareRelu6(_ context: inout OpContext) throws -> any Kernel {
        try prepare(&context, min: 0, max: 6, types: [.float32, .uint8, .int8, .int16])
    }

    static func prepareReluN1To1(_ context: inout OpContext) throws -> any Kernel {
        try prepare(&context, min: -1, max: 1, types: [.float32, .uint8, .int8])
    }

    static func prepareRelu0To1(_ context: inout OpContext) throws -> any Kernel {
        try prepare(&context, min: 0, max: 1, types: [.float32, .uint8, .int8])
    }

    static func prepare(_ context: inout OpContext, min lower: Float, max upper: Float, types: Set<ElementType>) throws -> any Kernel {
        let input = try Unary.prepareOperands(&context, types: types)
        if input.type == .float32 {
            return Unary.floatKernel(count: input.elementCount, function: ClampFunction(lower: lower, upper: upper))
        }
        try Unary.expectQuantized(context, input)
        let output = context.outputs[0]
        if input.type == .int16 && (input.zeroPoint != 0 || output.zeroPoint != 0) {
            throw context.fail("int16 input and output must have zero point 0", code: .invalidQuantization)
        }
        let f = QuantizedRelu(input: input, output: output, min: lower, max: upper)
        if input.type == .int16 {
            return QuantizedReluInt16Kernel(count: input.elementCount, function: f)
        }
        return Unary.lookupKernel(input) { f($0) }
    }
}

/// `min(max(x, lower), upper)`.
struct ClampFunction: UnaryFloatFunction {
    let lower: Float
    let upper: Float
    @inline(__always)
    func callAsFunction(_ x: Float) -> Float { clampLikeTFLite(x, lower, upper) }
}

/// TFLite's quantized ReluX: `output_zp + MultiplyByQuantizedMultiplier(q - input_zp)` with the
/// multiplier input_scale / output_scale, clamped to the quantized activation bounds
/// (`zp + (int)roundf(bound / scale)` in float, clamped to the type range).
struct QuantizedRelu: Sendable {
    let inputOffset: Int32, outputOffset: Int32
    let multiplier: Int32, shift: Int
    let activationMin: Int32, activationMax: Int32

    init(input: TensorInfo, output: TensorInfo, min lower: Float, max upper: Float) {
        inputOffset = input.zeroPoint
        outputOffset = output.zeroPoint
        (multiplier, shift) = FixedPoint.quantizeMultiplier(Double(input.scale / output.scale))
        let (qmin, qmax) = FixedPoint.integerRange(output.type)
        func quantize(_ bound: Float) -> Int64 {
            let q = (bound / output.scale).rounded(.toNearestOrAwayFromZero)
            return Int64(output.zeroPoint) + Int64(Unary.saturatingInt32(q))
        }
        activationMin = Int32(Swift.max(Int64(qmin), quantize(lower)))
        activationMax = upper == .infinity ? qmax : Int32(Swift.min(Int64(qmax), quantize(upper)))
    }

    @inline(__always)
    func callAsFunction(_ q: Int32) -> Int32 {
        let value = Int64(outputOffset) + Int64(FixedPoint.multiplySaturating(q &- inputOffset, by: multiplier, shift: shift))
        let lower = Int64(activationMin), upper = Int64(activationMax)
        return Int32(truncatingIfNeeded: Swift.min(upper, Swift.max(lower, value)))
    }
}

struct QuantizedReluInt16Kernel: Kernel {
    let count: Int
    let function: QuantizedRelu

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Int16.self)
        let output = io.output(0, as: Int16.self)
        let f = function
        forEachChunk(count, io.parallel) { start, end in
            for i in start..<end { output[i] = Int16(truncatingIfNeeded: f(Int32(input[i]))) }
        }
    }
}
