// float32 transposed convolution (gather form) and max pooling; see ckernels.h.
#include "ckernels.h"

#include <float.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CK_X86 1
#endif

#define CK_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define CK_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))

static inline int32_t ck_min(int32_t a, int32_t b) { return a < b ? a : b; }

/// The input row/column a transposed-conv output coordinate reads through filter tap `k`, or -1.
static inline int32_t tconv_source(int32_t o, int32_t pad, int32_t k, int32_t stride, int32_t size) {
    int32_t t = o + pad - k;
    if (t < 0 || t % stride != 0) return -1;
    t /= stride;
    return t < size ? t : -1;
}

static float dot_portable(const float *a, const float *b, int32_t n) {
    float s = 0.0f;
    for (int32_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

#if CK_X86
CK_TARGET_AVX2
static float dot_avx2(const float *a, const float *b, int32_t n) {
    __m256 acc = _mm256_setzero_ps();
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    float r = _mm_cvtss_f32(s);
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

CK_TARGET_AVX512
static float dot_avx512(const float *a, const float *b, int32_t n) {
    __m512 acc = _mm512_setzero_ps();
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
    }
    return _mm512_reduce_add_ps(acc);
}
#endif

typedef float (*dot_fn)(const float *, const float *, int32_t);

void ck_tconv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *weights,
                  const float *bias, float *output, int32_t row_begin, int32_t row_end,
                  float out_min, float out_max) {
    dot_fn dot = dot_portable;
#if CK_X86
    if (isa >= CK_ISA_AVX512) dot = dot_avx512;
    else if (isa >= CK_ISA_AVX2) dot = dot_avx2;
#else
    (void)isa;
#endif
    const int32_t cin = g->in_c, cout = g->out_c;
    const size_t tap_stride = (size_t)cin, oc_stride = (size_t)g->k_h * g->k_w * cin;
    for (int32_t oy = row_begin; oy < row_end; oy++) {
        // Column taps without divisions: kx ≡ (ox + pad_left) mod stride, ix = (ox + pad_left - kx) / stride.
        int32_t r = g->pad_left % g->stride_w, q = g->pad_left / g->stride_w;
        for (int32_t ox = 0; ox < g->out_w; ox++) {
            float *out = output + ((size_t)oy * g->out_w + ox) * cout;
            for (int32_t oc = 0; oc < cout; oc++) out[oc] = 0.0f;
            for (int32_t ky = 0; ky < g->k_h; ky++) {
                const int32_t iy = tconv_source(oy, g->pad_top, ky, g->stride_h, g->in_h);
                if (iy < 0) continue;
                for (int32_t kx = r, ix = q; kx < g->k_w && ix >= 0; kx += g->stride_w, ix--) {
                    if (ix >= g->in_w) continue;
                    const float *x = input + ((size_t)iy * g->in_w + ix) * cin;
                    const float *w = weights + ((size_t)ky * g->k_w + kx) * tap_stride;
                    for (int32_t oc = 0; oc < cout; oc++) out[oc] += dot(x, w + oc * oc_stride, cin);
                }
            }
            for (int32_t oc = 0; oc < cout; oc++) {
                float v = out[oc] + (bias ? bias[oc] : 0.0f);
                v = v < out_min ? out_min : v;
                out[oc] = v > out_max ? out_max : v;
            }
            if (++r == g->stride_w) { r = 0; q++; }
        }
    }
}

void ck_tconv_col2im_f32(const ck_conv_geometry *g, const float *columns, const float *bias, float *output,
                         int32_t row_begin, int32_t row_end, float out_min, float out_max) {
    const int32_t cout = g->out_c, taps = g->k_h * g->k_w;
    const size_t pixel_stride = (size_t)taps * cout;
    if (g->stride_h == g->k_h && g->stride_w == g->k_w && g->pad_top == 0 && g->pad_left == 0 &&
        g->out_h == g->in_h * g->k_h && g->out_w == g->in_w * g->k_w) {
        // Windows tile the output exactly (stride = filter, no padding; MediaPipe's 2×2 stride-2
        // upsampling): every output pixel has one contribution, a strided copy with the bias.
        const int32_t run = g->k_w * cout;
        for (int32_t oy = row_begin; oy < row_end; oy++) {
            const int32_t iy = oy / g->k_h, ky = oy - iy * g->k_h;
            const float *src = columns + (size_t)iy * g->in_w * pixel_stride + (size_t)ky * run;
            float *dst = output + (size_t)oy * g->out_w * cout;
            for (int32_t ix = 0; ix < g->in_w; ix++, src += pixel_stride, dst += run) {
                for (int32_t kx = 0; kx < g->k_w; kx++) {
                    for (int32_t oc = 0; oc < cout; oc++) {
                        float v = src[kx * cout + oc] + (bias ? bias[oc] : 0.0f);
                        v = v < out_min ? out_min : v;
                        dst[kx * cout + oc] = v > out_max ? out_max : v;
                    }
                }
            }
        }
        return;
    }
    for (int32_t oy = row_begin; oy < row_end; oy++) {
        // The (ky, iy) pairs of this output row.
        int32_t kys[64], iys[64], nk = 0;
        for (int32_t ky = 0; ky < g->k_h && nk < 64; ky++) {
            const int32_t iy = tconv_source(oy, g->pad_top, ky, g->stride_h, g->in_h);
            if (iy >= 0) { kys[nk] = ky; iys[nk] = iy; nk++; }
        }
        int32_t r = g->pad_left % g->stride_w, q = g->pad_left / g->stride_w;
        float *out = output + (size_t)oy * g->out_w * cout;
        for (int32_t ox = 0; ox < g->out_w; ox++, out += cout) {
            for (int32_t oc = 0; oc < cout; oc++) out[oc] = bias ? bias[oc] : 0.0f;
            for (int32_t j = 0; j < nk; j++) {
                const float *row = columns + (size_t)iys[j] * g->in_w * pixel_stride + (size_t)kys[j] * g->k_w * cout;
                for (int32_t kx = r, ix = q; kx < g->k_w && ix >= 0; kx += g->stride_w, ix--) {
                    if (ix >= g->in_w) continue;
                    const float *c = row + (size_t)ix * pixel_stride + (size_t)kx * cout;
                    for (int32_t oc = 0; oc < cout; oc++) out[oc] += c[oc];
                }
            }
            for (int32_t oc = 0; oc < cout; oc++) {
                float v = out[oc];
                v = v < out_min ? out_min : v;
                out[oc] = v > out_max ? out_max : v;
            }
            if (++r == g->stride_w) { r = 0; q++; }
        }
    }
}

// ---- max pooling ----

/// Channels [c_begin, in_c) of one output pixel (the vector variants' last channels too).
static void maxpool_channels(const ck_conv_geometry *g, const float *input, float *out, int32_t y0, int32_t y1,
                             int32_t x0, int32_t x1, float lo, float hi, int32_t c_begin) {
    const int32_t C = g->in_c;
    for (int32_t c = c_begin; c < C; c++) {
        float m = -FLT_MAX;
        for (int32_t y = y0; y < y1; y++)
            for (int32_t x = x0; x < x1; x++) {
                const float v = input[((size_t)y * g->in_w + x) * C + c];
                m = v > m ? v : m;
            }
        m = m < lo ? lo : m;
        out[c] = m > hi ? hi : m;
    }
}

static void maxpool_portable(const ck_conv_geometry *g, const float *input, float *out, int32_t y0, int32_t y1,
                             int32_t x0, int32_t x1, float lo, float hi) {
    maxpool_channels(g, input, out, y0, y1, x0, x1, lo, hi, 0);
}

#if CK_X86
CK_TARGET_AVX512
static void maxpool_avx512(const ck_conv_geometry *g, const float *input, float *out, int32_t y0, int32_t y1,
                           int32_t x0, int32_t x1, float lo, float hi) {
    const int32_t C = g->in_c;
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    for (int32_t c = 0; c < C; c += 16) {
        const __mmask16 mask = (__mmask16)((1u << ck_min(16, C - c)) - 1u);
        __m512 m = _mm512_set1_ps(-FLT_MAX);
        for (int32_t y = y0; y < y1; y++)
            for (int32_t x = x0; x < x1; x++)
                m = _mm512_max_ps(_mm512_mask_loadu_ps(m, mask, input + ((size_t)y * g->in_w + x) * C + c), m); // a NaN input is skipped, as std::max
        // min(hi, max(lo, m)) with lo and hi first, as maxpool_rows_avx2: a -0 maximum stays -0 under
        // a 0 floor (max returns its second operand on equal inputs), as the scalar's clamp.
        _mm512_mask_storeu_ps(out + c, mask, _mm512_min_ps(vhi, _mm512_max_ps(vlo, m)));
    }
}
#endif


typedef void (*pool_fn)(const ck_conv_geometry *, const float *, float *, int32_t, int32_t, int32_t, int32_t, float, float);

#if CK_X86
/// Output row oy's 2 × 2 windows that lie wholly inside the image, from column 0 until the first
/// that does not (BlazeFace's stride-2 pools): the same maxima in the same order as
/// maxpool_rows_avx2 without its window loops (64 × 64 × 28 → 32 × 32: 37 → 14 µs). Returns the
/// first column it left.
CK_TARGET_AVX2
static int32_t maxpool_2x2_row_avx2(const ck_conv_geometry *g, const float *input, float *output, int32_t oy, int32_t y0,
                                    float lo, float hi) {
    const int32_t C = g->in_c;
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), floor8 = _mm256_set1_ps(-FLT_MAX);
    const __m128 vlo4 = _mm_set1_ps(lo), vhi4 = _mm_set1_ps(hi), floor4 = _mm_set1_ps(-FLT_MAX);
    const size_t dx = (size_t)C, dy = (size_t)g->in_w * C;
    int32_t ox = 0;
    for (; ox < g->out_w; ox++) {
        const int32_t xs = ox * g->stride_w - g->pad_left;
        if (xs < 0 || xs + 2 > g->in_w) break;
        const float *in = input + ((size_t)y0 * g->in_w + xs) * C;
        float *out = output + ((size_t)oy * g->out_w + ox) * g->out_c;
        int32_t c = 0;
        for (; c + 8 <= C; c += 8) {
            __m256 m = _mm256_max_ps(_mm256_loadu_ps(in + c), floor8);
            m = _mm256_max_ps(_mm256_loadu_ps(in + dx + c), m);
            m = _mm256_max_ps(_mm256_loadu_ps(in + dy + c), m);
            m = _mm256_max_ps(_mm256_loadu_ps(in + dy + dx + c), m);
            _mm256_storeu_ps(out + c, _mm256_min_ps(vhi, _mm256_max_ps(vlo, m)));
        }
        if (c + 4 <= C) {
            __m128 m = _mm_max_ps(_mm_loadu_ps(in + c), floor4);
            m = _mm_max_ps(_mm_loadu_ps(in + dx + c), m);
            m = _mm_max_ps(_mm_loadu_ps(in + dy + c), m);
            m = _mm_max_ps(_mm_loadu_ps(in + dy + dx + c), m);
            _mm_storeu_ps(out + c, _mm_min_ps(vhi4, _mm_max_ps(vlo4, m)));
            c += 4;
        }
        if (c + 2 <= C) {  // two channels in the low lanes (BlazeFace's 42)
#define CK_LOAD2(p) _mm_castpd_ps(_mm_load_sd((const double *)(const void *)(p)))
            __m128 m = _mm_max_ps(CK_LOAD2(in + c), floor4);
            m = _mm_max_ps(CK_LOAD2(in + dx + c), m);
            m = _mm_max_ps(CK_LOAD2(in + dy + c), m);
            m = _mm_max_ps(CK_LOAD2(in + dy + dx + c), m);
#undef CK_LOAD2
            _mm_storel_pi((__m64 *)(void *)(out + c), _mm_min_ps(vhi4, _mm_max_ps(vlo4, m)));
            c += 2;
        }
        if (c < C) maxpool_channels(g, input, out, y0, y0 + 2, xs, xs + 2, lo, hi, c);
    }
    return ox;
}

