import CKernels
import TFLiteFormat
import TensorCore

/// RESIZE_BILINEAR (tensorflow/lite/kernels/resize_bilinear.cc) on NHWC tensors, to the size in
/// the constant int32 [2] input, with `align_corners` / `half_pixel_centers`. Values are not
/// requantized (the output shares the input's parameters), as in TFLite.
///
/// Arithmetic is that of TFLite's registered (optimized) builtin kernel:
/// - float32: sample positions from reference ComputeInterpolationValues; the four corner products
///   are accumulated in the order (y0,x0), (y0,x1), (y1,x0), (y1,x1) with weights
///   `(1-dy)(1-dx)`, `(1-dy)dx`, `dy(1-dx)`, `dy dx`; an exact 2x upscale without align_corners or
///   half_pixel_centers uses the 2x2 kernel (averages of neighbours).
/// - uint8: ResizeBilinearGenericSmallChannel: the same weighted sum in float plus 0.5, truncated.
///   (Its separate 8x half_pixel_centers fast path is not reproduced; on a tested 8x case the
///   results were identical.)
/// - int8 / int16: reference ResizeBilinearInteger with 10-bit fixed-point positions and
///   round-half-away-from-zero of the 20-bit result.
struct ResizeBilinear: Kernel {
    enum Mode: Sendable { case float, float2x, uint8, int8, int16 }

