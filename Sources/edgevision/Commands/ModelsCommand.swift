import EdgeVision
import Foundation
import VisionCore
#if canImport(Glibc)
import Glibc
#endif

/// `edgevision models download|list|delete|install-defaults`: the model cache.
enum ModelsCommand {
    static let command = Command(
        name: "models",
        summary: "Manage the model cache: download remote models, list, delete, install the default models.",
        usage: """
        models download URL [--sha256 HEX] [--name NAME] [--cache-dir DIR] [--timeout S]
               edgevision models list [--cache-dir DIR] [--json]
               edgevision models delete NAME [--cache-dir DIR]
               edgevision models install-defaults [--from DIR] [--cache-dir DIR] [--timeout S]
        """,
        options: [
            .value("sha256", "HEX", "download: the expected SHA-256 of the file (64 hex digits); a different file is rejected."),
            .value("name", "NAME", "download: the name to cache the model under (default: the URL's file name without .tflite)."),
            .value("cache-dir", "DIR", "The model cache (default: $XDG_CACHE_HOME/edgevision/models, else ~/.cache/edgevision/models)."),
            .value("timeout", "S", "download, install-defaults: seconds without data before a request times out (default 30)."),
            .flag("json", "list: print {\"models\":[{\"name\",\"path\",\"sha256\",\"size\",\"source\"}]}."),
            .value("from", "DIR", "install-defaults: copy the models from DIR (default: EDGEVISION_MODELS if set, else download them)."),
        ],
        example: "edgevision models install-defaults --from ../shared/models",
        run: run)

    /// Options each subcommand accepts.
    static let allowed: [String: Set<String>] = [
        "download": ["sha256", "name", "cache-dir", "timeout"],
        "list": ["cache-dir", "json"],
        "delete": ["cache-dir"],
        "install-defaults": ["from", "cache-dir", "timeout"],
    ]

    static func run(_ args: ParsedArguments) throws {
        guard let subcommand = args.positionals.first else {
            throw UsageError("missing subcommand: download, list, delete or install-defaults")
        }
        guard let accepted = allowed[subcommand] else {
            throw UsageError("unknown subcommand '\(subcommand)': use download, list, delete or install-defaults")
        }
        for option in command.options where !accepted.contains(option.name) {
            if option.valueName == nil ? args.flag(option.name) : args.value(option.name) != nil {
                throw UsageError("option '--\(option.name)' does not apply to 'models \(subcommand)'")
            }
        }
        let rest = Array(args.positionals.dropFirst())
        let cacheDirectory = args.value("cache-dir").map { URL(fileURLWithPath: $0, isDirectory: true) } ?? ModelDirectory.cacheDirectory
        var configuration = ModelManager.Configuration()
        if let timeout = try args.double("timeout") {
            guard timeout > 0 else { throw UsageError("--timeout must be positive") }
            configuration.timeout = timeout
        }
        switch subcommand {
        case "download": try download(rest, args, cacheDirectory, configuration)
        case "list": try list(rest, args, cacheDirectory)
        case "delete": try delete(rest, cacheDirectory)
        default: try installDefaults(rest, args, cacheDirectory, configuration)
        }
    }

    static func expect(_ rest: [String], _ names: [String]) throws -> [String] {
        guard rest.count >= names.count else { throw UsageError("missing argument \(names[rest.count])") }
        guard rest.count == names.count else { throw UsageError("unexpected argument '\(rest[names.count])'") }
        return rest
    }

    /// The default cache name for a URL: its file name without `.tflite`, other characters as `_`.
    static func defaultName(for url: URL) -> String {
        var name = url.lastPathComponent
        if name.lowercased().hasSuffix(".tflite") { name = String(name.dropLast(7)) }
        name = String(name.unicodeScalars.map { scalar -> Character in
            let ok = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "." || scalar == "_" || scalar == "-"
            return ok ? Character(scalar) : "_"
        })
        while name.hasPrefix(".") { name.removeFirst() }
        return name.isEmpty || name == "/" ? "model" : String(name.prefix(128))
    }