/// Output rows [row_begin, row_end) on AVX2 without a call per pixel: 8 channels per vector, then 4,
/// then the scalar maxpool_channels. The clamp is min(hi, max(lo, m)) with lo and hi first, which
/// is the scalar's `m < lo ? lo : m` then `m > hi ? hi : m` exactly (signed zeros included); a NaN
/// input is skipped (max(x, m) returns m). BlazeFace's 64 × 64 × 28 → 32 × 32 pool: see
/// docs/PERFORMANCE.md, session 14.
CK_TARGET_AVX2
static void maxpool_rows_avx2(const ck_conv_geometry *g, const float *input, float *output, int32_t row_begin, int32_t row_end,
                              float lo, float hi) {
    const int32_t C = g->in_c;
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), floor8 = _mm256_set1_ps(-FLT_MAX);
    const __m128 vlo4 = _mm_set1_ps(lo), vhi4 = _mm_set1_ps(hi), floor4 = _mm_set1_ps(-FLT_MAX);
    for (int32_t oy = row_begin; oy < row_end; oy++) {
        const int32_t ys = oy * g->stride_h - g->pad_top;
        const int32_t y0 = ys < 0 ? 0 : ys, y1 = ck_min(g->in_h, ys + g->k_h);
        const int32_t first = g->k_h == 2 && g->k_w == 2 && y1 - y0 == 2 ? maxpool_2x2_row_avx2(g, input, output, oy, y0, lo, hi) : 0;
        for (int32_t ox = first; ox < g->out_w; ox++) {
            const int32_t xs = ox * g->stride_w - g->pad_left;
            const int32_t x0 = xs < 0 ? 0 : xs, x1 = ck_min(g->in_w, xs + g->k_w);
            float *out = output + ((size_t)oy * g->out_w + ox) * g->out_c;
            int32_t c = 0;
            for (; c + 8 <= C; c += 8) {
                __m256 m = floor8;
                for (int32_t y = y0; y < y1; y++)
                    for (int32_t x = x0; x < x1; x++) m = _mm256_max_ps(_mm256_loadu_ps(input + ((size_t)y * g->in_w + x) * C + c), m);
                _mm256_storeu_ps(out + c, _mm256_min_ps(vhi, _mm256_max_ps(vlo, m)));
            }
            if (c + 4 <= C) {
                __m128 m = floor4;
                for (int32_t y = y0; y < y1; y++)
                    for (int32_t x = x0; x < x1; x++) m = _mm_max_ps(_mm_loadu_ps(input + ((size_t)y * g->in_w + x) * C + c), m);
                _mm_storeu_ps(out + c, _mm_min_ps(vhi4, _mm_max_ps(vlo4, m)));
                c += 4;
            }
            if (c < C) maxpool_channels(g, input, out, y0, y1, x0, x1, lo, hi, c);
        }
    }
}
#endif

