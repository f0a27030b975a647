import CKernels
import TFLiteFormat
import TensorCore

/// Folds a constant-image branch out of a float 1×1 convolution over a concatenation:
/// `RESIZE_BILINEAR(1×1 image) → CONCATENATION(channels) → CONV_2D 1×1`, the image-pooling branch
/// of DeepLab v3's ASPP head (pooled features, upsampled to the feature map's size, concatenated
/// with the other branches and projected).
///
/// A bilinear resize of a 1×1 image is the same vector at every pixel, so its channels contribute
/// the same `W_const · v` to every output pixel: one small matrix–vector product per image instead
/// of half of a large convolution. The resize becomes ``ConstantImageProjectionKernel`` (it writes
/// `W_const · v` once per image, a [batches, 1, 1, out_c] tensor), the concatenation disappears,
/// and the convolution runs over the other input only, adding the projection to every pixel as a
/// broadcast residual in its epilogue before the activation clamp. DeepLab v3 (MobileNet v2) at
/// 33×33: the 512→256 projection becomes 256→256, and neither the 2.2 MB concatenation nor a
/// 1.1 MB image of the projection is written.
///
/// The sums are grouped differently — `(bias + W_x·x) + W_const·v` instead of one running sum over
/// all channels — so results differ from the graph as written by float rounding (a few ulps), not
/// bitwise as ``ResidualFusion``'s. The fold is decided after the convolution is prepared: only an
/// optimized float 1×1, stride-1, unpadded CONV_2D with constant weights whose input is a private
/// two-input concatenation along the channels (no activation) of a private bilinear resize of a
/// 1×1 image and another float tensor. The `reference` selection runs the graph as written.
enum ConstantBranchFusion {
    typealias Entry = ResidualFusion.Entry

    /// Folds the convolution just appended to `prepared` if it can; returns whether it did.
    static func fold(prepared: inout [Entry], tensors: inout [TensorInfo], graph: Subgraph, file: TFLiteModel,
                     readers: ReaderCounts, graphOutputs: Set<Int>) -> Bool {
        guard let last = prepared.indices.last,
              let conv = prepared[last].kernel as? OptimizedConvFloatKernel, conv.residual == nil, conv.firstLayer == nil,
              file.operatorCode(of: graph.operators[prepared[last].op]).builtinCode == .conv2D
        else { return false }
        let g = conv.geometry
        guard g.k_h == 1, g.k_w == 1, g.stride_h == 1, g.stride_w == 1, g.pad_top == 0, g.pad_left == 0,
              g.in_h == g.out_h, g.in_w == g.out_w, prepared[last].inputs.count >= 2 else { return false }
        func isPrivate(_ tensor: Int) -> Bool {
            readers[tensor] == 1 && !graphOutputs.contains(tensor) && !graph.tensors[tensor].isVariable
        }
        func writer(of tensor: Int) -> Int? {
            prepared.indices.last { prepared[$0].outputs.contains(tensor) }
        }
        let concatenated = prepared[last].inputs[0], filterTensor = prepared[last].inputs[1]
        let biasTensor = prepared[last].inputs.count > 2 ? prepared[last].inputs[2] : -1
        guard concatenated >= 0, concatenated < tensors.count, isPrivate(concatenated),
              let c = writer(of: concatenated), prepared[c].outputs == [concatenated], prepared[c].inputs.count == 2,
              case .concatenation(let axis, let activation) = graph.operators[prepared[c].op].builtinOptions,
              activation == .none, axis == 3 || axis == -1,
              file.operatorCode(of: graph.operators[prepared[c].op]).builtinCode == .concatenation,
              filterTensor >= 0, filterTensor < tensors.count, let filter = tensors[filterTensor].constant,
              tensors[filterTensor].type == .float32
        else { return false }
        let bias: UnsafeRawBufferPointer?
        if biasTensor >= 0 {
            guard biasTensor < tensors.count, let data = tensors[biasTensor].constant, tensors[biasTensor].type == .float32 else { return false }
            bias = data
        } else {
            bias = nil
        }
        let batches = conv.batches, height = Int(g.out_h), width = Int(g.out_w), outputChannels = Int(g.out_c)
        for (constantSide, otherSide) in [(0, 1), (1, 0)] {
            let resized = prepared[c].inputs[constantSide], other = prepared[c].inputs[otherSide]
            guard resized >= 0, other >= 0, resized < tensors.count, other < tensors.count, resized != other,
                  isPrivate(resized), let r = writer(of: resized), r < c, prepared[r].outputs == [resized],
                  file.operatorCode(of: graph.operators[prepared[r].op]).builtinCode == .resizeBilinear,
                  let source = prepared[r].inputs.first, source >= 0, source < tensors.count,
                  tensors[source].type == .float32, tensors[resized].type == .float32, tensors[other].type == .float32
            else { continue }
            let sourceShape = tensors[source].shape, resizedShape = tensors[resized].shape, otherShape = tensors[other].shape
            guard sourceShape.count == 4, sourceShape[0] == batches, sourceShape[1] == 1, sourceShape[2] == 1,
                  resizedShape == [batches, height, width, sourceShape[3]],
                  otherShape.count == 4, Array(otherShape.prefix(3)) == [batches, height, width],
                  sourceShape[3] + otherShape[3] == Int(g.in_c), sourceShape[3] > 0, otherShape[3] > 0
            else { continue }
            let constantChannels = sourceShape[3], otherChannels = otherShape[3]
            let constantOffset = constantSide == 0 ? 0 : otherChannels, otherOffset = constantSide == 0 ? constantChannels : 0
            let all = filter.assumingMemoryBound(to: Float.self)
            guard all.count >= outputChannels * Int(g.in_c) else { return false }
            func columns(_ offset: Int, _ count: Int) -> [Float] {
                var part = [Float](repeating: 0, count: outputChannels * count)
                for o in 0..<outputChannels {
                    for i in 0..<count { part[o * count + i] = all[o * Int(g.in_c) + offset + i] }
                }
                return part
            }
            let constantWeights = columns(constantOffset, constantChannels), otherWeights = columns(otherOffset, otherChannels)
            guard let projection = ConstantImageProjectionKernel(
                      isa: conv.isa, batches: batches, inputChannels: constantChannels,
                      outputChannels: outputChannels, weights: constantWeights),
                  var rest = otherWeights.withUnsafeBytes({ weights in
                      OptimizedConvFloatKernel(
                          isa: conv.isa,
                          geometry: ck_conv_geometry(inputHeight: height, inputWidth: width, inputChannels: otherChannels,
                                                     outputHeight: height, outputWidth: width, outputChannels: outputChannels,
                                                     filterHeight: 1, filterWidth: 1, strideHeight: 1, strideWidth: 1,
                                                     dilationHeight: 1, dilationWidth: 1, padTop: 0, padLeft: 0),
                          batches: batches, filter: weights, bias: bias, floatMin: -.infinity, floatMax: .infinity)
                  })
            else { return false }
            // The projection (every pixel W_const · v) is added after the bias and the sums over the
            // other input, then the convolution's own clamp applies.
            rest.residual = ResidualAdd(input: 1, channels: outputChannels, before: 0, lo: conv.floatMin, hi: conv.floatMax,
                                        broadcast: true)
            prepared[last].kernel = rest
            prepared[last].inputs = [other, resized]
            prepared[r].kernel = projection
            prepared[r].inputs = [source]
            prepared[r].scratch = 0
            tensors[resized].shape = [batches, 1, 1, outputChannels]
            prepared.remove(at: c)
            return true
        }
        return false
    }
}

