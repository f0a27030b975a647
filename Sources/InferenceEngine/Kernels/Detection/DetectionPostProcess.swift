import Foundation
import TFLiteFormat
import TensorCore

/// The custom op `TFLite_Detection_PostProcess` (tensorflow/lite/kernels/detection_postprocess.cc):
/// decodes SSD box encodings against anchors (centre-size coder with y/x/h/w scales) and selects
/// detections with non-maximum suppression, either "fast" (one class-agnostic NMS over each anchor's
/// best class score, reporting `max_classes_per_detection` classes per box) or "regular" (NMS per
/// class, then the best `max_detections` over all classes).
///
/// Inputs: box encodings `[1, anchors, >=4]` (float32, or uint8 with uint8 anchors), class
/// predictions `[1, anchors, classes (+1 background column at 0)]` (float32 or uint8), anchors
/// `[anchors, 4]` as (ycenter, xcenter, h, w). Outputs (float32): boxes `[1, D, 4]` as
/// (ymin, xmin, ymax, xmax), classes `[1, D]`, scores `[1, D]`, count `[1]`, with
/// D = max_detections × max_classes_per_detection. Slots past the detections are zero.
///
/// Everything is computed in float like TFLite (box decoding in double, rounded to float), with the
/// same score threshold (`>=`), stable descending sort of the kept scores, IoU suppression (`>`),
/// first-index argmax and libstdc++'s `std::partial_sort` order for the classes of an anchor, and
/// the single-threaded merge order of regular NMS, so ties resolve as in LiteRT.
struct DetectionPostProcess: Kernel {
    // Shapes.
    let numBoxes: Int
    let boxCodeLength: Int
    let classesWithBackground: Int
    let numClasses: Int
    let labelOffset: Int

    // Options.
    let maxDetections: Int
    let maxClassesPerDetection: Int
    /// min(max_classes_per_detection, num_classes): the classes reported per fast-NMS detection.
    let categoriesPerAnchor: Int
    /// min(detections_per_class, max_detections), as in TFLite's regular NMS.
    let detectionsPerClass: Int
    let useRegularNMS: Bool
    let scoreThreshold: Float
    let iouThreshold: Float
    let yScale: Double, xScale: Double, hScale: Double, wScale: Double

    // Types and quantization.
    let boxesQuantized: Bool
    let boxZeroPoint: Float, boxScale: Float
    let anchorZeroPoint: Float, anchorScale: Float
    let scoresQuantized: Bool
    let scoreZeroPoint: Int32, scoreScale: Float
    /// Dequantized constant anchors (4 per anchor), or empty when the anchors are computed at run time.
    let constantAnchors: [Float]

    let layout: Layout

    /// Byte offsets of the temporaries in the scratch memory.
    struct Layout {
        var decoded = 0, scores = 0, candidates = 0, keepIndices = 0, keepScores = 0, order = 0, sortTemp = 0
        var selected = 0, classIndices = 0, classTemp = 0
        var infoIndex = 0, infoScore = 0, mergeIndex = 0, mergeScore = 0
        var total = 0

        mutating func reserve(_ count: Int, bytesEach: Int) throws -> Int {
            let (bytes, o1) = count.multipliedReportingOverflow(by: bytesEach)
            let aligned = (total + 15) & ~15
            let (end, o2) = aligned.addingReportingOverflow(bytes)
            guard !o1, !o2 else { throw LayoutOverflow() }
            total = end
            return aligned
        }
    }
    struct LayoutOverflow: Error {}

    // MARK: - Prepare

    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try context.expect(inputs: 3, outputs: 4)
        let boxes = try context.input(0), classPredictions = try context.input(1), anchors = try context.input(2)

        // Options (a FlexBuffer map).
        let options = try parseOptions(context)