/// Runs `fn` on the window (clipped to the image) of every output pixel of rows [row_begin, row_end).
static void pool_rows(pool_fn fn, const ck_conv_geometry *g, const float *input, float *output,
                      int32_t row_begin, int32_t row_end, float out_min, float out_max) {
    for (int32_t oy = row_begin; oy < row_end; oy++) {
        const int32_t ys = oy * g->stride_h - g->pad_top;
        const int32_t y0 = ys < 0 ? 0 : ys, y1 = ck_min(g->in_h, ys + g->k_h);
        for (int32_t ox = 0; ox < g->out_w; ox++) {
            const int32_t xs = ox * g->stride_w - g->pad_left;
            const int32_t x0 = xs < 0 ? 0 : xs, x1 = ck_min(g->in_w, xs + g->k_w);
            fn(g, input, output + ((size_t)oy * g->out_w + ox) * g->out_c, y0, y1, x0, x1, out_min, out_max);
        }
    }
}

void ck_maxpool_f32(int32_t isa, const ck_conv_geometry *g, const float *input, float *output,
                    int32_t row_begin, int32_t row_end, float out_min, float out_max) {
    pool_fn fn = maxpool_portable;
#if CK_X86
    if (isa >= CK_ISA_AVX512) {
        fn = maxpool_avx512;
    } else if (isa >= CK_ISA_AVX2) {
        maxpool_rows_avx2(g, input, output, row_begin, row_end, out_min, out_max);
        return;
    }
#else
    (void)isa;
#endif
    pool_rows(fn, g, input, output, row_begin, row_end, out_min, out_max);
}

