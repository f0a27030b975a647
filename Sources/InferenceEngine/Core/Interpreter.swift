import CKernels
import Foundation
import TensorCore

/// Options for an interpreter.
public struct InterpreterOptions: Sendable {
    /// Threads a single invoke may use (1 = the calling thread only).
    public var numThreads: Int = 1
    public init(numThreads: Int = 1) { self.numThreads = numThreads }
}

/// How long one operator took in ``Interpreter/invokeProfiled()``.
public struct OperatorTiming: Sendable {
    /// The operator's position in the subgraph.
    public let nodeIndex: Int
    /// `CONV_2D`, or `CUSTOM:<name>`.
    public let operatorName: String
    /// The kernel that ran it (an optimized or a reference kernel).
    public let kernel: String
    public let seconds: Double
}

/// Runs a compiled ``Model``. Owns the tensor arena and the model's state (variable tensors), so
/// each thread or caller uses its own interpreter; interpreters of one model share its weights.
///
/// Typical use: copy or write the inputs, ``invoke()``, read the outputs.
public final class Interpreter {
    public let model: Model
    private let arena: UnsafeMutableRawPointer
    /// The arena's size (at least the model's; a reused arena may be larger).
    private let arenaByteCount: Int
    private let variables: UnsafeMutableRawPointer
    /// Data pointer of every tensor (constants point into the model, the rest into the arena).
    private var pointers: [UnsafeMutableRawPointer]
    private let parallel: ParallelRunner
    /// Runs of nodes that run as the stages of one job of the pool (several threads only).
    private let staged: StagedNodes
    /// Per node, its kernel's operands (``NodeOperands``), pointing into `operandIndices`: every
    /// node's input then output tensor indices, copied once. (The nodes' own index arrays would be
    /// retained and released around every use, at 2 threads by both threads at once.)
    private let operands: UnsafeMutablePointer<NodeOperands>
    private let operandIndices: UnsafeMutablePointer<Int32>

    /// Where one node's operands are: tensor indices, and the node's scratch memory in the arena.
    private struct NodeOperands {
        let inputs: UnsafePointer<Int32>
        let inputCount: Int
        let outputs: UnsafePointer<Int32>
        let outputCount: Int
        let scratch: UnsafeMutableRawPointer?
    }

    public init(model: Model, options: InterpreterOptions = InterpreterOptions()) {
        self.model = model
        (arena, arenaByteCount) = RecycledMemory.take(byteCount: model.arenaByteCount)
        arena.initializeMemory(as: UInt8.self, repeating: 0, count: arenaByteCount)
        variables = UnsafeMutableRawPointer.allocate(byteCount: max(model.variableByteCount, 64), alignment: 64)
        parallel = ParallelRunner(threadCount: options.numThreads, windowSlabBytes: model.windowByteCount(threads: options.numThreads))
        pointers = [UnsafeMutableRawPointer](repeating: arena, count: model.tensors.count)
        for (index, tensor) in model.tensors.enumerated() {
            if let constant = tensor.constant, let base = constant.baseAddress {
                pointers[index] = UnsafeMutableRawPointer(mutating: base)
            } else if let offset = model.arenaOffsets[index] {
                pointers[index] = arena + offset
            }
        }
        var offset = 0
        for index in model.variableTensors {
            pointers[index] = variables + offset
            offset += GreedyMemoryPlanner().align(model.tensors[index].byteCount)
        }
        let indexCount = model.nodes.reduce(0) { $0 + $1.inputs.count + $1.outputs.count }
        operandIndices = .allocate(capacity: max(indexCount, 1))
        operands = .allocate(capacity: max(model.nodes.count, 1))
        var next = operandIndices
        for (index, node) in model.nodes.enumerated() {
            let inputs = next
            for i in node.inputs { next.initialize(to: i); next += 1 }
            let outputs = next
            for o in node.outputs { next.initialize(to: o); next += 1 }
            (operands + index).initialize(to: NodeOperands(
                inputs: inputs, inputCount: node.inputs.count, outputs: outputs, outputCount: node.outputs.count,
                scratch: node.scratchByteCount > 0 ? arena + node.scratchOffset : nil))
        }
        let (runner, operands) = (parallel, operands)
        staged = pointers.withUnsafeBufferPointer { table in
            guard let base = table.baseAddress else { return .none }
            return StagedNodes(nodes: model.nodes, runner: runner) { index, scope in
                Self.run(model.nodes[index].kernel, operands[index], tensors: base, scope: scope)
            }
        }
        resetVariables()
    }

