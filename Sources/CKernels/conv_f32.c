// float32 convolution (implicit GEMM) and depthwise convolution; see ckernels.h.
#include "ckernels.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CK_X86 1
#endif

#define CK_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define CK_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))

/// Most taps (k_h * k_w) a tile's pointer table holds; the caller uses the reference kernel beyond.
#define CK_MAX_TAPS 256
#define CK_MAX_MR 8

static inline int32_t ck_min(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t ck_max(int32_t a, int32_t b) { return a > b ? a : b; }

size_t ck_conv_f32_packed_count(const ck_conv_geometry *g) {
    size_t blocks = ((size_t)g->out_c + CK_F32_NR - 1) / CK_F32_NR;
    size_t taps = (size_t)g->k_h * (size_t)g->k_w;
    return blocks * CK_F32_NR * (1 + taps * (size_t)g->in_c);
}

void ck_conv_f32_pack(const ck_conv_geometry *g, const float *filter, const float *bias, float *packed) {
    const int32_t taps = g->k_h * g->k_w, k = g->in_c;
    const int32_t blocks = (g->out_c + CK_F32_NR - 1) / CK_F32_NR;
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
/// outside the image; rows past `mr` repeat row 0 (computed, never stored).
static void tile_pointers(const ck_conv_geometry *g, const float *input, const float *zeros, int32_t p,
                          int32_t mr, int32_t mr_cap, const float **ptrs) {
    int32_t iy0[CK_MAX_MR], ix0[CK_MAX_MR];
    for (int32_t m = 0; m < mr_cap; m++) {
        int32_t q = p + (m < mr ? m : 0);
        int32_t oy = q / g->out_w, ox = q - oy * g->out_w;
        iy0[m] = oy * g->stride_h - g->pad_top;
        ix0[m] = ox * g->stride_w - g->pad_left;
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

CK_TARGET_AVX2
static void tile_avx2(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k,
                      const float *w, float *c, int32_t ldc, float lo, float hi) {
    __m256 c00 = _mm256_loadu_ps(w), c01 = _mm256_loadu_ps(w + 8);
    __m256 c10 = c00, c11 = c01, c20 = c00, c21 = c01, c30 = c00, c31 = c01, c40 = c00, c41 = c01, c50 = c00, c51 = c01;
    w += CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *a0 = ptrs[t * 6], *a1 = ptrs[t * 6 + 1], *a2 = ptrs[t * 6 + 2];
        const float *a3 = ptrs[t * 6 + 3], *a4 = ptrs[t * 6 + 4], *a5 = ptrs[t * 6 + 5];
        for (int32_t i = 0; i < k; i++) {
            const __m256 b0 = _mm256_loadu_ps(w), b1 = _mm256_loadu_ps(w + 8);
            w += CK_F32_NR;
            __m256 a;
            a = _mm256_broadcast_ss(a0 + i); c00 = _mm256_fmadd_ps(a, b0, c00); c01 = _mm256_fmadd_ps(a, b1, c01);
            a = _mm256_broadcast_ss(a1 + i); c10 = _mm256_fmadd_ps(a, b0, c10); c11 = _mm256_fmadd_ps(a, b1, c11);
            a = _mm256_broadcast_ss(a2 + i); c20 = _mm256_fmadd_ps(a, b0, c20); c21 = _mm256_fmadd_ps(a, b1, c21);
            a = _mm256_broadcast_ss(a3 + i); c30 = _mm256_fmadd_ps(a, b0, c30); c31 = _mm256_fmadd_ps(a, b1, c31);
            a = _mm256_broadcast_ss(a4 + i); c40 = _mm256_fmadd_ps(a, b0, c40); c41 = _mm256_fmadd_ps(a, b1, c41);
            a = _mm256_broadcast_ss(a5 + i); c50 = _mm256_fmadd_ps(a, b0, c50); c51 = _mm256_fmadd_ps(a, b1, c51);
        }
    }
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    __m256 rows[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (int32_t m = 0; m < mr; m++) {
        __m256 v0 = _mm256_min_ps(_mm256_max_ps(rows[m][0], vlo), vhi);
        __m256 v1 = _mm256_min_ps(_mm256_max_ps(rows[m][1], vlo), vhi);
        float *dst = c + (size_t)m * ldc;
        if (nr == CK_F32_NR) {
            _mm256_storeu_ps(dst, v0);
            _mm256_storeu_ps(dst + 8, v1);
        } else {
            float tmp[CK_F32_NR];
            _mm256_storeu_ps(tmp, v0);
            _mm256_storeu_ps(tmp + 8, v1);
            memcpy(dst, tmp, (size_t)nr * sizeof(float));
        }
    }
}

// ---- AVX-512: 8 x 16 tiles (8 zmm accumulators) ----

CK_TARGET_AVX512
static void tile_avx512(int32_t mr, int32_t nr, const float *const *ptrs, int32_t taps, int32_t k,
                        const float *w, float *c, int32_t ldc, float lo, float hi) {
    __m512 c0 = _mm512_loadu_ps(w);
    __m512 c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    w += CK_F32_NR;
    for (int32_t t = 0; t < taps; t++) {
        const float *const *p = ptrs + t * 8;
        const float *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3], *a4 = p[4], *a5 = p[5], *a6 = p[6], *a7 = p[7];
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
        }
    }
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const __mmask16 mask = (__mmask16)((1u << nr) - 1u);
    __m512 rows[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
    for (int32_t m = 0; m < mr; m++) {
        __m512 v = _mm512_min_ps(_mm512_max_ps(rows[m], vlo), vhi);
        _mm512_mask_storeu_ps(c + (size_t)m * ldc, mask, v);
    }
}
#endif

typedef void (*tile_fn)(int32_t, int32_t, const float *const *, int32_t, int32_t, const float *, float *, int32_t, float, float);

void ck_conv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                 float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                 int32_t block_end, float out_min, float out_max, const float *zeros) {
    const int32_t taps = g->k_h * g->k_w, k = g->in_c;
    if (taps <= 0 || taps > CK_MAX_TAPS) return;
    tile_fn tile = tile_portable;
    int32_t mr_cap = 4;
#if CK_X86
    if (isa >= CK_ISA_AVX512) { tile = tile_avx512; mr_cap = 8; }
    else if (isa >= CK_ISA_AVX2) { tile = tile_avx2; mr_cap = 6; }
#else
    (void)isa;
#endif
    const size_t block_stride = (size_t)CK_F32_NR * (1 + (size_t)taps * k);
    const float *ptrs[CK_MAX_TAPS * CK_MAX_MR];
    for (int32_t p = pixel_begin; p < pixel_end; p += mr_cap) {
        const int32_t mr = ck_min(mr_cap, pixel_end - p);
        tile_pointers(g, input, zeros, p, mr, mr_cap, ptrs);
        for (int32_t b = block_begin; b < block_end; b++) {
            const int32_t nr = ck_min(CK_F32_NR, g->out_c - b * CK_F32_NR);
            tile(mr, nr, ptrs, taps, k, packed + (size_t)b * block_stride,
                 output + (size_t)p * g->out_c + (size_t)b * CK_F32_NR, g->out_c, out_min, out_max);
        }
    }
}

// ---- depthwise, depth multiplier 1 ----

static void dw_portable(const ck_conv_geometry *g, const float *input, const float *weights, const float *bias,
                        float *out, int32_t oy, int32_t ox, float lo, float hi) {
    const int32_t C = g->in_c;
    const int32_t iy0 = oy * g->stride_h - g->pad_top, ix0 = ox * g->stride_w - g->pad_left;
    float acc[64];
    for (int32_t c0 = 0; c0 < C; c0 += 64) {
        const int32_t n = ck_min(64, C - c0);
        for (int32_t j = 0; j < n; j++) acc[j] = bias ? bias[c0 + j] : 0.0f;
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            const int32_t iy = iy0 + ky * g->dil_h;
            if (iy < 0 || iy >= g->in_h) continue;
            for (int32_t kx = 0; kx < g->k_w; kx++) {
                const int32_t ix = ix0 + kx * g->dil_w;
                if (ix < 0 || ix >= g->in_w) continue;
                const float *x = input + ((size_t)iy * g->in_w + ix) * C + c0;
                const float *w = weights + ((size_t)ky * g->k_w + kx) * C + c0;
                for (int32_t j = 0; j < n; j++) acc[j] += x[j] * w[j];
            }
        }
        for (int32_t j = 0; j < n; j++) {
            float v = acc[j];
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            out[c0 + j] = v;
        }
    }
}

#if CK_X86
CK_TARGET_AVX2
static void dw_avx2(const ck_conv_geometry *g, const float *input, const float *weights, const float *bias,
                    float *out, int32_t oy, int32_t ox, float lo, float hi) {
    const int32_t C = g->in_c;
    const int32_t iy0 = oy * g->stride_h - g->pad_top, ix0 = ox * g->stride_w - g->pad_left;
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    int32_t c0 = 0;
    for (; c0 + 8 <= C; c0 += 8) {
        __m256 acc = bias ? _mm256_loadu_ps(bias + c0) : _mm256_setzero_ps();
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            const int32_t iy = iy0 + ky * g->dil_h;
            if (iy < 0 || iy >= g->in_h) continue;
            for (int32_t kx = 0; kx < g->k_w; kx++) {
                const int32_t ix = ix0 + kx * g->dil_w;
                if (ix < 0 || ix >= g->in_w) continue;
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(input + ((size_t)iy * g->in_w + ix) * C + c0),
                                      _mm256_loadu_ps(weights + ((size_t)ky * g->k_w + kx) * C + c0), acc);
            }
        }
        _mm256_storeu_ps(out + c0, _mm256_min_ps(_mm256_max_ps(acc, vlo), vhi));
    }
    for (; c0 < C; c0++) {
        float acc = bias ? bias[c0] : 0.0f;
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            const int32_t iy = iy0 + ky * g->dil_h;
            if (iy < 0 || iy >= g->in_h) continue;
            for (int32_t kx = 0; kx < g->k_w; kx++) {
                const int32_t ix = ix0 + kx * g->dil_w;
                if (ix < 0 || ix >= g->in_w) continue;
                acc += input[((size_t)iy * g->in_w + ix) * C + c0] * weights[((size_t)ky * g->k_w + kx) * C + c0];
            }
        }
        acc = acc < lo ? lo : acc;
        out[c0] = acc > hi ? hi : acc;
    }
}