    let mode: Mode
    let batches: Int, inputHeight: Int, inputWidth: Int, depth: Int
    let outputHeight: Int, outputWidth: Int
    /// Per output row / column: the lower and upper source index and the (float) source position.
    let y0: [Int], y1: [Int], x0: [Int], x1: [Int]
    let inputY: [Float], inputX: [Float]
    /// Integer path: source positions in 1/1024 units.
    let inputY10: [Int64], inputX10: [Int64]

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 2, outputs: 1)
        guard case .resizeBilinear(let options) = context.options else { throw context.fail("missing ResizeBilinearOptions") }
        let input = try context.input(0)
        let size = try context.input(1)
        try context.expect(input, type: [.float32, .uint8, .int8, .int16], "input")
        try context.expect(input, rank: 4, "input")
        try ShapeSupport.expectSameType(context, input: input, output: context.outputs[0])
        let (outH, outW) = try ResizeSupport.outputSize(context, size)
        guard !(options.alignCorners && options.halfPixelCenters) else {
            throw context.fail("align_corners and half_pixel_centers cannot both be true")
        }
        let b = input.shape[0], inH = input.shape[1], inW = input.shape[2], c = input.shape[3]
        guard inH > 0 && inW > 0 else { throw context.fail("input shape \(Shape(input.shape)) has no pixels to resize") }
        context.outputs[0].shape = [b, outH, outW, c]

        let mode: Mode
        switch input.type {
        case .float32:
            mode = (!options.alignCorners && !options.halfPixelCenters && outH == 2 * inH && outW == 2 * inW) ? .float2x : .float
        case .uint8: mode = .uint8
        case .int8: mode = .int8
        default: mode = .int16
        }

        // Float source positions (reference ComputeInterpolationValues).
        func scale(_ inSize: Int, _ outSize: Int) -> Float {
            options.alignCorners && outSize > 1 ? Float(inSize - 1) / Float(outSize - 1) : Float(inSize) / Float(outSize)
        }
        func floatAxis(_ outSize: Int, _ inSize: Int) -> ([Float], [Int], [Int]) {
            let s = scale(inSize, outSize)
            var pos: [Float] = [], lo: [Int] = [], hi: [Int] = []
            for v in 0..<outSize {
                let value = Float(v)
                let scaled = options.halfPixelCenters ? (value + 0.5) * s - 0.5 : value * s
                pos.append(scaled)
                lo.append(max(ResizeSupport.integer(scaled.rounded(.down)), 0))
                hi.append(min(ResizeSupport.integer(scaled.rounded(.up)), inSize - 1))
            }
            return (pos, lo, hi)
        }
        // Integer source positions (reference ComputeInterpolationValuesInteger).
        func integerAxis(_ outSize: Int, _ inSize: Int) -> ([Int64], [Int], [Int]) {
            var scale10 = ((1 << 10) * inSize + outSize / 2) / outSize
            if options.alignCorners && outSize > 1 {
                scale10 = ((1 << 10) * (inSize - 1) + (outSize - 1) / 2) / (outSize - 1)
            }
            var pos: [Int64] = [], lo: [Int] = [], hi: [Int] = []
            for v in 0..<outSize {
                let scaled = options.halfPixelCenters ? v * scale10 + scale10 / 2 - (1 << 9) : v * scale10
                pos.append(Int64(scaled))
                lo.append(max(scaled / (1 << 10), 0))
                hi.append(min((scaled + (1 << 10) - 1) / (1 << 10), inSize - 1))
            }
            return (pos, lo, hi)
        }
        if let isa = context.instructionSet, mode == .float || mode == .uint8, b > 0, c > 0,
           [inH, inW, c, outH, outW].allSatisfy({ $0 < Int(Int32.max) }),
           let inputElements = ResizeSupport.product([inH, inW, c]), inputElements < Int(Int32.max),
           let outputElements = ResizeSupport.product([outH, outW, c]), outputElements < Int(Int32.max) {
            let (fy, fy0, fy1) = floatAxis(outH, inH)
            let (fx, fx0, fx1) = floatAxis(outW, inW)
            return OptimizedResizeBilinearKernel(
                isa: isa, bytes: mode == .uint8, batches: b, inputHeight: inH, inputWidth: inW, depth: c, outputHeight: outH, outputWidth: outW,
                y0: fy0.map { Int32($0) }, y1: fy1.map { Int32($0) }, ys: fy,
                x0: fx0.map { Int32($0) }, x1: fx1.map { Int32($0) }, xs: fx)
        }
        let integer = mode == .int8 || mode == .int16
        let (fy, fy0, fy1) = integer ? ([], [], []) : floatAxis(outH, inH)
        let (fx, fx0, fx1) = integer ? ([], [], []) : floatAxis(outW, inW)
        let (iy, iy0, iy1) = integer ? integerAxis(outH, inH) : ([], [], [])
        let (ix, ix0, ix1) = integer ? integerAxis(outW, inW) : ([], [], [])
        return ResizeBilinear(mode: mode, batches: b, inputHeight: inH, inputWidth: inW, depth: c,
                              outputHeight: outH, outputWidth: outW,
                              y0: integer ? iy0 : fy0, y1: integer ? iy1 : fy1,
                              x0: integer ? ix0 : fx0, x1: integer ? ix1 : fx1,
                              inputY: fy, inputX: fx, inputY10: iy, inputX10: ix)
    }

    func run(_ io: KernelIO) {
        let rows = batches * (mode == .float2x ? inputHeight : outputHeight)
        let src = io.input(0), dst = io.output(0)
        io.parallel.forEach(rows) { row in
            switch mode {
            case .float: floatRow(row, src.assumingMemoryBound(to: Float.self), dst.assumingMemoryBound(to: Float.self))
            case .float2x: float2xRow(row, src.assumingMemoryBound(to: Float.self), dst.assumingMemoryBound(to: Float.self))
            case .uint8: uint8Row(row, src.assumingMemoryBound(to: UInt8.self), dst.assumingMemoryBound(to: UInt8.self))
            case .int8: integerRow(row, src.assumingMemoryBound(to: Int8.self), dst.assumingMemoryBound(to: Int8.self))
            case .int16: integerRow(row, src.assumingMemoryBound(to: Int16.self), dst.assumingMemoryBound(to: Int16.self))
            }
        }
    }

    @inline(__always)
    private func inputOffset(_ b: Int, _ y: Int, _ x: Int) -> Int { ((b * inputHeight + y) * inputWidth + x) * depth }

    private func floatRow(_ row: Int, _ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        let b = row / outputHeight, y = row % outputHeight
        let dy = inputY[y] - Float(y0[y])
        var out = output + row * outputWidth * depth
        for x in 0..<outputWidth {
            let dx = inputX[x] - Float(x0[x])
            let w00 = (1 - dy) * (1 - dx), w01 = (1 - dy) * dx, w10 = dy * (1 - dx), w11 = dy * dx
            let p00 = input + inputOffset(b, y0[y], x0[x]), p01 = input + inputOffset(b, y0[y], x1[x])
            let p10 = input + inputOffset(b, y1[y], x0[x]), p11 = input + inputOffset(b, y1[y], x1[x])
            for c in 0..<depth {
                var v: Float = 0
                v += p00[c] * w00
                v += p01[c] * w01
                v += p10[c] * w10
                v += p11[c] * w11
                out[c] = v
            }
            out += depth
        }
    }

    /// TFLite's ResizeBilinear2x2: one input pixel and its right/lower neighbours give a 2x2 block.
    private func float2xRow(_ row: Int, _ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        let b = row / inputHeight, yIn = row % inputHeight
        let yNext = min(yIn + 1, inputHeight - 1)
        let outRow = outputWidth * depth
        for xIn in 0..<inputWidth {
            let xNext = min(xIn + 1, inputWidth - 1)
            let p00 = input + inputOffset(b, yIn, xIn), p01 = input + inputOffset(b, yIn, xNext)
            let p10 = input + inputOffset(b, yNext, xIn), p11 = input + inputOffset(b, yNext, xNext)
            let top = output + ((b * outputHeight + 2 * yIn) * outputWidth + 2 * xIn) * depth
            let bottom = top + outRow
            for c in 0..<depth {
                let x0y0 = p00[c], x1y0 = p01[c], x0y1 = p10[c], x1y1 = p11[c]
                top[c] = x0y0
                top[depth + c] = (x0y0 + x1y0) / 2
                let left = (x0y0 + x0y1) / 2
                bottom[c] = left
                bottom[depth + c] = (left + ((x1y0 + x1y1) / 2)) / 2
            }
        }
    }

    private func uint8Row(_ row: Int, _ input: UnsafePointer<UInt8>, _ output: UnsafeMutablePointer<UInt8>) {
        let b = row / outputHeight, y = row % outputHeight
        let dy = inputY[y] - Float(y0[y])
        var out = output + row * outputWidth * depth
        for x in 0..<outputWidth {
            let dx = inputX[x] - Float(x0[x])
            let w00 = (1 - dy) * (1 - dx), w01 = (1 - dy) * dx, w10 = dy * (1 - dx), w11 = dy * dx
            let p00 = input + inputOffset(b, y0[y], x0[x]), p01 = input + inputOffset(b, y0[y], x1[x])
            let p10 = input + inputOffset(b, y1[y], x0[x]), p11 = input + inputOffset(b, y1[y], x1[x])
            for c in 0..<depth {
                let v = Float(p00[c]) * w00 + Float(p01[c]) * w01 + Float(p10[c]) * w10 + Float(p11[c]) * w11 + 0.5
                out[c] = UInt8(Swift.min(Swift.max(v, 0), 255))
            }
            out += depth
        }
    }

    private func integerRow<T: FixedWidthInteger>(_ row: Int, _ input: UnsafePointer<T>, _ output: UnsafeMutablePointer<T>) {
        let b = row / outputHeight, y = row % outputHeight
        let one: Int64 = 1 << 10
        let wyHigh = inputY10[y] - one * Int64(y0[y]), wyLow = one - wyHigh
        var out = output + row * outputWidth * depth
        for x in 0..<outputWidth {
            let wxHigh = inputX10[x] - one * Int64(x0[x]), wxLow = one - wxHigh
            let p00 = input + inputOffset(b, y0[y], x0[x]), p01 = input + inputOffset(b, y0[y], x1[x])
            let p10 = input + inputOffset(b, y1[y], x0[x]), p11 = input + inputOffset(b, y1[y], x1[x])
            for c in 0..<depth {
                let sum = Int64(p00[c]) * wyLow * wxLow + Int64(p10[c]) * wyHigh * wxLow
                    + Int64(p01[c]) * wyLow * wxHigh + Int64(p11[c]) * wyHigh * wxHigh
                let rounded = (sum + (sum > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20)
                out[c] = T(truncatingIfNeeded: rounded)
            }
            out += depth
        }
    }
}

