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
#define CK_MAX_MR 12

static inline int32_t ck_min(int32_t a, int32_t b) { return a < b ? a : b; }

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

typedef void (*tile_fn)(int32_t, int32_t, const float *const *, int32_t, int32_t, const float *, float *, int32_t, float, float);

void ck_conv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                 float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                 int32_t block_end, float out_min, float out_max, const float *zeros,
                 const int32_t *offsets) {
    const int32_t taps = g->k_h * g->k_w, k = g->in_c;
    if (taps <= 0 || taps > CK_MAX_TAPS) return;
    tile_fn tile = tile_portable, narrow = NULL;
    int32_t mr_cap = 4;
#if CK_X86
    if (isa >= CK_ISA_AVX512) { tile = tile_avx512; narrow = tile_avx512_narrow; mr_cap = 12; }
    else if (isa >= CK_ISA_AVX2) { tile = tile_avx2; mr_cap = 6; }
#else
    (void)isa;
#endif
    const size_t block_stride = (size_t)CK_F32_NR * (1 + (size_t)taps * k);
    const float *ptrs[CK_MAX_TAPS * CK_MAX_MR];
    // A 1×1, stride-1, unpadded convolution reads output pixel p's input at p: no pointer table.
    const int direct = g->k_h == 1 && g->k_w == 1 && g->stride_h == 1 && g->stride_w == 1 &&
                       g->pad_top == 0 && g->pad_left == 0 && g->in_h == g->out_h && g->in_w == g->out_w;
    int32_t oy = pixel_begin / g->out_w, ox = pixel_begin - oy * g->out_w;

    for (int32_t p = pixel_begin; p < pixel_end; p += mr_cap) {
        const int32_t mr = ck_min(mr_cap, pixel_end - p);
        if (direct) {
            for (int32_t m = 0; m < mr_cap; m++) ptrs[m] = input + (size_t)(p + (m < mr ? m : 0)) * k;
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
        for (int32_t b = block_begin; b < block_end; b++) {
            const int32_t nr = ck_min(CK_F32_NR, g->out_c - b * CK_F32_NR);
            (nr <= 8 && narrow ? narrow : tile)(mr, nr, ptrs, taps, k, packed + (size_t)b * block_stride,
                 output + (size_t)p * g->out_c + (size_t)b * CK_F32_NR, g->out_c, out_min, out_max);
        }
    }
}

// ---- depthwise, depth multiplier 1: one output row per call, channel chunks outer, columns inner ----

/// The filter taps [lo, hi) whose input coordinate origin + k * dilation lies in [0, size).
static inline void valid_taps(int32_t origin, int32_t dilation, int32_t taps, int32_t size, int32_t *lo, int32_t *hi) {
    int32_t a = 0, b = taps;
    while (a < b && origin + a * dilation < 0) a++;
    while (b > a && origin + (b - 1) * dilation >= size) b--;
    *lo = a;
    *hi = b;
}

static void dw_row_portable(const ck_conv_geometry *g, const float *input, const float *weights, const float *bias,
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
            const float *row = input + (size_t)(iy0 + ky * g->dil_h) * g->in_w * C;
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
CK_TARGET_AVX2
static void dw_row_avx2(const ck_conv_geometry *g, const float *input, const float *weights, const float *bias,
                        float *out, int32_t oy, float lo, float hi) {
    const int32_t C = g->in_c, iy0 = oy * g->stride_h - g->pad_top;
    int32_t ky0, ky1;
    valid_taps(iy0, g->dil_h, g->k_h, g->in_h, &ky0, &ky1);
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const int32_t full = C & ~7;
    const size_t step = (size_t)g->stride_w * C;
    const int32_t span = (g->k_w - 1) * g->dil_w;
    int32_t ox = 0;
    while (ox < g->out_w) {
        const int32_t ix0 = ox * g->stride_w - g->pad_left;
        const int four = ox + 4 <= g->out_w && ix0 >= 0 && ix0 + 3 * g->stride_w + span < g->in_w;
        const int32_t n = four ? 4 : 1;
        int32_t kx0 = 0, kx1 = g->k_w;
        if (!four) valid_taps(ix0, g->dil_w, g->k_w, g->in_w, &kx0, &kx1);
        float *o = out + (size_t)ox * C;
        for (int32_t c0 = 0; c0 < full; c0 += 8) {
            const __m256 vb = bias ? _mm256_loadu_ps(bias + c0) : _mm256_setzero_ps();
            __m256 a0 = vb, a1 = vb, a2 = vb, a3 = vb;
            for (int32_t ky = ky0; ky < ky1; ky++) {
                const float *row = input + (size_t)(iy0 + ky * g->dil_h) * g->in_w * C + c0;
                const float *w = weights + (size_t)ky * g->k_w * C + c0;
                for (int32_t kx = kx0; kx < kx1; kx++) {
                    const __m256 wv = _mm256_loadu_ps(w + (size_t)kx * C);
                    const float *p = row + (size_t)(ix0 + kx * g->dil_w) * C;
                    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(p), wv, a0);
                    if (four) {
                        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + step), wv, a1);
                        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * step), wv, a2);
                        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * step), wv, a3);
                    }
                }
            }
            _mm256_storeu_ps(o + c0, _mm256_min_ps(_mm256_max_ps(a0, vlo), vhi));
            if (four) {
                _mm256_storeu_ps(o + C + c0, _mm256_min_ps(_mm256_max_ps(a1, vlo), vhi));
                _mm256_storeu_ps(o + 2 * (size_t)C + c0, _mm256_min_ps(_mm256_max_ps(a2, vlo), vhi));
                _mm256_storeu_ps(o + 3 * (size_t)C + c0, _mm256_min_ps(_mm256_max_ps(a3, vlo), vhi));
            }
        }
        for (int32_t j = 0; j < n; j++) {
            const int32_t jx0 = ix0 + j * g->stride_w;
            for (int32_t c = full; c < C; c++) {
                float acc = bias ? bias[c] : 0.0f;
                for (int32_t ky = ky0; ky < ky1; ky++)
                    for (int32_t kx = kx0; kx < kx1; kx++)
                        acc += input[((size_t)(iy0 + ky * g->dil_h) * g->in_w + (jx0 + kx * g->dil_w)) * C + c] *
                               weights[((size_t)ky * g->k_w + kx) * C + c];
                acc = acc < lo ? lo : acc;
                o[(size_t)j * C + c] = acc > hi ? hi : acc;
            }
        }
        ox += n;
    }
}

