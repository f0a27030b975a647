// Fuzz target: load + compile + invoke of structurally valid models whose shapes, types, quantization
// and constant data come from the fuzz input. Two modes, chosen by the first byte:
//
// - generated (even first byte): a chain of 1-3 operators built with TinyModelBuilder (every op the
//   engine implements, plus unsupported and custom codes), each parameter picked by the input from a
//   table of valid and hostile values (shapes with 0, -1 and huge dimensions; scales of 0, NaN, inf,
//   denormals; zero points out of range; per-channel vectors of the wrong length; truncated weights;
//   out-of-range options);
// - mutated (odd first byte): a real small model (EDGEVISION_FUZZ_MODELS, or the small models found in
//   EDGEVISION_MODELS) edited in place: shape dimensions, tensor types, quantization scales, zero points
//   and quantized dimensions, operator input/output tensor indices and constant-buffer bytes. The
//   FlatBuffer keeps its layout, so the file stays structurally valid.
//
// Compiling must succeed or throw EngineError / ModelFormatError; when it succeeds the model is
// invoked (inputs filled from the fuzz input) and its outputs read.
import Foundation
import FuzzSupport
import InferenceEngine
import TFLiteFormat

typealias B = TinyModelBuilder

// MARK: Value tables

let dimensions: [Int32] = [1, 2, 3, 4, 1, 2, 5, 8, 1, 3, 0, -1, 16, 7, 1 << 16, Int32.max, -2, 33]
let scales: [Float] = [1.0 / 255, 0.5, 1, 0.0078125, 0.02, 1.0 / 128, 0.1, 3, 0, -1, .nan, .infinity, -.infinity,
                       1e-30, 1e30, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 1e-9, 65504]
let zeroPoints: [Int64] = [0, 128, 0, 127, -128, 0, 255, 1, 256, -129, -1, Int64.max, Int64.min, 32767, -32768]
let intSlots: [Int32] = [1, 1, 2, 1, 3, 0, -1, 2, 4, Int32.max, Int32.min, 1 << 20, 5, -3]
let floats: [Float] = [1, 0.5, 0, -1, 2, .nan, .infinity, -.infinity, 1e-30, 1e30, .leastNonzeroMagnitude, 0.2]
let types: [Int8] = [B.TensorType.float32, B.TensorType.uint8, B.TensorType.int8, B.TensorType.float32, B.TensorType.uint8,
                     B.TensorType.int8, B.TensorType.int32, B.TensorType.int16, B.TensorType.float16, B.TensorType.int64,
                     B.TensorType.bool, B.TensorType.string, 10 /* float64 */, 15 /* complex */, 17 /* uint16 */, 99]

func elementSize(_ type: Int8) -> Int {
    switch type {
    case B.TensorType.uint8, B.TensorType.int8, B.TensorType.bool: return 1
    case B.TensorType.int16, B.TensorType.float16, 17: return 2
    case B.TensorType.int64, 10: return 8
    default: return 4
    }
}

// MARK: Generated graphs

struct Generator {
    var input: FuzzInput
    var b = TinyModelBuilder()
    /// The model's main element type.
    var type: Int8 = B.TensorType.float32

    var isQuantized: Bool { type == B.TensorType.uint8 || type == B.TensorType.int8 || type == B.TensorType.int16 }

    /// Mostly `preferred`, sometimes any type.
    mutating func elementType(_ preferred: Int8) -> Int8 {
        input.byte() % 8 == 7 ? input.pick(types) : preferred
    }

    mutating func dim(_ preferred: Int32) -> Int32 {
        input.byte() % 8 == 7 ? input.pick(dimensions) : preferred
    }

    mutating func shape(_ preferred: [Int32]) -> [Int32] {
        switch input.byte() % 16 {
        case 15: return (0..<input.choose(6)).map { _ in input.pick(dimensions) }   // any rank
        case 14: return Array(preferred.dropLast())
        default: return preferred.map { dim($0) }
        }
    }

