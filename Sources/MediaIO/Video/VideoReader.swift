import CFFmpeg
import Foundation

/// One decoded video frame.
public struct VideoFrame: Sendable {
    /// The picture as rgb8, at the frame's own size.
    public let pixels: PixelBuffer
    /// Presentation time in milliseconds from the start of the stream; strictly increasing from
    /// frame to frame (what MediaPipe's video mode expects).
    public let timestampMilliseconds: Int
    /// Position of the frame in display order, from 0.
    public let index: Int

    /// A frame from its picture, presentation time and position.
    public init(pixels: PixelBuffer, timestampMilliseconds: Int, index: Int) {
        self.pixels = pixels
        self.timestampMilliseconds = timestampMilliseconds
        self.index = index
    }
}

/// Reads the frames of a video file (MP4, MOV, MKV, WebM, AVI, ... — whatever the system's FFmpeg
/// demuxes and decodes) one at a time, as rgb8 ``PixelBuffer``s.
///
/// ```swift
/// let reader = try VideoReader(path: "traffic.mp4")
/// while let frame = try reader.nextFrame() {
///     print(frame.index, frame.timestampMilliseconds, frame.pixels.width, frame.pixels.height)
/// }
/// ```
///
/// Files that are not videos (still images, audio-only files, random bytes, empty or missing
/// files) are reported as ``ImageError`` with code ``ImageError/Code/video``; frame sizes are
/// checked against ``ImageLimits`` before anything is allocated for them. A reader is used from
/// one thread at a time.
public final class VideoReader {
    /// The file that was opened.
    public let path: String
    /// Frame size declared by the video stream (each ``VideoFrame`` carries its own size too).
    public let width: Int
    /// Frame height declared by the video stream.
    public let height: Int
    /// Average frames per second declared by the file, or 0 if it declares none.
    public let frameRate: Double
    /// Duration in seconds, or 0 if the file does not say.
    public let duration: Double
    /// The number of frames: the count stored in the container if there is one, else duration ×
    /// frame rate. An estimate; ``nextFrame()`` returns what is actually there.
    public let estimatedFrameCount: Int
    /// The codec's name (e.g. "h264").
    public let codecName: String
    /// The limits every frame is checked against.
    public let limits: ImageLimits

    private var formatContext: UnsafeMutablePointer<AVFormatContext>?
    private var codecContext: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var scaler: OpaquePointer?
    private var scalerKey: [Int32] = []
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let startTime: Int64

    private var packetPending = false
    private var draining = false
    private var finished = false
    private var framesReturned = 0
    private var lastTimestamp = Int.min
    private var consecutiveErrors = 0
    private var lastError: String?

    /// Decoding errors in a row (corrupt packets) tolerated before ``nextFrame()`` gives up.
    static let maximumConsecutiveErrors = 64

