import CKernels
import TFLiteFormat
import TensorCore

/// ARG_MAX (tensorflow/lite/kernels/arg_min_max.cc, reference/arg_min_max.h): the index of the
/// largest value along the constant axis (int32/int64, one value), as int32 or int64 per the
/// `output_type` option. Ties keep the lowest index; for float a NaN never wins over a number.
/// Inputs: float32, uint8, int8, int32, bool (quantized values compare as stored, which orders
/// them like their real values).
struct ArgMax: Kernel {
    let inputType: ElementType
    let outputType: ElementType
    let outerCount: Int, axisSize: Int, innerCount: Int
    /// The CKernels instruction set when optimized kernels are allowed (``KernelSelection``): 8-bit
    /// rows over the innermost axis then run in C.
    var instructionSet: Int32?

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        let input = try context.input(0)
        let axisTensor = try context.input(1)
        try context.expect(input, type: [.float32, .uint8, .int8, .int32, .bool], "input")
        guard input.rank >= 1 else { throw context.fail("input must have at least one dimension") }
        var outputType = ElementType.int64
        if case .argMax(let t) = context.options { outputType = t }
        guard outputType == .int32 || outputType == .int64 else {
            throw context.fail("output_type \(outputType) is not supported; expected int32 or int64", code: .unsupportedOperator)
        }
        guard context.outputs[0].type == outputType else {
            throw context.fail("output has type \(context.outputs[0].type) but output_type is \(outputType)")
        }
        let values = try ShapeSupport.constantIntegers(context, axisTensor, "axis input")
        guard values.count == 1 else { throw context.fail("axis input must hold exactly one value, has \(values.count)") }
        guard let axis = ShapeSupport.normalizedAxis(values[0], rank: input.rank) else {
            throw context.fail("axis \(values[0]) is out of range for input shape \(Shape(input.shape))")
        }
        guard input.shape[axis] > 0 || input.elementCount == 0 else {
            throw context.fail("cannot take the arg max over an empty dimension \(axis)")
        }
        var shape = input.shape
        shape.remove(at: axis)
        context.outputs[0].shape = shape
        return ArgMax(inputType: input.type, outputType: outputType,
                      outerCount: input.shape[..<axis].reduce(1, *), axisSize: input.shape[axis],
                      innerCount: input.shape[(axis + 1)...].reduce(1, *), instructionSet: context.instructionSet)
    }

    func run(_ io: KernelIO) {
        let src = io.input(0), dst = io.output(0)
        if let isa = instructionSet, innerCount == 1, axisSize > 0, axisSize < Int(Int32.max), inputType == .uint8 || inputType == .int8 || inputType == .bool {
            // The common case (a segmentation map's class axis, innermost): a tight C loop per row.
            let rows = outerCount
            let pieces = io.parallel.threadCount > 1 && rows >= 4096 ? io.parallel.threadCount * 4 : 1
            io.parallel.forEach(pieces) { piece in
                let range = ConvolutionSupport.range(piece: piece, of: pieces, count: rows)
                ck_argmax_8(isa, src.assumingMemoryBound(to: UInt8.self), Int32(axisSize), inputType == .int8 ? 1 : 0, dst,
                            outputType == .int64 ? 1 : 0, range.lowerBound, range.upperBound)
            }
            return
        }
        switch inputType {
        case .float32: argMax(src.assumingMemoryBound(to: Float.self), dst) { c, m in !c.isNaN && (m.isNaN || c > m) }
        case .uint8, .bool: argMax(src.assumingMemoryBound(to: UInt8.self), dst) { c, m in c > m }
        case .int8: argMax(src.assumingMemoryBound(to: Int8.self), dst) { c, m in c > m }
        default: argMax(src.assumingMemoryBound(to: Int32.self), dst) { c, m in c > m }
        }
    }

    @inline(__always)
    private func argMax<T>(_ input: UnsafePointer<T>, _ output: UnsafeMutableRawPointer, _ better: (T, T) -> Bool) {
        guard axisSize > 0 else { return }
        let out32 = output.assumingMemoryBound(to: Int32.self), out64 = output.assumingMemoryBound(to: Int64.self)
        for outer in 0..<outerCount {
            for inner in 0..<innerCount {
                let p = input + outer * axisSize * innerCount + inner
                var best = p[0], index = 0
                for i in 1..<max(axisSize, 1) where better(p[i * innerCount], best) {
                    best = p[i * innerCount]
                    index = i
                }
                let o = outer * innerCount + inner
                if outputType == .int32 { out32[o] = Int32(index) } else { out64[o] = Int64(index) }
            }
        }
    }
}
