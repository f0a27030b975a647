import TFLiteFormat
import TensorCore

/// STRIDED_SLICE (tensorflow/lite/kernels/strided_slice.cc with reference/strided_slice.h): constant
/// int32 `begin`, `end`, `strides`; begin/end/ellipsis/new_axis/shrink_axis masks and the `offset`
/// option (end is a size relative to begin) are resolved exactly like TFLite's
/// BuildStridedSliceParams / StartForAxis / EndForAxis, then the slice is one strided copy.
struct StridedSlice: Kernel {
    let copy: StridedCopy

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 4, outputs: 1)
        guard case .stridedSlice(let options) = context.options else { throw context.fail("missing StridedSliceOptions") }
        let input = try context.input(0)
        let elementSize = try ShapeSupport.elementSize(context, input, "input")
        try ShapeSupport.expectSameType(context, input: input, output: context.outputs[0])
        var vectors: [[Int]] = []
        for (i, name) in [(1, "begin"), (2, "end"), (3, "strides")] {
            let t = try context.input(i)
            guard t.rank == 1 else { throw context.fail("\(name) has shape \(Shape(t.shape)), expected a vector") }
            try context.expect(t, type: [.int32], name)
            vectors.append(try ShapeSupport.constantIntegers(context, t, name))
        }
        let (begin, end, strideValues) = (vectors[0], vectors[1], vectors[2])
        let spec = begin.count
        guard end.count == spec, strideValues.count == spec else {
            throw context.fail("begin, end and strides have \(begin.count), \(end.count) and \(strideValues.count) entries")
        }
        guard spec <= 31 else { throw context.fail("at most 31 slice indices are supported, has \(spec)") }
        func bit(_ mask: Int32, _ i: Int) -> Bool { i >= 0 && i < 32 && (UInt32(bitPattern: mask) >> UInt32(i)) & 1 == 1 }
        guard UInt32(bitPattern: options.ellipsisMask).nonzeroBitCount <= 1 else {
            throw context.fail("ellipsis_mask \(options.ellipsisMask) has more than one ellipsis")
        }
        let rank = input.rank

        // Effective dimensions: the input's plus the new axes (TFLite's BuildStridedSliceParams).
        var addAxes = 0
        for i in 0..<spec where !bit(options.ellipsisMask, i) && bit(options.newAxisMask, i) { addAxes += 1 }
        let effective = rank + addAxes
        var isEllipsis = [Bool](repeating: false, count: effective)
        var isNewAxis = [Bool](repeating: false, count: effective)
        var ellipsisStart = effective, expandedEllipsis = 0
        var i = 0
        while i < effective {
            if bit(options.ellipsisMask, i) {
                ellipsisStart = i
                let ellipsisEnd = max(i + 1, min(i + 1 + addAxes + rank - spec, effective))
                expandedEllipsis = ellipsisEnd - ellipsisStart - 1
                while i < ellipsisEnd { isEllipsis[i] = true; i += 1 }
                continue
            }
            if bit(options.newAxisMask, i - expandedEllipsis) { isNewAxis[i] = true }
            i += 1
        }

        var starts = [Int](repeating: 0, count: effective)
        var stops = [Int](repeating: 0, count: effective)
        var strides = [Int](repeating: 1, count: effective)
        var beginMask = [Bool](repeating: false, count: effective)
        var endMask = [Bool](repeating: false, count: effective)
        var shrink = [Bool](repeating: false, count: effective)
        var inputDimension = [Int?](repeating: nil, count: effective)
        var addedEllipsis = 0, addedAxes = 0
        for i in 0..<effective {
            if isNewAxis[i] && !isEllipsis[i] {
                stops[i] = 1
                addedAxes += 1
                continue
            }
            let d = i - addedAxes
            guard d >= 0 && d < rank else {
                throw context.fail("the slice spec (\(spec) entries, masks \(options)) does not fit input shape \(Shape(input.shape))")
            }
            inputDimension[i] = d
            if isEllipsis[i] {
                addedEllipsis = max(0, i - ellipsisStart)
                beginMask[i] = true; endMask[i] = true
            } else if i >= spec + expandedEllipsis {
                beginMask[i] = true; endMask[i] = true
            } else {
                let o = i - addedEllipsis
                guard o >= 0 && o < spec else {
                    throw context.fail("the slice spec (\(spec) entries, masks \(options)) does not fit input shape \(Shape(input.shape))")
                }
                starts[i] = begin[o]
                stops[i] = end[o]
                strides[i] = strideValues[o]
                beginMask[i] = bit(options.beginMask, o)
                endMask[i] = bit(options.endMask, o)
                shrink[i] = bit(options.shrinkAxisMask, o)
            }
        }

        // Per effective axis: start, count (TFLite's StartForAxis / EndForAxis and output shape).
        let inputStrides = ShapeSupport.strides(input.shape)
        var counts: [Int] = [], copyStrides: [Int] = [], outputShape: [Int] = []
        var base = 0
        for i in 0..<effective {
            let size = inputDimension[i].map { input.shape[$0] } ?? 1
            let stride = strides[i]
            guard stride != 0 else { throw context.fail("strides \(strideValues) has a zero stride") }
            guard stride != Int(Int32.min) else { throw context.fail("stride \(stride) is not supported") }
            func clamp(_ v: Int, _ lo: Int, _ hi: Int) -> Int { hi < v ? hi : (v < lo ? lo : v) }
            var start = starts[i]
            if start < 0 { start += size }
            start = stride > 0 ? clamp(start, 0, size) : clamp(start, -1, size - 1)
            if beginMask[i] { start = stride > 0 ? 0 : size - 1 }
            let count: Int
            if shrink[i] {
                guard start >= 0 && start < size else {
                    throw context.fail("shrink index \(starts[i]) is out of range for dimension \(inputDimension[i] ?? 0) of input shape \(Shape(input.shape))")
                }
                count = 1
            } else {
                var stop = stops[i]
                if options.offset { stop += start }
                if stop < 0 { stop += size }
                stop = stride > 0 ? clamp(stop, 0, size) : clamp(stop, -1, size - 1)
                if endMask[i] { stop = stride > 0 ? size : -1 }
                let extent = stop - start
                if (extent < 0) != (stride < 0) || extent == 0 {
                    count = 0
                } else if stride < 0 {
                    count = (extent + 1) / stride + 1
                } else {
                    count = (extent - 1) / stride + 1
                }
                outputShape.append(count)
            }
            counts.append(count)
            if let d = inputDimension[i] {
                copyStrides.append(stride * inputStrides[d])
                if count > 0 { base += start * inputStrides[d] }
            } else {
                copyStrides.append(0)
            }
        }
        context.outputs[0].shape = outputShape
        return StridedSlice(copy: StridedCopy(counts: counts, inputStrides: copyStrides, outputStrides: ShapeSupport.strides(counts),
                                              inputBase: base, elementSize: elementSize))
    }

    func run(_ io: KernelIO) { copy.run(from: io.input(0), to: io.output(0)) }
}