        // Types.
        try context.expect(boxes, type: [.float32, .uint8], "box encodings (input 0)")
        try context.expect(classPredictions, type: [.float32, .uint8], "class predictions (input 1)")
        guard anchors.type == boxes.type else {
            throw context.fail("anchors (input 2) have type \(anchors.type) but box encodings have type \(boxes.type); they must match (float32 or uint8)",
                               code: .unsupportedOperator)
        }
        for (i, output) in context.outputs.enumerated() where output.type != .float32 {
            throw context.fail("output \(i) has type \(output.type); TFLite_Detection_PostProcess produces float32", code: .unsupportedOperator)
        }
        if boxes.type == .uint8 {
            try context.expectPerTensor(boxes, "box encodings (input 0)")
            try context.expectPerTensor(anchors, "anchors (input 2)")
        }
        if classPredictions.type == .uint8 {
            try context.expectPerTensor(classPredictions, "class predictions (input 1)")
        }

        // Shapes.
        try context.expect(boxes, rank: 3, "box encodings (input 0)")
        try context.expect(classPredictions, rank: 3, "class predictions (input 1)")
        try context.expect(anchors, rank: 2, "anchors (input 2)")
        guard boxes.shape[0] == 1 else { throw context.fail("box encodings have batch \(boxes.shape[0]); only batch 1 is supported") }
        guard classPredictions.shape[0] == 1 else { throw context.fail("class predictions have batch \(classPredictions.shape[0]); only batch 1 is supported") }
        let numBoxes = boxes.shape[1]
        guard boxes.shape[2] >= 4 else {
            throw context.fail("box encodings have shape \(Shape(boxes.shape)); the last dimension must be at least 4 (y, x, h, w)")
        }
        guard classPredictions.shape[1] == numBoxes else {
            throw context.fail("class predictions have shape \(Shape(classPredictions.shape)) but the box encodings have \(numBoxes) anchors")
        }
        guard anchors.shape[0] == numBoxes, anchors.shape[1] == 4 else {
            throw context.fail("anchors have shape \(Shape(anchors.shape)), expected [\(numBoxes), 4] (ycenter, xcenter, h, w per anchor)")
        }
        let classesWithBackground = classPredictions.shape[2]
        guard classesWithBackground == options.numClasses || classesWithBackground == options.numClasses + 1 else {
            throw context.fail("class predictions have \(classesWithBackground) columns but num_classes is \(options.numClasses); expected \(options.numClasses) or \(options.numClasses + 1) (with a background column)")
        }
        let (detectedBoxes, overflow) = options.maxDetections.multipliedReportingOverflow(by: options.maxClassesPerDetection)
        guard !overflow, detectedBoxes <= Int(Int32.max) else {
            throw context.fail("max_detections × max_classes_per_detection overflows", code: .resourceLimit)
        }

        // Anchors: dequantize constant anchors now (TFLite: (float(q) - zero point) * scale) and
        // check their sizes, since negative sizes make TFLite's box validation fail.
        let anchorZeroPoint = Float(anchors.zeroPoint), anchorScale = anchors.scale
        var constantAnchors: [Float] = []
        if let data = anchors.constant {
            constantAnchors.reserveCapacity(numBoxes * 4)
            for i in 0..<(numBoxes * 4) {
                if anchors.type == .uint8 {
                    constantAnchors.append((Float(data[i]) - anchorZeroPoint) * anchorScale)
                } else {
                    constantAnchors.append(data.loadUnaligned(fromByteOffset: i * 4, as: Float.self))
                }
            }
            for i in 0..<numBoxes where constantAnchors[4 * i + 2] < 0 || constantAnchors[4 * i + 3] < 0 {
                throw context.fail("anchor \(i) has negative height or width (\(constantAnchors[4 * i + 2]), \(constantAnchors[4 * i + 3])); decoded boxes would be inverted")
            }
        }

