// float32 element-wise functions; see ckernels.h.
#include "ckernels.h"

#include <math.h>
#include <string.h>

// Bit-exact kernels here must not have a*b+c fused into one rounding.
#pragma STDC FP_CONTRACT OFF

#if defined(__x86_64__)
#include <immintrin.h>
#define CK_X86 1
#include "interleave4.h"
#endif

#define CK_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define CK_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))

// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 split in two for accuracy),
// exp(r) on [-ln2/2, ln2/2] by the Cephes expf polynomial.
#define CK_EXP_HI 88.3762626647949f
#define CK_EXP_LO -88.3762626647949f
#define CK_LOG2E 1.44269504088896341f
#define CK_LN2_HI 0.693359375f
#define CK_LN2_LO -2.12194440e-4f
#define CK_P0 1.9875691500e-4f
#define CK_P1 1.3981999507e-3f
#define CK_P2 8.3334519073e-3f
#define CK_P3 4.1665795894e-2f
#define CK_P4 1.6666665459e-1f
#define CK_P5 5.0000001201e-1f

static inline float exp_portable(float x) {
    x = x > CK_EXP_HI ? CK_EXP_HI : (x < CK_EXP_LO ? CK_EXP_LO : x);
    const float n = nearbyintf(x * CK_LOG2E);
    float r = x - n * CK_LN2_HI;
    r = r - n * CK_LN2_LO;
    float p = CK_P0;
    p = p * r + CK_P1;
    p = p * r + CK_P2;
    p = p * r + CK_P3;
    p = p * r + CK_P4;
    p = p * r + CK_P5;
    p = p * r * r + r + 1.0f;
    return ldexpf(p, (int)n);
}

static void logistic_portable(const float *in, float *out, size_t begin, size_t end) {
    for (size_t i = begin; i < end; i++) {
        const float x = in[i];
        out[i] = x != x ? x : 1.0f / (1.0f + exp_portable(-x));
    }
}

#if CK_X86
CK_TARGET_AVX2
static inline __m256 exp_avx2(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(CK_EXP_LO)), _mm256_set1_ps(CK_EXP_HI));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(CK_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CK_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CK_LN2_LO), r);
    __m256 p = _mm256_set1_ps(CK_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CK_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CK_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CK_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CK_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CK_P5));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    // 2^n as a float: n in [-128, 128] after the clamp; split in two factors to stay finite.
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i half = _mm256_srai_epi32(ni, 1);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

CK_TARGET_AVX2
static void logistic_avx2(const float *in, float *out, size_t begin, size_t end) {
    size_t i = begin;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= end; i += 8) {
        const __m256 x = _mm256_loadu_ps(in + i);
        const __m256 y = _mm256_div_ps(one, _mm256_add_ps(one, exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x))));
        const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        _mm256_storeu_ps(out + i, _mm256_blendv_ps(y, x, nan));
    }
    logistic_portable(in, out, i, end);
}

CK_TARGET_AVX512
static inline __m512 exp_avx512(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(CK_EXP_LO)), _mm512_set1_ps(CK_EXP_HI));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(CK_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CK_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CK_LN2_LO), r);
    __m512 p = _mm512_set1_ps(CK_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(CK_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(CK_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(CK_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(CK_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(CK_P5));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

CK_TARGET_AVX512
static void logistic_avx512(const float *in, float *out, size_t begin, size_t end) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (size_t i = begin; i < end; i += 16) {
        const size_t left = end - i;
        const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
        const __m512 x = _mm512_maskz_loadu_ps(m, in + i);
        __m512 y = _mm512_div_ps(one, _mm512_add_ps(one, exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
        const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        y = _mm512_mask_blend_ps(nan, y, x);
        _mm512_mask_storeu_ps(out + i, m, y);
    }
}
#endif

void ck_logistic_f32(int32_t isa, const float *input, float *output, size_t begin, size_t end) {
#if CK_X86
    if (isa >= CK_ISA_AVX512) { logistic_avx512(input, output, begin, end); return; }
    if (isa >= CK_ISA_AVX2) { logistic_avx2(input, output, begin, end); return; }
#else
    (void)isa;
#endif
    logistic_portable(input, output, begin, end);
}

// ---- float softmax (see ckernels.h) ----

static void softmax_row_portable(const float *x, float *y, size_t depth, float beta) {
    float maximum = x[0];
    for (size_t i = 1; i < depth; i++)
        if (x[i] > maximum) maximum = x[i];
    float sum = 0;
    for (size_t i = 0; i < depth; i++) {
        const float e = expf((x[i] - maximum) * beta);
        y[i] = e;
        sum += e;
    }
    const float inverse = 1 / sum;
    for (size_t i = 0; i < depth; i++) y[i] *= inverse;
}

#if CK_X86
/// One row of at least 16 values, none NaN or infinite (else 0 and nothing written).
CK_TARGET_AVX512
static int softmax_row_avx512(const float *x, float *y, size_t depth, float beta) {
    __m512 vmax = _mm512_set1_ps(x[0]);
    __mmask16 special = 0;
    for (size_t i = 0; i < depth; i += 16) {
        const size_t left = depth - i;
        const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        special |= _mm512_mask_fpclass_ps_mask(m, v, 0x99);  // QNaN, +inf, -inf, SNaN
        vmax = _mm512_mask_max_ps(vmax, m, vmax, v);
    }
    if (special) return 0;
    const __m512 maximum = _mm512_set1_ps(_mm512_reduce_max_ps(vmax)), vbeta = _mm512_set1_ps(beta);
    __m512 vsum = _mm512_setzero_ps();
    for (size_t i = 0; i < depth; i += 16) {
        const size_t left = depth - i;
        const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
        const __m512 e = exp_avx512(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), maximum), vbeta));
        _mm512_mask_storeu_ps(y + i, m, e);
        vsum = _mm512_mask_add_ps(vsum, m, vsum, e);
    }
    const __m512 inverse = _mm512_set1_ps(1 / _mm512_reduce_add_ps(vsum));
    for (size_t i = 0; i < depth; i += 16) {
        const size_t left = depth - i;
        const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inverse));
    }
    return 1;
}
#endif

void ck_softmax_f32(int32_t isa, const float *input, float *output, size_t rows, size_t depth, float beta) {
    if (depth == 0) return;
    for (size_t r = 0; r < rows; r++) {
        const float *x = input + r * depth;
        float *y = output + r * depth;
#if CK_X86
        if (isa >= CK_ISA_AVX512 && depth >= 16 && softmax_row_avx512(x, y, depth, beta)) continue;
#else
        (void)isa;
#endif
        softmax_row_portable(x, y, depth, beta);
    }
}

// ---- 8-bit quantized ADD/SUB (see ckernels.h) ----

