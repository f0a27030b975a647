import TFLiteFormat
import TensorCore

/// The steps of compiling a model, kept out of ``Model``'s initializer for readability.
enum ModelCompiler {
    /// Tensor table with validated shapes, types, quantization and constant data.
    static func tensorInfos(file: TFLiteModel, store: ConstantStore, options: ModelOptions) throws -> [TensorInfo] {
        let graph = file.mainSubgraph
        return try graph.tensors.enumerated().map { index, tensor in
            // (Built only for a message: a string per tensor showed in compile profiles.)
            func what() -> String { "tensor \(index) ('\(tensor.name)')" }
            guard !tensor.isSparse else {
                throw EngineError(.unsupportedOperator, "The model's \(what()) is stored sparse, which EdgeVision's engine does not support.")
            }
            guard tensor.shape.allSatisfy({ $0 >= 0 }) else {
                throw EngineError(.invalidModel, "The model's \(what()) has a negative dimension in its shape \(Shape(tensor.shape)).")
            }
            var info = TensorInfo(name: tensor.name, type: tensor.type, shape: tensor.shape, quantization: tensor.quantization, constant: nil)
            try checkSize(info, options: options, what: what())
            if let q = tensor.quantization { try validate(q, tensor: info, what: what()) }
            if let bytes = file.bufferBytes(tensor.buffer) {
                guard let elementSize = tensor.type.byteSize else {
                    throw EngineError(.unsupportedOperator, "The model's \(what()) is a constant of type \(tensor.type), which EdgeVision's engine does not support.")
                }
                let expected = info.elementCount * elementSize
                guard bytes.count == expected else {
                    throw EngineError(.invalidModel, "The model's \(what()) has shape \(Shape(tensor.shape)) of \(tensor.type) (\(expected) bytes) but its buffer holds \(bytes.count) bytes.")
                }
                if let base = bytes.baseAddress, Int(bitPattern: base) % max(elementSize, 1) == 0 {
                    info.constant = bytes
                } else {
                    let copy = store.allocate(bytes.count)
                    if let source = bytes.baseAddress { copy.copyMemory(from: source, byteCount: bytes.count) }
                    info.constant = UnsafeRawBufferPointer(start: copy, count: bytes.count)
                }
            }
            return info
        }
    }

    /// Checks a tensor's byte size against the limits.
    static func checkSize(_ info: TensorInfo, options: ModelOptions, what: @autoclosure () -> String) throws {
        guard let count = Shape(info.shape).elementCount else {
            throw EngineError(.resourceLimit, "The model's \(what()) has shape \(Shape(info.shape)), whose element count overflows.")
        }
        let (bytes, overflow) = count.multipliedReportingOverflow(by: info.type.byteSize ?? 1)
        guard !overflow, bytes <= options.maximumTensorBytes else {
            throw EngineError(.resourceLimit, "The model's \(what()) would need \(overflow ? "more than \(Int.max)" : "\(bytes)") bytes, more than the limit of \(options.maximumTensorBytes) bytes per tensor (ModelOptions.maximumTensorBytes).")
        }
    }

    /// Quantization parameters must be usable: finite positive scales, matching per-channel counts.
    static func validate(_ q: QuantizationParameters, tensor: TensorInfo, what: @autoclosure () -> String) throws {
        for scale in q.scales where !(scale.isFinite && scale >= 0) {
            throw EngineError(.invalidQuantization, "The model's \(what()) has quantization scale \(scale); scales must be finite and positive. Re-quantize the model (TFLite converter) or export it again.")
        }
        if tensor.type == .uint8 || tensor.type == .int8 || tensor.type == .int16 {
            for scale in q.scales where scale == 0 {
                throw EngineError(.invalidQuantization, "The model's \(what()) has quantization scale 0; scales of quantized tensors must be positive. Re-quantize the model (TFLite converter) or export it again.")
            }
        }
        guard q.zeroPoints.isEmpty || q.zeroPoints.count == q.scales.count else {
            throw EngineError(.invalidQuantization, "The model's \(what()) has \(q.scales.count) scales but \(q.zeroPoints.count) zero points. Re-quantize the model (TFLite converter) or export it again.")
        }
        if q.scales.count > 1 {
            guard q.quantizedDimension >= 0, q.quantizedDimension < tensor.rank, tensor.shape[q.quantizedDimension] == q.scales.count else {
                throw EngineError(.invalidQuantization, "The model's \(what()) has \(q.scales.count) per-channel scales along dimension \(q.quantizedDimension), but its shape is \(Shape(tensor.shape)). Re-quantize the model (TFLite converter) or export it again.")
            }
        }
    }