        // Scratch memory.
        let categories = min(options.maxClassesPerDetection, options.numClasses)
        let detectionsPerClass = min(options.detectionsPerClass, options.maxDetections)
        var layout = Layout()
        do {
            layout.decoded = try layout.reserve(numBoxes, bytesEach: 16)
            if classPredictions.type == .uint8 {
                layout.scores = try layout.reserve(numBoxes * classesWithBackground, bytesEach: 4)
            }
            layout.candidates = try layout.reserve(numBoxes, bytesEach: 4)
            layout.keepIndices = try layout.reserve(numBoxes, bytesEach: 4)
            layout.keepScores = try layout.reserve(numBoxes, bytesEach: 4)
            layout.order = try layout.reserve(numBoxes, bytesEach: 4)
            layout.sortTemp = try layout.reserve(numBoxes, bytesEach: 4)
            layout.selected = try layout.reserve(numBoxes, bytesEach: 4)
            if options.useRegularNMS {
                let capacity = 2 * options.maxDetections
                layout.infoIndex = try layout.reserve(capacity, bytesEach: 4)
                layout.infoScore = try layout.reserve(capacity, bytesEach: 4)
                layout.mergeIndex = try layout.reserve(capacity, bytesEach: 4)
                layout.mergeScore = try layout.reserve(capacity, bytesEach: 4)
            } else {
                layout.classIndices = try layout.reserve(numBoxes * categories, bytesEach: 4)
                layout.classTemp = try layout.reserve(options.numClasses, bytesEach: 4)
            }
        } catch {
            throw context.fail("the temporaries for \(numBoxes) anchors and \(classesWithBackground) classes overflow", code: .resourceLimit)
        }
        context.scratchByteCount = layout.total

        context.outputs[0].shape = [1, detectedBoxes, 4]
        context.outputs[1].shape = [1, detectedBoxes]
        context.outputs[2].shape = [1, detectedBoxes]
        context.outputs[3].shape = [1]