CK_TARGET_AVX512
static void dw_avx512(const ck_conv_geometry *g, const float *input, const float *weights, const float *bias,
                      float *out, int32_t oy, int32_t ox, float lo, float hi) {
    const int32_t C = g->in_c;
    const int32_t iy0 = oy * g->stride_h - g->pad_top, ix0 = ox * g->stride_w - g->pad_left;
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    for (int32_t c0 = 0; c0 < C; c0 += 16) {
        const int32_t n = ck_min(16, C - c0);
        const __mmask16 mask = (__mmask16)((1u << n) - 1u);
        __m512 acc = bias ? _mm512_maskz_loadu_ps(mask, bias + c0) : _mm512_setzero_ps();
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            const int32_t iy = iy0 + ky * g->dil_h;
            if (iy < 0 || iy >= g->in_h) continue;
            for (int32_t kx = 0; kx < g->k_w; kx++) {
                const int32_t ix = ix0 + kx * g->dil_w;
                if (ix < 0 || ix >= g->in_w) continue;
                acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, input + ((size_t)iy * g->in_w + ix) * C + c0),
                                      _mm512_maskz_loadu_ps(mask, weights + ((size_t)ky * g->k_w + kx) * C + c0), acc);
            }
        }
        _mm512_mask_storeu_ps(out + c0, mask, _mm512_min_ps(_mm512_max_ps(acc, vlo), vhi));
    }
}
#endif

typedef void (*dw_fn)(const ck_conv_geometry *, const float *, const float *, const float *, float *, int32_t, int32_t, float, float);

void ck_dwconv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *weights,
                   const float *bias, float *output, int32_t row_begin, int32_t row_end,
                   float out_min, float out_max) {
    dw_fn fn = dw_portable;
#if CK_X86
    if (isa >= CK_ISA_AVX512) fn = dw_avx512;
    else if (isa >= CK_ISA_AVX2) fn = dw_avx2;
#else
    (void)isa;
#endif
    for (int32_t oy = row_begin; oy < row_end; oy++) {
        for (int32_t ox = 0; ox < g->out_w; ox++) {
            fn(g, input, weights, bias, output + ((size_t)oy * g->out_w + ox) * g->out_c, oy, ox, out_min, out_max);
        }
    }
}
