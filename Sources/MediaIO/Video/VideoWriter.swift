import CFFmpeg
import Foundation

/// Writes frames of a fixed size to an MP4 file: H.264 (libx264) when the system's FFmpeg has it,
/// else MPEG-4 part 2. For annotated result videos.
///
/// ```swift
/// let writer = try VideoWriter(path: "out.mp4", width: 960, height: 540, frameRate: 30)
/// for frame in frames { try writer.write(frame.pixels) }
/// try writer.finish()
/// ```
///
/// Frames are rgb8 (rgba8, bgra8, gray8 and YUV buffers are converted). Width and height must be
/// even (4:2:0 video). Call ``finish()`` to flush the encoder and complete the file; a writer
/// destroyed without it finishes on a best-effort basis. Used from one thread at a time.
public final class VideoWriter {
    /// The file being written.
    public let path: String
    /// Frame width in pixels (even).
    public let width: Int
    /// Frame height in pixels (even).
    public let height: Int
    /// Frames per second of the written video.
    public let frameRate: Double
    /// The encoder in use: "libx264" or "mpeg4".
    public let codecName: String
    /// Frames written so far.
    public private(set) var frameCount = 0

    private var formatContext: UnsafeMutablePointer<AVFormatContext>?
    private var codecContext: UnsafeMutablePointer<AVCodecContext>?
    private var stream: UnsafeMutablePointer<AVStream>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var scaler: OpaquePointer?
    private var scalerFormat: PixelFormat?
    private var finished = false
    private var failed: ImageError?

    /// Creates (or replaces) the MP4 file at `path` for `width` × `height` frames at `frameRate`
    /// frames per second. `quality` is 0 (smallest) ... 100 (best); 75 is a good default.
    public init(path: String, width: Int, height: Int, frameRate: Double, quality: Int = 75, limits: ImageLimits = .default) throws {
        _ = FFmpeg.quietLogging
        try limits.check(width: width, height: height, what: "The video frame size")
        guard width % 2 == 0, height % 2 == 0 else {
            throw ImageError(.invalidArgument, "Video frames must have an even width and height (4:2:0 chroma), got \(width)×\(height); crop or pad the frames by one pixel.")
        }
        guard frameRate.isFinite, frameRate > 0, frameRate <= 1000 else {
            throw ImageError(.invalidArgument, "The frame rate must be between 0 and 1000 frames per second, got \(frameRate).")
        }
        guard (0...100).contains(quality) else {
            throw ImageError(.invalidArgument, "Video quality must be 0...100, got \(quality).")
        }
        func failure(_ what: String, code: ImageError.Code = .encode) -> ImageError {
            ImageError(code, "Cannot write video '\(path)': \(what)")
        }
        let url = FFmpeg.fileURL(path)
        var format: UnsafeMutablePointer<AVFormatContext>?
        var codec: UnsafeMutablePointer<AVCodecContext>?
        var succeeded = false
        defer {
            if !succeeded {
                avcodec_free_context(&codec)
                if let format {
                    if format.pointee.pb != nil { avio_closep(&format.pointee.pb) }
                    avformat_free_context(format)
                }
            }
        }
        let allocated = avformat_alloc_output_context2(&format, nil, "mp4", url)
        guard allocated >= 0, let format else { throw failure("this FFmpeg build cannot write MP4 (\(FFmpeg.describe(allocated))).") }
        guard let encoder = avcodec_find_encoder_by_name("libx264") ?? avcodec_find_encoder(AV_CODEC_ID_MPEG4) else {
            throw failure("this FFmpeg build has neither the libx264 nor the mpeg4 encoder.")
        }
        let isH264 = encoder.pointee.id == AV_CODEC_ID_H264
        guard let stream = avformat_new_stream(format, nil) else { throw failure("FFmpeg could not add a stream (out of memory).") }
        codec = avcodec_alloc_context3(encoder)
        guard let codec else { throw failure("FFmpeg could not allocate an encoder (out of memory).") }
        let rate = av_d2q(frameRate, 100_000)
        codec.pointee.width = Int32(width)
        codec.pointee.height = Int32(height)
        codec.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        codec.pointee.time_base = AVRational(num: rate.den, den: rate.num)
        codec.pointee.framerate = rate
        codec.pointee.gop_size = Int32(max(1, min(300, Int((frameRate * 2).rounded()))))
        // What swscale produces from RGB by default: BT.601, video range.
        codec.pointee.colorspace = AVCOL_SPC_SMPTE170M
        codec.pointee.color_range = AVCOL_RANGE_MPEG
        if isH264 {
            // Constant rate factor: quality 0 → CRF 51 (worst), 75 → 20, 100 → 10 (visually lossless).
            let crf = 10 + (100 - quality) * 41 / 100
            _ = av_opt_set(codec.pointee.priv_data, "preset", "veryfast", 0)
            _ = av_opt_set(codec.pointee.priv_data, "crf", "\(max(0, min(51, crf)))", 0)
        } else {
            // MPEG-4 part 2: bits per pixel per second grow with quality.
            let bitsPerPixel = 0.05 + Double(quality) / 100 * 0.45
            codec.pointee.bit_rate = Int64(min(Double(Int64.max / 2), Double(width * height) * frameRate * bitsPerPixel))
        }
        if format.pointee.oformat.pointee.flags & edgevision_avfmt_globalheader() != 0 {
            codec.pointee.flags |= edgevision_codec_flag_global_header()
        }
        let opened = avcodec_open2(codec, encoder, nil)
        guard opened >= 0 else { throw failure("the '\(FFmpeg.string(encoder.pointee.name))' encoder cannot be opened (\(FFmpeg.describe(opened))).") }
        let copied = avcodec_parameters_from_context(stream.pointee.codecpar, codec)
        guard copied >= 0 else { throw failure("the stream parameters cannot be set (\(FFmpeg.describe(copied))).") }
        stream.pointee.time_base = codec.pointee.time_base
        stream.pointee.avg_frame_rate = rate
        let file = avio_open(&format.pointee.pb, url, edgevision_avio_flag_write())
        guard file >= 0 else { throw failure("the file cannot be created (\(FFmpeg.describe(file))). Check that the directory exists and is writable.", code: .io) }
        let header = avformat_write_header(format, nil)
        guard header >= 0 else { throw failure("the MP4 header cannot be written (\(FFmpeg.describe(header))).") }
        guard let frame = av_frame_alloc(), let packet = av_packet_alloc() else { throw failure("FFmpeg could not allocate a frame (out of memory).") }
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        var frameToFree: UnsafeMutablePointer<AVFrame>? = frame
        var packetToFree: UnsafeMutablePointer<AVPacket>? = packet
        let buffers = av_frame_get_buffer(frame, 0)
        guard buffers >= 0 else {
            av_frame_free(&frameToFree)
            av_packet_free(&packetToFree)
            throw failure("FFmpeg could not allocate frame buffers (\(FFmpeg.describe(buffers))).")
        }

        self.path = path
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.codecName = FFmpeg.string(encoder.pointee.name)
        self.formatContext = format
        self.codecContext = codec
        self.stream = stream
        self.frame = frame
        self.packet = packet
        succeeded = true
    }

