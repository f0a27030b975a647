import TFLiteFormat
import TensorCore

/// How MEAN and SUM walk their input (tensorflow/lite/kernels/reduce.cc). Axes are resolved like
/// TFLite's ResolveAxis (negative values count from the end, duplicates ignored); adjacent
/// dimensions with the same reduced/kept status are merged and size-1 dimensions dropped. The
/// input is visited in row-major order, so every output accumulates its inputs in the same order
/// as TFLite's reference Reduce.
struct ReductionPlan: Sendable {
    let dimensions: [Int]
    let reduced: [Bool]
    let inputStrides: [Int]
    let outputStrides: [Int]
    /// Elements of the output.
    let outputCount: Int
    /// Input elements that fall into one output (TFLite's num_elements_in_axis).
    let reducedCount: Int
    /// Resolved axes in the order given (duplicates removed).
    let axes: [Int]
    let outputShape: [Int]

    /// Resolves the constant axis input of MEAN / SUM and the output shape (`keepDims` keeps the
    /// reduced dimensions with size 1).
    init(_ context: OpContext, input: TensorInfo, axisTensor: TensorInfo, keepDims: Bool) throws {
        try context.expect(axisTensor, type: [.int32, .int64], "axis input")
        guard let values = axisTensor.constantIntegers() else {
            throw context.fail("axis input must be a constant tensor (dynamic shapes are not supported)", code: .unsupportedOperator)
        }
        let rank = input.rank
        var axes: [Int] = []
        if rank > 0 {
            for v in values {
                guard let a = v < 0 ? (v + rank >= 0 ? v + rank : nil) : (v < rank ? v : nil) else {
                    throw context.fail("axis \(v) is out of range for input shape \(Shape(input.shape))")
                }
                if !axes.contains(a) { axes.append(a) }
            }
        }
        self.axes = axes
        let isReduced = (0..<rank).map { axes.contains($0) }
        outputShape = keepDims
            ? (0..<rank).map { isReduced[$0] ? 1 : input.shape[$0] }
            : (0..<rank).filter { !isReduced[$0] }.map { input.shape[$0] }
        outputCount = outputShape.reduce(1, *)
        reducedCount = (0..<rank).filter { isReduced[$0] }.reduce(1) { $0 * input.shape[$1] }

        // Merge runs of dimensions with the same status; drop size-1 dimensions.
        var dims: [Int] = [], kinds: [Bool] = []
        for d in 0..<rank where input.shape[d] != 1 {
            if let last = kinds.last, last == isReduced[d] {
                dims[dims.count - 1] *= input.shape[d]
            } else {
                dims.append(input.shape[d]); kinds.append(isReduced[d])
            }
        }
        dimensions = dims
        reduced = kinds
        inputStrides = ShapeSupport.strides(dims)
        var outStrides = [Int](repeating: 0, count: dims.count)
        var running = 1
        for d in stride(from: dims.count - 1, through: 0, by: -1) where !kinds[d] {
            outStrides[d] = running
            running *= dims[d]
        }
        outputStrides = outStrides
    }

    /// Calls `body(inputOffset, outputOffset, count, intoOne, rows)` for every innermost run, in
    /// input order: `count` consecutive inputs either all add into output `outputOffset` (`intoOne`,
    /// `rows` 1) or go one-to-one into consecutive outputs, `rows` times over (row r's inputs start
    /// at `inputOffset + r * count`; rows > 1 when a reduced dimension precedes the kept innermost
    /// one, e.g. a spatial mean over NHWC, so that the body runs once per image, not per pixel).
    func forEachRun(_ body: (Int, Int, Int, Bool, Int) -> Void) {
        if dimensions.contains(0) { return }
        if dimensions.isEmpty {
            body(0, 0, 1, true, 1)
            return
        }
        walk(0, 0, 0, body)
    }

    private func walk(_ d: Int, _ inputOffset: Int, _ outputOffset: Int, _ body: (Int, Int, Int, Bool, Int) -> Void) {
        let last = dimensions.count - 1
        if d == last {
            body(inputOffset, outputOffset, dimensions[d], reduced[d], 1)
            return
        }
        if d == last - 1, reduced[d], !reduced[last] {
            // Merged dimensions alternate, so dimension d's stride is the innermost count.
            body(inputOffset, outputOffset, dimensions[last], false, dimensions[d])
            return
        }
        for i in 0..<dimensions[d] {
            walk(d + 1, inputOffset + i * inputStrides[d], outputOffset + i * outputStrides[d], body)
        }
    }
}