// ---- average pooling: the window (clipped to the image) summed in row-major order, divided by
// the number of pixels summed, clamped (the reference kernel's order: bit-identical; a NaN
// stays NaN, as Swift.min/max) ----

/// Channels [c_begin, in_c) of one output pixel (the vector variants' last channels too).
static void avgpool_channels(const ck_conv_geometry *g, const float *input, float *out, int32_t y0, int32_t y1,
                             int32_t x0, int32_t x1, float lo, float hi, int32_t c_begin) {
    const int32_t C = g->in_c;
    const float count = (float)((y1 - y0) * (x1 - x0));
    for (int32_t c = c_begin; c < C; c++) {
        float s = 0.0f;
        for (int32_t y = y0; y < y1; y++)
            for (int32_t x = x0; x < x1; x++) s += input[((size_t)y * g->in_w + x) * C + c];
        s = s / count;
        s = s < lo ? lo : s;
        out[c] = s > hi ? hi : s;
    }
}

static void avgpool_portable(const ck_conv_geometry *g, const float *input, float *out, int32_t y0, int32_t y1,
                             int32_t x0, int32_t x1, float lo, float hi) {
    avgpool_channels(g, input, out, y0, y1, x0, x1, lo, hi, 0);
}

#if CK_X86
CK_TARGET_AVX512
static void avgpool_avx512(const ck_conv_geometry *g, const float *input, float *out, int32_t y0, int32_t y1,
                           int32_t x0, int32_t x1, float lo, float hi) {
    const int32_t C = g->in_c;
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const __m512 count = _mm512_set1_ps((float)((y1 - y0) * (x1 - x0)));
    int32_t c = 0;
    // Four channel chunks at once: four independent addition chains.
    for (; c + 64 <= C; c += 64) {
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (int32_t y = y0; y < y1; y++)
            for (int32_t x = x0; x < x1; x++) {
                const float *p = input + ((size_t)y * g->in_w + x) * C + c;
                s0 = _mm512_add_ps(s0, _mm512_loadu_ps(p));
                s1 = _mm512_add_ps(s1, _mm512_loadu_ps(p + 16));
                s2 = _mm512_add_ps(s2, _mm512_loadu_ps(p + 32));
                s3 = _mm512_add_ps(s3, _mm512_loadu_ps(p + 48));
            }
        _mm512_storeu_ps(out + c, _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_div_ps(s0, count))));
        _mm512_storeu_ps(out + c + 16, _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_div_ps(s1, count))));
        _mm512_storeu_ps(out + c + 32, _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_div_ps(s2, count))));
        _mm512_storeu_ps(out + c + 48, _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_div_ps(s3, count))));
    }
    for (; c < C; c += 16) {
        const __mmask16 mask = (__mmask16)((1u << ck_min(16, C - c)) - 1u);
        __m512 s = _mm512_setzero_ps();
        for (int32_t y = y0; y < y1; y++)
            for (int32_t x = x0; x < x1; x++)
                s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mask, input + ((size_t)y * g->in_w + x) * C + c));
        _mm512_mask_storeu_ps(out + c, mask, _mm512_min_ps(vhi, _mm512_max_ps(vlo, _mm512_div_ps(s, count))));
    }
}
#endif

