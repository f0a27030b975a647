import TFLiteFormat
import TensorCore

/// Folds standalone float activations into the operator that produces their input.
///
/// Converters leave `CONV_2D → RELU` pairs in many models (selfie segmentation, BlazeFace): the
/// activation is one more pass over a tensor that the producer could clamp in its epilogue. When
/// the producer supports a fused activation, has none, and its output feeds only the activation,
/// the producer is prepared with the activation's `FusedActivation` and writes the activation's
/// output tensor; the activation node disappears. Float32 only: a quantized activation may carry
/// its own output quantization, which a fused clamp does not apply. The results are the same
/// clamp (`max(x, 0)`, `min(max(x, 0), 6)`, `min(max(x, -1), 1)`) applied in a different place.
///
/// The `reference` kernel selection runs the file's graph as written.
struct ActivationFusion {
    struct Producer {
        /// The producer's options with the fused activation set.
        let options: BuiltinOptions
        /// The producer's outputs: the activation's output in place of the intermediate tensor.
        let outputs: [Int]
    }

    /// Producers to prepare with a fused activation, by operator index.
    var producers: [Int: Producer] = [:]
    /// Activation operators folded away.
    var absorbed: Set<Int> = []

    static let none = ActivationFusion()

    static func plan(graph: Subgraph, file: TFLiteModel, tensors: [TensorInfo]) -> ActivationFusion {
        var fusion = ActivationFusion()
        // Per tensor: the operator that writes it (-1: none) and how many operators read it
        // (arrays: a compile's hashing showed in its profile).
        let tensorCount = tensors.count
        var writer = [Int](repeating: -1, count: tensorCount), readers = [Int](repeating: 0, count: tensorCount)
        for (index, op) in graph.operators.enumerated() {
            for output in op.outputs where output >= 0 && output < tensorCount { writer[output] = index }
            for (k, input) in op.inputs.enumerated() where input >= 0 && input < tensorCount && !op.inputs[..<k].contains(input) {
                readers[input] += 1
            }
        }
        let graphOutputs = Set(graph.outputs)
        for (index, op) in graph.operators.enumerated() {
            guard let activation = fusedActivation(of: file.operatorCode(of: op).builtinCode),
                  op.inputs.count == 1, op.outputs.count == 1,
                  let input = op.inputs.first, input >= 0, input < tensors.count,
                  let output = op.outputs.first, output >= 0, output < tensors.count,
                  case let producerIndex = writer[input], producerIndex >= 0, producerIndex != index,
                  fusion.producers[producerIndex] == nil, !fusion.absorbed.contains(producerIndex)
            else { continue }
            let producer = graph.operators[producerIndex]
            guard producer.outputs == [input], readers[input] == 1, !graphOutputs.contains(input),
                  !graph.tensors[input].isVariable, !graph.tensors[output].isVariable,
                  tensors[input].type == .float32, tensors[output].type == .float32,
                  !tensors[input].isConstant,
                  producer.inputs.contains(where: { $0 >= 0 && $0 < tensors.count && !tensors[$0].isConstant }),
                  let options = withActivation(producer.builtinOptions, activation,
                                               code: file.operatorCode(of: producer).builtinCode)
            else { continue }
            fusion.producers[producerIndex] = Producer(options: options, outputs: [output])
            fusion.absorbed.insert(index)
        }
        return fusion
    }

    /// The fused activation an activation operator amounts to.
    static func fusedActivation(of code: BuiltinOperator) -> FusedActivation? {
        switch code {
        case .relu: return .relu
        case .relu6: return .relu6
        case .reluN1To1: return .reluN1To1
        default: return nil
        }
    }

    /// `options` with `activation` fused, if the operator has no activation yet and its kernels
    /// apply a fused one.
    static func withActivation(_ options: BuiltinOptions, _ activation: FusedActivation, code: BuiltinOperator) -> BuiltinOptions? {
        switch (code, options) {
        case (.conv2D, .conv2D(var o)) where o.activation == .none:
            o.activation = activation
            return .conv2D(o)
        case (.depthwiseConv2D, .depthwiseConv2D(var o)) where o.activation == .none:
            o.activation = activation
            return .depthwiseConv2D(o)
        case (.fullyConnected, .fullyConnected(var o)) where o.activation == .none:
            o.activation = activation
            return .fullyConnected(o)
        case (.add, .add(.none)): return .add(activation: activation)
        case (.sub, .sub(.none)): return .sub(activation: activation)
        case (.mul, .mul(.none)): return .mul(activation: activation)
        default: return nil
        }
    }
}