static inline int32_t qadd_high_mul(int32_t a, int32_t b) {
    if (a == b && a == INT32_MIN) return INT32_MAX;
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

static inline int32_t qadd_divide_pot(int32_t x, int32_t exponent) {
    if (exponent <= 0) return x;
    if (exponent >= 31) return 0;
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

static void qadd_portable(const ck_qadd_params *p, const uint8_t *a, const uint8_t *b, uint8_t *out, size_t begin, size_t end) {
    for (size_t i = begin; i < end; i++) {
        const int32_t raw = (int32_t)((uint32_t)p->table1[a[i]] + (uint32_t)p->table2[b[i]]);  // wraps, as Swift's &+
        int64_t v = (int64_t)qadd_divide_pot(qadd_high_mul(raw, p->multiplier), -p->shift) + p->output_zero_point;
        v = v < p->act_min ? p->act_min : v;
        v = v > p->act_max ? p->act_max : v;
        out[i] = (uint8_t)(int32_t)v;
    }
}

#if CK_X86
/// Vector SaturatingRoundingDoublingHighMul (the multiplier is positive, so the INT32_MIN² case
/// cannot occur). The scalar's nudge-and-truncate, (ab + 2^30) / 2^31 toward zero for ab >= 0 and
/// (ab + 1 - 2^30) / 2^31 toward zero for ab < 0, is floor((ab + 2^30) / 2^31) in both cases (for a
/// negative y, y / 2^31 toward zero is floor((y + 2^31 - 1) / 2^31)): bits 31-62 of ab + 2^30.
/// Even lanes' 64-bit products shift right by 31 into their low half, odd lanes' left by 1 into
/// their high half.
CK_TARGET_AVX512
static inline __m512i qadd_high_mul_avx512(__m512i x, __m512i m) {
    const __m512i nudge = _mm512_set1_epi64((int64_t)1 << 30);
    const __m512i even = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, m), nudge), 31);
    const __m512i odd = _mm512_slli_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), m), nudge), 1);
    return _mm512_mask_blend_epi32((__mmask16)0xAAAA, even, odd);
}

/// t[idx] for 16 indices in [0, 256) from registers, without a gather (a 16-lane gather costs
/// Zen 4 about as much as the rest of qadd_avx512's arithmetic twice over): eight two-register
/// permutes of 32 entries each (index bits 0-4), then blends on bits 5, 6 and 7.
CK_TARGET_AVX512
static inline __m512i qadd_lookup_avx512(const int32_t *t, __m512i idx) {
    __m512i q[4];
    const __mmask16 b5 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32));
    for (int k = 0; k < 4; k++) {
        const __m512i lo = _mm512_permutex2var_epi32(_mm512_loadu_si512(t + 64 * k), idx, _mm512_loadu_si512(t + 64 * k + 16));
        const __m512i hi = _mm512_permutex2var_epi32(_mm512_loadu_si512(t + 64 * k + 32), idx, _mm512_loadu_si512(t + 64 * k + 48));
        q[k] = _mm512_mask_blend_epi32(b5, lo, hi);
    }
    const __mmask16 b6 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(64)), b7 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(128));
    return _mm512_mask_blend_epi32(b7, _mm512_mask_blend_epi32(b6, q[0], q[1]), _mm512_mask_blend_epi32(b6, q[2], q[3]));
}

/// The output arithmetic of qadd_portable on 16 lanes of raw sums.
typedef struct {
    __m512i m, mask, half, lo, hi, zp;
    __m128i count;
    int32_t e;
} qadd_requant_avx512_t;

CK_TARGET_AVX512
static inline qadd_requant_avx512_t qadd_requant_avx512_setup(const ck_qadd_params *p) {
    qadd_requant_avx512_t r;
    r.e = -p->shift;
    r.m = _mm512_set1_epi32(p->multiplier);
    r.mask = _mm512_set1_epi32(r.e >= 31 ? 0 : (int32_t)(((int64_t)1 << r.e) - 1));
    r.half = _mm512_srai_epi32(r.mask, 1);
    r.count = _mm_cvtsi32_si128(r.e);
    // Clamp before adding the zero point (no 32-bit overflow): [act_min - zp, act_max - zp].
    r.lo = _mm512_set1_epi32(p->act_min - p->output_zero_point);
    r.hi = _mm512_set1_epi32(p->act_max - p->output_zero_point);
    r.zp = _mm512_set1_epi32(p->output_zero_point);
    return r;
}

CK_TARGET_AVX512
static inline __m512i qadd_requant_avx512(__m512i raw, const qadd_requant_avx512_t *r) {
    __m512i v = qadd_high_mul_avx512(raw, r->m);
    if (r->e >= 31) {
        v = _mm512_setzero_si512();
    } else if (r->e > 0) {
        const __m512i remainder = _mm512_and_si512(v, r->mask);
        const __m512i threshold = _mm512_add_epi32(r->half, _mm512_maskz_set1_epi32(_mm512_cmplt_epi32_mask(v, _mm512_setzero_si512()), 1));
        v = _mm512_add_epi32(_mm512_sra_epi32(v, r->count), _mm512_maskz_set1_epi32(_mm512_cmpgt_epi32_mask(remainder, threshold), 1));
    }
    return _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(v, r->lo), r->hi), r->zp);
}

CK_TARGET_AVX512
static void qadd_avx512(const ck_qadd_params *p, const uint8_t *a, const uint8_t *b, uint8_t *out, size_t begin, size_t end) {
    const qadd_requant_avx512_t rq = qadd_requant_avx512_setup(p);
    size_t i = begin;
    for (; i + 16 <= end; i += 16) {
        const __m512i ia = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(a + i)));
        const __m512i ib = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + i)));
        const __m512i raw = _mm512_add_epi32(qadd_lookup_avx512(p->table1, ia), qadd_lookup_avx512(p->table2, ib));
        _mm_storeu_si128((__m128i *)(out + i), _mm512_cvtepi32_epi8(qadd_requant_avx512(raw, &rq)));
    }
    qadd_portable(p, a, b, out, i, end);
}

#define CK_TARGET_AVX512VBMI __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi")))

/// Byte k of a 256-entry int32 table as four 64-entry vectors (plane[4 * k + c]: entries 64c..64c+63).
CK_TARGET_AVX512VBMI
static inline void qadd_planes_vbmi(const int32_t *t, __m512i *plane) {
    for (int k = 0; k < 4; k++) {
        for (int c = 0; c < 4; c++) {
            __m128i q[4];
            for (int j = 0; j < 4; j++)
                q[j] = _mm512_cvtepi32_epi8(_mm512_srli_epi32(_mm512_loadu_si512(t + 64 * c + 16 * j), 8 * k));
            __m512i v = _mm512_castsi128_si512(q[0]);
            v = _mm512_inserti32x4(v, q[1], 1);
            v = _mm512_inserti32x4(v, q[2], 2);
            plane[4 * k + c] = _mm512_inserti32x4(v, q[3], 3);
        }
    }
}

/// table[idx] for 64 byte indices as four vectors of int32 lanes in the in-lane order of the byte
/// unpacks: vector x, 128-bit lane l holds entries 16l + 4x .. 16l + 4x + 3 (each byte plane one
/// vpermi2b per half of the table and a blend on index bit 7; the planes then interleave).
CK_TARGET_AVX512VBMI
static inline void qadd_lookup_vbmi(const __m512i *plane, __m512i idx, __m512i *x) {
    const __mmask64 upper = _mm512_movepi8_mask(idx);
    __m512i b[4];
    for (int k = 0; k < 4; k++) {
        const __m512i lo = _mm512_permutex2var_epi8(plane[4 * k], idx, plane[4 * k + 1]);
        const __m512i hi = _mm512_permutex2var_epi8(plane[4 * k + 2], idx, plane[4 * k + 3]);
        b[k] = _mm512_mask_blend_epi8(upper, lo, hi);
    }
    ck_interleave4_epi8(b, x);
}

