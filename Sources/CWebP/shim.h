#ifndef EDGEVISION_CWEBP_SHIM_H
#define EDGEVISION_CWEBP_SHIM_H
#include <webp/decode.h>
#include <webp/encode.h>

/// WebPGetInfo and WebPDecodeRGBAInto are plain functions; WebPInitDecoderConfig is an inline
/// wrapper around a versioned call, re-exported here for Swift.
static inline int edgevision_webp_get_features(const uint8_t* data, size_t size, WebPBitstreamFeatures* features) {
    return WebPGetFeatures(data, size, features) == VP8_STATUS_OK;
}
#endif
