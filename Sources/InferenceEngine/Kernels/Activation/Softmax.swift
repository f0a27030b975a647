import CKernels
import Foundation
import TFLiteFormat
import TensorCore

/// SOFTMAX over the last axis (options `.softmax(beta:)`).
///
/// float32: `exp((x - max) * beta) / sum`. uint8/int8 (same output type): TFLite's builtin kernel
/// on x86 (activations.cc SoftmaxPrepare/kGenericOptimized and optimized_ops::Softmax with
/// PopulateSoftmaxLookupTable): a 256-entry float table of `expf(-input_scale * beta * d)` for the
/// distance `d` to the row maximum, a float sum in input order, probabilities scaled by
/// `1 / (sum * output_scale)`, then `(int)(p + 0.5)` for uint8 and `round(p) + zero_point` for
/// int8. int8 outputs must have zero point -128 and scale 1/256 (as TFLite checks).
enum Softmax {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        let beta: Float
        switch context.options {
        case .softmax(let b): beta = b
        case .none: beta = 0
        default: throw context.fail("has options \(context.options), expected SoftmaxOptions")
        }
        if let input = context.optionalInput(0), input.type != context.outputs.first?.type, context.outputs.first?.type == .int16 {
            throw context.fail("\(input.type) input with int16 output is not supported", code: .unsupportedOperator)
        }
        let input = try Unary.prepareOperands(&context, types: [.float32, .uint8, .int8])
        guard input.rank >= 1 else { throw context.fail("input must have rank 1 or more, has shape \(Shape(input.shape))") }
        let depth = input.shape[input.rank - 1]
        let rows = depth == 0 ? 0 : input.elementCount / depth
        if input.type == .float32 {
            return SoftmaxFloatKernel(rows: rows, depth: depth, beta: beta, isa: context.instructionSet)
        }
        try Unary.expectQuantized(context, input)
        let output = context.outputs[0]
        if output.type == .int8 {
            guard output.zeroPoint == -128, abs(output.scale - 1.0 / 256) <= 0.001 / 256 else {
                throw context.fail("int8 output must have zero point -128 and scale 1/256, has \(output.zeroPoint) and \(output.scale)", code: .invalidQuantization)
            }
        }
        let scale = -input.scale * beta
        var table = [Float](repeating: 0, count: 256)
        for value in 0...255 { table[255 - value] = Foundation.exp(scale * Float(value)) }
        if input.type == .uint8 {
            return SpecializedKernel(SoftmaxQuantizedKernel<UInt8>(rows: rows, depth: depth, table: table, outputScale: output.scale, outputZeroPoint: output.zeroPoint))
        }
        return SpecializedKernel(SoftmaxQuantizedKernel<Int8>(rows: rows, depth: depth, table: table, outputScale: output.scale, outputZeroPoint: output.zeroPoint))
    }
}

/// Float SOFTMAX. With an instruction set (the optimized selections) through CKernels
/// (ck_softmax_f32: vectorized exp and sum on AVX-512, the scalar loop below for rows with NaN or
/// infinity; MobileNet's 1,001 classes 5.6 → 0.9 µs); without (`reference`), the scalar loop.
struct SoftmaxFloatKernel: Kernel {
    let rows: Int
    let depth: Int
    let beta: Float
    var isa: Int32? = nil

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
        let depth = depth, beta = beta, isa = isa
        forEachChunk(rows, io.parallel) { start, end in
            if let isa {
                ck_softmax_f32(isa, input + start * depth, output + start * depth, end - start, depth, beta)
                return
            }
            for row in start..<end {
                let x = input + row * depth, y = output + row * depth
                var maximum = x[0]
                for i in 1..<depth where x[i] > maximum { maximum = x[i] }
                var sum: Float = 0
                for i in 0..<depth {
                    let e = Foundation.exp((x[i] - maximum) * beta)
                    y[i] = e
                    sum += e
                }
                let inverse = 1 / sum
                for i in 0..<depth { y[i] *= inverse }
            }
        }
    }
}

struct SoftmaxQuantizedKernel<T: FixedWidthInteger & Sendable>: SpecializedKernelBody {
    let rows: Int
    let depth: Int
    let table: [Float]
    let outputScale: Float
    let outputZeroPoint: Int32

    func execute(_ io: KernelIO) {
        let input = io.input(0, as: T.self)
        let output = io.output(0, as: T.self)
        let depth = depth, outputScale = outputScale, zeroPoint = outputZeroPoint
        let isUnsigned = T.self == UInt8.self
        let clampMin = Int32(T.min), clampMax = Int32(T.max)
        table.withUnsafeBufferPointer { t in
            guard let base = t.baseAddress else { return }
            forEachChunk(rows, io.parallel) { start, end in
                for row in start..<end {
                    let x = input + row * depth, y = output + row * depth
                    var maximum = Int32(T.min)
                    for i in 0..<depth { maximum = Swift.max(maximum, Int32(x[i])) }
                    // table[255 - max + x] = exp(-scale * beta * (max - x)).
                    let offset = base + Int(255 - maximum)
                    var sum: Float = 0
                    for i in 0..<depth { sum += offset[Int(x[i])] }
                    let inverse = 1 / (sum * outputScale)
                    for i in 0..<depth {
                        let p = offset[Int(x[i])] * inverse
                        let q: Int32
                        if isUnsigned {
                            q = Unary.saturatingInt32(p + 0.5)
                        } else {
                            q = Unary.saturatingInt32(p.rounded(.toNearestOrAwayFromZero)) &+ zeroPoint
                        }
                        y[i] = T(truncatingIfNeeded: Swift.max(Swift.min(clampMax, q), clampMin))
                    }
                }
            }
        }
    }
}