/// qadd_avx512 64 elements at a time with AVX-512 VBMI: the tables are read from registers as byte
/// planes by vpermi2b (per table and 64 elements 21 instructions: 8 permutes, 4 blends, 8 unpacks
/// and the mask, where the dword permutes take 19 per 16), and the results, in [act_min,
/// act_max], go back to the elements' order through the saturating packs (exact), which undo the
/// unpacks' interleaving. The rest as qadd_avx512.
CK_TARGET_AVX512VBMI
static void qadd_vbmi(const ck_qadd_params *p, const uint8_t *a, const uint8_t *b, uint8_t *out, size_t begin, size_t end) {
    __m512i pa[16], pb[16];
    qadd_planes_vbmi(p->table1, pa);
    qadd_planes_vbmi(p->table2, pb);
    const qadd_requant_avx512_t rq = qadd_requant_avx512_setup(p);
    size_t i = begin;
    for (; i + 64 <= end; i += 64) {
        __m512i x[4], y[4], r[4];
        qadd_lookup_vbmi(pa, _mm512_loadu_si512(a + i), x);
        qadd_lookup_vbmi(pb, _mm512_loadu_si512(b + i), y);
        for (int j = 0; j < 4; j++) r[j] = qadd_requant_avx512(_mm512_add_epi32(x[j], y[j]), &rq);
        const __m512i p01 = _mm512_packs_epi32(r[0], r[1]), p23 = _mm512_packs_epi32(r[2], r[3]);
        _mm512_storeu_si512(out + i, p->is_signed ? _mm512_packs_epi16(p01, p23) : _mm512_packus_epi16(p01, p23));
    }
    qadd_avx512(p, a, b, out, i, end);
}
#endif

#if CK_X86
/// qadd_high_mul_avx512 on 8 lanes: the truncated 64-bit quotients' low 32 bits are bits 31-62 of
/// the (nudged, bias-adjusted) products, which a logical shift gives as well as an arithmetic one.
CK_TARGET_AVX2
static inline __m256i qadd_high_mul_avx2(__m256i x, __m256i m) {
    const __m256i pos = _mm256_set1_epi64x((int64_t)1 << 30), neg = _mm256_set1_epi64x(1 - ((int64_t)1 << 30));
    const __m256i bias = _mm256_set1_epi64x(((int64_t)1 << 31) - 1), zero = _mm256_setzero_si256();
    __m256i even = _mm256_mul_epi32(x, m);
    __m256i odd = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), m);
    const __m256i even_neg = _mm256_cmpgt_epi64(zero, even), odd_neg = _mm256_cmpgt_epi64(zero, odd);
    even = _mm256_add_epi64(even, _mm256_blendv_epi8(pos, neg, even_neg));
    odd = _mm256_add_epi64(odd, _mm256_blendv_epi8(pos, neg, odd_neg));
    even = _mm256_srli_epi64(_mm256_add_epi64(even, _mm256_and_si256(_mm256_cmpgt_epi64(zero, even), bias)), 31);
    odd = _mm256_srli_epi64(_mm256_add_epi64(odd, _mm256_and_si256(_mm256_cmpgt_epi64(zero, odd), bias)), 31);
    return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/// qadd_avx512's steps on 8 lanes (the table lookups as gathers).
CK_TARGET_AVX2
static void qadd_avx2(const ck_qadd_params *p, const uint8_t *a, const uint8_t *b, uint8_t *out, size_t begin, size_t end) {
    const __m256i m = _mm256_set1_epi32(p->multiplier);
    const int32_t e = -p->shift;
    const __m256i mask = _mm256_set1_epi32(e >= 31 ? 0 : (int32_t)(((int64_t)1 << e) - 1));
    const __m256i half = _mm256_srai_epi32(mask, 1), zero = _mm256_setzero_si256();
    const __m128i count = _mm_cvtsi32_si128(e);
    const __m256i lo = _mm256_set1_epi32(p->act_min - p->output_zero_point), hi = _mm256_set1_epi32(p->act_max - p->output_zero_point);
    const __m256i zp = _mm256_set1_epi32(p->output_zero_point), lowbyte = _mm256_set1_epi32(0xFF);
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
        const __m256i ia = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(a + i)));
        const __m256i ib = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(b + i)));
        const __m256i raw = _mm256_add_epi32(_mm256_i32gather_epi32(p->table1, ia, 4), _mm256_i32gather_epi32(p->table2, ib, 4));
        __m256i v = qadd_high_mul_avx2(raw, m);
        if (e >= 31) {
            v = zero;
        } else if (e > 0) {
            const __m256i remainder = _mm256_and_si256(v, mask);
            const __m256i threshold = _mm256_sub_epi32(half, _mm256_cmpgt_epi32(zero, v));  // + 1 where v < 0
            v = _mm256_sub_epi32(_mm256_sra_epi32(v, count), _mm256_cmpgt_epi32(remainder, threshold));
        }
        v = _mm256_and_si256(_mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(v, lo), hi), zp), lowbyte);
        const __m128i s16 = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(s16, s16));
    }
    qadd_portable(p, a, b, out, i, end);
}
#endif

void ck_qadd_8(int32_t isa, const ck_qadd_params *p, const uint8_t *a, const uint8_t *b, uint8_t *out,
               size_t begin, size_t end) {
#if CK_X86
    if (isa >= CK_ISA_AVX512VNNI && ck_has_avx512vbmi()) { qadd_vbmi(p, a, b, out, begin, end); return; }
    if (isa >= CK_ISA_AVX512) { qadd_avx512(p, a, b, out, begin, end); return; }
    if (isa >= CK_ISA_AVX2) { qadd_avx2(p, a, b, out, begin, end); return; }
#else
    (void)isa;
#endif
    qadd_portable(p, a, b, out, begin, end);
}

// ---- float binary ops (see ckernels.h) ----

static inline float binary_scalar(int32_t op, float x, float y) {
    switch (op) {
    case CK_BINARY_ADD: return x + y;
    case CK_BINARY_SUB: return x - y;
    case CK_BINARY_MUL: return x * y;
    default: return x / y;
    }
}

static inline float clamp_tflite(float v, float lo, float hi) {
    const float a = v < lo ? lo : v;
    return hi < a ? hi : a;
}

static void binary_portable(int32_t op, const float *a, const float *b, float *out, size_t o0, size_t o1, size_t inner,
                            size_t ao, size_t ai, size_t bo, size_t bi, float lo, float hi) {
    for (size_t o = o0; o < o1; o++) {
        const float *pa = a + o * ao, *pb = b + o * bo;
        float *po = out + o * inner;
        for (size_t i = 0; i < inner; i++) po[i] = clamp_tflite(binary_scalar(op, pa[i * ai], pb[i * bi]), lo, hi);
    }
}

#if CK_X86
CK_TARGET_AVX512
static inline __m512 binary_avx512_op(int32_t op, __m512 x, __m512 y) {
    switch (op) {
    case CK_BINARY_ADD: return _mm512_add_ps(x, y);
    case CK_BINARY_SUB: return _mm512_sub_ps(x, y);
    case CK_BINARY_MUL: return _mm512_mul_ps(x, y);
    default: return _mm512_div_ps(x, y);
    }
}