#if CK_X86
/// avgpool_avx512 on 8 lanes: 32 channels at a time, then 8, the last ones as avgpool_portable.
CK_TARGET_AVX2
static void avgpool_avx2(const ck_conv_geometry *g, const float *input, float *out, int32_t y0, int32_t y1,
                         int32_t x0, int32_t x1, float lo, float hi) {
    const int32_t C = g->in_c;
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const __m256 vcount = _mm256_set1_ps((float)((y1 - y0) * (x1 - x0)));
    int32_t c = 0;
    for (; c + 32 <= C; c += 32) {
        __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int32_t y = y0; y < y1; y++)
            for (int32_t x = x0; x < x1; x++) {
                const float *p = input + ((size_t)y * g->in_w + x) * C + c;
                for (int k = 0; k < 4; k++) s[k] = _mm256_add_ps(s[k], _mm256_loadu_ps(p + 8 * k));
            }
        for (int k = 0; k < 4; k++) _mm256_storeu_ps(out + c + 8 * k, _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_div_ps(s[k], vcount))));
    }
    for (; c + 8 <= C; c += 8) {
        __m256 sum = _mm256_setzero_ps();
        for (int32_t y = y0; y < y1; y++)
            for (int32_t x = x0; x < x1; x++) sum = _mm256_add_ps(sum, _mm256_loadu_ps(input + ((size_t)y * g->in_w + x) * C + c));
        _mm256_storeu_ps(out + c, _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_div_ps(sum, vcount))));
    }
    avgpool_channels(g, input, out, y0, y1, x0, x1, lo, hi, c);
}
#endif

void ck_avgpool_f32(int32_t isa, const ck_conv_geometry *g, const float *input, float *output,
                    int32_t row_begin, int32_t row_end, float out_min, float out_max) {
    pool_fn fn = avgpool_portable;
#if CK_X86
    if (isa >= CK_ISA_AVX512) fn = avgpool_avx512;
    else if (isa >= CK_ISA_AVX2) fn = avgpool_avx2;
#else
    (void)isa;
#endif
    pool_rows(fn, g, input, output, row_begin, row_end, out_min, out_max);
}

// ---- a global average pool's partial sums (see ckernels.h) ----

/// Channels [c_begin, C) (the vector variants' last channels too).
static void sum_pixels_channels(const float *input, int32_t C, int32_t p0, int32_t p1, float *sum, int32_t c_begin) {
    for (int32_t c = c_begin; c < C; c++) sum[c] = 0.0f;
    for (int32_t p = p0; p < p1; p++) {
        const float *x = input + (size_t)p * C;
        for (int32_t c = c_begin; c < C; c++) sum[c] += x[c];
    }
}

static void sum_pixels_portable(const float *input, int32_t C, int32_t p0, int32_t p1, float *sum) {
    sum_pixels_channels(input, C, p0, p1, sum, 0);
}

#if CK_X86
/// 64 channels at a time (four independent addition chains, tails masked), the pixels in order.
CK_TARGET_AVX512
static void sum_pixels_avx512(const float *input, int32_t C, int32_t p0, int32_t p1, float *sum) {
    for (int32_t c = 0; c < C; c += 64) {
        __mmask16 m[4];
        for (int j = 0; j < 4; j++) {
            const int32_t left = C - c - 16 * j;
            m[j] = left >= 16 ? (__mmask16)0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1u) : (__mmask16)0;
        }
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        const float *x = input + (size_t)p0 * C + c;
        for (int32_t p = p0; p < p1; p++, x += C) {
            s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(m[0], x));
            s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(m[1], x + 16));
            s2 = _mm512_add_ps(s2, _mm512_maskz_loadu_ps(m[2], x + 32));
            s3 = _mm512_add_ps(s3, _mm512_maskz_loadu_ps(m[3], x + 48));
        }
        _mm512_mask_storeu_ps(sum + c, m[0], s0);
        _mm512_mask_storeu_ps(sum + c + 16, m[1], s1);
        _mm512_mask_storeu_ps(sum + c + 32, m[2], s2);
        _mm512_mask_storeu_ps(sum + c + 48, m[3], s3);
    }
}
#endif

#if CK_X86
/// sum_pixels_avx512 on 8 lanes: 32 channels at a time, then 8, then one; the pixels in order.
CK_TARGET_AVX2
static void sum_pixels_avx2(const float *input, int32_t C, int32_t p0, int32_t p1, float *sum) {
    int32_t c = 0;
    for (; c + 32 <= C; c += 32) {
        __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        const float *x = input + (size_t)p0 * C + c;
        for (int32_t p = p0; p < p1; p++, x += C)
            for (int k = 0; k < 4; k++) s[k] = _mm256_add_ps(s[k], _mm256_loadu_ps(x + 8 * k));
        for (int k = 0; k < 4; k++) _mm256_storeu_ps(sum + c + 8 * k, s[k]);
    }
    for (; c + 8 <= C; c += 8) {
        __m256 s = _mm256_setzero_ps();
        const float *x = input + (size_t)p0 * C + c;
        for (int32_t p = p0; p < p1; p++, x += C) s = _mm256_add_ps(s, _mm256_loadu_ps(x));
        _mm256_storeu_ps(sum + c, s);
    }
    sum_pixels_channels(input, C, p0, p1, sum, c);
}
#endif