    mutating func quantization(for type: Int8, channels: Int = 1) -> B.Quantization? {
        let quantizedType = type == B.TensorType.uint8 || type == B.TensorType.int8 || type == B.TensorType.int16 || type == B.TensorType.int32
        switch input.byte() % 16 {
        case 0: return nil
        case 1: return B.Quantization(scales: [], zeroPoints: [])
        case 2, 3:   // per-channel, maybe of the wrong length or dimension
            let count = input.bool() ? max(0, min(channels, 64)) : input.choose(5)
            return B.Quantization(scales: (0..<count).map { _ in input.byte() % 4 == 3 ? input.pick(scales) : 0.01 * Float(1 + input.byte() % 8) },
                                  zeroPoints: (0..<(input.bool() ? count : input.choose(5))).map { _ in input.byte() % 4 == 3 ? input.pick(zeroPoints) : 0 },
                                  quantizedDimension: input.byte() % 4 == 3 ? Int32(truncatingIfNeeded: input.pick(intSlots)) : 0)
        default:
            guard quantizedType || input.byte() % 4 == 0 else { return nil }
            let zero: Int64 = type == B.TensorType.uint8 ? 128 : 0
            return B.Quantization(scale: input.byte() % 4 == 3 ? input.pick(scales) : 1.0 / Float(1 + Int(input.byte() % 200)),
                                  zeroPoint: input.byte() % 4 == 3 ? input.pick(zeroPoints) : zero)
        }
    }

    /// Constant data for `shape`: the right size (mostly), bytes from the input.
    mutating func constantData(type: Int8, shape: [Int32], values: [Int32]? = nil) -> [UInt8] {
        var count = 1
        for d in shape {
            guard d >= 0, case let (c, overflow) = count.multipliedReportingOverflow(by: Int(d)), !overflow, c <= 1 << 16 else { count = 1 << 16; break }
            count = c
        }
        var size = count * elementSize(type)
        if input.byte() % 16 == 15 { size = input.choose(size + 8) }   // truncated or too long
        if let values, type == B.TensorType.int32 { return FBBytes.littleEndian(values.map { $0 }) + [] }
        let seed = input.take(min(size, 64))
        if type == B.TensorType.float32 && input.bool() {
            // Sensible floats, so that quantization of real values is exercised.
            return FBBytes.littleEndian((0..<(size / 4)).map { Float(Int(seed.isEmpty ? 1 : seed[$0 % seed.count]) - 128) / 64 }.map(\.bitPattern)) + Array(repeating: 0, count: size % 4)
        }
        return (0..<size).map { seed.isEmpty ? UInt8(truncatingIfNeeded: $0) : seed[$0 % seed.count] &+ UInt8(truncatingIfNeeded: $0 / seed.count) }
    }

    mutating func activation(_ name: String, shape preferredShape: [Int32], type preferredType: Int8? = nil) -> Int32 {
        let t = elementType(preferredType ?? type)
        let s = shape(preferredShape)
        return b.addTensor(name, type: t, shape: s, quantization: quantization(for: t, channels: Int(s.last ?? 1)))
    }

    mutating func constant(_ name: String, shape preferredShape: [Int32], type preferredType: Int8? = nil, channels: Int = 1, values: [Int32]? = nil) -> Int32 {
        let t = elementType(preferredType ?? type)
        let s = values == nil ? shape(preferredShape) : preferredShape
        return b.addTensor(name, type: t, shape: s, data: constantData(type: t, shape: s, values: values),
                           quantization: quantization(for: t, channels: channels))
    }

    /// An int32 parameter tensor (shape, axes, paddings, sizes) with mostly the given values.
    mutating func parameter(_ name: String, _ values: [Int32]) -> Int32 {
        let v = input.byte() % 8 == 7 ? values.map { _ in input.pick(intSlots) } : values
        let s: [Int32] = input.byte() % 16 == 15 ? [Int32(v.count), 1] : [Int32(v.count)]
        return b.addTensor(name, type: B.TensorType.int32, shape: s, data: FBBytes.littleEndian(v))
    }