CK_TARGET_AVX512
static void binary_avx512(int32_t op, const float *a, const float *b, float *out, size_t o0, size_t o1, size_t inner,
                          size_t ao, size_t ai, size_t bo, size_t bi, float lo, float hi) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    for (size_t o = o0; o < o1; o++) {
        const float *pa = a + o * ao, *pb = b + o * bo;
        float *po = out + o * inner;
        const __m512 sa = _mm512_set1_ps(pa[0]), sb = _mm512_set1_ps(pb[0]);
        for (size_t i = 0; i < inner; i += 16) {
            const size_t left = inner - i;
            const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
            const __m512 x = ai ? _mm512_maskz_loadu_ps(m, pa + i) : sa;
            const __m512 y = bi ? _mm512_maskz_loadu_ps(m, pb + i) : sb;
            // TFLite's clamp: max(lo, v) and min(hi, v) return v when it is NaN.
            const __m512 v = _mm512_min_ps(vhi, _mm512_max_ps(vlo, binary_avx512_op(op, x, y)));
            _mm512_mask_storeu_ps(po + i, m, v);
        }
    }
}
#endif

#if CK_X86
CK_TARGET_AVX2
static inline __m256 binary_avx2_op(int32_t op, __m256 x, __m256 y) {
    switch (op) {
    case CK_BINARY_ADD: return _mm256_add_ps(x, y);
    case CK_BINARY_SUB: return _mm256_sub_ps(x, y);
    case CK_BINARY_MUL: return _mm256_mul_ps(x, y);
    default: return _mm256_div_ps(x, y);
    }
}

/// binary_avx512 on 8 lanes, the last inner elements as binary_portable.
CK_TARGET_AVX2
static void binary_avx2(int32_t op, const float *a, const float *b, float *out, size_t o0, size_t o1, size_t inner,
                        size_t ao, size_t ai, size_t bo, size_t bi, float lo, float hi) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    for (size_t o = o0; o < o1; o++) {
        const float *pa = a + o * ao, *pb = b + o * bo;
        float *po = out + o * inner;
        const __m256 sa = _mm256_set1_ps(pa[0]), sb = _mm256_set1_ps(pb[0]);
        size_t i = 0;
        for (; i + 8 <= inner; i += 8) {
            const __m256 x = ai ? _mm256_loadu_ps(pa + i) : sa;
            const __m256 y = bi ? _mm256_loadu_ps(pb + i) : sb;
            _mm256_storeu_ps(po + i, _mm256_min_ps(vhi, _mm256_max_ps(vlo, binary_avx2_op(op, x, y))));
        }
        for (; i < inner; i++) po[i] = clamp_tflite(binary_scalar(op, pa[i * ai], pb[i * bi]), lo, hi);
    }
}
#endif

void ck_binary_f32(int32_t isa, int32_t op, const float *a, const float *b, float *out,
                   size_t outer_begin, size_t outer_end, size_t inner,
                   size_t a_outer, size_t a_inner, size_t b_outer, size_t b_inner, float lo, float hi) {
#if CK_X86
    if (isa >= CK_ISA_AVX512) {
        binary_avx512(op, a, b, out, outer_begin, outer_end, inner, a_outer, a_inner, b_outer, b_inner, lo, hi);
        return;
    }
    if (isa >= CK_ISA_AVX2) {
        binary_avx2(op, a, b, out, outer_begin, outer_end, inner, a_outer, a_inner, b_outer, b_inner, lo, hi);
        return;
    }
#else
    (void)isa;
#endif
    binary_portable(op, a, b, out, outer_begin, outer_end, inner, a_outer, a_inner, b_outer, b_inner, lo, hi);
}

// ---- column sums of rows (see ckernels.h) ----

#if CK_X86
/// Up to 32 columns at a time in four accumulators: each column still adds its rows in order.
CK_TARGET_AVX2
static void sum_rows_avx2(const float *src, size_t rows, size_t count, float *dst) {
    size_t j = 0;
    for (; j + 32 <= count; j += 32) {
        __m256 a0 = _mm256_loadu_ps(dst + j), a1 = _mm256_loadu_ps(dst + j + 8);
        __m256 a2 = _mm256_loadu_ps(dst + j + 16), a3 = _mm256_loadu_ps(dst + j + 24);
        for (size_t r = 0; r < rows; r++) {
            const float *x = src + r * count + j;
            a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x));
            a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + 8));
            a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + 16));
            a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + 24));
        }
        _mm256_storeu_ps(dst + j, a0);
        _mm256_storeu_ps(dst + j + 8, a1);
        _mm256_storeu_ps(dst + j + 16, a2);
        _mm256_storeu_ps(dst + j + 24, a3);
    }
    for (; j + 8 <= count; j += 8) {
        __m256 a = _mm256_loadu_ps(dst + j);
        for (size_t r = 0; r < rows; r++) a = _mm256_add_ps(a, _mm256_loadu_ps(src + r * count + j));
        _mm256_storeu_ps(dst + j, a);
    }
    for (; j < count; j++) {
        float a = dst[j];
        for (size_t r = 0; r < rows; r++) a += src[r * count + j];
        dst[j] = a;
    }
}
#endif

void ck_sum_rows_f32(int32_t isa, const float *src, size_t rows, size_t count, float *dst) {
#if CK_X86
    if (isa >= CK_ISA_AVX2) {
        sum_rows_avx2(src, rows, count, dst);
        return;
    }
#else
    (void)isa;
#endif
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < count; j++) dst[j] += src[r * count + j];
}

