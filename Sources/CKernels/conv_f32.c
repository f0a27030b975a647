// float32 convolution (implicit GEMM) and depthwise convolution; see ckernels.h.
#include "ckernels.h"
#include "c3s2.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CK_X86 1
#endif

#define CK_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define CK_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))
#define CK_INLINE static inline __attribute__((always_inline))
/// Fully unrolls a loop over compile-time bounds, so its vectors stay in registers.
#define CK_UNROLL _Pragma("clang loop unroll(full)")

/// Most taps (k_h * k_w) a tile's pointer table holds; the caller uses the reference kernel beyond.
#define CK_MAX_TAPS 256
#define CK_MAX_MR 12

static inline int32_t ck_min(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t ck_max(int32_t a, int32_t b) { return a > b ? a : b; }

/// TFLite's activation clamp: max(lo, v) then min(hi, v), a NaN v passing through.
static inline float clamp_tflite_f32(float v, float lo, float hi) {
    const float a = v < lo ? lo : v;
    return hi < a ? hi : a;
}

/// Floats of the packed blocks, before the trailer.
static size_t packed_blocks_count(const ck_conv_geometry *g) {
    size_t blocks = ((size_t)g->out_c + CK_F32_NR - 1) / CK_F32_NR;
    size_t taps = (size_t)g->k_h * (size_t)g->k_w;
    return blocks * CK_F32_NR * (1 + taps * (size_t)g->in_c);
}

size_t ck_conv_f32_packed_count(const ck_conv_geometry *g) { return packed_blocks_count(g) + CK_F32_NR; }

/// Whether the tiles may skip input channels that are ±0 in all of a tile's pixels and get the
/// same bits (nonzero_channels_avx2): every weight finite (0 · inf would be NaN) and no bias -0.0
/// (the only sum that adding +0 can change: -0 + +0 = +0). Read from the packed trailer.
static int packed_sparse_ok(const ck_conv_geometry *g, const float *packed) { return packed[packed_blocks_count(g)] != 0.0f; }

void ck_conv_f32_pack(const ck_conv_geometry *g, const float *filter, const float *bias, float *packed) {
    const int32_t taps = g->k_h * g->k_w, k = g->in_c;
    const int32_t blocks = (g->out_c + CK_F32_NR - 1) / CK_F32_NR;
    int sparse_ok = 1;
    const size_t weights = (size_t)g->out_c * (size_t)taps * (size_t)k;
    for (size_t i = 0; i < weights; i++) sparse_ok &= filter[i] - filter[i] == 0.0f;  // finite (NaN and ±inf give NaN)
    for (int32_t j = 0; bias && j < g->out_c; j++) sparse_ok &= !(bias[j] == 0.0f && __builtin_signbit(bias[j]));
    float *trailer = packed + packed_blocks_count(g);
    for (int32_t j = 0; j < CK_F32_NR; j++) trailer[j] = 0.0f;
    trailer[0] = sparse_ok ? 1.0f : 0.0f;
    for (int32_t b = 0; b < blocks; b++) {
        float *dst = packed + (size_t)b * CK_F32_NR * (1 + (size_t)taps * k);
        for (int32_t j = 0; j < CK_F32_NR; j++) {
            int32_t oc = b * CK_F32_NR + j;
            dst[j] = (oc < g->out_c && bias) ? bias[oc] : 0.0f;
        }
        dst += CK_F32_NR;
        for (int32_t t = 0; t < taps; t++) {
            for (int32_t i = 0; i < k; i++) {
                for (int32_t j = 0; j < CK_F32_NR; j++) {
                    int32_t oc = b * CK_F32_NR + j;
                    *dst++ = oc < g->out_c ? filter[((size_t)oc * taps + t) * k + i] : 0.0f;
                }
            }
        }
    }
}

/// Fills ptrs[t * mr_cap + m] with the input pixel tap t of output pixel (p + m) reads, or `zeros`
/// outside the image; rows past `mr` repeat row 0 (computed, never stored). `oy`/`ox` are the
/// coordinates of output pixel p (kept by the caller, so no division per tile).
static void tile_pointers(const ck_conv_geometry *g, const float *input, const float *zeros, int32_t oy, int32_t ox,
                          int32_t mr, int32_t mr_cap, const float **ptrs) {
    int32_t iy0[CK_MAX_MR], ix0[CK_MAX_MR];
    for (int32_t m = 0; m < mr_cap; m++) {
        if (m < mr) {
            iy0[m] = oy * g->stride_h - g->pad_top;
            ix0[m] = ox * g->stride_w - g->pad_left;
            if (++ox == g->out_w) { ox = 0; oy++; }
        } else {
            iy0[m] = iy0[0];
            ix0[m] = ix0[0];
        }
    }
    int32_t t = 0;
    for (int32_t ky = 0; ky < g->k_h; ky++) {
        for (int32_t kx = 0; kx < g->k_w; kx++, t++) {
            for (int32_t m = 0; m < mr_cap; m++) {
                int32_t iy = iy0[m] + ky * g->dil_h, ix = ix0[m] + kx * g->dil_w;
                ptrs[t * mr_cap + m] = (iy >= 0 && iy < g->in_h && ix >= 0 && ix < g->in_w)
                    ? input + ((size_t)iy * g->in_w + ix) * g->in_c : zeros;
            }
        }
    }
}

/// Most floats of one output pixel's zero-padded patch (k_h rows of k_w * in_c) in row-tap mode.
#define CK_ROW_PATCH 256

/// Whether the convolution runs in row-tap mode (see ckernels.h): with few input channels and dilation 1 along x
/// (first layers: 3 channels), the k_w taps of a filter row read k_w * in_c consecutive input
/// floats (NHWC), so each filter row is one tap of k_w * in_c values instead of k_w taps of in_c.
/// The packed weights are the same ([tap][channel] = [ky][kx][c]), and so is the order of every
/// output's sum, so results are bitwise those of the per-(ky, kx) taps; the tile loops just run
/// longer reductions over fewer pointers.
int32_t ck_conv_f32_row_taps(const ck_conv_geometry *g) {
    return g->in_c < 8 && g->k_w > 1 && g->dil_w == 1 && g->k_h * g->k_w * g->in_c <= CK_ROW_PATCH;
}

/// Row-tap pointers: ptrs[ky * mr_cap + m] is the input run filter row ky of output pixel (p + m)
/// reads, `zeros` (k_w * in_c zero floats) for a row outside the image, or that pixel's slot of
/// `patch` (mr_cap * CK_ROW_PATCH floats) with zeros for the columns outside the image.
static void tile_row_pointers(const ck_conv_geometry *g, const float *input, const float *zeros, int32_t oy, int32_t ox,
                              int32_t mr, int32_t mr_cap, const float **ptrs, float *patch) {
    const int32_t run = g->k_w * g->in_c;
    const int32_t ix_first = ox * g->stride_w - g->pad_left, ix_last = (ox + mr - 1) * g->stride_w - g->pad_left;
    if (ox + mr <= g->out_w && ix_first >= 0 && ix_last + g->k_w <= g->in_w) {
        // The tile's pixels lie in one output row, away from the left and right edges: each filter
        // row's runs are stride_w * in_c floats apart.
        const size_t step = (size_t)g->stride_w * g->in_c;
        const int32_t iy0 = oy * g->stride_h - g->pad_top;
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            const int32_t iy = iy0 + ky * g->dil_h;
            const float **slot = &ptrs[ky * mr_cap];
            if (iy < 0 || iy >= g->in_h) {
                for (int32_t m = 0; m < mr_cap; m++) slot[m] = zeros;
            } else {
                const float *base = input + ((size_t)iy * g->in_w + ix_first) * g->in_c;
                for (int32_t m = 0; m < mr_cap; m++) slot[m] = base + (size_t)(m < mr ? m : mr - 1) * step;
            }
        }
        return;
    }
    for (int32_t m = 0; m < mr_cap; m++) {
        const int32_t iy0 = oy * g->stride_h - g->pad_top, ix0 = ox * g->stride_w - g->pad_left;
        const int inside = ix0 >= 0 && ix0 + g->k_w <= g->in_w;
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            const int32_t iy = iy0 + ky * g->dil_h;
            const float **slot = &ptrs[ky * mr_cap + m];
            if (iy < 0 || iy >= g->in_h) {
                *slot = zeros;
            } else if (inside) {
                *slot = input + ((size_t)iy * g->in_w + ix0) * g->in_c;
            } else {
                float *dst = patch + (size_t)m * CK_ROW_PATCH + (size_t)ky * run;
                for (int32_t kx = 0; kx < g->k_w; kx++) {
                    const int32_t ix = ix0 + kx;
                    if (ix >= 0 && ix < g->in_w)
                        memcpy(dst + kx * g->in_c, input + ((size_t)iy * g->in_w + ix) * g->in_c, (size_t)g->in_c * sizeof(float));
                    else
                        memset(dst + kx * g->in_c, 0, (size_t)g->in_c * sizeof(float));
                }
                *slot = dst;
            }
        }
        // Rows past mr repeat the last real pixel (computed, never stored).
        if (m + 1 < mr && ++ox == g->out_w) { ox = 0; oy++; }
    }
}

void ck_conv_offsets(const ck_conv_geometry *g, int32_t *offsets) {
    const int32_t pixels = g->out_h * g->out_w;
    for (int32_t p = 0; p < pixels; p++) {
        const int32_t oy = p / g->out_w, ox = p - oy * g->out_w;
        const int32_t iy0 = oy * g->stride_h - g->pad_top, ix0 = ox * g->stride_w - g->pad_left;
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            for (int32_t kx = 0; kx < g->k_w; kx++) {
                const int32_t iy = iy0 + ky * g->dil_h, ix = ix0 + kx * g->dil_w;
                *offsets++ = (iy >= 0 && iy < g->in_h && ix >= 0 && ix < g->in_w) ? (iy * g->in_w + ix) * g->in_c : -1;
            }
        }
    }
}

// ---- portable: 4 x 16 tiles, plain C (the compiler vectorizes the 16-wide loops) ----

static void tile_portable(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k,
                          const float *w, float *c, int32_t ldc, float lo, float hi) {
    float acc[4][CK_F32_NR];
    for (int32_t m = 0; m < 4; m++)
        for (int32_t j = 0; j < CK_F32_NR; j++) acc[m][j] = w[j];
    w += CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *a0 = ptrs[t * 4], *a1 = ptrs[t * 4 + 1], *a2 = ptrs[t * 4 + 2], *a3 = ptrs[t * 4 + 3];
        for (int32_t i = 0; i < k; i++) {
            const float v0 = a0[i], v1 = a1[i], v2 = a2[i], v3 = a3[i];
            for (int32_t j = 0; j < CK_F32_NR; j++) {
                acc[0][j] += v0 * w[j];
                acc[1][j] += v1 * w[j];
                acc[2][j] += v2 * w[j];
                acc[3][j] += v3 * w[j];
            }
            w += CK_F32_NR;
        }
    }
    for (int32_t m = 0; m < mr; m++) {
        for (int32_t j = 0; j < nr; j++) {
            float v = acc[m][j];
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            c[(size_t)m * ldc + j] = v;
        }
    }
}

#if CK_X86
// ---- AVX2 + FMA: 6 x 16 tiles (12 ymm accumulators) ----

/// The first nr (< 16) lanes of v0:v1 to dst with plain 8-, 4-, 2- and 1-float stores (a copy
/// through a stack buffer called memmove per row: 3% of BlazeFace, whose blocks end mid-vector).
CK_TARGET_AVX2 CK_INLINE
void store_partial_avx2(float *dst, __m256 v0, __m256 v1, int32_t nr) {
    __m256 v = v0;
    if (nr >= 8) {
        _mm256_storeu_ps(dst, v0);
        dst += 8;
        nr -= 8;
        v = v1;
    }
    __m128 h = _mm256_castps256_ps128(v);
    if (nr >= 4) {
        _mm_storeu_ps(dst, h);
        dst += 4;
        nr -= 4;
        h = _mm256_extractf128_ps(v, 1);
    }
    if (nr >= 2) {
        _mm_storel_pi((__m64 *)dst, h);
        dst += 2;
        nr -= 2;
        h = _mm_movehl_ps(h, h);
    }
    if (nr) _mm_store_ss(dst, h);
}

/// Keeps a row's broadcast after the previous row's FMAs: in the sparse tiles' loops clang hoisted
/// all six broadcasts above the FMAs, and six more live vectors spilled the accumulators.
#define CK_AFTER(x, y) __asm__ volatile("" : "+x"(x), "+x"(y)::"memory")
#define CK_ANYWHERE(x, y) ((void)0)

/// One input channel i of the 6 × 16 tile: the weights at wi, the six pixels' values at a0..a5 + i;
/// SEQ is CK_AFTER or CK_ANYWHERE.
#define CK_TILE6X16_STEP(i, wi, SEQ)                                                                                         \
    do {                                                                                                                     \
        const __m256 b0 = _mm256_loadu_ps(wi), b1 = _mm256_loadu_ps((wi) + 8);                                               \
        __m256 a;                                                                                                            \
        a = _mm256_broadcast_ss(a0 + (i)); c00 = _mm256_fmadd_ps(a, b0, c00); c01 = _mm256_fmadd_ps(a, b1, c01);             \
        SEQ(c00, c01);                                                                                                       \
        a = _mm256_broadcast_ss(a1 + (i)); c10 = _mm256_fmadd_ps(a, b0, c10); c11 = _mm256_fmadd_ps(a, b1, c11);             \
        SEQ(c10, c11);                                                                                                       \
        a = _mm256_broadcast_ss(a2 + (i)); c20 = _mm256_fmadd_ps(a, b0, c20); c21 = _mm256_fmadd_ps(a, b1, c21);             \
        SEQ(c20, c21);                                                                                                       \
        a = _mm256_broadcast_ss(a3 + (i)); c30 = _mm256_fmadd_ps(a, b0, c30); c31 = _mm256_fmadd_ps(a, b1, c31);             \
        SEQ(c30, c31);                                                                                                       \
        a = _mm256_broadcast_ss(a4 + (i)); c40 = _mm256_fmadd_ps(a, b0, c40); c41 = _mm256_fmadd_ps(a, b1, c41);             \
        SEQ(c40, c41);                                                                                                       \
        a = _mm256_broadcast_ss(a5 + (i)); c50 = _mm256_fmadd_ps(a, b0, c50); c51 = _mm256_fmadd_ps(a, b1, c51);             \
    } while (0)

CK_TARGET_AVX2 CK_INLINE
void tile_avx2_store(int32_t mr, int32_t nr, __m256 rows[6][2], float *c, int32_t ldc, float lo, float hi, const float *res,
                     size_t res_stride, int32_t res_n, float rlo, float rhi);

/// The 6 × 16 tile. With `res` (residual rows `res_stride` floats apart, this block's first channel
/// at res[0], `res_n` of its channels with a residual value: the rest add +0.0, as a channel PAD's
/// zeros), each row's clamped sums then get the residual and the ADD's clamp in registers: the
/// operations of residual_avx2's pass in the same order, so the same values, without reading the
/// stored tile back.
CK_TARGET_AVX2 CK_INLINE
void tile_avx2_core(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k, const float *w, float *c,
                    int32_t ldc, float lo, float hi, const float *res, size_t res_stride, int32_t res_n, float rlo, float rhi) {
    __m256 c00 = _mm256_loadu_ps(w), c01 = _mm256_loadu_ps(w + 8);
    __m256 c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01, c40 = c00, c41 = c01, c50 = c00, c51 = c01;
    w += CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *a0 = ptrs[t * 6], *a1 = ptrs[t * 6 + 1], *a2 = ptrs[t * 6 + 2];
        const float *a3 = ptrs[t * 6 + 3], *a4 = ptrs[t * 6 + 4], *a5 = ptrs[t * 6 + 5];
        for (int32_t i = 0; i < k; i++) {
            CK_TILE6X16_STEP(i, w, CK_ANYWHERE);
            w += CK_F32_NR;
        }
    }
    __m256 rows[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    tile_avx2_store(mr, nr, rows, c, ldc, lo, hi, res, res_stride, res_n, rlo, rhi);
}

/// tile_avx2_core of a direct 1 × 1 layer (one tap) whose reduction runs over the `n` input
/// channels `list` names, in increasing order, instead of all k: a tile's other channels are ±0
/// in all six pixels (see nonzero_channels_avx2), and their products could only add zeros.
CK_TARGET_AVX2 CK_INLINE
void tile_avx2_sparse_core(int32_t mr, int32_t nr, const float *const *ptrs, const int32_t *list, int32_t n, const float *w,
                           float *c, int32_t ldc, float lo, float hi, const float *res, size_t res_stride, int32_t res_n,
                           float rlo, float rhi) {
    __m256 c00 = _mm256_loadu_ps(w), c01 = _mm256_loadu_ps(w + 8);
    __m256 c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01, c40 = c00, c41 = c01, c50 = c00, c51 = c01;
    w += CK_F32_NR;
    const float *a0 = ptrs[0], *a1 = ptrs[1], *a2 = ptrs[2], *a3 = ptrs[3], *a4 = ptrs[4], *a5 = ptrs[5];
    for (int32_t j = 0; j < n; j++) {
        const size_t i = (size_t)list[j];
        CK_TILE6X16_STEP(i, w + i * CK_F32_NR, CK_AFTER);
    }
    __m256 rows[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    tile_avx2_store(mr, nr, rows, c, ldc, lo, hi, res, res_stride, res_n, rlo, rhi);
}

/// The 6 × 16 tile's epilogue: clamp, the residual (see tile_avx2_core), store.
CK_TARGET_AVX2 CK_INLINE
void tile_avx2_store(int32_t mr, int32_t nr, __m256 rows[6][2], float *c, int32_t ldc, float lo, float hi, const float *res,
                     size_t res_stride, int32_t res_n, float rlo, float rhi) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    __m256i rm0 = _mm256_setzero_si256(), rm1 = _mm256_setzero_si256();
    if (res) {
        const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), n = _mm256_set1_epi32(ck_min(res_n, nr));
        rm0 = _mm256_cmpgt_epi32(n, lanes);
        rm1 = _mm256_cmpgt_epi32(n, _mm256_add_epi32(lanes, _mm256_set1_epi32(8)));
    }
    for (int32_t m = 0; m < mr; m++) {
        __m256 v0 = _mm256_min_ps(_mm256_max_ps(rows[m][0], vlo), vhi);
        __m256 v1 = _mm256_min_ps(_mm256_max_ps(rows[m][1], vlo), vhi);
        if (res) {
            const float *r = res + (size_t)m * res_stride;
            const __m256 x0 = _mm256_maskload_ps(r, rm0), x1 = _mm256_maskload_ps(r + 8, rm1);
            const __m256 rlo_v = _mm256_set1_ps(rlo), rhi_v = _mm256_set1_ps(rhi);
            v0 = _mm256_min_ps(rhi_v, _mm256_max_ps(rlo_v, _mm256_add_ps(x0, v0)));
            v1 = _mm256_min_ps(rhi_v, _mm256_max_ps(rlo_v, _mm256_add_ps(x1, v1)));
        }
        float *dst = c + (size_t)m * ldc;
        if (nr == CK_F32_NR) {
            _mm256_storeu_ps(dst, v0);
            _mm256_storeu_ps(dst + 8, v1);
        } else {
            store_partial_avx2(dst, v0, v1, nr);
        }
    }
}

/// One input channel i of the 6 × 8 tile (as CK_TILE6X16_STEP).
#define CK_TILE6X8_STEP(i, wi)                                                                                               \
    do {                                                                                                                     \
        const __m256 b = _mm256_loadu_ps(wi);                                                                                \
        c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a0 + (i)), b, c0);                                                          \
        c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a1 + (i)), b, c1);                                                          \
        c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a2 + (i)), b, c2);                                                          \
        c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a3 + (i)), b, c3);                                                          \
        c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(a4 + (i)), b, c4);                                                          \
        c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(a5 + (i)), b, c5);                                                          \
    } while (0)

CK_TARGET_AVX2 CK_INLINE
void tile_avx2_narrow_store(int32_t mr, int32_t nr, const __m256 rows[6], float *c, int32_t ldc, float lo, float hi,
                            const float *res, size_t res_stride, int32_t res_n, float rlo, float rhi);

/// A block with at most 8 live channels as a 6 × 8 tile: half the FMAs of the 6 × 16 one, which
/// computed 8 dead columns (BlazeFace's 24-, 28-, 36-channel 1×1 layers end with such a block). Six
/// accumulator chains run at about 3/4 of the FMA rate, where the dead half wasted 1/2. Residual
/// as tile_avx2_core.
CK_TARGET_AVX2 CK_INLINE
void tile_avx2_narrow_core(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k, const float *w, float *c,
                           int32_t ldc, float lo, float hi, const float *res, size_t res_stride, int32_t res_n, float rlo,
                           float rhi) {
    __m256 c0 = _mm256_loadu_ps(w);
    __m256 c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    w += CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *a0 = ptrs[t * 6], *a1 = ptrs[t * 6 + 1], *a2 = ptrs[t * 6 + 2];
        const float *a3 = ptrs[t * 6 + 3], *a4 = ptrs[t * 6 + 4], *a5 = ptrs[t * 6 + 5];
        for (int32_t i = 0; i < k; i++) {
            CK_TILE6X8_STEP(i, w);
            w += CK_F32_NR;
        }
    }
    const __m256 rows[6] = {c0, c1, c2, c3, c4, c5};
    tile_avx2_narrow_store(mr, nr, rows, c, ldc, lo, hi, res, res_stride, res_n, rlo, rhi);
}

/// tile_avx2_narrow_core over the input channels of `list` (as tile_avx2_sparse_core).
CK_TARGET_AVX2 CK_INLINE
void tile_avx2_narrow_sparse_core(int32_t mr, int32_t nr, const float *const *ptrs, const int32_t *list, int32_t n,
                                  const float *w, float *c, int32_t ldc, float lo, float hi, const float *res, size_t res_stride,
                                  int32_t res_n, float rlo, float rhi) {
    __m256 c0 = _mm256_loadu_ps(w);
    __m256 c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    w += CK_F32_NR;
    const float *a0 = ptrs[0], *a1 = ptrs[1], *a2 = ptrs[2], *a3 = ptrs[3], *a4 = ptrs[4], *a5 = ptrs[5];
    for (int32_t j = 0; j < n; j++) {
        const size_t i = (size_t)list[j];
        CK_TILE6X8_STEP(i, w + i * CK_F32_NR);
    }
    const __m256 rows[6] = {c0, c1, c2, c3, c4, c5};
    tile_avx2_narrow_store(mr, nr, rows, c, ldc, lo, hi, res, res_stride, res_n, rlo, rhi);
}