    mutating func output(_ name: String, type preferred: Int8? = nil) -> Int32 {
        let t = elementType(preferred ?? type)
        // Mostly undeclared (the engine computes it); sometimes a declared, possibly wrong, shape.
        let s: [Int32] = input.byte() % 8 == 7 ? (0..<input.choose(5)).map { _ in input.pick(dimensions) } : []
        return b.addTensor(name, type: t, shape: s, quantization: quantization(for: t))
    }

    mutating func slots(_ spec: [(Int, Character)]) -> [(slot: Int, value: FBScalar)] {
        spec.compactMap { slot, kind in
            if input.byte() % 8 == 7 { return nil }   // absent: the default
            switch kind {
            case "p": return (slot, .int8(Int8(truncatingIfNeeded: input.byte() % 8 == 7 ? input.byte() : input.byte() % 2)))
            case "a": return (slot, .int8(Int8(truncatingIfNeeded: input.byte() % 8 == 7 ? input.byte() : input.byte() % 4)))
            case "b": return (slot, .bool(input.bool()))
            case "f": return (slot, .float32(input.pick(floats)))
            case "t": return (slot, .int8(input.pick(types)))
            default: return (slot, .int32(input.byte() % 2 == 0 ? 1 : input.pick(intSlots)))
            }
        }
    }

    mutating func op(_ code: Int32, _ inputs: [Int32], _ outputs: [Int32], options: UInt8 = 0, _ spec: [(Int, Character)] = []) {
        let index = b.addOperatorCode(builtin: code, version: input.byte() % 16 == 15 ? Int32(input.byte()) : 1)
        b.addOperator(opcodeIndex: index, inputs: inputs, outputs: outputs, builtinOptionsType: options, builtinOptions: slots(spec))
    }

