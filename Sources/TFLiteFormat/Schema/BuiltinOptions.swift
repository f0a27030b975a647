import TensorCore

/// Padding scheme of convolutions and pooling (`Padding` in schema.fbs).
public enum Padding: Int8, Sendable, Hashable {
    case same = 0, valid = 1
}

/// Activation fused into an op's output (`ActivationFunctionType` in schema.fbs).
public enum FusedActivation: Int8, Sendable, Hashable {
    case none = 0, relu = 1, reluN1To1 = 2, relu6 = 3, tanh = 4, signBit = 5
}

public struct Conv2DOptions: Sendable, Hashable {
    public var padding: Padding = .same
    public var strideWidth = 1, strideHeight = 1
    public var activation: FusedActivation = .none
    public var dilationWidth = 1, dilationHeight = 1
    public init() {}
}

public struct DepthwiseConv2DOptions: Sendable, Hashable {
    public var padding: Padding = .same
    public var strideWidth = 1, strideHeight = 1
    public var depthMultiplier = 1
    public var activation: FusedActivation = .none
    public var dilationWidth = 1, dilationHeight = 1
    public init() {}
}

public struct Pool2DOptions: Sendable, Hashable {
    public var padding: Padding = .same
    public var strideWidth = 1, strideHeight = 1
    public var filterWidth = 1, filterHeight = 1
    public var activation: FusedActivation = .none
    public init() {}
}

public struct FullyConnectedOptions: Sendable, Hashable {
    public var activation: FusedActivation = .none
    /// 0 = DEFAULT, 1 = SHUFFLED4x16INT8.
    public var weightsFormat: Int8 = 0
    public var keepNumDims = false
    public var asymmetricQuantizeInputs = false
    public init() {}
}

public struct TransposeConvOptions: Sendable, Hashable {
    public var padding: Padding = .same
    public var strideWidth = 1, strideHeight = 1
    public var activation: FusedActivation = .none
    public init() {}
}

public struct StridedSliceOptions: Sendable, Hashable {
    public var beginMask: Int32 = 0, endMask: Int32 = 0, ellipsisMask: Int32 = 0
    public var newAxisMask: Int32 = 0, shrinkAxisMask: Int32 = 0
    public var offset = false
    public init() {}
}

public struct ResizeOptions: Sendable, Hashable {
    public var alignCorners = false
    public var halfPixelCenters = false
    public init() {}
}

/// The decoded `builtin_options` union of an operator.
///
/// Options tables that have no fields (PadOptions, TransposeOptions, HardSwishOptions, ...) and
/// option types this version does not decode are `.other(typeCode)`.
public enum BuiltinOptions: Sendable, Hashable {
    case none
    case conv2D(Conv2DOptions)
    case depthwiseConv2D(DepthwiseConv2DOptions)
    case pool2D(Pool2DOptions)
    case fullyConnected(FullyConnectedOptions)
    case softmax(beta: Float)
    case concatenation(axis: Int, activation: FusedActivation)
    case add(activation: FusedActivation)
    case sub(activation: FusedActivation)
    case mul(activation: FusedActivation)
    case div(activation: FusedActivation)
    case reshape(newShape: [Int]?)
    case squeeze(dimensions: [Int])
    case resizeBilinear(ResizeOptions)
    case resizeNearestNeighbor(ResizeOptions)
    case transposeConv(TransposeConvOptions)
    case stridedSlice(StridedSliceOptions)
    case split(numSplits: Int)
    case splitV(numSplits: Int)
    case reducer(keepDims: Bool)
    case gather(axis: Int, batchDims: Int)
    case argMax(outputType: ElementType)
    case argMin(outputType: ElementType)
    case leakyRelu(alpha: Float)
    case cast(input: ElementType?, output: ElementType?)
    case l2Normalization(activation: FusedActivation)
    case localResponseNormalization(radius: Int, bias: Float, alpha: Float, beta: Float)
    case spaceToDepth(blockSize: Int)
    case depthToSpace(blockSize: Int)
    /// 0 = REFLECT, 1 = SYMMETRIC.
    case mirrorPad(mode: Int8)
    case pack(valuesCount: Int, axis: Int)
    case unpack(count: Int, axis: Int)
    case batchMatMul(adjointX: Bool, adjointY: Bool)
    case gelu(approximate: Bool)
    case shape(outputType: ElementType)
    /// An options table of union type `typeCode` that is not decoded (or has no fields).
    case other(typeCode: UInt8)

}