    /// The runs of nodes ``invoke()`` runs as the stages of one job of the thread pool (several
    /// threads only): each run's first node position and its node count (for tests).
    package var stagedRuns: [(first: Int, count: Int)] { staged.groups.map { ($0.first, $0.counts.count) } }

    /// Runs `kernel` over the tensor table `tensors` with `scope` (nothing for a node without
    /// outputs).
    private static func run(_ kernel: borrowing any Kernel, _ operands: NodeOperands, tensors: UnsafePointer<UnsafeMutableRawPointer>,
                            scope: ParallelScope) {
        guard operands.outputCount > 0 else { return }
        kernel.run(KernelIO(tensors: tensors, inputIndices: operands.inputCount > 0 ? operands.inputs : operands.outputs,
                            inputCount: operands.inputCount, outputIndices: operands.outputs, outputCount: operands.outputCount,
                            scratch: operands.scratch, parallel: scope))
    }

    deinit {
        RecycledMemory.give(arena, byteCount: arenaByteCount)
        variables.deallocate()
        operands.deinitialize(count: model.nodes.count)
        operands.deallocate()
        operandIndices.deallocate()
    }

    /// Blocks until the interpreter's worker threads (``InterpreterOptions/numThreads`` > 1) have
    /// started. They start in the background when the interpreter is created; invokes before then
    /// run every piece of work on the calling thread (same results). Benchmarks call this before
    /// timing steady-state invokes; applications need not.
    public func waitForThreads() {
        parallel.waitUntilStarted()
    }

    /// Resets state (variable tensors) to its initial value: the model's initial data, or zeros.
    public func resetVariables() {
        for index in model.variableTensors {
            let count = model.tensors[index].byteCount
            let buffer = model.file.mainSubgraph.tensors[index].buffer
            if let initial = model.file.bufferBytes(buffer), initial.count == count, let source = initial.baseAddress {
                pointers[index].copyMemory(from: source, byteCount: count)
            } else {
                pointers[index].initializeMemory(as: UInt8.self, repeating: 0, count: count)
            }
        }
    }

    /// Runs the model on the current inputs.
    ///
    /// Float arithmetic runs with denormals flushed to zero (restored afterwards), as XNNPACK-backed
    /// runtimes do: values below 1.2e-38 become 0 instead of costing ~20× per operation.
    public func invoke() {
        let fpState = ck_denormals_flush()
        defer { ck_denormals_restore(fpState) }
        let (parallel, staged, operands) = (self.parallel, self.staged, self.operands)
        pointers.withUnsafeBufferPointer { table in
            model.nodes.withUnsafeBufferPointer { nodes in
                guard let base = table.baseAddress else { return }
                var index = 0
                while index < nodes.count {
                    let group = index < staged.starts.count ? staged.starts[index] : -1
                    guard group >= 0 else {
                        Self.run(nodes[index].kernel, operands[index], tensors: base, scope: ParallelScope(parallel))
                        index += 1
                        continue
                    }
                    let first = staged.groups[group].first
                    staged.groups[group].counts.withUnsafeBufferPointer { counts in
                        parallel.forEachStaged(counts) { stage, piece in
                            Self.run(nodes[first + stage].kernel, operands[first + stage], tensors: base,
                                     scope: ParallelScope(parallel, piece: piece, of: counts[stage]))
                        }
                        index += counts.count
                    }
                }
            }
        }
    }

    /// Runs the model like ``invoke()`` and returns how long each operator took, in execution
    /// order (for profiling; `edgevision bench --profile`).
    public func invokeProfiled() -> [OperatorTiming] {
        let fpState = ck_denormals_flush()
        defer { ck_denormals_restore(fpState) }
        let parallel = self.parallel
        var timings: [OperatorTiming] = []
        timings.reserveCapacity(model.nodes.count)
        pointers.withUnsafeBufferPointer { table in
            guard let base = table.baseAddress else { return }
            for (index, node) in model.nodes.enumerated() {
                let start = DispatchTime.now().uptimeNanoseconds
                Self.run(node.kernel, operands[index], tensors: base, scope: ParallelScope(parallel))
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                // A fused node names its operators: CONV_2D+DEPTHWISE_CONV_2D+CONV_2D.
                let name = (node.kernel as? FusedKernel)?.operatorNames.joined(separator: "+") ?? node.name
                timings.append(OperatorTiming(nodeIndex: node.index, operatorName: name,
                                              kernel: String(describing: type(of: node.kernel)), seconds: seconds))
            }
        }
        return timings
    }

