import TFLiteFormat
import TensorCore

/// SPLIT_V (tensorflow/lite/kernels/split_v.cc): inputs are the tensor, the constant size_splits
/// vector (int32/int64; one entry may be -1 and takes the rest) and the constant axis.
struct SplitV: Kernel {
    let pieces: SplitPieces

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 3...3, outputs: 1...Int.max)
        guard case .splitV(let numSplits) = context.options else { throw context.fail("missing SplitVOptions") }
        guard numSplits == context.outputs.count else {
            throw context.fail("num_splits is \(numSplits) but the operator has \(context.outputs.count) outputs")
        }
        let input = try context.input(0)
        let splitsTensor = try context.input(1)
        let axisTensor = try context.input(2)
        guard splitsTensor.rank == 1 else {
            throw context.fail("size_splits has shape \(Shape(splitsTensor.shape)), expected a vector")
        }
        var sizes = try ShapeSupport.constantIntegers(context, splitsTensor, "size_splits")
        guard sizes.count == numSplits else {
            throw context.fail("size_splits has \(sizes.count) entries for \(numSplits) outputs")
        }
        let axisValues = try ShapeSupport.constantIntegers(context, axisTensor, "axis input")
        guard axisValues.count == 1 else { throw context.fail("axis input must hold exactly one value, has \(axisValues.count)") }
        guard let axis = ShapeSupport.normalizedAxis(axisValues[0], rank: input.rank) else {
            throw context.fail("axis \(axisValues[0]) is out of range for input shape \(Shape(input.shape))")
        }
        let dimension = input.shape[axis]
        var inferred: Int?
        var sum = 0
        for (i, s) in sizes.enumerated() {
            if s == -1 {
                guard inferred == nil else { throw context.fail("size_splits \(sizes) has more than one -1") }
                inferred = i
            } else {
                guard s >= 0 else { throw context.fail("size_splits \(sizes) has a negative size") }
                sum += s
            }
        }
        if let inferred {
            guard sum <= dimension else {
                throw context.fail("size_splits \(sizes) add up to more than dimension \(axis) (\(dimension)) of the input")
            }
            sizes[inferred] = dimension - sum
        } else if sum != dimension {
            throw context.fail("size_splits \(sizes) must add up to dimension \(axis) (\(dimension)) of the input")
        }
        return SplitV(pieces: try SplitPieces(context: &context, input: input, axis: axis, sizes: sizes))
    }

    func run(_ io: KernelIO) { pieces.run(io, inputIndex: 0) }
}