        return DetectionPostProcess(
            numBoxes: numBoxes, boxCodeLength: boxes.shape[2], classesWithBackground: classesWithBackground,
            numClasses: options.numClasses, labelOffset: classesWithBackground - options.numClasses,
            maxDetections: options.maxDetections, maxClassesPerDetection: options.maxClassesPerDetection,
            categoriesPerAnchor: categories, detectionsPerClass: detectionsPerClass, useRegularNMS: options.useRegularNMS,
            scoreThreshold: options.scoreThreshold, iouThreshold: options.iouThreshold,
            yScale: Double(options.yScale), xScale: Double(options.xScale), hScale: Double(options.hScale), wScale: Double(options.wScale),
            boxesQuantized: boxes.type == .uint8, boxZeroPoint: Float(boxes.zeroPoint), boxScale: boxes.scale,
            anchorZeroPoint: anchorZeroPoint, anchorScale: anchorScale,
            scoresQuantized: classPredictions.type == .uint8, scoreZeroPoint: classPredictions.zeroPoint, scoreScale: classPredictions.scale,
            constantAnchors: constantAnchors, layout: layout)
    }

    struct Options {
        var maxDetections = 0, maxClassesPerDetection = 1, detectionsPerClass = 100, numClasses = 0
        var useRegularNMS = false
        var scoreThreshold: Float = 0, iouThreshold: Float = 0
        var yScale: Float = 0, xScale: Float = 0, hScale: Float = 0, wScale: Float = 0
    }

    static func parseOptions(_ context: OpContext) throws -> Options {
        guard context.customOptions.count > 0 else {
            throw context.fail("has no custom options (expected a FlexBuffer map with max_detections, num_classes, nms thresholds and scales)")
        }
        let root: FlexValue
        do {
            root = try FlexBuffer.decode(context.customOptions)
        } catch {
            throw context.fail("custom options: \(error)")
        }
        guard case .map = root else { throw context.fail("custom options are not a FlexBuffer map") }

        /// A present, non-null option.
        func value(_ key: String) -> FlexValue? {
            guard let v = root[key], v != .null else { return nil }
            return v
        }
        func integer(_ key: String, default fallback: Int?) throws -> Int {
            guard let v = value(key) else {
                guard let fallback else { throw context.fail("custom option \(key) is missing") }
                return fallback
            }
            guard let i = v.intValue, let i32 = Int32(exactly: i) else {
                throw context.fail("custom option \(key) (\(v)) is not a 32-bit integer")
            }
            return Int(i32)
        }
        func float(_ key: String) throws -> Float {
            guard let v = value(key) else { throw context.fail("custom option \(key) is missing") }
            guard let d = v.doubleValue else { throw context.fail("custom option \(key) (\(v)) is not a number") }
            return Float(d)
        }

        var o = Options()
        o.maxDetections = try integer("max_detections", default: nil)
        o.maxClassesPerDetection = try integer("max_classes_per_detection", default: 1)
        o.detectionsPerClass = try integer("detections_per_class", default: 100)
        o.numClasses = try integer("num_classes", default: nil)
        if let v = value("use_regular_nms") {
            guard let flag = v.boolValue ?? v.intValue.map({ $0 != 0 }) else {
                throw context.fail("custom option use_regular_nms (\(v)) is not a boolean")
            }
            o.useRegularNMS = flag
        }
        o.scoreThreshold = try float("nms_score_threshold")
        o.iouThreshold = try float("nms_iou_threshold")
        o.yScale = try float("y_scale")
        o.xScale = try float("x_scale")
        o.hScale = try float("h_scale")
        o.wScale = try float("w_scale")

        guard o.maxDetections >= 0 else { throw context.fail("max_detections is \(o.maxDetections); it must not be negative") }
        guard o.numClasses > 0 else { throw context.fail("num_classes is \(o.numClasses); it must be positive") }
        guard o.maxClassesPerDetection > 0 else {
            throw context.fail("max_classes_per_detection is \(o.maxClassesPerDetection); it must be positive")
        }
        guard o.detectionsPerClass >= 0 else { throw context.fail("detections_per_class is \(o.detectionsPerClass); it must not be negative") }
        if o.useRegularNMS {
            guard min(o.detectionsPerClass, o.maxDetections) > 0 else {
                throw context.fail("regular NMS needs positive max_detections and detections_per_class (have \(o.maxDetections) and \(o.detectionsPerClass))")
            }
        }
        guard o.iouThreshold > 0, o.iouThreshold <= 1 else {
            throw context.fail("nms_iou_threshold is \(o.iouThreshold); it must be in (0, 1]")
        }
        guard !o.scoreThreshold.isNaN else { throw context.fail("nms_score_threshold is NaN") }
        for (name, scale) in [("y_scale", o.yScale), ("x_scale", o.xScale), ("h_scale", o.hScale), ("w_scale", o.wScale)] {
            guard scale.isFinite, scale != 0 else { throw context.fail("\(name) is \(scale); box scales must be finite and non-zero") }
        }
        return o
    }

    // MARK: - Run

    func run(_ io: KernelIO) {
        let outBoxes = io.output(0, as: Float.self)
        let outClasses = io.output(1, as: Float.self)
        let outScores = io.output(2, as: Float.self)
        let outCount = io.output(3, as: Float.self)
        let slots = maxDetections * maxClassesPerDetection
        outBoxes.update(repeating: 0, count: slots * 4)
        outClasses.update(repeating: 0, count: slots)
        outScores.update(repeating: 0, count: slots)
        outCount[0] = 0
        guard numBoxes > 0, let scratch = io.scratch else {
            // No anchors: nothing passes the threshold (TFLite reports zero detections).
            return
        }

        let decoded = (scratch + layout.decoded).assumingMemoryBound(to: Float.self)
        guard decodeBoxes(io, into: decoded) else {
            // TFLite fails the invocation when a decoded box is inverted (ymin > ymax or xmin > xmax);
            // `run` cannot fail, so it reports no detections.
            return
        }

        // Class scores, dequantized like TFLite's Dequantize (scale × (q − zero point)).
        let scores: UnsafePointer<Float>
        if scoresQuantized {
            let q = io.input(1, as: UInt8.self)
            let s = (scratch + layout.scores).assumingMemoryBound(to: Float.self)
            // The value depends on the byte alone: a 256-entry table (on the stack) of the same arithmetic.
            let zp = scoreZeroPoint, scale = Double(scoreScale)
            withUnsafeTemporaryAllocation(of: Float.self, capacity: 256) { table in
                for b in 0..<256 { table[b] = Float(scale * Double(Int32(b) - zp)) }
                for i in 0..<(numBoxes * classesWithBackground) { s[i] = table[Int(q[i])] }
            }
            scores = UnsafePointer(s)
        } else {
            scores = io.input(1, as: Float.self)
        }

        if useRegularNMS {
            regularNMS(scores: scores, decoded: decoded, scratch: scratch, outBoxes: outBoxes, outClasses: outClasses, outScores: outScores, outCount: outCount)
        } else {
            fastNMS(scores: scores, decoded: decoded, scratch: scratch, outBoxes: outBoxes, outClasses: outClasses, outScores: outScores, outCount: outCount)
        }
    }

    /// Decodes every anchor's box to (ymin, xmin, ymax, xmax); false if a box is inverted.
    func decodeBoxes(_ io: KernelIO, into decoded: UnsafeMutablePointer<Float>) -> Bool {
        var valid = true
        let stride = boxCodeLength
        let quantizedBoxes = io.input(0, as: UInt8.self), floatBoxes = io.input(0, as: Float.self)
        let quantizedAnchors = io.input(2, as: UInt8.self), floatAnchors = io.input(2, as: Float.self)
        constantAnchors.withUnsafeBufferPointer { constant in
            let anchorsAreConstant = constant.count == 4 * numBoxes
            for i in 0..<numBoxes {
                let y: Float, x: Float, h: Float, w: Float
                if boxesQuantized {
                    // TFLite's Dequantizer: (float(q) - zero point) * scale, in float.
                    let q = quantizedBoxes + i * stride
                    y = (Float(q[0]) - boxZeroPoint) * boxScale
                    x = (Float(q[1]) - boxZeroPoint) * boxScale
                    h = (Float(q[2]) - boxZeroPoint) * boxScale
                    w = (Float(q[3]) - boxZeroPoint) * boxScale
                } else {
                    let f = floatBoxes + i * stride
                    y = f[0]; x = f[1]; h = f[2]; w = f[3]
                }
                let ay: Float, ax: Float, ah: Float, aw: Float
                if anchorsAreConstant {
                    ay = constant[4 * i]; ax = constant[4 * i + 1]; ah = constant[4 * i + 2]; aw = constant[4 * i + 3]
                } else if boxesQuantized {
                    let q = quantizedAnchors + 4 * i
                    ay = (Float(q[0]) - anchorZeroPoint) * anchorScale
                    ax = (Float(q[1]) - anchorZeroPoint) * anchorScale
                    ah = (Float(q[2]) - anchorZeroPoint) * anchorScale
                    aw = (Float(q[3]) - anchorZeroPoint) * anchorScale
                } else {
                    let f = floatAnchors + 4 * i
                    ay = f[0]; ax = f[1]; ah = f[2]; aw = f[3]
                }
                // Double precision, rounded to float, as in TFLite's DecodeCenterSizeBoxes.
                let yCenter = Float(Double(y) / yScale * Double(ah) + Double(ay))
                let xCenter = Float(Double(x) / xScale * Double(aw) + Double(ax))
                let halfH = Float(0.5 * Foundation.exp(Double(h) / hScale) * Double(ah))
                let halfW = Float(0.5 * Foundation.exp(Double(w) / wScale) * Double(aw))
                let box = decoded + 4 * i
                box[0] = yCenter - halfH
                box[1] = xCenter - halfW
                box[2] = yCenter + halfH
                box[3] = xCenter + halfW
                // TFLite's ValidateBoxes.
                if box[0] > box[2] || box[1] > box[3] { valid = false }
            }
        }
        return valid
    }

    // MARK: Fast NMS

    func fastNMS(scores: UnsafePointer<Float>, decoded: UnsafePointer<Float>, scratch: UnsafeMutableRawPointer,
                 outBoxes: UnsafeMutablePointer<Float>, outClasses: UnsafeMutablePointer<Float>,
                 outScores: UnsafeMutablePointer<Float>, outCount: UnsafeMutablePointer<Float>) {
        let k = categoriesPerAnchor
        let maxScores = (scratch + layout.candidates).assumingMemoryBound(to: Float.self)
        let classIndices = (scratch + layout.classIndices).assumingMemoryBound(to: Int32.self)
        let classTemp = (scratch + layout.classTemp).assumingMemoryBound(to: Int32.self)
        for row in 0..<numBoxes {
            let rowScores = scores + row * classesWithBackground + labelOffset
            let indices = classIndices + row * k
            if k == 1 {
                indices[0] = Int32(DetectionSort.argMax(rowScores, count: numClasses))
            } else {
                DetectionSort.partialArgSortDecreasing(rowScores, count: numClasses, sorted: k, indices: classTemp)
                indices.update(from: classTemp, count: k)
            }
            maxScores[row] = rowScores[Int(indices[0])]
        }

        let selected = (scratch + layout.selected).assumingMemoryBound(to: Int32.self)
        let selectedCount = singleClassNMS(scores: UnsafePointer(maxScores), decoded: decoded, maxDetections: maxDetections,
                                           scratch: scratch, selected: selected)
        for output in 0..<selectedCount {
            let anchor = Int(selected[output])
            let rowScores = scores + anchor * classesWithBackground + labelOffset
            let indices = classIndices + anchor * k
            for col in 0..<k {
                let slot = maxClassesPerDetection * output + col
                (outBoxes + 4 * slot).update(from: decoded + 4 * anchor, count: 4)
                outClasses[slot] = Float(indices[col])
                outScores[slot] = rowScores[Int(indices[col])]
            }
        }
        outCount[0] = Float(selectedCount)
    }

    // MARK: Regular NMS

    func regularNMS(scores: UnsafePointer<Float>, decoded: UnsafePointer<Float>, scratch: UnsafeMutableRawPointer,
                    outBoxes: UnsafeMutablePointer<Float>, outClasses: UnsafeMutablePointer<Float>,
                    outScores: UnsafeMutablePointer<Float>, outCount: UnsafeMutablePointer<Float>) {
        let classScores = (scratch + layout.candidates).assumingMemoryBound(to: Float.self)
        let selected = (scratch + layout.selected).assumingMemoryBound(to: Int32.self)
        let infoIndex = (scratch + layout.infoIndex).assumingMemoryBound(to: Int32.self)
        let infoScore = (scratch + layout.infoScore).assumingMemoryBound(to: Float.self)
        let mergeIndex = (scratch + layout.mergeIndex).assumingMemoryBound(to: Int32.self)
        let mergeScore = (scratch + layout.mergeScore).assumingMemoryBound(to: Float.self)
        var kept = 0

        for col in 0..<numClasses {
            var p = scores + col + labelOffset
            for row in 0..<numBoxes {
                classScores[row] = p.pointee
                p += classesWithBackground
            }
            let count = singleClassNMS(scores: UnsafePointer(classScores), decoded: decoded, maxDetections: detectionsPerClass,
                                       scratch: scratch, selected: selected)
            guard count > 0 else { continue }
            // Merge the kept list (descending) with this class's selections (descending), as
            // std::inplace_merge with `a.score > b.score` does: on equal scores the earlier
            // classes come first. Then keep the best max_detections.
            var a = 0, b = 0, out = 0
            while a < kept || b < count {
                let takeNew: Bool
                if a == kept {
                    takeNew = true
                } else if b == count {
                    takeNew = false
                } else {
                    takeNew = classScores[Int(selected[b])] > infoScore[a]
                }
                if takeNew {
                    let anchor = Int(selected[b])
                    mergeIndex[out] = Int32(anchor * classesWithBackground + col + labelOffset)
                    mergeScore[out] = classScores[anchor]
                    b += 1
                } else {
                    mergeIndex[out] = infoIndex[a]
                    mergeScore[out] = infoScore[a]
                    a += 1
                }
                out += 1
            }
            kept = min(out, maxDetections)
            infoIndex.update(from: mergeIndex, count: kept)
            infoScore.update(from: mergeScore, count: kept)
        }

        for output in 0..<kept {
            let index = Int(infoIndex[output])
            let anchor = index / classesWithBackground
            let classIndex = index - anchor * classesWithBackground - labelOffset
            (outBoxes + 4 * output).update(from: decoded + 4 * anchor, count: 4)
            outClasses[output] = Float(classIndex)
            outScores[output] = infoScore[output]
        }
        outCount[0] = Float(kept)
    }

    // MARK: Single-class NMS

    /// TFLite's NonMaxSuppressionSingleClassHelper: keeps scores >= the threshold, sorts them
    /// (stable, descending), then greedily selects boxes, dropping later boxes whose IoU with a
    /// selected box is above the threshold. Writes anchor indices to `selected`, returns the count.
    func singleClassNMS(scores: UnsafePointer<Float>, decoded: UnsafePointer<Float>, maxDetections: Int,
                        scratch: UnsafeMutableRawPointer, selected: UnsafeMutablePointer<Int32>) -> Int {
        let keepIndices = (scratch + layout.keepIndices).assumingMemoryBound(to: Int32.self)
        let keepScores = (scratch + layout.keepScores).assumingMemoryBound(to: Float.self)
        let order = (scratch + layout.order).assumingMemoryBound(to: Int32.self)
        let sortTemp = (scratch + layout.sortTemp).assumingMemoryBound(to: Int32.self)

        var kept = 0
        for i in 0..<numBoxes where scores[i] >= scoreThreshold {
            keepIndices[kept] = Int32(i)
            keepScores[kept] = scores[i]
            kept += 1
        }
        guard kept > 0 else { return 0 }
        DetectionSort.stableArgSortDecreasing(UnsafePointer(keepScores), count: kept, indices: order, temp: sortTemp)

        // TFLite selects greedily: each selected box deactivates every later box with IoU above the
        // threshold, until max_detections are selected. Equivalently (same result, same IoU
        // arguments), a box is selected iff no earlier selected box overlaps it above the threshold:
        // checking each candidate against the (at most max_detections) selected boxes stops as soon
        // as the output is full instead of scanning every remaining box per selection.
        let outputSize = min(kept, maxDetections)
        var count = 0
        for i in 0..<kept {
            if count >= outputSize { break }
            let boxI = Int(keepIndices[Int(order[i])])
            let b = decoded + 4 * boxI
            var suppressed = false
            for s in 0..<count where Self.intersectionOverUnion(decoded + 4 * Int(selected[s]), b) > iouThreshold {
                suppressed = true
                break
            }
            if !suppressed {
                selected[count] = Int32(boxI)
                count += 1
            }
        }
        return count
    }

    /// TFLite's ComputeIntersectionOverUnion (0 when either box has no area).
    @inline(__always)
    static func intersectionOverUnion(_ i: UnsafePointer<Float>, _ j: UnsafePointer<Float>) -> Float {
        let areaI = (i[2] - i[0]) * (i[3] - i[1])
        let areaJ = (j[2] - j[0]) * (j[3] - j[1])
        if areaI <= 0 || areaJ <= 0 { return 0 }
        let yMin = cMax(i[0], j[0]), xMin = cMax(i[1], j[1])
        let yMax = cMin(i[2], j[2]), xMax = cMin(i[3], j[3])
        let intersection = cMax(yMax - yMin, 0) * cMax(xMax - xMin, 0)
        return intersection / (areaI + areaJ - intersection)
    }

    /// std::max / std::min semantics (NaN handling included).
    @inline(__always) static func cMax(_ a: Float, _ b: Float) -> Float { a < b ? b : a }
    @inline(__always) static func cMin(_ a: Float, _ b: Float) -> Float { b < a ? b : a }
}
