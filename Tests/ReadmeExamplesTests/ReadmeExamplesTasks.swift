// The MediaPipe-style Swift snippets of README.md, compiled by the test suite (a separate file
// because EdgeVision and EdgeVisionTasks both name a type ObjectDetector, as ML Kit and MediaPipe do).
import EdgeVisionTasks
import Foundation

enum ReadmeTaskExamples {
    static func classification() throws {
        let options = ImageClassifierOptions()
        options.baseOptions.modelAssetPath = "mobilenet_v2_1.0_224_quant.tflite"
        options.maxResults = 5
        let classifier = try ImageClassifier(options: options)
        let result = try classifier.classify(image: try MPImage(contentsOf: URL(fileURLWithPath: "burger.jpg")))
        for category in result.classificationResult.classifications[0].categories {
            print(category.index, category.score, category.categoryName ?? "")
        }
    }

}