void ck_sum_pixels_f32(int32_t isa, const float *input, int32_t channels, int32_t pixel_begin, int32_t pixel_end,
                       float *sum) {
#if CK_X86
    if (isa >= CK_ISA_AVX512) {
        sum_pixels_avx512(input, channels, pixel_begin, pixel_end, sum);
        return;
    }
    if (isa >= CK_ISA_AVX2) {
        sum_pixels_avx2(input, channels, pixel_begin, pixel_end, sum);
        return;
    }
#else
    (void)isa;
#endif
    sum_pixels_portable(input, channels, pixel_begin, pixel_end, sum);
}

// ---- transposed convolution whose windows tile the output exactly (filter = stride, no padding:
// MediaPipe's 2×2 stride-2 upsampling): every output pixel is one dot product of an input pixel
// with one filter tap, plus the bias ----

/// The J = k_h * k_w * out_c dot products of input pixel `x` (in_c floats) with `wt` ([j][in_c]),
/// into sums[j].
static void tconv_tile_dots_portable(const float *x, const float *wt, int32_t C, int32_t J, float *sums) {
    for (int32_t j = 0; j < J; j++) {
        const float *w = wt + (size_t)j * C;
        float s = 0.0f;
        for (int32_t c = 0; c < C; c++) s += x[c] * w[c];
        sums[j] = s;
    }
}

#if CK_X86
/// Dot products four at a time: the four accumulators are reduced together (13 instructions for
/// four sums instead of four full horizontal reductions).
CK_TARGET_AVX512
static void tconv_tile_dots_avx512(const float *x, const float *wt, int32_t C, int32_t J, float *sums) {
    for (int32_t j = 0; j < J; j += 4) {
        __m512 acc[4];
        for (int32_t q = 0; q < 4; q++) {
            acc[q] = _mm512_setzero_ps();
            if (j + q >= J) continue;
            const float *w = wt + (size_t)(j + q) * C;
            for (int32_t c = 0; c < C; c += 16) {
                const __mmask16 mask = (__mmask16)((1u << ck_min(16, C - c)) - 1u);
                acc[q] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, x + c), _mm512_maskz_loadu_ps(mask, w + c), acc[q]);
            }
        }
        // Per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3] and the same for c, d; then [a, b, c, d]
        // partial sums per lane; then the four lanes added.
        const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(acc[0], acc[1]), _mm512_unpackhi_ps(acc[0], acc[1]));
        const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(acc[2], acc[3]), _mm512_unpackhi_ps(acc[2], acc[3]));
        const __m512 abcd = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(ab), _mm512_castps_pd(cd))),
                                          _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(ab), _mm512_castps_pd(cd))));
        const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(abcd), _mm512_extractf32x8_ps(abcd, 1));
        _mm_storeu_ps(sums + j, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    }
}
#endif

#if CK_X86
/// tconv_tile_dots_avx512 on 8 lanes; the channels past the last multiple of 8 summed on their own
/// and added last.
CK_TARGET_AVX2
static void tconv_tile_dots_avx2(const float *x, const float *wt, int32_t C, int32_t J, float *sums) {
    const int32_t C8 = C & ~7;
    for (int32_t j = 0; j < J; j += 4) {
        __m256 acc[4];
        float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int32_t q = 0; q < 4; q++) {
            acc[q] = _mm256_setzero_ps();
            if (j + q >= J) continue;
            const float *w = wt + (size_t)(j + q) * C;
            for (int32_t c = 0; c < C8; c += 8) acc[q] = _mm256_fmadd_ps(_mm256_loadu_ps(x + c), _mm256_loadu_ps(w + c), acc[q]);
            for (int32_t c = C8; c < C; c++) tail[q] += x[c] * w[c];
        }
        const __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(acc[0], acc[1]), _mm256_unpackhi_ps(acc[0], acc[1]));
        const __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(acc[2], acc[3]), _mm256_unpackhi_ps(acc[2], acc[3]));
        const __m256 abcd = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(ab), _mm256_castps_pd(cd))),
                                          _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(ab), _mm256_castps_pd(cd))));
        const __m128 h = _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
        _mm_storeu_ps(sums + j, _mm_add_ps(h, _mm_loadu_ps(tail)));
    }
}
#endif

/// The output values of `lanes` neighbouring input pixels from their sums (block[j * lanes + i]: filter
/// row j, pixel i) in plain C: + bias, clamped, pixel i's k_w · out_c values of output row ky at
/// out + ky · out_row + i · run.
static inline void tconv_tile_store_block(const float *block, int32_t lanes, int32_t kh, int32_t run, const float *biases,
                                          float *out, size_t out_row, float out_min, float out_max) {
    for (int32_t ky = 0; ky < kh; ky++) {
        float *dst = out + (size_t)ky * out_row;
        const float *b = biases + (size_t)ky * run;
        for (int32_t i = 0; i < lanes; i++, dst += run) {
            for (int32_t t = 0; t < run; t++) {
                float v = block[(size_t)(ky * run + t) * lanes + i] + b[t];
                v = v < out_min ? out_min : v;
                dst[t] = v > out_max ? out_max : v;
            }
        }
    }
}

