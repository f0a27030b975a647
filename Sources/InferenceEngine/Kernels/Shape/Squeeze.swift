import TFLiteFormat
import TensorCore

/// SQUEEZE (tensorflow/lite/kernels/squeeze.cc): removes the size-1 dimensions listed in
/// `squeeze_dims` (negative values count from the end), or every size-1 dimension when the list is
/// empty. The data is copied unchanged.
struct Squeeze: Kernel {
    let byteCount: Int

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 1, outputs: 1)
        let input = try context.input(0)
        _ = try ShapeSupport.elementSize(context, input, "input")
        try ShapeSupport.expectSameType(context, input: input, output: context.outputs[0])
        var dimensions: [Int] = []
        if case .squeeze(let dims) = context.options { dimensions = dims }
        let rank = input.rank
        var squeeze = [Bool](repeating: false, count: rank)
        if dimensions.isEmpty {
            for d in 0..<rank where input.shape[d] == 1 { squeeze[d] = true }
        } else {
            for value in dimensions {
                guard let d = ShapeSupport.normalizedAxis(value, rank: rank) else {
                    throw context.fail("squeeze dimension \(value) is out of range for input shape \(Shape(input.shape))")
                }
                guard input.shape[d] == 1 else {
                    throw context.fail("cannot squeeze dimension \(value) of input shape \(Shape(input.shape)): its size is not 1")
                }
                squeeze[d] = true
            }
        }
        context.outputs[0].shape = (0..<rank).filter { !squeeze[$0] }.map { input.shape[$0] }
        return Squeeze(byteCount: input.byteCount)
    }

    func run(_ io: KernelIO) {
        let src = io.input(0), dst = io.output(0)
        if UnsafeRawPointer(dst) != src && byteCount > 0 {
            dst.copyMemory(from: src, byteCount: byteCount)
        }
    }
}
