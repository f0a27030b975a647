import CFFmpeg
import Foundation

/// Small helpers shared by ``VideoReader`` and ``VideoWriter``. Everything here is internal: no
/// FFmpeg type leaves MediaIO.
enum FFmpeg {
    static let eagain = edgevision_averror_eagain()
    static let eof = edgevision_averror_eof()
    static let noPTS = edgevision_av_nopts_value()

    /// FFmpeg logs every problem with a corrupt file to stderr; the errors are reported as
    /// ``ImageError``s instead, so only fatal messages are printed. Done once per process.
    static let quietLogging: Void = {
        av_log_set_level(edgevision_av_log_fatal())
    }()

    /// The text of an FFmpeg error code.
    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        if av_strerror(code, &buffer, buffer.count) != 0 {
            return "FFmpeg error \(code)"
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func string(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        return String(cString: pointer)
    }

    /// A rational as a Double, or nil if it is not a positive finite number.
    static func positive(_ q: AVRational) -> Double? {
        guard q.num > 0, q.den > 0 else { return nil }
        let value = Double(q.num) / Double(q.den)
        return value.isFinite && value > 0 ? value : nil
    }

    /// The "file:" URL FFmpeg should open for a path, so a path containing ':' is never taken for
    /// another protocol (http:, pipe:, ...).
    static func fileURL(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return "file:" + absolute
    }
}
