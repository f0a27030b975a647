/// Static analysis of a model from its graph and static shapes: op counts and multiply-accumulates.
public struct ModelAnalysis: Sendable {
    /// Operator counts by ``OperatorCode/displayName``, in order of first appearance.
    public let opCounts: [(name: String, count: Int)]
    /// Total multiply-accumulates of the compute-heavy ops.
    public let macs: Int
    /// MACs per op name (only ops that have any).
    public let macsPerOp: [(name: String, macs: Int)]

    /// Counts the main subgraph.
    ///
    /// MACs, with padding positions counted (dense count per output element):
    /// - CONV_2D: output elements × Kh × Kw × input channels per group (filter `[Cout,Kh,Kw,Cin/g]`);
    /// - DEPTHWISE_CONV_2D: output elements × Kh × Kw (filter `[1,Kh,Kw,Cout]`);
    /// - FULLY_CONNECTED: output elements × input depth (filter `[Out,In]`);
    /// - TRANSPOSE_CONV and MediaPipe's `Convolution2DTransposeBias`: input elements × Kh × Kw × Cout
    ///   (filter `[Cout,Kh,Kw,Cin]`);
    /// - BATCH_MATMUL: output elements × the reduced dimension.
    /// Element-wise ops, pooling, resizing, softmax and post-processing are not counted.
    public init(model: TFLiteModel) {
        let graph = model.mainSubgraph
        var order: [String] = []
        var counts: [String: Int] = [:]
        var perOp: [String: Int] = [:]
        var perOpOrder: [String] = []
        func shape(_ index: Int) -> [Int]? {
            guard index >= 0, index < graph.tensors.count else { return nil }
            return graph.tensors[index].shape
        }
        func product(_ dims: [Int]) -> Int {
            dims.reduce(1) { acc, d in
                let (p, o) = acc.multipliedReportingOverflow(by: Swift.max(d, 0))
                return o ? Int.max : p
            }
        }
        func mul(_ values: Int...) -> Int {
            values.reduce(1) { acc, v in
                let (p, o) = acc.multipliedReportingOverflow(by: Swift.max(v, 0))
                return o ? Int.max : p
            }
        }
        for op in graph.operators {
            let code = model.operatorCode(of: op)
            let name = code.displayName
            if counts[name] == nil { order.append(name) }
            counts[name, default: 0] += 1
            let input = { (i: Int) -> [Int]? in i < op.inputs.count ? shape(op.inputs[i]) : nil }
            let output = op.outputs.first.flatMap(shape)
            var macs = 0
            switch name {
            case "CONV_2D":
                if let w = input(1), w.count == 4, let out = output { macs = mul(product(out), w[1], w[2], w[3]) }
            case "DEPTHWISE_CONV_2D":
                if let w = input(1), w.count == 4, let out = output { macs = mul(product(out), w[1], w[2]) }
            case "FULLY_CONNECTED":
                if let w = input(1), let last = w.last, let out = output { macs = mul(product(out), last) }
            case "TRANSPOSE_CONV":
                if let w = input(1), w.count == 4, let x = input(2) { macs = mul(product(x), w[0], w[1], w[2]) }
            case "CUSTOM:Convolution2DTransposeBias":
                if let w = input(1), w.count == 4, let x = input(0) { macs = mul(product(x), w[0], w[1], w[2]) }
            case "BATCH_MATMUL":
                if let a = input(0), let k = a.last, let out = output { macs = mul(product(out), k) }
            default:
                break
            }
            if macs > 0 {
                if perOp[name] == nil { perOpOrder.append(name) }
                let (sum, overflow) = perOp[name, default: 0].addingReportingOverflow(macs)
                perOp[name] = overflow ? Int.max : sum
            }
        }
        opCounts = order.map { ($0, counts[$0] ?? 0) }
        macsPerOp = perOpOrder.map { ($0, perOp[$0] ?? 0) }
        macs = macsPerOp.reduce(0) { acc, entry in
            let (sum, overflow) = acc.addingReportingOverflow(entry.macs)
            return overflow ? Int.max : sum
        }
    }
}