    /// Appends one operator consuming `x` (of shape [1, h, w, c]); returns its first output.
    mutating func appendOperator(x: Int32, h: Int32, w: Int32, c: Int32, n: Int) -> Int32 {
        let k = dim(Int32(1 + input.byte() % 4)), kh = dim(Int32(1 + input.byte() % 3)), kw = dim(Int32(1 + input.byte() % 3))
        let biasType = isQuantized ? B.TensorType.int32 : type
        let y = output("y\(n)")
        switch input.byte() % 34 {
        case 0:
            let f = constant("filter\(n)", shape: [k, kh, kw, c], channels: Int(k))
            let bias = constant("bias\(n)", shape: [k], type: biasType, channels: Int(k))
            op(3, input.byte() % 8 == 7 ? [x, f] : [x, f, bias], [y], options: 1, [(0, "p"), (1, "i"), (2, "i"), (3, "a"), (4, "i"), (5, "i")])
        case 1:
            let m = dim(1)
            let f = constant("filter\(n)", shape: [1, kh, kw, c &* m], channels: Int(c &* m))
            let bias = constant("bias\(n)", shape: [c &* m], type: biasType, channels: Int(c &* m))
            op(4, [x, f, bias], [y], options: 2, [(0, "p"), (1, "i"), (2, "i"), (3, "i"), (4, "a"), (5, "i"), (6, "i")])
        case 2:
            let f = constant("weights\(n)", shape: [k, h &* w &* c], channels: Int(k))
            let bias = constant("bias\(n)", shape: [k], type: biasType, channels: Int(k))
            op(9, input.byte() % 8 == 7 ? [x, f, -1] : [x, f, bias], [y], options: 8, [(0, "a"), (1, "i"), (2, "b"), (3, "b")])
        case 3:
            let shape = parameter("output_shape\(n)", [1, h &* 2, w &* 2, k])
            let f = constant("filter\(n)", shape: [k, kh, kw, c], channels: Int(k))
            op(67, [shape, f, x], [y], options: 49, [(0, "p"), (1, "i"), (2, "i"), (3, "a")])
        case 4, 5, 6, 7, 8, 9, 10:
            let code = input.pick([Int32(0), 41, 18, 42, 55, 57, 99])
            let table: [Int32: UInt8] = [0: 11, 41: 28, 18: 21, 42: 29]
            let options: UInt8 = table[code] ?? 0
            let other: [Int32] = input.pick([[1, h, w, c], [c], [1, 1, 1, c], [1, h, 1, 1], [], [1, h, w, c]])
            let z = input.bool() ? constant("other\(n)", shape: other) : activation("other\(n)", shape: other)
            let spec: [(Int, Character)] = options == 0 ? [] : [(0, Character("a"))]
            op(code, input.bool() ? [x, z] : [z, x], [y], options: options, spec)
            if !b.inputs.contains(z), b.tensors[Int(z)].data == nil { b.inputs.append(z) }
        case 11, 12:
            op(input.bool() ? 1 : 17, [x], [y], options: 5, [(0, "p"), (1, "i"), (2, "i"), (3, "i"), (4, "i"), (5, "a")])
        case 13:
            let axes = parameter("axes\(n)", input.bool() ? [1, 2] : [Int32(input.byte() % 5) - 1])
            op(input.pick([Int32(40), 74]), [x, axes], [y], options: 27, [(0, "b")])
        case 14:
            let axis = parameter("axis\(n)", [Int32(input.byte() % 5) - 1])
            b.tensors[Int(y)].type = input.bool() ? B.TensorType.int32 : B.TensorType.int64
            op(56, [x, axis], [y], options: 40, [(0, "t")])
        case 15: op(25, [x], [y], options: 9, [(0, "f")])
        case 16, 17, 18:
            let code = input.pick([Int32(14), 28, 19, 21, 20, 152, 117, 98, 6, 114, 53, 47, 59, 101, 8, 75, 11])
            if code == 6 { b.tensors[Int(y)].type = B.TensorType.float32; b.tensors[Int(y)].quantization = nil }
            if code == 114 && type == B.TensorType.float32 { b.tensors[Int(y)].type = B.TensorType.uint8; b.tensors[Int(y)].quantization = .init(scale: 0.01, zeroPoint: 128) }
            op(code, [x], [y], options: code == 98 ? 75 : 0, code == 98 ? [(0, "f")] : [])
        case 19:
            let alpha = constant("alpha\(n)", shape: input.bool() ? [c] : [1, 1, c])
            op(54, [x, alpha], [y])
        case 20:
            let shape = parameter("shape\(n)", input.bool() ? [1, h &* w &* c] : [-1, c])
            op(22, input.byte() % 8 == 7 ? [x] : [x, shape], [y])
        case 21:
            op(43, [x], [y], options: 30)
        case 22:
            let axis = parameter("axis\(n)", [Int32(input.byte() % 6) - 1])
            op(70, [x, axis], [y])
        case 23:
            let z = input.bool() ? constant("other\(n)", shape: [1, h, w, c]) : x
            op(2, [x, z] + (input.bool() ? [x] : []), [y], options: 10, [(0, "i"), (1, "a")])
        case 24:
            let axis = b.addTensor("axis\(n)", type: B.TensorType.int32, shape: [], data: FBBytes.littleEndian([Int32(input.byte() % 5) - 1]))
            let y2 = output("y\(n)b")
            op(49, [axis, x], [y, y2], options: 35, [(0, "i")])
        case 25:
            let sizes = parameter("sizes\(n)", [c / 2, c - c / 2])
            let axis = b.addTensor("axis\(n)", type: B.TensorType.int32, shape: [], data: FBBytes.littleEndian([Int32(3)]))
            let y2 = output("y\(n)b")
            op(102, [x, sizes, axis], [y, y2], options: 79, [(0, "i")])
        case 26:
            op(65, [x, parameter("begin\(n)", [0, 0, 0, 0]), parameter("size\(n)", [1, h, w, -1])], [y])
        case 27:
            op(45, [x, parameter("begin\(n)", [0, 0, 0, 0]), parameter("end\(n)", [1, h, w, c]), parameter("strides\(n)", [1, 1, 2, 1])],
               [y], options: 32, [(0, "i"), (1, "i"), (2, "i"), (3, "i"), (4, "i"), (5, "b")])
        case 28:
            let paddings = parameter("paddings\(n)", [0, 0, 1, 1, 2, 0, 0, 0])
            if input.bool() {
                op(34, [x, paddings], [y])
            } else {
                op(60, [x, paddings, constant("value\(n)", shape: [])], [y])
            }
        case 29:
            op(39, [x, parameter("perm\(n)", [0, 2, 1, 3])], [y])
        case 30:
            let indices = parameter("indices\(n)", [0, c - 1, 0])
            op(36, [x, indices], [y], options: 23, [(0, "i"), (1, "i")])
        case 31:
            let size = parameter("size\(n)", [h &* 2 &+ 1, w / 2 &+ 1])
            if input.bool() {
                op(23, [x, size], [y], options: 15, [(2, "b"), (3, "b")])
            } else {
                op(97, [x, size], [y], options: 74, [(0, "b"), (1, "b")])
            }
        case 32:
            // Custom operators with custom options from the input.
            let name = input.pick(["Convolution2DTransposeBias", "TFLite_Detection_PostProcess", "Unknown"])
            let code = b.addOperatorCode(custom: name)
            var inputs = [x]
            if name == "Convolution2DTransposeBias" {
                inputs += [constant("filter\(n)", shape: [k, kh, kw, c], channels: Int(k)), constant("bias\(n)", shape: [k], channels: Int(k))]
            } else if name == "TFLite_Detection_PostProcess" {
                inputs += [activation("scores\(n)", shape: [1, h, 3]), constant("anchors\(n)", shape: [h, 4])]
            }
            b.addOperator(opcodeIndex: code, inputs: inputs, outputs: [y], customOptions: input.take(input.choose(48)))
        default:
            // Any builtin code (most are unsupported, and must be reported as such).
            op(Int32(input.u16() % 210), [x], [y], options: input.byte(), [(0, "i"), (1, "a")])
        }
        return y
    }