/// The 6 × 8 tile's epilogue (as tile_avx2_store).
CK_TARGET_AVX2 CK_INLINE
void tile_avx2_narrow_store(int32_t mr, int32_t nr, const __m256 rows[6], float *c, int32_t ldc, float lo, float hi,
                            const float *res, size_t res_stride, int32_t res_n, float rlo, float rhi) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    __m256i rm = _mm256_setzero_si256();
    if (res) rm = _mm256_cmpgt_epi32(_mm256_set1_epi32(ck_min(res_n, nr)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int32_t m = 0; m < mr; m++) {
        __m256 v = _mm256_min_ps(_mm256_max_ps(rows[m], vlo), vhi);
        if (res) {
            const __m256 x = _mm256_maskload_ps(res + (size_t)m * res_stride, rm);
            v = _mm256_min_ps(_mm256_set1_ps(rhi), _mm256_max_ps(_mm256_set1_ps(rlo), _mm256_add_ps(x, v)));
        }
        float *dst = c + (size_t)m * ldc;
        if (nr == 8) _mm256_storeu_ps(dst, v);
        else store_partial_avx2(dst, v, v, nr);
    }
}

CK_TARGET_AVX2
static void tile_avx2_narrow(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k,
                             const float *w, float *c, int32_t ldc, float lo, float hi) {
    tile_avx2_narrow_core(mr, nr, ptrs, taps, k, w, c, ldc, lo, hi, NULL, 0, 0, 0.0f, 0.0f);
}

CK_TARGET_AVX2
static void tile_avx2(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k,
                      const float *w, float *c, int32_t ldc, float lo, float hi) {
    tile_avx2_core(mr, nr, ptrs, taps, k, w, c, ldc, lo, hi, NULL, 0, 0, 0.0f, 0.0f);
}

/// tile_avx2 (or tile_avx2_narrow for nr <= 8) with a residual (see tile_avx2_core).
CK_TARGET_AVX2
static void tile_avx2_residual(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k, const float *w,
                               float *c, int32_t ldc, float lo, float hi, const float *res, size_t res_stride, int32_t res_n,
                               float rlo, float rhi) {
    if (nr <= 8) tile_avx2_narrow_core(mr, nr, ptrs, taps, k, w, c, ldc, lo, hi, res, res_stride, res_n, rlo, rhi);
    else tile_avx2_core(mr, nr, ptrs, taps, k, w, c, ldc, lo, hi, res, res_stride, res_n, rlo, rhi);
}

/// A 6-row sparse tile, 6 × 8 for nr <= 8 (inlined: out of line, its calls with stack arguments
/// cost 1-9% of the sparse tiles in the C harness).
CK_TARGET_AVX2 CK_INLINE
void tile_avx2_sparse(int32_t nr, const float *const *ptrs, const int32_t *list, int32_t n, const float *w, float *c,
                      int32_t ldc, float lo, float hi, const float *res, size_t res_stride, int32_t res_n, float rlo, float rhi) {
    if (nr <= 8) tile_avx2_narrow_sparse_core(6, nr, ptrs, list, n, w, c, ldc, lo, hi, res, res_stride, res_n, rlo, rhi);
    else tile_avx2_sparse_core(6, nr, ptrs, list, n, w, c, ldc, lo, hi, res, res_stride, res_n, rlo, rhi);
}

/// Input channels of layers whose tiles may run sparse (see nonzero_channels_avx2): below
/// CK_SPARSE_MIN_K the tiles stay dense (layers of 16-24 input channels are mostly expansions of
/// linear bottlenecks, with no zeros to skip), above CK_SPARSE_MAX_K too (the list lives on the
/// stack).
#define CK_SPARSE_MIN_K 32
#define CK_SPARSE_MAX_K 4096

/// The set lanes of each 4-bit mask, one lane number per byte in increasing order.
static const uint32_t ck_nibble_lanes[16] = {0, 0x00, 0x01, 0x0100, 0x02, 0x0200, 0x0201, 0x020100,
                                             0x03, 0x0300, 0x0301, 0x030100, 0x0302, 0x030200, 0x030201, 0x03020100};

/// Appends lanes base + (the set bits of the 4-bit `mask`) to list[n...] (always writes 4 entries)
/// and returns the new count.
CK_TARGET_AVX2 CK_INLINE
int32_t append_lanes(int32_t *list, int32_t n, uint32_t mask, int32_t base) {
    const __m128i lanes = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)ck_nibble_lanes[mask]));
    _mm_storeu_si128((__m128i *)(list + n), _mm_add_epi32(lanes, _mm_set1_epi32(base)));
    return n + (int32_t)((0x4332322132212110ull >> (mask * 4)) & 15);
}

/// Writes to `list` (k + 4 entries of room), in increasing order, the input channels i < k where
/// at least one of the six rows' values rows[m][i] is not ±0, and returns how many. The others are
/// the channels a tile may skip: each of their products is a signed zero (the weights are finite),
/// and adding one to a sum that is not -0 leaves it unchanged, so the sums over the listed
/// channels in the same order are bitwise those over all k. (Post-ReLU inputs: 22-50% of the
/// channels of DeepLab's projections are zero in 6 pixels in a row.) NaNs and infinities count as
/// nonzero.
CK_TARGET_AVX2
static int32_t nonzero_channels_avx2(const float *const *rows, int32_t k, int32_t *list) {
    const float *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3], *r4 = rows[4], *r5 = rows[5];
    const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
    int32_t n = 0, i = 0;
    for (; i + 8 <= k; i += 8) {
        __m256i v = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(r0 + i)), _mm256_loadu_si256((const __m256i *)(r1 + i)));
        v = _mm256_or_si256(v, _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(r2 + i)), _mm256_loadu_si256((const __m256i *)(r3 + i))));
        v = _mm256_or_si256(v, _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(r4 + i)), _mm256_loadu_si256((const __m256i *)(r5 + i))));
        const __m256i zero = _mm256_cmpeq_epi32(_mm256_and_si256(v, magnitude), _mm256_setzero_si256());
        const uint32_t live = ~(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(zero)) & 0xFFu;
        n = append_lanes(list, n, live & 15u, i);
        n = append_lanes(list, n, live >> 4, i + 4);
    }
    for (; i < k; i++) {
        uint32_t bits[6];
        memcpy(&bits[0], r0 + i, 4); memcpy(&bits[1], r1 + i, 4); memcpy(&bits[2], r2 + i, 4);
        memcpy(&bits[3], r3 + i, 4); memcpy(&bits[4], r4 + i, 4); memcpy(&bits[5], r5 + i, 4);
        list[n] = i;
        n += ((bits[0] | bits[1] | bits[2] | bits[3] | bits[4] | bits[5]) & 0x7fffffffu) != 0;
    }
    return n;
}

/// A 1 × 1, stride-1, unpadded layer's whole 6-pixel tiles of [pixel_begin, pixel_end) on AVX2
/// (output pixel p reads input pixel p), the tiles inlined: the same tiles, blocks and residual
/// epilogue as conv_f32_run's loop, so the same values, without a call with nine stack arguments
/// and a pointer table per tile and block (BlazeFace's 24–96-channel layers: a tile of K = 24 is
/// about 150 cycles of FMAs). Returns the first pixel it left to the caller (fewer than 6).
/// With `sparse` (the weights finite and no bias -0.0, see packed_sparse_ok), a tile whose six
/// pixels are all ±0 in some input channels skips those channels in every block
/// (nonzero_channels_avx2: the same values).
/// (The body of conv_direct_avx2, inlined twice: with `sparse` 0 the compiler drops the sparse code,
/// whose presence made dense tiles of K = 16-24 run 2-4% slower.)
CK_TARGET_AVX2 CK_INLINE
int32_t conv_direct_avx2_body(const ck_conv_geometry *g, const float *input, int32_t k, const float *packed,
                              size_t block_stride, float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                              int32_t block_end, float lo, float hi, const ck_residual_f32 *residual, const int sparse,
                              int32_t *list_storage) {
    const int32_t end = pixel_begin + (pixel_end - pixel_begin) / 6 * 6;
    const size_t ldc = (size_t)g->out_c;
    const float *ptrs[6];
    // A tile runs sparse when the channels it skips, over all its blocks, come to at least k / 2:
    // building the list costs about k / 8 dense channel steps, and a listed channel costs a little
    // more than a dense one (C harness, K = 480 and 80 channels: 4% of the channels skipped is 0.6%
    // slower, 10% breaks even, 33% is 21% faster). After a tile below that, the next 15 run dense
    // without looking, and after each further such tile twice as many, up to 255 (a layer whose
    // input has no ReLU before it looks at a few tiles only).
    const int32_t blocks = block_end - block_begin;
    int32_t unchecked = 0, backoff = 15;
    for (int32_t p = pixel_begin; p < end; p += 6) {
        CK_UNROLL for (int m = 0; m < 6; m++) ptrs[m] = input + (size_t)(p + m) * k;
        int32_t n = k;
        if (sparse && unchecked-- <= 0) {
            n = nonzero_channels_avx2(ptrs, k, list_storage);
            if ((int64_t)(k - n) * blocks < k / 2) {
                n = k;
                unchecked = backoff;
                backoff = ck_min(2 * backoff + 1, 255);
            } else {
                unchecked = 0;
                backoff = 15;
            }
        }
        const int32_t *list = n < k ? list_storage : NULL;
        for (int32_t b = block_begin; b < block_end; b++) {
            const int32_t c0 = b * CK_F32_NR, nr = ck_min(CK_F32_NR, g->out_c - c0);
            const float *w = packed + (size_t)b * block_stride;
            float *dst = output + (size_t)p * ldc + c0;
            if (list) {
                const int32_t res_n = residual ? residual->channels - c0 : 0;
                const size_t rs = residual ? (size_t)residual->pixel_stride : 0;
                const float *res = residual ? residual->data + (size_t)p * rs + (res_n > 0 ? c0 : 0) : NULL;
                tile_avx2_sparse(nr, ptrs, list, n, w, dst, (int32_t)ldc, lo, hi, res, rs, res_n, residual ? residual->lo : 0.0f,
                                 residual ? residual->hi : 0.0f);
            } else if (residual) {
                const int32_t res_n = residual->channels - c0;
                const size_t rs = (size_t)residual->pixel_stride;
                const float *res = residual->data + (size_t)p * rs + (res_n > 0 ? c0 : 0);
                if (nr <= 8) tile_avx2_narrow_core(6, nr, ptrs, 1, k, w, dst, (int32_t)ldc, lo, hi, res, rs, res_n, residual->lo, residual->hi);
                else tile_avx2_core(6, nr, ptrs, 1, k, w, dst, (int32_t)ldc, lo, hi, res, rs, res_n, residual->lo, residual->hi);
            } else if (nr <= 8) {
                tile_avx2_narrow_core(6, nr, ptrs, 1, k, w, dst, (int32_t)ldc, lo, hi, NULL, 0, 0, 0.0f, 0.0f);
            } else {
                tile_avx2_core(6, nr, ptrs, 1, k, w, dst, (int32_t)ldc, lo, hi, NULL, 0, 0, 0.0f, 0.0f);
            }
        }
    }
    return end;
}

CK_TARGET_AVX2
static int32_t conv_direct_avx2_dense(const ck_conv_geometry *g, const float *input, int32_t k, const float *packed,
                                      size_t block_stride, float *output, int32_t pixel_begin, int32_t pixel_end,
                                      int32_t block_begin, int32_t block_end, float lo, float hi, const ck_residual_f32 *residual) {
    return conv_direct_avx2_body(g, input, k, packed, block_stride, output, pixel_begin, pixel_end, block_begin, block_end, lo,
                                 hi, residual, 0, NULL);
}

CK_TARGET_AVX2
static int32_t conv_direct_avx2_sparse(const ck_conv_geometry *g, const float *input, int32_t k, const float *packed,
                                       size_t block_stride, float *output, int32_t pixel_begin, int32_t pixel_end,
                                       int32_t block_begin, int32_t block_end, float lo, float hi, const ck_residual_f32 *residual) {
    int32_t list[CK_SPARSE_MAX_K + 4];
    return conv_direct_avx2_body(g, input, k, packed, block_stride, output, pixel_begin, pixel_end, block_begin, block_end, lo,
                                 hi, residual, 1, list);
}

CK_TARGET_AVX2
static int32_t conv_direct_avx2(const ck_conv_geometry *g, const float *input, int32_t k, const float *packed,
                                size_t block_stride, float *output, int32_t pixel_begin, int32_t pixel_end,
                                int32_t block_begin, int32_t block_end, float lo, float hi, const ck_residual_f32 *residual,
                                int sparse) {
    if (sparse && k >= CK_SPARSE_MIN_K && k <= CK_SPARSE_MAX_K)
        return conv_direct_avx2_sparse(g, input, k, packed, block_stride, output, pixel_begin, pixel_end, block_begin, block_end,
                                       lo, hi, residual);
    return conv_direct_avx2_dense(g, input, k, packed, block_stride, output, pixel_begin, pixel_end, block_begin, block_end, lo,
                                  hi, residual);
}

// ---- AVX-512: 12 x 16 tiles (12 zmm accumulators: each weight vector feeds 12 FMAs) ----

CK_TARGET_AVX512
static void tile_avx512(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k,
                        const float *w, float *c, int32_t ldc, float lo, float hi) {
    __m512 c0 = _mm512_loadu_ps(w);
    __m512 c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    w += CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *const *p = ptrs + t * 12;
        const float *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3], *a4 = p[4], *a5 = p[5];
        const float *a6 = p[6], *a7 = p[7], *a8 = p[8], *a9 = p[9], *a10 = p[10], *a11 = p[11];
        for (int32_t i = 0; i < k; i++) {
            const __m512 b = _mm512_loadu_ps(w);
            w += CK_F32_NR;
            c0 = _mm512_fmadd_ps(_mm512_set1_ps(a0[i]), b, c0);
            c1 = _mm512_fmadd_ps(_mm512_set1_ps(a1[i]), b, c1);
            c2 = _mm512_fmadd_ps(_mm512_set1_ps(a2[i]), b, c2);
            c3 = _mm512_fmadd_ps(_mm512_set1_ps(a3[i]), b, c3);
            c4 = _mm512_fmadd_ps(_mm512_set1_ps(a4[i]), b, c4);
            c5 = _mm512_fmadd_ps(_mm512_set1_ps(a5[i]), b, c5);
            c6 = _mm512_fmadd_ps(_mm512_set1_ps(a6[i]), b, c6);
            c7 = _mm512_fmadd_ps(_mm512_set1_ps(a7[i]), b, c7);
            c8 = _mm512_fmadd_ps(_mm512_set1_ps(a8[i]), b, c8);
            c9 = _mm512_fmadd_ps(_mm512_set1_ps(a9[i]), b, c9);
            c10 = _mm512_fmadd_ps(_mm512_set1_ps(a10[i]), b, c10);
            c11 = _mm512_fmadd_ps(_mm512_set1_ps(a11[i]), b, c11);
        }
    }
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const __mmask16 mask = (__mmask16)((1u << nr) - 1u);
    __m512 rows[12] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    for (int32_t m = 0; m < mr; m++) {
        __m512 v = _mm512_min_ps(_mm512_max_ps(rows[m], vlo), vhi);
        _mm512_mask_storeu_ps(c + (size_t)m * ldc, mask, v);
    }
}

/// AVX-512 machines, blocks with at most 8 live channels: 12 × 8 tiles in 256-bit registers (two
/// 256-bit FMAs issue per cycle where one 512-bit does, so no lanes are wasted on padding).
CK_TARGET_AVX512
static void tile_avx512_narrow(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k,
                               const float *w, float *c, int32_t ldc, float lo, float hi) {
    __m256 c0 = _mm256_loadu_ps(w);
    __m256 c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    w += CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *const *p = ptrs + t * 12;
        const float *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3], *a4 = p[4], *a5 = p[5];
        const float *a6 = p[6], *a7 = p[7], *a8 = p[8], *a9 = p[9], *a10 = p[10], *a11 = p[11];
        for (int32_t i = 0; i < k; i++) {
            const __m256 b = _mm256_loadu_ps(w);
            w += CK_F32_NR;
            c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a0 + i), b, c0);
            c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a1 + i), b, c1);
            c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a2 + i), b, c2);
            c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a3 + i), b, c3);
            c4 = _mm256_fmadd_ps(_mm256_broadcast_ss(a4 + i), b, c4);
            c5 = _mm256_fmadd_ps(_mm256_broadcast_ss(a5 + i), b, c5);
            c6 = _mm256_fmadd_ps(_mm256_broadcast_ss(a6 + i), b, c6);
            c7 = _mm256_fmadd_ps(_mm256_broadcast_ss(a7 + i), b, c7);
            c8 = _mm256_fmadd_ps(_mm256_broadcast_ss(a8 + i), b, c8);
            c9 = _mm256_fmadd_ps(_mm256_broadcast_ss(a9 + i), b, c9);
            c10 = _mm256_fmadd_ps(_mm256_broadcast_ss(a10 + i), b, c10);
            c11 = _mm256_fmadd_ps(_mm256_broadcast_ss(a11 + i), b, c11);
        }
    }
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const __mmask8 mask = (__mmask8)((1u << nr) - 1u);
    __m256 rows[12] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    for (int32_t m = 0; m < mr; m++)
        _mm256_mask_storeu_ps(c + (size_t)m * ldc, mask, _mm256_min_ps(_mm256_max_ps(rows[m], vlo), vhi));
}
#endif

// ---- few rows (a tile of 1..4 output pixels, e.g. a 1×1 image or FULLY_CONNECTED with one batch):
// several channel blocks in flight with independent accumulators, each block's packed weights read
// sequentially. Every output element is still bias + the reduction in (tap, input channel) order,
// as in the tiles, so which kernel computes a row never changes a result. ----

/// Splits `blocks` into groups of at most `cap`, as even as possible; returns the first group's size.
static inline int32_t rows_group(int32_t blocks, int32_t cap) {
    const int32_t groups = (blocks + cap - 1) / cap;
    return (blocks + groups - 1) / groups;
}

static void rows_portable(int32_t mr, int32_t nb, int32_t nr_last, const float *const *ptrs, int32_t mr_cap, int32_t taps,
                          int32_t k, const float *w, size_t block_stride, float *c, int32_t ldc, float lo, float hi) {
    // One row (mr == 1), up to 4 blocks: acc[b][j].
    (void)mr;
    (void)ldc;
    float acc[4][CK_F32_NR];
    for (int32_t b = 0; b < nb; b++)
        for (int32_t j = 0; j < CK_F32_NR; j++) acc[b][j] = w[(size_t)b * block_stride + j];
    const float *wb = w + CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *a = ptrs[t * mr_cap];
        for (int32_t i = 0; i < k; i++, wb += CK_F32_NR) {
            const float v = a[i];
            for (int32_t b = 0; b < nb; b++) {
                const float *wv = wb + (size_t)b * block_stride;
                for (int32_t j = 0; j < CK_F32_NR; j++) acc[b][j] += v * wv[j];
            }
        }
    }
    for (int32_t b = 0; b < nb; b++) {
        const int32_t nr = b == nb - 1 ? nr_last : CK_F32_NR;
        for (int32_t j = 0; j < nr; j++) {
            float v = acc[b][j];
            v = v < lo ? lo : v;
            c[(size_t)b * CK_F32_NR + j] = v > hi ? hi : v;
        }
    }
}

#if CK_X86
CK_TARGET_AVX512 CK_INLINE
void rows_avx512_impl(int32_t nr_last, const float *const *ptrs, int32_t mr_cap, int32_t taps, int32_t k,
                      const float *w, size_t block_stride, float *c, int32_t ldc, float lo, float hi,
                      const int MR, const int NB) {
    __m512 acc[4][8];
    CK_UNROLL for (int b = 0; b < NB; b++) {
        const __m512 vb = _mm512_loadu_ps(w + (size_t)b * block_stride);
        CK_UNROLL for (int m = 0; m < MR; m++) acc[m][b] = vb;
    }
    const float *wb = w + CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *a[4];
        CK_UNROLL for (int m = 0; m < MR; m++) a[m] = ptrs[t * mr_cap + m];
        for (int32_t i = 0; i < k; i++, wb += CK_F32_NR) {
            __m512 wv[8];
            CK_UNROLL for (int b = 0; b < NB; b++) wv[b] = _mm512_loadu_ps(wb + (size_t)b * block_stride);
            CK_UNROLL for (int m = 0; m < MR; m++) {
                const __m512 av = _mm512_set1_ps(a[m][i]);
                CK_UNROLL for (int b = 0; b < NB; b++) acc[m][b] = _mm512_fmadd_ps(av, wv[b], acc[m][b]);
            }
        }
    }
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    CK_UNROLL for (int m = 0; m < MR; m++) {
        CK_UNROLL for (int b = 0; b < NB; b++) {
            const __mmask16 mask = b == NB - 1 ? (__mmask16)((1u << nr_last) - 1u) : (__mmask16)0xFFFF;
            _mm512_mask_storeu_ps(c + (size_t)m * ldc + (size_t)b * CK_F32_NR, mask,
                                  _mm512_min_ps(_mm512_max_ps(acc[m][b], vlo), vhi));
        }
    }
}

/// Most blocks in flight per row count (1..4 rows): at most 12 accumulators.
static const int32_t rows_avx512_cap[5] = {0, 8, 6, 4, 3};

CK_TARGET_AVX512
static void rows_avx512(int32_t mr, int32_t nb, int32_t nr_last, const float *const *ptrs, int32_t mr_cap, int32_t taps,
                        int32_t k, const float *w, size_t block_stride, float *c, int32_t ldc, float lo, float hi) {
#define CK_ROWS512(MR, NB) rows_avx512_impl(nr_last, ptrs, mr_cap, taps, k, w, block_stride, c, ldc, lo, hi, MR, NB)
    switch (mr * 16 + nb) {
    case 0x11: CK_ROWS512(1, 1); break;
    case 0x12: CK_ROWS512(1, 2); break;
    case 0x13: CK_ROWS512(1, 3); break;
    case 0x14: CK_ROWS512(1, 4); break;
    case 0x15: CK_ROWS512(1, 5); break;
    case 0x16: CK_ROWS512(1, 6); break;
    case 0x17: CK_ROWS512(1, 7); break;
    case 0x18: CK_ROWS512(1, 8); break;
    case 0x21: CK_ROWS512(2, 1); break;
    case 0x22: CK_ROWS512(2, 2); break;
    case 0x23: CK_ROWS512(2, 3); break;
    case 0x24: CK_ROWS512(2, 4); break;
    case 0x25: CK_ROWS512(2, 5); break;
    case 0x26: CK_ROWS512(2, 6); break;
    case 0x31: CK_ROWS512(3, 1); break;
    case 0x32: CK_ROWS512(3, 2); break;
    case 0x33: CK_ROWS512(3, 3); break;
    case 0x34: CK_ROWS512(3, 4); break;
    case 0x41: CK_ROWS512(4, 1); break;
    case 0x42: CK_ROWS512(4, 2); break;
    case 0x43: CK_ROWS512(4, 3); break;
    default: break;
    }
#undef CK_ROWS512
}

