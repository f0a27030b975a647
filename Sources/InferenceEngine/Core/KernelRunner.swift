import Foundation
import TFLiteFormat
import TensorCore

/// A tensor with its data, for running one kernel without a model file (tests, tools).
package struct TensorValue: Sendable, Equatable {
    package var type: ElementType
    package var shape: [Int]
    package var quantization: QuantizationParameters?
    package var bytes: [UInt8]
    /// Whether the kernel sees this input as a constant (weights, shape operands).
    package var isConstant: Bool

    package init(type: ElementType, shape: [Int], quantization: QuantizationParameters? = nil, bytes: [UInt8], isConstant: Bool = false) {
        self.type = type
        self.shape = shape
        self.quantization = quantization
        self.bytes = bytes
        self.isConstant = isConstant
    }

    package init<T>(_ values: [T], type: ElementType, shape: [Int], quantization: QuantizationParameters? = nil, isConstant: Bool = false) {
        self.init(type: type, shape: shape, quantization: quantization,
                  bytes: values.withUnsafeBytes { Array($0) }, isConstant: isConstant)
    }

    package static func float32(_ values: [Float], shape: [Int], isConstant: Bool = false) -> TensorValue {
        TensorValue(values, type: .float32, shape: shape, isConstant: isConstant)
    }
    package static func int32(_ values: [Int32], shape: [Int], isConstant: Bool = true) -> TensorValue {
        TensorValue(values, type: .int32, shape: shape, isConstant: isConstant)
    }
    package static func uint8(_ values: [UInt8], shape: [Int], scale: Float, zeroPoint: Int64, isConstant: Bool = false) -> TensorValue {
        TensorValue(values, type: .uint8, shape: shape, quantization: QuantizationParameters(scale: scale, zeroPoint: zeroPoint), isConstant: isConstant)
    }
    package static func int8(_ values: [Int8], shape: [Int], quantization: QuantizationParameters, isConstant: Bool = false) -> TensorValue {
        TensorValue(values, type: .int8, shape: shape, quantization: quantization, isConstant: isConstant)
    }

    /// The data reinterpreted as `T`.
    package func values<T>(as type: T.Type) -> [T] {
        bytes.withUnsafeBytes { raw in
            (0..<(raw.count / MemoryLayout<T>.stride)).map { raw.loadUnaligned(fromByteOffset: $0 * MemoryLayout<T>.stride, as: T.self) }
        }
    }
    package var floats: [Float] { values(as: Float.self) }
}

/// The type and quantization of an expected output (its shape is computed by the kernel).
package struct OutputSpec: Sendable {
    package var type: ElementType
    package var quantization: QuantizationParameters?
    /// Declared shape, as a model file would carry it ([] = unknown).
    package var shape: [Int]
    package init(type: ElementType, quantization: QuantizationParameters? = nil, shape: [Int] = []) {
        self.type = type
        self.quantization = quantization
        self.shape = shape
    }
    package static let float32 = OutputSpec(type: .float32)
    package static func uint8(scale: Float, zeroPoint: Int64) -> OutputSpec {
        OutputSpec(type: .uint8, quantization: QuantizationParameters(scale: scale, zeroPoint: zeroPoint))
    }
    package static func int8(scale: Float, zeroPoint: Int64) -> OutputSpec {
        OutputSpec(type: .int8, quantization: QuantizationParameters(scale: scale, zeroPoint: zeroPoint))
    }
}