/// Shared by the RESIZE_* kernels.
enum ResizeSupport {
    /// The product of non-negative sizes, or nil when it overflows Int.
    static func product(_ values: [Int]) -> Int? {
        var result = 1
        for v in values {
            let (p, overflow) = result.multipliedReportingOverflow(by: v)
            if overflow { return nil }
            result = p
        }
        return result
    }

    /// A float that is already integral, as Int (saturating; NaN gives 0).
    static func integer(_ v: Float) -> Int {
        guard v.isFinite else { return v.isNaN ? 0 : (v > 0 ? Int(Int32.max) : Int(Int32.min)) }
        return Int(Swift.max(Swift.min(v, 2e9), -2e9))
    }

    /// The largest output height or width a resize accepts.
    static let maximumSide = 1 << 20

    /// The constant int32 [2] size input: (height, width), both positive and at most ``maximumSide``.
    static func outputSize(_ context: OpContext, _ size: TensorInfo) throws -> (Int, Int) {
        try context.expect(size, type: [.int32], "size input")
        guard size.rank == 1, size.shape[0] == 2 else {
            throw context.fail("size input has shape \(Shape(size.shape)), expected [2]")
        }
        guard let values = size.constantIntegers() else {
            throw context.fail("size input must be a constant tensor (dynamic shapes are not supported)", code: .unsupportedOperator)
        }
        guard values[0] > 0, values[1] > 0 else { throw context.fail("output size \(values) must be positive") }
        // Checked here, before the per-row and per-column tables are built: the output tensor's own
        // size check comes after prepare, and an empty batch or channel axis would pass it anyway.
        guard values[0] <= maximumSide, values[1] <= maximumSide else {
            throw context.fail("output size \(values) is larger than \(maximumSide) pixels per side, the engine's limit for resizes", code: .resourceLimit)
        }
        return (values[0], values[1])
    }
}

