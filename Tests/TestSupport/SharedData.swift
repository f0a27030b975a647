import Foundation

/// Locates the project's shared test data (`../shared` beside the repository, as on every
/// developer machine and in CI), or the models directory named by `EDGEVISION_MODELS`.
public enum SharedData {
    /// The repository root, derived from this file's location (Tests/TestSupport/SharedData.swift).
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared` relative to the repository root.
    public static var root: URL {
        repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared")
    }

    /// The models directory: `EDGEVISION_MODELS` if set, else `../shared/models`.
    public static var models: URL {
        if let env = ProcessInfo.processInfo.environment["EDGEVISION_MODELS"], !env.isEmpty {
            return URL(fileURLWithPath: env)
        }
        return root.appendingPathComponent("models")
    }

    public static var images: URL { root.appendingPathComponent("images") }
    public static var videos: URL { root.appendingPathComponent("videos") }
    public static var reference: URL { root.appendingPathComponent("reference") }
    public static var goldens: URL { reference.appendingPathComponent("goldens") }

    public static func model(_ name: String) -> URL { models.appendingPathComponent(name) }
    public static func image(_ name: String) -> URL { images.appendingPathComponent(name) }

    /// Every `.tflite` file in the models directory, sorted by name.
    public static func allModels() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: models, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "tflite" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// The goldens index (`reference/goldens/index.json`) as a JSON dictionary.
    public static func goldenIndex() throws -> [String: Any] {
        let data = try Data(contentsOf: goldens.appendingPathComponent("index.json"))
        guard let json = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return json
    }
}

/// A small deterministic random generator (SplitMix64) for seeded mutation tests.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
