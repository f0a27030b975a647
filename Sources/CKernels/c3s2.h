// CKernels internal: the AVX2 first-layer kernel (3 input channels, stride 2 along x) shared by the
// float (conv_f32.c) and quantized (conv_q8.c) entry points. Not part of the public headers.
#ifndef EDGEVISION_CKERNELS_C3S2_H
#define EDGEVISION_CKERNELS_C3S2_H

#include <stddef.h>
#include <stdint.h>

#include "ckernels.h"

enum { CK_C3S2_FLOAT = 0, CK_C3S2_UINT8 = 1, CK_C3S2_INT8 = 2 };

/// Values [pixel][3 channels] (or a filter [out_c][k_h][k_w][3]) of one kind; bytes read as value -
/// zero_point.
typedef struct {
    const void *row;
    int32_t kind;
    int32_t zero_point;
} c3s2_source;

/// Receives the unclamped sums of n (at most 16) pixels (pixel i's 8 channels at px[8i], output
/// channels [oc0, oc0 + 8)), the first of them output pixel `pixel` of the image.
typedef void (*c3s2_epilogue)(const void *context, const float *px, int32_t n, size_t pixel, int32_t oc0);

/// Output rows [row_begin, row_end) of a layer ck_conv_c3s2_supported accepts, with `bias` (may be
/// NULL) as the sums' start: stored to `output` clamped to [lo, hi] (epilogue NULL), else handed to
/// `epilogue` 8 channels of up to 16 pixels at a time; weights packed by ck_c3s2_pack_weights in
/// blocks of 4 channels either way.
/// Needs AVX2 + FMA.
void ck_c3s2_rows_avx2(const ck_conv_geometry *g, const c3s2_source *input, const float *wk, const float *bias, float lo, float hi,
                       float *output, c3s2_epilogue epilogue, const void *context, int32_t row_begin, int32_t row_end);

/// The filter as [out_c / 4][k_h][k_w * 3][4] floats (out_c * k_h * k_w * 3; 4 divides out_c).
void ck_c3s2_pack_weights(const ck_conv_geometry *g, const c3s2_source *filter, float *wk);

#endif
