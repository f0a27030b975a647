// The Swift snippets of README.md (ML Kit-style API; the MediaPipe-style ones are in ReadmeExamplesTasks.swift), compiled by the test suite so they stay true.
// ReadmeExamplesTests checks that every ```swift block of README.md appears here verbatim
// (each snippet sits in its own function; indentation is ignored).
import EdgeVision
import Foundation
import InferenceEngine
import MediaIO

enum ReadmeExamples {
    static func labeling() throws {
        let labeler = try ImageLabeler.imageLabeler(options: ImageLabelerOptions())   // default model
        let image = try VisionImage(contentsOf: URL(fileURLWithPath: "burger.jpg"))
        for label in try labeler.results(in: image) {
            print(label.text, label.confidence, label.index)
        }
    }

    static func customLabeling() throws {
        let options = CustomImageLabelerOptions(localModel: LocalModel(path: "mobilenet_v1_0.25_224_quant.tflite"))
        options.confidenceThreshold = 0.5
        options.maxResultCount = 3
        let labeler = try ImageLabeler.imageLabeler(options: options)
        let labels = try labeler.results(in: try VisionImage(contentsOf: URL(fileURLWithPath: "burger.jpg")))
        print(labels)
    }

    static func cameraFrames(bgraBytes: Data, width: Int, height: Int) throws {
        // A camera frame in BGRA (the iOS default), shot with the phone held upright.
        let pixels = try PixelBuffer(data: bgraBytes, width: width, height: height, format: .bgra8)
        let image = VisionImage(buffer: pixels)
        image.orientation = .right   // UIImage.Orientation semantics: rotate 90° clockwise to be upright
        let labels = try ImageLabeler.imageLabeler().results(in: image)
        print(labels.first?.text ?? "nothing")
    }

    static func detectionAndTracking() throws {
        let options = ObjectDetectorOptions()
        options.detectorMode = .stream
        options.shouldEnableMultipleObjects = true
        options.shouldEnableClassification = true
        let detector = try ObjectDetector.objectDetector(options: options)
        let video = try VideoReader(path: "traffic.mp4")
        while let frame = try video.nextFrame() {
            for object in try detector.results(in: VisionImage(buffer: frame.pixels)) {
                print(frame.timestampMilliseconds, object.trackingID?.intValue ?? -1, object.frame, object.labels.map(\.text))
            }
        }
    }

    static func customObjectClassification() throws {
        let options = CustomObjectDetectorOptions(localModel: LocalModel(path: "mobilenet_v2_1.0_224_quant.tflite"))
        options.detectorMode = .singleImage
        options.shouldEnableMultipleObjects = true
        options.shouldEnableClassification = true
        options.maxPerObjectLabelCount = 3
        let detector = try ObjectDetector.objectDetector(options: options)
        let objects = try detector.results(in: try VisionImage(contentsOf: URL(fileURLWithPath: "table.jpg")))
        print(objects.map { ($0.frame, $0.labels.first?.text ?? "unknown") })
    }

    static func selfieSegmentation() throws {
        let options = SelfieSegmenterOptions()
        options.segmenterMode = .singleImage
        let segmenter = try Segmenter.segmenter(options: options)
        let image = try VisionImage(contentsOf: URL(fileURLWithPath: "portrait.png"))
        let mask = try segmenter.results(in: image)
        print(mask.width, mask.height, mask[x: 10, y: 10])
        let cutOut = try mask.apply(.remove, to: image)   // person on a transparent background
        try ImageEncoder.write(cutOut, to: URL(fileURLWithPath: "person.png"))
    }

    static func engine(inputBytes: Data) throws {
        let model = try Model(contentsOfFile: "mobilenet_v2_1.0_224_quant.tflite")  // compile once, share
        let interpreter = Interpreter(model: model)                                   // one per thread
        try interpreter.copyInput(inputBytes, at: 0)
        interpreter.invoke()
        let scores = try interpreter.outputFloats(at: 0)                              // dequantized
        print(scores.count)
    }
}
