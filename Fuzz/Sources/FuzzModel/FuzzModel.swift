// Fuzz target: the model verifier (TFLiteModel(data:) decodes every table, vector and string through
// the bounds-checked FlatBuffer reader), then the metadata (ModelMetadata), the associated-file ZIP
// (ZipArchive: central directory, stored and deflate entries, CRC) and the label files, plus the
// model analysis (op counts, MACs). Any input must either parse or throw a ModelFormatError.
import Foundation
import FuzzSupport
import TFLiteFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = FuzzHarness.data(data, size)
    FuzzHarness.expect(ModelFormatError.self) {
        // The appended ZIP is read on its own too: a model that fails verification can still carry one.
        if let zip = try ZipArchive(data: ModelData(bytes)) {
            for entry in zip.entries.prefix(8) { _ = try? zip.contents(of: entry) }
        }
    }
    FuzzHarness.expect(ModelFormatError.self) {
        let model = try TFLiteModel(data: bytes)
        _ = model.subgraphs.map { $0.operators.map { model.customOptions(of: $0).count } }
        let metadata = try model.metadata()
        let archive = try model.associatedFiles()
        for output in 0..<max(1, metadata?.subgraphs.first?.outputTensors.count ?? 0) {
            _ = try model.labelFiles(forOutput: output, metadata: metadata, archive: archive)
        }
        _ = ModelAnalysis(model: model)
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    FuzzHarness.writeSeedsIfAsked { write in
        write("add.tflite", Array(TinyModelBuilder.addModel().data))
        write("custom.tflite", Array(TinyModelBuilder.customModel(name: "Custom", customOptions: [7, 4, 1]).data))
        let labels = ["background", "cat", "dog"]
        write("classifier.tflite", Array(TinyClassifier(heads: [.init(scores: [0.1, 0.7, 0.2], labels: labels)]).data))
        var calibrated = TinyClassifier.Head(scores: [0.2, 0.8], labels: ["a", "b"])
        calibrated.files.append(.init(name: "labels_fr.txt", locale: "fr", lines: ["un", "deux"]))
        calibrated.scoreThreshold = 0.3
        write("classifier-locales.tflite", Array(TinyClassifier(inputType: .float32, normalization: ([127.5], [127.5]),
                                                                heads: [calibrated, .init(name: "second", scores: [0.5], labels: ["x"])]).data))
    }
    return 0
}
