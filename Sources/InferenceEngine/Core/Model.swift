import CKernels
import Foundation
import TFLiteFormat
import TensorCore

/// Options for compiling a model.
public struct ModelOptions: Sendable {
    /// The largest arena (working memory for intermediate tensors) a model may ask for.
    public var maximumArenaBytes: Int = 4 << 30
    /// The largest single tensor a model may declare.
    public var maximumTensorBytes: Int = 2 << 30
    /// Which kernels run the operators: the optimized micro-kernels for this CPU (default), a capped
    /// instruction set, or the portable reference kernels (for tests and bisecting).
    public var kernels: KernelSelection = .optimized
    /// Threads that compile the model (default 1, the calling thread alone). With more, the weights
    /// are packed on the other threads while the calling thread prepares the operators and plans
    /// the arena. Give it the interpreters' ``InterpreterOptions/numThreads``: the threads started
    /// for the compile are kept for the first interpreter of that count, which then starts with
    /// its threads ready. The compiled model is the same for every count.
    public var numThreads: Int = 1
    public init() {}
}

/// The kernel set a model is compiled with.
///
/// The optimized kernels (C micro-kernels in the CKernels target, with per-function instruction-set
/// variants chosen at run time) cover the hot operators; every other operator, and every shape the
/// optimized kernels do not handle, runs the reference kernel. Capping the instruction set
/// (`portable`, `avx2`, `avx512`) exercises the variants a weaker CPU would run; a cap above what
/// the CPU supports uses the best it has.
public enum KernelSelection: String, Sendable, CaseIterable {
    /// The best variant for this CPU.
    case optimized
    /// AVX-512 without VNNI at most.
    case avx512
    /// AVX2 + FMA at most.
    case avx2
    /// The plain-C variants (what ARM64 and other CPUs run).
    case portable
    /// TFLite-reference-semantics Swift kernels only.
    case reference

    /// The CKernels instruction-set level to use, or nil for the reference kernels.
    var instructionSet: Int32? {
        let best = ck_best_isa()
        switch self {
        case .optimized: return best
        case .avx512: return min(best, Int32(CK_ISA_AVX512))
        case .avx2: return min(best, Int32(CK_ISA_AVX2))
        case .portable: return Int32(CK_ISA_PORTABLE)
        case .reference: return nil
        }
    }
}

/// A compiled model: the parsed file, every operator's prepared kernel, the execution order and
/// the arena plan. Immutable and `Sendable`: create it once and share it; each thread (or caller)
/// creates its own ``Interpreter``, which owns the tensor memory.
///
/// Compiling validates everything it can up front: tensor shapes and types against every
/// operator's contract, quantization parameters, and that every operator is supported. Problems are
/// ``EngineError``s that name the operator and node index.
public final class Model: @unchecked Sendable {
    /// The parsed model file (weights are read from its bytes in place).
    public let file: TFLiteModel
    public let inputs: [TensorDescription]
    public let outputs: [TensorDescription]
    /// Bytes of the arena each interpreter allocates for intermediate tensors.
    public let arenaByteCount: Int
    /// The most bytes of intermediate tensors and scratch alive at one step: no arena can be
    /// smaller, and ``arenaByteCount`` is compared with it.
    public let peakLiveByteCount: Int
    /// Bytes of the window each interpreter thread keeps for banded inverted residual blocks
    /// (``BandChainKernel``), outside the arena; 0 when no block runs in windows.
    public let bandWindowByteCount: Int
    /// The short depthwise → 1×1 pairs that run in equal shares of the pixels when their rows do
    /// not divide among the threads: each one's rows and the window bytes a thread needs for it
    /// (``BandChainKernel/pairWindowBytes``).
    let pairWindows: [(rows: Int, bytes: Int)]
    /// Bytes of the window each thread keeps at `threads` threads: the banded blocks' at any
    /// count, and those of the short pairs whose rows do not divide among that many threads (at
    /// 1 thread the pairs run whole, without windows).
    public func windowByteCount(threads: Int) -> Int {
        pairWindows.reduce(bandWindowByteCount) {
            BandChainKernel.pairSplitsByPixels(rows: $1.rows, threads: threads) ? max($0, $1.bytes) : $0
        }
    }
    /// Bytes of persistent state (variable tensors) each interpreter allocates.
    public let variableByteCount: Int
    /// Node indices of each operator that brings a later one's weights into L2 as it runs, at 1
    /// thread (``WeightPrefetch``): `host` prefetches `target`'s packed weights.
    public let weightPrefetches: [(host: Int, target: Int)]

    let tensors: [TensorInfo]
    let nodes: [Node]
    /// Arena offset of each non-constant, non-variable tensor (nil for constants, variables and unused tensors).
    let arenaOffsets: [Int?]
    let variableTensors: [Int]
    let inputTensorIndices: [Int]
    let outputTensorIndices: [Int]
    private let ownedConstants: ConstantStore

    struct Node {
        let index: Int
        let name: String
        let kernel: any Kernel
        let inputs: ContiguousArray<Int32>
        let outputs: ContiguousArray<Int32>
        let scratchOffset: Int
        let scratchByteCount: Int
    }