    /// Opens the video file at `path` and prepares its decoder.
    public init(path: String, limits: ImageLimits = .default) throws {
        _ = FFmpeg.quietLogging
        func failure(_ what: String) -> ImageError { ImageError(.video, "Cannot read video '\(path)': \(what)") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw failure("no such file. Check the path.")
        }
        guard !isDirectory.boolValue else { throw failure("it is a directory, not a video file.") }
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber, size.intValue == 0 {
            throw failure("the file is empty.")
        }

        var format: UnsafeMutablePointer<AVFormatContext>?
        var codec: UnsafeMutablePointer<AVCodecContext>?
        var succeeded = false
        defer {
            if !succeeded {
                avcodec_free_context(&codec)
                avformat_close_input(&format)
            }
        }
        // Only the file protocol: the path is never taken for a network URL or a pipe.
        var options: OpaquePointer?
        av_dict_set(&options, "protocol_whitelist", "file", 0)
        let opened = avformat_open_input(&format, FFmpeg.fileURL(path), nil, &options)
        av_dict_free(&options)
        guard opened >= 0, let format else {
            throw failure("it is not a video file FFmpeg recognizes (\(FFmpeg.describe(opened))).")
        }
        let demuxer = FFmpeg.string(format.pointee.iformat?.pointee.name)
        if demuxer == "image2" || demuxer.hasSuffix("_pipe") {
            throw failure("it is a still image (\(demuxer)), not a video. Decode it with ImageDecoder instead.")
        }
        let info = avformat_find_stream_info(format, nil)
        guard info >= 0 else { throw failure("the stream information cannot be read (\(FFmpeg.describe(info))); the file may be corrupt or truncated.") }
        let best = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard best >= 0, best < Int32(format.pointee.nb_streams), let stream = format.pointee.streams[Int(best)],
              let parameters = stream.pointee.codecpar else {
            throw failure("the file has no video stream (it may be audio only, or not a video at all).")
        }
        let width = Int(parameters.pointee.width), height = Int(parameters.pointee.height)
        do {
            try limits.check(width: width, height: height, what: "The video '\(path)'")
        } catch let error as ImageError where error.code == .invalidDimensions {
            throw failure("the video stream has no valid frame size (\(width)×\(height)); the file may be corrupt.")
        }
        guard let decoder = avcodec_find_decoder(parameters.pointee.codec_id) else {
            let name = FFmpeg.string(avcodec_get_name(parameters.pointee.codec_id))
            throw failure("this FFmpeg build has no decoder for its '\(name)' video codec.")
        }
        codec = avcodec_alloc_context3(decoder)
        guard let codec else { throw failure("FFmpeg could not allocate a decoder (out of memory).") }
        let copied = avcodec_parameters_to_context(codec, parameters)
        guard copied >= 0 else { throw failure("the codec parameters are invalid (\(FFmpeg.describe(copied))).") }
        codec.pointee.pkt_timebase = stream.pointee.time_base
        codec.pointee.thread_count = 0  // automatic
        codec.pointee.max_pixels = Int64(min(limits.maximumPixelCount, Int(Int32.max)))
        let codecOpened = avcodec_open2(codec, decoder, nil)
        guard codecOpened >= 0 else { throw failure("the '\(FFmpeg.string(decoder.pointee.name))' decoder cannot be opened (\(FFmpeg.describe(codecOpened))).") }
        guard let packet = av_packet_alloc(), let frame = av_frame_alloc() else {
            throw failure("FFmpeg could not allocate a packet or frame (out of memory).")
        }

        let rate = FFmpeg.positive(av_guess_frame_rate(format, stream, nil))
            ?? FFmpeg.positive(stream.pointee.avg_frame_rate) ?? FFmpeg.positive(stream.pointee.r_frame_rate) ?? 0
        var seconds = 0.0
        if stream.pointee.duration != FFmpeg.noPTS, stream.pointee.duration > 0, let base = FFmpeg.positive(stream.pointee.time_base) {
            seconds = Double(stream.pointee.duration) * base
        } else if format.pointee.duration != FFmpeg.noPTS, format.pointee.duration > 0 {
            seconds = Double(format.pointee.duration) / Double(edgevision_av_time_base())
        }
        let stored = Int(stream.pointee.nb_frames)
        let estimate = stored > 0 ? stored : (seconds * rate).isFinite ? Int((seconds * rate).rounded()) : 0

        self.path = path
        self.width = width
        self.height = height
        self.frameRate = rate
        self.duration = seconds.isFinite ? seconds : 0
        self.estimatedFrameCount = max(0, estimate)
        self.codecName = FFmpeg.string(decoder.pointee.name)
        self.limits = limits
        self.formatContext = format
        self.codecContext = codec
        self.packet = packet
        self.frame = frame
        self.streamIndex = best
        self.timeBase = stream.pointee.time_base
        self.startTime = stream.pointee.start_time
        succeeded = true
    }

