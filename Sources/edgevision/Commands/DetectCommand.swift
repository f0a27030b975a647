import EdgeVision
import Foundation
import MediaIO

/// `edgevision detect IMAGE ...` (single-image mode) and `edgevision track VIDEO ...` (stream mode).
enum DetectCommand {
    static let sharedOptions: [OptionSpec] = [
        .flag("multiple", "Up to 5 objects instead of only the most prominent one."),
        .flag("classify", "Label objects: coarse categories, or the custom model's labels."),
        .value("custom-model", "MODEL", "A classification model run on each object's crop (implies --classify)."),
        .value("threshold", "T", "Custom classification: minimum label confidence in [0, 1]."),
        .value("max-labels", "N", "Custom classification: maximum labels per object (default 10)."),
        .value("detector", "MODEL", "The detection model proposing boxes (default: the COCO SSD from the model directory)."),
    ]

    static let detect = Command(
        name: "detect",
        summary: "Detect objects in an image (ML Kit object detection, single-image mode).",
        usage: "detect IMAGE... [--multiple] [--classify] [--custom-model MODEL] [--threshold T] [--max-labels N] [--detector MODEL] [--orientation O] [--annotate OUT.png] [--json] [--threads N]",
        options: sharedOptions + [
            .value("orientation", "O", "How the stored image must be turned to be upright (default: EXIF, else up)."),
            .value("annotate", "OUT.png", "Write the image with boxes and labels drawn on it (.png or .jpg); a directory when several images are given."),
            .flag("json", "Print {\"objects\":[{\"frame\":{\"x\",\"y\",\"width\",\"height\"},\"trackingID\":null,\"labels\":[...]}]} (JSON Lines for several images)."),
        ] + Batch.options,
        example: """
        edgevision detect ../shared/images/cats_and_dogs.jpg --multiple --classify --json
        edgevision detect ../shared/images/table.jpg --multiple --custom-model ../shared/models/mobilenet_v2_1.0_224_quant.tflite --threshold 0.3 --max-labels 3 --annotate /tmp/table.png
        edgevision detect ../shared/images/cat.bmp --detector ../shared/models/coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite --orientation left --classify
        edgevision detect ../shared/images --multiple --classify --annotate /tmp/annotated --threads 2 --json
        """,
        run: runDetect)

    static let track = Command(
        name: "track",
        summary: "Detect and track objects through a video (ML Kit object tracking, stream mode).",
        usage: "track VIDEO [--multiple] [--classify] [--custom-model MODEL] [--threshold T] [--max-labels N] [--detector MODEL] [--keep-frames N] [--live] [--annotate OUT.mp4] [--json]",
        options: sharedOptions + [
            .value("keep-frames", "N", "Frames an unseen object keeps its ID (default 2)."),
            VideoInput.liveOption("detected"),
            .value("annotate", "OUT.mp4", "Write the video with boxes and tracking IDs drawn on it (with --live: the processed frames)."),
            .flag("json", "Print JSON Lines: one {\"frame\",\"timestampMs\",\"objects\"} per frame (with --live: per processed frame, then {\"summary\":{\"frames\",\"processed\",\"dropped\"}})."),
        ],
        example: """
        edgevision track ../shared/videos/traffic_frames.mp4 --multiple --json
        edgevision track ../shared/videos/traffic_frames.mp4 --multiple --classify --keep-frames 5 --annotate /tmp/tracked.mp4
        edgevision track ../shared/videos/traffic_frames.mp4 --custom-model ../shared/models/mobilenet_v1_0.25_224_quant.tflite --threshold 0.2 --max-labels 2 --detector ../shared/models/coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite
        edgevision track ../shared/videos/traffic_frames.mp4 --multiple --live --json
        """,
        run: runTrack)

    static func makeDetector(_ args: ParsedArguments, mode: CommonObjectDetectorOptions.DetectorMode) throws -> ObjectDetector {
        let options: CommonObjectDetectorOptions
        if let model = args.value("custom-model") {
            let custom = CustomObjectDetectorOptions(localModel: LocalModel(path: model))
            if let threshold = try args.double("threshold") {
                guard (0...1).contains(threshold) else { throw UsageError("--threshold must be in [0, 1]") }
                custom.classificationConfidenceThreshold = NSNumber(value: threshold)
            }
            if let count = try args.int("max-labels") {
                guard count > 0 else { throw UsageError("--max-labels must be positive") }
                custom.maxPerObjectLabelCount = count
            }
            custom.shouldEnableClassification = true
            options = custom
        } else {
            if args.value("threshold") != nil || args.value("max-labels") != nil {
                throw UsageError("--threshold and --max-labels apply to --custom-model")
            }
            options = ObjectDetectorOptions()
            options.shouldEnableClassification = args.flag("classify")
        }
        options.detectorMode = mode
        options.shouldEnableMultipleObjects = args.flag("multiple")
        if let detector = args.value("detector") { options.detectionModel = LocalModel(path: detector) }
        if let keep = try args.int("keep-frames") {
            guard keep >= 0 else { throw UsageError("--keep-frames must be 0 or more") }
            options.trackingMaximumMissedFrames = keep
        }
        return try ObjectDetector.objectDetector(options: options)
    }

