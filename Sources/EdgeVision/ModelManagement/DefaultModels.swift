import Foundation
import TFLiteFormat
import VisionCore

/// A default model: the file tasks find by name in the model directory (`ModelDirectory`), with
/// its pinned SHA-256 and where it officially comes from.
public struct DefaultModel: Sendable, Hashable {
    /// File name in the model directory (what `ModelDirectory.locate` looks for).
    public let fileName: String
    /// SHA-256 of the file, lowercase hex.
    public let sha256: String
    /// Size in bytes.
    public let size: Int64
    /// Official download URLs, tried in order.
    public let urls: [URL]
    /// Where the file comes from and under which license.
    public let origin: String
}

/// The default models of the tasks and how to install them into the per-user cache
/// (`edgevision models install-defaults`).
///
/// Digests: selfie_segmentation*, mobilenet_v2_1.0_224_quant: `sha256sum` of the files in the
/// project's shared models; coco_ssd_mobilenet_v1_1.0_quant_2018_06_29: shared/models/SOURCES.md.
/// Each one equals the digest its source publishes (MediaPipe's `third_party/external_files.bzl`
/// pins the same sha256 next to the storage URL; the Coral blob was hashed from the repository).
public enum DefaultModels {
    // Force-unwraps below are on literal URLs written here, not on input.
    private static func url(_ text: String) -> URL { URL(string: text)! }

    /// Every default model: the selfie segmenters, the default labeling model and the default detection model.
    public static let all: [DefaultModel] = [
        DefaultModel(
            fileName: "selfie_segmentation.tflite",
            sha256: "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c",
            size: 249_505,
            urls: [url("https://storage.googleapis.com/mediapipe-assets/selfie_segmentation.tflite?generation=1683332563830600")],
            origin: "MediaPipe Selfie Segmentation (general, 256x256), Apache-2.0; google-ai-edge/mediapipe third_party/external_files.bzl, com_google_mediapipe_selfie_segmentation_tflite"),
        DefaultModel(
            fileName: "selfie_segmentation_landscape.tflite",
            sha256: "a77d03f4659b9f6b6c1f5106947bf40e99d7655094b6527f214ea7d451106edd",
            size: 250_145,
            urls: [url("https://storage.googleapis.com/mediapipe-assets/selfie_segmentation_landscape.tflite?generation=1683332561312022")],
            origin: "MediaPipe Selfie Segmentation (landscape, 144x256), Apache-2.0; google-ai-edge/mediapipe third_party/external_files.bzl, com_google_mediapipe_selfie_segmentation_landscape_tflite"),
        DefaultModel(
            fileName: "mobilenet_v2_1.0_224_quant.tflite",
            sha256: "7aad0c74c5e3c06e5eb3c827e13304fdd68a83da6087d92ee169c24ff9fd4776",
            size: 3_610_798,
            urls: [url("https://raw.githubusercontent.com/google-coral/test_data/104342d2d3480b3e66203073dac24f4e2dbb4c41/mobilenet_v2_1.0_224_quant.tflite")],
            origin: "ImageNet MobileNet v2 1.0 224 uint8 with TFLite metadata (labels), Apache-2.0; google-coral/test_data at 104342d2 (MediaPipe's mediapipe-assets file of the same name is a different build, sha256 f08d447c...)"),
        DefaultModel(
            fileName: "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite",
            sha256: "61d598093ed03ed41aa47c3a39a28ac01e960d6a810a5419b9a5016a1e9c469b",
            size: 4_185_023,
            urls: [url("https://storage.googleapis.com/mediapipe-assets/coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite?generation=1666144700870810"),
                   url("https://raw.githubusercontent.com/tensorflow/tflite-support/dd3362ea685bb7ab1f7268c81ec567d3b720ae57/tensorflow_lite_support/cc/test/testdata/task/vision/coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite")],
            origin: "COCO SSD MobileNet v1 quantized with TFLite metadata (labelmap), Apache-2.0; tensorflow/tflite-support task/vision testdata, same sha256 in google-ai-edge/mediapipe third_party/external_files.bzl"),
    ]

    /// The default model stored as `fileName`, if it is one.
    public static func named(_ fileName: String) -> DefaultModel? {
        all.first { $0.fileName == fileName }
    }

    /// How one model was installed.
    public enum InstallAction: String, Sendable {
        /// The cache already held the file with the pinned digest.
        case alreadyInstalled = "already installed"
        /// Copied from a local directory.
        case copied
        /// Downloaded from one of its URLs.
        case downloaded
    }

