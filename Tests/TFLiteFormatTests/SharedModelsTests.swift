import Foundation
import TestSupport
import TFLiteFormat
import XCTest

/// Every shared model parses, and its static analysis matches the reference's goldens/index.json.
final class SharedModelsTests: XCTestCase {
    func testOpCountsAndMACsMatchTheReferenceIndex() throws {
        let index = try SharedData.goldenIndex()
        let models = try XCTUnwrap(index["models"] as? [String: [String: Any]])
        XCTAssertGreaterThanOrEqual(models.count, 15)
        for (name, entry) in models {
            let model = try TFLiteModel(contentsOfFile: SharedData.model("\(name).tflite").path)
            let analysis = ModelAnalysis(model: model)
            let expectedCounts = try XCTUnwrap(entry["op_counts"] as? [String: Int], name)
            let counts = Dictionary(uniqueKeysWithValues: analysis.opCounts.map { ($0.name, $0.count) })
            XCTAssertEqual(counts, expectedCounts, name)
            let macs = try XCTUnwrap(entry["macs"] as? [String: Any], name)
            XCTAssertEqual(analysis.macs, macs["total"] as? Int, name)
            let perOp = try XCTUnwrap(macs["per_op"] as? [String: Int], name)
            XCTAssertEqual(Dictionary(uniqueKeysWithValues: analysis.macsPerOp.map { ($0.name, $0.macs) }), perOp, name)
        }
    }

    func testEveryModelFileInTheModelsDirectoryParses() throws {
        let files = try SharedData.allModels()
        XCTAssertFalse(files.isEmpty)
        for file in files {
            let model = try TFLiteModel(contentsOfFile: file.path)
            XCTAssertFalse(model.mainSubgraph.operators.isEmpty, file.lastPathComponent)
            _ = try model.metadata()
        }
    }

    func testMetadataLabelsAndNormalization() throws {
        let ssd = try TFLiteModel(contentsOfFile: SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite").path)
        let ssdMetadata = try XCTUnwrap(try ssd.metadata())
        let ssdLabels = try ssd.labelFiles(forOutput: 1)
        XCTAssertEqual(ssdLabels.first?.labels.count, 90)
        XCTAssertEqual(ssdLabels.first?.labels.first, "person")
        XCTAssertEqual(ssdLabels.first?.labels[16], "cat")
        XCTAssertEqual(ssdMetadata.subgraphs.first?.inputTensors.first?.normalization, NormalizationOptions(mean: [127.5], std: [127.5]))
        // Labels of the embedded file equal the shared label map byte for byte.
        let labelMap = LabelFile.lines(of: try Data(contentsOf: SharedData.model("coco_ssd_mobilenet_v1_labelmap.txt")))
        XCTAssertEqual(ssdLabels.first?.labels, labelMap)

        for name in ["mobilenet_v1_0.25_224_quant", "mobilenet_v1_0.25_224_1_metadata_1", "mobilenet_v2_1.0_224_quant"] {
            let model = try TFLiteModel(contentsOfFile: SharedData.model("\(name).tflite").path)
            let labels = try model.labelFiles(forOutput: 0)
            XCTAssertEqual(labels.first?.labels.count, 1001, name)
            XCTAssertEqual(labels.first?.labels.first, "background", name)
            XCTAssertEqual(labels.first?.labels[934], "cheeseburger", name)
        }

        let selfie = try TFLiteModel(contentsOfFile: SharedData.model("selfie_segmentation.tflite").path)
        XCTAssertEqual(try selfie.metadata()?.subgraphs.first?.inputTensors.first?.normalization, NormalizationOptions(mean: [0], std: [255]))

        let plain = try TFLiteModel(contentsOfFile: SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29_no_metadata.tflite").path)
        XCTAssertNil(try plain.metadata())
        XCTAssertEqual(try plain.labelFiles(forOutput: 1), [])
    }

    func testScoreCalibrationMetadataAndFile() throws {
        let model = try TFLiteModel(contentsOfFile: SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29_score_calibration.tflite").path)
        let metadata = try XCTUnwrap(try model.metadata())
        let outputs = try XCTUnwrap(metadata.subgraphs.first?.outputTensors)
        let calibrated = outputs.first { $0.scoreCalibration != nil }
        let calibration = try XCTUnwrap(calibrated?.scoreCalibration)
        XCTAssertEqual(calibration.transformation, .inverseLogistic)
        let file = try XCTUnwrap(calibrated?.associatedFiles.first { $0.type == .tensorAxisScoreCalibration })
        let contents = try XCTUnwrap(try model.associatedFiles()?.contents(ofFileNamed: file.name))
        // The dummy calibration file has 89 lines of "scale,slope,offset,minScore" (one fewer than labels).
        let lines = LabelFile.lines(of: contents)
        XCTAssertEqual(lines.count, 89)
        XCTAssertEqual(lines.first, "1.0,1.0,0.0,-99")
        XCTAssertEqual(lines[3], "")
    }

    func testDetectionPostProcessOptionsAreAFlexBufferMap() throws {
        let model = try TFLiteModel(contentsOfFile: SharedData.model("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite").path)
        let op = try XCTUnwrap(model.mainSubgraph.operators.first { model.operatorCode(of: $0).customCode == "TFLite_Detection_PostProcess" })
        let options = try FlexBuffer.decode(model.customOptions(of: op))
        XCTAssertEqual(options["max_detections"]?.intValue, 10)
        XCTAssertEqual(options["max_classes_per_detection"]?.intValue, 1)
        XCTAssertEqual(options["num_classes"]?.intValue, 90)
        XCTAssertEqual(options["y_scale"]?.doubleValue, 10)
        XCTAssertEqual(options["h_scale"]?.doubleValue, 5)
        XCTAssertEqual(try XCTUnwrap(options["nms_iou_threshold"]?.doubleValue), 0.6, accuracy: 1e-6)
        XCTAssertNil(options["use_regular_nms"])
        XCTAssertEqual(options["_output_quantized"]?.boolValue, true)

        let traffic = try TFLiteModel(contentsOfFile: SharedData.model("traffic_model.tflite").path)
        let trafficOp = try XCTUnwrap(traffic.mainSubgraph.operators.first { traffic.operatorCode(of: $0).customCode == "TFLite_Detection_PostProcess" })
        let trafficOptions = try FlexBuffer.decode(traffic.customOptions(of: trafficOp))
        XCTAssertEqual(trafficOptions["use_regular_nms"]?.boolValue, false)
        XCTAssertEqual(trafficOptions["detections_per_class"]?.intValue, 40)
        XCTAssertEqual(trafficOptions["nms_score_threshold"]?.doubleValue, -20)
        XCTAssertEqual(trafficOptions["num_classes"]?.intValue, 3)
    }

    func testUnknownCustomOpIsVisible() throws {
        let model = try TFLiteModel(contentsOfFile: SharedData.model("model_invoking_error.tflite").path)
        XCTAssertEqual(ModelAnalysis(model: model).opCounts.map(\.name), ["CUSTOM:fake-op-double"])
    }
}
