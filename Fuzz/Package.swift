// swift-tools-version:6.0
//
// libFuzzer targets for EdgeVision (issue #11). A separate package so that the main package keeps no
// unsafe flags and its `swift build` / `swift test` never see the sanitizers. Build and run them with
// `scripts/fuzz.sh` (see docs/FUZZING.md); by hand:
//
//   swift build --package-path Fuzz -c release --disable-dead-strip --scratch-path .build-fuzz/libfuzzer \
//       --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xcc -fsanitize=address
//
// (scripts/fuzz.sh says why each flag is needed.)
//
// Every target is one file defining `LLVMFuzzerTestOneInput` (and `LLVMFuzzerInitialize`, which writes
// generated seeds when EDGEVISION_FUZZ_WRITE_SEEDS is set); libFuzzer provides `main`.
import Foundation
import PackageDescription

// The package under test: the enclosing repository, or EDGEVISION_FUZZ_PACKAGE (e.g. a snapshot of it).
// A path dependency's identity is its directory name, which is whatever the repository was cloned as.
let root = ProcessInfo.processInfo.environment["EDGEVISION_FUZZ_PACKAGE"].map { URL(fileURLWithPath: $0) }
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let edgeVision = root.lastPathComponent

func fuzzTarget(_ name: String, _ products: [String], _ local: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + local + products.map { .product(name: $0, package: edgeVision) },
        swiftSettings: [.unsafeFlags(["-parse-as-library"])]
    )
}

let package = Package(
    name: "EdgeVisionFuzz",
    dependencies: [.package(path: root.path)],
    targets: [
        // Seed generators shared with the tests (symbolic links into Tests/TestSupport) + the harness.
        .target(name: "FuzzSupport"),
        .target(name: "FuzzImageSupport", dependencies: ["FuzzSupport", .product(name: "MediaIO", package: edgeVision)]),
        fuzzTarget("FuzzModel", ["TFLiteFormat"]),
        fuzzTarget("FuzzFlexBuffers", ["TFLiteFormat"]),
        fuzzTarget("FuzzModelInvoke", ["TFLiteFormat", "InferenceEngine"]),
        fuzzTarget("FuzzJPEG", ["MediaIO"], ["FuzzImageSupport"]),
        fuzzTarget("FuzzPNG", ["MediaIO"], ["FuzzImageSupport"]),
        fuzzTarget("FuzzWebP", ["MediaIO"], ["FuzzImageSupport"]),
        fuzzTarget("FuzzBMP", ["MediaIO"], ["FuzzImageSupport"]),
        fuzzTarget("FuzzVideo", ["MediaIO"], ["FuzzImageSupport"]),
    ],
    // The harnesses print to stderr and keep per-process globals; Swift 5 mode spares them the strict checks.
    swiftLanguageModes: [.v5]
)