    static func json(_ objects: [Object]) -> JSON {
        .array(objects.map { object in
            .object([
                ("frame", .object([("x", .double(Double(object.frame.origin.x))), ("y", .double(Double(object.frame.origin.y))),
                                   ("width", .double(Double(object.frame.width))), ("height", .double(Double(object.frame.height)))])),
                ("trackingID", .optional(object.trackingID) { .int($0.intValue) }),
                ("labels", .array(object.labels.map { .object([("text", .string($0.text)), ("confidence", .number($0.confidence)), ("index", .int($0.index))]) })),
            ])
        })
    }

    static func draw(_ objects: [Object], on canvas: Canvas) {
        for (i, object) in objects.enumerated() {
            let color = RGBAColor.palette(object.trackingID?.intValue ?? i)
            let rect = Rect(x: Double(object.frame.origin.x), y: Double(object.frame.origin.y),
                            width: Double(object.frame.width), height: Double(object.frame.height))
            canvas.stroke(rect, color: color, lineWidth: 3)
            var text = object.trackingID.map { "#\($0.intValue)" } ?? ""
            if let label = object.labels.first {
                text += (text.isEmpty ? "" : " ") + "\(label.text.isEmpty ? "class \(label.index)" : label.text) \(String(format: "%.2f", label.confidence))"
            }
            if !text.isEmpty { canvas.drawLabel(text, for: rect, backgroundColor: color) }
        }
    }

    static func runDetect(_ args: ParsedArguments) throws {
        guard !args.positionals.isEmpty else { throw UsageError("missing argument IMAGE") }
        let orientation = try TensorCommand.parseOrientation(args.value("orientation"))
        let detector = try makeDetector(args, mode: .singleImage)
        let annotate = args.value("annotate")
        let several = args.positionals.count > 1 || Batch.isDirectory(args.positionals[0])
        if let annotate, several {
            try FileManager.default.createDirectory(atPath: annotate, withIntermediateDirectories: true)
        }
        try Batch.run(args, inputs: args.positionals) { path in
            let image = try VisionImage(contentsOf: URL(fileURLWithPath: path))
            if let orientation { image.orientation = orientation }
            let objects = try detector.results(in: image)
            if let annotate {
                let upright = try image.pixelBuffer.oriented(image.orientation, format: .rgb8)
                draw(objects, on: try Canvas(upright))
                let out = several
                    ? URL(fileURLWithPath: annotate).appendingPathComponent(URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent + ".png")
                    : URL(fileURLWithPath: annotate)
                try ImageEncoder.write(upright, to: out)
            }
            var text = "objects: \(objects.count)\n"
            for object in objects {
                let f = object.frame
                let labels = object.labels.map { "\($0.text.isEmpty ? "#\($0.index)" : $0.text) \(String(format: "%.2f", $0.confidence))" }
                text += String(format: "  x %.0f y %.0f w %.0f h %.0f", Double(f.origin.x), Double(f.origin.y), Double(f.width), Double(f.height))
                    + (labels.isEmpty ? "" : "  " + labels.joined(separator: ", ")) + "\n"
            }
            return ItemResult(fields: [("objects", json(objects))], text: text)
        }
    }

    static func runTrack(_ args: ParsedArguments) throws {
        let videoPath = try args.requirePositionals(["VIDEO"])[0]
        let detector = try makeDetector(args, mode: .stream)
        let reader = try VideoReader(path: videoPath)
        let annotated = args.value("annotate").map { AnnotatedVideo(path: $0, frameRate: reader.frameRate) }
        let json = args.flag("json")
        let deliver = { @Sendable (frame: VideoFrame, objects: [Object]) throws in
            if let annotated {
                draw(objects, on: try Canvas(frame.pixels))
                try annotated.write(frame.pixels)
            }
            if json {
                print(JSON.object([("frame", .int(frame.index)), ("timestampMs", .int(frame.timestampMilliseconds)), ("objects", self.json(objects))]).serialized)
            } else {
                let ids = objects.map { o in "#\(o.trackingID?.intValue ?? -1)" + (o.labels.first.map { " \($0.text)" } ?? "") }
                print("frame \(frame.index) \(frame.timestampMilliseconds) ms: \(ids.joined(separator: ", "))")
            }
        }
        if args.flag("live") {
            try VideoInput.runLive(reader, command: track.name, json: json,
                                   work: { frame in try detector.results(in: VisionImage(buffer: frame.pixels)) }, deliver: deliver)
        } else {
            var frames = 0
            while let frame = try reader.nextFrame() {
                try deliver(frame, try detector.results(in: VisionImage(buffer: frame.pixels)))
                frames += 1
            }
            if !json { print("\(frames) frames") }
        }
        try annotated?.finish()
    }
}
