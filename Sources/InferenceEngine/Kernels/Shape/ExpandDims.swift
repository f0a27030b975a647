import TFLiteFormat
import TensorCore

/// EXPAND_DIMS (tensorflow/lite/kernels/expand_dims.cc): inserts a size-1 dimension at the position
/// given by the constant axis input (int32 or int64, one element; -1 appends). Input and output must
/// share quantization parameters. The data is copied unchanged.
struct ExpandDims: CopyingKernel {
    let byteCount: Int
    var copiesInput: Bool { true }

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        let input = try context.input(0)
        let axisTensor = try context.input(1)
        _ = try ShapeSupport.elementSize(context, input, "input")
        let output = context.outputs[0]
        try ShapeSupport.expectSameType(context, input: input, output: output)
        guard input.scale == output.scale, input.zeroPoint == output.zeroPoint else {
            throw context.fail("input and output must have the same quantization parameters", code: .invalidQuantization)
        }
        let values = try ShapeSupport.constantIntegers(context, axisTensor, "axis input")
        guard values.count == 1 else { throw context.fail("axis input must hold exactly one value, has \(values.count)") }
        let rank = input.rank
        var axis = values[0]
        if axis < 0 { axis += rank + 1 }
        guard axis >= 0 && axis <= rank else {
            throw context.fail("axis \(values[0]) is out of range for input shape \(Shape(input.shape))")
        }
        var shape = input.shape
        shape.insert(1, at: axis)
        context.outputs[0].shape = shape
        return ExpandDims(byteCount: input.byteCount)
    }

    func run(_ io: KernelIO) {
        let src = io.input(0), dst = io.output(0)
        if UnsafeRawPointer(dst) != src && byteCount > 0 {
            dst.copyMemory(from: src, byteCount: byteCount)
        }
    }
}