    mutating func generate() -> Data {
        type = input.pick([B.TensorType.float32, B.TensorType.uint8, B.TensorType.int8, B.TensorType.float32, B.TensorType.uint8, B.TensorType.int8, B.TensorType.int16])
        let h = dim(Int32(1 + input.byte() % 6)), w = dim(Int32(1 + input.byte() % 6)), c = dim(Int32(1 + input.byte() % 4))
        let x = activation("x", shape: [1, h, w, c])
        b.inputs = [x]
        var current = x
        for n in 0..<(1 + Int(input.byte() % 3)) {
            current = appendOperator(x: current, h: h, w: w, c: c, n: n)
        }
        b.outputs = input.byte() % 16 == 15 ? [x] : [current]
        if input.byte() % 32 == 31 { b.inputs.append(current) }   // an output that is also an input
        return b.data
    }
}

// MARK: Mutated real models

/// A place in a real model that can be changed without moving anything.
struct Site {
    enum Kind { case dimension, type, scale, zeroPoint, quantizedDimension, tensorIndex, bufferByte }
    let kind: Kind
    let offset: Int
    let length: Int   // for bufferByte: the buffer's size
}

struct RealModel {
    let bytes: [UInt8]
    let sites: [Site]
}

/// Finds the mutable sites by walking the FlatBuffer (models from disk that the verifier accepted).
func sites(in bytes: [UInt8], model: TFLiteModel) -> [Site] {
    func u16(_ o: Int) -> Int? { o >= 0 && o + 2 <= bytes.count ? Int(bytes[o]) | Int(bytes[o + 1]) << 8 : nil }
    func u32(_ o: Int) -> Int? {
        guard o >= 0, o + 4 <= bytes.count else { return nil }
        return (0..<4).reduce(0) { $0 | Int(bytes[o + $1]) << (8 * $1) }
    }
    /// The position of field `slot` of the table at `table`, or nil when absent.
    func field(_ table: Int, _ slot: Int) -> Int? {
        guard let soffset = u32(table) else { return nil }
        let vtable = table - Int(Int32(truncatingIfNeeded: soffset))
        guard let vsize = u16(vtable), 4 + 2 * slot + 2 <= vsize, let offset = u16(vtable + 4 + 2 * slot), offset != 0 else { return nil }
        return table + offset
    }
    func target(_ position: Int?) -> Int? { position.flatMap { p in u32(p).map { p + $0 } } }
    func vector(_ position: Int?) -> (start: Int, count: Int)? {
        guard let v = target(position), let count = u32(v) else { return nil }
        return (v + 4, count)
    }
    var result: [Site] = []
    guard let root = target(0), let subgraphs = vector(field(root, 2)) else { return [] }
    for s in 0..<subgraphs.count {
        guard let subgraph = target(subgraphs.start + 4 * s) else { continue }
        if let tensors = vector(field(subgraph, 0)) {
            for t in 0..<tensors.count {
                guard let tensor = target(tensors.start + 4 * t) else { continue }
                if let shape = vector(field(tensor, 0)) {
                    result += (0..<shape.count).map { Site(kind: .dimension, offset: shape.start + 4 * $0, length: 4) }
                }
                if let type = field(tensor, 1) { result.append(Site(kind: .type, offset: type, length: 1)) }
                if let q = target(field(tensor, 4)) {
                    if let scale = vector(field(q, 2)) {
                        result += (0..<min(scale.count, 4)).map { Site(kind: .scale, offset: scale.start + 4 * $0, length: 4) }
                    }
                    if let zero = vector(field(q, 3)) {
                        result += (0..<min(zero.count, 4)).map { Site(kind: .zeroPoint, offset: zero.start + 8 * $0, length: 8) }
                    }
                    if let dimension = field(q, 6) { result.append(Site(kind: .quantizedDimension, offset: dimension, length: 4)) }
                }
            }
        }
        if let operators = vector(field(subgraph, 3)) {
            for o in 0..<operators.count {
                guard let op = target(operators.start + 4 * o) else { continue }
                for slot in [1, 2] {
                    if let indices = vector(field(op, slot)) {
                        result += (0..<indices.count).map { Site(kind: .tensorIndex, offset: indices.start + 4 * $0, length: 4) }
                    }
                }
            }
        }
    }
    for buffer in model.buffers {
        if let range = buffer.range, !range.isEmpty { result.append(Site(kind: .bufferByte, offset: range.lowerBound, length: range.count)) }
    }
    return result.filter { $0.offset >= 0 && $0.offset + ($0.kind == .bufferByte ? $0.length : $0.length) <= bytes.count }
}