    deinit {
        sws_freeContext(scaler)
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codecContext)
        avformat_close_input(&formatContext)
    }

    /// The next frame in display order, or nil at the end of the video.
    ///
    /// Corrupt packets are skipped as players do; if too many fail in a row, or the file yields no
    /// frame at all, this throws ``ImageError`` (``ImageError/Code/video``). After the end (or an
    /// error) it keeps returning nil.
    public func nextFrame() throws -> VideoFrame? {
        guard !finished, let codec = codecContext, let frame else { return nil }
        while true {
            let received = avcodec_receive_frame(codec, frame)
            if received == 0 {
                defer { av_frame_unref(frame) }
                consecutiveErrors = 0
                do {
                    return try convert(frame)
                } catch {
                    finished = true
                    throw error
                }
            } else if received == FFmpeg.eof {
                finished = true
                if framesReturned == 0 {
                    let reason = lastError.map { " (\($0))" } ?? ""
                    throw ImageError(.video, "The video '\(path)' contains no decodable frames\(reason); the file may be corrupt or truncated.")
                }
                return nil
            } else if received == FFmpeg.eagain {
                if draining {
                    // A drained decoder answers EOF, not EAGAIN; stop rather than loop.
                    finished = true
                    return nil
                }
                try feed(codec)
            } else {
                try recordError(received, "decoding a frame")
            }
        }
    }

    /// Calls `body` with every remaining frame, in order.
    public func forEachFrame(_ body: (VideoFrame) throws -> Void) throws {
        while let frame = try nextFrame() { try body(frame) }
    }

    /// Reads the remaining frames (at most `limit`) into an array.
    public func readFrames(limit: Int = .max) throws -> [VideoFrame] {
        var frames: [VideoFrame] = []
        while frames.count < limit, let frame = try nextFrame() { frames.append(frame) }
        return frames
    }

    /// The remaining frames as a `Sequence` (`for frame in reader.frames { ... }`). Iteration ends at
    /// the end of the video or at the first error, which is then in ``iterationError``; use
    /// ``nextFrame()`` or ``forEachFrame(_:)`` to have errors thrown instead.
    public var frames: Frames { Frames(reader: self) }

    /// The error that ended iteration over ``frames``, if one did.
    public private(set) var iterationError: ImageError?

    /// A sequence over a reader's remaining frames (see ``VideoReader/frames``).
    public struct Frames: Sequence, IteratorProtocol {
        let reader: VideoReader
        /// The next frame, or nil at the end or at the first error (then in ``VideoReader/iterationError``).
        public mutating func next() -> VideoFrame? {
            do {
                return try reader.nextFrame()
            } catch let error as ImageError {
                reader.iterationError = error
                return nil
            } catch {
                reader.iterationError = ImageError(.video, "\(error)")
                return nil
            }
        }
    }

    // MARK: Decoding

    /// Sends the next packet of the video stream to the decoder, or starts draining at the end of
    /// the file.
    private func feed(_ codec: UnsafeMutablePointer<AVCodecContext>) throws {
        guard let format = formatContext, let packet else { return }
        while true {
            if !packetPending {
                let read = av_read_frame(format, packet)
                if read < 0 {
                    if read != FFmpeg.eof { lastError = "reading the file: \(FFmpeg.describe(read))" }
                    // End of input: flush the decoder so the frames it holds back come out.
                    draining = true
                    _ = avcodec_send_packet(codec, nil)
                    return
                }
                guard packet.pointee.stream_index == streamIndex else {
                    av_packet_unref(packet)
                    continue
                }
            }
            let sent = avcodec_send_packet(codec, packet)
            if sent == FFmpeg.eagain {
                // The decoder has frames to give first; keep the packet for the next call.
                packetPending = true
                return
            }
            packetPending = false
            av_packet_unref(packet)
            if sent == 0 { return }
            if sent == FFmpeg.eof {
                draining = true
                return
            }
            try recordError(sent, "decoding a packet")  // a corrupt packet: skip it
        }
    }

    private func recordError(_ code: Int32, _ what: String) throws {
        consecutiveErrors += 1
        lastError = "\(what): \(FFmpeg.describe(code))"
        if consecutiveErrors > VideoReader.maximumConsecutiveErrors {
            finished = true
            throw ImageError(.video,
                "The video '\(path)' cannot be decoded: \(consecutiveErrors) errors in a row, the last \(what) (\(FFmpeg.describe(code))). The file is corrupt or uses an unsupported variant of \(codecName).")
        }
    }

    /// Converts a decoded frame to an rgb8 ``VideoFrame``.
    private func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws -> VideoFrame {
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        try limits.check(width: width, height: height, what: "Frame \(framesReturned) of the video '\(path)'")
        let sourceFormat = frame.pointee.format
        guard sourceFormat >= 0 else {
            throw ImageError(.video, "Frame \(framesReturned) of the video '\(path)' has no pixel format; the file is corrupt.")
        }
        let key = [frame.pointee.width, frame.pointee.height, sourceFormat, Int32(frame.pointee.colorspace.rawValue), Int32(frame.pointee.color_range.rawValue)]
        if key != scalerKey {
            scaler = sws_getCachedContext(scaler, frame.pointee.width, frame.pointee.height, AVPixelFormat(rawValue: sourceFormat),
                                          frame.pointee.width, frame.pointee.height, AV_PIX_FMT_RGB24, SWS_BILINEAR, nil, nil, nil)
            guard let scaler else {
                scalerKey = []
                let name = FFmpeg.string(av_get_pix_fmt_name(AVPixelFormat(rawValue: sourceFormat)))
                throw ImageError(.video, "The video '\(path)' uses pixel format '\(name)', which cannot be converted to RGB.")
            }
            // YUV → RGB with the matrix and range the stream declares (BT.601 video range if unspecified).
            let space = frame.pointee.colorspace
            let matrix: Int32 = space == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : space == AVCOL_SPC_BT2020_NCL || space == AVCOL_SPC_BT2020_CL ? SWS_CS_BT2020
                : space == AVCOL_SPC_FCC ? SWS_CS_FCC : space == AVCOL_SPC_SMPTE240M ? SWS_CS_SMPTE240M : SWS_CS_ITU601
            let fullRange: Int32 = frame.pointee.color_range == AVCOL_RANGE_JPEG ? 1 : 0
            if let coefficients = sws_getCoefficients(matrix) {
                _ = sws_setColorspaceDetails(scaler, coefficients, fullRange, sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16)
            }
            scalerKey = key
        }
        guard let scaler else { throw ImageError(.video, "The video '\(path)' could not be converted to RGB.") }
        let pixels = try PixelBuffer(width: width, height: height, format: .rgb8, limits: limits)
        let stride = Int32(pixels.planes[0].bytesPerRow)
        let rows = pixels.withUnsafeMutableBytes { raw -> Int32 in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return -1 }
            return edgevision_sws_scale_from_frame(scaler, frame, base, stride)
        }
        guard rows == frame.pointee.height else {
            throw ImageError(.video, "Frame \(framesReturned) of the video '\(path)' could not be converted to RGB (\(rows < 0 ? FFmpeg.describe(rows) : "\(rows) of \(height) rows")).")
        }
        let timestamp = nextTimestamp(frame)
        let result = VideoFrame(pixels: pixels, timestampMilliseconds: timestamp, index: framesReturned)
        framesReturned += 1
        return result
    }

    /// Milliseconds from the stream start: the frame's best-effort presentation time × time base,
    /// or index × 1000 / frame rate when the frame has none; forced to increase strictly.
    private func nextTimestamp(_ frame: UnsafeMutablePointer<AVFrame>) -> Int {
        var pts = frame.pointee.best_effort_timestamp
        if pts == FFmpeg.noPTS { pts = frame.pointee.pts }
        var milliseconds: Int
        if pts != FFmpeg.noPTS, let base = FFmpeg.positive(timeBase) {
            let start = startTime == FFmpeg.noPTS ? 0 : startTime
            let value = (Double(pts) - Double(start)) * base * 1000
            milliseconds = value.isFinite && abs(value) < 1e15 ? Int(value.rounded()) : 0
        } else {
            let rate = frameRate > 0 ? frameRate : 30
            milliseconds = Int((Double(framesReturned) * 1000 / rate).rounded())
        }
        if lastTimestamp != Int.min, milliseconds <= lastTimestamp { milliseconds = lastTimestamp + 1 }
        lastTimestamp = milliseconds
        return milliseconds
    }
}
