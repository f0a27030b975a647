import TFLiteFormat
import TensorCore

/// A residual ADD folded into the float convolution that produces one of its inputs.
struct ResidualAdd: Sendable {
    /// Position of the residual tensor among the convolution node's inputs.
    let input: Int
    /// Channels per pixel of the residual tensor, and the output channel its channel 0 lands on
    /// (a PAD of the channels in between is folded too: the padded channels add +0.0).
    let channels: Int
    let before: Int
    /// The ADD's activation clamp.
    let lo: Float, hi: Float
    /// The residual is one vector per image, added to every pixel (its tensor is [batches, 1, 1,
    /// channels]: ``ConstantBranchFusion``'s projection) instead of an image of the output's size.
    var broadcast = false
}

/// Folds `CONV_2D → ADD(residual, conv)` — the residual optionally through a PAD of its channels
/// only — into the convolution's epilogue (BlazeFace's blocks, MobileNet v2's and DeepLab's
/// inverted residuals, selfie segmentation).
///
/// The ADD (and the PAD) are one or two more passes over tensors the convolution's tiles have just
/// had in cache, each with its own hand-off to the thread pool. Folded, every tile of the
/// convolution adds the residual right after its own bias and clamp and then applies the ADD's
/// clamp: the same float operations on the same values in the same order as the three operators,
/// so results are bitwise the same. The fold is decided while the ADD is prepared, with the shapes
/// and kernels already prepared: only an optimized float CONV_2D whose output nothing else reads,
/// a residual computed before that convolution runs, same batch/height/width, and for the PAD case
/// a zero-filled pad of the innermost dimension. The `reference` selection runs the graph as written.
enum ResidualFusion {
    typealias Entry = (op: Int, inputs: [Int], outputs: [Int], kernel: any Kernel, scratch: Int)

    /// Folds ADD `op` (prepared with `options`, writing `outputs`) into an entry of `prepared` if it
    /// can; returns whether it did (then the ADD must not be prepared). `readers` counts, per
    /// tensor, the operators that will read it.
    static func fold(add op: Operator, options: BuiltinOptions, outputs: [Int], prepared: inout [Entry],
                     tensors: inout [TensorInfo], graph: Subgraph, file: TFLiteModel,
                     readers: ReaderCounts, graphOutputs: Set<Int>) -> Bool {
        guard case .add(let activation) = options, op.inputs.count == 2, outputs.count == 1,
              let out = outputs.first, out >= 0, out < tensors.count, tensors[out].type == .float32,
              !graph.tensors[out].isVariable
        else { return false }
        // The entry that writes a tensor (the last, as entries come in execution order): looked up
        // for the two or three tensors concerned, not tabled for every ADD.
        func writer(_ tensor: Int) -> Int? { prepared.lastIndex { $0.outputs.contains(tensor) } }
        func isPrivate(_ tensor: Int) -> Bool {
            readers[tensor] == 1 && !graphOutputs.contains(tensor) && !graph.tensors[tensor].isVariable
        }
        for (convSide, otherSide) in [(1, 0), (0, 1)] {
            let t = op.inputs[convSide], other = op.inputs[otherSide]
            guard t >= 0, other >= 0, t < tensors.count, other < tensors.count, t != other,
                  let c = writer(t), var conv = prepared[c].kernel as? OptimizedConvFloatKernel, conv.residual == nil,
                  file.operatorCode(of: graph.operators[prepared[c].op]).builtinCode == .conv2D,
                  prepared[c].outputs == [t], isPrivate(t),
                  tensors[t].type == .float32, tensors[other].type == .float32
            else { continue }
            let shape = tensors[t].shape
            guard shape.count == 4, shape[3] == Int(conv.geometry.out_c) else { continue }
            // The residual's source: the ADD's other input, or the input of a channel PAD feeding it.
            var source = other, before = 0, channels = shape[3]
            var padPosition: Int?
            if let p = writer(other), let pad = prepared[p].kernel as? OptimizedPadRowsKernel, isPrivate(other),
               pad.fill == 0, pad.beforeBytes % 4 == 0, pad.inputRowBytes % 4 == 0, let padInput = prepared[p].inputs.first,
               padInput >= 0, padInput < tensors.count, tensors[padInput].type == .float32 {
                source = padInput
                before = pad.beforeBytes / 4
                channels = pad.inputRowBytes / 4
                padPosition = p
            }
            let sourceShape = tensors[source].shape
            guard sourceShape.count == 4, Array(sourceShape.prefix(3)) == Array(shape.prefix(3)), sourceShape[3] == channels,
                  channels > 0, before >= 0, before + channels <= shape[3],
                  padPosition != nil || tensors[other].shape == shape
            else { continue }
            // The residual must exist when the convolution runs.
            if let w = writer(source) {
                guard w < c else { continue }
            } else if graph.tensors[source].isVariable {
                continue
            }
            let declared = tensors[out].shape
            guard declared.isEmpty || declared == shape else { continue }

            let range = FixedPoint.activationRange(activation)
            conv.residual = ResidualAdd(input: prepared[c].inputs.count, channels: channels, before: before,
                                        lo: range.min, hi: range.max)
            prepared[c].kernel = conv
            prepared[c].inputs.append(source)
            prepared[c].outputs = [out]
            tensors[out].shape = shape
            if let padPosition { prepared.remove(at: padPosition) }
            return true
        }
        return false
    }
}