#if CK_X86
/// 32 columns at a time, widened to int32 in four accumulators.
CK_TARGET_AVX2
static void sum_rows_8_avx2(const void *src, int32_t is_signed, size_t rows, size_t count, int32_t *dst) {
    const uint8_t *s = (const uint8_t *)src;
    size_t j = 0;
    for (; j + 32 <= count; j += 32) {
        __m256i a0 = _mm256_loadu_si256((const __m256i *)(dst + j)), a1 = _mm256_loadu_si256((const __m256i *)(dst + j + 8));
        __m256i a2 = _mm256_loadu_si256((const __m256i *)(dst + j + 16)), a3 = _mm256_loadu_si256((const __m256i *)(dst + j + 24));
        for (size_t r = 0; r < rows; r++) {
            const uint8_t *x = s + r * count + j;
            const __m128i lo = _mm_loadu_si128((const __m128i *)x), hi = _mm_loadu_si128((const __m128i *)(x + 16));
            if (is_signed) {
                a0 = _mm256_add_epi32(a0, _mm256_cvtepi8_epi32(lo));
                a1 = _mm256_add_epi32(a1, _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
                a2 = _mm256_add_epi32(a2, _mm256_cvtepi8_epi32(hi));
                a3 = _mm256_add_epi32(a3, _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
            } else {
                a0 = _mm256_add_epi32(a0, _mm256_cvtepu8_epi32(lo));
                a1 = _mm256_add_epi32(a1, _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
                a2 = _mm256_add_epi32(a2, _mm256_cvtepu8_epi32(hi));
                a3 = _mm256_add_epi32(a3, _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
            }
        }
        _mm256_storeu_si256((__m256i *)(dst + j), a0);
        _mm256_storeu_si256((__m256i *)(dst + j + 8), a1);
        _mm256_storeu_si256((__m256i *)(dst + j + 16), a2);
        _mm256_storeu_si256((__m256i *)(dst + j + 24), a3);
    }
    for (; j < count; j++) {
        uint32_t a = (uint32_t)dst[j];
        for (size_t r = 0; r < rows; r++) a += is_signed ? (uint32_t)(int32_t)(int8_t)s[r * count + j] : (uint32_t)s[r * count + j];
        dst[j] = (int32_t)a;
    }
}
#endif

void ck_sum_rows_8(int32_t isa, const void *src, int32_t is_signed, size_t rows, size_t count, int32_t *dst) {
#if CK_X86
    if (isa >= CK_ISA_AVX2) {
        sum_rows_8_avx2(src, is_signed, rows, count, dst);
        return;
    }
#else
    (void)isa;
#endif
    const uint8_t *s = (const uint8_t *)src;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < count; j++)
            dst[j] = (int32_t)((uint32_t)dst[j] + (is_signed ? (uint32_t)(int32_t)(int8_t)s[r * count + j] : (uint32_t)s[r * count + j]));
}

// ---- float bilinear resize (see ckernels.h) ----

/// a + (b - a)·w with one rounding for the multiply-add (the vertical and the horizontal lerp).
static inline float resize_lerp(float a, float b, float w) { return fmaf(b - a, w, a); }

/// The lerps of one output row, in plain C: resize_row_portable, and resize_row_fma compiled for
/// AVX2 + FMA (fmaf becomes the instruction, vectorized along the channels, where the baseline
/// x86-64 build calls libm).
#define CK_RESIZE_ROW_BODY \
    for (int32_t x = 0; x < out_w; x++) { \
        const float dx = xs[x] - (float)x0[x]; \
        const float *p00 = r0 + (size_t)x0[x] * C, *p01 = r0 + (size_t)x1[x] * C; \
        const float *p10 = r1 + (size_t)x0[x] * C, *p11 = r1 + (size_t)x1[x] * C; \
        float *o = out + (size_t)x * C; \
        for (int32_t c = 0; c < C; c++) { \
            const float t0 = resize_lerp(p00[c], p10[c], dy), t1 = resize_lerp(p01[c], p11[c], dy); \
            o[c] = resize_lerp(t0, t1, dx); \
        } \
    }

static void resize_row_portable(const float *r0, const float *r1, int32_t C, float *out, int32_t out_w, float dy,
                                const int32_t *x0, const int32_t *x1, const float *xs) {
    CK_RESIZE_ROW_BODY
}

#if CK_X86
CK_TARGET_AVX2
static void resize_row_fma(const float *r0, const float *r1, int32_t C, float *out, int32_t out_w, float dy,
                           const int32_t *x0, const int32_t *x1, const float *xs) {
    CK_RESIZE_ROW_BODY
}
#endif

#if CK_X86
/// Floats of the blended input row resize_row_avx512 keeps (32 KiB of stack).
#define CK_RESIZE_BLEND 8192

/// One output row. When the blended row fits the buffer, the two input rows are blended once per
/// input column (the vertical lerp) and each output pixel is then one lerp of two blended columns:
/// per 16 channels a subtraction and a fused multiply-add, where the four-weight sum took four
/// multiplies and four adds; DeepLab's 33 → 257 resize (5.5 MB of output) 0.36 → 0.25 ms in a C
/// harness, the plain stores of that output alone 0.20 ms. Wider rows blend each pixel's two
/// source columns where it reads them, with the same operations, so the same values.
CK_TARGET_AVX512
static void resize_row_avx512(const float *r0, const float *r1, int32_t in_w, int32_t C, float *out, int32_t out_w, float dy,
                              const int32_t *x0, const int32_t *x1, const float *xs) {
    float blend[CK_RESIZE_BLEND] __attribute__((aligned(64)));
    const __m512 vdy = _mm512_set1_ps(dy);
    const int32_t full = C & ~15, tail = C - full;
    const __mmask16 tm = (__mmask16)((1u << tail) - 1u);
    const int32_t span = C > 0 ? CK_RESIZE_BLEND / C : 0;  // input columns the buffer holds
    if (in_w <= span) {
        // The whole blended row fits (DeepLab's 33 × 21 floats): blend it, then the columns
        // without a check (every source column is in it).
        const int32_t n = in_w * C;
        for (int32_t i = 0; i < n; i += 16) {
            const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
            const __m512 v0 = _mm512_maskz_loadu_ps(m, r0 + i), v1 = _mm512_maskz_loadu_ps(m, r1 + i);
            _mm512_mask_store_ps(blend + i, m, _mm512_fmadd_ps(_mm512_sub_ps(v1, v0), vdy, v0));
        }
        for (int32_t x = 0; x < out_w; x++) {
            const __m512 dx = _mm512_set1_ps(xs[x] - (float)x0[x]);
            const float *t0 = blend + (size_t)x0[x] * C, *t1 = blend + (size_t)x1[x] * C;
            float *o = out + (size_t)x * C;
            int32_t c = 0;
            for (; c < full; c += 16) {
                const __m512 u = _mm512_loadu_ps(t0 + c), v = _mm512_loadu_ps(t1 + c);
                _mm512_storeu_ps(o + c, _mm512_fmadd_ps(_mm512_sub_ps(v, u), dx, u));
            }
            if (tail) {
                const __m512 u = _mm512_maskz_loadu_ps(tm, t0 + c), v = _mm512_maskz_loadu_ps(tm, t1 + c);
                _mm512_mask_storeu_ps(o + c, tm, _mm512_fmadd_ps(_mm512_sub_ps(v, u), dx, u));
            }
        }
        return;
    }
    // Wider rows: each column's two source columns blended where it reads them.
    for (int32_t x = 0; x < out_w; x++) {
        const int32_t a = x0[x], b = x1[x];
        const __m512 dx = _mm512_set1_ps(xs[x] - (float)a);
        float *o = out + (size_t)x * C;
        const float *p00 = r0 + (size_t)a * C, *p01 = r0 + (size_t)b * C, *p10 = r1 + (size_t)a * C, *p11 = r1 + (size_t)b * C;
        for (int32_t c = 0; c < C; c += 16) {
            const __mmask16 m = C - c >= 16 ? (__mmask16)0xFFFF : tm;
            const __m512 v00 = _mm512_maskz_loadu_ps(m, p00 + c), v10 = _mm512_maskz_loadu_ps(m, p10 + c);
            const __m512 v01 = _mm512_maskz_loadu_ps(m, p01 + c), v11 = _mm512_maskz_loadu_ps(m, p11 + c);
            const __m512 u = _mm512_fmadd_ps(_mm512_sub_ps(v10, v00), vdy, v00);
            const __m512 v = _mm512_fmadd_ps(_mm512_sub_ps(v11, v01), vdy, v01);
            _mm512_mask_storeu_ps(o + c, m, _mm512_fmadd_ps(_mm512_sub_ps(v, u), dx, u));
        }
    }
}
#endif

#if CK_X86
/// resize_row_avx512's blended-row form on 8 lanes (the same operations, so the same values; the
/// channels past the last multiple of 8 with the scalar fmaf, one rounding as the instruction);
/// rows too wide for the buffer take resize_row_fma. selfie_segmentation_landscape's 36 × 64 → 72
/// × 128 resize of 16 channels (0.6 MB of output): see docs/PERFORMANCE.md, session 14.
CK_TARGET_AVX2
static void resize_row_avx2(const float *r0, const float *r1, int32_t in_w, int32_t C, float *out, int32_t out_w, float dy,
                            const int32_t *x0, const int32_t *x1, const float *xs) {
    float blend[CK_RESIZE_BLEND] __attribute__((aligned(32)));
    const int32_t span = C > 0 ? CK_RESIZE_BLEND / C : 0;
    if (in_w > span) {
        resize_row_fma(r0, r1, C, out, out_w, dy, x0, x1, xs);
        return;
    }
    const __m256 vdy = _mm256_set1_ps(dy);
    const int32_t n = in_w * C, full = C & ~7;
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v0 = _mm256_loadu_ps(r0 + i), v1 = _mm256_loadu_ps(r1 + i);
        _mm256_store_ps(blend + i, _mm256_fmadd_ps(_mm256_sub_ps(v1, v0), vdy, v0));
    }
    for (; i < n; i++) blend[i] = resize_lerp(r0[i], r1[i], dy);
    for (int32_t x = 0; x < out_w; x++) {
        const float fdx = xs[x] - (float)x0[x];
        const __m256 dx = _mm256_set1_ps(fdx);
        const float *t0 = blend + (size_t)x0[x] * C, *t1 = blend + (size_t)x1[x] * C;
        float *o = out + (size_t)x * C;
        int32_t c = 0;
        for (; c < full; c += 8) {
            const __m256 u = _mm256_loadu_ps(t0 + c), v = _mm256_loadu_ps(t1 + c);
            _mm256_storeu_ps(o + c, _mm256_fmadd_ps(_mm256_sub_ps(v, u), dx, u));
        }
        for (; c < C; c++) o[c] = resize_lerp(t0[c], t1[c], fdx);
    }
}
#endif

void ck_resize_bilinear_f32(int32_t isa, const float *input, int32_t in_w, int32_t channels, float *output, int32_t out_w,
                            const int32_t *y0, const int32_t *y1, const float *ys,
                            const int32_t *x0, const int32_t *x1, const float *xs, int32_t row_begin, int32_t row_end) {
    const size_t in_row = (size_t)in_w * channels, out_row = (size_t)out_w * channels;
    for (int32_t y = row_begin; y < row_end; y++) {
        const float dy = ys[y] - (float)y0[y];
        const float *r0 = input + (size_t)y0[y] * in_row, *r1 = input + (size_t)y1[y] * in_row;
#if CK_X86
        if (isa >= CK_ISA_AVX512) {
            resize_row_avx512(r0, r1, in_w, channels, output + (size_t)y * out_row, out_w, dy, x0, x1, xs);
            continue;
        }
        if (isa >= CK_ISA_AVX2) {
            resize_row_avx2(r0, r1, in_w, channels, output + (size_t)y * out_row, out_w, dy, x0, x1, xs);
            continue;
        }
#else
        (void)isa;
#endif
        resize_row_portable(r0, r1, channels, output + (size_t)y * out_row, out_w, dy, x0, x1, xs);
    }
}

// ---- uint8 bilinear resize and 8-bit arg max (see ckernels.h) ----

/// Channels [c_begin, C) of one output pixel from its four source pixels and weights.
static inline void resize_u8_channels(const uint8_t *p00, const uint8_t *p01, const uint8_t *p10, const uint8_t *p11, uint8_t *o,
                                      int32_t c_begin, int32_t C, float w00, float w01, float w10, float w11) {
    for (int32_t c = c_begin; c < C; c++) {
        float v = (float)p00[c] * w00;
        v = v + (float)p01[c] * w01;
        v = v + (float)p10[c] * w10;
        v = v + (float)p11[c] * w11;
        v = v + 0.5f;
        v = v < 0 ? 0 : (v > 255 ? 255 : v);
        o[c] = (uint8_t)v;
    }
}

static void resize_row_u8_portable(const uint8_t *r0, const uint8_t *r1, int32_t C, uint8_t *out, int32_t out_w, float dy,
                                   const int32_t *x0, const int32_t *x1, const float *xs) {
    for (int32_t x = 0; x < out_w; x++) {
        const float dx = xs[x] - (float)x0[x];
        const float w00 = (1 - dy) * (1 - dx), w01 = (1 - dy) * dx, w10 = dy * (1 - dx), w11 = dy * dx;
        resize_u8_channels(r0 + (size_t)x0[x] * C, r0 + (size_t)x1[x] * C, r1 + (size_t)x0[x] * C, r1 + (size_t)x1[x] * C,
                           out + (size_t)x * C, 0, C, w00, w01, w10, w11);
    }
}

#if CK_X86
CK_TARGET_AVX512
static void resize_row_u8_avx512(const uint8_t *r0, const uint8_t *r1, int32_t C, uint8_t *out, int32_t out_w, float dy,
                                 const int32_t *x0, const int32_t *x1, const float *xs) {
    const __m512 half = _mm512_set1_ps(0.5f), zero = _mm512_setzero_ps(), top = _mm512_set1_ps(255.0f);
    for (int32_t x = 0; x < out_w; x++) {
        const float dx = xs[x] - (float)x0[x];
        const __m512 w00 = _mm512_set1_ps((1 - dy) * (1 - dx)), w01 = _mm512_set1_ps((1 - dy) * dx);
        const __m512 w10 = _mm512_set1_ps(dy * (1 - dx)), w11 = _mm512_set1_ps(dy * dx);
        const uint8_t *p00 = r0 + (size_t)x0[x] * C, *p01 = r0 + (size_t)x1[x] * C;
        const uint8_t *p10 = r1 + (size_t)x0[x] * C, *p11 = r1 + (size_t)x1[x] * C;
        uint8_t *o = out + (size_t)x * C;
        for (int32_t c = 0; c < C; c += 16) {
            const int32_t left = C - c;
            const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
#define CK_U8F(p) _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, (p) + c)))
            __m512 v = _mm512_mul_ps(CK_U8F(p00), w00);
            v = _mm512_add_ps(v, _mm512_mul_ps(CK_U8F(p01), w01));
            v = _mm512_add_ps(v, _mm512_mul_ps(CK_U8F(p10), w10));
            v = _mm512_add_ps(v, _mm512_mul_ps(CK_U8F(p11), w11));
#undef CK_U8F
            v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(v, half), zero), top);
            _mm_mask_storeu_epi8(o + c, m, _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
        }
    }
}
#endif

#if CK_X86
/// resize_row_u8_avx512 on 8 lanes (the same separate products and sums as the portable row); the
/// channels past the last multiple of 8 as there.
CK_TARGET_AVX2
static void resize_row_u8_avx2(const uint8_t *r0, const uint8_t *r1, int32_t C, uint8_t *out, int32_t out_w, float dy,
                               const int32_t *x0, const int32_t *x1, const float *xs) {
    const __m256 half = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
    const __m256i lowbyte = _mm256_set1_epi32(0xFF);
    for (int32_t x = 0; x < out_w; x++) {
        const float dx = xs[x] - (float)x0[x];
        const float f00 = (1 - dy) * (1 - dx), f01 = (1 - dy) * dx, f10 = dy * (1 - dx), f11 = dy * dx;
        const __m256 w00 = _mm256_set1_ps(f00), w01 = _mm256_set1_ps(f01), w10 = _mm256_set1_ps(f10), w11 = _mm256_set1_ps(f11);
        const uint8_t *p00 = r0 + (size_t)x0[x] * C, *p01 = r0 + (size_t)x1[x] * C;
        const uint8_t *p10 = r1 + (size_t)x0[x] * C, *p11 = r1 + (size_t)x1[x] * C;
        uint8_t *o = out + (size_t)x * C;
        int32_t c = 0;
        for (; c + 8 <= C; c += 8) {
#define CK_U8F(p) _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)((p) + c))))
            __m256 v = _mm256_mul_ps(CK_U8F(p00), w00);
            v = _mm256_add_ps(v, _mm256_mul_ps(CK_U8F(p01), w01));
            v = _mm256_add_ps(v, _mm256_mul_ps(CK_U8F(p10), w10));
            v = _mm256_add_ps(v, _mm256_mul_ps(CK_U8F(p11), w11));
#undef CK_U8F
            v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, half), zero), top);
            const __m256i q = _mm256_and_si256(_mm256_cvttps_epi32(v), lowbyte);
            const __m128i s16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64((__m128i *)(o + c), _mm_packus_epi16(s16, s16));
        }
        resize_u8_channels(p00, p01, p10, p11, o, c, C, f00, f01, f10, f11);
    }
}
#endif

