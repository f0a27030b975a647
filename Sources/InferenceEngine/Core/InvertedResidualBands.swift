import TFLiteFormat

/// Runs a MobileNet v2 inverted residual block — 1×1 expansion, depthwise convolution, 1×1
/// projection (its residual ADD folded in or not) — as one operator that goes down the image in
/// bands of ``bandRows`` output rows when the interpreter has one thread: the expansion rows the
/// band's depthwise rows read, those depthwise rows, then the band's projection.
///
/// Run one after the other, the three operators pass two tensors of the expanded width through
/// memory (DeepLab's 33 × 33 × 480: 2 MB each, as large as this core's L2): the depthwise layer
/// reads its input back from L3 and the projection its input too. In bands, each tensor is read
/// while its band is still in L2. Every output is computed by the same kernels over the same
/// values, so results are bitwise those of the three operators (and of 2 threads, where the block
/// runs as the three operators, each split over the threads).
///
/// Planned after the other folds, on consecutive prepared operators whose intermediate tensors
/// only the next one reads, for expansions of at least ``minimumExpandedBytes``: measured in a C
/// harness of DeepLab's blocks (median of 400 runs), 80→480→80 with dilation 2 1343 → 1261 µs and
/// dilation 4 1347 → 1266 µs, 48→288→48 520 → 506 µs, 32→192→32 (836 KB) unchanged.
enum InvertedResidualBands {
    /// Smallest expanded tensor banded.
    static let minimumExpandedBytes = 1 << 20
    /// Depthwise output rows per band.
    static let bandRows = 4

    /// Replaces each block of `prepared` that qualifies by one banded operator.
    static func plan(_ prepared: inout [ResidualFusion.Entry], tensors: [TensorInfo], readers: [Int: Int],
                     graphOutputs: Set<Int>, graph: Subgraph) {
        func isPrivate(_ tensor: Int) -> Bool {
            tensor >= 0 && tensor < tensors.count && readers[tensor] == 1 && !graphOutputs.contains(tensor)
                && !graph.tensors[tensor].isVariable
        }
        var i = 0
        while i + 2 < prepared.count {
            let (e, d, p) = (prepared[i], prepared[i + 1], prepared[i + 2])
            guard let expand = e.kernel as? OptimizedConvFloatKernel, expand.isPointwise, expand.residual == nil,
                  let depthwise = d.kernel as? OptimizedDepthwiseFloatKernel, depthwise.batches == 1,
                  let project = p.kernel as? OptimizedConvFloatKernel, project.isPointwise,
                  e.scratch == 0, d.scratch == 0, p.scratch == 0,
                  e.outputs.count == 1, d.outputs.count == 1, p.outputs.count == 1,
                  let expanded = e.outputs.first, d.inputs.first == expanded, isPrivate(expanded),
                  let filtered = d.outputs.first, p.inputs.first == filtered, isPrivate(filtered),
                  tensors[expanded].byteCount >= minimumExpandedBytes
            else {
                i += 1
                continue
            }
            let kernel = InvertedResidualBandKernel(expand: expand, depthwise: depthwise, project: project,
                                                    operands: [e.inputs, e.outputs, d.inputs, d.outputs, p.inputs, p.outputs])
            // The node reads what the three read from outside the block and writes all three outputs.
            let inputs = e.inputs + d.inputs.dropFirst() + p.inputs.dropFirst()
            prepared[i] = (op: e.op, inputs: inputs, outputs: [expanded, filtered] + p.outputs, kernel: kernel, scratch: 0)
            prepared.removeSubrange(i + 1...i + 2)
            i += 1
        }
    }
}

/// The three operators of an inverted residual block (``InvertedResidualBands``), each run with
/// its own operands (tensor indices kept from the three nodes).
struct InvertedResidualBandKernel: Kernel {
    let expand: OptimizedConvFloatKernel
    let depthwise: OptimizedDepthwiseFloatKernel
    let project: OptimizedConvFloatKernel
    /// Tensor indices: expansion inputs, outputs; depthwise inputs, outputs; projection inputs, outputs.
    let operands: ContiguousArray<Int32>
    let counts: [Int]

    init(expand: OptimizedConvFloatKernel, depthwise: OptimizedDepthwiseFloatKernel, project: OptimizedConvFloatKernel,
         operands: [[Int]]) {
        self.expand = expand
        self.depthwise = depthwise
        self.project = project
        self.operands = ContiguousArray(operands.joined().map { Int32($0) })
        counts = operands.map(\.count)
    }

    func run(_ io: KernelIO) {
        operands.withUnsafeBufferPointer { indices in
            guard let base = indices.baseAddress, counts.count == 6 else { return }
            var at = 0
            func part(_ k: Int) -> KernelIO {
                let inputs = base + at, outputs = inputs + counts[2 * k]
                at += counts[2 * k] + counts[2 * k + 1]
                return KernelIO(tensors: io.tensors, inputIndices: inputs, inputCount: counts[2 * k], outputIndices: outputs,
                                outputCount: counts[2 * k + 1], scratch: nil, parallel: io.parallel)
            }
            let e = part(0), d = part(1), p = part(2)
            run(io, e, d, p)
        }
    }

    private func run(_ io: KernelIO, _ e: KernelIO, _ d: KernelIO, _ p: KernelIO) {
        guard io.parallel.threadCount == 1 else {
            expand.run(e)
            depthwise.run(d)
            project.run(p)
            return
        }
        let g = depthwise.geometry
        let outRows = Int(g.out_h), inRows = Int(g.in_h), inWidth = Int(g.in_w), outWidth = Int(g.out_w)
        let reach = (Int(g.k_h) - 1) * Int(g.dil_h) + 1
        var expanded = 0
        for r0 in stride(from: 0, to: outRows, by: InvertedResidualBands.bandRows) {
            let r1 = min(outRows, r0 + InvertedResidualBands.bandRows)
            // Input rows the band reads: up to the last tap row of its last output row.
            let needed = min(inRows, max(0, (r1 - 1) * Int(g.stride_h) - Int(g.pad_top) + reach))
            if needed > expanded {
                expand.runPixels(e, expanded * inWidth..<needed * inWidth)
                expanded = needed
            }
            depthwise.runRows(d, r0..<r1)
            project.runPixels(p, r0 * outWidth..<r1 * outWidth)
        }
    }
}