extension BuiltinOptions {
    /// Decodes the options table `table` of union type `type`.
    static func decode(type: UInt8, table: FlatBufferTable?, operatorIndex: Int) throws -> BuiltinOptions {
        guard type != 0 else { return .none }
        guard let t = table else {
            throw ModelFormatError.structure("operator \(operatorIndex) declares builtin options of type \(type) but has no options table")
        }
        func padding(_ slot: Int) throws -> Padding {
            let raw: Int8 = try t.scalar(slot, default: 0)
            guard let p = Padding(rawValue: raw) else {
                throw ModelFormatError.structure("operator \(operatorIndex) has unknown padding \(raw)")
            }
            return p
        }
        func activation(_ slot: Int) throws -> FusedActivation {
            let raw: Int8 = try t.scalar(slot, default: 0)
            guard let a = FusedActivation(rawValue: raw) else {
                throw ModelFormatError.structure("operator \(operatorIndex) has unknown fused activation \(raw)")
            }
            return a
        }
        func int(_ slot: Int, _ value: Int32) throws -> Int { Int(try t.scalar(slot, default: value)) }
        func tensorType(_ slot: Int, _ value: Int8) throws -> ElementType {
            let raw: Int8 = try t.scalar(slot, default: value)
            guard let type = ElementType(tfliteCode: raw) else {
                throw ModelFormatError.structure("operator \(operatorIndex) names unknown tensor type \(raw)")
            }
            return type
        }
        switch type {
        case 1:
            var o = Conv2DOptions()
            o.padding = try padding(0)
            o.strideWidth = try int(1, 0); o.strideHeight = try int(2, 0)
            o.activation = try activation(3)
            o.dilationWidth = try int(4, 1); o.dilationHeight = try int(5, 1)
            return .conv2D(o)
        case 2:
            var o = DepthwiseConv2DOptions()
            o.padding = try padding(0)
            o.strideWidth = try int(1, 0); o.strideHeight = try int(2, 0)
            o.depthMultiplier = try int(3, 0)
            o.activation = try activation(4)
            o.dilationWidth = try int(5, 1); o.dilationHeight = try int(6, 1)
            return .depthwiseConv2D(o)
        case 5:
            var o = Pool2DOptions()
            o.padding = try padding(0)
            o.strideWidth = try int(1, 0); o.strideHeight = try int(2, 0)
            o.filterWidth = try int(3, 0); o.filterHeight = try int(4, 0)
            o.activation = try activation(5)
            return .pool2D(o)
        case 8:
            var o = FullyConnectedOptions()
            o.activation = try activation(0)
            o.weightsFormat = try t.scalar(1, default: 0)
            o.keepNumDims = try t.bool(2, default: false)
            o.asymmetricQuantizeInputs = try t.bool(3, default: false)
            return .fullyConnected(o)
        case 9: return .softmax(beta: try t.float(0, default: 0))
        case 10: return .concatenation(axis: try int(0, 0), activation: try activation(1))
        case 11: return .add(activation: try activation(0))
        case 12: return .l2Normalization(activation: try activation(0))
        case 13:
            return .localResponseNormalization(radius: try int(0, 0), bias: try t.float(1, default: 0),
                                               alpha: try t.float(2, default: 0), beta: try t.float(3, default: 0))
        case 15:
            var o = ResizeOptions()
            o.alignCorners = try t.bool(2, default: false)
            o.halfPixelCenters = try t.bool(3, default: false)
            return .resizeBilinear(o)
        case 17: return .reshape(newShape: try t.int32s(0, "new_shape")?.map(Int.init))
        case 19: return .spaceToDepth(blockSize: try int(0, 0))
        case 21: return .mul(activation: try activation(0))
        case 23: return .gather(axis: try int(0, 0), batchDims: try int(1, 0))
        case 27: return .reducer(keepDims: try t.bool(0, default: false))
        case 28: return .sub(activation: try activation(0))
        case 29: return .div(activation: try activation(0))
        case 30: return .squeeze(dimensions: try t.int32s(0, "squeeze_dims")?.map(Int.init) ?? [])
        case 32:
            var o = StridedSliceOptions()
            o.beginMask = try t.scalar(0, default: 0); o.endMask = try t.scalar(1, default: 0)
            o.ellipsisMask = try t.scalar(2, default: 0); o.newAxisMask = try t.scalar(3, default: 0)
            o.shrinkAxisMask = try t.scalar(4, default: 0); o.offset = try t.bool(5, default: false)
            return .stridedSlice(o)
        case 35: return .split(numSplits: try int(0, 0))
        case 37:
            let input: Int8 = try t.scalar(0, default: 0)
            let output: Int8 = try t.scalar(1, default: 0)
            let hasInput = try t.field(0, size: 1) != nil, hasOutput = try t.field(1, size: 1) != nil
            return .cast(input: hasInput ? ElementType(tfliteCode: input) : nil,
                         output: hasOutput ? ElementType(tfliteCode: output) : nil)
        case 40: return .argMax(outputType: try tensorType(0, 4))
        case 49:
            var o = TransposeConvOptions()
            o.padding = try padding(0)
            o.strideWidth = try int(1, 0); o.strideHeight = try int(2, 0)
            o.activation = try activation(3)
            return .transposeConv(o)
        case 55: return .shape(outputType: try tensorType(0, 2))
        case 57: return .argMin(outputType: try tensorType(0, 4))
        case 59: return .pack(valuesCount: try int(0, 0), axis: try int(1, 0))
        case 64: return .unpack(count: try int(0, 0), axis: try int(1, 0))
        case 74:
            var o = ResizeOptions()
            o.alignCorners = try t.bool(0, default: false)
            o.halfPixelCenters = try t.bool(1, default: false)
            return .resizeNearestNeighbor(o)
        case 75: return .leakyRelu(alpha: try t.float(0, default: 0))
        case 77: return .mirrorPad(mode: try t.scalar(0, default: 0))
        case 79: return .splitV(numSplits: try int(0, 0))
        case 94: return .depthToSpace(blockSize: try int(0, 0))
        case 101: return .batchMatMul(adjointX: try t.bool(0, default: false), adjointY: try t.bool(1, default: false))
        case 116: return .gelu(approximate: try t.bool(0, default: false))
        default: return .other(typeCode: type)
        }
    }
}