    /// Loads and compiles the model file at `path`.
    public convenience init(contentsOfFile path: String, options: ModelOptions = ModelOptions()) throws {
        try self.init(file: try TFLiteModel(contentsOfFile: path), options: options)
    }

    /// Compiles model bytes.
    public convenience init(data: Data, options: ModelOptions = ModelOptions()) throws {
        try self.init(file: try TFLiteModel(data: data), options: options)
    }

    /// Compiles a parsed model.
    public init(file: TFLiteModel, options: ModelOptions = ModelOptions()) throws {
        self.file = file
        let graph = file.mainSubgraph
        let store = ConstantStore()
        ownedConstants = store
        // Weight packing (CompileWork) runs beside the rest of the compile; every job is done
        // before the model is returned, or before an error goes out (the jobs read the weights).
        let work = CompileWork(threads: min(max(options.numThreads, 1), 64))
        defer { work.finish() }
        var tensors = try ModelCompiler.tensorInfos(file: file, store: store, options: options)
        let order = try ModelCompiler.executionOrder(graph)

        // Prepare every operator in order, propagating shapes. A float RELU/RELU6/RELU_N1_TO_1 whose
        // only input comes from an operator that can clamp its own output is folded into it
        // (ActivationFusion): the producer writes the activation's output directly.
        var prepared: [ResidualFusion.Entry] = []
        let graphOutputs = Set(graph.outputs)
        let fusion = options.kernels.instructionSet == nil ? ActivationFusion.none
            : ActivationFusion.plan(graph: graph, file: file, tensors: tensors)
        // A float ADD of a convolution's output and a residual (through a channel PAD or not) is
        // folded into the convolution's epilogue (ResidualFusion).
        var readers = ReaderCounts(tensorCount: tensors.count)
        for (index, op) in graph.operators.enumerated() where !fusion.absorbed.contains(index) {
            for (k, input) in op.inputs.enumerated() where !op.inputs[..<k].contains(input) { readers.add(1, to: input) }
        }
        for opIndex in order where !fusion.absorbed.contains(opIndex) {
            let op = graph.operators[opIndex]
            let code = file.operatorCode(of: op)
            let name = code.displayName
            let fused = fusion.producers[opIndex]
            let opOutputs = fused?.outputs ?? op.outputs
            if options.kernels.instructionSet != nil, code.builtinCode == .add,
               ResidualFusion.fold(add: op, options: fused?.options ?? op.builtinOptions, outputs: opOutputs, prepared: &prepared,
                                   tensors: &tensors, graph: graph, file: file, readers: readers, graphOutputs: graphOutputs) {
                continue
            }
            guard let factory = KernelRegistry.factory(for: code) else {
                let what = code.builtinCode == .custom ? "custom operator '\(code.customCode ?? "")'" : "builtin operator \(code.builtinCode.name)"
                throw EngineError(.unsupportedOperator,
                    "Unsupported \(what) at node \(opIndex): EdgeVision's engine does not implement it. Use a model built from supported ops (see `edgevision inspect`).",
                    nodeIndex: opIndex, operatorName: name)
            }
            var context = OpContext(
                nodeIndex: opIndex, operatorName: name, version: code.version, options: fused?.options ?? op.builtinOptions,
                customOptions: file.customOptions(of: op),
                inputs: op.inputs.map { $0 >= 0 ? tensors[$0] : nil },
                outputs: opOutputs.map { tensors[$0] },
                instructionSet: options.kernels.instructionSet, work: work)
            for output in opOutputs where tensors[output].isConstant || graph.inputs.contains(output) {
                throw context.fail("writes tensor \(output) ('\(tensors[output].name)'), which is constant or a model input")
            }
            let kernel = try factory(&context)
            for (position, output) in opOutputs.enumerated() {
                let computed = context.outputs[position]
                let declared = tensors[output].shape
                guard computed.shape.allSatisfy({ $0 >= 0 }) else {
                    throw context.fail("computed a negative dimension for output \(position): \(Shape(computed.shape))")
                }
                if declared != computed.shape && !declared.isEmpty && !graph.tensors[output].isVariable {
                    throw context.fail("output \(position) ('\(tensors[output].name)') is declared \(Shape(declared)) but the operator produces \(Shape(computed.shape))")
                }
                try ModelCompiler.checkSize(computed, options: options, what: "output \(position) of \(name) (node \(opIndex))")
                tensors[output].shape = computed.shape
                tensors[output].type = computed.type
                tensors[output].quantization = computed.quantization
            }
            // Constant folding: an operator whose inputs are all constant (e.g. DEQUANTIZE of float16
            // weights) runs once here, and its outputs become constants (fusion never picks these).
            let presentInputs = op.inputs.filter { $0 >= 0 }
            let foldable = fused == nil && !presentInputs.isEmpty && presentInputs.allSatisfy { tensors[$0].isConstant }
                && op.outputs.allSatisfy { !graphOutputs.contains($0) && !graph.tensors[$0].isVariable }
            if foldable {
                work.waitForSubmitted()   // the kernel runs now: its packed weights must be there
                try ModelCompiler.fold(kernel: kernel, op: op, scratch: context.scratchByteCount, tensors: &tensors, store: store)
            } else {
                prepared.append((opIndex, op.inputs, opOutputs, kernel, context.scratchByteCount))
                // A 1×1 convolution over a concatenation with an upsampled 1×1 image: the constant
                // image's share becomes one product per image (ConstantBranchFusion).
                if options.kernels.instructionSet != nil, code.builtinCode == .conv2D {
                    _ = ConstantBranchFusion.fold(prepared: &prepared, tensors: &tensors, graph: graph, file: file,
                                                  readers: readers, graphOutputs: graphOutputs)
                }
            }
        }

        // Operators that only copy an inner tensor (a RESHAPE, a resize to the same size) go: their
        // readers read the input (CopyElision).
        if options.kernels.instructionSet != nil {
            CopyElision.apply(&prepared, readers: &readers, tensors: tensors, graph: graph, graphOutputs: graphOutputs)
        }
        // A memory-bound layer's weights are prefetched by a compute-bound one before it.
        weightPrefetches = options.kernels.instructionSet == nil ? [] : WeightPrefetch.plan(&prepared)
        // Large inverted residual blocks run in bands of rows on one thread, short depthwise → 1×1
        // pairs as one operator split by rows (BandChains).
        if options.kernels.instructionSet != nil {
            BandChains.plan(&prepared, tensors: tensors, readers: readers, graphOutputs: graphOutputs, graph: graph) {
                file.operatorCode(of: graph.operators[$0]).displayName
            }
        }

        // Plan the arena over the remaining nodes.
        let plan = try ModelCompiler.planArena(graph: graph, tensors: tensors, nodes: prepared.map { ($0.inputs, $0.outputs, $0.scratch) }, options: options)
        arenaByteCount = plan.arenaSize
        peakLiveByteCount = plan.peakLiveBytes
        arenaOffsets = plan.tensorOffsets
        nodes = prepared.enumerated().map { position, entry in
            let op = graph.operators[entry.op]
            return Node(index: entry.op, name: file.operatorCode(of: op).displayName, kernel: entry.kernel,
                        inputs: ContiguousArray(entry.inputs.map { Int32($0) }), outputs: ContiguousArray(entry.outputs.map { Int32($0) }),
                        scratchOffset: plan.scratchOffsets[position], scratchByteCount: entry.scratch)
        }
        bandWindowByteCount = nodes.map { ($0.kernel as? BandChainKernel)?.windowSlabBytes ?? 0 }.max() ?? 0
        pairWindows = nodes.compactMap { node in
            guard let k = node.kernel as? BandChainKernel, k.pairWindowBytes > 0 else { return nil }
            return (k.stages[0].outputRows, k.pairWindowBytes)
        }
        variableTensors = tensors.indices.filter { tensors[$0].constant == nil && graph.tensors[$0].isVariable }
        variableByteCount = variableTensors.reduce(0) { $0 + GreedyMemoryPlanner().align(tensors[$1].byteCount) }
        self.tensors = tensors
        inputTensorIndices = graph.inputs
        outputTensorIndices = graph.outputs
        func describe(_ index: Int) -> TensorDescription {
            let t = tensors[index]
            return TensorDescription(name: t.name, type: t.type, shape: Shape(t.shape), quantization: t.quantization, byteCount: t.byteCount)
        }
        inputs = graph.inputs.map(describe)
        outputs = graph.outputs.map(describe)
    }