CK_TARGET_AVX2 CK_INLINE
void rows_avx2_impl(int32_t nr_last, const float *const *ptrs, int32_t mr_cap, int32_t taps, int32_t k,
                    const float *w, size_t block_stride, float *c, int32_t ldc, float lo, float hi,
                    const int MR, const int NB) {
    __m256 acc[3][4][2];
    CK_UNROLL for (int b = 0; b < NB; b++) {
        const __m256 v0 = _mm256_loadu_ps(w + (size_t)b * block_stride), v1 = _mm256_loadu_ps(w + (size_t)b * block_stride + 8);
        CK_UNROLL for (int m = 0; m < MR; m++) { acc[m][b][0] = v0; acc[m][b][1] = v1; }
    }
    const float *wb = w + CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *a[3];
        CK_UNROLL for (int m = 0; m < MR; m++) a[m] = ptrs[t * mr_cap + m];
        for (int32_t i = 0; i < k; i++, wb += CK_F32_NR) {
            __m256 wv[4][2];
            CK_UNROLL for (int b = 0; b < NB; b++) {
                wv[b][0] = _mm256_loadu_ps(wb + (size_t)b * block_stride);
                wv[b][1] = _mm256_loadu_ps(wb + (size_t)b * block_stride + 8);
            }
            CK_UNROLL for (int m = 0; m < MR; m++) {
                const __m256 av = _mm256_broadcast_ss(a[m] + i);
                CK_UNROLL for (int b = 0; b < NB; b++) {
                    acc[m][b][0] = _mm256_fmadd_ps(av, wv[b][0], acc[m][b][0]);
                    acc[m][b][1] = _mm256_fmadd_ps(av, wv[b][1], acc[m][b][1]);
                }
            }
        }
    }
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    CK_UNROLL for (int m = 0; m < MR; m++) {
        CK_UNROLL for (int b = 0; b < NB; b++) {
            float *dst = c + (size_t)m * ldc + (size_t)b * CK_F32_NR;
            const __m256 v0 = _mm256_min_ps(_mm256_max_ps(acc[m][b][0], vlo), vhi);
            const __m256 v1 = _mm256_min_ps(_mm256_max_ps(acc[m][b][1], vlo), vhi);
            if (b < NB - 1 || nr_last == CK_F32_NR) {
                _mm256_storeu_ps(dst, v0);
                _mm256_storeu_ps(dst + 8, v1);
            } else {
                float tmp[CK_F32_NR];
                _mm256_storeu_ps(tmp, v0);
                _mm256_storeu_ps(tmp + 8, v1);
                memcpy(dst, tmp, (size_t)nr_last * sizeof(float));
            }
        }
    }
}

static const int32_t rows_avx2_cap[4] = {0, 4, 3, 2};

CK_TARGET_AVX2
static void rows_avx2(int32_t mr, int32_t nb, int32_t nr_last, const float *const *ptrs, int32_t mr_cap, int32_t taps,
                      int32_t k, const float *w, size_t block_stride, float *c, int32_t ldc, float lo, float hi) {
#define CK_ROWS256(MR, NB) rows_avx2_impl(nr_last, ptrs, mr_cap, taps, k, w, block_stride, c, ldc, lo, hi, MR, NB)
    switch (mr * 16 + nb) {
    case 0x11: CK_ROWS256(1, 1); break;
    case 0x12: CK_ROWS256(1, 2); break;
    case 0x13: CK_ROWS256(1, 3); break;
    case 0x14: CK_ROWS256(1, 4); break;
    case 0x21: CK_ROWS256(2, 1); break;
    case 0x22: CK_ROWS256(2, 2); break;
    case 0x23: CK_ROWS256(2, 3); break;
    case 0x31: CK_ROWS256(3, 1); break;
    case 0x32: CK_ROWS256(3, 2); break;
    default: break;
    }
#undef CK_ROWS256
}
/// AVX-512, two full column blocks at once: 6 × 32 tiles (12 zmm accumulators). Each broadcast
/// input value feeds two FMAs, so a step of the reduction loads 2 weight vectors and 6 inputs for 12
/// FMAs, where the 12 × 16 tile loads 13: about 15–25% faster on this machine's 1×1 convolutions.
/// `ptrs` is the tile's pointer table ([tap][row], `stride` rows per tap); rows [0, mr) are stored.
CK_TARGET_AVX512
///
/// Part of a reduction (K blocking, 1×1 only): `k0` skips the first k0 input channels of the packed
/// weights (the caller offsets `ptrs`); unless `first`, the tile starts from the partial sums stored
/// in `c` instead of the bias; unless `last`, it stores them back unclamped. The FMAs of every
/// output run in the same order either way, so the results are bitwise those of one pass.
///
/// `pf` (may be NULL): a stream of lines to bring into L2 for a later layer, one per reduction step
/// while lines are left before `pf_end`; returns where the stream stands after the tile.
///
/// `add` (may be NULL; only with `last`): 16 + nr1 floats added to every row of the tile before its
/// clamp, as clamp(add + sum) with the residual epilogue's operand order (see conv_f32_run).
static const char *tile_avx512_wide(int32_t mr, int32_t nr1, const float *const *ptrs, int32_t stride, int32_t taps, int32_t k,
                                    const float *w0, const float *w1, float *c, int32_t ldc, float lo, float hi,
                                    int32_t k0, int first, int last, const char *pf, const char *pf_end, const float *add) {
    const __mmask16 mask1 = (__mmask16)((1u << nr1) - 1u);
    __m512 x0 = _mm512_loadu_ps(w0), y0 = _mm512_loadu_ps(w1);
    __m512 x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0, y1 = y0, y2 = y0, y3 = y0, y4 = y0, y5 = y0;
    if (!first) {
#define CK_PARTIAL(M, X, Y) if (mr > M) { X = _mm512_loadu_ps(c + (size_t)M * ldc); \
                                          Y = _mm512_maskz_loadu_ps(mask1, c + (size_t)M * ldc + CK_F32_NR); }
        CK_PARTIAL(0, x0, y0) CK_PARTIAL(1, x1, y1) CK_PARTIAL(2, x2, y2)
        CK_PARTIAL(3, x3, y3) CK_PARTIAL(4, x4, y4) CK_PARTIAL(5, x5, y5)
#undef CK_PARTIAL
    }
    w0 += CK_F32_NR + (size_t)k0 * CK_F32_NR;
    w1 += CK_F32_NR + (size_t)k0 * CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *const *p = ptrs + (size_t)t * stride;
        const float *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3], *a4 = p[4], *a5 = p[5];
        for (int32_t i = 0; i < k; i++) {
            if (pf < pf_end) {
                _mm_prefetch(pf, _MM_HINT_T1);
                pf += 64;
            }
            const __m512 b0 = _mm512_loadu_ps(w0), b1 = _mm512_loadu_ps(w1);
            w0 += CK_F32_NR;
            w1 += CK_F32_NR;
            __m512 v;
            v = _mm512_set1_ps(a0[i]); x0 = _mm512_fmadd_ps(v, b0, x0); y0 = _mm512_fmadd_ps(v, b1, y0);
            v = _mm512_set1_ps(a1[i]); x1 = _mm512_fmadd_ps(v, b0, x1); y1 = _mm512_fmadd_ps(v, b1, y1);
            v = _mm512_set1_ps(a2[i]); x2 = _mm512_fmadd_ps(v, b0, x2); y2 = _mm512_fmadd_ps(v, b1, y2);
            v = _mm512_set1_ps(a3[i]); x3 = _mm512_fmadd_ps(v, b0, x3); y3 = _mm512_fmadd_ps(v, b1, y3);
            v = _mm512_set1_ps(a4[i]); x4 = _mm512_fmadd_ps(v, b0, x4); y4 = _mm512_fmadd_ps(v, b1, y4);
            v = _mm512_set1_ps(a5[i]); x5 = _mm512_fmadd_ps(v, b0, x5); y5 = _mm512_fmadd_ps(v, b1, y5);
        }
    }
    const __m512 xs[6] = {x0, x1, x2, x3, x4, x5}, ys[6] = {y0, y1, y2, y3, y4, y5};
    if (!last) {
        for (int32_t m = 0; m < mr; m++) {
            _mm512_storeu_ps(c + (size_t)m * ldc, xs[m]);
            _mm512_mask_storeu_ps(c + (size_t)m * ldc + CK_F32_NR, mask1, ys[m]);
        }
        return pf;
    }
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    if (add) {
        const __m512 a0 = _mm512_loadu_ps(add), a1 = _mm512_maskz_loadu_ps(mask1, add + CK_F32_NR);
        for (int32_t m = 0; m < mr; m++) {
            float *dst = c + (size_t)m * ldc;
            _mm512_storeu_ps(dst, _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(a0, xs[m]))));
            _mm512_mask_storeu_ps(dst + CK_F32_NR, mask1, _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(a1, ys[m]))));
        }
        return pf;
    }
    for (int32_t m = 0; m < mr; m++) {
        float *dst = c + (size_t)m * ldc;
        _mm512_storeu_ps(dst, _mm512_min_ps(_mm512_max_ps(xs[m], vlo), vhi));
        _mm512_mask_storeu_ps(dst + CK_F32_NR, mask1, _mm512_min_ps(_mm512_max_ps(ys[m], vlo), vhi));
    }
    return pf;
}

/// AVX-512, three column blocks at once: 4 × 48 tiles (12 zmm accumulators), for the odd block
/// of a layer whose channel blocks do not pair up (80 or 48 output channels: two blocks and one, or
/// one and one). Each broadcast input value feeds three FMAs: a step loads 3 weight vectors and 4
/// inputs for 12 FMAs, where a lone 12 × 16 tile loads 13 (DeepLab's 480→80 projections in the
/// model: 0.654 → 0.566 ms; 288→48 0.240 → 0.217 ms; 192→48 0.148 → 0.126 ms). `nr2`: live
/// channels of the third block. Partial reductions (`k0`, `first`, `last`)
/// as in tile_avx512_wide: the FMAs of every output run in the same order either way.
CK_TARGET_AVX512
static void tile_avx512_triple(int32_t mr, int32_t nr2, const float *const *ptrs, int32_t stride, int32_t taps, int32_t k,
                               const float *w0, size_t block_stride, float *c, int32_t ldc, float lo, float hi,
                               int32_t k0, int first, int last) {
    const __mmask16 mask2 = (__mmask16)((1u << nr2) - 1u);
    const float *w1 = w0 + block_stride, *w2 = w1 + block_stride;
    __m512 x0 = _mm512_loadu_ps(w0), y0 = _mm512_loadu_ps(w1), z0 = _mm512_loadu_ps(w2);
    __m512 x1 = x0, x2 = x0, x3 = x0, y1 = y0, y2 = y0, y3 = y0, z1 = z0, z2 = z0, z3 = z0;
    if (!first) {
#define CK_PARTIAL3(M, X, Y, Z) if (mr > M) { X = _mm512_loadu_ps(c + (size_t)M * ldc); \
                                              Y = _mm512_loadu_ps(c + (size_t)M * ldc + CK_F32_NR); \
                                              Z = _mm512_maskz_loadu_ps(mask2, c + (size_t)M * ldc + 2 * CK_F32_NR); }
        CK_PARTIAL3(0, x0, y0, z0) CK_PARTIAL3(1, x1, y1, z1) CK_PARTIAL3(2, x2, y2, z2) CK_PARTIAL3(3, x3, y3, z3)
#undef CK_PARTIAL3
    }
    w0 += CK_F32_NR + (size_t)k0 * CK_F32_NR;
    w1 += CK_F32_NR + (size_t)k0 * CK_F32_NR;
    w2 += CK_F32_NR + (size_t)k0 * CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *const *p = ptrs + (size_t)t * stride;
        const float *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3];
        for (int32_t i = 0; i < k; i++) {
            const __m512 b0 = _mm512_loadu_ps(w0), b1 = _mm512_loadu_ps(w1), b2 = _mm512_loadu_ps(w2);
            w0 += CK_F32_NR;
            w1 += CK_F32_NR;
            w2 += CK_F32_NR;
            __m512 v;
            v = _mm512_set1_ps(a0[i]); x0 = _mm512_fmadd_ps(v, b0, x0); y0 = _mm512_fmadd_ps(v, b1, y0); z0 = _mm512_fmadd_ps(v, b2, z0);
            v = _mm512_set1_ps(a1[i]); x1 = _mm512_fmadd_ps(v, b0, x1); y1 = _mm512_fmadd_ps(v, b1, y1); z1 = _mm512_fmadd_ps(v, b2, z1);
            v = _mm512_set1_ps(a2[i]); x2 = _mm512_fmadd_ps(v, b0, x2); y2 = _mm512_fmadd_ps(v, b1, y2); z2 = _mm512_fmadd_ps(v, b2, z2);
            v = _mm512_set1_ps(a3[i]); x3 = _mm512_fmadd_ps(v, b0, x3); y3 = _mm512_fmadd_ps(v, b1, y3); z3 = _mm512_fmadd_ps(v, b2, z3);
        }
    }
    const __m512 xs[4] = {x0, x1, x2, x3}, ys[4] = {y0, y1, y2, y3}, zs[4] = {z0, z1, z2, z3};
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    for (int32_t m = 0; m < mr; m++) {
        float *dst = c + (size_t)m * ldc;
        if (last) {
            _mm512_storeu_ps(dst, _mm512_min_ps(_mm512_max_ps(xs[m], vlo), vhi));
            _mm512_storeu_ps(dst + CK_F32_NR, _mm512_min_ps(_mm512_max_ps(ys[m], vlo), vhi));
            _mm512_mask_storeu_ps(dst + 2 * CK_F32_NR, mask2, _mm512_min_ps(_mm512_max_ps(zs[m], vlo), vhi));
        } else {
            _mm512_storeu_ps(dst, xs[m]);
            _mm512_storeu_ps(dst + CK_F32_NR, ys[m]);
            _mm512_mask_storeu_ps(dst + 2 * CK_F32_NR, mask2, zs[m]);
        }
    }
}

/// A direct 1×1 convolution with a short reduction (K = 4, 8 or 16 input channels) and one column
/// block: the block's K weight vectors stay in registers for the whole pixel range, which runs in
/// groups of 8 pixels read straight from the input rows (no pointer table, no spilled tile). Each
/// output is bias + its K products in input-channel order, as in the tiles, so results are bitwise
/// those of tile_avx512.
CK_TARGET_AVX512 CK_INLINE
void smallk_rows_impl(const float *input, const float *w, float *c, int32_t ldc, int32_t p0, int32_t p1, __mmask16 mask,
                      __m512 vlo, __m512 vhi, const int K) {
    const __m512 vb = _mm512_loadu_ps(w);
    __m512 wv[16];
    CK_UNROLL for (int i = 0; i < K; i++) wv[i] = _mm512_loadu_ps(w + CK_F32_NR * (1 + i));
    int32_t p = p0;
    for (; p + 8 <= p1; p += 8) {
        const float *a = input + (size_t)p * K;
        __m512 acc[8];
        CK_UNROLL for (int j = 0; j < 8; j++) acc[j] = vb;
        CK_UNROLL for (int i = 0; i < K; i++)
            CK_UNROLL for (int j = 0; j < 8; j++) acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(a[j * K + i]), wv[i], acc[j]);
        float *o = c + (size_t)p * ldc;
        CK_UNROLL for (int j = 0; j < 8; j++)
            _mm512_mask_storeu_ps(o + (size_t)j * ldc, mask, _mm512_min_ps(_mm512_max_ps(acc[j], vlo), vhi));
    }
    for (; p < p1; p++) {
        const float *a = input + (size_t)p * K;
        __m512 acc = vb;
        CK_UNROLL for (int i = 0; i < K; i++) acc = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), wv[i], acc);
        _mm512_mask_storeu_ps(c + (size_t)p * ldc, mask, _mm512_min_ps(_mm512_max_ps(acc, vlo), vhi));
    }
}

/// Whether smallk_rows is the faster way for a reduction of k input channels over `blocks` column
/// blocks (each block reads the pixels' inputs again: measured on this machine, from 6 blocks of
/// K = 16 and 3 of K = 4 the tiles win).
static inline int smallk_supported(int32_t k, int32_t blocks) {
    return (k == 4 && blocks == 1) || ((k == 8 || k == 16) && blocks <= 4);
}

CK_TARGET_AVX512
static void smallk_rows(const float *input, int32_t k, const float *w, float *c, int32_t ldc, int32_t nr, int32_t p0,
                        int32_t p1, float lo, float hi) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const __mmask16 mask = (__mmask16)((1u << nr) - 1u);
    switch (k) {
    case 4: smallk_rows_impl(input, w, c, ldc, p0, p1, mask, vlo, vhi, 4); break;
    case 8: smallk_rows_impl(input, w, c, ldc, p0, p1, mask, vlo, vhi, 8); break;
    default: smallk_rows_impl(input, w, c, ldc, p0, p1, mask, vlo, vhi, 16); break;
    }
}

/// Most input channels a 1×1 convolution reduces in one pass over its pixels before K blocking.
#define CK_KBLOCK 256

/// A 1×1 convolution with a long reduction (k > CK_KBLOCK), pairs of full column blocks, and the
/// last three blocks as a triple when their count is odd (the last may be partial): for each group,
/// the reduction in chunks (at most CK_KBLOCK channels for a pair, 128 for a triple), each chunk
/// over all pixels [p0, p1) in tiles of 6 (pairs) or 4 (triple) rows, so the group's chunk of
/// packed weights (up to 32 or 24 KiB) stays in L1 instead of streaming from L2 at every step of
/// every tile. Partial sums wait in the output. Returns the first block left to the caller (a lone
/// block, or a pair that is not full).
static int32_t conv_kblocked_avx512(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                                    size_t block_stride, float *output, int32_t p0, int32_t p1, int32_t b0, int32_t b1,
                                    float lo, float hi, const ck_residual_f32 *residual) {
    const int32_t k = g->in_c, out_c = g->out_c;
    int32_t pairs = b0;
    while (pairs + 2 <= b1 && (pairs + 2) * CK_F32_NR <= out_c) pairs += 2;
    int32_t end = pairs;
    if (pairs > b0 && b1 - pairs == 1) {  // the last pair and the lone block: a triple
        pairs -= 2;
        end = b1;
    }
    if (end == b0) return b0;
    const float *ptrs[6];
    for (int32_t b = b0; b < end; b += 2) {
        const int triple = b == pairs;
        const int32_t rows = triple ? 4 : 6, kblock = triple ? 128 : CK_KBLOCK;
        const int32_t chunks = (k + kblock - 1) / kblock, kc_max = ((k + chunks - 1) / chunks + 3) & ~3;
        const int32_t nr2 = triple ? ck_min(CK_F32_NR, out_c - (b + 2) * CK_F32_NR) : 0;
        const int final = b + (triple ? 3 : 2) == end;  // the group after which the residual is added
        const float *w0 = packed + (size_t)b * block_stride;
        for (int32_t k0 = 0; k0 < k; k0 += kc_max) {
            const int32_t kc = ck_min(kc_max, k - k0), last = k0 + kc == k;
            int32_t pending_p = 0, pending_end = 0;
            for (int32_t p = p0; p < p1; p += rows) {
                const int32_t mr = ck_min(rows, p1 - p);
                for (int32_t m = 0; m < rows; m++) ptrs[m] = input + (size_t)(p + (m < mr ? m : 0)) * k + k0;
                float *c = output + (size_t)p * out_c + (size_t)b * CK_F32_NR;
                if (triple)
                    tile_avx512_triple(mr, nr2, ptrs, 4, 1, kc, w0, block_stride, c, out_c, lo, hi, k0, k0 == 0, last);
                else
                    tile_avx512_wide(mr, CK_F32_NR, ptrs, 6, 1, kc, w0, w0 + block_stride, c, out_c, lo, hi, k0, k0 == 0, last,
                                     NULL, NULL, NULL);
                if (last && residual && final) {
                    ck_residual_add_f32(isa, residual, output, out_c, pending_p, pending_end, b0 * CK_F32_NR,
                                        ck_min(out_c, end * CK_F32_NR));
                    pending_p = p;
                    pending_end = p + mr;
                }
            }
            if (last && residual && final)
                ck_residual_add_f32(isa, residual, output, out_c, pending_p, pending_end, b0 * CK_F32_NR, ck_min(out_c, end * CK_F32_NR));
        }
        if (triple) break;
    }
    return end;
}
#endif

typedef void (*rows_fn)(int32_t, int32_t, int32_t, const float *const *, int32_t, int32_t, int32_t, const float *, size_t,
                        float *, int32_t, float, float);

typedef void (*tile_fn)(int32_t, int32_t, const float *const *, int32_t, int32_t, const float *, float *, int32_t, float, float);

// ---- residual epilogue (see ckernels.h) ----

static void residual_portable(const ck_residual_f32 *r, float *output, int32_t out_c, int32_t p0, int32_t p1,
                              int32_t c0, int32_t c1) {
    const int32_t lo_c = r->before, hi_c = r->before + r->channels;
    for (int32_t p = p0; p < p1; p++) {
        float *o = output + (size_t)p * out_c;
        const float *row = r->data + (size_t)p * r->pixel_stride;
        for (int32_t j = c0; j < c1; j++) {
            const float x = j >= lo_c && j < hi_c ? row[j - lo_c] : 0.0f;
            o[j] = clamp_tflite_f32(x + o[j], r->lo, r->hi);
        }
    }
}

#if CK_X86
/// Whole pixels (all out_c channels): the tile's outputs are one contiguous run, walked 16 floats
/// at a time whatever the pixel boundaries, so no vector overlaps the one stored before it (a load
/// overlapping an earlier masked store waits for that store to retire: per-pixel vectors of a
/// 24-channel output did, and cost more than the convolution). The residual lanes of a run are
/// consecutive residual values: expand-loaded into the lanes whose channel has one.
CK_TARGET_AVX512
static void residual_avx512_run(const ck_residual_f32 *r, float *output, int32_t out_c, int32_t p0, int32_t p1) {
    const __m512 vlo = _mm512_set1_ps(r->lo), vhi = _mm512_set1_ps(r->hi);
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i vout = _mm512_set1_epi32(out_c), vlo_c = _mm512_set1_epi32(r->before);
    const __m512i vhi_c = _mm512_set1_epi32(r->before + r->channels), step = _mm512_set1_epi32(16 % out_c);
    float *o = output + (size_t)p0 * out_c;
    const float *src = r->data + (size_t)p0 * r->channels;
    const size_t n = (size_t)(p1 - p0) * out_c;
    if (r->before == 0 && r->channels == out_c) {
        for (size_t i = 0; i < n; i += 16) {
            const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
            const __m512 x = _mm512_maskz_loadu_ps(m, src + i);
            _mm512_mask_storeu_ps(o + i, m, _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, o + i)))));
        }
        return;
    }
    __m512i ch = lanes;  // each lane's channel
    for (__mmask16 wrap; (wrap = _mm512_cmpge_epi32_mask(ch, vout)) != 0;) ch = _mm512_mask_sub_epi32(ch, wrap, ch, vout);
    int32_t q = 0, c = 0;  // pixel and channel of lane 0
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        const __mmask16 valid = m & _mm512_cmpge_epi32_mask(ch, vlo_c) & _mm512_cmplt_epi32_mask(ch, vhi_c);
        // Residual values before lane 0: q whole pixels, then this pixel's channels below c.
        const size_t at = (size_t)q * r->channels + (size_t)ck_min(ck_max(c - r->before, 0), r->channels);
        const __m512 x = _mm512_maskz_expandloadu_ps(valid, src + at);
        const __m512 v = _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, o + i))));
        _mm512_mask_storeu_ps(o + i, m, v);
        ch = _mm512_add_epi32(ch, step);
        ch = _mm512_mask_sub_epi32(ch, _mm512_cmpge_epi32_mask(ch, vout), ch, vout);
        for (c += 16; c >= out_c; c -= out_c) q++;
    }
}