nonisolated(unsafe) var realModels: [RealModel] = []

func mutate(_ model: RealModel, _ input: inout FuzzInput) -> Data {
    var bytes = model.bytes
    guard !model.sites.isEmpty else { return Data(bytes) }
    for _ in 0..<(1 + Int(input.byte() % 6)) {
        let site = model.sites[Int(input.u32() % UInt32(model.sites.count))]
        switch site.kind {
        case .dimension, .quantizedDimension, .tensorIndex:
            let value: Int32 = input.bool() ? input.pick(dimensions) : Int32(Int8(bitPattern: input.byte()))
            FBBytes.write(value, at: site.offset, in: &bytes)
        case .type:
            bytes[site.offset] = UInt8(bitPattern: input.pick(types))
        case .scale:
            FBBytes.write(input.pick(scales).bitPattern, at: site.offset, in: &bytes)
        case .zeroPoint:
            FBBytes.write(input.pick(zeroPoints), at: site.offset, in: &bytes)
        case .bufferByte:
            let at = site.offset + Int(input.u32() % UInt32(site.length))
            let run = min(1 + Int(input.byte() % 16), site.offset + site.length - at)
            for i in 0..<run { bytes[at + i] = input.byte() }
        }
    }
    return Data(bytes)
}

// MARK: Running