/// Runs one operator through the same prepare/run path as a compiled model, without a model file
/// (TFLM's kernel_runner). `inputs` may contain nil for an omitted optional operand.
package enum KernelRunner {
    package static func run(_ op: BuiltinOperator, options: BuiltinOptions = .none, version: Int = 1,
                            inputs: [TensorValue?], outputs: [OutputSpec], threads: Int = 1,
                            kernels: KernelSelection = .optimized) throws -> [TensorValue] {
        try run(code: OperatorCode(builtinCode: op, version: version), options: options, customOptions: [], inputs: inputs, outputs: outputs,
                threads: threads, kernels: kernels)
    }

    package static func run(custom name: String, customOptions: [UInt8], inputs: [TensorValue?], outputs: [OutputSpec], threads: Int = 1,
                            kernels: KernelSelection = .optimized) throws -> [TensorValue] {
        try run(code: OperatorCode(builtinCode: .custom, customCode: name), options: .none, customOptions: customOptions, inputs: inputs, outputs: outputs,
                threads: threads, kernels: kernels)
    }

    static func run(code: OperatorCode, options: BuiltinOptions, customOptions: [UInt8], inputs: [TensorValue?], outputs: [OutputSpec], threads: Int,
                    kernels: KernelSelection) throws -> [TensorValue] {
        guard let factory = KernelRegistry.factory(for: code) else {
            throw EngineError(.unsupportedOperator, "No kernel for \(code.displayName)")
        }
        // Own aligned copies of every input.
        var blocks: [UnsafeMutableRawPointer] = []
        defer { blocks.forEach { $0.deallocate() } }
        func allocate(_ count: Int) -> UnsafeMutableRawPointer {
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 64)
            p.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1))
            blocks.append(p)
            return p
        }
        var infos: [TensorInfo?] = []
        var pointers: [UnsafeMutableRawPointer] = []
        for value in inputs {
            guard let value else { infos.append(nil); continue }
            let p = allocate(value.bytes.count)
            value.bytes.withUnsafeBytes { if let b = $0.baseAddress { p.copyMemory(from: b, byteCount: $0.count) } }
            infos.append(TensorInfo(name: "input", type: value.type, shape: value.shape, quantization: value.quantization,
                                    constant: value.isConstant ? UnsafeRawBufferPointer(start: p, count: value.bytes.count) : nil))
            pointers.append(p)
        }
        let optionBytes = allocate(customOptions.count)
        customOptions.withUnsafeBytes { if let b = $0.baseAddress { optionBytes.copyMemory(from: b, byteCount: $0.count) } }
        var context = OpContext(nodeIndex: 0, operatorName: code.displayName, version: code.version, options: options,
                                customOptions: UnsafeRawBufferPointer(start: optionBytes, count: customOptions.count),
                                inputs: infos,
                                outputs: outputs.map { TensorInfo(name: "output", type: $0.type, shape: $0.shape, quantization: $0.quantization, constant: nil) },
                                instructionSet: kernels.instructionSet)
        let kernel = try factory(&context)
        var outputPointers: [UnsafeMutableRawPointer] = []
        for output in context.outputs {
            outputPointers.append(allocate(output.byteCount))
        }
        let scratch = context.scratchByteCount > 0 ? allocate(context.scratchByteCount) : nil
        let table = pointers + outputPointers
        var inputIndices: [Int32] = []
        var next: Int32 = 0
        for info in infos {
            if info == nil { inputIndices.append(-1) } else { inputIndices.append(next); next += 1 }
        }
        let outputIndices = (0..<outputPointers.count).map { Int32(pointers.count + $0) }
        let runner = ParallelRunner(threadCount: threads)
        runner.waitUntilStarted()   // so that tests run the pieces on the threads
        table.withUnsafeBufferPointer { t in
            inputIndices.withUnsafeBufferPointer { ins in
                outputIndices.withUnsafeBufferPointer { outs in
                    guard let tb = t.baseAddress, let ob = outs.baseAddress else { return }
                    kernel.run(KernelIO(tensors: tb, inputIndices: ins.baseAddress ?? ob, inputCount: ins.count,
                                        outputIndices: ob, outputCount: outs.count, scratch: scratch, parallel: ParallelScope(runner)))
                }
            }
        }
        return zip(context.outputs, outputPointers).map { info, p in
            TensorValue(type: info.type, shape: info.shape, quantization: info.quantization,
                        bytes: Array(UnsafeRawBufferPointer(start: p, count: info.byteCount)))
        }
    }
}