void ck_resize_bilinear_u8(int32_t isa, const uint8_t *input, int32_t in_w, int32_t channels, uint8_t *output, int32_t out_w,
                           const int32_t *y0, const int32_t *y1, const float *ys,
                           const int32_t *x0, const int32_t *x1, const float *xs, int32_t row_begin, int32_t row_end) {
    const size_t in_row = (size_t)in_w * channels, out_row = (size_t)out_w * channels;
    for (int32_t y = row_begin; y < row_end; y++) {
        const float dy = ys[y] - (float)y0[y];
        const uint8_t *r0 = input + (size_t)y0[y] * in_row, *r1 = input + (size_t)y1[y] * in_row;
#if CK_X86
        if (isa >= CK_ISA_AVX512) {
            resize_row_u8_avx512(r0, r1, channels, output + (size_t)y * out_row, out_w, dy, x0, x1, xs);
            continue;
        }
        if (isa >= CK_ISA_AVX2) {
            resize_row_u8_avx2(r0, r1, channels, output + (size_t)y * out_row, out_w, dy, x0, x1, xs);
            continue;
        }
#else
        (void)isa;
#endif
        resize_row_u8_portable(r0, r1, channels, output + (size_t)y * out_row, out_w, dy, x0, x1, xs);
    }
}

