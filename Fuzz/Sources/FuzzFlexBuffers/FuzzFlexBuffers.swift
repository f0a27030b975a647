// Fuzz target: the FlexBuffers reader (custom-op options, e.g. TFLite_Detection_PostProcess). Any
// input must decode or throw a ModelFormatError; decoded values are walked completely.
import Foundation
import FuzzSupport
import TFLiteFormat

func walk(_ value: FlexValue, depth: Int = 0) -> Int {
    switch value {
    case .vector(let items): return items.reduce(1) { $0 + walk($1, depth: depth + 1) }
    case .map(let entries): return entries.reduce(1) { $0 + $1.key.utf8.count + walk($1.value, depth: depth + 1) }
    default: return String(describing: value).count
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzHarness.expect(ModelFormatError.self) {
        let value = try FlexBuffer.decode(UnsafeRawBufferPointer(start: data, count: size))
        _ = walk(value)
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    FuzzHarness.writeSeedsIfAsked { write in
        write("int.flex", [7, 4, 1])
        write("map1.flex", [0x6b, 0x6b, 0x6b, 0x00, 0x01, 0x04, 0x01, 0x01, 0x00, 0x04, 0x02, 0x24, 0x01])
        // Custom options of every custom operator in the shared models (the SSD post-processing options).
        var seen = Set<[UInt8]>()
        for url in FuzzHarness.modelFiles() {
            guard let model = try? TFLiteModel(contentsOfFile: url.path) else { continue }
            for op in model.subgraphs.flatMap(\.operators) {
                let options = Array(model.customOptions(of: op))
                if !options.isEmpty, seen.insert(options).inserted {
                    write("\(url.deletingPathExtension().lastPathComponent)-\(seen.count).flex", options)
                }
            }
        }
    }
    return 0
}
