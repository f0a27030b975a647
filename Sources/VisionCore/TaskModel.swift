import Foundation
import InferenceEngine
import TFLiteFormat

/// A model loaded for a vision task: the parsed file, its metadata and associated files, the
/// compiled engine model, its image input, and a pool of interpreters.
///
/// Immutable and `Sendable`. Several threads can run the task at once: each call takes an
/// interpreter from the pool (creating one when all are busy, so threads never wait on each
/// other) and returns it afterwards; the compiled model and its weights are shared.
public final class TaskModel: @unchecked Sendable {
    /// The verified model file.
    public let file: TFLiteModel
    /// The compiled model the interpreters run.
    public let engine: Model
    /// The model's TFLite metadata, if it has any.
    public let metadata: ModelMetadata?
    /// The ZIP of associated files (labels, calibration), if the model has one.
    public let archive: ZipArchive?
    /// How the model wants its image input.
    public let imageInput: ImageInputSpec
    private let pool: InterpreterPool

    /// Loads, verifies and compiles the model file at `path`.
    public convenience init(path: String, threads: Int = 1) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw VisionError(.modelNotFound, "Model file '\(path)' does not exist. Check the path (relative paths are resolved from the current directory).")
        }
        try self.init(file: try TFLiteModel(contentsOfFile: path), threads: threads)
    }

    /// Loads, verifies and compiles model bytes.
    public convenience init(data: Data, threads: Int = 1) throws {
        try self.init(file: try TFLiteModel(data: data), threads: threads)
    }

    /// Compiles a parsed model file; each interpreter uses up to `threads` threads.
    ///
    /// - Throws: ``VisionError`` for an incompatible image input, or the engine's error when the model cannot be compiled.
    public init(file: TFLiteModel, threads: Int = 1) throws {
        self.file = file
        metadata = try file.metadata()
        // MediaPipe treats a model whose associated-files ZIP cannot be opened as having none;
        // a ZIP that opens but is corrupt is an error when a file is read from it.
        archive = try? file.associatedFiles()
        imageInput = try ImageInputSpec(model: file, metadata: metadata)
        var options = ModelOptions()
        options.numThreads = threads   // the weights packed on the interpreters' threads
        engine = try Model(file: file, options: options)
        pool = InterpreterPool(model: engine, threads: threads)
    }

    /// Runs `body` with an interpreter that no other thread uses meanwhile.
    public func withInterpreter<R>(_ body: (Interpreter) throws -> R) rethrows -> R {
        let interpreter = pool.acquire()
        defer { pool.release(interpreter) }
        return try body(interpreter)
    }

    /// Label files of output `outputIndex` of the given types (see ``TFLiteModel/labelFiles(forOutput:types:metadata:archive:)``).
    public func labelFiles(forOutput outputIndex: Int, types: Set<AssociatedFile.FileType>) throws -> [LabelFile] {
        guard metadata != nil else { return [] }
        guard let archive else {
            // Metadata names label files but the archive is missing or unreadable.
            let named = metadata?.subgraphs.first?.outputTensors.indices.contains(outputIndex) == true
                ? metadata?.subgraphs.first?.outputTensors[outputIndex].associatedFiles.filter { types.contains($0.type) } ?? [] : []
            if !named.isEmpty {
                throw VisionError(.incompatibleModel, "The model's metadata names label file '\(named[0].name)', but the model has no readable associated-files archive.")
            }
            return []
        }
        return try file.labelFiles(forOutput: outputIndex, types: types, metadata: metadata, archive: archive)
    }
}

/// Interpreters of one model, handed out one caller at a time.
final class InterpreterPool: @unchecked Sendable {
    private let model: Model
    private let threads: Int
    private let lock = NSLock()
    private var idle: [Interpreter] = []

    init(model: Model, threads: Int) {
        self.model = model
        self.threads = threads
    }

    func acquire() -> Interpreter {
        lock.lock()
        if let interpreter = idle.popLast() {
            lock.unlock()
            return interpreter
        }
        lock.unlock()
        return Interpreter(model: model, options: InterpreterOptions(numThreads: threads))
    }

    func release(_ interpreter: Interpreter) {
        lock.lock()
        // Keep a few for reuse; more would only hold memory after a burst of concurrent calls.
        if idle.count < 8 { idle.append(interpreter) }
        lock.unlock()
    }
}

/// Where tasks find default models by file name: `EDGEVISION_MODELS` if set, then the per-user
/// cache (`$XDG_CACHE_HOME/edgevision/models`, else `~/.cache/edgevision/models`).
public enum ModelDirectory {
    /// The directories searched, in order.
    public static var searchPath: [URL] {
        var directories: [URL] = []
        let environment = ProcessInfo.processInfo.environment
        if let models = environment["EDGEVISION_MODELS"], !models.isEmpty {
            directories.append(URL(fileURLWithPath: models))
        }
        directories.append(cacheDirectory)
        return directories
    }

    /// The per-user model cache.
    public static var cacheDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("edgevision/models")
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/edgevision/models")
    }

    /// The path of the default model `fileName`, or a `.modelNotFound` error naming the file and
    /// the directories searched.
    public static func locate(_ fileName: String) throws -> String {
        for directory in searchPath {
            let candidate = directory.appendingPathComponent(fileName)
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate.path }
        }
        throw VisionError(.modelNotFound,
            "Default model '\(fileName)' was not found in \(searchPath.map(\.path).joined(separator: " or ")). Set EDGEVISION_MODELS to a directory that holds it, or run 'edgevision models install-defaults'.")
    }
}