CK_TARGET_AVX512
static void residual_avx512(const ck_residual_f32 *r, float *output, int32_t out_c, int32_t p0, int32_t p1,
                            int32_t c0, int32_t c1) {
    if (c0 == 0 && c1 == out_c && r->pixel_stride == r->channels) {
        residual_avx512_run(r, output, out_c, p0, p1);
        return;
    }
    const __m512 vlo = _mm512_set1_ps(r->lo), vhi = _mm512_set1_ps(r->hi);
    const int32_t lo_c = r->before, hi_c = r->before + r->channels;
    for (int32_t p = p0; p < p1; p++) {
        float *o = output + (size_t)p * out_c;
        const float *row = r->data + (size_t)p * r->pixel_stride;
        for (int32_t j = c0; j < c1; j += 16) {
            const int32_t n = ck_min(16, c1 - j);
            const __mmask16 m = (__mmask16)((1u << n) - 1u);
            // Lanes whose channel has a residual value; the others add +0.0 (the PAD's zeros).
            const int32_t a = ck_max(j, lo_c), b = ck_min(j + n, hi_c);
            __m512 x = _mm512_setzero_ps();
            if (a < b) {
                const __mmask16 rm = (__mmask16)((((1u << (b - a)) - 1u) << (a - j)));
                x = _mm512_maskz_loadu_ps(rm, row + (j - lo_c));
            }
            const __m512 v = _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, o + j))));
            _mm512_mask_storeu_ps(o + j, m, v);
        }
    }
}
#endif

#if CK_X86
/// residual_portable's sums and clamps 8 channels at a time: the channels before and after the
/// residual's add +0.0 (the PAD's zeros), as there.
CK_TARGET_AVX2
static void residual_avx2(const ck_residual_f32 *r, float *output, int32_t out_c, int32_t p0, int32_t p1, int32_t c0, int32_t c1) {
    const __m256 vlo = _mm256_set1_ps(r->lo), vhi = _mm256_set1_ps(r->hi), zero = _mm256_setzero_ps();
    const int32_t lo_c = r->before, hi_c = r->before + r->channels;
    // The channel ranges [c0, c1) splits into: before the residual, with it, after it.
    const int32_t bounds[4] = {c0, ck_max(c0, ck_min(c1, lo_c)), ck_max(c0, ck_min(c1, hi_c)), c1};
    for (int32_t p = p0; p < p1; p++) {
        float *o = output + (size_t)p * out_c;
        const float *row = r->data + (size_t)p * r->pixel_stride;
        for (int s = 0; s < 3; s++) {
            const int with = s == 1;
            int32_t j = bounds[s];
            for (; j + 8 <= bounds[s + 1]; j += 8) {
                const __m256 x = with ? _mm256_loadu_ps(row + (j - lo_c)) : zero;
                _mm256_storeu_ps(o + j, _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(x, _mm256_loadu_ps(o + j)))));
            }
            for (; j < bounds[s + 1]; j++) o[j] = clamp_tflite_f32((with ? row[j - lo_c] : 0.0f) + o[j], r->lo, r->hi);
        }
    }
}
#endif

void ck_residual_add_f32(int32_t isa, const ck_residual_f32 *residual, float *output, int32_t out_c,
                         int32_t pixel_begin, int32_t pixel_end, int32_t c_begin, int32_t c_end) {
    if (!residual || c_begin >= c_end) return;
#if CK_X86
    if (isa >= CK_ISA_AVX512) {
        residual_avx512(residual, output, out_c, pixel_begin, pixel_end, c_begin, c_end);
        return;
    }
    if (isa >= CK_ISA_AVX2) {
        residual_avx2(residual, output, out_c, pixel_begin, pixel_end, c_begin, c_end);
        return;
    }
#else
    (void)isa;
#endif
    residual_portable(residual, output, out_c, pixel_begin, pixel_end, c_begin, c_end);
}

void ck_conv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                 float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                 int32_t block_end, float out_min, float out_max, const float *zeros,
                 const int32_t *offsets) {
    ck_conv_f32_residual(isa, g, input, packed, output, pixel_begin, pixel_end, block_begin, block_end,
                         out_min, out_max, zeros, offsets, NULL);
}

static void conv_f32_run(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                         float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                         int32_t block_end, float out_min, float out_max, const float *zeros,
                         const int32_t *offsets, const ck_residual_f32 *residual, const char *pf, const char *pf_end);

void ck_conv_f32_residual(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                          float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                          int32_t block_end, float out_min, float out_max, const float *zeros,
                          const int32_t *offsets, const ck_residual_f32 *residual) {
    conv_f32_run(isa, g, input, packed, output, pixel_begin, pixel_end, block_begin, block_end, out_min, out_max, zeros,
                 offsets, residual, NULL, NULL);
}

void ck_conv_f32_prefetching(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                             float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                             int32_t block_end, float out_min, float out_max, const float *zeros,
                             const int32_t *offsets, const void *prefetch, size_t prefetch_bytes) {
    const char *pf = (const char *)prefetch;
    conv_f32_run(isa, g, input, packed, output, pixel_begin, pixel_end, block_begin, block_end, out_min, out_max, zeros,
                 offsets, NULL, pf, pf ? pf + prefetch_bytes : NULL);
}

static void conv_f32_run(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                         float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                         int32_t block_end, float out_min, float out_max, const float *zeros,
                         const int32_t *offsets, const ck_residual_f32 *residual, const char *pf, const char *pf_end) {
    if (g->k_h * g->k_w <= 0 || g->k_h * g->k_w > CK_MAX_TAPS || g->out_w <= 0 || pixel_begin >= pixel_end) return;
    const int rowwise = ck_conv_f32_row_taps(g) != 0;
    const int32_t taps = rowwise ? g->k_h : g->k_h * g->k_w, k = rowwise ? g->k_w * g->in_c : g->in_c;
    // A 1×1, stride-1, unpadded convolution reads output pixel p's input at p: no pointer table.
    const int direct = g->k_h == 1 && g->k_w == 1 && g->stride_h == 1 && g->stride_w == 1 &&
                       g->pad_top == 0 && g->pad_left == 0 && g->in_h == g->out_h && g->in_w == g->out_w;
#if CK_X86
    // Where 512-bit operations run as two halves (Zen 4), the AVX2 tiles of a direct 1×1 layer
    // reach the FMA peak that the AVX-512 tiles miss (scripts/isa-ab.sh on DeepLab's, MobileNet's
    // and the selfie models' 1×1 shapes: 50-58 against 32-56 GMAC/s, the same bytes), except
    // smallk_rows' reductions of 4-16 channels over few blocks, and tiles that prefetch a later
    // layer's weights (AVX-512 only). Only for the best level (the optimized selection): a capped
    // AVX-512 selection still runs the AVX-512 tiles, for tests and bisecting.
    if (isa >= CK_ISA_AVX512 && isa == ck_best_isa() && direct && !pf && ck_avx512_split() &&
        !(!residual && smallk_supported(k, block_end - block_begin)))
        isa = CK_ISA_AVX2;
#endif
    tile_fn tile = tile_portable, narrow = NULL;
    int wide = 0;   // AVX-512: pairs of full column blocks by tile_avx512_wide
    rows_fn rows = rows_portable;
    static const int32_t portable_cap[2] = {0, 4};
    const int32_t *rows_cap = portable_cap;  // blocks in flight per row count, rows 1...rows_max
    int32_t mr_cap = 4, rows_max = 1;
#if CK_X86
    if (isa >= CK_ISA_AVX512) {
        tile = tile_avx512; narrow = tile_avx512_narrow; mr_cap = 12; wide = 1;
        rows = rows_avx512; rows_cap = rows_avx512_cap; rows_max = 4;
    } else if (isa >= CK_ISA_AVX2) {
        tile = tile_avx2; narrow = tile_avx2_narrow; mr_cap = 6;
        rows = rows_avx2; rows_cap = rows_avx2_cap; rows_max = 3;
    }
#else
    (void)isa;
    (void)wide;
    (void)pf;
    (void)pf_end;
#endif
    const size_t block_stride = (size_t)CK_F32_NR * (1 + (size_t)taps * k);
    const float *ptrs[CK_MAX_TAPS * CK_MAX_MR];
    float patch[rowwise ? CK_MAX_MR * CK_ROW_PATCH : 1];
#if CK_X86
    if (wide && direct && k > CK_KBLOCK)
        block_begin = conv_kblocked_avx512(isa, g, input, packed, block_stride, output, pixel_begin, pixel_end, block_begin,
                                           block_end, out_min, out_max, residual);
    if (block_begin >= block_end) return;
    if (wide && direct && !residual && smallk_supported(k, block_end - block_begin)) {
        for (int32_t b = block_begin; b < block_end; b++)
            smallk_rows(input, k, packed + (size_t)b * block_stride, output + (size_t)b * CK_F32_NR, g->out_c,
                        ck_min(CK_F32_NR, g->out_c - b * CK_F32_NR), pixel_begin, pixel_end, out_min, out_max);
        return;
    }
#endif
    int32_t oy = pixel_begin / g->out_w, ox = pixel_begin - oy * g->out_w;
    const int32_t c_begin = block_begin * CK_F32_NR, c_end = ck_min(g->out_c, block_end * CK_F32_NR);
    int32_t pending_p = 0, pending_end = 0;  // the tile whose residual is still to add
    // A residual that adds the same vector to every pixel's channels (ConstantBranchFusion's
    // projection of a constant image), over full block pairs: added in the wide tiles' registers
    // before their clamp instead of by a pass over the stored tile (DeepLab's 256→256 head 0.85 →
    // 0.80 ms in a C harness). The same sum and clamp as the pass, so the same values.
    int fold = 0;
#if CK_X86
    fold = wide && direct && !pf && residual && residual->pixel_stride == 0 && residual->before == 0 &&
           residual->channels == g->out_c && (block_end - block_begin) % 2 == 0 && block_end * CK_F32_NR <= g->out_c;
#endif
    // AVX2's 6 × 16 and 6 × 8 tiles add a residual that starts at channel 0 in registers
    // (tile_avx2_residual): the pass read back stores that were still in flight (BlazeFace: a tenth
    // of the model's time in it). Tiles of 1–3 rows (rows_avx2) still take the pass.
    int fold_avx2 = 0;
#if CK_X86
    fold_avx2 = tile == tile_avx2 && residual && residual->before == 0 && residual->channels <= g->out_c;
    if (tile == tile_avx2 && direct && !pf && (!residual || fold_avx2))
        pixel_begin = conv_direct_avx2(g, input, k, packed, block_stride, output, pixel_begin, pixel_end, block_begin, block_end,
                                       out_min, out_max, residual, packed_sparse_ok(g, packed));
#endif

    for (int32_t p = pixel_begin; p < pixel_end; p += mr_cap) {
        const int32_t mr = ck_min(mr_cap, pixel_end - p);
        if (direct) {
            for (int32_t m = 0; m < mr_cap; m++) ptrs[m] = input + (size_t)(p + (m < mr ? m : 0)) * k;
        } else if (rowwise) {
            tile_row_pointers(g, input, zeros, oy, ox, mr, mr_cap, ptrs, patch);
            ox += mr;
            while (ox >= g->out_w) { ox -= g->out_w; oy++; }
        } else if (offsets) {
            const int32_t *row = offsets + (size_t)p * taps;
            for (int32_t m = 0; m < mr_cap; m++) {
                const int32_t *o = m < mr ? row + (size_t)m * taps : row;
                for (int32_t t = 0; t < taps; t++) ptrs[t * mr_cap + m] = o[t] >= 0 ? input + o[t] : zeros;
            }
        } else {
            tile_pointers(g, input, zeros, oy, ox, mr, mr_cap, ptrs);
            ox += mr;
            while (ox >= g->out_w) { ox -= g->out_w; oy++; }
        }
        if (mr <= rows_max) {
            // Few rows: several blocks in flight instead of a mostly idle tile.
            for (int32_t b = block_begin; b < block_end;) {
                const int32_t nb = rows_group(block_end - b, rows_cap[mr]);
                const int32_t nr_last = ck_min(CK_F32_NR, g->out_c - (b + nb - 1) * CK_F32_NR);
                rows(mr, nb, nr_last, ptrs, mr_cap, taps, k, packed + (size_t)b * block_stride, block_stride,
                     output + (size_t)p * g->out_c + (size_t)b * CK_F32_NR, g->out_c, out_min, out_max);
                b += nb;
            }
            if (residual) {
                ck_residual_add_f32(isa, residual, output, g->out_c, pending_p, pending_end, c_begin, c_end);
                pending_p = p;
                pending_end = p + mr;
            }
            continue;
        }
        for (int32_t b = block_begin; b < block_end;) {
            const int32_t nr = ck_min(CK_F32_NR, g->out_c - b * CK_F32_NR);
#if CK_X86
            if (wide && direct && !pf && block_end - b == 3 && (b + 2) * CK_F32_NR < g->out_c) {
                // An odd count of blocks: the last three as 4 × 48 tiles (see tile_avx512_triple).
                const int32_t nr2 = ck_min(CK_F32_NR, g->out_c - (b + 2) * CK_F32_NR);
                float *dst = output + (size_t)p * g->out_c + (size_t)b * CK_F32_NR;
                for (int32_t m = 0; m < mr; m += 4)
                    tile_avx512_triple(ck_min(4, mr - m), nr2, ptrs + m, mr_cap, taps, k, packed + (size_t)b * block_stride,
                                       block_stride, dst + (size_t)m * g->out_c, g->out_c, out_min, out_max, 0, 1, 1);
                b += 3;
                continue;
            }
            if (wide && nr == CK_F32_NR && b + 1 < block_end) {
                // Two column blocks per pass, the tile's rows in two halves of 6.
                const int32_t nr1 = ck_min(CK_F32_NR, g->out_c - (b + 1) * CK_F32_NR);
                const float *w0 = packed + (size_t)b * block_stride;
                float *dst = output + (size_t)p * g->out_c + (size_t)b * CK_F32_NR;
                const float *add = fold ? residual->data + (size_t)b * CK_F32_NR : NULL;
                const float lo = fold ? residual->lo : out_min, hi = fold ? residual->hi : out_max;
                pf = tile_avx512_wide(ck_min(mr, 6), nr1, ptrs, mr_cap, taps, k, w0, w0 + block_stride, dst, g->out_c, lo, hi,
                                      0, 1, 1, pf, pf_end, add);
                if (mr > 6)
                    pf = tile_avx512_wide(mr - 6, nr1, ptrs + 6, mr_cap, taps, k, w0, w0 + block_stride,
                                          dst + 6 * (size_t)g->out_c, g->out_c, lo, hi, 0, 1, 1, pf, pf_end, add);
                b += 2;
                continue;
            }
#endif
#if CK_X86
            if (fold_avx2) {
                // The residual's channels [b * 16, b * 16 + 16) of pixel p (those past its count add +0.0).
                const int32_t c0 = b * CK_F32_NR;
                const int32_t res_n = residual->channels - c0;
                const float *res = residual->data + (size_t)p * residual->pixel_stride + (res_n > 0 ? c0 : 0);
                tile_avx2_residual(mr, nr, ptrs, taps, k, packed + (size_t)b * block_stride, output + (size_t)p * g->out_c + c0,
                                   g->out_c, out_min, out_max, res, (size_t)residual->pixel_stride, res_n, residual->lo, residual->hi);
                b++;
                continue;
            }
#endif
            (nr <= 8 && narrow ? narrow : tile)(mr, nr, ptrs, taps, k, packed + (size_t)b * block_stride,
                 output + (size_t)p * g->out_c + (size_t)b * CK_F32_NR, g->out_c, out_min, out_max);
            b++;
        }
        // The residual of the previous tile, still in L1: one tile later, so its (masked) stores
        // have left the store buffer (a load that has to wait for them stalls far longer).
        if (residual) {
            ck_residual_add_f32(isa, residual, output, g->out_c, pending_p, pending_end, c_begin, c_end);
            pending_p = p;
            pending_end = fold || fold_avx2 ? p : p + mr;  // a folded tile has its residual already
        }
    }
    ck_residual_add_f32(isa, residual, output, g->out_c, pending_p, pending_end, c_begin, c_end);
}

// ---- first layers: 3 input channels, stride 2 along x (see ckernels.h) ----
//
// Vectorized over 16 output pixels of a row instead of over output channels: the 16 pixels' inputs
// for one filter tap (ky, kx, c) sit 6 floats apart in the input row (stride 2 × 3 channels). So
// each input row is split once into 6 planes, (column parity p, channel c): Q_pc[j] is channel c of
// input column 2j + p - pad_left (zero outside the row), and tap (kx, c) of output pixels
// ox..ox + 15 is Q_(kx & 1)c[ox + kx / 2 ...], one unaligned load. A row's planes depend neither
// on the output row nor on the filter row reading them, so they are built once and kept in a ring
// of k_h rows on the stack for the next output rows (stride 2 along y: each input row serves ~1.5
// output rows) instead of rebuilt with permutes per block and filter row: the shuffles, on the
// port the FMAs also need, were about as many as the FMAs. Rows too wide for the ring go in strips.
// Each tap is then one FMA per output channel with the weight broadcast, where the channel-
// vectorized GEMM wastes lanes (8 channels) and spends its time on per-tap pointers. The
// accumulators ([channel][pixel]) are transposed to NHWC in registers. Every output is bias + its
// taps in (ky, kx, c) order; rows outside the image are skipped (the GEMM adds their zero
// products: only a -0.0 sum can differ, by sign).

/// Floats of the planes' ring (24 KiB of stack): k_h input rows of 6 planes, one strip wide.
#ifndef C3S2_RING_FLOATS
#define C3S2_RING_FLOATS 6144
#endif
/// Floats of the repacked weights (64 output channels, 7 × 5 taps of 3 channels: 26 KiB of stack).
#define C3S2_WEIGHT_FLOATS (64 * 7 * 5 * 3)

int32_t ck_conv_c3s2_supported(const ck_conv_geometry *g) {
    return g->in_c == 3 && g->stride_w == 2 && g->dil_w == 1 && (g->k_w == 3 || g->k_w == 5) &&
           g->k_h >= 1 && g->k_h <= 7 && g->out_c % 8 == 0 && g->out_c <= 64 && g->out_w >= 1;
}

/// The ring slots (6 * wp floats each, k_h of them in `ring`) of output row oy's input rows:
/// q[ky] is filter row ky's slot, NULL outside the image. Rows not yet in the ring go in slots no
/// filter row of this output row reads (k_h slots for at most k_h rows: there is always one);
/// `held` (each slot's input row, -1: none) is updated and those rows and slots are returned in
/// fresh_iy / fresh_q (their count), for the caller to build their planes.
static int32_t c3s2_ring_rows(const ck_conv_geometry *g, int32_t oy, int32_t *held, float *ring, int32_t wp, const float **q,
                              int32_t *fresh_iy, float **fresh_q) {
    uint32_t used = 0;  // slots holding this output row's input rows
    for (int32_t ky = 0; ky < g->k_h; ky++) {
        const int32_t iy = oy * g->stride_h - g->pad_top + ky * g->dil_h;
        q[ky] = NULL;
        if (iy < 0 || iy >= g->in_h) continue;
        for (int32_t s = 0; s < g->k_h; s++)
            if (held[s] == iy) { q[ky] = ring + (size_t)s * 6 * wp; used |= 1u << s; break; }
    }
    int32_t nf = 0;
    for (int32_t ky = 0; ky < g->k_h; ky++) {
        const int32_t iy = oy * g->stride_h - g->pad_top + ky * g->dil_h;
        if (iy < 0 || iy >= g->in_h || q[ky]) continue;
        const int32_t s = __builtin_ctz(~used);
        used |= 1u << s;
        held[s] = iy;
        fresh_iy[nf] = iy;
        fresh_q[nf++] = ring + (size_t)s * 6 * wp;
        q[ky] = ring + (size_t)s * 6 * wp;
    }
    return nf;
}

#if CK_X86
/// Stores 8 channel vectors (16 pixels each) as n pixels of 8 floats, `stride` floats apart.
CK_TARGET_AVX512 CK_INLINE
void c3s2_store8(const __m512 *a, float *out, int32_t stride, int32_t n) {
    const __m512 t0 = _mm512_unpacklo_ps(a[0], a[1]), t1 = _mm512_unpackhi_ps(a[0], a[1]);
    const __m512 t2 = _mm512_unpacklo_ps(a[2], a[3]), t3 = _mm512_unpackhi_ps(a[2], a[3]);
    const __m512 t4 = _mm512_unpacklo_ps(a[4], a[5]), t5 = _mm512_unpackhi_ps(a[4], a[5]);
    const __m512 t6 = _mm512_unpacklo_ps(a[6], a[7]), t7 = _mm512_unpackhi_ps(a[6], a[7]);
    // u[i] 128-bit chunk k: pixel 4k + i, channels 0-3 (u[4 + i]: channels 4-7).
    __m512 u[8];
    u[0] = _mm512_shuffle_ps(t0, t2, 0x44); u[1] = _mm512_shuffle_ps(t0, t2, 0xEE);
    u[2] = _mm512_shuffle_ps(t1, t3, 0x44); u[3] = _mm512_shuffle_ps(t1, t3, 0xEE);
    u[4] = _mm512_shuffle_ps(t4, t6, 0x44); u[5] = _mm512_shuffle_ps(t4, t6, 0xEE);
    u[6] = _mm512_shuffle_ps(t5, t7, 0x44); u[7] = _mm512_shuffle_ps(t5, t7, 0xEE);
    // The compiler would fold the extracts below into the shuffles above, as 128-bit shuffles of
    // extracted chunks (an extract to a register is a port-5 uop): keep u opaque.
    CK_UNROLL for (int i = 0; i < 8; i++) __asm__("" : "+v"(u[i]));
    // Each chunk stored on its own: a 128-bit extract to memory is a store (no shuffle uop), where
    // pairing the chunks into 256-bit pixels takes 8 more shuffles on the FMAs' port 5.
    // (The chunk index of an extract must be a literal, hence the macro.)
#define C3S2_STORE_CHUNK(k)                                                               \
    CK_UNROLL for (int i = 0; i < 4; i++) {                                               \
        if (4 * (k) + i < n) {                                                            \
            float *p = out + (size_t)(4 * (k) + i) * stride;                              \
            _mm_storeu_ps(p, _mm512_extractf32x4_ps(u[i], k));                            \
            _mm_storeu_ps(p + 4, _mm512_extractf32x4_ps(u[4 + i], k));                    \
        }                                                                                 \
    }
    C3S2_STORE_CHUNK(0) C3S2_STORE_CHUNK(1) C3S2_STORE_CHUNK(2) C3S2_STORE_CHUNK(3)
#undef C3S2_STORE_CHUNK
}