    /// Index of the input named `name`, if any.
    public func inputIndex(named name: String) -> Int? { inputs.firstIndex { $0.name == name } }
    /// Index of the output named `name`, if any.
    public func outputIndex(named name: String) -> Int? { outputs.firstIndex { $0.name == name } }
}

/// Memory owned by a compiled model: aligned copies of misaligned weights and folded constants.
final class ConstantStore: @unchecked Sendable {
    private var blocks: [UnsafeMutableRawPointer] = []

    func allocate(_ byteCount: Int) -> UnsafeMutableRawPointer {
        let block = UnsafeMutableRawPointer.allocate(byteCount: max(byteCount, 1), alignment: 64)
        block.initializeMemory(as: UInt8.self, repeating: 0, count: max(byteCount, 1))
        blocks.append(block)
        return block
    }

    deinit {
        for block in blocks { block.deallocate() }
    }
}

/// How many operators read each tensor (each operator once), for the graph rewrites' "read only
/// here" checks: an array by tensor index (a dictionary's hashing showed in compile profiles); an
/// index outside the model's tensors reads as 0 and is never written.
struct ReaderCounts {
    private var counts: [Int]

    init(tensorCount: Int) { counts = [Int](repeating: 0, count: max(tensorCount, 0)) }

    subscript(tensor: Int) -> Int { tensor >= 0 && tensor < counts.count ? counts[tensor] : 0 }

    mutating func add(_ count: Int, to tensor: Int) {
        if tensor >= 0 && tensor < counts.count { counts[tensor] += count }
    }

    mutating func remove(_ tensor: Int) {
        if tensor >= 0 && tensor < counts.count { counts[tensor] = 0 }
    }
}
