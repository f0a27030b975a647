import InferenceEngine
import MediaIO
import TensorCore
import TFLiteFormat

/// How a model wants its image input: which input, its size, element type and normalization.
///
/// Built from the model and its metadata with the compatibility rules of ML Kit / MediaPipe /
/// the TFLite Task Library: a 4-D `[1, H, W, C]` input with C = 3 (RGB; 4 is accepted as MediaPipe
/// does, the fourth channel then gets 255), uint8, int8 or float32; float32 needs
/// NormalizationOptions metadata; mean and std have 1 or 3 values, std never 0.
public struct ImageInputSpec: Sendable, Hashable {
    /// The model input that takes the image.
    public let inputIndex: Int
    /// Input width in pixels.
    public let width: Int
    /// Input height in pixels.
    public let height: Int
    /// Input channels: 3, or 4 (the fourth gets 255).
    public let channels: Int
    /// The element type: uint8, int8 or float32.
    public let type: ElementType
    /// Per-channel mean and std (3 values), for float32 inputs.
    public let mean: [Float]
    /// Per-channel standard deviation (3 values), for float32 inputs.
    public let std: [Float]

    /// The exact error text of ML Kit / MediaPipe / Task Library for float inputs without normalization.
    public static let missingNormalizationMessage =
        "Input tensor has type kTfLiteFloat32: it requires specifying NormalizationOptions metadata to preprocess input images."

    /// Reads how `model` wants input `inputIndex`, with the normalization from `metadata`.
    ///
    /// - Throws: ``VisionError`` `.incompatibleModel` when the input breaks the rules above.
    public init(model: TFLiteModel, metadata: ModelMetadata?, inputIndex: Int = 0) throws {
        let graph = model.mainSubgraph
        guard inputIndex >= 0, inputIndex < graph.inputs.count else {
            throw VisionError(.incompatibleModel, "The model has no input \(inputIndex); it has \(graph.inputs.count) inputs.")
        }
        let input = graph.tensors[graph.inputs[inputIndex]]
        let shape = input.shape
        guard shape.count == 4, shape[0] == 1 else {
            throw VisionError(.incompatibleModel,
                "The model's image input '\(input.name)' has shape \(Shape(input.shape)); expected a 4-D [1, height, width, 3] tensor (BHWC with batch 1).")
        }
        guard shape[3] == 3 || shape[3] == 4, shape[1] > 0, shape[2] > 0 else {
            throw VisionError(.incompatibleModel,
                "The model's image input '\(input.name)' has shape \(Shape(input.shape)); expected 3 (RGB) channels in the last dimension.")
        }
        guard input.type == .uint8 || input.type == .int8 || input.type == .float32 else {
            throw VisionError(.incompatibleModel,
                "The model's image input '\(input.name)' has type \(input.type); expected uint8, int8 or float32.")
        }
        let tensorMetadata = metadata?.subgraphs.first?.inputTensors.indices.contains(inputIndex) == true
            ? metadata?.subgraphs.first?.inputTensors[inputIndex] : nil
        if case .image(let colorSpace, _)? = tensorMetadata?.content?.properties, colorSpace == .grayscale {
            throw VisionError(.incompatibleModel, "The model's image input expects a grayscale colour space; only RGB models are supported.")
        }
        var mean: [Float] = [0, 0, 0], std: [Float] = [1, 1, 1]
        if input.type == .float32 {
            guard let normalization = tensorMetadata?.normalization else {
                throw VisionError(.incompatibleModel, ImageInputSpec.missingNormalizationMessage)
            }
            guard normalization.mean.count == normalization.std.count, [1, 3].contains(normalization.mean.count) else {
                throw VisionError(.incompatibleModel,
                    "The model's NormalizationOptions have \(normalization.mean.count) mean and \(normalization.std.count) std values; expected 1 or 3 of each.")
            }
            guard normalization.std.allSatisfy({ $0 != 0 && $0.isFinite }), normalization.mean.allSatisfy(\.isFinite) else {
                throw VisionError(.incompatibleModel, "The model's NormalizationOptions have a zero or non-finite std or mean.")
            }
            mean = normalization.mean.count == 1 ? Array(repeating: normalization.mean[0], count: 3) : normalization.mean
            std = normalization.std.count == 1 ? Array(repeating: normalization.std[0], count: 3) : normalization.std
        }
        self.inputIndex = inputIndex
        height = shape[1]
        width = shape[2]
        channels = shape[3]
        type = input.type
        self.mean = mean
        self.std = std
    }
}
