// Shared by the C harnesses (scripts/bench/isa_ab.c, scripts/kernel-ab/kernel_ab.c): the geometry of
// a depthwise K x K layer with depth multiplier 1, stride S, dilation D and SAME padding.
#ifndef EDGEVISION_BENCH_SAME_PADDING_H
#define EDGEVISION_BENCH_SAME_PADDING_H

#include "ckernels.h"

static inline ck_conv_geometry same_depthwise_geometry(int32_t H, int32_t W, int32_t C, int32_t K, int32_t S, int32_t D) {
    const int32_t OH = (H + S - 1) / S, OW = (W + S - 1) / S, span = (K - 1) * D + 1;
    const int32_t ph = ((OH - 1) * S + span - H) / 2, pw = ((OW - 1) * S + span - W) / 2;
    const ck_conv_geometry g = {H, W, C, OH, OW, C, K, K, S, S, D, D, ph > 0 ? ph : 0, pw > 0 ? pw : 0};
    return g;
}

#endif
