// float32 element-wise functions; see ckernels.h.
#include "ckernels.h"

#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CK_X86 1
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