    deinit {
        if !finished, failed == nil { try? finish() }
        sws_freeContext(scaler)
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codecContext)
        if let format = formatContext {
            if format.pointee.pb != nil { avio_closep(&format.pointee.pb) }
            avformat_free_context(format)
        }
    }

    /// Encodes one frame of the writer's size.
    public func write(_ pixels: PixelBuffer) throws {
        try checkUsable()
        guard pixels.width == width, pixels.height == height else {
            throw ImageError(.invalidArgument, "Video '\(path)' has \(width)×\(height) frames; got a \(pixels.width)×\(pixels.height) buffer. Resize it first.")
        }
        guard let codec = codecContext, let frame else { return }
        let source = pixels.format.isYUV ? try pixels.converted(to: .rgb8) : pixels
        let sourceFormat: AVPixelFormat
        switch source.format {
        case .rgba8: sourceFormat = AV_PIX_FMT_RGBA
        case .bgra8: sourceFormat = AV_PIX_FMT_BGRA
        case .gray8: sourceFormat = AV_PIX_FMT_GRAY8
        default: sourceFormat = AV_PIX_FMT_RGB24
        }
        if scalerFormat != source.format || scaler == nil {
            scaler = sws_getCachedContext(scaler, Int32(width), Int32(height), sourceFormat, Int32(width), Int32(height),
                                          AV_PIX_FMT_YUV420P, SWS_BILINEAR, nil, nil, nil)
            scalerFormat = source.format
        }
        guard let scaler else { throw fail("swscale cannot convert \(source.format.rawValue) to YUV 4:2:0.") }
        let writable = av_frame_make_writable(frame)
        guard writable >= 0 else { throw fail("the frame buffer is not writable (\(FFmpeg.describe(writable))).") }
        let stride = Int32(source.planes[0].bytesPerRow)
        let rows = source.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return -1 }
            return edgevision_sws_scale_into_frame(scaler, base, stride, Int32(height), frame)
        }
        guard rows > 0 else { throw fail("converting frame \(frameCount) to YUV failed.") }
        frame.pointee.pts = Int64(frameCount)
        let sent = avcodec_send_frame(codec, frame)
        guard sent >= 0 else { throw fail("encoding frame \(frameCount) failed (\(FFmpeg.describe(sent))).") }
        frameCount += 1
        try writePackets()
    }

    /// Flushes the encoder and completes the file. Further writes throw; calling it again does nothing.
    public func finish() throws {
        if finished { return }
        try checkUsable()
        guard let codec = codecContext, let format = formatContext else { return }
        let sent = avcodec_send_frame(codec, nil)
        guard sent >= 0 || sent == FFmpeg.eof else { throw fail("flushing the encoder failed (\(FFmpeg.describe(sent))).") }
        try writePackets()
        let trailer = av_write_trailer(format)
        guard trailer >= 0 else { throw fail("the MP4 index cannot be written (\(FFmpeg.describe(trailer))).") }
        let closed = avio_closep(&format.pointee.pb)
        guard closed >= 0 else { throw fail("closing the file failed (\(FFmpeg.describe(closed))).") }
        finished = true
    }

    private func checkUsable() throws {
        if let failed { throw failed }
        if finished { throw ImageError(.invalidArgument, "Video '\(path)' is already finished; create a new VideoWriter to write more.") }
    }

    /// Records a failure: the writer is unusable afterwards.
    private func fail(_ what: String) -> ImageError {
        let error = ImageError(.encode, "Cannot write video '\(path)': \(what)")
        failed = error
        return error
    }

    /// Moves every packet the encoder has ready into the file.
    private func writePackets() throws {
        guard let codec = codecContext, let format = formatContext, let stream, let packet else { return }
        while true {
            let received = avcodec_receive_packet(codec, packet)
            if received == FFmpeg.eagain || received == FFmpeg.eof { return }
            guard received >= 0 else { throw fail("encoding failed (\(FFmpeg.describe(received))).") }
            av_packet_rescale_ts(packet, codec.pointee.time_base, stream.pointee.time_base)
            packet.pointee.stream_index = stream.pointee.index
            let written = av_interleaved_write_frame(format, packet)  // takes the packet's data
            guard written >= 0 else { throw fail("writing a packet failed (\(FFmpeg.describe(written))).") }
        }
    }
}
