import TFLiteFormat
import TensorCore

/// A prepared operator: everything it needs (shapes, quantization multipliers, packed weights) was
/// computed and validated when the model was compiled, so `run` cannot fail and does not allocate.
///
/// Kernels are immutable and shared by every interpreter of a compiled model.
protocol Kernel: Sendable {
    /// Computes the outputs from the inputs. Pointers come from ``KernelIO``.
    func run(_ io: KernelIO)

    /// Whether, at more than one thread, `run` does all its work in one `io.parallel.forEach`
    /// call, with a split that depends on shapes and the thread count only, and otherwise only
    /// reads: it can then run as a stage of a staged group, one piece per call (``StagedNodes``).
    var runsInOneSplit: Bool { get }
}

extension Kernel {
    var runsInOneSplit: Bool { false }
}

/// A kernel that runs several of the model's operators as one node (``BandChains``).
protocol FusedKernel: Kernel {
    /// The operators it runs, in order.
    var operatorNames: [String] { get }
}

/// A kernel whose output can be the very bytes of its first input (``CopyElision``).
protocol CopyingKernel: Kernel {
    /// Whether `run` only copies input 0 to output 0, byte for byte, for every input value that
    /// matters (a RESHAPE; a float resize to the same size).
    var copiesInput: Bool { get }
}

/// Creates a kernel for one operator, after checking the operator's contract (operand count, types,
/// shapes, quantization) and setting the output shapes in `context.outputs`. Throws ``EngineError``
/// (use `context.fail`) when the operator cannot run.
typealias KernelFactory = @Sendable (inout OpContext) throws -> any Kernel

/// The prepare-time view of one operator.
struct OpContext {
    /// Position of the operator in the subgraph (the "node index" of TFLite's messages).
    let nodeIndex: Int
    /// `CONV_2D`, or `CUSTOM:<name>` for custom ops.
    let operatorName: String
    /// Operator version from the model's operator code.
    let version: Int
    let options: BuiltinOptions
    /// Raw custom options (FlexBuffers for most custom ops); valid while the model lives.
    let customOptions: UnsafeRawBufferPointer
    /// Inputs in operator order; nil where the model omits an optional input (index -1).
    let inputs: [TensorInfo?]
    /// Outputs: type and quantization from the model; the factory sets `shape`.
    var outputs: [TensorInfo]
    /// The CKernels instruction-set level optimized kernels may use, or nil: reference kernels only
    /// (``KernelSelection``).
    let instructionSet: Int32?
    /// Bytes of scratch memory the kernel needs during `run` (planned in the arena, aligned to 64).
    var scratchByteCount = 0
    /// Where the kernel's weight packing runs (``CompileWork``): at once, or beside the rest of
    /// the model's compile.
    var work = CompileWork.immediate

    /// An error naming this operator and node.
    func fail(_ message: String, code: EngineError.Code = .invalidModel) -> EngineError {
        EngineError(code, "\(operatorName) (node \(nodeIndex)): \(message)", nodeIndex: nodeIndex, operatorName: operatorName)
    }

    /// Input `index`, which must be present.
    func input(_ index: Int) throws -> TensorInfo {
        guard index < inputs.count, let tensor = inputs[index] else {
            throw fail("missing input \(index) (the operator has \(inputs.count) inputs)")
        }
        return tensor
    }

    /// Input `index` if present (optional operands such as a bias).
    func optionalInput(_ index: Int) -> TensorInfo? {
        index < inputs.count ? inputs[index] : nil
    }

    /// Checks operand counts.
    func expect(inputs inputCount: ClosedRange<Int>, outputs outputCount: ClosedRange<Int>) throws {
        guard inputCount.contains(inputs.count) else {
            throw fail("expects \(inputCount.lowerBound == inputCount.upperBound ? "\(inputCount.lowerBound)" : "\(inputCount.lowerBound)...\(inputCount.upperBound)") inputs, has \(inputs.count)")
        }
        guard outputCount.contains(outputs.count) else {
            throw fail("expects \(outputCount.lowerBound == outputCount.upperBound ? "\(outputCount.lowerBound)" : "\(outputCount.lowerBound)...\(outputCount.upperBound)") outputs, has \(outputs.count)")
        }
    }

    func expect(inputs count: Int, outputs outputCount: Int) throws {
        try expect(inputs: count...count, outputs: outputCount...outputCount)
    }

    /// Checks that a tensor has one of the given types.
    func expect(_ tensor: TensorInfo, type allowed: Set<ElementType>, _ what: String) throws {
        guard allowed.contains(tensor.type) else {
            throw fail("\(what) has type \(tensor.type), expected \(allowed.map(\.numpyName).sorted().joined(separator: " or "))",
                       code: .unsupportedOperator)
        }
    }

    /// Checks that a tensor has the given rank.
    func expect(_ tensor: TensorInfo, rank: Int, _ what: String) throws {
        guard tensor.rank == rank else { throw fail("\(what) has shape \(Shape(tensor.shape)), expected rank \(rank)") }
    }

    /// Checks that a quantized tensor has per-tensor (not per-channel) parameters.
    func expectPerTensor(_ tensor: TensorInfo, _ what: String) throws {
        guard let q = tensor.quantization, q.scales.count == 1 else {
            throw fail("\(what) must be quantized with one scale (per-tensor)", code: .invalidQuantization)
        }
    }
}

/// Run-time access to an operator's tensors. Indices are the operator's operand positions.
struct KernelIO {
    /// Data pointer of every tensor of the subgraph (constants, arena tensors, variables).
    let tensors: UnsafePointer<UnsafeMutableRawPointer>
    let inputIndices: UnsafePointer<Int32>
    let inputCount: Int
    let outputIndices: UnsafePointer<Int32>
    let outputCount: Int
    /// The kernel's scratch memory (``OpContext/scratchByteCount`` bytes), or nil.
    let scratch: UnsafeMutableRawPointer?
    /// Runs independent pieces of work on the interpreter's threads.
    let parallel: ParallelScope

    /// Whether optional input `i` is present.
    func hasInput(_ i: Int) -> Bool { i < inputCount && inputIndices[i] >= 0 }

    func input(_ i: Int) -> UnsafeRawPointer { UnsafeRawPointer(tensors[Int(inputIndices[i])]) }
    func input<T>(_ i: Int, as type: T.Type) -> UnsafePointer<T> { input(i).assumingMemoryBound(to: T.self) }
    func output(_ i: Int) -> UnsafeMutableRawPointer { tensors[Int(outputIndices[i])] }
    func output<T>(_ i: Int, as type: T.Type) -> UnsafeMutablePointer<T> { output(i).assumingMemoryBound(to: T.self) }
}
