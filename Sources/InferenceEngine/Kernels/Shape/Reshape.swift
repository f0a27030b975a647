import TFLiteFormat
import TensorCore

/// RESHAPE (tensorflow/lite/kernels/reshape.cc): the new shape comes from the second input when it
/// is a constant int32/int64 vector, else from the `new_shape` option; one dimension may be -1 and
/// is inferred. When neither is usable (a computed shape input, no option) the output tensor's
/// declared shape is used. The data is copied unchanged.
struct Reshape: CopyingKernel {
    let byteCount: Int
    var copiesInput: Bool { true }

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 1...2, outputs: 1...1)
        let input = try context.input(0)
        _ = try ShapeSupport.elementSize(context, input, "input")
        try ShapeSupport.expectSameType(context, input: input, output: context.outputs[0])

        var requested: [Int]?
        // Like TFLite, only a 1-D integer shape input counts; anything else falls back to the option.
        if let shape = context.optionalInput(1), shape.rank == 1, shape.type == .int32 || shape.type == .int64 {
            requested = shape.constantIntegers()
        }
        if requested == nil, case .reshape(let newShape?) = context.options {
            // TFLite: new_shape [0] means a scalar.
            requested = newShape == [0] ? [] : newShape
        }
        let elements = input.elementCount
        let shape: [Int]
        if let requested {
            shape = try resolve(requested, inputShape: input.shape, context: context)
        } else {
            let declared = context.outputs[0].shape
            guard declared.reduce(1, *) == elements else {
                throw context.fail("the new shape is not known before running (no constant shape input and no new_shape option), and the declared output shape \(Shape(declared)) does not hold the input's \(elements) elements",
                                   code: .unsupportedOperator)
            }
            shape = declared
        }
        context.outputs[0].shape = shape
        return Reshape(byteCount: input.byteCount)
    }

    /// TFLite's ResolveOutputShape: at most one -1, which takes the remaining element count.
    static func resolve(_ requested: [Int], inputShape: [Int], context: OpContext) throws -> [Int] {
        let elements = inputShape.reduce(1, *)
        var shape = requested
        var stretch: Int?
        var known = 1
        for (i, d) in requested.enumerated() {
            if d == -1 {
                guard stretch == nil else { throw context.fail("new shape \(Shape(requested)) has more than one -1 dimension") }
                stretch = i
                continue
            }
            guard d >= 0 else { throw context.fail("new shape \(Shape(requested)) has a negative dimension") }
            let (p, overflow) = known.multipliedReportingOverflow(by: d)
            guard !overflow else { throw context.fail("new shape \(Shape(requested)) overflows") }
            known = p
        }
        if let stretch {
            if elements == 0 && known != 0 {
                shape[stretch] = 0
            } else {
                // TFLite divides the products of the non-zero dimensions.
                let nonZeroIn = inputShape.reduce(1) { $1 == 0 ? $0 : $0 * $1 }
                let nonZeroOut = requested.enumerated().reduce(1) { $1.offset == stretch || $1.element == 0 ? $0 : $0 * $1.element }
                shape[stretch] = nonZeroOut == 0 ? 0 : nonZeroIn / nonZeroOut
            }
        }
        guard shape.reduce(1, *) == elements else {
            throw context.fail("cannot reshape \(elements) elements to \(Shape(requested))")
        }
        return shape
    }

    func run(_ io: KernelIO) {
        let src = io.input(0), dst = io.output(0)
        if UnsafeRawPointer(dst) != src && byteCount > 0 {
            dst.copyMemory(from: src, byteCount: byteCount)
        }
    }
}
