import TFLiteFormat
import TensorCore

/// CONCATENATION (tensorflow/lite/kernels/concatenation.cc). Inputs of any fixed-size type are
/// joined along `axis` (negative counts from the end). A quantized uint8/int8 input whose scale or
/// zero point differs from the output's is requantized like TFLite's ConcatenationWithScaling:
/// `round(q * (s_in / s_out) - z_in * (s_in / s_out)) + z_out` in float, half away from zero,
/// saturated. (TFLite does this for uint8 and requires equal parameters for int8; here int8 uses
/// the same formula.) A fused activation (TFLite rejects it) clamps float outputs, and quantized
/// outputs to the activation's quantized range.
struct Concatenation: Kernel {
    /// How one input's block is written.
    enum Mode: Sendable {
        case copy
        case clampFloat(min: Float, max: Float)
        /// Map 8-bit values through a 256-entry table indexed by their bit pattern: requantization
        /// (``Concatenation/requantize(_:_:_:_:_:_:)`` for every possible input value) and/or the
        /// activation's clamp, tabulated at prepare time.
        case table([UInt8])
    }

    /// The table of an 8-bit input of `type` (uint8 or int8): entry `b` is `f(value with bit pattern b)`.
    static func byteTable(_ type: ElementType, _ f: (Int32) -> Int32) -> [UInt8] {
        (0..<256).map { b in
            let value = type == .int8 ? Int32(Int8(bitPattern: UInt8(b))) : Int32(b)
            return UInt8(truncatingIfNeeded: f(value))
        }
    }