    static func download(_ rest: [String], _ args: ParsedArguments, _ cacheDirectory: URL, _ configuration: ModelManager.Configuration) throws {
        let urlText = try expect(rest, ["URL"])[0]
        guard let url = URL(string: urlText), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw UsageError("URL must be an http:// or https:// URL, got '\(urlText)'")
        }
        let sha256 = args.value("sha256")
        if let sha256, !SHA256.isValidHex(sha256) { throw UsageError("--sha256 needs 64 hex digits, got '\(sha256)'") }
        let name = args.value("name") ?? defaultName(for: url)
        let manager = ModelManager.modelManager(cacheDirectory: cacheDirectory)
        manager.configuration = configuration
        let remote = CustomRemoteModel(remoteModelSource: HTTPModelSource(name: name, url: url, sha256: sha256))
        let box = DownloadResultBox()
        let waiter = DispatchSemaphore(value: 0)
        let progress = manager.download(remote, conditions: ModelDownloadConditions()) { result in
            box.result = result
            waiter.signal()
        }
        let reporter = ProgressReporter(label: "downloading \(name)")
        while waiter.wait(timeout: .now() + 0.2) == .timedOut {
            reporter.update(progress)
        }
        reporter.update(progress)
        reporter.finish()
        switch box.result {
        case .success(let entry)?:
            print(entry.path)
        case .failure(let error)?:
            throw CLIError(error.message)
        case nil:
            throw CLIError("the download of '\(name)' ended without a result")
        }
    }

    static func list(_ rest: [String], _ args: ParsedArguments, _ cacheDirectory: URL) throws {
        _ = try expect(rest, [])
        struct Row { let name: String; let path: String; let sha256: String?; let size: Int64; let source: String? }
        var rows: [Row] = ModelManager.modelManager(cacheDirectory: cacheDirectory).downloadedModels().map {
            Row(name: $0.name, path: $0.path, sha256: $0.sha256, size: $0.size, source: $0.source)
        }
        // Default models stored by file name (found by ModelDirectory.locate).
        let files = (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path)) ?? []
        for file in files.sorted() where file.hasSuffix(".tflite") && !file.hasPrefix(".") {
            let path = cacheDirectory.appendingPathComponent(file).path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                  (attributes[.type] as? FileAttributeType) == .typeRegular else { continue }
            let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
            rows.append(Row(name: file, path: path, sha256: try? SHA256.hex(ofFileAt: path), size: size,
                            source: DefaultModels.named(file)?.urls.first?.absoluteString))
        }
        rows.sort { $0.name < $1.name }
        if args.flag("json") {
            print(JSON.object([("models", .array(rows.map { row in
                .object([("name", .string(row.name)), ("path", .string(row.path)), ("sha256", .optional(row.sha256) { .string($0) }),
                         ("size", .int(Int(row.size))), ("source", .optional(row.source) { .string($0) })])
            }))]).serialized)
        } else if rows.isEmpty {
            print("No models in \(cacheDirectory.path).")
        } else {
            print("size        name  (path, source)")
            for row in rows {
                print(String(row.size).padding(toLength: 10, withPad: " ", startingAt: 0) + "  " + row.name + "  (" + row.path + (row.source.map { ", " + $0 } ?? "") + ")")
            }
        }
    }

    static func delete(_ rest: [String], _ cacheDirectory: URL) throws {
        let name = try expect(rest, ["NAME"])[0]
        if name.hasSuffix(".tflite"), !name.contains("/"), !name.hasPrefix(".") {
            // A default model stored by file name.
            let path = cacheDirectory.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: path) else {
                throw CLIError("no model named '\(name)' in \(cacheDirectory.path) (see 'edgevision models list')")
            }
            do { try FileManager.default.removeItem(atPath: path) } catch {
                throw CLIError("cannot delete \(path): \(error.localizedDescription)")
            }
        } else {
            do {
                try ModelManager.modelManager(cacheDirectory: cacheDirectory).deleteDownloadedModel(named: name)
            } catch let error as ModelDownloadError {
                throw CLIError(error.code == .notDownloaded ? "no model named '\(name)' in \(cacheDirectory.path) (see 'edgevision models list')" : error.message)
            }
        }
        print("deleted \(name)")
    }

    static func installDefaults(_ rest: [String], _ args: ParsedArguments, _ cacheDirectory: URL, _ configuration: ModelManager.Configuration) throws {
        _ = try expect(rest, [])
        var source = args.value("from").map { URL(fileURLWithPath: $0, isDirectory: true) }
        if source == nil, let environment = ProcessInfo.processInfo.environment["EDGEVISION_MODELS"], !environment.isEmpty {
            source = URL(fileURLWithPath: environment, isDirectory: true)
        }
        if let source {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: source.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw CLIError("'\(source.path)' is not a directory (from --from or EDGEVISION_MODELS)")
            }
        }
        let standardError = FileHandle.standardError
        do {
            let paths = try DefaultModels.install(from: source, into: cacheDirectory, configuration: configuration) { model, path, action in
                standardError.write(Data("\(model.fileName): \(action.rawValue)\n".utf8))
            }
            for path in paths { print(path) }
        } catch let error as ModelDownloadError {
            throw CLIError(error.message)
        }
    }
}

/// The result of a download, handed from the callback queue to the waiting main thread.
final class DownloadResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<DownloadedModel, ModelDownloadError>?
    var result: Result<DownloadedModel, ModelDownloadError>? {
        get { lock.lock(); defer { lock.unlock() }; return value }
        set { lock.lock(); value = newValue; lock.unlock() }
    }
}

/// Download progress on stderr: a line redrawn in place on a terminal, else a line per 10%.
final class ProgressReporter {
    let label: String
    private let terminal = isatty(2) != 0
    private var lastShown = -1
    private var drewLine = false

    init(label: String) { self.label = label }

    func update(_ progress: Progress) {
        let total = progress.totalUnitCount, done = progress.completedUnitCount
        guard total > 0 else { return }
        let percent = Int((Double(done) / Double(total) * 100).rounded(.down))
        let step = terminal ? percent : percent / 10 * 10
        guard step != lastShown else { return }
        lastShown = step
        let text = "\(label): \(step)% (\(done) of \(total) bytes)"
        if terminal {
            FileHandle.standardError.write(Data(("\r" + text).utf8))
            drewLine = true
        } else {
            FileHandle.standardError.write(Data((text + "\n").utf8))
        }
    }

    func finish() {
        if drewLine { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
