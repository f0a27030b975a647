#ifndef EDGEVISION_CFFMPEG_SHIM_H
#define EDGEVISION_CFFMPEG_SHIM_H
#include <errno.h>
#include <stdint.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/log.h>

/// Macros Swift cannot import (function-like or built from FFERRTAG / casts), as functions.
static inline int edgevision_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int edgevision_averror_eof(void) { return AVERROR_EOF; }
static inline int edgevision_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int64_t edgevision_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int edgevision_av_log_fatal(void) { return AV_LOG_FATAL; }
static inline int edgevision_avfmt_globalheader(void) { return AVFMT_GLOBALHEADER; }
static inline int edgevision_avfmt_nofile(void) { return AVFMT_NOFILE; }
static inline int edgevision_codec_flag_global_header(void) { return AV_CODEC_FLAG_GLOBAL_HEADER; }
static inline int edgevision_avio_flag_write(void) { return AVIO_FLAG_WRITE; }
static inline int edgevision_av_time_base(void) { return AV_TIME_BASE; }

/// Converts a whole decoded frame into one packed destination plane (e.g. RGB24); the frame's
/// data/linesize arrays are passed to sws_scale here because Swift sees them as tuples.
static inline int edgevision_sws_scale_from_frame(struct SwsContext *context, const AVFrame *source,
                                                  uint8_t *destination, int destinationStride) {
    uint8_t *planes[4] = { destination, NULL, NULL, NULL };
    int strides[4] = { destinationStride, 0, 0, 0 };
    return sws_scale(context, (const uint8_t *const *)source->data, source->linesize, 0, source->height, planes, strides);
}

/// Converts one packed source plane (e.g. RGB24) of `height` rows into a frame's planes.
static inline int edgevision_sws_scale_into_frame(struct SwsContext *context, const uint8_t *source, int sourceStride,
                                                  int height, AVFrame *destination) {
    const uint8_t *planes[4] = { source, NULL, NULL, NULL };
    int strides[4] = { sourceStride, 0, 0, 0 };
    return sws_scale(context, planes, strides, 0, height, destination->data, destination->linesize);
}
#endif
