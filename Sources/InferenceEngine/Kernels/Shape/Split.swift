import TFLiteFormat
import TensorCore

/// SPLIT (tensorflow/lite/kernels/split.cc): inputs are the constant axis (int32, one value,
/// negative counts from the end) and the tensor; `num_splits` outputs of equal size along the axis.
struct Split: Kernel {
    let pieces: SplitPieces

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2...2, outputs: 1...Int.max)
        guard case .split(let numSplits) = context.options else { throw context.fail("missing SplitOptions") }
        guard numSplits == context.outputs.count else {
            throw context.fail("num_splits is \(numSplits) but the operator has \(context.outputs.count) outputs")
        }
        let axisTensor = try context.input(0)
        let input = try context.input(1)
        let values = try ShapeSupport.constantIntegers(context, axisTensor, "axis input")
        guard values.count == 1 else { throw context.fail("axis input must hold exactly one value, has \(values.count)") }
        guard let axis = ShapeSupport.normalizedAxis(values[0], rank: input.rank) else {
            throw context.fail("axis \(values[0]) is out of range for input shape \(Shape(input.shape))")
        }
        let size = input.shape[axis]
        guard size % numSplits == 0 else {
            throw context.fail("dimension \(axis) of input shape \(Shape(input.shape)) does not split evenly into \(numSplits)")
        }
        let sizes = [Int](repeating: size / numSplits, count: numSplits)
        return Split(pieces: try SplitPieces(context: &context, input: input, axis: axis, sizes: sizes))
    }

    func run(_ io: KernelIO) { pieces.run(io, inputIndex: 1) }
}

/// The copies of SPLIT and SPLIT_V: output `i` takes `sizes[i]` entries of `axis`, in order.
struct SplitPieces: Sendable {
    let outerCount: Int
    let inputBlock: Int
    /// Per output: byte offset of its first block in the input, and its block length in bytes.
    let offsets: [Int]
    let lengths: [Int]

    init(context: inout OpContext, input: TensorInfo, axis: Int, sizes: [Int]) throws {
        let elementSize = try ShapeSupport.elementSize(context, input, "input")
        for i in context.outputs.indices {
            try ShapeSupport.expectSameType(context, input: input, output: context.outputs[i])
        }
        let inner = input.shape[(axis + 1)...].reduce(1, *) * elementSize
        outerCount = input.shape[..<axis].reduce(1, *)
        inputBlock = input.shape[axis] * inner
        var start = 0
        var offsets: [Int] = [], lengths: [Int] = []
        for (i, size) in sizes.enumerated() {
            var shape = input.shape
            shape[axis] = size
            context.outputs[i].shape = shape
            offsets.append(start * inner)
            lengths.append(size * inner)
            start += size
        }
        self.offsets = offsets
        self.lengths = lengths
    }

    func run(_ io: KernelIO, inputIndex: Int) {
        let src = io.input(inputIndex)
        for i in offsets.indices where lengths[i] > 0 {
            let dst = io.output(i), n = lengths[i], offset = offsets[i]
            for k in 0..<outerCount {
                (dst + k * n).copyMemory(from: src + k * inputBlock + offset, byteCount: n)
            }
        }
    }
}
