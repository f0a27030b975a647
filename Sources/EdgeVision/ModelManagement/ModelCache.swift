import Foundation

/// The manifest of a downloaded model: `<cache>/<name>/manifest.json`.
///
/// The manifest is the commit point of a download: a new version is written under its own file
/// name (`model-<sha256 prefix>.tflite`) and verified, then the manifest is replaced atomically,
/// then older files are removed. So the cache always names one complete, verified file, and the
/// previous version stays usable until the new one is.
public struct DownloadedModel: Codable, Sendable, Hashable {
    /// The model's name (its directory in the cache).
    public var name: String
    /// The model file's name inside the model's directory.
    public var file: String
    /// Where the file was downloaded (or copied) from.
    public var source: String
    /// SHA-256 of the file, lowercase hex.
    public var sha256: String
    /// Size of the file in bytes.
    public var size: Int64
    /// The server's `ETag` for this version, if it sent one.
    public var etag: String?
    /// The server's `Last-Modified` for this version, if it sent one.
    public var lastModified: String?
    /// When the file was stored (ISO 8601, UTC).
    public var date: String

    /// The absolute path of the model file (set when read from a cache).
    public internal(set) var path: String = ""

    enum CodingKeys: String, CodingKey { case name, file, source, sha256, size, etag, lastModified, date }
}

/// Resumable-download bookkeeping next to a partial file (`<cache>/<name>/.download.json`).
struct PartialDownload: Codable, Sendable {
    var source: String
    var etag: String?
    var lastModified: String?
    /// The full size announced by the server, if any.
    var expectedSize: Int64?

    /// The value for `If-Range`: a strong ETag, else Last-Modified, else nil (cannot resume).
    var ifRange: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }
}

/// The on-disk layout of a model cache directory:
///
/// ```
/// <cache>/                                  (ModelDirectory.cacheDirectory by default)
///   selfie_segmentation.tflite              default models, by file name (ModelDirectory.locate)
///   <name>/                                 one directory per remote model
///     manifest.json                         DownloadedModel
///     model-<sha256 prefix>.tflite          the verified file the manifest names
///     .download, .download.json             a partial download and its validators (resumable)
/// ```
struct ModelCache: Sendable {
    let root: URL

    static let manifestName = "manifest.json"
    static let partialName = ".download"
    static let partialStateName = ".download.json"

    func directory(_ name: String) -> URL { root.appendingPathComponent(name, isDirectory: true) }
    func manifestURL(_ name: String) -> URL { directory(name).appendingPathComponent(ModelCache.manifestName) }
    func partialURL(_ name: String) -> URL { directory(name).appendingPathComponent(ModelCache.partialName) }
    func partialStateURL(_ name: String) -> URL { directory(name).appendingPathComponent(ModelCache.partialStateName) }

    /// Why `name` cannot be a cache directory, or nil when it can.
    static func problem(withName name: String) -> String? {
        if name.isEmpty { return "the model name is empty" }
        if name.utf8.count > 128 { return "the model name '\(name)' is longer than 128 characters" }
        if name.hasPrefix(".") { return "the model name '\(name)' starts with '.'" }
        if name.lowercased().hasSuffix(".tflite") { return "the model name '\(name)' ends with '.tflite' (kept for the default model files); drop the extension" }
        let allowed = name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "_" || $0 == "-"
        }
        if !allowed { return "the model name '\(name)' may only hold letters, digits, '.', '_' and '-'" }
        return nil
    }

    /// The manifest of `name` if it names an existing file of the recorded size (no hashing).
    func downloaded(_ name: String) -> DownloadedModel? {
        guard ModelCache.problem(withName: name) == nil,
              let data = try? Data(contentsOf: manifestURL(name)),
              var manifest = try? JSONDecoder().decode(DownloadedModel.self, from: data),
              manifest.name == name,
              manifest.file == (manifest.file as NSString).lastPathComponent, !manifest.file.hasPrefix(".")
        else { return nil }
        let path = directory(name).appendingPathComponent(manifest.file).path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              (attributes[.type] as? FileAttributeType) == .typeRegular,
              let size = (attributes[.size] as? NSNumber)?.int64Value, size == manifest.size
        else { return nil }
        manifest.path = path
        return manifest
    }

    /// Every downloaded model, sorted by name.
    func allDownloaded() -> [DownloadedModel] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.sorted().compactMap { downloaded($0) }
    }

    func partialState(_ name: String) -> PartialDownload? {
        guard let data = try? Data(contentsOf: partialStateURL(name)) else { return nil }
        return try? JSONDecoder().decode(PartialDownload.self, from: data)
    }

    func writePartialState(_ state: PartialDownload, name: String) throws {
        let data = try JSONEncoder().encode(state)
        try data.write(to: partialStateURL(name), options: .atomic)
    }

    func removePartial(_ name: String) {
        try? FileManager.default.removeItem(at: partialURL(name))
        try? FileManager.default.removeItem(at: partialStateURL(name))
    }

    /// Makes the verified file at `verified` (inside the model's directory) the model's current
    /// version: rename to its versioned name, replace the manifest atomically, remove old versions.
    func activate(_ verified: URL, manifest: DownloadedModel) throws -> DownloadedModel {
        let fm = FileManager.default
        let directory = self.directory(manifest.name)
        let destination = directory.appendingPathComponent(manifest.file)
        if fm.fileExists(atPath: destination.path) {
            // The same version is already stored (same SHA-256): keep that file.
            try? fm.removeItem(at: verified)
        } else if rename(verified.path, destination.path) != 0 {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: destination.path,
                NSLocalizedDescriptionKey: "cannot rename \(verified.path) to \(destination.path): \(String(cString: strerror(errno)))"])
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(manifest).write(to: manifestURL(manifest.name), options: .atomic)
        // Older versions are unreferenced now. A task that still maps one keeps its pages.
        for entry in (try? fm.contentsOfDirectory(atPath: directory.path)) ?? []
        where entry.hasPrefix("model-") && entry.hasSuffix(".tflite") && entry != manifest.file {
            try? fm.removeItem(at: directory.appendingPathComponent(entry))
        }
        var result = manifest
        result.path = destination.path
        return result
    }

    static func versionedFileName(sha256: String) -> String { "model-\(sha256.prefix(16)).tflite" }

    static func now() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date())
    }
}
