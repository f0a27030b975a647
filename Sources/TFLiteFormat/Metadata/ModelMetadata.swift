import Foundation

/// TFLite model metadata (`ModelMetadata` of metadata_schema.fbs, file identifier "M001"), stored
/// in the model buffer named `TFLITE_METADATA`.
public struct ModelMetadata: Sendable {
    public var name: String?
    public var description: String?
    public var version: String?
    public var author: String?
    public var license: String?
    /// The oldest metadata parser version that can read this metadata.
    public var minParserVersion: String?
    public var subgraphs: [SubgraphMetadata]
    public var associatedFiles: [AssociatedFile]

    /// The newest metadata schema version this parser understands (metadata_schema.fbs).
    public static let parserVersion = "1.5.0"
    /// The name of the model metadata entry that holds this table.
    public static let bufferName = "TFLITE_METADATA"
}

public struct SubgraphMetadata: Sendable {
    public var name: String?
    public var description: String?
    public var inputTensors: [TensorMetadata]
    public var outputTensors: [TensorMetadata]
    public var associatedFiles: [AssociatedFile]
    public var inputProcessUnits: [ProcessUnit]
    public var outputProcessUnits: [ProcessUnit]
}

public struct TensorMetadata: Sendable {
    public var name: String?
    public var description: String?
    public var dimensionNames: [String]
    public var content: Content?
    public var processUnits: [ProcessUnit]
    public var stats: Stats?
    public var associatedFiles: [AssociatedFile]

    /// The normalization options among the process units, if any.
    public var normalization: NormalizationOptions? {
        for unit in processUnits { if case .normalization(let n) = unit { return n } }
        return nil
    }
    /// The score-thresholding options among the process units, if any.
    public var scoreThresholding: Float? {
        for unit in processUnits { if case .scoreThresholding(let t) = unit { return t } }
        return nil
    }
    /// The score-calibration options among the process units, if any.
    public var scoreCalibration: ScoreCalibrationOptions? {
        for unit in processUnits { if case .scoreCalibration(let c) = unit { return c } }
        return nil
    }
}

public struct Content: Sendable {
    public enum Properties: Sendable {
        case feature
        case image(colorSpace: ColorSpace, defaultSize: (width: Int, height: Int)?)
        case boundingBox(index: [Int], type: BoundingBoxType, coordinateType: CoordinateType)
        case audio(sampleRate: Int, channels: Int)
        case other(typeCode: UInt8)
    }
    public enum ColorSpace: UInt8, Sendable { case unknown = 0, rgb = 1, grayscale = 2 }
    public enum BoundingBoxType: UInt8, Sendable { case unknown = 0, boundaries = 1, upperLeft = 2, center = 3 }
    public enum CoordinateType: UInt8, Sendable { case ratio = 0, pixel = 1 }

    public var properties: Properties?
    /// The range of dimensions the content spans (`ValueRange`), if given.
    public var range: ClosedRange<Int>?
}

public struct NormalizationOptions: Sendable, Hashable {
    public var mean: [Float]
    public var std: [Float]
    public init(mean: [Float], std: [Float]) {
        self.mean = mean
        self.std = std
    }
}

public struct ScoreCalibrationOptions: Sendable, Hashable {
    public enum Transformation: Int8, Sendable { case identity = 0, log = 1, inverseLogistic = 2 }
    public var transformation: Transformation
    public var defaultScore: Float
}

public enum ProcessUnit: Sendable {
    case normalization(NormalizationOptions)
    case scoreCalibration(ScoreCalibrationOptions)
    case scoreThresholding(globalScoreThreshold: Float)
    /// Tokenizers and unknown units.
    case other(typeCode: UInt8)
}

public struct Stats: Sendable, Hashable {
    public var max: [Float]
    public var min: [Float]
}

public struct AssociatedFile: Sendable, Hashable {
    public enum FileType: Int8, Sendable {
        case unknown = 0, descriptions = 1, tensorAxisLabels = 2, tensorValueLabels = 3
        case tensorAxisScoreCalibration = 4, vocabulary = 5, scannIndexFile = 6
    }
    public var name: String
    public var description: String?
    public var type: FileType
    public var locale: String?
    public var version: String?
}

extension ModelMetadata {
    /// Decodes metadata from its FlatBuffer bytes.
    public init(bytes: UnsafeRawBufferPointer) throws {
        let reader = FlatBufferReader(bytes, name: "model metadata")
        let root: FlatBufferTable
        do {
            root = try reader.root(fileIdentifier: "M001")
        } catch let error as ModelFormatError {
            throw ModelFormatError(.invalidMetadata, error.message)
        }
        do {
            try self.init(root)
        } catch let error as ModelFormatError where error.code != .unsupported {
            throw ModelFormatError(.invalidMetadata, error.message)
        }
    }

    init(_ t: FlatBufferTable) throws {
        name = try t.string(0, "metadata name")
        description = try t.string(1, "metadata description")
        version = try t.string(2, "metadata version")
        subgraphs = try t.tables(3, "subgraph_metadata") { s, i in try SubgraphMetadata(s, index: i) } ?? []
        author = try t.string(4, "metadata author")
        license = try t.string(5, "metadata license")
        associatedFiles = try AssociatedFile.list(t, 6, "model associated files")
        minParserVersion = try t.string(7, "min_parser_version")
        if let required = minParserVersion, ModelMetadata.compareVersions(required, ModelMetadata.parserVersion) > 0 {
            throw ModelFormatError(.unsupported,
                "The model metadata needs metadata parser version \(required); this version of EdgeVision reads up to \(ModelMetadata.parserVersion).")
        }
    }

