import XCTest
import InferenceEngine
import TFLiteFormat
import TensorCore

/// TFLite_Detection_PostProcess: box decoding, fast and regular NMS, quantized inputs, option and
/// shape validation. Expectations are computed by hand from the anchors below.
final class DetectionKernelTests: XCTestCase {
    // MARK: - Helpers

    /// A minimal FlexBuffer map writer (8-byte slots) for custom options.
    enum FlexValueSpec { case int(Int64), float(Double), bool(Bool) }

    static func flexMap(_ entries: [String: FlexValueSpec]) -> [UInt8] {
        var bytes: [UInt8] = []
        func append64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8((v >> (8 * UInt64(i))) & 0xFF)) } }
        func pad() { while bytes.count % 8 != 0 { bytes.append(0) } }
        let keys = entries.keys.sorted()
        var keyPositions: [Int] = []
        for key in keys {
            keyPositions.append(bytes.count)
            bytes.append(contentsOf: Array(key.utf8))
            bytes.append(0)
        }
        pad()
        append64(UInt64(keys.count))
        let keysStart = bytes.count
        for position in keyPositions { append64(UInt64(bytes.count - position)) }
        let prefix = bytes.count
        append64(UInt64(prefix - keysStart))  // offset to the keys vector
        append64(8)                           // its byte width
        append64(UInt64(keys.count))
        let valuesStart = bytes.count
        var types: [UInt8] = []
        for key in keys {
            switch entries[key]! {
            case .int(let v): append64(UInt64(bitPattern: v)); types.append(1 << 2 | 3)
            case .float(let v): append64(v.bitPattern); types.append(3 << 2 | 3)
            case .bool(let v): append64(v ? 1 : 0); types.append(26 << 2 | 3)
            }
        }
        bytes.append(contentsOf: types)
        pad()
        append64(UInt64(bytes.count - valuesStart))
        bytes.append(9 << 2 | 3)  // map, 8-byte children
        bytes.append(8)
        return bytes
    }

    static func options(maxDetections: Int = 3, maxClassesPerDetection: Int? = 1, detectionsPerClass: Int? = nil,
                        regular: Bool? = nil, scoreThreshold: Double = 0.35, iouThreshold: Double = 0.5,
                        numClasses: Int = 2, scales: (Double, Double, Double, Double) = (10, 10, 5, 5),
                        omit: Set<String> = [], extra: [String: FlexValueSpec] = [:]) -> [UInt8] {
        var m: [String: FlexValueSpec] = [
            "max_detections": .int(Int64(maxDetections)),
            "nms_score_threshold": .float(scoreThreshold),
            "nms_iou_threshold": .float(iouThreshold),
            "num_classes": .int(Int64(numClasses)),
            "y_scale": .float(scales.0), "x_scale": .float(scales.1), "h_scale": .float(scales.2), "w_scale": .float(scales.3),
        ]
        if let maxClassesPerDetection { m["max_classes_per_detection"] = .int(Int64(maxClassesPerDetection)) }
        if let detectionsPerClass { m["detections_per_class"] = .int(Int64(detectionsPerClass)) }
        if let regular { m["use_regular_nms"] = .bool(regular) }
        for key in omit { m[key] = nil }
        m.merge(extra) { _, new in new }
        return flexMap(m)
    }

    static let outputs: [OutputSpec] = [.float32, .float32, .float32, .float32]

    /// Runs the op; returns (boxes, classes, scores, count) and checks the output shapes.
    func run(boxes: TensorValue, scores: TensorValue, anchors: TensorValue, options: [UInt8],
             slots: Int, file: StaticString = #filePath, line: UInt = #line) throws -> (boxes: [Float], classes: [Float], scores: [Float], count: Float) {
        let out = try KernelRunner.run(custom: "TFLite_Detection_PostProcess", customOptions: options,
                                       inputs: [boxes, scores, anchors], outputs: Self.outputs)
        XCTAssertEqual(out.map(\.shape), [[1, slots, 4], [1, slots], [1, slots], [1]], file: file, line: line)
        return (out[0].floats, out[1].floats, out[2].floats, out[3].floats[0])
    }

    func expectError(boxes: TensorValue, scores: TensorValue, anchors: TensorValue, options: [UInt8],
                     code: EngineError.Code = .invalidModel, _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try KernelRunner.run(custom: "TFLite_Detection_PostProcess", customOptions: options,
                                                  inputs: [boxes, scores, anchors], outputs: Self.outputs), file: file, line: line) { error in
            guard let e = error as? EngineError else { return XCTFail("not an EngineError: \(error)", file: file, line: line) }
            XCTAssertEqual(e.code, code, "\(e.message)", file: file, line: line)
            XCTAssertTrue(e.message.contains(fragment), "'\(e.message)' lacks '\(fragment)'", file: file, line: line)
            XCTAssertEqual(e.operatorName, "CUSTOM:TFLite_Detection_PostProcess", file: file, line: line)
        }
    }

    // Four anchors (ycenter, xcenter, h, w); with zero encodings they decode to
    //   a0 [0, 0, 1, 1]   a1 [0, 0.1, 1, 1.1] (IoU with a0 = 0.9 / 1.1 ≈ 0.82)
    //   a2 [2, 2, 3, 3]   a3 [0, 1, 1, 2] (touches a0: IoU 0)
    static let anchorValues: [Float] = [0.5, 0.5, 1, 1, 0.5, 0.6, 1, 1, 2.5, 2.5, 1, 1, 0.5, 1.5, 1, 1]
    static var anchors: TensorValue { .float32(anchorValues, shape: [4, 4], isConstant: true) }
    static var zeroBoxes: TensorValue { .float32([Float](repeating: 0, count: 16), shape: [1, 4, 4]) }
    // Scores [background, class 0, class 1] per anchor; the background column is never reported.
    static let scoreValues: [Float] = [
        0.9, 0.8, 0.1,    // a0: class 0
        0.0, 0.7, 0.75,   // a1: class 1 (0.75), overlaps a0
        0.0, 0.2, 0.6,    // a2: class 1
        0.99, 0.05, 0.3,  // a3: below the 0.35 threshold
    ]
    static var scores: TensorValue { .float32(scoreValues, shape: [1, 4, 3]) }
    static let a1Box: [Float] = [0, Float(0.6) - 0.5, 1, Float(0.6) + 0.5]

    // MARK: - Fast NMS

    func testFastNMSSuppressesAcrossClassesAndIgnoresBackground() throws {
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors, options: Self.options(), slots: 3)
        // a0 (0.8) wins, a1 (0.75) is suppressed by it although its best class differs, a2 (0.6)
        // is kept, a3 fails the threshold (its 0.99 background score is ignored).
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0])
        XCTAssertEqual(r.classes, [0, 1, 0])
        XCTAssertEqual(r.scores, [0.8, 0.6, 0])
    }

    func testFastNMSMaxDetectionsTruncates() throws {
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors, options: Self.options(maxDetections: 1), slots: 1)
        XCTAssertEqual(r.count, 1)
        XCTAssertEqual(r.boxes, [0, 0, 1, 1])
        XCTAssertEqual(r.classes, [0])
        XCTAssertEqual(r.scores, [0.8])
    }

    func testFastNMSSeveralClassesPerDetection() throws {
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                        options: Self.options(maxDetections: 2, maxClassesPerDetection: 2), slots: 4)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3])
        XCTAssertEqual(r.classes, [0, 1, 1, 0])
        XCTAssertEqual(r.scores, [0.8, 0.1, 0.6, 0.2])
    }

    func testFastNMSMoreClassesPerDetectionThanClassesLeavesZeroSlots() throws {
        // max_classes_per_detection 3 > 2 classes: each detection fills 2 of its 3 slots.
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                        options: Self.options(maxDetections: 1, maxClassesPerDetection: 3), slots: 3)
        XCTAssertEqual(r.count, 1)
        XCTAssertEqual(r.classes, [0, 1, 0])
        XCTAssertEqual(r.scores, [0.8, 0.1, 0])
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0])
    }

    func testScoreThresholdIsInclusiveAndIoUThresholdIsStrict() throws {
        // a0 [0, 0, 1, 1] and a1 [0, 0, 1, 0.5]: IoU exactly 0.5, not above the 0.5 threshold.
        let anchors = TensorValue.float32([0.5, 0.5, 1, 1, 0.5, 0.25, 1, 0.5], shape: [2, 4], isConstant: true)
        // Two classes with a background column: a1 scores exactly the 0.35 threshold.
        let s = TensorValue.float32([0, 0.5, 0, 0, 0.35, 0], shape: [1, 2, 3])
        let r = try run(boxes: .float32([Float](repeating: 0, count: 8), shape: [1, 2, 4]), scores: s, anchors: anchors,
                        options: Self.options(), slots: 3)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 0, 0, 1, 0.5, 0, 0, 0, 0])
        XCTAssertEqual(r.scores, [0.5, 0.35, 0])
        // A slightly lower IoU threshold suppresses a1.
        let r2 = try run(boxes: .float32([Float](repeating: 0, count: 8), shape: [1, 2, 4]), scores: s, anchors: anchors,
                         options: Self.options(iouThreshold: 0.49), slots: 3)
        XCTAssertEqual(r2.count, 1)
    }

    func testDegenerateBoxHasZeroIoU() throws {
        // a1 has zero height inside a0: IoU is 0, so it survives a tiny IoU threshold.
        let anchors = TensorValue.float32([0.5, 0.5, 1, 1, 0.5, 0.5, 0, 1], shape: [2, 4], isConstant: true)
        let s = TensorValue.float32([0, 0.9, 0, 0.8], shape: [1, 2, 2])
        let r = try run(boxes: .float32([Float](repeating: 0, count: 8), shape: [1, 2, 4]), scores: s, anchors: anchors,
                        options: Self.options(maxDetections: 2, iouThreshold: 0.01, numClasses: 1), slots: 2)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 0.5, 0, 0.5, 1])
        XCTAssertEqual(r.classes, [0, 0])
    }

    func testEqualScoresKeepAnchorOrderAndFirstClass() throws {
        // Three disjoint anchors with the same best score: stable order (a0, a2, a3 after
        // a1 is suppressed by a0); within an anchor, equal class scores report the first class.
        let s = TensorValue.float32([0, 0.5, 0.5, 0, 0.5, 0.5, 0, 0.5, 0.5, 0, 0.5, 0.5], shape: [1, 4, 3])
        let r = try run(boxes: Self.zeroBoxes, scores: s, anchors: Self.anchors, options: Self.options(maxDetections: 4), slots: 4)
        XCTAssertEqual(r.count, 3)
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 2, 2, 3, 3, 0, 1, 1, 2, 0, 0, 0, 0])
        XCTAssertEqual(r.classes, [0, 0, 0, 0])
    }

    func testTiedClassScoresFollowPartialSortOrder() throws {
        // Classes scoring [0.2, 0.5, 0.5] with two classes per detection: std::partial_sort
        // (libstdc++, as LiteRT uses) yields class 2 before class 1.
        let anchors = TensorValue.float32([0.5, 0.5, 1, 1], shape: [1, 4], isConstant: true)
        let s = TensorValue.float32([0, 0.2, 0.5, 0.5], shape: [1, 1, 4])
        let r = try run(boxes: .float32([0, 0, 0, 0], shape: [1, 1, 4]), scores: s, anchors: anchors,
                        options: Self.options(maxDetections: 1, maxClassesPerDetection: 2, numClasses: 3), slots: 2)
        XCTAssertEqual(r.classes, [2, 1])
        XCTAssertEqual(r.scores, [0.5, 0.5])
    }

    func testBoxDecodingWithScalesAndExtraEncodingColumns() throws {
        // Encodings (y, x, h, w, keypoint, keypoint): y = 5 → ycenter += 5 / 10 × h_anchor;
        // x = -2 → xcenter -= 2 / 10 × w_anchor; h = 5·ln 2 → height × 2; w = 0.
        let anchors = TensorValue.float32([1, 2, 2, 4], shape: [1, 4], isConstant: true)
        let h = Float(5 * log(2.0))
        let boxes = TensorValue.float32([5, -2, h, 0, 99, 99], shape: [1, 1, 6])
        let r = try run(boxes: boxes, scores: .float32([0, 1], shape: [1, 1, 2]), anchors: anchors,
                        options: Self.options(maxDetections: 1, numClasses: 1), slots: 1)
        // ycenter = 1 + 0.5 × 2 = 2, half height = 0.5 × 2 × 2 = 2; xcenter = 2 − 0.2 × 4 = 1.2, half width 2.
        XCTAssertEqual(r.count, 1)
        let expected: [Float] = [0, 1.2 - 2, 4, 1.2 + 2]
        for (a, e) in zip(r.boxes, expected) { XCTAssertEqual(a, e, accuracy: 1e-6) }
        XCTAssertEqual(r.boxes[1], Float(Double(-2) / 10 * 4 + 2) - 2)
    }

    func testNoBackgroundColumn() throws {
        // num_classes 2 with 2 columns: column 0 is a real class.
        let s = TensorValue.float32([0.9, 0.1, 0, 0, 0, 0, 0.2, 0.7], shape: [1, 4, 2])
        let r = try run(boxes: Self.zeroBoxes, scores: s, anchors: Self.anchors, options: Self.options(), slots: 3)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.classes, [0, 1, 0])
        XCTAssertEqual(r.scores, [0.9, 0.7, 0])
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 0, 1, 1, 2, 0, 0, 0, 0])
    }

    func testNothingAboveThreshold() throws {
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                        options: Self.options(scoreThreshold: 0.95), slots: 3)
        XCTAssertEqual(r.count, 0)
        XCTAssertEqual(r.boxes, [Float](repeating: 0, count: 12))
        XCTAssertEqual(r.scores, [0, 0, 0])
    }

    // MARK: - Regular NMS

    func testRegularNMSSuppressesPerClass() throws {
        // Class 0: a0 (0.8) suppresses a1 (0.7). Class 1: a1 (0.75) and a2 (0.6) do not overlap.
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                        options: Self.options(detectionsPerClass: 2, regular: true), slots: 3)
        XCTAssertEqual(r.count, 3)
        XCTAssertEqual(r.boxes, [0, 0, 1, 1] + Self.a1Box + [2, 2, 3, 3])
        XCTAssertEqual(r.classes, [0, 1, 1])
        XCTAssertEqual(r.scores, [0.8, 0.75, 0.6])
    }

    func testRegularNMSMaxDetectionsAndDetectionsPerClass() throws {
        let top2 = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                           options: Self.options(maxDetections: 2, detectionsPerClass: 2, regular: true), slots: 2)
        XCTAssertEqual(top2.count, 2)
        XCTAssertEqual(top2.classes, [0, 1])
        XCTAssertEqual(top2.scores, [0.8, 0.75])
        // One detection per class: class 1 keeps only a1.
        let perClass = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                               options: Self.options(detectionsPerClass: 1, regular: true), slots: 3)
        XCTAssertEqual(perClass.count, 2)
        XCTAssertEqual(perClass.classes, [0, 1, 0])
        XCTAssertEqual(perClass.scores, [0.8, 0.75, 0])
        XCTAssertEqual(perClass.boxes, [0, 0, 1, 1] + Self.a1Box + [0, 0, 0, 0])
    }

    func testRegularNMSEqualScoresAcrossClassesKeepClassOrder() throws {
        // Class 0 picks a2 and class 1 picks a0, both 0.5: the earlier class comes first.
        let s = TensorValue.float32([0, 0, 0.5, 0, 0, 0, 0, 0.5, 0, 0, 0, 0], shape: [1, 4, 3])
        let r = try run(boxes: Self.zeroBoxes, scores: s, anchors: Self.anchors,
                        options: Self.options(maxDetections: 2, regular: true), slots: 2)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.classes, [0, 1])
        XCTAssertEqual(r.boxes, [2, 2, 3, 3, 0, 0, 1, 1])
    }

    func testRegularNMSWithSeveralClassesPerDetectionZeroesExtraSlots() throws {
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                        options: Self.options(maxDetections: 2, maxClassesPerDetection: 2, regular: true), slots: 4)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.classes, [0, 1, 0, 0])
        XCTAssertEqual(r.scores, [0.8, 0.75, 0, 0])
    }

    // MARK: - Quantized inputs

    func testQuantizedInputsAreDequantized() throws {
        // Boxes: scale 0.5, zero point 128 (138 → 5, 128 → 0). Anchors: scale 0.25 → a0 (0.5,
        // 0.5, 1, 1), a1 (2.5, 2.5, 1, 1). Scores: scale 1/256, zero point 10.
        let boxes = TensorValue.uint8([128, 128, 128, 128, 138, 128, 128, 128], shape: [1, 2, 4], scale: 0.5, zeroPoint: 128)
        let anchors = TensorValue.uint8([2, 2, 4, 4, 10, 10, 4, 4], shape: [2, 4], scale: 0.25, zeroPoint: 0, isConstant: true)
        let scores = TensorValue.uint8([255, 10 + 64, 10 + 128, 0, 10 + 192, 10], shape: [1, 2, 3], scale: 1.0 / 256, zeroPoint: 10)
        for regular in [false, true] {
            let r = try run(boxes: boxes, scores: scores, anchors: anchors,
                            options: Self.options(maxDetections: 2, regular: regular, scoreThreshold: 0.3), slots: 2)
            XCTAssertEqual(r.count, 2)
            // a1 decodes to ycenter 2.5 + 5 / 10 = 3: [2.5, 2, 3.5, 3].
            XCTAssertEqual(r.boxes, [2.5, 2, 3.5, 3, 0, 0, 1, 1])
            XCTAssertEqual(r.classes, [0, 1])
            XCTAssertEqual(r.scores, [0.75, 0.5])
        }
    }

    func testQuantizedScoresWithFloatBoxes() throws {
        let scores = TensorValue.uint8([0, 200, 0, 0, 0, 100, 0, 150, 0, 0, 0, 0], shape: [1, 4, 3], scale: 1.0 / 250, zeroPoint: 0)
        let r = try run(boxes: Self.zeroBoxes, scores: scores, anchors: Self.anchors, options: Self.options(), slots: 3)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.scores, [Float(200) * Float(1.0 / 250), Float(150) * Float(1.0 / 250), 0])
        XCTAssertEqual(r.classes, [0, 0, 0])
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0])
    }

    func testTinyQuantizationScaleStaysFinite() throws {
        let boxes = TensorValue.uint8([UInt8](repeating: 200, count: 16), shape: [1, 4, 4], scale: 1e-35, zeroPoint: 0)
        let anchors = TensorValue.uint8([UInt8](repeating: 100, count: 16), shape: [4, 4], scale: 1e-35, zeroPoint: 0, isConstant: true)
        let scores = TensorValue.uint8([UInt8](repeating: 255, count: 12), shape: [1, 4, 3], scale: 1e-35, zeroPoint: 0)
        let r = try run(boxes: boxes, scores: scores, anchors: anchors, options: Self.options(scoreThreshold: 0), slots: 3)
        XCTAssertTrue((r.boxes + r.scores + r.classes).allSatisfy(\.isFinite))
        XCTAssertEqual(r.count, 3)
        XCTAssertEqual(r.classes, [0, 0, 0])
        XCTAssertEqual(r.scores[0], Float(255) * 1e-35)
    }

    // MARK: - Options and defaults

    func testDefaults() throws {
        // Without max_classes_per_detection (1), detections_per_class (100), use_regular_nms (false).
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                        options: Self.options(maxClassesPerDetection: nil), slots: 3)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.scores, [0.8, 0.6, 0])
        // Integers stored as floats and booleans stored as ints are accepted, as FlexBuffers' AsInt32/AsBool do.
        let r2 = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: Self.anchors,
                         options: Self.options(extra: ["max_detections": .float(3), "use_regular_nms": .int(1)]), slots: 3)
        XCTAssertEqual(r2.count, 3)
        XCTAssertEqual(r2.classes, [0, 1, 1])
    }

    func testInvalidOptions() {
        let (b, s, a) = (Self.zeroBoxes, Self.scores, Self.anchors)
        expectError(boxes: b, scores: s, anchors: a, options: [], "no custom options")
        expectError(boxes: b, scores: s, anchors: a, options: [1, 2, 3, 4], "custom options")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(omit: ["max_detections"]), "max_detections is missing")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(omit: ["num_classes"]), "num_classes is missing")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(omit: ["y_scale"]), "y_scale is missing")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(omit: ["nms_iou_threshold"]), "nms_iou_threshold is missing")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(iouThreshold: 0), "nms_iou_threshold")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(iouThreshold: 1.5), "nms_iou_threshold")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(maxDetections: -1), "max_detections")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(maxClassesPerDetection: 0), "max_classes_per_detection")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(numClasses: 0), "num_classes")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(detectionsPerClass: 0, regular: true), "regular NMS")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(maxDetections: 0, regular: true), "regular NMS")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(scales: (10, 0, 5, 5)), "x_scale")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(extra: ["max_detections": .int(1 << 40)]), "max_detections")
        // num_classes must equal the class columns, or the columns minus a background column.
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(numClasses: 1), "num_classes is 1")
        expectError(boxes: b, scores: s, anchors: a, options: Self.options(numClasses: 4), "num_classes is 4")
    }

    func testInvalidShapesAndTypes() {
        let o = Self.options()
        let (b, s, a) = (Self.zeroBoxes, Self.scores, Self.anchors)
        expectError(boxes: .float32([Float](repeating: 0, count: 16), shape: [4, 4]), scores: s, anchors: a, options: o, "rank 3")
        expectError(boxes: .float32([Float](repeating: 0, count: 12), shape: [1, 4, 3]), scores: s, anchors: a, options: o, "at least 4")
        expectError(boxes: b, scores: .float32([Float](repeating: 0, count: 9), shape: [1, 3, 3]), anchors: a, options: o, "4 anchors")
        expectError(boxes: b, scores: s, anchors: .float32([Float](repeating: 1, count: 12), shape: [3, 4], isConstant: true), options: o, "anchors have shape")
        expectError(boxes: .float32([Float](repeating: 0, count: 32), shape: [2, 4, 4]), scores: s, anchors: a, options: o, "batch")
        expectError(boxes: b, scores: .int8([Int8](repeating: 0, count: 12), shape: [1, 4, 3], quantization: QuantizationParameters(scale: 0.1, zeroPoint: 0)),
                    anchors: a, options: o, code: .unsupportedOperator, "class predictions")
        expectError(boxes: b, scores: s, anchors: .uint8([UInt8](repeating: 1, count: 16), shape: [4, 4], scale: 0.1, zeroPoint: 0, isConstant: true),
                    options: o, code: .unsupportedOperator, "must match")
        expectError(boxes: b, scores: s, anchors: .float32([0.5, 0.5, -1, 1] + [Float](repeating: 1, count: 12), shape: [4, 4], isConstant: true),
                    options: o, "negative height")
        expectError(boxes: .uint8([UInt8](repeating: 0, count: 16), shape: [1, 4, 4], scale: 0.1, zeroPoint: 0), scores: s,
                    anchors: TensorValue(type: .uint8, shape: [4, 4], bytes: [UInt8](repeating: 1, count: 16), isConstant: true),
                    options: o, code: .invalidQuantization, "anchors")
    }

    func testWrongOperandCountsAndOutputType() {
        let o = Self.options()
        XCTAssertThrowsError(try KernelRunner.run(custom: "TFLite_Detection_PostProcess", customOptions: o,
                                                  inputs: [Self.zeroBoxes, Self.scores], outputs: Self.outputs))
        XCTAssertThrowsError(try KernelRunner.run(custom: "TFLite_Detection_PostProcess", customOptions: o,
                                                  inputs: [Self.zeroBoxes, Self.scores, Self.anchors], outputs: [.float32, .float32, .float32]))
        XCTAssertThrowsError(try KernelRunner.run(custom: "TFLite_Detection_PostProcess", customOptions: o,
                                                  inputs: [Self.zeroBoxes, Self.scores, Self.anchors],
                                                  outputs: [.float32, .uint8(scale: 1, zeroPoint: 0), .float32, .float32])) { error in
            XCTAssertEqual((error as? EngineError)?.code, .unsupportedOperator)
        }
    }

    func testNonConstantAnchors() throws {
        let anchors = TensorValue.float32(Self.anchorValues, shape: [4, 4], isConstant: false)
        let r = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: anchors, options: Self.options(), slots: 3)
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r.boxes, [0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0])
        // Run-time anchors with a negative size: TFLite fails the invocation; the kernel reports nothing.
        let bad = TensorValue.float32([0.5, 0.5, -1, 1] + Self.anchorValues.dropFirst(4), shape: [4, 4], isConstant: false)
        let r2 = try run(boxes: Self.zeroBoxes, scores: Self.scores, anchors: bad, options: Self.options(), slots: 3)
        XCTAssertEqual(r2.count, 0)
        XCTAssertEqual(r2.boxes, [Float](repeating: 0, count: 12))
    }

    // MARK: - Tie-heavy inputs checked against LiteRT 2.3.0

    /// 24 anchors, 5 classes + background, scores in quarters (many ties), inputs from a 32-bit LCG.
    static func generatedInputs() -> (boxes: TensorValue, scores: TensorValue, anchors: TensorValue) {
        var state: UInt32 = 7
        func next() -> UInt32 {
            state = state &* 1664525 &+ 1013904223
            return state >> 8
        }
        let n = 24, columns = 6
        var anchors: [Float] = []
        for _ in 0..<n {
            anchors += [Float(8 + next() % 48) / 64, Float(8 + next() % 48) / 64, Float(4 + next() % 24) / 64, Float(4 + next() % 24) / 64]
        }
        let boxes = (0..<(n * 4)).map { _ in Float(Int(next() % 41) - 20) / 8 }
        let scores = (0..<(n * columns)).map { _ in Float(next() % 5) / 4 }
        return (.float32(boxes, shape: [1, n, 4]), .float32(scores, shape: [1, n, columns]), .float32(anchors, shape: [n, 4], isConstant: true))
    }

    // Decoded boxes of the anchors LiteRT reports (printed by LiteRT from the same inputs).
    static let liteRTBoxes: [[Float]] = [
        [0.7483269, 0.10220031, 1.0172981, 0.19779971], [0.6725705, 0.673918, 0.7305545, 0.90576947],
        [0.08408466, 0.46299005, 0.39716533, 0.6366193], [0.23277254, 0.36823344, 0.3508212, 0.45051658],
        [0.66654676, 0.2597432, 0.84907824, 0.79885054], [0.13068122, -0.006480515, 0.20369378, 0.35023052],
        [0.69799393, 0.095312506, 1.1086468, 0.1578125], [0.3666802, 0.32416952, 0.6700385, 0.6445805],
    ]

    func testFastNMSMatchesLiteRTOnTies() throws {
        let g = Self.generatedInputs()
        let r = try run(boxes: g.boxes, scores: g.scores, anchors: g.anchors,
                        options: Self.options(maxDetections: 6, scoreThreshold: 0.3, iouThreshold: 0.4, numClasses: 5), slots: 6)
        XCTAssertEqual(r.count, 6)
        XCTAssertEqual(r.boxes, Array(Self.liteRTBoxes[0..<6].joined()))
        XCTAssertEqual(r.classes, [1, 4, 1, 0, 4, 1])
        XCTAssertEqual(r.scores, [1, 1, 1, 1, 1, 1])
    }

    func testFastNMSSeveralClassesMatchesLiteRTOnTies() throws {
        let g = Self.generatedInputs()
        let r = try run(boxes: g.boxes, scores: g.scores, anchors: g.anchors,
                        options: Self.options(maxDetections: 4, maxClassesPerDetection: 3, scoreThreshold: 0.3, iouThreshold: 0.4, numClasses: 5),
                        slots: 12)
        XCTAssertEqual(r.count, 4)
        XCTAssertEqual(r.boxes, Array((0..<4).map { [[Float]](repeating: Self.liteRTBoxes[$0], count: 3).joined() }.joined()))
        // Equal class scores come out in libstdc++ partial_sort order (3 before 1), not index order.
        XCTAssertEqual(r.classes, [3, 1, 0, 4, 3, 2, 1, 0, 4, 2, 0, 3])
        XCTAssertEqual(r.scores, [1, 1, 0.75, 1, 0.75, 0.75, 1, 0.5, 0.25, 1, 1, 0.5])
    }

    func testRegularNMSMatchesLiteRTOnTies() throws {
        let g = Self.generatedInputs()
        let r = try run(boxes: g.boxes, scores: g.scores, anchors: g.anchors,
                        options: Self.options(maxDetections: 6, detectionsPerClass: 3, regular: true, scoreThreshold: 0.3,
                                              iouThreshold: 0.4, numClasses: 5), slots: 6)
        XCTAssertEqual(r.count, 6)
        let b = Self.liteRTBoxes
        XCTAssertEqual(r.boxes, Array([b[6], b[3], b[7], b[0], b[2], b[5]].joined()))
        XCTAssertEqual(r.classes, [0, 0, 0, 1, 1, 1])
        XCTAssertEqual(r.scores, [1, 1, 1, 1, 1, 1])
    }
}