    // MARK: Inputs and outputs

    private func checkInput(_ index: Int) throws -> Int {
        guard index >= 0, index < model.inputs.count else {
            throw EngineError(.invalidArgument, "Input index \(index) is out of range: the model has \(model.inputs.count) inputs.")
        }
        return model.inputTensorIndices[index]
    }

    private func checkOutput(_ index: Int) throws -> Int {
        guard index >= 0, index < model.outputs.count else {
            throw EngineError(.invalidArgument, "Output index \(index) is out of range: the model has \(model.outputs.count) outputs.")
        }
        return model.outputTensorIndices[index]
    }

    /// Copies raw little-endian bytes into input `index`; the size must match exactly.
    public func copyInput(_ bytes: UnsafeRawBufferPointer, at index: Int) throws {
        let tensor = try checkInput(index)
        let description = model.inputs[index]
        guard bytes.count == description.byteCount else {
            throw EngineError(.invalidArgument,
                "Input \(index) ('\(description.name)') is \(description.type) \(description.shape) = \(description.byteCount) bytes, but \(bytes.count) bytes were given.")
        }
        if let source = bytes.baseAddress { pointers[tensor].copyMemory(from: source, byteCount: bytes.count) }
    }

    /// Copies `data` into input `index`; the size must match exactly.
    public func copyInput(_ data: Data, at index: Int) throws {
        try data.withUnsafeBytes { try copyInput($0, at: index) }
    }

    /// Copies `data` into the input named `name`.
    public func copyInput(_ data: Data, named name: String) throws {
        guard let index = model.inputIndex(named: name) else {
            throw EngineError(.invalidArgument, "The model has no input named '\(name)'; its inputs are \(model.inputs.map(\.name)).")
        }
        try copyInput(data, at: index)
    }

    /// Zero-copy write access to input `index` (for preprocessing straight into the tensor).
    public func withInputBuffer<R>(at index: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> R) throws -> R {
        let tensor = try checkInput(index)
        return try body(UnsafeMutableRawBufferPointer(start: pointers[tensor], count: model.inputs[index].byteCount))
    }

    /// A copy of output `index`'s bytes.
    public func outputData(at index: Int) throws -> Data {
        let tensor = try checkOutput(index)
        return Data(bytes: pointers[tensor], count: model.outputs[index].byteCount)
    }

    /// A copy of the output named `name`.
    public func outputData(named name: String) throws -> Data {
        guard let index = model.outputIndex(named: name) else {
            throw EngineError(.invalidArgument, "The model has no output named '\(name)'; its outputs are \(model.outputs.map(\.name)).")
        }
        return try outputData(at: index)
    }

    /// Zero-copy read access to output `index`, valid inside `body` until the next invoke.
    public func withOutputBuffer<R>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        let tensor = try checkOutput(index)
        return try body(UnsafeRawBufferPointer(start: pointers[tensor], count: model.outputs[index].byteCount))
    }

    /// Output `index` as Float values: float32 copied, quantized uint8/int8 dequantized.
    public func outputFloats(at index: Int) throws -> [Float] {
        _ = try checkOutput(index)
        let description = model.outputs[index]
        return try withOutputBuffer(at: index) { raw in
            let count = description.shape.elementCount ?? 0
            let scale = description.quantization?.scale ?? 0
            let zero = Float(description.quantization?.zeroPoint ?? 0)
            switch description.type {
            case .float32: return Array(raw.bindMemory(to: Float.self).prefix(count))
            case .uint8: return raw.prefix(count).map { (Float($0) - zero) * scale }
            case .int8: return raw.bindMemory(to: Int8.self).prefix(count).map { (Float($0) - zero) * scale }
            case .int32: return raw.bindMemory(to: Int32.self).prefix(count).map { Float($0) }
            case .int64: return raw.bindMemory(to: Int64.self).prefix(count).map { Float($0) }
            default:
                throw EngineError(.invalidArgument, "Output \(index) has type \(description.type), which cannot be read as floats.")
            }
        }
    }
}