/// 16 columns of the 6 planes of one input row (`row_floats` floats) from input column xs (plane
/// column j of parity p: input column xs + 2j + p): q[(3p + c) * wp + j].
CK_TARGET_AVX512 CK_INLINE
void c3s2_planes16(const float *row, int32_t row_floats, int32_t xs, float *q, int32_t wp) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    // seg[e] = row[xs * 3 + e] for e in [0, 96): 32 input pixels, zero outside the row.
    const float *src = row + (ptrdiff_t)xs * 3;
    __m512 seg[6];
    if (xs >= 0 && (xs + 32) * 3 <= row_floats) {
        CK_UNROLL for (int v = 0; v < 6; v++) seg[v] = _mm512_loadu_ps(src + 16 * v);
    } else {
        CK_UNROLL for (int v = 0; v < 6; v++) {
            const __m512i e = _mm512_add_epi32(lane, _mm512_set1_epi32(xs * 3 + 16 * v));
            const __mmask16 m = _mm512_cmpge_epi32_mask(e, _mm512_setzero_si512()) &
                                _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(row_floats));
            seg[v] = _mm512_maskz_loadu_ps(m, src + 16 * v);
        }
    }
    // Channels first, per 16 pixels (seg[48h + 3k + c], k < 16): floats 3k + c < 32 come from
    // the first two vectors, the rest from the third: two permutes, all on port 5 (a three-way
    // blend before one permute costs as much and takes port 0 from the FMAs too). Then the
    // column parities of the 32 pixels: one permute per plane, 18 in all for 16 plane columns.
    __m512 ch[2][3];
    CK_UNROLL for (int c = 0; c < 3; c++) {
        const __m512i idx = _mm512_and_si512(_mm512_add_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32(3)),
                                                              _mm512_set1_epi32(c)), _mm512_set1_epi32(31));
        const __mmask16 hi = (__mmask16)(0xFFFF << ((34 - c) / 3));  // lanes with 3k + c >= 32
        CK_UNROLL for (int h = 0; h < 2; h++) {
            const __m512 lo2 = _mm512_permutex2var_ps(seg[3 * h], idx, seg[3 * h + 1]);
            ch[h][c] = _mm512_mask_permutexvar_ps(lo2, hi, idx, seg[3 * h + 2]);  // idx & 15 = 3k + c - 32
        }
    }
    CK_UNROLL for (int p = 0; p < 2; p++) {
        const __m512i idx = _mm512_add_epi32(_mm512_add_epi32(lane, lane), _mm512_set1_epi32(p));
        CK_UNROLL for (int c = 0; c < 3; c++)
            _mm512_store_ps(q + (size_t)(3 * p + c) * wp, _mm512_permutex2var_ps(ch[0][c], idx, ch[1][c]));
    }
}

/// Blocks of 16 pixels per pass: each broadcast weight then feeds two FMAs (one per block), where
/// with one block the broadcasts (a load each) and the taps' loads outnumber the FMAs.
#define C3S2_NP 2

/// Output channels [oc0, oc0 + 8) of NP blocks of 16 pixels from plane column j0 of the rows whose
/// planes are q[ky] (NULL: filter row outside the image): n pixels stored at `out`. `wk` holds the
/// group's weights as [ky][kx * 3 + c][8 channels].
CK_TARGET_AVX512 CK_INLINE
void c3s2_block(const ck_conv_geometry *g, const float *const *q, int32_t wp, const float *wk, const float *bias,
                float *out, int32_t j0, int32_t n, int32_t oc0, __m512 vlo, __m512 vhi, const int KW, const int NP) {
    __m512 acc[C3S2_NP][8];
    CK_UNROLL for (int o = 0; o < 8; o++) {
        const __m512 b = _mm512_set1_ps(bias ? bias[oc0 + o] : 0.0f);
        CK_UNROLL for (int p = 0; p < NP; p++) acc[p][o] = b;
    }
    for (int32_t ky = 0; ky < g->k_h; ky++) {
        if (!q[ky]) continue;
        const float *w = wk + (size_t)ky * KW * 3 * 8;
        const float *x0 = q[ky] + j0;
        CK_UNROLL for (int o = 0; o < 3 * KW; o++) {
            const int kx = o / 3, c = o % 3;
            __m512 x[C3S2_NP];
            CK_UNROLL for (int p = 0; p < NP; p++) x[p] = _mm512_loadu_ps(x0 + (size_t)((kx & 1) * 3 + c) * wp + kx / 2 + 16 * p);
            CK_UNROLL for (int oc = 0; oc < 8; oc++) {
                const __m512 wv = _mm512_set1_ps(w[o * 8 + oc]);
                CK_UNROLL for (int p = 0; p < NP; p++) acc[p][oc] = _mm512_fmadd_ps(x[p], wv, acc[p][oc]);
            }
        }
    }
    CK_UNROLL for (int p = 0; p < NP; p++) {
        CK_UNROLL for (int o = 0; o < 8; o++) acc[p][o] = _mm512_min_ps(_mm512_max_ps(acc[p][o], vlo), vhi);
        c3s2_store8(acc[p], out + (size_t)16 * p * g->out_c, g->out_c, ck_min(16, n - 16 * p));
    }
}

CK_TARGET_AVX512
static void c3s2_rows(const ck_conv_geometry *g, const float *input, const float *filter, const float *bias, float *output,
                      int32_t row_begin, int32_t row_end, float lo, float hi) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    float ring[C3S2_RING_FLOATS] __attribute__((aligned(64)));
    const int32_t row_floats = g->in_w * 3;
    // The weights repacked per 8 output channels as [ky][tap][channel]: each broadcast is then at a
    // fixed offset from one pointer, where the op's [out_c][k_h][k_w][3] layout needs a pointer per
    // channel (k_h is not a constant), which the compiler spills and reloads, a load per FMA on top
    // of the broadcast.
    float wk[C3S2_WEIGHT_FLOATS] __attribute__((aligned(64)));
    const int32_t taps3 = g->k_h * g->k_w * 3;
    for (int32_t oc0 = 0; oc0 < g->out_c; oc0 += 8)
        for (int32_t t = 0; t < taps3; t++)
            for (int32_t oc = 0; oc < 8; oc++) wk[(size_t)oc0 * taps3 + (size_t)t * 8 + oc] = filter[(size_t)(oc0 + oc) * taps3 + t];
    // Strip width in output pixels: a ring row is 6 planes of the strip + 16 columns (taps at
    // kx >= 2 read one or two columns past the strip's last block).
    const int32_t strip = ((C3S2_RING_FLOATS / (6 * g->k_h)) & ~15) - 16;
    for (int32_t x0 = 0; x0 < g->out_w; x0 += strip) {
        const int32_t sw = ck_min(strip, g->out_w - x0);
        const int32_t nb = (sw + 15) / 16, chunks = nb + 1, wp = 16 * chunks;
        int32_t held[7];  // the input row in each ring slot, -1: none
        for (int32_t s = 0; s < g->k_h; s++) held[s] = -1;
        for (int32_t oy = row_begin; oy < row_end; oy++) {
            // The input rows four output rows ahead (the ones they read first), into L2: a model's
            // input is usually not in this core's caches when its first layer runs (another
            // invoke's tensors have been through since it was written). DeepLab's 257×257 input:
            // 0.217 → 0.209 ms at 1 thread, 0.110 → 0.097 ms at 2 (8 or 16 rows ahead: the same).
            if (oy + 4 < row_end) {
                // The strip's input columns (stride 2 along x).
                const int32_t c0 = ck_max(0, 2 * x0 - g->pad_left), c1 = ck_min(g->in_w, 2 * (x0 + sw) - g->pad_left + g->k_w);
                for (int32_t ky = ck_max(0, g->k_h - g->stride_h); ky < g->k_h && c0 < c1; ky++) {
                    const int32_t iy = (oy + 4) * g->stride_h - g->pad_top + ky * g->dil_h;
                    if (iy < 0 || iy >= g->in_h) continue;
                    const char *r = (const char *)(input + (size_t)iy * row_floats + (size_t)c0 * 3);
                    for (int32_t b = 0; b < (c1 - c0) * 12; b += 64) __builtin_prefetch(r + b, 0, 2);
                }
            }
            const float *q[7];
            int32_t fresh_iy[7];
            float *fresh_q[7];
            const int32_t nf = c3s2_ring_rows(g, oy, held, ring, wp, q, fresh_iy, fresh_q);
            // The new rows' planes, the whole strip (building them block by block among the FMAs,
            // to mix the permutes with those, measured no faster).
            const int32_t xs0 = 2 * x0 - g->pad_left;
            for (int32_t f = 0; f < nf; f++)
                for (int32_t t = 0; t < chunks; t++)
                    c3s2_planes16(input + (size_t)fresh_iy[f] * row_floats, row_floats, xs0 + 32 * t, fresh_q[f] + 16 * t, wp);
            for (int32_t b = 0; b < nb;) {
                const int32_t np = ck_min(C3S2_NP, nb - b), j0 = 16 * b;
                const int32_t n = sw - j0;
                float *dst = output + ((size_t)oy * g->out_w + x0 + j0) * g->out_c;
                for (int32_t oc0 = 0; oc0 < g->out_c; oc0 += 8) {
                    const float *w = wk + (size_t)oc0 * taps3;
#define C3S2_BLOCK(KW, NP) c3s2_block(g, q, wp, w, bias, dst + oc0, j0, n, oc0, vlo, vhi, KW, NP)
                    if (g->k_w == 3) {
                        if (np == 2) C3S2_BLOCK(3, 2);
                        else C3S2_BLOCK(3, 1);
                    } else {
                        if (np == 2) C3S2_BLOCK(5, 2);
                        else C3S2_BLOCK(5, 1);
                    }
#undef C3S2_BLOCK
                }
                b += np;
            }
        }
    }
}

// Eight output channels where 512-bit operations run as two halves (Zen 4: ck_avx512_split):
// one 256-bit vector per output pixel, its channels in lanes, so the input needs neither planes
// nor a transpose to NHWC: tap (kx, c) of a pixel is a broadcast of the input float itself (an
// FMA's memory operand), the pixel's filter row one run of k_w * 3 floats of the row. 12 pixels
// per pass (12 FMA chains; one weight load per 12 FMAs). There, the 16-pixel blocks above spend
// their permutes (planes, transposes) on the pipe the FMAs need, amortized over 8 channels only:
// mobilenet_v1_0.25's first layer 0.074 → 0.061 ms at 1 thread (16 or 8 pixels per pass: 0.069,
// 0.062; each input float broadcast once for the 1-2 pixels that read it, or the compiler kept
// from sharing broadcasts between taps: 0.065; the last pass overlapping the one before instead
// of 4- and 1-pixel passes: 0.062; prefetching the rows ahead: 0.063).
// Sums in the same order (bias, then the taps in (ky, kx, c) order, rows outside the image
// skipped, columns outside it as zero products), so the values are the AVX-512 kernel's.

/// Pixels per pass of c3s2_c8.
#define C3S2_C8_PX 12

/// Output pixels [ox0, ox0 + NPX) of one output row, every input column inside the image: rows[ky]
/// is filter row ky's input row at pixel ox0's first column (NULL: outside the image).
CK_TARGET_AVX512 CK_INLINE
void c3s2_c8_tile(const float *const *rows, int32_t k_h, const float *wk, __m256 vb, __m256 vlo, __m256 vhi,
                  float *out, const int KW, const int NPX) {
    __m256 acc[C3S2_C8_PX];
    CK_UNROLL for (int p = 0; p < NPX; p++) acc[p] = vb;
    for (int32_t ky = 0; ky < k_h; ky++) {
        const float *x = rows[ky];
        if (!x) continue;
        const float *w = wk + (size_t)ky * KW * 3 * 8;
        CK_UNROLL for (int t = 0; t < 3 * KW; t++) {
            const __m256 wv = _mm256_load_ps(w + 8 * t);
            CK_UNROLL for (int p = 0; p < NPX; p++) acc[p] = _mm256_fmadd_ps(_mm256_set1_ps(x[6 * p + t]), wv, acc[p]);
        }
    }
    CK_UNROLL for (int p = 0; p < NPX; p++) _mm256_storeu_ps(out + 8 * p, _mm256_min_ps(_mm256_max_ps(acc[p], vlo), vhi));
}

CK_TARGET_AVX512
static void c3s2_c8_rows(const ck_conv_geometry *g, const float *input, const float *filter, const float *bias, float *output,
                         int32_t row_begin, int32_t row_end, float lo, float hi) {
    float wk[C3S2_WEIGHT_FLOATS] __attribute__((aligned(64)));
    const int32_t KW = g->k_w, taps3 = g->k_h * KW * 3, row_floats = g->in_w * 3;
    for (int32_t t = 0; t < taps3; t++)
        for (int32_t oc = 0; oc < 8; oc++) wk[(size_t)t * 8 + oc] = filter[(size_t)oc * taps3 + t];
    const __m256 vb = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    // Output columns [in0, in1) read only columns inside the image.
    const int32_t in0 = ck_min(g->out_w, (g->pad_left + 1) / 2);
    const int32_t in1 = ck_max(in0, ck_min(g->out_w, g->in_w - KW + g->pad_left >= 0 ? (g->in_w - KW + g->pad_left) / 2 + 1 : 0));
    for (int32_t oy = row_begin; oy < row_end; oy++) {
        const float *row[7];
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            const int32_t iy = oy * g->stride_h - g->pad_top + ky * g->dil_h;
            row[ky] = iy >= 0 && iy < g->in_h ? input + (size_t)iy * row_floats : NULL;
        }
        float *dst = output + (size_t)oy * g->out_w * 8;
        // The columns with taps outside the image, one pixel at a time.
        for (int32_t ox = 0; ox < g->out_w; ox++) {
            if (ox == in0) ox = in1;
            if (ox >= g->out_w) break;
            const int32_t ix0 = 2 * ox - g->pad_left;
            __m256 acc = vb;
            for (int32_t ky = 0; ky < g->k_h; ky++) {
                if (!row[ky]) continue;
                for (int32_t kx = 0; kx < KW; kx++) {
                    const int32_t ix = ix0 + kx;
                    const int inside = ix >= 0 && ix < g->in_w;
                    for (int32_t c = 0; c < 3; c++) {
                        const float x = inside ? row[ky][(size_t)ix * 3 + c] : 0.0f;
                        acc = _mm256_fmadd_ps(_mm256_set1_ps(x), _mm256_load_ps(wk + ((size_t)(ky * KW + kx) * 3 + c) * 8), acc);
                    }
                }
            }
            _mm256_storeu_ps(dst + (size_t)ox * 8, _mm256_min_ps(_mm256_max_ps(acc, vlo), vhi));
        }
        for (int32_t ox = in0; ox < in1;) {
            const int32_t n = in1 - ox >= C3S2_C8_PX ? C3S2_C8_PX : (in1 - ox >= 4 ? 4 : 1);
            const float *at[7];
            for (int32_t ky = 0; ky < g->k_h; ky++) at[ky] = row[ky] ? row[ky] + (size_t)(2 * ox - g->pad_left) * 3 : NULL;
#define C3S2_C8(KW_, NPX) c3s2_c8_tile(at, g->k_h, wk, vb, vlo, vhi, dst + (size_t)ox * 8, KW_, NPX)
            if (KW == 3) {
                if (n == C3S2_C8_PX) C3S2_C8(3, C3S2_C8_PX);
                else if (n == 4) C3S2_C8(3, 4);
                else C3S2_C8(3, 1);
            } else {
                if (n == C3S2_C8_PX) C3S2_C8(5, C3S2_C8_PX);
                else if (n == 4) C3S2_C8(5, 4);
                else C3S2_C8(5, 1);
            }
#undef C3S2_C8
            ox += n;
        }
    }
}

// AVX2: the same scheme over 8 output pixels per vector. Each block is 8 pixels × 8 output
// channels (8 ymm accumulators: a tap is one load of the input plane, 8 broadcast weights and 8
// FMAs), transposed to NHWC in registers. The sums run in the same order as the AVX-512 kernel's.
// The same code serves quantized first layers (ck_conv_q8_c3s2): planes of x - input zero point
// from the input bytes, weights minus their zero point, every product and partial sum an integer
// below 2^24 in magnitude (at most 105 products of at most 255 × 255), so the float sums are exact
// and an epilogue in conv_q8.c requantizes them.

/// Channel c of input column xs + 2j + p as a plane value: the float, or x - zero point of a byte.
static inline float c3s2_value(const c3s2_source *src, int32_t x, int32_t c) {
    const size_t at = (size_t)x * 3 + (size_t)c;
    if (src->kind == CK_C3S2_FLOAT) return ((const float *)src->row)[at];
    const int32_t v = src->kind == CK_C3S2_INT8 ? (int32_t)((const int8_t *)src->row)[at] : (int32_t)((const uint8_t *)src->row)[at];
    return (float)(v - src->zero_point);
}

/// Plane columns [j0, j1) of the 6 planes of one input row from input column xs: q[(3p + c) * wp + j]
/// is channel c of input column xs + 2j + p, zero outside the row.
static void c3s2_planes_scalar(const c3s2_source *src, int32_t in_w, int32_t xs, float *q, int32_t wp, int32_t j0, int32_t j1) {
    for (int32_t p = 0; p < 2; p++) {
        for (int32_t j = j0; j < j1; j++) {
            const int32_t x = xs + 2 * j + p;
            for (int32_t c = 0; c < 3; c++) q[(size_t)(3 * p + c) * wp + j] = x >= 0 && x < in_w ? c3s2_value(src, x, c) : 0.0f;
        }
    }
}

/// The same for plane columns [0, wp) (a multiple of 8): 8 columns (16 input pixels, 48 values)
/// at a time where they are all inside the row, as 3 channels of 8 pixels twice (two blends and a
/// permute each) and then each channel's even and odd pixels (a shuffle and a permute each).
CK_TARGET_AVX2
static void c3s2_planes_avx2(const c3s2_source *src, int32_t in_w, int32_t xs, float *q, int32_t wp) {
    const __m256i ir = _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5), ig = _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6);
    const __m256i ib = _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7);
    const __m256 zp = _mm256_set1_ps((float)src->zero_point);
    for (int32_t j = 0; j < wp; j += 8) {
        const int32_t x = xs + 2 * j;
        if (x < 0 || x + 16 > in_w) {
            c3s2_planes_scalar(src, in_w, xs, q, wp, j, j + 8);
            continue;
        }
        __m256 v[6];
        CK_UNROLL for (int k = 0; k < 6; k++) {
            const size_t at = (size_t)x * 3 + 8 * (size_t)k;
            if (src->kind == CK_C3S2_FLOAT) {
                v[k] = _mm256_loadu_ps((const float *)src->row + at);
            } else {
                const __m128i b = _mm_loadl_epi64((const __m128i *)((const uint8_t *)src->row + at));
                const __m256i w = src->kind == CK_C3S2_INT8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
                v[k] = _mm256_sub_ps(_mm256_cvtepi32_ps(w), zp);
            }
        }
        __m256 ch[3][2];
        CK_UNROLL for (int h = 0; h < 2; h++) {
            const __m256 a = v[3 * h], b = v[3 * h + 1], c = v[3 * h + 2];
            ch[0][h] = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(a, b, 0x92), c, 0x24), ir);
            ch[1][h] = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(a, b, 0x24), c, 0x49), ig);
            ch[2][h] = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(a, b, 0x49), c, 0x92), ib);
        }
        CK_UNROLL for (int c = 0; c < 3; c++) {
            const __m256 even = _mm256_shuffle_ps(ch[c][0], ch[c][1], 0x88), odd = _mm256_shuffle_ps(ch[c][0], ch[c][1], 0xDD);
            _mm256_storeu_ps(q + (size_t)c * wp + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8)));
            _mm256_storeu_ps(q + (size_t)(3 + c) * wp + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), 0xD8)));
        }
    }
}

/// Output channels [oc0, oc0 + 4) of 8·NP pixels (NP = 1 or 2 vectors of 8) from plane column j0,
/// clamped to [lo, hi] and stored to `out` (pixel i at out + i·stride, the first n pixels). At NP =
/// 2, 2 loads + 4 broadcasts per tap feed 8 FMAs, where a block of 8 pixels × 8 channels needs
/// 1 + 8 for 8: the loads, not the FMAs, bounded it.
/// (NP = 3, 12 accumulators, spills: slower.) Weights as ck_c3s2_pack_weights with 4-channel blocks.
CK_TARGET_AVX2 CK_INLINE
void c3s2_block4_avx2(const ck_conv_geometry *g, const float *const *q, int32_t wp, const float *wk, const float *bias,
                      float *out, int32_t stride, int32_t n, int32_t j0, int32_t oc0, __m256 vlo, __m256 vhi, const int KW,
                      const int NP) {
    __m256 acc[4][2];
    CK_UNROLL for (int o = 0; o < 4; o++) {
        const __m256 b = _mm256_set1_ps(bias ? bias[oc0 + o] : 0.0f);
        CK_UNROLL for (int p = 0; p < NP; p++) acc[o][p] = b;
    }
    for (int32_t ky = 0; ky < g->k_h; ky++) {
        if (!q[ky]) continue;
        const float *w = wk + (size_t)ky * KW * 3 * 4;
        const float *x0 = q[ky] + j0;
        CK_UNROLL for (int o = 0; o < 3 * KW; o++) {
            const int kx = o / 3, c = o % 3;
            const float *xp = x0 + (size_t)((kx & 1) * 3 + c) * wp + kx / 2;
            __m256 x[2];
            CK_UNROLL for (int p = 0; p < NP; p++) x[p] = _mm256_loadu_ps(xp + 8 * p);
            CK_UNROLL for (int oc = 0; oc < 4; oc++) {
                const __m256 b = _mm256_broadcast_ss(w + o * 4 + oc);
                CK_UNROLL for (int p = 0; p < NP; p++) acc[oc][p] = _mm256_fmadd_ps(x[p], b, acc[oc][p]);
            }
        }
    }
    CK_UNROLL for (int p = 0; p < NP; p++) {
        __m256 v[4];
        CK_UNROLL for (int o = 0; o < 4; o++) v[o] = _mm256_min_ps(_mm256_max_ps(acc[o][p], vlo), vhi);
        // Lane i of v[o]: channel o of pixel i → u[i] holds pixel i (low half) and i + 4 (high half).
        const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
        const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
        const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                             _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
        float *o = out + (size_t)8 * p * stride;
        const int32_t m = n - 8 * p;
        if (m >= 8) {
            CK_UNROLL for (int i = 0; i < 4; i++) {
                _mm_storeu_ps(o + (size_t)i * stride, _mm256_castps256_ps128(u[i]));
                _mm_storeu_ps(o + (size_t)(i + 4) * stride, _mm256_extractf128_ps(u[i], 1));
            }
        } else {
            for (int i = 0; i < 4 && i < m; i++) _mm_storeu_ps(o + (size_t)i * stride, _mm256_castps256_ps128(u[i]));
            for (int i = 0; i < 4 && i + 4 < m; i++) _mm_storeu_ps(o + (size_t)(i + 4) * stride, _mm256_extractf128_ps(u[i], 1));
        }
    }
}