let fuzzOptions: ModelOptions = {
    var options = ModelOptions()
    options.maximumArenaBytes = 256 << 20
    options.maximumTensorBytes = 64 << 20
    return options
}()

func run(_ data: Data, _ input: inout FuzzInput) {
    var options = fuzzOptions
    options.kernels = input.pick(KernelSelection.allCases)
    let model: Model
    do {
        model = try Model(data: data, options: options)
    } catch is EngineError {
        return
    } catch is ModelFormatError {
        return
    } catch {
        fputs("fuzz: unexpected error type \(type(of: error)): \(error)\n", stderr)
        abort()
    }
    let threads = input.byte() % 4 == 3 ? 2 : 1
    let interpreter = Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
    let fill = input.take(64)
    for i in 0..<model.inputs.count {
        let size = model.inputs[i].byteCount
        let bytes = Data((0..<size).map { fill.isEmpty ? UInt8(truncatingIfNeeded: $0 &* 31) : fill[$0 % fill.count] &+ UInt8(truncatingIfNeeded: $0) })
        do {
            try interpreter.copyInput(bytes, at: i)
        } catch {
            fputs("fuzz: copyInput(\(size) bytes, at: \(i)) failed: \(error)\n", stderr)
            abort()
        }
    }
    interpreter.invoke()
    for i in 0..<model.outputs.count {
        do {
            let out = try interpreter.outputData(at: i)
            guard out.count == model.outputs[i].byteCount else {
                fputs("fuzz: output \(i) has \(out.count) bytes, described as \(model.outputs[i].byteCount)\n", stderr)
                abort()
            }
        } catch {
            fputs("fuzz: outputData(at: \(i)) failed: \(error)\n", stderr)
            abort()
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    if mode & 1 == 1, !realModels.isEmpty {
        let model = realModels[Int(mode >> 1) % realModels.count]
        let bytes = mutate(model, &input)
        run(bytes, &input)
    } else {
        var generator = Generator(input: input)
        let bytes = generator.generate()
        input = generator.input
        run(bytes, &input)
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    for url in FuzzHarness.modelFiles(maximumSize: 700_000) {
        guard let data = try? Data(contentsOf: url), let model = try? TFLiteModel(data: data),
              (try? Model(file: model, options: fuzzOptions)) != nil else { continue }
        let bytes = Array(data)
        realModels.append(RealModel(bytes: bytes, sites: sites(in: bytes, model: model)))
        fputs("fuzz: mutating \(url.lastPathComponent) (\(realModels.last!.sites.count) sites)\n", stderr)
    }
    FuzzHarness.writeSeedsIfAsked { write in
        // Inputs are choice streams, not model files: a few fixed ones to start from.
        for i in 0..<34 {
            // generated mode; operator i; small dimensions
            write("op-\(i)-f32", [0, 0, 2, 0, 2, 0, 1, 0, 0] + Array(repeating: 0, count: 24) + [UInt8(i)] + Array(repeating: 0, count: 32))
            write("op-\(i)-u8", [0, 1, 0, 2, 0, 2, 0, 1, 0] + Array(repeating: 0, count: 24) + [UInt8(i)] + Array(repeating: 0, count: 32))
        }
        for m in 0..<realModels.count { write("real-\(m)", [UInt8(2 * m + 1), 0, 0, 0, 0, 0, 0]) }
    }
    return 0
}
