import TFLiteFormat
import TensorCore

/// Helpers shared by the data-movement kernels of the Shape group.
enum ShapeSupport {
    /// Bytes per element of a tensor whose data is moved as opaque bytes (any fixed-size type).
    static func elementSize(_ context: OpContext, _ tensor: TensorInfo, _ what: String) throws -> Int {
        guard let size = tensor.type.byteSize, size > 0 else {
            throw context.fail("\(what) has type \(tensor.type), which has no fixed element size", code: .unsupportedOperator)
        }
        return size
    }

    /// Checks that the output has the input's element type (data movement does not convert).
    static func expectSameType(_ context: OpContext, input: TensorInfo, output: TensorInfo) throws {
        guard input.type == output.type else {
            throw context.fail("output has type \(output.type) but the input has type \(input.type)")
        }
    }

    /// `axis` in -rank..<rank made non-negative, or nil when out of range.
    static func normalizedAxis(_ axis: Int, rank: Int) -> Int? {
        let a = axis < 0 ? axis + rank : axis
        return a >= 0 && a < rank ? a : nil
    }

    /// The values of a constant int32/int64 tensor that must be present at prepare time.
    static func constantIntegers(_ context: OpContext, _ tensor: TensorInfo, _ what: String) throws -> [Int] {
        guard tensor.type == .int32 || tensor.type == .int64 else {
            throw context.fail("\(what) has type \(tensor.type), expected int32 or int64", code: .unsupportedOperator)
        }
        guard let values = tensor.constantIntegers() else {
            throw context.fail("\(what) must be a constant tensor (dynamic shapes are not supported)", code: .unsupportedOperator)
        }
        return values
    }

    /// Row-major strides (in elements) of `shape`.
    static func strides(_ shape: [Int]) -> [Int] {
        var strides = [Int](repeating: 1, count: shape.count)
        var running = 1
        for d in stride(from: shape.count - 1, through: 0, by: -1) {
            strides[d] = running
            running *= shape[d]
        }
        return strides
    }

    /// Element count of a shape.
    static func count(_ shape: [Int]) -> Int { shape.reduce(1, *) }
}

/// A copy of a box of elements between two strided layouts: element `(i0, i1, ...)` of the box is
/// read at `inputBase + Σ ik * inputStrides[k]` and written at `outputBase + Σ ik * outputStrides[k]`
/// (offsets and strides in elements; input strides may be negative). Dimensions are collapsed at
/// construction so the innermost run is as long as possible; contiguous runs are copied with one
/// memcpy. Used by SLICE, STRIDED_SLICE, TRANSPOSE, PAD, SPLIT.
struct StridedCopy: Sendable {
    let counts: [Int]
    let inputStrides: [Int]
    let outputStrides: [Int]
    let inputBase: Int
    let outputBase: Int
    let elementSize: Int
    /// Whether the box has no element at all.
    let isEmpty: Bool

    init(counts: [Int], inputStrides: [Int], outputStrides: [Int], inputBase: Int = 0, outputBase: Int = 0, elementSize: Int) {
        self.elementSize = elementSize
        self.inputBase = inputBase
        self.outputBase = outputBase
        isEmpty = counts.contains(0)
        var c: [Int] = [], i: [Int] = [], o: [Int] = []
        for k in counts.indices where counts[k] != 1 {
            c.append(counts[k]); i.append(inputStrides[k]); o.append(outputStrides[k])
        }
        // Merge an outer dimension into the next inner one when both layouts are contiguous across them.
        var k = c.count - 2
        while k >= 0 {
            if i[k] == i[k + 1] * c[k + 1] && o[k] == o[k + 1] * c[k + 1] {
                c[k + 1] *= c[k]
                c.remove(at: k); i.remove(at: k); o.remove(at: k)
            }
            k -= 1
        }
        self.counts = c
        self.inputStrides = i
        self.outputStrides = o
    }

    /// Copies from `input` to `output` (the tensors' base addresses).
    func run(from input: UnsafeRawPointer, to output: UnsafeMutableRawPointer) {
        guard !isEmpty else { return }
        if counts.isEmpty {
            (output + outputBase * elementSize).copyMemory(from: input + inputBase * elementSize, byteCount: elementSize)
            return
        }
        copy(dimension: 0, input: input, inputOffset: inputBase, output: output, outputOffset: outputBase)
    }

    private func copy(dimension d: Int, input: UnsafeRawPointer, inputOffset: Int, output: UnsafeMutableRawPointer, outputOffset: Int) {
        let n = counts[d], si = inputStrides[d], so = outputStrides[d]
        if d == counts.count - 1 {
            if si == 1 && so == 1 {
                (output + outputOffset * elementSize).copyMemory(from: input + inputOffset * elementSize, byteCount: n * elementSize)
                return
            }
            switch elementSize {
            case 1: Self.gather(UInt8.self, n, input, inputOffset, si, output, outputOffset, so)
            case 2: Self.gather(UInt16.self, n, input, inputOffset, si, output, outputOffset, so)
            case 4: Self.gather(UInt32.self, n, input, inputOffset, si, output, outputOffset, so)
            case 8: Self.gather(UInt64.self, n, input, inputOffset, si, output, outputOffset, so)
            default:
                for j in 0..<n {
                    (output + (outputOffset + j * so) * elementSize)
                        .copyMemory(from: input + (inputOffset + j * si) * elementSize, byteCount: elementSize)
                }
            }
            return
        }
        for j in 0..<n {
            copy(dimension: d + 1, input: input, inputOffset: inputOffset + j * si, output: output, outputOffset: outputOffset + j * so)
        }
    }

    @inline(__always)
    private static func gather<T>(_ type: T.Type, _ n: Int, _ input: UnsafeRawPointer, _ inputOffset: Int, _ si: Int,
                                  _ output: UnsafeMutableRawPointer, _ outputOffset: Int, _ so: Int) {
        let src = input.assumingMemoryBound(to: T.self) + inputOffset
        let dst = output.assumingMemoryBound(to: T.self) + outputOffset
        for j in 0..<n { dst[j * so] = src[j * si] }
    }
}