CK_TARGET_AVX2
void ck_c3s2_rows_avx2(const ck_conv_geometry *g, const c3s2_source *input, const float *wk, const float *bias, float lo, float hi,
                       float *output, c3s2_epilogue epilogue, const void *context, int32_t row_begin, int32_t row_end) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    float ring[C3S2_RING_FLOATS] __attribute__((aligned(64)));
    const size_t row_values = (size_t)g->in_w * 3, value_bytes = input->kind == CK_C3S2_FLOAT ? 4 : 1;
    const int32_t taps3 = g->k_h * g->k_w * 3;
    // Strip width in output pixels: a ring row is 6 planes of the strip + 8 columns (taps at kx >= 2
    // read one or two columns past the strip's last block).
    const int32_t strip = ((C3S2_RING_FLOATS / (6 * g->k_h)) & ~7) - 8;
    for (int32_t x0 = 0; x0 < g->out_w; x0 += strip) {
        const int32_t sw = ck_min(strip, g->out_w - x0);
        const int32_t nb = (sw + 7) / 8, wp = 8 * (nb + 1);
        int32_t held[7];  // the input row in each ring slot, -1: none
        for (int32_t s = 0; s < g->k_h; s++) held[s] = -1;
        for (int32_t oy = row_begin; oy < row_end; oy++) {
            if (oy + 4 < row_end) {  // the input rows four output rows ahead, into L2 (see c3s2_rows)
                const int32_t c0 = ck_max(0, 2 * x0 - g->pad_left), c1 = ck_min(g->in_w, 2 * (x0 + sw) - g->pad_left + g->k_w);
                for (int32_t ky = ck_max(0, g->k_h - g->stride_h); ky < g->k_h && c0 < c1; ky++) {
                    const int32_t iy = (oy + 4) * g->stride_h - g->pad_top + ky * g->dil_h;
                    if (iy < 0 || iy >= g->in_h) continue;
                    const char *r = (const char *)input->row + ((size_t)iy * row_values + (size_t)c0 * 3) * value_bytes;
                    for (size_t b = 0; b < (size_t)(c1 - c0) * 3 * value_bytes; b += 64) __builtin_prefetch(r + b, 0, 2);
                }
            }
            const float *q[7];
            int32_t fresh_iy[7];
            float *fresh_q[7];
            const int32_t nf = c3s2_ring_rows(g, oy, held, ring, wp, q, fresh_iy, fresh_q);
            for (int32_t f = 0; f < nf; f++) {
                c3s2_source row = *input;
                row.row = (const char *)input->row + (size_t)fresh_iy[f] * row_values * value_bytes;
                c3s2_planes_avx2(&row, g->in_w, 2 * x0 - g->pad_left, fresh_q[f], wp);
            }
            if (!epilogue) {
                // Stored floats: 16 pixels × 4 channels per block (c3s2_block4_avx2), an odd last 8
                // pixels of the strip as 8 × 4.
                for (int32_t b = 0; b < nb; b += 2) {
                    const int32_t j0 = 8 * b, np = ck_min(2, nb - b), n = ck_min(8 * np, sw - j0);
                    float *dst = output + ((size_t)oy * g->out_w + x0 + j0) * g->out_c;
                    for (int32_t oc0 = 0; oc0 < g->out_c; oc0 += 4) {
                        const float *w = wk + (size_t)oc0 * taps3;
#define C3S2_BLOCK4(KW, NP) c3s2_block4_avx2(g, q, wp, w, bias, dst + oc0, g->out_c, n, j0, oc0, vlo, vhi, KW, NP)
                        if (g->k_w == 3) {
                            if (np == 2) C3S2_BLOCK4(3, 2); else C3S2_BLOCK4(3, 1);
                        } else {
                            if (np == 2) C3S2_BLOCK4(5, 2); else C3S2_BLOCK4(5, 1);
                        }
#undef C3S2_BLOCK4
                    }
                }
                continue;
            }
            // Sums for the epilogue: 16 pixels × 8 channels as two blocks of 4 channels (unclamped:
            // the bounds are infinite), pixel i's 8 channels at px[8i].
            const __m256 inf = _mm256_set1_ps(__builtin_inff()), minus_inf = _mm256_set1_ps(-__builtin_inff());
            for (int32_t b = 0; b < nb; b += 2) {
                const int32_t j0 = 8 * b, np = ck_min(2, nb - b), n = ck_min(8 * np, sw - j0);
                const size_t pixel = (size_t)oy * g->out_w + x0 + j0;
                for (int32_t oc0 = 0; oc0 < g->out_c; oc0 += 8) {
                    float px[128] __attribute__((aligned(32)));
                    CK_UNROLL for (int h = 0; h < 2; h++) {
                        const float *w = wk + (size_t)(oc0 + 4 * h) * taps3;
#define C3S2_RAW4(KW, NP) c3s2_block4_avx2(g, q, wp, w, NULL, px + 4 * h, 8, n, j0, oc0 + 4 * h, minus_inf, inf, KW, NP)
                        if (g->k_w == 3) {
                            if (np == 2) C3S2_RAW4(3, 2); else C3S2_RAW4(3, 1);
                        } else {
                            if (np == 2) C3S2_RAW4(5, 2); else C3S2_RAW4(5, 1);
                        }
#undef C3S2_RAW4
                    }
                    epilogue(context, px, n, pixel, oc0);
                }
            }
        }
    }
}

void ck_c3s2_pack_weights(const ck_conv_geometry *g, const c3s2_source *filter, float *wk) {
    const int32_t taps3 = g->k_h * g->k_w * 3;
    for (int32_t oc0 = 0; oc0 < g->out_c; oc0 += 4) {
        for (int32_t t = 0; t < taps3; t++) {
            for (int32_t oc = 0; oc < 4; oc++) {
                c3s2_source f = *filter;
                f.row = (const char *)filter->row + (size_t)(oc0 + oc) * taps3 * (filter->kind == CK_C3S2_FLOAT ? 4 : 1);
                // Filter row (oc0 + oc) read as "input column" t / 3, channel t % 3.
                wk[(size_t)oc0 * taps3 + (size_t)t * 4 + oc] = c3s2_value(&f, t / 3, t % 3);
            }
        }
    }
}
#endif

int32_t ck_conv_c3s2_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *filter, const float *bias,
                         float *output, int32_t row_begin, int32_t row_end, float out_min, float out_max) {
#if CK_X86
    // 8 output channels on CPUs that split 512-bit operations: one 256-bit vector per pixel (only
    // for the best level, the optimized selection: a capped AVX-512 one keeps c3s2_rows).
    if (isa >= CK_ISA_AVX512 && isa == ck_best_isa() && ck_avx512_split() && ck_conv_c3s2_supported(g) && g->out_c == 8) {
        c3s2_c8_rows(g, input, filter, bias, output, row_begin, row_end, out_min, out_max);
        return 1;
    }
    if (isa >= CK_ISA_AVX512 && ck_conv_c3s2_supported(g)) {
        c3s2_rows(g, input, filter, bias, output, row_begin, row_end, out_min, out_max);
        return 1;
    }
    if (isa >= CK_ISA_AVX2 && ck_conv_c3s2_supported(g)) {
        float wk[C3S2_WEIGHT_FLOATS] __attribute__((aligned(64)));
        const c3s2_source weights = {filter, CK_C3S2_FLOAT, 0}, image = {input, CK_C3S2_FLOAT, 0};
        ck_c3s2_pack_weights(g, &weights, wk);
        ck_c3s2_rows_avx2(g, &image, wk, bias, out_min, out_max, output, NULL, NULL, row_begin, row_end);
        return 1;
    }
#else
    (void)isa; (void)g; (void)input; (void)filter; (void)bias; (void)output; (void)row_begin; (void)row_end;
    (void)out_min; (void)out_max;
#endif
    return 0;
}

// ---- depthwise, depth multiplier 1: output rows per call ----

/// The filter taps [lo, hi) whose input coordinate origin + k * dilation lies in [0, size).
static inline void valid_taps(int32_t origin, int32_t dilation, int32_t taps, int32_t size, int32_t *lo, int32_t *hi) {
    int32_t a = 0, b = taps;
    while (a < b && origin + a * dilation < 0) a++;
    while (b > a && origin + (b - 1) * dilation >= size) b--;
    *lo = a;
    *hi = b;
}

/// Input row y's place in an input of `ring` rows holding row y at y mod ring (ring 0: row y at y).
static inline size_t dw_ring_row(int32_t y, int32_t ring) { return (size_t)(ring > 0 ? y % ring : y); }

static void dw_row_portable(const ck_conv_geometry *g, const float *input, int32_t ring, const float *weights, const float *bias,
                            float *out, int32_t oy, float lo, float hi) {
    const int32_t C = g->in_c, iy0 = oy * g->stride_h - g->pad_top;
    int32_t ky0, ky1;
    valid_taps(iy0, g->dil_h, g->k_h, g->in_h, &ky0, &ky1);
    for (int32_t ox = 0; ox < g->out_w; ox++) {
        const int32_t ix0 = ox * g->stride_w - g->pad_left;
        int32_t kx0, kx1;
        valid_taps(ix0, g->dil_w, g->k_w, g->in_w, &kx0, &kx1);
        float *o = out + (size_t)ox * C;
        for (int32_t c = 0; c < C; c++) o[c] = bias ? bias[c] : 0.0f;
        for (int32_t ky = ky0; ky < ky1; ky++) {
            const float *row = input + dw_ring_row(iy0 + ky * g->dil_h, ring) * g->in_w * C;
            for (int32_t kx = kx0; kx < kx1; kx++) {
                const float *x = row + (size_t)(ix0 + kx * g->dil_w) * C;
                const float *w = weights + ((size_t)ky * g->k_w + kx) * C;
                for (int32_t c = 0; c < C; c++) o[c] += x[c] * w[c];
            }
        }
        for (int32_t c = 0; c < C; c++) {
            float v = o[c];
            v = v < lo ? lo : v;
            o[c] = v > hi ? hi : v;
        }
    }
}

#if CK_X86
// x86 depthwise. A pass computes one or two neighbouring output rows: the input rows they read are
// listed once (dw_tap_row: the row and the filter row each output row applies to it), so with two
// rows an input row loaded for one output row also feeds the other, and twice as many independent
// accumulator chains are in flight. A pass is cut into channel chunks (16 floats in a zmm, masked
// for a tail; 8 in a ymm on AVX2 machines) and each chunk into blocks of up to 8 neighbouring
// output columns. For the common filter widths, strides and dilations (dw_variant) these are
// compile-time constants: a block loads each input column of an input row once and feeds it to
// every output of the block that reads it (stride 1: three outputs for a 3-wide filter). Blocks
// touching the left/right border read zeros for taps outside the image (rows outside it are not
// listed). With exactly 8 channels and stride 1, a zmm holds two neighbouring output pixels (the
// filter taps broadcast to both halves), so no lane idles. Every output element is bias + its taps
// in (ky, kx) order, whatever the blocking and the rows a call gets, so the split into pieces (and
// threads) changes nothing.


/// Read instead of input columns left or right of the image.
static const float ck_dw_zero[16] __attribute__((aligned(64))) = {0};

/// An input row a pass reads and the filter row (k_w taps × C) each of its output rows applies to it (NULL: none).
typedef struct {
    const float *in;
    const float *w[2];
} dw_tap_row;

/// How rows run their border columns (dw_edges); otherwise in checked blocks of up to 4.
enum {
    DW_EDGES_NONE = 0,
    DW_EDGES_BOTH = 1,   ///< edge blocks of 8 at both ends (dwz_edge_left, dwz_edge_right)
    DW_EDGES_RIGHT = 2,  ///< 3 × 3 stride 2: unchecked blocks of 8, the last 8 columns as an edge block
    DW_EDGES_ROW7 = 3,   ///< 3 × 3 stride 1 or 2, 7 columns: the whole row one block
    DW_EDGES_ROW8 = 4,   ///< the same, 8 columns
};

typedef struct {
    const dw_tap_row *taps;
    int32_t ntaps;
    const float *bias;     ///< bias, or NULL
    float *out[2];         ///< the pass's output rows (out[1] NULL for a one-row pass)
    size_t c0;             ///< the chunk's first channel
    size_t C;              ///< channels (pixel stride)
    int32_t in_w, out_w, k_w, stride_w, dil_w, pad_left;
    int32_t ox_lo, ox_hi;  ///< output columns [ox_lo, ox_hi) read no tap outside the image
    int32_t edges;         ///< how rows run their border columns (DW_EDGES_*, see dw_edges)
} dw_pass;

/// Output columns whose horizontal taps all fall inside the image: [*lo, *hi) (possibly empty).
static void dw_interior(const ck_conv_geometry *g, int32_t *lo, int32_t *hi) {
    const int32_t s = g->stride_w, span = (g->k_w - 1) * g->dil_w;
    int32_t a = (g->pad_left + s - 1) / s;
    const int32_t num = g->in_w - 1 - span + g->pad_left;
    int32_t b = num < 0 ? 0 : num / s + 1;
    if (a > g->out_w) a = g->out_w;
    if (b > g->out_w) b = g->out_w;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/// Lists the input rows output rows oy and (rows 2) oy + delta read, in increasing order.
static int32_t dw_tap_rows(const ck_conv_geometry *g, const float *input, int32_t ring, const float *weights, int32_t oy,
                           int32_t rows, int32_t delta, dw_tap_row *list) {
    const size_t row_stride = (size_t)g->in_w * g->in_c, w_row = (size_t)g->k_w * g->in_c;
    int32_t iy[2], ky[2], ky1[2];
    for (int32_t q = 0; q < 2; q++) {
        iy[q] = (oy + q * delta) * g->stride_h - g->pad_top;
        if (q < rows) valid_taps(iy[q], g->dil_h, g->k_h, g->in_h, &ky[q], &ky1[q]);
        else ky[q] = ky1[q] = 0;
    }
    int32_t n = 0;
    while (ky[0] < ky1[0] || ky[1] < ky1[1]) {
        const int32_t y0 = ky[0] < ky1[0] ? iy[0] + ky[0] * g->dil_h : INT32_MAX;
        const int32_t y1 = ky[1] < ky1[1] ? iy[1] + ky[1] * g->dil_h : INT32_MAX;
        const int32_t y = y0 < y1 ? y0 : y1;
        list[n].in = input + dw_ring_row(y, ring) * row_stride;
        list[n].w[0] = list[n].w[1] = NULL;
        if (y0 == y) list[n].w[0] = weights + (size_t)ky[0]++ * w_row;
        if (y1 == y) list[n].w[1] = weights + (size_t)ky[1]++ * w_row;
        n++;
    }
    return n;
}

/// Block sizes 8, 4, 2, 1 (at most `nmax`): the largest that fits the `left` columns.
static inline int32_t dw_block_size(int32_t left, int32_t nmax) {
    return left >= 8 && nmax >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
}

// ---- AVX-512: 16-channel chunks ----

/// One input row's taps of a block (see dwz_block_cols): its columns loaded, each fed to the
/// outputs that read it. `wpre` (NULL: loaded here) holds the row's K weights of a one-row pass.
CK_TARGET_AVX512 CK_INLINE
void dwz_tap_row(const dw_pass *r, const dw_tap_row *t, __mmask16 mask, int32_t ix0, __m512 acc[2][8], const __m512 *wpre,
                 const int N, const int K, const int S, const int D, const int R, const int CHECK, const int LO, const int HI) {
    enum { LMAX = 7 * 2 + 4 * 4 + 1 };
    const int L = (N - 1) * S + (K - 1) * D + 1;
    const size_t C = r->C;
    const float *row = t->in + r->c0;
    __m512 x[LMAX];
    if (CHECK) {
        CK_UNROLL for (int i = 0; i < L; i++) {
            if (i < LO || i >= HI) continue;
            const int32_t ix = ix0 + i;
            const float *p = (uint32_t)ix < (uint32_t)r->in_w ? row + (size_t)ix * C : ck_dw_zero;
            x[i] = _mm512_maskz_loadu_ps(mask, p);
        }
    } else {
        // One pointer stepped column by column: with the offsets i * C as constants of the
        // loop the compiler runs out of registers for them at 12 or more columns (stride 2,
        // dilation 2 and 4) and reloads each from the stack, a second load per column.
        const int I0 = LO > 0 ? LO : 0;
        const float *p = row + (ptrdiff_t)(ix0 + I0) * (ptrdiff_t)C;
        CK_UNROLL for (int i = I0; i < L; i++) {
            if (i >= HI) break;
            x[i] = _mm512_maskz_loadu_ps(mask, p);
            p += C;
            __asm__("" : "+r"(p));
        }
    }
    CK_UNROLL for (int q = 0; q < R; q++) {
        if (R > 1 && !t->w[q]) continue;
        __m512 wv[5];
        if (wpre) {
            CK_UNROLL for (int kx = 0; kx < K; kx++) wv[kx] = wpre[kx];
        } else {
            const float *wr = t->w[q] + r->c0;
            CK_UNROLL for (int kx = 0; kx < K; kx++) wv[kx] = _mm512_maskz_loadu_ps(mask, wr + (size_t)kx * C);
        }
        CK_UNROLL for (int j = 0; j < N; j++)
            CK_UNROLL for (int kx = 0; kx < K; kx++) {
                const int i = j * S + kx * D;
                if (i < LO || i >= HI) continue;
                acc[q][j] = _mm512_fmadd_ps(x[i], wv[kx], acc[q][j]);
            }
    }
}

/// N output columns from column ox of R output rows; filter width K, stride S, dilation D. The
/// block's input columns are i = 0 ..< L from column ox * S - pad_left. CHECK: each column is
/// checked against the image at run time (outside: zeros). Columns i < LO or i >= HI are known at
/// compile time to lie outside the image (an edge block, see dwz_chunk_impl): they are neither
/// loaded nor multiplied, as the rows outside the image are not listed. `wpre` (NULL: the weights
/// are loaded here): a one-row pass of exactly K tap rows, their K × K weights in registers.
CK_TARGET_AVX512 CK_INLINE
void dwz_block_cols(const dw_pass *r, __mmask16 mask, __m512 vlo, __m512 vhi, int32_t ox,
                    const int N, const int K, const int S, const int D, const int R, const int CHECK, const int LO,
                    const int HI, const __m512 *wpre) {
    const int32_t ix0 = ox * S - r->pad_left;
    const size_t C = r->C;
    const __m512 vb = r->bias ? _mm512_maskz_loadu_ps(mask, r->bias + r->c0) : _mm512_setzero_ps();
    __m512 acc[2][8];
    CK_UNROLL for (int q = 0; q < R; q++) CK_UNROLL for (int j = 0; j < N; j++) acc[q][j] = vb;
    if (wpre) {
        CK_UNROLL for (int e = 0; e < K; e++) dwz_tap_row(r, r->taps + e, mask, ix0, acc, wpre + e * K, N, K, S, D, R, CHECK, LO, HI);
    } else {
        for (int32_t e = 0; e < r->ntaps; e++) dwz_tap_row(r, r->taps + e, mask, ix0, acc, NULL, N, K, S, D, R, CHECK, LO, HI);
    }
    CK_UNROLL for (int q = 0; q < R; q++) {
        if (q > 0 && !r->out[q]) break;
        float *o = r->out[q] + r->c0 + (size_t)ox * C;
        CK_UNROLL for (int j = 0; j < N; j++)
            _mm512_mask_storeu_ps(o + (size_t)j * C, mask, _mm512_min_ps(_mm512_max_ps(acc[q][j], vlo), vhi));
    }
}

CK_TARGET_AVX512 CK_INLINE
void dwz_block(const dw_pass *r, __mmask16 mask, __m512 vlo, __m512 vhi, int32_t ox,
               const int N, const int K, const int S, const int D, const int R, const int CHECK, const __m512 *wpre) {
    dwz_block_cols(r, mask, vlo, vhi, ox, N, K, S, D, R, CHECK, 0, 1 << 20, wpre);
}

/// The two edge blocks of a row whose edges dw_edges allows: 8 columns from column 0 (its input
/// columns before pad_left = (K - 1) · D / 2 lie left of the image) and the last 8 (the columns
/// after 8 + pad_left lie right of it); both with the taps outside the image skipped at compile
/// time instead of checked column by column (a 33-wide row dilated by 4 spent more than half its
/// time in its 8 border columns).
CK_TARGET_AVX512 CK_INLINE
void dwz_edge_left(const dw_pass *r, __mmask16 mask, __m512 vlo, __m512 vhi, const int K, const int D, const int R) {
    dwz_block_cols(r, mask, vlo, vhi, 0, 8, K, 1, D, R, 0, (K - 1) * D / 2, 1 << 20, NULL);
}

CK_TARGET_AVX512 CK_INLINE
void dwz_edge_right(const dw_pass *r, __mmask16 mask, __m512 vlo, __m512 vhi, const int K, const int D, const int R) {
    dwz_block_cols(r, mask, vlo, vhi, r->out_w - 8, 8, K, 1, D, R, 0, 0, 8 + (K - 1) * D / 2, NULL);
}

/// Output columns [ox, end) in unchecked blocks of up to 8 (every tap inside the image).
CK_TARGET_AVX512 CK_INLINE
void dwz_interior(const dw_pass *r, __mmask16 mask, __m512 vlo, __m512 vhi, int32_t ox, int32_t end, const int K, const int S,
                  const int D, const int R, const __m512 *wpre) {
    while (ox < end) {
        const int32_t n = dw_block_size(end - ox, 8);
        switch (n) {
        case 8: dwz_block(r, mask, vlo, vhi, ox, 8, K, S, D, R, 0, wpre); break;
        case 4: dwz_block(r, mask, vlo, vhi, ox, 4, K, S, D, R, 0, wpre); break;
        case 2: dwz_block(r, mask, vlo, vhi, ox, 2, K, S, D, R, 0, wpre); break;
        default: dwz_block(r, mask, vlo, vhi, ox, 1, K, S, D, R, 0, wpre); break;
        }
        ox += n;
    }
}

/// A pass's row of one chunk in column blocks (see dwz_chunk_impl); `wpre` as dwz_block_cols'.
CK_TARGET_AVX512 CK_INLINE
void dwz_row_blocks(const dw_pass *r, __mmask16 mask, __m512 vlo, __m512 vhi, const int K, const int S, const int D, const int R,
                    const __m512 *wpre) {
    if (S == 1 && r->edges == DW_EDGES_BOTH) {
        // Edge blocks of 8 at both ends, the columns between in unchecked blocks of up to 8.
        dwz_edge_left(r, mask, vlo, vhi, K, D, R);
        dwz_interior(r, mask, vlo, vhi, 8, r->out_w - 8, K, S, D, R, NULL);
        dwz_edge_right(r, mask, vlo, vhi, K, D, R);
        return;
    }
    if (K == 3 && D == 1 && (r->edges == DW_EDGES_ROW7 || r->edges == DW_EDGES_ROW8)) {
        // The whole row in one block, the columns outside the image skipped at compile time.
        if (r->edges == DW_EDGES_ROW7) dwz_block_cols(r, mask, vlo, vhi, 0, 7, 3, S, 1, R, 0, S == 1 ? 1 : 0, S == 1 ? 8 : 14, wpre);
        else dwz_block_cols(r, mask, vlo, vhi, 0, 8, 3, S, 1, R, 0, S == 1 ? 1 : 0, S == 1 ? 9 : 16, wpre);
        return;
    }
    if (K == 3 && S == 2 && D == 1 && r->edges == DW_EDGES_RIGHT) {
        // Unchecked blocks of 8 from every column before the last 8 (a block starting at most 9
        // columns from the end still reads inside the image; the last one may overlap the edge
        // block, those columns computed twice the same way), then the last 8 columns, whose last
        // tap column lies right of the image.
        for (int32_t ox = 0; ox < r->out_w - 8; ox += 8) dwz_block(r, mask, vlo, vhi, ox, 8, K, S, D, R, 0, wpre);
        dwz_block_cols(r, mask, vlo, vhi, r->out_w - 8, 8, K, S, D, R, 0, 0, 16, wpre);
        return;
    }
    // Border columns in checked blocks of up to 4 (the right border's block starts early enough to
    // hold 4 columns), the columns between in unchecked blocks of up to 8.
    int32_t ox = 0;
    while (ox < r->ox_lo) {
        const int32_t n = dw_block_size(r->out_w - ox, 4);
        switch (n) {
        case 4: dwz_block(r, mask, vlo, vhi, ox, 4, K, S, D, R, 1, wpre); break;
        case 2: dwz_block(r, mask, vlo, vhi, ox, 2, K, S, D, R, 1, wpre); break;
        default: dwz_block(r, mask, vlo, vhi, ox, 1, K, S, D, R, 1, wpre); break;
        }
        ox += n;
    }
    const int32_t right = ck_max(ox, ck_min(r->ox_hi, r->out_w - 4));
    dwz_interior(r, mask, vlo, vhi, ox, right, K, S, D, R, wpre);
    ox = right;
    while (ox < r->out_w) {
        const int32_t n = dw_block_size(r->out_w - ox, 4);
        switch (n) {
        case 4: dwz_block(r, mask, vlo, vhi, ox, 4, K, S, D, R, 1, wpre); break;
        case 2: dwz_block(r, mask, vlo, vhi, ox, 2, K, S, D, R, 1, wpre); break;
        default: dwz_block(r, mask, vlo, vhi, ox, 1, K, S, D, R, 1, wpre); break;
        }
        ox += n;
    }
}

/// One chunk of a pass. A 3 × 3 stride-2 row whose three input rows all lie inside the image keeps
/// its nine weights in registers for the whole row, where each block loaded its three per input
/// row (an 8-column block: 17 input columns and 24 FMAs per input row).
CK_TARGET_AVX512 CK_INLINE
void dwz_chunk_impl(const dw_pass *r, __mmask16 mask, __m512 vlo, __m512 vhi, const int K, const int S, const int D, const int R) {
    if (K == 3 && S == 2 && D == 1 && R == 1 && r->ntaps == 3) {
        __m512 w9[9];
        CK_UNROLL for (int e = 0; e < 3; e++)
            CK_UNROLL for (int kx = 0; kx < 3; kx++) w9[3 * e + kx] = _mm512_maskz_loadu_ps(mask, r->taps[e].w[0] + r->c0 + (size_t)kx * r->C);
        dwz_row_blocks(r, mask, vlo, vhi, K, S, D, R, w9);
        return;
    }
    dwz_row_blocks(r, mask, vlo, vhi, K, S, D, R, NULL);
}

/// Any filter width, stride and dilation (one-row passes): 8 columns in flight, every tap's column checked.
CK_TARGET_AVX512
static void dwz_chunk_generic(const dw_pass *r, __mmask16 mask, float lo, float hi) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const size_t C = r->C;
    const __m512 vb = r->bias ? _mm512_maskz_loadu_ps(mask, r->bias + r->c0) : _mm512_setzero_ps();
    for (int32_t ox = 0; ox < r->out_w; ox += 8) {
        const int32_t n = ck_min(8, r->out_w - ox);
        __m512 acc[8];
        CK_UNROLL for (int j = 0; j < 8; j++) acc[j] = vb;
        for (int32_t e = 0; e < r->ntaps; e++) {
            const float *row = r->taps[e].in + r->c0, *wr = r->taps[e].w[0] + r->c0;
            for (int32_t kx = 0; kx < r->k_w; kx++) {
                const __m512 wv = _mm512_maskz_loadu_ps(mask, wr + (size_t)kx * C);
                const int32_t ix0 = ox * r->stride_w - r->pad_left + kx * r->dil_w;
                CK_UNROLL for (int j = 0; j < 8; j++) {
                    const int32_t ix = ix0 + j * r->stride_w;
                    const float *p = (j < n && (uint32_t)ix < (uint32_t)r->in_w) ? row + (size_t)ix * C : ck_dw_zero;
                    acc[j] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, p), wv, acc[j]);
                }
            }
        }
        for (int32_t j = 0; j < n; j++)
            _mm512_mask_storeu_ps(r->out[0] + r->c0 + (size_t)(ox + j) * C, mask, _mm512_min_ps(_mm512_max_ps(acc[j], vlo), vhi));
    }
}