    /// Compares dotted version strings numerically ("1.10.0" > "1.9").
    static func compareVersions(_ a: String, _ b: String) -> Int {
        let x = a.split(separator: ".").map { Int($0) ?? 0 }, y = b.split(separator: ".").map { Int($0) ?? 0 }
        for i in 0..<max(x.count, y.count) {
            let l = i < x.count ? x[i] : 0, r = i < y.count ? y[i] : 0
            if l != r { return l < r ? -1 : 1 }
        }
        return 0
    }
}

extension SubgraphMetadata {
    init(_ t: FlatBufferTable, index: Int) throws {
        name = try t.string(0, "subgraph metadata name")
        description = try t.string(1, "subgraph metadata description")
        inputTensors = try t.tables(2, "input_tensor_metadata") { m, i in try TensorMetadata(m, what: "input tensor metadata \(i)") } ?? []
        outputTensors = try t.tables(3, "output_tensor_metadata") { m, i in try TensorMetadata(m, what: "output tensor metadata \(i)") } ?? []
        associatedFiles = try AssociatedFile.list(t, 4, "subgraph associated files")
        inputProcessUnits = try ProcessUnit.list(t, 5, "input_process_units")
        outputProcessUnits = try ProcessUnit.list(t, 6, "output_process_units")
    }
}

extension TensorMetadata {
    init(_ t: FlatBufferTable, what: String) throws {
        name = try t.string(0, "\(what) name")
        description = try t.string(1, "\(what) description")
        dimensionNames = try t.strings(2, "\(what) dimension_names") ?? []
        content = try t.table(3, "\(what) content").map { try Content($0, what: what) }
        processUnits = try ProcessUnit.list(t, 4, "\(what) process_units")
        stats = try t.table(5, "\(what) stats").map {
            Stats(max: try $0.floats(0, "stats max") ?? [], min: try $0.floats(1, "stats min") ?? [])
        }
        associatedFiles = try AssociatedFile.list(t, 6, "\(what) associated files")
    }
}

extension Content {
    init(_ t: FlatBufferTable, what: String) throws {
        let type: UInt8 = try t.scalar(0, default: 0)
        let value = try t.table(1, "\(what) content properties")
        switch (type, value) {
        case (0, _): properties = nil
        case (1, _): properties = .feature
        case (2, let p?):
            let colorSpace = Content.ColorSpace(rawValue: try p.scalar(0, default: 0)) ?? .unknown
            let size = try p.table(1, "\(what) default_size").map {
                (width: Int(try $0.scalar(0, default: UInt32(0))), height: Int(try $0.scalar(1, default: UInt32(0))))
            }
            properties = .image(colorSpace: colorSpace, defaultSize: size)
        case (3, let p?):
            let index = try p.uint32s(0, "\(what) bounding box index")?.map(Int.init) ?? []
            let boxType = Content.BoundingBoxType(rawValue: try p.scalar(1, default: 0)) ?? .unknown
            let coordinates = Content.CoordinateType(rawValue: try p.scalar(2, default: 0)) ?? .ratio
            properties = .boundingBox(index: index, type: boxType, coordinateType: coordinates)
        case (4, let p?):
            properties = .audio(sampleRate: Int(try p.scalar(0, default: UInt32(0))), channels: Int(try p.scalar(1, default: UInt32(0))))
        case (let code, nil) where code <= 4:
            throw ModelFormatError(.invalidMetadata, "\(what): content properties of type \(code) have no table")
        default: properties = .other(typeCode: type)
        }
        if let r = try t.table(2, "\(what) range") {
            let lo = Int(try r.scalar(0, default: Int32(0))), hi = Int(try r.scalar(1, default: Int32(0)))
            range = lo <= hi ? lo...hi : nil
        } else {
            range = nil
        }
    }
}

extension ProcessUnit {
    static func list(_ t: FlatBufferTable, _ slot: Int, _ what: String) throws -> [ProcessUnit] {
        try t.tables(slot, what) { u, i in
            let type: UInt8 = try u.scalar(0, default: 0)
            let options = try u.table(1, "\(what)[\(i)] options")
            switch (type, options) {
            case (1, let o?):
                return .normalization(NormalizationOptions(mean: try o.floats(0, "normalization mean") ?? [],
                                                           std: try o.floats(1, "normalization std") ?? []))
            case (2, let o?):
                let raw: Int8 = try o.scalar(0, default: 0)
                return .scoreCalibration(ScoreCalibrationOptions(
                    transformation: ScoreCalibrationOptions.Transformation(rawValue: raw) ?? .identity,
                    defaultScore: try o.float(1, default: 0)))
            case (3, let o?):
                return .scoreThresholding(globalScoreThreshold: try o.float(0, default: 0))
            case (1...3, nil):
                throw ModelFormatError(.invalidMetadata, "\(what)[\(i)]: process unit of type \(type) has no options table")
            default:
                return .other(typeCode: type)
            }
        } ?? []
    }
}

extension AssociatedFile {
    static func list(_ t: FlatBufferTable, _ slot: Int, _ what: String) throws -> [AssociatedFile] {
        try t.tables(slot, what) { f, i in
            let raw: Int8 = try f.scalar(2, default: 0)
            return AssociatedFile(name: try f.string(0, "\(what)[\(i)] name") ?? "",
                                  description: try f.string(1, "\(what)[\(i)] description"),
                                  type: FileType(rawValue: raw) ?? .unknown,
                                  locale: try f.string(3, "\(what)[\(i)] locale"),
                                  version: try f.string(4, "\(what)[\(i)] version"))
        } ?? []
    }
}
