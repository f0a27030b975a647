import TFLiteFormat
import TensorCore

/// SLICE (tensorflow/lite/kernels/slice.cc): constant `begin` and `size` vectors (int32/int64, one
/// entry per input dimension); a size of -1 takes everything from `begin` to the end.
struct Slice: Kernel {
    let copy: StridedCopy

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 3, outputs: 1)
        let input = try context.input(0)
        let beginTensor = try context.input(1)
        let sizeTensor = try context.input(2)
        let elementSize = try ShapeSupport.elementSize(context, input, "input")
        try ShapeSupport.expectSameType(context, input: input, output: context.outputs[0])
        guard beginTensor.rank == 1, sizeTensor.rank == 1 else {
            throw context.fail("begin and size must be vectors, have shapes \(Shape(beginTensor.shape)) and \(Shape(sizeTensor.shape))")
        }
        let begin = try ShapeSupport.constantIntegers(context, beginTensor, "begin")
        let size = try ShapeSupport.constantIntegers(context, sizeTensor, "size")
        guard begin.count == input.rank, size.count == input.rank else {
            throw context.fail("begin and size have \(begin.count) and \(size.count) entries for input shape \(Shape(input.shape))")
        }
        var shape: [Int] = []
        for d in 0..<input.rank {
            let dim = input.shape[d]
            guard begin[d] >= 0 && begin[d] <= dim else {
                throw context.fail("begin \(begin) is out of range for input shape \(Shape(input.shape))")
            }
            if size[d] == -1 {
                shape.append(dim - begin[d])
            } else {
                guard size[d] >= 0 && begin[d] + size[d] <= dim else {
                    throw context.fail("begin \(begin) and size \(size) do not fit input shape \(Shape(input.shape))")
                }
                shape.append(size[d])
            }
        }
        let strides = ShapeSupport.strides(input.shape)
        let base = zip(begin, strides).reduce(0) { $0 + $1.0 * $1.1 }
        context.outputs[0].shape = shape
        return Slice(copy: StridedCopy(counts: shape, inputStrides: strides, outputStrides: ShapeSupport.strides(shape),
                                       inputBase: base, elementSize: elementSize))
    }

    func run(_ io: KernelIO) { copy.run(from: io.input(0), to: io.output(0)) }
}