#if CK_X86
/// Rows of at most 32 bytes: the maximum by a shuffle reduction, its first index by a compare mask.
CK_TARGET_AVX512
static void argmax_avx512(const uint8_t *input, int32_t axis, uint8_t flip, void *output, int32_t wide,
                          size_t row_begin, size_t row_end) {
    const __mmask32 valid = axis >= 32 ? 0xFFFFFFFFu : ((1u << axis) - 1u);
    const __m256i flipv = _mm256_set1_epi8((char)flip);
    for (size_t r = row_begin; r < row_end; r++) {
        // Masked-off lanes load 0 and are excluded from the compare below.
        const __m256i v = _mm256_maskz_mov_epi8(valid, _mm256_xor_si256(_mm256_maskz_loadu_epi8(valid, input + r * (size_t)axis), flipv));
        __m128i m = _mm_max_epu8(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        m = _mm_max_epu8(m, _mm_srli_si128(m, 8));
        m = _mm_max_epu8(m, _mm_srli_si128(m, 4));
        m = _mm_max_epu8(m, _mm_srli_si128(m, 2));
        m = _mm_max_epu8(m, _mm_srli_si128(m, 1));
        const __m256i best = _mm256_broadcastb_epi8(m);
        const uint32_t eq = (uint32_t)_mm256_mask_cmpeq_epi8_mask(valid, v, best);
        const int32_t index = (int32_t)__builtin_ctz(eq | 0x80000000u);
        if (wide) ((int64_t *)output)[r] = index;
        else ((int32_t *)output)[r] = index;
    }
}
#endif

void ck_argmax_8(int32_t isa, const uint8_t *input, int32_t axis, int32_t is_signed, void *output, int32_t wide,
                 size_t row_begin, size_t row_end) {
    const uint8_t flip = is_signed ? 0x80 : 0;  // signed order = unsigned order of (byte ^ 0x80)
#if CK_X86
    if (isa >= CK_ISA_AVX512 && axis >= 1 && axis <= 32) {
        argmax_avx512(input, axis, flip, output, wide, row_begin, row_end);
        return;
    }
#else
    (void)isa;
#endif
    for (size_t r = row_begin; r < row_end; r++) {
        const uint8_t *p = input + r * (size_t)axis;
        uint8_t best = (uint8_t)(p[0] ^ flip);
        int32_t index = 0;
        for (int32_t i = 1; i < axis; i++) {
            const uint8_t v = (uint8_t)(p[i] ^ flip);
            if (v > best) { best = v; index = i; }
        }
        if (wide) ((int64_t *)output)[r] = index;
        else ((int32_t *)output)[r] = index;
    }
}

// ---- HARD_SWISH: x * min(6, max(0, x + 3)) * (1/6), in that order (the reference kernel's) ----

static inline float hardswish_scalar(float x) {
    float r = x + 3.0f;
    r = r > 0.0f ? r : 0.0f;
    r = r < 6.0f ? r : 6.0f;
    return x * r * (1.0f / 6.0f);
}

static void hardswish_portable(const float *in, float *out, size_t begin, size_t end) {
    for (size_t i = begin; i < end; i++) out[i] = hardswish_scalar(in[i]);
}

#if CK_X86
CK_TARGET_AVX512
static void hardswish_avx512(const float *in, float *out, size_t begin, size_t end) {
    const __m512 three = _mm512_set1_ps(3.0f), six = _mm512_set1_ps(6.0f), zero = _mm512_setzero_ps();
    const __m512 sixth = _mm512_set1_ps(1.0f / 6.0f);
    size_t i = begin;
    for (; i < end; i += 16) {
        const size_t n = end - i < 16 ? end - i : 16;
        const __mmask16 mask = (__mmask16)(n == 16 ? 0xFFFFu : ((1u << n) - 1u));
        const __m512 x = _mm512_maskz_loadu_ps(mask, in + i);
        // max(r, 0) / min(r, 6) with the scalar's NaN behaviour (r > 0 ? r : 0 gives 0 for NaN;
        // then x * 0 * (1/6) is NaN again because x is NaN).
        __m512 r = _mm512_add_ps(x, three);
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r, zero, _CMP_GT_OQ), zero, r);
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r, six, _CMP_LT_OQ), six, r);
        _mm512_mask_storeu_ps(out + i, mask, _mm512_mul_ps(_mm512_mul_ps(x, r), sixth));
    }
}
#endif

#if CK_X86
/// hardswish_avx512 on 8 lanes (the same NaN behaviour), the last elements as the scalar.
CK_TARGET_AVX2
static void hardswish_avx2(const float *in, float *out, size_t begin, size_t end) {
    const __m256 three = _mm256_set1_ps(3.0f), six = _mm256_set1_ps(6.0f), zero = _mm256_setzero_ps();
    const __m256 sixth = _mm256_set1_ps(1.0f / 6.0f);
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
        const __m256 x = _mm256_loadu_ps(in + i);
        __m256 r = _mm256_add_ps(x, three);
        r = _mm256_blendv_ps(zero, r, _mm256_cmp_ps(r, zero, _CMP_GT_OQ));
        r = _mm256_blendv_ps(six, r, _mm256_cmp_ps(r, six, _CMP_LT_OQ));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(x, r), sixth));
    }
    for (; i < end; i++) out[i] = hardswish_scalar(in[i]);
}
#endif

