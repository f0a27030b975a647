// Shared by the C harnesses (scripts/bench/isa_ab.c, scripts/kernel-ab/kernel_ab.c): the geometry
// and the seeded inputs of a float depthwise K x K layer with depth multiplier 1, stride S,
// dilation D and SAME padding.
#ifndef EDGEVISION_BENCH_DEPTHWISE_SETUP_H
#define EDGEVISION_BENCH_DEPTHWISE_SETUP_H

#include <stdlib.h>

#include "ckernels.h"

static inline ck_conv_geometry same_depthwise_geometry(int32_t H, int32_t W, int32_t C, int32_t K, int32_t S, int32_t D) {
    const int32_t OH = (H + S - 1) / S, OW = (W + S - 1) / S, span = (K - 1) * D + 1;
    const int32_t ph = ((OH - 1) * S + span - H) / 2, pw = ((OW - 1) * S + span - W) / 2;
    const ck_conv_geometry g = {H, W, C, OH, OW, C, K, K, S, S, D, D, ph > 0 ? ph : 0, pw > 0 ? pw : 0};
    return g;
}

/// Fills the layer's input (in_h * in_w * C floats in [-2, 2]) and filter (K * K * C in [-1, 1])
/// from seed 3, the same values in every harness.
static inline void fill_depthwise_inputs(const ck_conv_geometry *g, float *x, float *w) {
    srand(3);
    for (size_t i = 0; i < (size_t)g->in_h * g->in_w * g->in_c; i++) x[i] = (float)(rand() % 2001 - 1000) / 500.0f;
    for (int32_t i = 0; i < g->k_h * g->k_w * g->in_c; i++) w[i] = (float)(rand() % 2001 - 1000) / 1000.0f;
}

#endif
