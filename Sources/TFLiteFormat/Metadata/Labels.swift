import Foundation

/// A label file from the model's associated files: one label per line.
public struct LabelFile: Sendable, Hashable {
    public let fileName: String
    public let locale: String?
    public let labels: [String]

    /// Splits a label file into lines: `\n` or `\r\n` line ends, a trailing empty line dropped
    /// (MediaPipe's `label_map_util` rule).
    public static func lines(of data: Data) -> [String] {
        var text = String(decoding: data, as: UTF8.self)
        if text.hasSuffix("\n") { text.removeLast() }
        if text.isEmpty { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
        }
    }
}

extension TFLiteModel {
    /// Decodes the `TFLITE_METADATA` buffer, or returns nil when the model has none.
    public func metadata() throws -> ModelMetadata? {
        guard let entry = metadataEntries.first(where: { $0.name == ModelMetadata.bufferName }) else { return nil }
        guard let bytes = bufferBytes(entry.buffer) else {
            throw ModelFormatError(.invalidMetadata, "The model's \(ModelMetadata.bufferName) buffer is empty.")
        }
        return try ModelMetadata(bytes: bytes)
    }

    /// The ZIP archive of associated files appended to the model, or nil if there is none.
    public func associatedFiles() throws -> ZipArchive? {
        try ZipArchive(data: data)
    }

    /// Label files attached to output tensor `outputIndex` of the main subgraph, of the given types,
    /// in metadata order. Label policy (used by the tasks): labels come only from the metadata; a
    /// model without label files has none, and tasks then report empty text and the class index,
    /// as ML Kit does.
    public func labelFiles(forOutput outputIndex: Int,
                           types: Set<AssociatedFile.FileType> = [.tensorAxisLabels, .tensorValueLabels],
                           metadata: ModelMetadata? = nil, archive: ZipArchive? = nil) throws -> [LabelFile] {
        guard let metadata = try metadata ?? self.metadata(), let subgraph = metadata.subgraphs.first,
              outputIndex >= 0, outputIndex < subgraph.outputTensors.count else { return [] }
        let files = subgraph.outputTensors[outputIndex].associatedFiles.filter { types.contains($0.type) }
        guard !files.isEmpty, let zip = try archive ?? associatedFiles() else { return [] }
        // Each archive entry is extracted once, however often the metadata names it (hostile
        // metadata could otherwise multiply one large file), and the total is bounded.
        var extracted: [String: [String]] = [:]
        var totalBytes = 0
        return try files.compactMap { file in
            if let labels = extracted[file.name] {
                return LabelFile(fileName: file.name, locale: file.locale, labels: labels)
            }
            guard let data = try zip.contents(ofFileNamed: file.name) else { return nil }
            totalBytes += data.count
            guard totalBytes <= ZipArchive.maximumEntrySize else {
                throw ModelFormatError(.resourceLimit, "The model's label files total more than \(ZipArchive.maximumEntrySize) bytes.")
            }
            let labels = LabelFile.lines(of: data)
            extracted[file.name] = labels
            return LabelFile(fileName: file.name, locale: file.locale, labels: labels)
        }
    }
}