#if CK_X86
/// 16 × 16 floats transposed in registers: r[i] lane j becomes lane i of r[j].
CK_TARGET_AVX512
static inline void transpose16_avx512(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
    }
}

/// 16 neighbouring input pixels at once (in_c a multiple of 16): each 16 × 16 block of inputs is
/// transposed so that a vector holds one channel of the 16 pixels, and sums[j] gets the 16 pixels'
/// dot products with filter row j (broadcast weights). sums is [J][16].
CK_TARGET_AVX512
static void tconv_tile_dots16_avx512(const float *x, const float *wt, int32_t C, int32_t J, float *sums) {
    __m512 acc[CK_TCONV_TILE_MAX_J];
    for (int32_t j = 0; j < J; j++) acc[j] = _mm512_setzero_ps();
    for (int32_t c0 = 0; c0 < C; c0 += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(x + (size_t)i * C + c0);
        transpose16_avx512(r);
        for (int32_t j = 0; j < J; j++) {
            const float *w = wt + (size_t)j * C + c0;
            __m512 a = acc[j];
            for (int c = 0; c < 16; c++) a = _mm512_fmadd_ps(r[c], _mm512_set1_ps(w[c]), a);
            acc[j] = a;
        }
    }
    for (int32_t j = 0; j < J; j++) _mm512_storeu_ps(sums + (size_t)j * 16, acc[j]);
}
#endif

#if CK_X86
/// The output rows of input row iy, 16 input pixels at a time (in_c a multiple of 16); returns the
/// first input column left for the per-pixel path.
CK_TARGET_AVX512
static int32_t tconv_tile_row_avx512(const ck_conv_geometry *g, const float *input, const float *wt, const float *biases,
                                     float *output, int32_t iy, int32_t J, size_t out_row, float out_min, float out_max) {
    const int32_t C = g->in_c, kh = g->k_h, run = g->k_w * g->out_c;
    float block[CK_TCONV_TILE_MAX_J * 16];
    int32_t ix = 0;
    for (; ix + 16 <= g->in_w; ix += 16) {
        tconv_tile_dots16_avx512(input + ((size_t)iy * g->in_w + ix) * C, wt, C, J, block);
        if (run == 2) {
            // Two values per input pixel and output row (MediaPipe's 2×2 upsampling to one
            // channel): interleave the two sum vectors, add the bias pattern, clamp, store.
            const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
            const __m512i hi_idx = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
            const __m512 vlo = _mm512_set1_ps(out_min), vhi = _mm512_set1_ps(out_max);
            for (int32_t ky = 0; ky < kh; ky++) {
                float *dst = output + (size_t)(iy * kh + ky) * out_row + (size_t)ix * 2;
                const float *b = biases + (size_t)ky * 2;
                const __m512 pattern = _mm512_setr_ps(b[0], b[1], b[0], b[1], b[0], b[1], b[0], b[1],
                                                      b[0], b[1], b[0], b[1], b[0], b[1], b[0], b[1]);
                const __m512 s0 = _mm512_loadu_ps(block + (size_t)(ky * 2) * 16);
                const __m512 s1 = _mm512_loadu_ps(block + (size_t)(ky * 2 + 1) * 16);
                const __m512 v0 = _mm512_add_ps(_mm512_permutex2var_ps(s0, lo_idx, s1), pattern);
                const __m512 v1 = _mm512_add_ps(_mm512_permutex2var_ps(s0, hi_idx, s1), pattern);
                // v < lo ? lo : v, then v > hi ? hi : v (a NaN stays NaN), as the scalar path.
                _mm512_storeu_ps(dst, _mm512_min_ps(vhi, _mm512_max_ps(vlo, v0)));
                _mm512_storeu_ps(dst + 16, _mm512_min_ps(vhi, _mm512_max_ps(vlo, v1)));
            }
            continue;
        }
        tconv_tile_store_block(block, 16, kh, run, biases, output + (size_t)iy * kh * out_row + (size_t)ix * run, out_row,
                               out_min, out_max);
    }
    return ix;
}
#endif

#if CK_X86
/// 8 × 8 floats transposed in registers: r[i] lane j becomes lane i of r[j].
CK_TARGET_AVX2
static inline void transpose8_avx2(__m256 r[8]) {
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
}

/// tconv_tile_dots16_avx512 for 8 neighbouring input pixels (in_c a multiple of 8): sums is [J][8].
CK_TARGET_AVX2
static void tconv_tile_dots8_avx2(const float *x, const float *wt, int32_t C, int32_t J, float *sums) {
    __m256 acc[CK_TCONV_TILE_MAX_J];
    for (int32_t j = 0; j < J; j++) acc[j] = _mm256_setzero_ps();
    for (int32_t c0 = 0; c0 < C; c0 += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(x + (size_t)i * C + c0);
        transpose8_avx2(r);
        for (int32_t j = 0; j < J; j++) {
            const float *w = wt + (size_t)j * C + c0;
            __m256 a = acc[j];
            for (int c = 0; c < 8; c++) a = _mm256_fmadd_ps(r[c], _mm256_broadcast_ss(w + c), a);
            acc[j] = a;
        }
    }
    for (int32_t j = 0; j < J; j++) _mm256_storeu_ps(sums + (size_t)j * 8, acc[j]);
}

