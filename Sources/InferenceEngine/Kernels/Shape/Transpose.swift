import TFLiteFormat
import TensorCore

/// TRANSPOSE (tensorflow/lite/kernels/transpose.cc): output dimension `i` is input dimension
/// `perm[i]` (constant int32/int64, negative values count from the end), up to rank 8.
struct Transpose: Kernel {
    let copy: StridedCopy

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        let input = try context.input(0)
        let permTensor = try context.input(1)
        let elementSize = try ShapeSupport.elementSize(context, input, "input")
        try ShapeSupport.expectSameType(context, input: input, output: context.outputs[0])
        guard input.rank <= 8 else { throw context.fail("input has rank \(input.rank); at most 8 is supported", code: .unsupportedOperator) }
        guard permTensor.rank == 1 else { throw context.fail("perm has shape \(Shape(permTensor.shape)), expected a vector") }
        let raw = try ShapeSupport.constantIntegers(context, permTensor, "perm")
        let rank = input.rank
        guard raw.count == rank else { throw context.fail("perm \(raw) does not have one entry per dimension of input shape \(Shape(input.shape))") }
        var perm: [Int] = []
        var used = [Bool](repeating: false, count: rank)
        for p in raw {
            guard let d = ShapeSupport.normalizedAxis(p, rank: rank), !used[d] else {
                throw context.fail("perm \(raw) is not a permutation of the \(rank) input dimensions")
            }
            used[d] = true
            perm.append(d)
        }
        let shape = perm.map { input.shape[$0] }
        let inputStrides = ShapeSupport.strides(input.shape)
        context.outputs[0].shape = shape
        return Transpose(copy: StridedCopy(counts: shape, inputStrides: perm.map { inputStrides[$0] },
                                           outputStrides: ShapeSupport.strides(shape), elementSize: elementSize))
    }

    func run(_ io: KernelIO) { copy.run(from: io.input(0), to: io.output(0)) }
}