    /// Installs every default model into `cacheDirectory` (flat, by file name, where
    /// `ModelDirectory.locate` finds it). Each file is copied from `sourceDirectory` when given,
    /// else downloaded from its official URL; either way it is written to a temporary name,
    /// checked against the pinned size and SHA-256 and parsed as a TFLite model, then renamed into
    /// place. A file already installed with the right digest is kept.
    ///
    /// - Parameter report: called after each model with its path and what was done.
    @discardableResult
    public static func install(from sourceDirectory: URL?, into cacheDirectory: URL = ModelDirectory.cacheDirectory,
                               configuration: ModelManager.Configuration = ModelManager.Configuration(),
                               report: (DefaultModel, String, InstallAction) -> Void = { _, _, _ in }) throws -> [String] {
        let fm = FileManager.default
        do {
            try fm.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
        } catch {
            throw ModelDownloadError(.fileSystem, model: "defaults", "Cannot create the model cache \(cacheDirectory.path): \(error.localizedDescription). Choose another with --cache-dir.")
        }
        var paths: [String] = []
        for model in all {
            let destination = cacheDirectory.appendingPathComponent(model.fileName)
            if fm.fileExists(atPath: destination.path), (try? SHA256.hex(ofFileAt: destination.path)) == model.sha256 {
                paths.append(destination.path)
                report(model, destination.path, .alreadyInstalled)
                continue
            }
            let temporary = cacheDirectory.appendingPathComponent(".\(model.fileName).\(UUID().uuidString).tmp")
            defer { try? fm.removeItem(at: temporary) }
            let action: InstallAction
            if let sourceDirectory {
                let source = sourceDirectory.appendingPathComponent(model.fileName)
                guard fm.fileExists(atPath: source.path) else {
                    throw ModelDownloadError(.notDownloaded, model: model.fileName,
                        "Default model '\(model.fileName)' is not in \(sourceDirectory.path). Put it there (official URL: \(model.urls[0].absoluteString)) or install without --from / EDGEVISION_MODELS to download it.")
                }
                do {
                    try fm.copyItem(at: source, to: temporary)
                } catch {
                    throw ModelDownloadError(.fileSystem, model: model.fileName, "Cannot copy \(source.path) to \(cacheDirectory.path): \(error.localizedDescription).")
                }
                action = .copied
            } else {
                try download(model, to: temporary, cacheDirectory: cacheDirectory, configuration: configuration)
                action = .downloaded
            }
            try verify(temporary, as: model)
            if rename(temporary.path, destination.path) != 0 {
                throw ModelDownloadError(.fileSystem, model: model.fileName, "Cannot rename \(temporary.path) to \(destination.path): \(String(cString: strerror(errno))).")
            }
            paths.append(destination.path)
            report(model, destination.path, action)
        }
        return paths
    }

    /// Checks size, SHA-256 and TFLite structure against the pinned values.
    static func verify(_ file: URL, as model: DefaultModel) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? -1
        guard size == model.size else {
            throw ModelDownloadError(.sizeMismatch, model: model.fileName,
                "'\(model.fileName)' is \(size) bytes, expected \(model.size): it is not the pinned default model. Replace it with the official file (\(model.urls[0].absoluteString)).")
        }
        let digest = try SHA256.hex(ofFileAt: file.path)
        guard digest == model.sha256 else {
            throw ModelDownloadError(.checksumMismatch, model: model.fileName,
                "'\(model.fileName)' has SHA-256 \(digest), expected \(model.sha256): it is not the pinned default model. Replace it with the official file (\(model.urls[0].absoluteString)).")
        }
        do {
            _ = try TFLiteModel(contentsOfFile: file.path)
        } catch {
            throw ModelDownloadError(.invalidModel, model: model.fileName, "'\(model.fileName)' is not a valid TFLite model: \(error).")
        }
    }

    /// Downloads through a model manager on a hidden directory of the cache (retries, resume,
    /// SHA-256 check), trying each official URL, then moves the file to `temporary`.
    private static func download(_ model: DefaultModel, to temporary: URL, cacheDirectory: URL, configuration: ModelManager.Configuration) throws {
        let manager = ModelManager.modelManager(cacheDirectory: cacheDirectory.appendingPathComponent(".downloads", isDirectory: true))
        manager.configuration = configuration
        let name = String(model.fileName.dropLast(".tflite".count))
        var lastError: Error?
        for url in model.urls {
            let remote = CustomRemoteModel(remoteModelSource: HTTPModelSource(name: name, url: url, sha256: model.sha256))
            switch manager.downloadAndWait(remote) {
            case .success(let entry):
                do {
                    try FileManager.default.moveItem(at: URL(fileURLWithPath: entry.path), to: temporary)
                } catch {
                    throw ModelDownloadError(.fileSystem, model: model.fileName, "Cannot move \(entry.path) to \(temporary.path): \(error.localizedDescription).")
                }
                try? manager.deleteDownloadedModel(named: name)
                return
            case .failure(let error):
                lastError = error
            }
        }
        throw lastError ?? ModelDownloadError(.transport, model: model.fileName, "No URL is known for '\(model.fileName)'.")
    }
}