/// tconv_tile_row_avx512 on 8 input pixels at a time (in_c a multiple of 8).
CK_TARGET_AVX2
static int32_t tconv_tile_row_avx2(const ck_conv_geometry *g, const float *input, const float *wt, const float *biases,
                                   float *output, int32_t iy, int32_t J, size_t out_row, float out_min, float out_max) {
    const int32_t C = g->in_c, kh = g->k_h, run = g->k_w * g->out_c;
    float block[CK_TCONV_TILE_MAX_J * 8];
    const __m256 vlo = _mm256_set1_ps(out_min), vhi = _mm256_set1_ps(out_max);
    int32_t ix = 0;
    for (; ix + 8 <= g->in_w; ix += 8) {
        tconv_tile_dots8_avx2(input + ((size_t)iy * g->in_w + ix) * C, wt, C, J, block);
        if (run == 2) {
            // Two values per input pixel and output row: interleave the two sum vectors (pixel
            // order restored across the 128-bit lanes), add the bias pattern, clamp, store.
            for (int32_t ky = 0; ky < kh; ky++) {
                float *dst = output + (size_t)(iy * kh + ky) * out_row + (size_t)ix * 2;
                const float *b = biases + (size_t)ky * 2;
                const __m256 pattern = _mm256_setr_ps(b[0], b[1], b[0], b[1], b[0], b[1], b[0], b[1]);
                const __m256 s0 = _mm256_loadu_ps(block + (size_t)(ky * 2) * 8);
                const __m256 s1 = _mm256_loadu_ps(block + (size_t)(ky * 2 + 1) * 8);
                const __m256 lo = _mm256_unpacklo_ps(s0, s1), hi = _mm256_unpackhi_ps(s0, s1);
                const __m256 v0 = _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), pattern);
                const __m256 v1 = _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x31), pattern);
                // v < lo ? lo : v, then v > hi ? hi : v (a NaN stays NaN), as the scalar path.
                _mm256_storeu_ps(dst, _mm256_min_ps(vhi, _mm256_max_ps(vlo, v0)));
                _mm256_storeu_ps(dst + 8, _mm256_min_ps(vhi, _mm256_max_ps(vlo, v1)));
            }
            continue;
        }
        tconv_tile_store_block(block, 8, kh, run, biases, output + (size_t)iy * kh * out_row + (size_t)ix * run, out_row,
                               out_min, out_max);
    }
    return ix;
}
#endif

void ck_tconv_tile_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *wt, const float *bias,
                       float *output, int32_t row_begin, int32_t row_end, float out_min, float out_max) {
    const int32_t C = g->in_c, cout = g->out_c, kh = g->k_h, kw = g->k_w;
    const int32_t J = kh * kw * cout;
    if (J <= 0 || J > CK_TCONV_TILE_MAX_J) return;
    void (*dots)(const float *, const float *, int32_t, int32_t, float *) = tconv_tile_dots_portable;
#if CK_X86
    if (isa >= CK_ISA_AVX512) dots = tconv_tile_dots_avx512;
    else if (isa >= CK_ISA_AVX2) dots = tconv_tile_dots_avx2;
#else
    (void)isa;
#endif
    float sums[CK_TCONV_TILE_MAX_J + 3], biases[CK_TCONV_TILE_MAX_J];
    for (int32_t j = 0; j < J; j++) biases[j] = bias ? bias[j % cout] : 0.0f;
    const size_t out_row = (size_t)g->out_w * cout;
    const int32_t run = kw * cout;
    for (int32_t iy = row_begin; iy < row_end; iy++) {
        int32_t ix = 0;
#if CK_X86
        if (isa >= CK_ISA_AVX512 && C % 16 == 0)
            ix = tconv_tile_row_avx512(g, input, wt, biases, output, iy, J, out_row, out_min, out_max);
        else if (isa >= CK_ISA_AVX2 && C % 8 == 0)
            ix = tconv_tile_row_avx2(g, input, wt, biases, output, iy, J, out_row, out_min, out_max);
#endif
        for (; ix < g->in_w; ix++) {
            dots(input + ((size_t)iy * g->in_w + ix) * C, wt, C, J, sums);
            for (int32_t ky = 0; ky < kh; ky++) {
                float *dst = output + (size_t)(iy * kh + ky) * out_row + (size_t)ix * run;
                const float *s = sums + (size_t)ky * run, *b = biases + (size_t)ky * run;
                for (int32_t t = 0; t < run; t++) {
                    float v = s[t] + b[t];
                    v = v < out_min ? out_min : v;
                    dst[t] = v > out_max ? out_max : v;
                }
            }
        }
    }
}