// ---- AVX-512, exactly 8 channels, stride 1: a zmm holds output pixels (x, x + 1) ----

/// NP pixel pairs from column ox of R output rows; filter width K, dilation D (stride 1). Input
/// vector i holds columns ix0 + i and ix0 + i + 1; pair j's tap kx reads vector 2j + kx·D.
CK_TARGET_AVX512 CK_INLINE
void dwp_block(const dw_pass *r, __m512 vlo, __m512 vhi, int32_t ox, const int NP, const int K, const int D,
               const int R, const int CHECK) {
    enum { LMAX = 7 * 2 + 4 * 4 + 1 };
    const int L = 2 * (NP - 1) + (K - 1) * D + 1;
    const int32_t ix0 = ox - r->pad_left;
    const __m512 vb = r->bias ? _mm512_broadcast_f32x8(_mm256_loadu_ps(r->bias)) : _mm512_setzero_ps();
    __m512 acc[2][8];
    CK_UNROLL for (int q = 0; q < R; q++) CK_UNROLL for (int j = 0; j < NP; j++) acc[q][j] = vb;
    for (int32_t e = 0; e < r->ntaps; e++) {
        const dw_tap_row *t = r->taps + e;
        // Byte arithmetic: a border vector's address may lie one pixel before the row (its lanes there are masked off).
        const uintptr_t row = (uintptr_t)t->in;
        __m512 x[LMAX];
        CK_UNROLL for (int i = 0; i < L; i++) {
            const int32_t ix = ix0 + i;
            const float *p = (const float *)(row + (uintptr_t)((intptr_t)ix * 32));
            if (CHECK) {
                const __mmask16 m = (__mmask16)(((uint32_t)ix < (uint32_t)r->in_w ? 0x00FFu : 0u) |
                                                ((uint32_t)(ix + 1) < (uint32_t)r->in_w ? 0xFF00u : 0u));
                x[i] = _mm512_maskz_loadu_ps(m, p);
            } else {
                x[i] = _mm512_loadu_ps(p);
            }
        }
        CK_UNROLL for (int q = 0; q < R; q++) {
            if (R > 1 && !t->w[q]) continue;
            __m512 wv[5];
            CK_UNROLL for (int kx = 0; kx < K; kx++) wv[kx] = _mm512_broadcast_f32x8(_mm256_loadu_ps(t->w[q] + kx * 8));
            CK_UNROLL for (int j = 0; j < NP; j++)
                CK_UNROLL for (int kx = 0; kx < K; kx++) acc[q][j] = _mm512_fmadd_ps(x[2 * j + kx * D], wv[kx], acc[q][j]);
        }
    }
    CK_UNROLL for (int q = 0; q < R; q++) {
        if (q > 0 && !r->out[q]) break;
        float *o = r->out[q] + (size_t)ox * 8;
        CK_UNROLL for (int j = 0; j < NP; j++) {
            const __m512 v = _mm512_min_ps(_mm512_max_ps(acc[q][j], vlo), vhi);
            if (CHECK) {
                const int32_t px = ox + 2 * j;
                const __mmask16 m = (__mmask16)((px < r->out_w ? 0x00FFu : 0u) | (px + 1 < r->out_w ? 0xFF00u : 0u));
                _mm512_mask_storeu_ps(o + 16 * j, m, v);
            } else {
                _mm512_storeu_ps(o + 16 * j, v);
            }
        }
    }
}

CK_TARGET_AVX512 CK_INLINE
void dwp_chunk_impl(const dw_pass *r, __m512 vlo, __m512 vhi, const int K, const int D, const int R) {
    // Checked blocks of 2 pairs at the borders, unchecked blocks of 8, 4, 2, 1 pairs between.
    int32_t ox = 0;
    for (; ox < r->ox_lo; ox += 4) dwp_block(r, vlo, vhi, ox, 2, K, D, R, 1);
    int32_t right = ck_max(ox, ck_min(r->ox_hi, r->out_w - 4));
    right -= (right - ox) & 1;
    while (ox < right) {
        const int32_t n = dw_block_size((right - ox) / 2, 8);
        switch (n) {
        case 8: dwp_block(r, vlo, vhi, ox, 8, K, D, R, 0); break;
        case 4: dwp_block(r, vlo, vhi, ox, 4, K, D, R, 0); break;
        case 2: dwp_block(r, vlo, vhi, ox, 2, K, D, R, 0); break;
        default: dwp_block(r, vlo, vhi, ox, 1, K, D, R, 0); break;
        }
        ox += 2 * n;
    }
    for (; ox < r->out_w; ox += 4) dwp_block(r, vlo, vhi, ox, 2, K, D, R, 1);
}

/// Widest output row cut into column blocks ahead of a pass (dw_by_blocks).
#define CK_DW_MAX_BLOCKS 1024

/// The (filter width, stride, dilation) combinations with compile-time kernels: 3×3 stride 1 and
/// 2, 3×3 dilated 2 and 4 (deeplab), 5×5 stride 1 and 2 (face detection, selfie segmentation).
enum { DW_GENERIC = 0, DW_K3S1, DW_K3S2, DW_K3D2, DW_K3D4, DW_K5S1, DW_K5S2 };

static int dw_variant(const ck_conv_geometry *g) {
    const int32_t k = g->k_w, s = g->stride_w, d = g->dil_w;
    if (k == 3 && s == 1 && d == 1) return DW_K3S1;
    if (k == 3 && s == 2 && d == 1) return DW_K3S2;
    if (k == 3 && s == 1 && d == 2) return DW_K3D2;
    if (k == 3 && s == 1 && d == 4) return DW_K3D4;
    if (k == 5 && s == 1 && d == 1) return DW_K5S1;
    if (k == 5 && s == 2 && d == 1) return DW_K5S2;
    return DW_GENERIC;
}

/// Output rows per pass on AVX-512: two where they share input rows and the registers hold 2 × 8
/// accumulators with a block's input columns. With stride and dilation 1 the two are neighbours;
/// a 3 × 3 filter dilated by 2 pairs rows oy and oy + 2, which share two of their three input rows
/// (dw_pair_delta), so a pass loads 4 input rows for 2 output rows instead of 6 and keeps 16
/// independent accumulators in flight instead of 8 (a 33 × 33 × 480 layer dilated by 2 in bands of
/// 4 rows, as DeepLab's 288-channel ones run: 208 → 185 µs in a C harness). Dilated by 4 (DeepLab's
/// 480-channel layers), a block's 16 input columns and 16 accumulators outgrow the registers (the
/// layer whole: 254 → 311 µs), so rows go one by one.
static int32_t dwz_rows_per_pass(const ck_conv_geometry *g, int variant) {
    if (variant == DW_K3D2 && g->stride_h == 1 && g->dil_h == 2) return 2;
    return (variant == DW_K3S1 || variant == DW_K5S1) && g->stride_h == 1 && g->dil_h == 1 ? 2 : 1;
}

/// The distance between the two output rows of a pass (see dwz_rows_per_pass).
static int32_t dw_pair_delta(const ck_conv_geometry *g, int32_t per_pass) {
    return per_pass == 2 && g->dil_h > 1 ? g->dil_h : 1;
}

CK_TARGET_AVX512 CK_INLINE
void dwz_chunk_variant(const dw_pass *r, int variant, __mmask16 mask, __m512 vlo, __m512 vhi, float lo, float hi) {
    switch (variant) {
    case DW_K3S1: dwz_chunk_impl(r, mask, vlo, vhi, 3, 1, 1, 2); break;
    case DW_K3S2: dwz_chunk_impl(r, mask, vlo, vhi, 3, 2, 1, 1); break;
    case DW_K3D2:
        if (r->out[1]) dwz_chunk_impl(r, mask, vlo, vhi, 3, 1, 2, 2);
        else dwz_chunk_impl(r, mask, vlo, vhi, 3, 1, 2, 1);
        break;
    case DW_K3D4: dwz_chunk_impl(r, mask, vlo, vhi, 3, 1, 4, 1); break;
    case DW_K5S1: dwz_chunk_impl(r, mask, vlo, vhi, 5, 1, 1, 2); break;
    case DW_K5S2: dwz_chunk_impl(r, mask, vlo, vhi, 5, 2, 1, 1); break;
    default: dwz_chunk_generic(r, mask, lo, hi); break;
    }
}

CK_TARGET_AVX512
/// (The clamp comes as floats: a 512-bit vector argument of a function that is not inlined goes
/// through the stack with 64-byte alignment, which Address Sanitizer's frames do not give.)
static void dwz_chunk(const dw_pass *r, int variant, __mmask16 mask, float lo, float hi) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    // A whole chunk with the mask as a constant: its loads and stores compile unmasked. A masked
    // load takes an ALU slot beside the FMAs (p0/p5) on this core; unmasked, a 3 × 3 block of 8
    // columns × 2 rows went 120 → 88 cycles in a C harness.
    if (mask == 0xFFFF) dwz_chunk_variant(r, variant, (__mmask16)0xFFFF, vlo, vhi, lo, hi);
    else dwz_chunk_variant(r, variant, mask, vlo, vhi, lo, hi);
}

/// Edge blocks have the taps outside the image skipped at compile time instead of checked column
/// by column. DW_EDGES_BOTH: a stride-1 variant with "same" padding ((K - 1) · D / 2 columns each
/// side, at most 8) and at least 8 + (K - 1) · D / 2 columns, so neither block of 8 reaches the
/// far edge. Rows of fewer than 16 columns (MobileNet's 14 × 14 layers) have the two blocks
/// overlap: the columns both compute are computed the same way twice (the same taps in the same
/// order) and written twice, which costs less than the checked blocks of 4 and 2 those rows took
/// before. DW_EDGES_RIGHT: 3 × 3 stride 2 over an even width with "same" padding (none on the
/// left, the last column's last tap one column right of the image), at least 8 columns. Rows of
/// 7 or 8 columns of 3 × 3 layers with "same" padding (stride 1, or stride 2 over twice the
/// width) run as one block. Measured with scripts/kernel-ab.sh (AVX-512, best of 200 alternating
/// calls, with the stride-2 weights held in registers, see dwz_chunk_impl): mobilenet_v1_0.25's
/// stride-2 layers 112 × 112 × 16 13.7 → 12.4 µs, 28 × 28 × 64 3.7 → 3.0, 14 × 14 × 128 2.6 → 1.6,
/// its 7 × 7 × 256 layer 3.4 → 2.0, BlazeFace's 32 × 32 × 42 stride 2 4.6 → 3.8 and 8 × 8 × 96
/// 1.4 → 0.9; the whole model 0.5–1% faster at 1 and 2 threads (docs/PERFORMANCE.md, session 27).
static int32_t dw_edges(const ck_conv_geometry *g) {
    const int variant = dw_variant(g);
    if ((variant == DW_K3S1 || variant == DW_K3S2) && (g->out_w == 7 || g->out_w == 8) &&
        (variant == DW_K3S1 ? g->pad_left == 1 && g->in_w == g->out_w : g->pad_left == 0 && g->in_w == 2 * g->out_w))
        return g->out_w == 7 ? DW_EDGES_ROW7 : DW_EDGES_ROW8;
    if (variant == DW_K3S2) return g->pad_left == 0 && g->in_w == 2 * g->out_w && g->out_w >= 8 ? DW_EDGES_RIGHT : DW_EDGES_NONE;
    if (variant != DW_K3S1 && variant != DW_K3D2 && variant != DW_K3D4 && variant != DW_K5S1) return DW_EDGES_NONE;
    const int32_t span = (g->k_w - 1) * g->dil_w;
    return span % 2 == 0 && g->pad_left == span / 2 && span / 2 <= 8 && g->in_w == g->out_w && g->out_w >= 8 + span / 2
               ? DW_EDGES_BOTH : DW_EDGES_NONE;
}

/// The pass description shared by every chunk and row (taps, ntaps, out and c0 are set per pass).
static void dw_pass_init(dw_pass *r, const ck_conv_geometry *g, const float *bias) {
    r->taps = NULL;
    r->ntaps = 0;
    r->bias = bias;
    r->out[0] = r->out[1] = NULL;
    r->c0 = 0;
    r->C = (size_t)g->in_c;
    r->in_w = g->in_w;
    r->out_w = g->out_w;
    r->k_w = g->k_w;
    r->stride_w = g->stride_w;
    r->dil_w = g->dil_w;
    r->pad_left = g->pad_left;
    dw_interior(g, &r->ox_lo, &r->ox_hi);
    r->edges = dw_edges(g);
}

/// Points pass `r` at output row oy and (rows 2) oy + delta.
static void dw_pass_rows(dw_pass *r, dw_tap_row *taps, const ck_conv_geometry *g, const float *input, int32_t ring,
                         const float *weights, float *output, int32_t oy, int32_t rows, int32_t delta) {
    r->taps = taps;
    r->ntaps = dw_tap_rows(g, input, ring, weights, oy, rows, delta, taps);
    r->out[0] = output + (size_t)oy * g->out_w * g->in_c;
    r->out[1] = rows > 1 ? r->out[0] + (size_t)delta * g->out_w * g->in_c : NULL;
}

/// The row's column blocks as dwz_chunk_impl cuts them: (first column, columns, checked) each.
static int32_t dw_blocks(const dw_pass *r, int32_t *start, int8_t *count, int8_t *checked) {
    int32_t ox = 0, n = 0;
    if (r->edges == DW_EDGES_BOTH) {  // edge blocks (checked 2: left, 3: right), as dwz_chunk_impl cuts the row
        start[n] = 0; count[n] = 8; checked[n++] = 2;
        for (ox = 8; ox < r->out_w - 8;) {
            const int32_t c = dw_block_size(r->out_w - 8 - ox, 8);
            start[n] = ox; count[n] = (int8_t)c; checked[n++] = 0; ox += c;
        }
        start[n] = r->out_w - 8; count[n] = 8; checked[n++] = 3;
        return n;
    }
    while (ox < r->ox_lo) {
        const int32_t c = dw_block_size(r->out_w - ox, 4);
        start[n] = ox; count[n] = (int8_t)c; checked[n++] = 1; ox += c;
    }
    const int32_t right = ck_max(ox, ck_min(r->ox_hi, r->out_w - 4));
    while (ox < right) {
        const int32_t c = dw_block_size(right - ox, 8);
        start[n] = ox; count[n] = (int8_t)c; checked[n++] = 0; ox += c;
    }
    while (ox < r->out_w) {
        const int32_t c = dw_block_size(r->out_w - ox, 4);
        start[n] = ox; count[n] = (int8_t)c; checked[n++] = 1; ox += c;
    }
    return n;
}

/// One chunk of one column block (see dwz_blocks_impl).
CK_TARGET_AVX512 CK_INLINE
void dwz_block_any(const dw_pass *r, __mmask16 mask, int8_t count, int8_t checked, int32_t ox, __m512 vlo, __m512 vhi,
                   const int K, const int S, const int D, const int R) {
    if (S == 1 && checked >= 2) {
        if (checked == 2) dwz_edge_left(r, mask, vlo, vhi, K, D, R);
        else dwz_edge_right(r, mask, vlo, vhi, K, D, R);
    } else if (checked) {
        switch (count) {
        case 4: dwz_block(r, mask, vlo, vhi, ox, 4, K, S, D, R, 1, NULL); break;
        case 2: dwz_block(r, mask, vlo, vhi, ox, 2, K, S, D, R, 1, NULL); break;
        default: dwz_block(r, mask, vlo, vhi, ox, 1, K, S, D, R, 1, NULL); break;
        }
    } else {
        switch (count) {
        case 8: dwz_block(r, mask, vlo, vhi, ox, 8, K, S, D, R, 0, NULL); break;
        case 4: dwz_block(r, mask, vlo, vhi, ox, 4, K, S, D, R, 0, NULL); break;
        case 2: dwz_block(r, mask, vlo, vhi, ox, 2, K, S, D, R, 0, NULL); break;
        default: dwz_block(r, mask, vlo, vhi, ox, 1, K, S, D, R, 0, NULL); break;
        }
    }
}

/// Every channel chunk of one column block before the next block (see dw_by_blocks); whole
/// chunks with a constant mask (unmasked loads, see dwz_chunk).
CK_TARGET_AVX512 CK_INLINE
void dwz_blocks_impl(dw_pass *r, int32_t C, const int32_t *start, const int8_t *count, const int8_t *checked, int32_t nb,
                     __m512 vlo, __m512 vhi, const int K, const int S, const int D, const int R) {
    for (int32_t b = 0; b < nb; b++) {
        const int32_t ox = start[b];
        for (r->c0 = 0; (int32_t)r->c0 + 16 <= C; r->c0 += 16)
            dwz_block_any(r, (__mmask16)0xFFFF, count[b], checked[b], ox, vlo, vhi, K, S, D, R);
        if ((int32_t)r->c0 < C)
            dwz_block_any(r, (__mmask16)((1u << (C - (int32_t)r->c0)) - 1u), count[b], checked[b], ox, vlo, vhi, K, S, D, R);
    }
}