    /// Topological order of the operators: stable (keeps file order where possible); a cycle or a
    /// tensor read before any operator writes it is an error.
    static func executionOrder(_ graph: Subgraph) throws -> [Int] {
        // Tensor indices are in range (TFLiteModel validates them); -1 marks an omitted input.
        var producer = [Int](repeating: -1, count: graph.tensors.count)
        for (index, op) in graph.operators.enumerated() {
            for output in op.outputs {
                // -1 marks an omitted optional input; an output cannot be omitted.
                guard output >= 0, output < producer.count else {
                    throw EngineError(.invalidModel, "The model's node \(index) has no tensor for one of its outputs (index \(output)); every operator output must name a tensor.", nodeIndex: index)
                }
                if producer[output] >= 0 {
                    throw EngineError(.invalidModel, "The model's tensor \(output) is written by both node \(producer[output]) and node \(index).", nodeIndex: index)
                }
                producer[output] = index
            }
        }
        var pending = [Int](repeating: 0, count: graph.operators.count)
        var consumers = [[Int]](repeating: [], count: graph.operators.count)
        var seenBy = [Int](repeating: -1, count: graph.tensors.count)  // an input counted once per node
        for (index, op) in graph.operators.enumerated() {
            for input in op.inputs where input >= 0 && input < producer.count && seenBy[input] != index {
                seenBy[input] = index
                let p = producer[input]
                if p == index {
                    throw EngineError(.invalidModel, "The model's node \(index) reads its own output tensor \(input).", nodeIndex: index)
                } else if p >= 0 {
                    pending[index] += 1
                    consumers[p].append(index)
                }
            }
        }
        // Kahn's algorithm, ready nodes taken in file order: `ready` is kept sorted descending,
        // so the next node is its last element (each node becomes ready exactly once).
        var ready = (0..<graph.operators.count).filter { pending[$0] == 0 }.reversed() as [Int]
        var order: [Int] = []
        order.reserveCapacity(graph.operators.count)
        while let next = ready.popLast() {
            order.append(next)
            for c in consumers[next] {
                pending[c] -= 1
                if pending[c] == 0 {
                    var lo = 0, hi = ready.count
                    while lo < hi {
                        let mid = (lo + hi) / 2
                        if ready[mid] > c { lo = mid + 1 } else { hi = mid }
                    }
                    ready.insert(c, at: lo)
                }
            }
        }
        guard order.count == graph.operators.count else {
            throw EngineError(.invalidModel, "The model's graph has a cycle: \(graph.operators.count - order.count) operators depend on each other's outputs. The file is malformed: export it again.")
        }
        return order
    }