/// Float (general mode) and uint8 RESIZE_BILINEAR through CKernels: uint8 bit-identical to the reference rows, float
/// as separable fused lerps (see ck_resize_bilinear_f32: within a few ulps of the reference's four-weight sum, the same
/// values on every instruction set and thread count).
struct OptimizedResizeBilinearKernel: CopyingKernel {
    let isa: Int32
    /// uint8 tensors (else float32).
    let bytes: Bool
    let batches: Int, inputHeight: Int, inputWidth: Int, depth: Int
    let outputHeight: Int, outputWidth: Int
    let y0: [Int32], y1: [Int32], ys: [Float]
    let x0: [Int32], x1: [Int32], xs: [Float]

    /// A float resize to the same size (DeepLab's 33×33 → 33×33): every output pixel is its own
    /// input pixel with weights 0, u + (v − u) · 0 = u when the neighbours are finite. (An infinite
    /// neighbour makes the lerp, and the reference's weighted sum, NaN; the elided copy keeps the
    /// pixel's own value.)
    var copiesInput: Bool {
        !bytes && inputHeight == outputHeight && inputWidth == outputWidth
            && y0.indices.allSatisfy { y0[$0] == Int32($0) && ys[$0] == Float($0) }
            && x0.indices.allSatisfy { x0[$0] == Int32($0) && xs[$0] == Float($0) }
    }

    func run(_ io: KernelIO) {
        let input = io.input(0), output = io.output(0)
        let elementSize = bytes ? 1 : 4
        // Pieces of at most 1/32 of the rows: the thread that finishes its share first takes
        // the other's last pieces, and a smaller last piece leaves it less to wait (DeepLab's
        // 257-row output at 2 threads 0.171 → 0.165 ms; 1/16: the longer wait, 1/64: no better).
        let pieces = max(1, min(outputHeight, 32))
        let inputStride = inputHeight * inputWidth * depth, outputStride = outputHeight * outputWidth * depth
        y0.withUnsafeBufferPointer { y0 in y1.withUnsafeBufferPointer { y1 in ys.withUnsafeBufferPointer { ys in
            x0.withUnsafeBufferPointer { x0 in x1.withUnsafeBufferPointer { x1 in xs.withUnsafeBufferPointer { xs in
                guard let y0 = y0.baseAddress, let y1 = y1.baseAddress, let ys = ys.baseAddress,
                      let x0 = x0.baseAddress, let x1 = x1.baseAddress, let xs = xs.baseAddress else { return }
                io.forEachImageRows(batches: batches, rowCount: outputHeight, pieces: pieces) { n, rows in
                    let source = input + n * inputStride * elementSize, destination = output + n * outputStride * elementSize
                    if bytes {
                        ck_resize_bilinear_u8(isa, source.assumingMemoryBound(to: UInt8.self), Int32(inputWidth), Int32(depth),
                                              destination.assumingMemoryBound(to: UInt8.self), Int32(outputWidth),
                                              y0, y1, ys, x0, x1, xs, Int32(rows.lowerBound), Int32(rows.upperBound))
                    } else {
                        ck_resize_bilinear_f32(isa, source.assumingMemoryBound(to: Float.self), Int32(inputWidth), Int32(depth),
                                               destination.assumingMemoryBound(to: Float.self), Int32(outputWidth),
                                               y0, y1, ys, x0, x1, xs, Int32(rows.lowerBound), Int32(rows.upperBound))
                    }
                }
            } } }
        } } }
    }
}