    let elementSize: Int
    let outerCount: Int
    /// Elements of each input copied per outer index.
    let blockSizes: [Int]
    let modes: [Mode]
    let outputType: ElementType

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 1...Int.max, outputs: 1...1)
        guard case .concatenation(let rawAxis, let activation) = context.options else {
            throw context.fail("missing ConcatenationOptions")
        }
        let inputs = try (0..<context.inputs.count).map { try context.input($0) }
        let output = context.outputs[0]
        let first = inputs[0]
        let elementSize = try ShapeSupport.elementSize(context, first, "input 0")
        for (i, t) in inputs.enumerated() where t.type != first.type {
            throw context.fail("input \(i) has type \(t.type), input 0 has type \(first.type)")
        }
        try ShapeSupport.expectSameType(context, input: first, output: output)

        // Scalars (TFLite: only when constant) concatenate into a vector.
        let scalars = first.rank == 0
        let rank = scalars ? 1 : first.rank
        let shapes = inputs.map { $0.rank == 0 ? [1] : $0.shape }
        guard let axis = ShapeSupport.normalizedAxis(rawAxis, rank: rank) else {
            throw context.fail("axis \(rawAxis) is out of range for input shape \(Shape(first.shape))")
        }
        var outputShape = shapes[0]
        for (i, shape) in shapes.enumerated().dropFirst() {
            guard shape.count == rank, inputs[i].rank == first.rank else {
                throw context.fail("input \(i) has shape \(Shape(inputs[i].shape)), which does not match input 0's rank \(first.rank)")
            }
            for d in 0..<rank where d != axis && shape[d] != outputShape[d] {
                throw context.fail("input \(i) has shape \(Shape(shape)), which differs from input 0's \(Shape(shapes[0])) outside axis \(axis)")
            }
            outputShape[axis] += shape[axis]
        }
        if scalars { outputShape = [inputs.count] }

        let inner = outputShape[(axis + 1)...].reduce(1, *)
        let outer = outputShape[..<axis].reduce(1, *)
        let blockSizes = shapes.map { $0[axis] * inner }

        var modes: [Mode] = []
        switch first.type {
        case .float32:
            let (lo, hi) = try floatRange(activation, context)
            modes = inputs.map { _ in activation == .none ? .copy : .clampFloat(min: lo, max: hi) }
        case .uint8, .int8:
            let quantized = output.quantization?.isQuantized == true
            if quantized { try context.expectPerTensor(output, "output") }
            guard activation == .none || quantized else {
                throw context.fail("a fused activation on \(first.type) needs a quantized output", code: .unsupportedOperator)
            }
            guard activation == .none || activation == .relu || activation == .relu6 || activation == .reluN1To1 else {
                throw context.fail("fused activation \(activation) is not supported", code: .unsupportedOperator)
            }
            let range = quantized
                ? FixedPoint.activationRange(activation, scale: output.scale, zeroPoint: output.zeroPoint, type: first.type)
                : FixedPoint.integerRange(first.type)
            for (i, t) in inputs.enumerated() {
                let sameParameters = !quantized || (t.scale == output.scale && t.zeroPoint == output.zeroPoint)
                if quantized, t.quantization?.isQuantized != true {
                    throw context.fail("input \(i) is not quantized but the output is", code: .invalidQuantization)
                }
                if quantized { try context.expectPerTensor(t, "input \(i)") }
                if sameParameters {
                    modes.append(activation == .none ? .copy : .table(byteTable(first.type) { Swift.min(Swift.max($0, range.min), range.max) }))
                } else {
                    let scale = t.scale * (1 / output.scale)
                    let bias = -Float(t.zeroPoint) * scale
                    let zeroPoint = output.zeroPoint
                    modes.append(.table(byteTable(first.type) { requantize(Float($0), scale, bias, zeroPoint, range.min, range.max) }))
                }
            }
        default:
            guard activation == .none else {
                throw context.fail("a fused activation is not supported for \(first.type)", code: .unsupportedOperator)
            }
            modes = inputs.map { _ in .copy }
        }
        context.outputs[0].shape = outputShape
        return Concatenation(elementSize: elementSize, outerCount: outer, blockSizes: blockSizes, modes: modes, outputType: first.type)
    }

    static func floatRange(_ activation: FusedActivation, _ context: OpContext) throws -> (Float, Float) {
        switch activation {
        case .none, .relu, .relu6, .reluN1To1: return FixedPoint.activationRange(activation)
        default: throw context.fail("fused activation \(activation) is not supported", code: .unsupportedOperator)
        }
    }

    func run(_ io: KernelIO) {
        var out = io.output(0)
        let inputs = (0..<blockSizes.count)
        for k in 0..<outerCount {
            for i in inputs {
                let n = blockSizes[i]
                guard n > 0 else { continue }
                let src = io.input(i) + k * n * elementSize
                switch modes[i] {
                case .copy:
                    out.copyMemory(from: src, byteCount: n * elementSize)
                case .clampFloat(let lo, let hi):
                    let s = src.assumingMemoryBound(to: Float.self), d = out.assumingMemoryBound(to: Float.self)
                    for j in 0..<n { d[j] = Swift.min(Swift.max(s[j], lo), hi) }
                case .table(let table):
                    let s = src.assumingMemoryBound(to: UInt8.self), d = out.assumingMemoryBound(to: UInt8.self)
                    table.withUnsafeBufferPointer { t in
                        guard let lut = t.baseAddress else { return }
                        for j in 0..<n { d[j] = lut[Int(s[j])] }
                    }
                }
                out += n * elementSize
            }
        }
    }

    /// `round(q * scale + bias) + zeroPoint`, clamped to [lo, hi]; a NaN (from an infinite scale)
    /// gives the zero point.
    @inline(__always)
    static func requantize(_ q: Float, _ scale: Float, _ bias: Float, _ zeroPoint: Int32, _ lo: Int32, _ hi: Int32) -> Int32 {
        let r = (q * scale + bias).rounded(.toNearestOrAwayFromZero)
        let v: Int32
        if r.isNaN {
            v = zeroPoint
        } else {
            v = Int32(Swift.max(Swift.min(r, 1e9), -1e9)) &+ zeroPoint
        }
        return Swift.min(Swift.max(v, lo), hi)
    }
}