CK_TARGET_AVX512
static void dw_row_avx512(const ck_conv_geometry *g, const float *input, const float *weights, const float *bias,
                          float *out, int32_t oy, float lo, float hi) {
    const int32_t C = g->in_c, iy0 = oy * g->stride_h - g->pad_top;
    int32_t ky0, ky1;
    valid_taps(iy0, g->dil_h, g->k_h, g->in_h, &ky0, &ky1);
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const size_t step = (size_t)g->stride_w * C;   // input distance between neighbouring output columns
    const int32_t span = (g->k_w - 1) * g->dil_w;  // input columns one window covers, minus one
    for (int32_t c0 = 0; c0 < C; c0 += 16) {
        const __mmask16 mask = (__mmask16)((1u << ck_min(16, C - c0)) - 1u);
        const __m512 vb = bias ? _mm512_maskz_loadu_ps(mask, bias + c0) : _mm512_setzero_ps();
        const float *in_c0 = input + c0;
        const float *w_c0 = weights + c0;
        int32_t ox = 0;
        while (ox < g->out_w) {
            const int32_t ix0 = ox * g->stride_w - g->pad_left;
            if (ox + 4 <= g->out_w && ix0 >= 0 && ix0 + 3 * g->stride_w + span < g->in_w) {
                // Four interior columns at once: four independent FMA chains hide the FMA latency.
                __m512 a0 = vb, a1 = vb, a2 = vb, a3 = vb;
                for (int32_t ky = ky0; ky < ky1; ky++) {
                    const float *row = in_c0 + ((size_t)(iy0 + ky * g->dil_h) * g->in_w + ix0) * C;
                    const float *w = w_c0 + (size_t)ky * g->k_w * C;
                    for (int32_t kx = 0; kx < g->k_w; kx++) {
                        const __m512 wv = _mm512_maskz_loadu_ps(mask, w + (size_t)kx * C);
                        const float *p = row + (size_t)kx * g->dil_w * C;
                        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, p), wv, a0);
                        a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, p + step), wv, a1);
                        a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, p + 2 * step), wv, a2);
                        a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, p + 3 * step), wv, a3);
                    }
                }
                float *o = out + (size_t)ox * C + c0;
                _mm512_mask_storeu_ps(o, mask, _mm512_min_ps(_mm512_max_ps(a0, vlo), vhi));
                _mm512_mask_storeu_ps(o + C, mask, _mm512_min_ps(_mm512_max_ps(a1, vlo), vhi));
                _mm512_mask_storeu_ps(o + 2 * (size_t)C, mask, _mm512_min_ps(_mm512_max_ps(a2, vlo), vhi));
                _mm512_mask_storeu_ps(o + 3 * (size_t)C, mask, _mm512_min_ps(_mm512_max_ps(a3, vlo), vhi));
                ox += 4;
                continue;
            }
            int32_t kx0, kx1;
            valid_taps(ix0, g->dil_w, g->k_w, g->in_w, &kx0, &kx1);
            __m512 acc = vb;
            for (int32_t ky = ky0; ky < ky1; ky++) {
                const float *row = in_c0 + (size_t)(iy0 + ky * g->dil_h) * g->in_w * C;
                const float *w = w_c0 + (size_t)ky * g->k_w * C;
                for (int32_t kx = kx0; kx < kx1; kx++)
                    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, row + (size_t)(ix0 + kx * g->dil_w) * C),
                                          _mm512_maskz_loadu_ps(mask, w + (size_t)kx * C), acc);
            }
            _mm512_mask_storeu_ps(out + (size_t)ox * C + c0, mask, _mm512_min_ps(_mm512_max_ps(acc, vlo), vhi));
            ox++;
        }
    }
}
#endif

typedef void (*dw_row_fn)(const ck_conv_geometry *, const float *, const float *, const float *, float *, int32_t, float, float);

void ck_dwconv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *weights,
                   const float *bias, float *output, int32_t row_begin, int32_t row_end,
                   float out_min, float out_max) {
    dw_row_fn fn = dw_row_portable;
#if CK_X86
    // Fewer than 16 channels would leave most of a 512-bit vector idle: the 256-bit rows are faster.
    if (isa >= CK_ISA_AVX512 && g->in_c >= 16) fn = dw_row_avx512;
    else if (isa >= CK_ISA_AVX2) fn = dw_row_avx2;
#else
    (void)isa;
#endif
    for (int32_t oy = row_begin; oy < row_end; oy++)
        fn(g, input, weights, bias, output + (size_t)oy * g->out_w * g->out_c, oy, out_min, out_max);
}