/// Writes `W · v[n]` (no bias) for image `n`, one vector per image: the constant-image branch of
/// ``ConstantBranchFusion``. The product runs through the implicit-GEMM kernel (a 1×1 image).
struct ConstantImageProjectionKernel: Kernel {
    let isa: Int32
    let geometry: ck_conv_geometry
    let batches: Int
    let packed: PackedBuffer<Float>
    let zeros: [Float]

    init?(isa: Int32, batches: Int, inputChannels: Int, outputChannels: Int, weights: [Float]) {
        geometry = ck_conv_geometry(inputHeight: 1, inputWidth: 1, inputChannels: inputChannels,
                                    outputHeight: 1, outputWidth: 1, outputChannels: outputChannels,
                                    filterHeight: 1, filterWidth: 1, strideHeight: 1, strideWidth: 1,
                                    dilationHeight: 1, dilationWidth: 1, padTop: 0, padLeft: 0)
        guard geometry.fitsOptimizedKernels, batches > 0, weights.count == inputChannels * outputChannels else { return nil }
        let g = geometry
        packed = weights.withUnsafeBufferPointer { OptimizedConvFloatKernel.pack(g, filter: $0.baseAddress, bias: nil) }
        self.isa = isa
        self.batches = batches
        zeros = [Float](repeating: 0, count: inputChannels)
    }

    func run(_ io: KernelIO) {
        let input = io.input(0, as: Float.self)
        let output = io.output(0, as: Float.self)
        let inputChannels = Int(geometry.in_c), channels = Int(geometry.out_c)
        let blocks = (channels + Int(CK_F32_NR) - 1) / Int(CK_F32_NR)
        packed.withUnsafeBufferPointer { weights in
            zeros.withUnsafeBufferPointer { zeros in
                guard let w = weights.baseAddress, let z = zeros.baseAddress else { return }
                // Each thread a share of the channel blocks, so each streams only its share of the
                // weights (from L3: DeepLab's 256 × 256 at 2 threads 0.010 → 0.007 ms); a block's
                // values do not depend on the share it is in.
                let pieces = min(io.parallel.threadCount, blocks)
                io.parallel.forEach(pieces * batches) { piece in
                    let n = piece / pieces, share = ConvolutionSupport.range(piece: piece % pieces, of: pieces, count: blocks)
                    var g = geometry
                    ck_conv_f32(isa, &g, input + n * inputChannels, w, output + n * channels, 0, 1,
                                Int32(share.lowerBound), Int32(share.upperBound), -.infinity, .infinity, z, nil)
                }
            }
        }
    }
}
