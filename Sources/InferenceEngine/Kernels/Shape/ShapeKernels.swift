import TFLiteFormat

/// Data movement: RESHAPE, SQUEEZE, EXPAND_DIMS, CONCATENATION, SPLIT, SPLIT_V, SLICE, STRIDED_SLICE,
/// PAD, PADV2, TRANSPOSE, GATHER, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR.
enum ShapeKernels {
    static let builtins: [BuiltinOperator: KernelFactory] = [
        .reshape: Reshape.prepare,
        .squeeze: Squeeze.prepare,
        .expandDims: ExpandDims.prepare,
        .concatenation: Concatenation.prepare,
        .split: Split.prepare,
        .splitV: SplitV.prepare,
        .slice: Slice.prepare,
        .stridedSlice: StridedSlice.prepare,
        .pad: Pad.prepare,
        .padV2: PadV2.prepare,
        .transpose: Transpose.prepare,
        .gather: Gather.prepare,
        .resizeBilinear: ResizeBilinear.prepare,
        .resizeNearestNeighbor: ResizeNearestNeighbor.prepare,
    ]
}
