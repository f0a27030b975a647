import TFLiteFormat
import TensorCore

/// GATHER (tensorflow/lite/kernels/gather.cc, reference/gather.h): picks entries of `axis` of the
/// params tensor by the indices tensor (int16/int32/int64), with `batch_dims` leading dimensions
/// shared by both. Constant indices are validated here (out of range is an error, like TFLite's
/// run-time check); computed indices that are out of range produce zeros instead of reading out
/// of bounds.
struct Gather: Kernel {
    let indexType: ElementType
    let batchCount: Int
    let outerCount: Int
    let axisSize: Int
    let indexCount: Int
    /// Bytes of one gathered block.
    let innerBytes: Int

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        guard case .gather(let rawAxis, let rawBatchDims) = context.options else { throw context.fail("missing GatherOptions") }
        let input = try context.input(0)
        let indices = try context.input(1)
        let elementSize = try ShapeSupport.elementSize(context, input, "params")
        try ShapeSupport.expectSameType(context, input: input, output: context.outputs[0])
        try context.expect(indices, type: [.int16, .int32, .int64], "indices")
        guard let axis = ShapeSupport.normalizedAxis(rawAxis, rank: input.rank) else {
            throw context.fail("axis \(rawAxis) is out of range for params shape \(Shape(input.shape))")
        }
        let batchDims = rawBatchDims < 0 ? rawBatchDims + indices.rank : rawBatchDims
        guard batchDims >= 0, batchDims <= axis, batchDims < input.rank, batchDims <= indices.rank else {
            throw context.fail("batch_dims \(rawBatchDims) does not fit axis \(rawAxis), params shape \(Shape(input.shape)) and indices shape \(Shape(indices.shape))")
        }
        for d in 0..<batchDims where input.shape[d] != indices.shape[d] {
            throw context.fail("dimension \(d) of params \(Shape(input.shape)) and indices \(Shape(indices.shape)) differ but is a batch dimension")
        }
        let axisSize = input.shape[axis]
        if let base = indices.constant?.baseAddress {
            for i in 0..<indices.elementCount {
                let v = Self.index(base, i, indices.type)
                guard v >= 0 && v < axisSize else {
                    throw context.fail("index \(v) is out of range for dimension \(axis) (size \(axisSize)) of params \(Shape(input.shape))")
                }
            }
        }
        context.outputs[0].shape = Array(input.shape[..<axis]) + Array(indices.shape[batchDims...]) + Array(input.shape[(axis + 1)...])
        return Gather(indexType: indices.type,
                      batchCount: input.shape[..<batchDims].reduce(1, *),
                      outerCount: input.shape[batchDims..<axis].reduce(1, *),
                      axisSize: axisSize,
                      indexCount: indices.shape[batchDims...].reduce(1, *),
                      innerBytes: input.shape[(axis + 1)...].reduce(1, *) * elementSize)
    }

    @inline(__always)
    static func index(_ base: UnsafeRawPointer, _ i: Int, _ type: ElementType) -> Int {
        switch type {
        case .int16: return Int(base.load(fromByteOffset: i * 2, as: Int16.self))
        case .int32: return Int(base.load(fromByteOffset: i * 4, as: Int32.self))
        default: return Int(truncatingIfNeeded: base.load(fromByteOffset: i * 8, as: Int64.self))
        }
    }

    func run(_ io: KernelIO) {
        let src = io.input(0), indices = io.input(1), dst = io.output(0)
        guard innerBytes > 0 else { return }
        for b in 0..<batchCount {
            for o in 0..<outerCount {
                let block = b * outerCount + o
                for i in 0..<indexCount {
                    let coordinate = Self.index(indices, b * indexCount + i, indexType)
                    let to = dst + (block * indexCount + i) * innerBytes
                    if coordinate >= 0 && coordinate < axisSize {
                        to.copyMemory(from: src + (block * axisSize + coordinate) * innerBytes, byteCount: innerBytes)
                    } else {
                        to.initializeMemory(as: UInt8.self, repeating: 0, count: innerBytes)
                    }
                }
            }
        }
    }
}