    /// Runs an operator whose inputs are constant once, storing its outputs as constants.
    static func fold(kernel: any Kernel, op: Operator, scratch: Int, tensors: inout [TensorInfo], store: ConstantStore) throws {
        let dummy = store.allocate(64)
        var pointers = [UnsafeMutableRawPointer](repeating: dummy, count: tensors.count)
        for input in op.inputs where input >= 0 {
            if let base = tensors[input].constant?.baseAddress { pointers[input] = UnsafeMutableRawPointer(mutating: base) }
        }
        for output in op.outputs {
            let memory = store.allocate(tensors[output].byteCount)
            pointers[output] = memory
            tensors[output].constant = UnsafeRawBufferPointer(start: memory, count: tensors[output].byteCount)
        }
        let scratchMemory = scratch > 0 ? store.allocate(scratch) : nil
        let inputs = op.inputs.map { Int32($0) }, outputs = op.outputs.map { Int32($0) }
        pointers.withUnsafeBufferPointer { table in
            inputs.withUnsafeBufferPointer { ins in
                outputs.withUnsafeBufferPointer { outs in
                    guard let tableBase = table.baseAddress, let inBase = ins.baseAddress ?? UnsafePointer(bitPattern: 0x10),
                          let outBase = outs.baseAddress else { return }
                    kernel.run(KernelIO(tensors: tableBase, inputIndices: inBase, inputCount: ins.count,
                                        outputIndices: outBase, outputCount: outs.count, scratch: scratchMemory, parallel: ParallelScope(.serial)))
                }
            }
        }
    }

    struct ArenaPlan {
        var arenaSize: Int
        /// The lower bound of any plan: the most bytes alive at one step (``peakLiveBytes(_:alignment:)``).
        var peakLiveBytes: Int
        var tensorOffsets: [Int?]
        var scratchOffsets: [Int]
    }

    /// Lifetimes of every intermediate tensor and scratch buffer, placed by the greedy planner.
    static func planArena(graph: Subgraph, tensors: [TensorInfo], nodes: [(inputs: [Int], outputs: [Int], scratch: Int)], options: ModelOptions) throws -> ArenaPlan {
        let end = nodes.count
        var first = [Int: Int](), last = [Int: Int]()
        func inArena(_ t: Int) -> Bool { t >= 0 && !tensors[t].isConstant && !graph.tensors[t].isVariable }
        // Inputs live through the whole invoke, as in TFLite: a caller may set them once and invoke
        // again (no later tensor overwrites them).
        for input in graph.inputs where inArena(input) { first[input] = 0; last[input] = end }
        for (position, node) in nodes.enumerated() {
            for input in node.inputs where inArena(input) {
                guard first[input] != nil else {
                    throw EngineError(.invalidModel, "The model's tensor \(input) ('\(tensors[input].name)') is read by node \(position) but is neither a model input, a constant, nor written by an earlier node.")
                }
                last[input] = max(last[input] ?? position, position)
            }
            for output in node.outputs where inArena(output) {
                first[output] = first[output] ?? position
                last[output] = max(last[output] ?? position, position)
            }
        }
        for output in graph.outputs where inArena(output) {
            first[output] = first[output] ?? 0
            last[output] = end
        }
        let tensorIndices = first.keys.sorted()
        var buffers = tensorIndices.map { PlannedBuffer(size: tensors[$0].byteCount, firstUse: first[$0] ?? 0, lastUse: last[$0] ?? end) }
        // Scratch of the nodes that need any (most need none: planning an empty buffer for each
        // would double the buffers the planner places, and give each 64 bytes).
        var scratchBuffer = [Int?](repeating: nil, count: nodes.count)
        for (position, node) in nodes.enumerated() where node.scratch > 0 {
            scratchBuffer[position] = buffers.count
            buffers.append(PlannedBuffer(size: node.scratch, firstUse: position, lastUse: position, writtenInHalves: false))
        }
        let (offsets, size) = GreedyMemoryPlanner().plan(buffers)
        guard size <= options.maximumArenaBytes else {
            throw EngineError(.resourceLimit, "The model needs an arena of \(size) bytes, more than the limit of \(options.maximumArenaBytes) bytes (ModelOptions.maximumArenaBytes).")
        }
        var tensorOffsets = [Int?](repeating: nil, count: tensors.count)
        for (i, t) in tensorIndices.enumerated() { tensorOffsets[t] = offsets[i] }
        return ArenaPlan(arenaSize: size, peakLiveBytes: InferenceEngine.peakLiveBytes(buffers),
                         tensorOffsets: tensorOffsets, scratchOffsets: scratchBuffer.map { $0.map { offsets[$0] } ?? 0 })
    }
}