void ck_hardswish_f32(int32_t isa, const float *input, float *output, size_t begin, size_t end) {
#if CK_X86
    if (isa >= CK_ISA_AVX512) { hardswish_avx512(input, output, begin, end); return; }
    if (isa >= CK_ISA_AVX2) { hardswish_avx2(input, output, begin, end); return; }
#endif
    (void)isa;
    hardswish_portable(input, output, begin, end);
}

// ---- float16 bits to float32 (DEQUANTIZE of float16 weights) ----

static inline float f16_scalar(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24, exact in float32.
        const float magnitude = (float)mantissa * (1.0f / 16777216.0f);
        memcpy(&bits, &magnitude, 4);
        bits |= sign;
    } else if (exponent == 31) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // infinities; NaNs keep their payload (not quieted)
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

#if CK_X86
/// f16_scalar on 8 lanes with integer operations (F16C's vcvtph2ps would quiet signalling NaNs).
CK_TARGET_AVX2
static void f16_to_f32_avx2(const uint16_t *in, float *out, size_t begin, size_t end) {
    const __m256i sign_mask = _mm256_set1_epi32(0x8000), mant_mask = _mm256_set1_epi32(0x3ff);
    const __m256i exp_mask = _mm256_set1_epi32(0x1f), zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(31);
    const __m256i bias = _mm256_set1_epi32(112), inf = _mm256_set1_epi32(0x7f800000);
    const __m256 tiny = _mm256_set1_ps(1.0f / 16777216.0f);
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
        const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(in + i)));
        const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(h, sign_mask), 16);
        const __m256i exponent = _mm256_and_si256(_mm256_srli_epi32(h, 10), exp_mask);
        const __m256i mantissa = _mm256_and_si256(h, mant_mask);
        const __m256i shifted = _mm256_slli_epi32(mantissa, 13);
        const __m256i normal = _mm256_or_si256(_mm256_slli_epi32(_mm256_add_epi32(exponent, bias), 23), shifted);
        const __m256i special = _mm256_or_si256(inf, shifted);
        const __m256i small = _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(mantissa), tiny));
        __m256i bits = _mm256_blendv_epi8(normal, special, _mm256_cmpeq_epi32(exponent, top));
        bits = _mm256_blendv_epi8(bits, small, _mm256_cmpeq_epi32(exponent, zero));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_or_si256(bits, sign));
    }
    for (; i < end; i++) out[i] = f16_scalar(in[i]);
}
#endif

void ck_f16_to_f32(int32_t isa, const uint16_t *input, float *output, size_t begin, size_t end) {
#if CK_X86
    if (isa >= CK_ISA_AVX2) { f16_to_f32_avx2(input, output, begin, end); return; }
#endif
    (void)isa;
    for (size_t i = begin; i < end; i++) output[i] = f16_scalar(input[i]);
}

// ---- PAD of the innermost dimension: rows of [before fill][input row][after fill] ----

static void pad_rows_portable(const uint8_t *in, uint8_t *out, size_t row_begin, size_t row_end, size_t in_bytes,
                              size_t before, size_t after, uint8_t fill) {
    const size_t out_bytes = before + in_bytes + after;
    for (size_t r = row_begin; r < row_end; r++) {
        uint8_t *o = out + r * out_bytes;
        memset(o, fill, before);
        memcpy(o + before, in + r * in_bytes, in_bytes);
        memset(o + before + in_bytes, fill, after);
    }
}

#if CK_X86
CK_TARGET_AVX512
static inline void copy_bytes_avx512(uint8_t *dst, const uint8_t *src, size_t n) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512((void *)(dst + i), _mm512_loadu_si512((const void *)(src + i)));
    if (i < n) {
        const __mmask64 mask = (__mmask64)((1ULL << (n - i)) - 1ULL);   // n - i < 64
        _mm512_mask_storeu_epi8(dst + i, mask, _mm512_maskz_loadu_epi8(mask, src + i));
    }
}

CK_TARGET_AVX512
static inline void fill_bytes_avx512(uint8_t *dst, __m512i value, size_t n) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512((void *)(dst + i), value);
    if (i < n) _mm512_mask_storeu_epi8(dst + i, (__mmask64)((1ULL << (n - i)) - 1ULL), value);
}

CK_TARGET_AVX512
static void pad_rows_avx512(const uint8_t *in, uint8_t *out, size_t row_begin, size_t row_end, size_t in_bytes,
                            size_t before, size_t after, uint8_t fill) {
    const size_t out_bytes = before + in_bytes + after;
    const __m512i value = _mm512_set1_epi8((char)fill);
    for (size_t r = row_begin; r < row_end; r++) {
        uint8_t *o = out + r * out_bytes;
        if (before) fill_bytes_avx512(o, value, before);
        copy_bytes_avx512(o + before, in + r * in_bytes, in_bytes);
        if (after) fill_bytes_avx512(o + before + in_bytes, value, after);
    }
}
#endif

void ck_pad_rows(int32_t isa, const void *input, void *output, size_t row_begin, size_t row_end, size_t in_bytes,
                 size_t before_bytes, size_t after_bytes, uint8_t fill) {
#if CK_X86
    if (isa >= CK_ISA_AVX512) {
        pad_rows_avx512((const uint8_t *)input, (uint8_t *)output, row_begin, row_end, in_bytes, before_bytes, after_bytes, fill);
        return;
    }
#endif
    (void)isa;
    pad_rows_portable((const uint8_t *)input, (uint8_t *)output, row_begin, row_end, in_bytes, before_bytes, after_bytes, fill);
}

// ---- 8-bit table lookup: out[i] = table[in[i]] ----

static void lut8_portable(const uint8_t *table, const uint8_t *in, uint8_t *out, size_t begin, size_t end) {
    for (size_t i = begin; i < end; i++) out[i] = table[in[i]];
}

#if CK_X86
/// AVX-512 VBMI: two 128-entry byte permutes (vpermi2b) and a select by the index's top bit.
__attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi")))
static void lut8_vbmi(const uint8_t *table, const uint8_t *in, uint8_t *out, size_t begin, size_t end) {
    const __m512i t0 = _mm512_loadu_si512((const void *)table), t1 = _mm512_loadu_si512((const void *)(table + 64));
    const __m512i t2 = _mm512_loadu_si512((const void *)(table + 128)), t3 = _mm512_loadu_si512((const void *)(table + 192));
    for (size_t i = begin; i < end; i += 64) {
        const size_t n = end - i < 64 ? end - i : 64;
        const __mmask64 mask = n == 64 ? ~0ULL : ((1ULL << n) - 1ULL);
        const __m512i x = _mm512_maskz_loadu_epi8(mask, in + i);
        const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1);   // table[x & 127] for x < 128
        const __m512i hi = _mm512_permutex2var_epi8(t2, x, t3);   // table[128 + (x & 127)]
        const __m512i v = _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi);
        _mm512_mask_storeu_epi8(out + i, mask, v);
    }
}
#endif

void ck_lut_8(int32_t isa, const uint8_t *table, const uint8_t *input, uint8_t *output, size_t begin, size_t end) {
#if CK_X86
    if (isa >= CK_ISA_AVX512 && ck_has_avx512vbmi()) {
        lut8_vbmi(table, input, output, begin, end);
        return;
    }
#endif
    (void)isa;
    lut8_portable(table, input, output, begin, end);
}