CK_TARGET_AVX512
static void dwz_blocks(dw_pass *r, int variant, int32_t C, const int32_t *start, const int8_t *count, const int8_t *checked,
                       int32_t nb, float lo, float hi) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    switch (variant) {
    case DW_K3S1: dwz_blocks_impl(r, C, start, count, checked, nb, vlo, vhi, 3, 1, 1, 2); break;
    case DW_K3S2: dwz_blocks_impl(r, C, start, count, checked, nb, vlo, vhi, 3, 2, 1, 1); break;
    case DW_K3D2:
        if (r->out[1]) dwz_blocks_impl(r, C, start, count, checked, nb, vlo, vhi, 3, 1, 2, 2);
        else dwz_blocks_impl(r, C, start, count, checked, nb, vlo, vhi, 3, 1, 2, 1);
        break;
    case DW_K3D4: dwz_blocks_impl(r, C, start, count, checked, nb, vlo, vhi, 3, 1, 4, 1); break;
    case DW_K5S1: dwz_blocks_impl(r, C, start, count, checked, nb, vlo, vhi, 5, 1, 1, 2); break;
    default: dwz_blocks_impl(r, C, start, count, checked, nb, vlo, vhi, 5, 2, 1, 1); break;
    }
}

/// Whether a pass walks its row block by block, every channel chunk of a block before the next,
/// instead of chunk by chunk along the whole row. Chunk by chunk, a pass reads 64 bytes of each
/// pixel of its input rows per chunk: when those rows (taps rows × in_w × C floats) outgrow L1, the
/// lines of every chunk come again from L2 or L3, a strided walk the prefetchers follow badly
/// (DeepLab's 129 × 129 × 96 stride-2 layer: 436 µs; by blocks 310 µs). Block by block, a block's
/// inputs for all chunks are read together, which pays while they fit in this core's 48 KiB L1
/// (blocks of 8 columns; at 14 × 14 × 512 they do not, and chunk by chunk is 16% faster): measured
/// on this machine over 21 MobileNet v2, DeepLab and BlazeFace shapes, both orders bitwise equal.
/// With the edge blocks, inputs of 48–64 KiB per block went faster chunk by chunk too (DeepLab's
/// 33 × 33 × 288 layer dilated by 2 in bands of 4 rows 8.9 → 7.7 µs, 14 × 14 × 384 18.6 → 16.3 µs).
static int dw_by_blocks(const ck_conv_geometry *g, int variant, int32_t rows_per_pass) {
    if (variant == DW_GENERIC || g->in_c < 64 || g->out_w > CK_DW_MAX_BLOCKS) return 0;
    const size_t tap_rows = (size_t)g->k_h + (size_t)(rows_per_pass - 1) * g->stride_h;
    const size_t span = (size_t)7 * g->stride_w + (size_t)(g->k_w - 1) * g->dil_w + 1;  // a block of 8's columns
    const size_t pixel = (size_t)g->in_c * 4;
    return tap_rows * span * pixel <= (48u << 10) && tap_rows * (size_t)g->in_w * pixel >= (64u << 10);
}

CK_TARGET_AVX512
static void dw_rows_avx512(const ck_conv_geometry *g, const float *input, int32_t ring, const float *weights,
                           const float *bias, float *output, int32_t row_begin, int32_t row_end, float lo, float hi) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const int variant = dw_variant(g);
    const int32_t C = g->in_c, per_pass = dwz_rows_per_pass(g, variant);
    const int pairs = C == 8 && (variant == DW_K3S1 || variant == DW_K5S1);
    dw_tap_row taps[2 * CK_MAX_TAPS];
    dw_pass r;
    dw_pass_init(&r, g, bias);
    const int by_blocks = !pairs && dw_by_blocks(g, variant, per_pass);
    int32_t start[CK_DW_MAX_BLOCKS];
    int8_t count[CK_DW_MAX_BLOCKS], checked[CK_DW_MAX_BLOCKS];
    const int32_t nb = by_blocks ? dw_blocks(&r, start, count, checked) : 0;
    // Passes of rows (oy, oy + delta): neighbours two at a time (delta 1), or, dilated, each group
    // of 2·delta rows as its delta pairs; the rows after the last whole group one at a time.
    const int32_t delta = dw_pair_delta(g, per_pass), group = 2 * delta;
    for (int32_t base = row_begin; base < row_end; base += group) {
        const int32_t rows = per_pass == 2 && (delta == 1 ? base + 1 < row_end : base + group <= row_end) ? 2 : 1;
        const int32_t last = rows == 2 ? base + delta : ck_min(base + group, row_end);
        for (int32_t oy = base; oy < last; oy++) {
            dw_pass_rows(&r, taps, g, input, ring, weights, output, oy, rows, delta);
            if (pairs) {
                if (variant == DW_K3S1) dwp_chunk_impl(&r, vlo, vhi, 3, 1, 2);
                else dwp_chunk_impl(&r, vlo, vhi, 5, 1, 2);
            } else if (by_blocks) {
                dwz_blocks(&r, variant, C, start, count, checked, nb, lo, hi);
            } else {
                for (r.c0 = 0; (int32_t)r.c0 < C; r.c0 += 16) {
                    const int32_t live = ck_min(16, C - (int32_t)r.c0);
                    dwz_chunk(&r, variant, (__mmask16)((1u << live) - 1u), lo, hi);
                }
            }
        }
    }
}

// ---- AVX2: 8-channel chunks, blocks of up to 4 columns (16 ymm registers) ----
//
// 3 × 3 stride-1 rows run in pairs, as on AVX-512 (dwz_rows_per_pass): each of the 4 input rows a
// pair reads is loaded once for both output rows' taps, and the 8 accumulators of a 4-column
// block give 8 independent chains of 9 FMAs. One row at a time, the 4 chains of 9 dependent FMAs
// (4 cycles each) took 36 cycles per block where the FMA ports need 18: 64 × 64 × 24 ran at
// 14–19 GMAC/s. The channels past the last whole chunk (BlazeFace's 28, 36 and 42) run the same
// blocks with masked loads and stores instead of a generic loop that checked every tap. Stride-1
// "same" rows of at least 8 columns run a 4-column block at each end whose column outside
// the image is skipped at compile time (no tap, as the reference) and unchecked blocks between,
// instead of checking each column's position (kernel-ab, float-depthwise: 0.74–0.91×).

/// N output columns from column ox of the pass's R output rows; filter width K, stride S,
/// dilation D. CHECK: each input column is checked against the image at run time (outside: zeros).
/// MASKED: only the lanes of `mask` (the chunk's live channels) are loaded and stored.
CK_TARGET_AVX2 CK_INLINE
void dwy_block(const dw_pass *r, __m256 vlo, __m256 vhi, __m256i mask, int32_t ox, const int N, const int K, const int S,
               const int D, const int R, const int CHECK, const int MASKED, const int EDGE) {
    enum { LMAX = 3 * 2 + 4 * 4 + 1 };
    const int L = (N - 1) * S + (K - 1) * D + 1;
    const int P = (K - 1) * D / 2;  // EDGE 1: columns i < P lie left of the image; EDGE 2: i >= L - P right of it
    const int32_t ix0 = ox * S - r->pad_left;
    const size_t C = r->C;
    const __m256 vb = !r->bias ? _mm256_setzero_ps()
                      : MASKED ? _mm256_maskload_ps(r->bias + r->c0, mask) : _mm256_loadu_ps(r->bias + r->c0);
    __m256 acc[2][4];
    CK_UNROLL for (int q = 0; q < R; q++) CK_UNROLL for (int j = 0; j < N; j++) acc[q][j] = vb;
    for (int32_t e = 0; e < r->ntaps; e++) {
        const float *row = r->taps[e].in + r->c0;
        __m256 x[LMAX];
        CK_UNROLL for (int i = 0; i < L; i++) {
            if ((EDGE == 1 && i < P) || (EDGE == 2 && i >= L - P)) continue;
            const int32_t ix = ix0 + i;
            const float *p = (!CHECK || (uint32_t)ix < (uint32_t)r->in_w) ? row + (size_t)ix * C : ck_dw_zero;
            x[i] = MASKED ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
        }
        CK_UNROLL for (int q = 0; q < R; q++) {
            const float *w = r->taps[e].w[q];
            if (R > 1 && !w) continue;
            w += r->c0;
            CK_UNROLL for (int kx = 0; kx < K; kx++) {
                const __m256 wv = MASKED ? _mm256_maskload_ps(w + (size_t)kx * C, mask) : _mm256_loadu_ps(w + (size_t)kx * C);
                CK_UNROLL for (int j = 0; j < N; j++) {
                    const int i = j * S + kx * D;
                    if ((EDGE == 1 && i < P) || (EDGE == 2 && i >= L - P)) continue;  // outside the image: no tap
                    acc[q][j] = _mm256_fmadd_ps(x[i], wv, acc[q][j]);
                }
            }
        }
    }
    CK_UNROLL for (int q = 0; q < R; q++) {
        float *o = r->out[q] + r->c0 + (size_t)ox * C;
        CK_UNROLL for (int j = 0; j < N; j++) {
            const __m256 v = _mm256_min_ps(_mm256_max_ps(acc[q][j], vlo), vhi);
            if (MASKED) _mm256_maskstore_ps(o + (size_t)j * C, mask, v);
            else _mm256_storeu_ps(o + (size_t)j * C, v);
        }
    }
}

/// 8 output columns from column ox of a one-row pass, every tap inside the image, a whole chunk
/// (8 live channels): 8 independent chains of FMAs where a 4-column block has 4, whose latency
/// (K·k_h dependent FMAs each) bounded it below the FMA ports' rate. The inputs are loaded where the
/// FMAs read them (the 8 accumulators and the weight take 9 of the 16 registers), in the same tap
/// order as dwy_block, so the same values.
CK_TARGET_AVX2 CK_INLINE
void dwy_block8(const dw_pass *r, __m256 vlo, __m256 vhi, int32_t ox, const int K, const int S, const int D) {
    const int32_t ix0 = ox * S - r->pad_left;
    const size_t C = r->C;
    const __m256 vb = r->bias ? _mm256_loadu_ps(r->bias + r->c0) : _mm256_setzero_ps();
    __m256 acc[8];
    CK_UNROLL for (int j = 0; j < 8; j++) acc[j] = vb;
    for (int32_t e = 0; e < r->ntaps; e++) {
        const float *row = r->taps[e].in + r->c0 + (size_t)ix0 * C, *w = r->taps[e].w[0] + r->c0;
        CK_UNROLL for (int kx = 0; kx < K; kx++) {
            const __m256 wv = _mm256_loadu_ps(w + (size_t)kx * C);
            CK_UNROLL for (int j = 0; j < 8; j++)
                acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(row + (size_t)(j * S + kx * D) * C), wv, acc[j]);
        }
    }
    float *o = r->out[0] + r->c0 + (size_t)ox * C;
    CK_UNROLL for (int j = 0; j < 8; j++) _mm256_storeu_ps(o + (size_t)j * C, _mm256_min_ps(_mm256_max_ps(acc[j], vlo), vhi));
}

/// One chunk of the pass's rows: checked blocks where taps leave the image, unchecked between.
CK_TARGET_AVX2 CK_INLINE
void dwy_chunk_impl(const dw_pass *r, __m256 vlo, __m256 vhi, __m256i mask, const int K, const int S, const int D,
                    const int R, const int MASKED) {
    if (S == 1 && r->pad_left == (K - 1) * D / 2 && r->in_w == r->out_w && r->out_w >= 8) {
        // "Same" stride-1 rows of at least 8 columns: a 4-column block at each end whose columns
        // outside the image are skipped at compile time (no tap, as the reference), unchecked
        // blocks between.
        dwy_block(r, vlo, vhi, mask, 0, 4, K, S, D, R, 0, MASKED, 1);
        for (int32_t ox = 4; ox < r->out_w - 4;) {
            const int32_t n = dw_block_size(r->out_w - 4 - ox, R == 1 && !MASKED ? 8 : 4);
            switch (n) {
            case 8: if (R == 1 && !MASKED) dwy_block8(r, vlo, vhi, ox, K, S, D); break;
            case 4: dwy_block(r, vlo, vhi, mask, ox, 4, K, S, D, R, 0, MASKED, 0); break;
            case 2: dwy_block(r, vlo, vhi, mask, ox, 2, K, S, D, R, 0, MASKED, 0); break;
            default: dwy_block(r, vlo, vhi, mask, ox, 1, K, S, D, R, 0, MASKED, 0); break;
            }
            ox += n;
        }
        dwy_block(r, vlo, vhi, mask, r->out_w - 4, 4, K, S, D, R, 0, MASKED, 2);
        return;
    }
    int32_t ox = 0;
    while (ox < r->ox_lo) {
        const int32_t n = dw_block_size(r->out_w - ox, 4);
        switch (n) {
        case 4: dwy_block(r, vlo, vhi, mask, ox, 4, K, S, D, R, 1, MASKED, 0); break;
        case 2: dwy_block(r, vlo, vhi, mask, ox, 2, K, S, D, R, 1, MASKED, 0); break;
        default: dwy_block(r, vlo, vhi, mask, ox, 1, K, S, D, R, 1, MASKED, 0); break;
        }
        ox += n;
    }
    const int32_t right = ck_max(ox, ck_min(r->ox_hi, r->out_w - 4));
    while (ox < r->out_w) {
        const int32_t n = dw_block_size((ox < right ? right : r->out_w) - ox, R == 1 && !MASKED && ox < right ? 8 : 4);
        const int check = ox >= right;
        switch (n * 2 + check) {
        case 16: if (R == 1 && !MASKED) dwy_block8(r, vlo, vhi, ox, K, S, D); break;
        case 8: dwy_block(r, vlo, vhi, mask, ox, 4, K, S, D, R, 0, MASKED, 0); break;
        case 9: dwy_block(r, vlo, vhi, mask, ox, 4, K, S, D, R, 1, MASKED, 0); break;
        case 4: dwy_block(r, vlo, vhi, mask, ox, 2, K, S, D, R, 0, MASKED, 0); break;
        case 5: dwy_block(r, vlo, vhi, mask, ox, 2, K, S, D, R, 1, MASKED, 0); break;
        case 2: dwy_block(r, vlo, vhi, mask, ox, 1, K, S, D, R, 0, MASKED, 0); break;
        default: dwy_block(r, vlo, vhi, mask, ox, 1, K, S, D, R, 1, MASKED, 0); break;
        }
        ox += n;
    }
}

/// Any filter width, stride and dilation, `live` (1..8) channels: 4 columns in flight, every tap's
/// column checked (one-row passes).
CK_TARGET_AVX2
static void dwy_chunk_generic(const dw_pass *r, int32_t live, __m256 vlo, __m256 vhi) {
    const size_t C = r->C;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(live), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 vb = r->bias ? _mm256_maskload_ps(r->bias + r->c0, mask) : _mm256_setzero_ps();
    for (int32_t ox = 0; ox < r->out_w; ox += 4) {
        const int32_t n = ck_min(4, r->out_w - ox);
        __m256 acc[4];
        CK_UNROLL for (int j = 0; j < 4; j++) acc[j] = vb;
        for (int32_t e = 0; e < r->ntaps; e++) {
            const float *row = r->taps[e].in + r->c0, *wr = r->taps[e].w[0] + r->c0;
            for (int32_t kx = 0; kx < r->k_w; kx++) {
                const __m256 wv = _mm256_maskload_ps(wr + (size_t)kx * C, mask);
                const int32_t ix0 = ox * r->stride_w - r->pad_left + kx * r->dil_w;
                CK_UNROLL for (int j = 0; j < 4; j++) {
                    const int32_t ix = ix0 + j * r->stride_w;
                    const float *p = (j < n && (uint32_t)ix < (uint32_t)r->in_w) ? row + (size_t)ix * C : ck_dw_zero;
                    acc[j] = _mm256_fmadd_ps(_mm256_maskload_ps(p, mask), wv, acc[j]);
                }
            }
        }
        for (int32_t j = 0; j < n; j++)
            _mm256_maskstore_ps(r->out[0] + r->c0 + (size_t)(ox + j) * C, mask, _mm256_min_ps(_mm256_max_ps(acc[j], vlo), vhi));
    }
}

/// One chunk of `live` channels (8: whole, unmasked) of a one-row pass, or (pairs) of a 3 × 3
/// stride-1 row pair.
CK_TARGET_AVX2
static void dwy_chunk(const dw_pass *r, int variant, int32_t live, int pairs, __m256 vlo, __m256 vhi) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(live), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    if (pairs) {
        if (live == 8) dwy_chunk_impl(r, vlo, vhi, mask, 3, 1, 1, 2, 0);
        else dwy_chunk_impl(r, vlo, vhi, mask, 3, 1, 1, 2, 1);
        return;
    }
    if (live < 8) {
        switch (variant) {
        case DW_K3S1: dwy_chunk_impl(r, vlo, vhi, mask, 3, 1, 1, 1, 1); break;
        case DW_K3S2: dwy_chunk_impl(r, vlo, vhi, mask, 3, 2, 1, 1, 1); break;
        case DW_K5S1: dwy_chunk_impl(r, vlo, vhi, mask, 5, 1, 1, 1, 1); break;
        default: dwy_chunk_generic(r, live, vlo, vhi); break;
        }
        return;
    }
    switch (variant) {
    case DW_K3S1: dwy_chunk_impl(r, vlo, vhi, mask, 3, 1, 1, 1, 0); break;
    case DW_K3S2: dwy_chunk_impl(r, vlo, vhi, mask, 3, 2, 1, 1, 0); break;
    case DW_K3D2: dwy_chunk_impl(r, vlo, vhi, mask, 3, 1, 2, 1, 0); break;
    case DW_K3D4: dwy_chunk_impl(r, vlo, vhi, mask, 3, 1, 4, 1, 0); break;
    case DW_K5S1: dwy_chunk_impl(r, vlo, vhi, mask, 5, 1, 1, 1, 0); break;
    case DW_K5S2: dwy_chunk_impl(r, vlo, vhi, mask, 5, 2, 1, 1, 0); break;
    default: dwy_chunk_generic(r, 8, vlo, vhi); break;  // other shapes: every tap checked
    }
}

/// A one-row "same" stride-1 pass of whole chunks (C a multiple of 8), block by block within
/// groups of CK_DWY_GROUP chunks: each column block runs every chunk of the group before the next
/// block, so the group's input lines (taps rows × the block's columns × 256 bytes) stay in L1
/// between the chunks and blocks that read them. Each output is the same blocks' tap order, so the
/// same values as chunk by chunk.
#define CK_DWY_GROUP 8
CK_TARGET_AVX2 CK_INLINE
void dwy_groups_impl(dw_pass *r, __m256 vlo, __m256 vhi, const int K, const int D) {
    const __m256i all = _mm256_set1_epi32(-1);
    const size_t C = r->C;
    for (size_t g0 = 0; g0 < C; g0 += 8 * CK_DWY_GROUP) {
        const size_t g1 = g0 + 8 * CK_DWY_GROUP < C ? g0 + 8 * CK_DWY_GROUP : C;
        for (r->c0 = g0; r->c0 < g1; r->c0 += 8) dwy_block(r, vlo, vhi, all, 0, 4, K, 1, D, 1, 0, 0, 1);
        int32_t ox = 4;
        for (; ox + 8 <= r->out_w - 4; ox += 8)
            for (r->c0 = g0; r->c0 < g1; r->c0 += 8) dwy_block8(r, vlo, vhi, ox, K, 1, D);
        for (; ox < r->out_w - 4; ox++)
            for (r->c0 = g0; r->c0 < g1; r->c0 += 8) dwy_block(r, vlo, vhi, all, ox, 1, K, 1, D, 1, 0, 0, 0);
        for (r->c0 = g0; r->c0 < g1; r->c0 += 8) dwy_block(r, vlo, vhi, all, r->out_w - 4, 4, K, 1, D, 1, 0, 0, 2);
    }
}

/// Whether dwy_groups runs a pass (see there): dilated 3 × 3 "same" rows of at least 8 columns and
/// 64 or more channels in whole chunks.
static int dwy_grouped(const ck_conv_geometry *g, int variant) {
    return (variant == DW_K3D2 || variant == DW_K3D4) && g->in_c >= 64 && g->in_c % 8 == 0
           && g->pad_left == g->dil_w && g->in_w == g->out_w && g->out_w >= 8;
}

CK_TARGET_AVX2
static void dwy_groups(dw_pass *r, int variant, __m256 vlo, __m256 vhi) {
    if (variant == DW_K3D2) dwy_groups_impl(r, vlo, vhi, 3, 2);
    else dwy_groups_impl(r, vlo, vhi, 3, 4);
}

CK_TARGET_AVX2
static void dw_rows_avx2(const ck_conv_geometry *g, const float *input, int32_t ring, const float *weights,
                         const float *bias, float *output, int32_t row_begin, int32_t row_end, float lo, float hi) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const int variant = dw_variant(g);
    const int32_t C = g->in_c;
    const int pairs = variant == DW_K3S1 && g->stride_h == 1 && g->dil_h == 1;
    const int grouped = dwy_grouped(g, variant);
    dw_tap_row taps[2 * CK_MAX_TAPS];
    dw_pass r;
    dw_pass_init(&r, g, bias);
    for (int32_t oy = row_begin; oy < row_end;) {
        const int32_t rows = pairs && oy + 1 < row_end ? 2 : 1;
        dw_pass_rows(&r, taps, g, input, ring, weights, output, oy, rows, 1);
        if (grouped) dwy_groups(&r, variant, vlo, vhi);
        else for (r.c0 = 0; (int32_t)r.c0 < C; r.c0 += 8) dwy_chunk(&r, variant, ck_min(8, C - (int32_t)r.c0), rows == 2, vlo, vhi);
        oy += rows;
    }
}
#endif

void ck_dwconv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *weights,
                   const float *bias, float *output, int32_t row_begin, int32_t row_end,
                   float out_min, float out_max) {
    ck_dwconv_f32_ring(isa, g, input, 0, weights, bias, output, row_begin, row_end, out_min, out_max);
}

void ck_dwconv_f32_ring(int32_t isa, const ck_conv_geometry *g, const float *input, int32_t ring_rows,
                        const float *weights, const float *bias, float *output, int32_t row_begin, int32_t row_end,
                        float out_min, float out_max) {
    if (g->in_c <= 0 || g->out_w <= 0 || row_begin >= row_end || ring_rows < 0) return;
#if CK_X86
    if (g->k_h > 0 && g->k_h <= CK_MAX_TAPS) {
        if (isa >= CK_ISA_AVX512) {
            dw_rows_avx512(g, input, ring_rows, weights, bias, output, row_begin, row_end, out_min, out_max);
            return;
        }
        if (isa >= CK_ISA_AVX2) {
            dw_rows_avx2(g, input, ring_rows, weights, bias, output, row_begin, row_end, out_min, out_max);
            return;
        }
    }
#else
    (void)isa;
#endif
    for (int32_t oy = row_begin; oy < row_end; oy++)
        dw_row_portable(g, input, ring_rows, weights, bias, output + (size_t)oy * g->out_w * g->out_c, oy, out_min, out_max);
}
