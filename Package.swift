// swift-tools-version:6.0
//
// EdgeVision: on-device vision (ML Kit / MediaPipe Tasks APIs) for every platform Swift runs on.
// Targets form a DAG; see ARCHITECTURE.md. No outside packages and no unsafe compiler flags, so the package
// stays usable as a dependency. C libraries come from the system (Debian packages), one
// systemLibrary target each; no C type is exposed in a public API.
import PackageDescription

let package = Package(
    name: "EdgeVision",
    products: [
        .library(name: "TFLiteFormat", targets: ["TFLiteFormat"]),
        .library(name: "InferenceEngine", targets: ["InferenceEngine"]),
        .library(name: "MediaIO", targets: ["MediaIO"]),
        .library(name: "EdgeVision", targets: ["EdgeVision"]),
        .library(name: "EdgeVisionTasks", targets: ["EdgeVisionTasks"]),
        .executable(name: "edgevision", targets: ["edgevision"]),
    ],
    targets: [
        // Vocabulary: element types, shapes, quantization parameters. No dependencies.
        .target(name: "TensorCore"),

        // zlib (Debian: zlib1g-dev), for deflate entries of the metadata ZIP.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        // Reading .tflite files: FlatBuffers reader + verifier, schema views, metadata, ZIP, FlexBuffers.
        .target(name: "TFLiteFormat", dependencies: ["TensorCore", "CZlib"]),

        // Image codecs from Debian: libjpeg-turbo (TurboJPEG API), libspng, libwebp.
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CSPNG", pkgConfig: "spng", providers: [.apt(["libspng-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebp", providers: [.apt(["libwebp-dev"])]),
        // Video (Debian: libavformat/libavcodec/libswscale/libavutil -dev) and text (libfreetype-dev).
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat", providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]),
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2", providers: [.apt(["libfreetype-dev"])]),

        // Pictures in and out: pixel buffers, decoders/encoders, orientation, video, annotation.
        .target(name: "MediaIO", dependencies: ["CTurboJPEG", "CSPNG", "CWebP", "CFFmpeg", "CFreeType"]),

        // Hot micro-kernels in C: a portable variant of each plus x86-64 variants with per-function
        // target attributes (AVX2+FMA, AVX-512, AVX-512-VNNI), chosen at run time. No unsafe flags.
        // Also the worker pool of multi-threaded invokes (pool.c).
        .target(name: "CKernels"),

        // The interpreter: compiled models, kernels (one op per file), memory planning.
        .target(name: "InferenceEngine", dependencies: ["TFLiteFormat", "TensorCore", "CKernels"]),

        // What both task APIs share: model compatibility, image preprocessing, errors.
        .target(name: "VisionCore", dependencies: ["InferenceEngine", "MediaIO", "TFLiteFormat", "TensorCore"]),

        // The ML Kit-style API: VisionImage, ImageLabeler, ObjectDetector, Segmenter, ModelManager.
        .target(name: "EdgeVision", dependencies: ["VisionCore", "InferenceEngine", "MediaIO"]),

        // The MediaPipe Tasks-style API: MPImage, ImageClassifier, ObjectDetector.
        .target(name: "EdgeVisionTasks", dependencies: ["VisionCore", "InferenceEngine", "MediaIO"]),

        // The command-line tool.
        .executableTarget(name: "edgevision", dependencies: ["TFLiteFormat", "InferenceEngine", "MediaIO", "VisionCore", "EdgeVision", "EdgeVisionTasks"]),

        // Shared helpers for the tests (finding ../shared, seeded RNG). Not a product.
        .target(name: "TestSupport", path: "Tests/TestSupport"),

        .testTarget(name: "TFLiteFormatTests", dependencies: ["TFLiteFormat", "TestSupport"]),
        .testTarget(name: "InferenceEngineTests", dependencies: ["InferenceEngine", "TFLiteFormat", "TestSupport"]),
        .testTarget(name: "MediaIOTests", dependencies: ["MediaIO", "VisionCore", "TFLiteFormat", "TestSupport"]),
        .testTarget(name: "ReadmeExamplesTests", dependencies: ["EdgeVision", "EdgeVisionTasks", "MediaIO", "InferenceEngine", "TestSupport"]),
        .testTarget(name: "BenchmarkTests", dependencies: ["EdgeVision", "EdgeVisionTasks", "MediaIO", "TestSupport"]),
        .testTarget(name: "CLITests", dependencies: ["edgevision", "MediaIO", "TestSupport"]),
        .testTarget(name: "EdgeVisionTests", dependencies: ["EdgeVision", "VisionCore", "MediaIO", "TFLiteFormat", "TensorCore", "TestSupport"]),
        .testTarget(name: "EdgeVisionTasksTests", dependencies: ["EdgeVisionTasks", "VisionCore", "MediaIO", "TestSupport"]),
        .testTarget(name: "ModelManagerTests", dependencies: ["EdgeVision", "VisionCore", "TFLiteFormat", "TestSupport"]),
    ]
)
