// Quantized convolution (implicit GEMM over int16 operands) and depthwise convolution, with the
// requantization epilogue they share; see ckernels_q8.h.
#include "ckernels_q8.h"
#include "c3s2.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CK_X86 1
#include "interleave4.h"
#endif

#define Q8_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define Q8_TARGET_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")))
#define Q8_TARGET_VNNI __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
#define Q8_INLINE static inline __attribute__((always_inline))
/// Fully unrolls a loop over a tile's rows, so the accumulators stay in registers (measured 1.3-1.4x
/// on the byte-path tiles).
#define Q8_UNROLL _Pragma("clang loop unroll(full)")

/// Most taps (k_h * k_w) a tile's pointer table holds; the caller uses the reference kernel beyond.
#define Q8_MAX_TAPS 256
#define Q8_MAX_MR 8

static inline int32_t q8_min(int32_t a, int32_t b) { return a < b ? a : b; }

/// Whether zero point zp lies inside the range of int8 (is_signed) or uint8 values, so that
/// |v - zp| <= 255 for every value v of the type.
static inline int32_t q8_zero_point_fits(int32_t is_signed, int32_t zp) {
    return is_signed ? (zp >= -128 && zp <= 127) : (zp >= 0 && zp <= 255);
}

/// Index in a block of ck_q8_params_pack of the flag (set by ck_conv_q8b_pack and ck_conv_q8r_pack)
/// saying the plain requantization q8_rqp_rows applies to the block.
#define Q8_PLAIN 178

// ---- requantization parameters ----

size_t ck_q8_params_count(int32_t channels) {
    if (channels <= 0) return 0;
    return (((size_t)channels + CK_Q8_NR - 1) / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK;
}

void ck_q8_params_pack(int32_t channels, const int32_t *bias, const int32_t *multipliers,
                       const int32_t *shifts, int32_t rounding, int32_t output_zero_point, int32_t *params) {
    const int32_t blocks = (channels + CK_Q8_NR - 1) / CK_Q8_NR;
    for (int32_t b = 0; b < blocks; b++) {
        int32_t *p = params + (size_t)b * CK_Q8_PARAMS_PER_BLOCK;
        memset(p + 96, 0, (CK_Q8_PARAMS_PER_BLOCK - 96) * sizeof(int32_t));
        for (int32_t j = 0; j < CK_Q8_NR; j++) {
            const int32_t c = b * CK_Q8_NR + j;
            int32_t bv = 0, m = 0, shift = 0;
            if (c < channels) {
                bv = bias ? bias[c] : 0;
                m = multipliers[c];
                shift = shifts[c];
            }
            int32_t left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
            if (left > 31) left = 31;
            int32_t aux1, aux2;
            if (rounding == CK_Q8_ROUND_HALF_UP) {
                if (right > 31) { right = 31; }
                aux1 = right > 0 ? right - 1 : 0;
                aux2 = right > 0 ? 1 : 0;
            } else {
                // RoundingDivideByPOT by 31 or more leaves 0 whatever the input: multiplier 0 does it.
                if (right >= 31) { m = 0; right = 0; }
                aux1 = (int32_t)((1u << right) - 1u); // mask
                aux2 = aux1 >> 1;                      // threshold before the sign adjustment
            }
            p[j] = bv;
            p[16 + j] = m;
            p[32 + j] = left;
            p[48 + j] = right;
            p[64 + j] = aux1;
            p[80 + j] = aux2;
            // Half-up in one 64-bit rounding shift (the AVX-512 epilogue): with P = (acc << left) * m,
            //   ((h + 2^(r-1)) >> r) with h = (P + 2^30) >> 31 equals (P + 2^30 + 2^(30+r)) >> (31+r)
            // (floor(floor(a/b)/c) = floor(a/(bc)) and floor(a/b) + k = floor((a + kb)/b)). The output
            // zero point is folded in as zp * 2^(31+r) when that is exact: r >= 1 bounds |q| by 2^30 + 1,
            // so q + zp cannot wrap in int32 (as the reference's add would), and r <= 22, |zp| <= 256
            // keep |P| < 2^62 plus the nudge inside int64. Padding lanes (c >= channels) count as folded.
            int64_t nudge = (INT64_C(1) << 30) + (right > 0 ? (INT64_C(1) << (30 + right)) : 0);
            const int32_t foldable = c >= channels || (right >= 1 && right <= 22 && output_zero_point >= -256 &&
                                                       output_zero_point <= 256);
            if (foldable && c < channels) nudge += (int64_t)output_zero_point * (INT64_C(1) << (31 + right));
            const int64_t shift64 = 31 + right;
            int32_t *nudges = p + 96 + (j & 1) * 16, *shifts64 = p + 128 + (j & 1) * 16;
            memcpy(nudges + (j >> 1) * 2, &nudge, sizeof nudge);
            memcpy(shifts64 + (j >> 1) * 2, &shift64, sizeof shift64);
            p[160 + j] = foldable ? 0 : output_zero_point;
            // Half away from zero (the reference rounding) in the same shift: for h < 0, that is for
            // P < -2^30, ties round down, (h + 2^(r-1) - 1) >> r: the nudge minus 2^31 when r >= 1.
            const int64_t negative_adjust = right > 0 ? -(INT64_C(1) << 31) : 0;
            memcpy(p + 192 + (j & 1) * 16 + (j >> 1) * 2, &negative_adjust, sizeof negative_adjust);
            if (left != 0) p[176] = 1;
            if (!foldable) p[177] = 1;
        }
    }
}

/// Scalar requantization of accumulator `acc` (bias included) for lane `j` of block params `p`.
static inline int32_t q8_requant_scalar(int32_t acc, const int32_t *p, int32_t j, const ck_q8_output *o) {
    const int32_t x = (int32_t)((uint32_t)acc << p[32 + j]);
    const int64_t prod = (int64_t)x * (int64_t)p[16 + j];
    const int32_t h = (int32_t)((prod + (INT64_C(1) << 30)) >> 31);
    const int32_t r = p[48 + j];
    int32_t q = h >> r;
    if (o->rounding == CK_Q8_ROUND_HALF_UP) {
        q += (h >> p[64 + j]) & p[80 + j];
    } else {
        const int32_t rem = h & p[64 + j];
        const int32_t thr = p[80 + j] + (h < 0 ? 1 : 0);
        q += rem > thr ? 1 : 0;
    }
    int32_t v = (int32_t)((uint32_t)q + (uint32_t)o->zero_point);
    v = v < o->act_min ? o->act_min : v;
    v = v > o->act_max ? o->act_max : v;
    return v;
}

// ---- input conversion ----

void ck_q8_convert_input(const void *input, int32_t is_signed, int32_t zero_point, int32_t pixels,
                         int32_t in_c, int16_t *output) {
    const int32_t kp = ck_q8_padded_channels(in_c);
    const int16_t zp = (int16_t)zero_point;
    if (is_signed) {
        const int8_t *in = (const int8_t *)input;
        if (kp == in_c) {
            const size_t n = (size_t)pixels * in_c;
            for (size_t i = 0; i < n; i++) output[i] = (int16_t)(in[i] - zp);
            return;
        }
        for (int32_t p = 0; p < pixels; p++) {
            const int8_t *src = in + (size_t)p * in_c;
            int16_t *dst = output + (size_t)p * kp;
            for (int32_t i = 0; i < in_c; i++) dst[i] = (int16_t)(src[i] - zp);
            dst[in_c] = 0;
        }
    } else {
        const uint8_t *in = (const uint8_t *)input;
        if (kp == in_c) {
            const size_t n = (size_t)pixels * in_c;
            for (size_t i = 0; i < n; i++) output[i] = (int16_t)(in[i] - zp);
            return;
        }
        for (int32_t p = 0; p < pixels; p++) {
            const uint8_t *src = in + (size_t)p * in_c;
            int16_t *dst = output + (size_t)p * kp;
            for (int32_t i = 0; i < in_c; i++) dst[i] = (int16_t)(src[i] - zp);
            dst[in_c] = 0;
        }
    }
}

// ---- weight packing: per block of 16 output channels, [taps][in pairs][16 channels][2] ----

size_t ck_conv_q8_packed_count(const ck_conv_geometry *g) {
    const size_t blocks = ((size_t)g->out_c + CK_Q8_NR - 1) / CK_Q8_NR;
    const size_t taps = (size_t)g->k_h * (size_t)g->k_w;
    return blocks * CK_Q8_NR * taps * (size_t)ck_q8_padded_channels(g->in_c);
}

#if CK_X86
/// ck_conv_q8_pack's values of the first `chunks` * 16 input channels of one tap of a full block:
/// 16 bytes of each of the block's 16 filter rows (`rows[j]`) widened to int16 minus the zero
/// point, i.e. 8 input pairs (dwords) per row, then two 8 x 8 dword transposes make each pair's 16
/// channels (64 bytes) one run of the layout.
Q8_TARGET_AVX2 static void q8_pack_chunks_avx2(const uint8_t *const *rows, int32_t is_signed, int32_t zero_point,
                                               int32_t chunks, int16_t *dst) {
    const __m256i z = _mm256_set1_epi16((short)zero_point);
    for (int32_t c = 0; c < chunks; c++) {
        for (int half = 0; half < 2; half++) {
            __m256i r[8];
            for (int j = 0; j < 8; j++) {
                const __m128i x = _mm_loadu_si128((const __m128i *)(rows[8 * half + j] + 16 * (size_t)c));
                r[j] = _mm256_sub_epi16(is_signed ? _mm256_cvtepi8_epi16(x) : _mm256_cvtepu8_epi16(x), z);
            }
            // 8 x 8 transpose of dwords: t[p] = pair p of rows 0-7 (of this half).
            const __m256i a0 = _mm256_unpacklo_epi32(r[0], r[1]), a1 = _mm256_unpackhi_epi32(r[0], r[1]);
            const __m256i a2 = _mm256_unpacklo_epi32(r[2], r[3]), a3 = _mm256_unpackhi_epi32(r[2], r[3]);
            const __m256i a4 = _mm256_unpacklo_epi32(r[4], r[5]), a5 = _mm256_unpackhi_epi32(r[4], r[5]);
            const __m256i a6 = _mm256_unpacklo_epi32(r[6], r[7]), a7 = _mm256_unpackhi_epi32(r[6], r[7]);
            const __m256i b0 = _mm256_unpacklo_epi64(a0, a2), b1 = _mm256_unpackhi_epi64(a0, a2);
            const __m256i b2 = _mm256_unpacklo_epi64(a1, a3), b3 = _mm256_unpackhi_epi64(a1, a3);
            const __m256i b4 = _mm256_unpacklo_epi64(a4, a6), b5 = _mm256_unpackhi_epi64(a4, a6);
            const __m256i b6 = _mm256_unpacklo_epi64(a5, a7), b7 = _mm256_unpackhi_epi64(a5, a7);
            const __m256i t[8] = {
                _mm256_permute2x128_si256(b0, b4, 0x20), _mm256_permute2x128_si256(b1, b5, 0x20),
                _mm256_permute2x128_si256(b2, b6, 0x20), _mm256_permute2x128_si256(b3, b7, 0x20),
                _mm256_permute2x128_si256(b0, b4, 0x31), _mm256_permute2x128_si256(b1, b5, 0x31),
                _mm256_permute2x128_si256(b2, b6, 0x31), _mm256_permute2x128_si256(b3, b7, 0x31)};
            for (int p = 0; p < 8; p++)
                _mm256_storeu_si256((__m256i *)(dst + (size_t)(8 * c + p) * 2 * CK_Q8_NR + 16 * half), t[p]);
        }
    }
}
#endif

void ck_conv_q8_pack(int32_t isa, const ck_conv_geometry *g, const void *filter, int32_t is_signed,
                     int32_t filter_zero_point, int16_t *packed) {
    // Layout: [block][tap][input pair][16 channels][2]; each output channel's filter row is read in
    // order (a block's packed values, at most taps * kp * 16, stay in cache while its 16 rows fill
    // them), the padding (channels past out_c, the odd input channel) zero. With AVX2, full blocks
    // take their first 16 * floor(in_c / 16) input channels 16 x 16 at a time (q8_pack_chunks_avx2:
    // 1x1 layers of 320-1280 channels 0.85 -> 0.14-0.19 ns per weight, in cache); the same values as
    // the plain loop, which a zero point outside the type's range keeps (its int16 truncation).
    const int32_t taps = g->k_h * g->k_w, k = g->in_c, kp = ck_q8_padded_channels(k);
    const int32_t blocks = (g->out_c + CK_Q8_NR - 1) / CK_Q8_NR;
    const size_t block_values = (size_t)taps * (size_t)kp * CK_Q8_NR;
    const uint8_t *fu = (const uint8_t *)filter;
    const int8_t *fs = (const int8_t *)filter;
    // Zeros where nothing below writes: the last block's channels past out_c and, for an odd in_c,
    // each row's padding input channel (written per row below); every other value is written once.
    if (g->out_c % CK_Q8_NR) memset(packed + (size_t)(blocks - 1) * block_values, 0, block_values * sizeof(int16_t));
    int32_t chunks = 0;
#if !CK_X86
    (void)isa;
#else
    if (q8_zero_point_fits(is_signed, filter_zero_point) && isa >= CK_ISA_AVX2) chunks = k / 16;
    for (int32_t b = 0; chunks > 0 && b < g->out_c / CK_Q8_NR; b++) {
        for (int32_t t = 0; t < taps; t++) {
            const uint8_t *rows[CK_Q8_NR];
            for (int32_t j = 0; j < CK_Q8_NR; j++) rows[j] = fu + ((size_t)(b * CK_Q8_NR + j) * taps + t) * k;
            q8_pack_chunks_avx2(rows, is_signed, filter_zero_point, chunks,
                                packed + (size_t)b * block_values + (size_t)t * kp * CK_Q8_NR);
        }
    }
#endif
    const int32_t full_blocks_end = chunks > 0 ? g->out_c / CK_Q8_NR * CK_Q8_NR : 0;
    for (int32_t oc = 0; oc < g->out_c; oc++) {
        const int32_t b = oc / CK_Q8_NR, j = oc % CK_Q8_NR;
        int16_t *block = packed + (size_t)b * block_values;
        const int32_t first = oc < full_blocks_end ? 16 * chunks : 0;
        for (int32_t t = 0; t < taps; t++) {
            const size_t row = ((size_t)oc * taps + t) * k;
            int16_t *dst = block + (size_t)t * kp * CK_Q8_NR + (size_t)j * 2;
            for (int32_t i = first; i < k; i++) {
                const int32_t v = (is_signed ? (int32_t)fs[row + i] : (int32_t)fu[row + i]) - filter_zero_point;
                dst[(size_t)(i / 2) * 2 * CK_Q8_NR + (i & 1)] = (int16_t)v;
            }
            if (k & 1) dst[(size_t)(k / 2) * 2 * CK_Q8_NR + 1] = 0;
        }
    }
}

/// Pixel offsets of every tap relative to the window's top-left pixel.
static void q8_tap_offsets(const ck_conv_geometry *g, int32_t *offsets) {
    int32_t t = 0;
    for (int32_t ky = 0; ky < g->k_h; ky++)
        for (int32_t kx = 0; kx < g->k_w; kx++, t++) offsets[t] = ky * g->dil_h * g->in_w + kx * g->dil_w;
}

/// A 1x1 layer at stride 1 without padding: output pixel p reads input pixel p.
static inline int q8_reads_own_pixel(const ck_conv_geometry *g) {
    return g->k_h == 1 && g->k_w == 1 && g->stride_h == 1 && g->stride_w == 1 && g->pad_top == 0 && g->pad_left == 0 &&
           g->in_w == g->out_w && g->in_h >= g->out_h;
}

/// Fills ptrs[t * mr + m] with the input pixel (index into an image of `bytes_per_pixel`-byte
/// pixels) tap t of output pixel (p + m) reads, or `outside` outside the image; adds the pixel
/// sums of the taps to sums[m] when `pixel_sums` is given (`outside_sum` for taps outside).
static void q8_tile_pointers(const ck_conv_geometry *g, const int32_t *tap_offsets, const uint8_t *input,
                             size_t bytes_per_pixel, const void *outside, int32_t p, int32_t mr, const void **ptrs,
                             const int32_t *pixel_sums, uint32_t outside_sum, uint32_t *sums) {
    const int32_t taps = g->k_h * g->k_w;
    if (q8_reads_own_pixel(g)) {
        // 1x1, stride 1, no padding: output pixel p reads input pixel p.
        for (int32_t m = 0; m < mr; m++) {
            ptrs[m] = input + (size_t)(p + m) * bytes_per_pixel;
            if (sums) sums[m] = pixel_sums ? (uint32_t)pixel_sums[p + m] : 0;
        }
        return;
    }
    const int32_t span_h = (g->k_h - 1) * g->dil_h, span_w = (g->k_w - 1) * g->dil_w;
    int32_t oy = p / g->out_w, ox = p - oy * g->out_w;
    for (int32_t m = 0; m < mr; m++) {
        const int32_t iy0 = oy * g->stride_h - g->pad_top, ix0 = ox * g->stride_w - g->pad_left;
        uint32_t sum = 0;
        if (iy0 >= 0 && ix0 >= 0 && iy0 + span_h < g->in_h && ix0 + span_w < g->in_w) {
            const int32_t base = iy0 * g->in_w + ix0;
            for (int32_t t = 0; t < taps; t++) {
                const int32_t pixel = base + tap_offsets[t];
                ptrs[t * mr + m] = input + (size_t)pixel * bytes_per_pixel;
                if (pixel_sums) sum += (uint32_t)pixel_sums[pixel];
            }
        } else {
            int32_t t = 0;
            for (int32_t ky = 0; ky < g->k_h; ky++) {
                for (int32_t kx = 0; kx < g->k_w; kx++, t++) {
                    const int32_t iy = iy0 + ky * g->dil_h, ix = ix0 + kx * g->dil_w;
                    if (iy >= 0 && iy < g->in_h && ix >= 0 && ix < g->in_w) {
                        const int32_t pixel = iy * g->in_w + ix;
                        ptrs[t * mr + m] = input + (size_t)pixel * bytes_per_pixel;
                        if (pixel_sums) sum += (uint32_t)pixel_sums[pixel];
                    } else {
                        ptrs[t * mr + m] = outside;
                        sum += outside_sum;
                    }
                }
            }
        }
        if (sums) sums[m] = sum;
        if (++ox == g->out_w) { ox = 0; oy++; }
    }
}

static inline int32_t q8_ld32(const int16_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/// Requantizes and stores mr rows of one block's AVX2 accumulators (__m256i acc0[mr], acc1[mr]:
/// channels 0-7 and 8-15) with the plain requantization (q8_rqp_rows_avx2).
typedef void (*q8_rqp_avx2_fn)(const void *acc0, const void *acc1, int32_t mr, const int32_t *p, const ck_q8_output *o,
                               uint8_t *c, size_t ldc, int32_t n);

/// Arguments of one tile: MR output pixels x one block of 16 channels.
typedef struct {
    const int16_t *const *ptrs;
    int32_t taps, kpairs, nr, ldc;
    const int16_t *w;
    const int32_t *params;
    const ck_q8_output *out;
    uint8_t *c;
    /// The AVX2 tiles' plain requantization for blocks flagged Q8_PLAIN (NULL: never), and its
    /// variant number (q8_rqp_avx2_variant_number).
    q8_rqp_avx2_fn rqp;
    int32_t rqv;
} q8_tile_args;

// ---- portable ----

Q8_INLINE void q8_tile_portable_body(const int MR, const q8_tile_args *a) {
    uint32_t acc[4][CK_Q8_NR];
    for (int m = 0; m < MR; m++)
        for (int j = 0; j < CK_Q8_NR; j++) acc[m][j] = (uint32_t)a->params[j];
    const int16_t *w = a->w;
    for (int32_t t = 0; t < a->taps; t++) {
        const int16_t *x[4];
        for (int m = 0; m < MR; m++) x[m] = a->ptrs[t * MR + m];
        for (int32_t p = 0; p < a->kpairs; p++) {
            for (int m = 0; m < MR; m++) {
                const int32_t x0 = x[m][2 * p], x1 = x[m][2 * p + 1];
                for (int j = 0; j < CK_Q8_NR; j++) {
                    acc[m][j] += (uint32_t)(x0 * (int32_t)w[2 * j] + x1 * (int32_t)w[2 * j + 1]);
                }
            }
            w += 2 * CK_Q8_NR;
        }
    }
    for (int m = 0; m < MR; m++) {
        uint8_t *dst = a->c + (size_t)m * a->ldc;
        for (int32_t j = 0; j < a->nr; j++) dst[j] = (uint8_t)q8_requant_scalar((int32_t)acc[m][j], a->params, j, a->out);
    }
}

static void q8_tile_portable_4(const q8_tile_args *a) { q8_tile_portable_body(4, a); }
static void q8_tile_portable_1(const q8_tile_args *a) { q8_tile_portable_body(1, a); }

#if CK_X86
// ---- AVX2: 6 x 16 tiles (12 ymm accumulators; 4, 2 and 1 rows for the rest), vpmaddwd + vpaddd ----

Q8_TARGET_AVX2 Q8_INLINE __m256i q8_requant_avx2(__m256i x, const int32_t *p, const ck_q8_output *o) {
    const __m256i m = _mm256_loadu_si256((const __m256i *)(p + 16));
    x = _mm256_sllv_epi32(x, _mm256_loadu_si256((const __m256i *)(p + 32)));
    const __m256i nudge = _mm256_set1_epi64x(INT64_C(1) << 30);
    const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(x, m), nudge);
    const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), nudge);
    const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_slli_epi64(po, 1), 0xAA);
    __m256i q = _mm256_srav_epi32(h, _mm256_loadu_si256((const __m256i *)(p + 48)));
    const __m256i a1 = _mm256_loadu_si256((const __m256i *)(p + 64));
    const __m256i a2 = _mm256_loadu_si256((const __m256i *)(p + 80));
    if (o->rounding == CK_Q8_ROUND_HALF_UP) {
        q = _mm256_add_epi32(q, _mm256_and_si256(_mm256_srav_epi32(h, a1), a2));
    } else {
        const __m256i rem = _mm256_and_si256(h, a1);
        const __m256i thr = _mm256_sub_epi32(a2, _mm256_srai_epi32(h, 31));
        q = _mm256_sub_epi32(q, _mm256_cmpgt_epi32(rem, thr));
    }
    q = _mm256_add_epi32(q, _mm256_set1_epi32(o->zero_point));
    q = _mm256_max_epi32(q, _mm256_set1_epi32(o->act_min));
    return _mm256_min_epi32(q, _mm256_set1_epi32(o->act_max));
}

/// Stores the low bytes of 16 int32 (already clamped to the output type's range).
Q8_TARGET_AVX2 Q8_INLINE void q8_store16_avx2(uint8_t *dst, __m256i v0, __m256i v1, int32_t n) {
    const __m256i mask = _mm256_set1_epi32(0xFF);
    __m256i s = _mm256_packus_epi32(_mm256_and_si256(v0, mask), _mm256_and_si256(v1, mask));
    s = _mm256_permute4x64_epi64(s, 0xD8);
    const __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    if (n == 16) {
        _mm_storeu_si128((__m128i *)dst, b);
    } else {
        uint8_t tmp[16];
        _mm_storeu_si128((__m128i *)tmp, b);
        memcpy(dst, tmp, (size_t)n);
    }
}

/// The plain requantization's constants for lanes `h` * 8.. of one block (loaded once per block:
/// the stores through uint8_t pointers would otherwise make the compiler reload them per row).
typedef struct {
    __m256i m, m_odd, nudge2_even, nudge2_odd, right;
} q8_rqp_avx2_half;

Q8_TARGET_AVX2 Q8_INLINE q8_rqp_avx2_half q8_rqp_avx2_load(const int32_t *p, int32_t h) {
    q8_rqp_avx2_half k;
    k.m = _mm256_loadu_si256((const __m256i *)(p + 16 + 8 * h));
    k.m_odd = _mm256_srli_epi64(k.m, 32);
    // Opaque to the compiler: knowing its high dwords zero, clang would turn each vpmuldq by it
    // into three vpmuludq with shifts and adds.
    __asm__("" : "+x"(k.m_odd));
    const __m256i ne = _mm256_loadu_si256((const __m256i *)(p + 96 + 8 * h));
    const __m256i no = _mm256_loadu_si256((const __m256i *)(p + 112 + 8 * h));
    k.nudge2_even = _mm256_add_epi64(ne, ne);
    k.nudge2_odd = _mm256_add_epi64(no, no);
    k.right = _mm256_loadu_si256((const __m256i *)(p + 48 + 8 * h));
    return k;
}

/// The plain requantization (see q8_rqp_rows: no left shift, the output zero point folded into the
/// nudge, 1 <= r <= 22, |accumulator| < 2^29) of 8 accumulators x with constants k: the high dword
/// of 2x * m + 2N (vpmuldq on the even and odd lanes, then one blend), minus 1 for x < 0 when
/// rounding half away from zero, shifted right by r; the clamp to the type's range is the
/// saturating narrowing that follows (q8_rqp_store_avx2). V: as q8_rqp_rows', bits 1 and 2 whether
/// the activation's clamp needs a max / a min inside the type's range. 9-11 instructions per 8
/// outputs, against about 18 for q8_requant_avx2.
Q8_TARGET_AVX2 Q8_INLINE __m256i q8_rqp_avx2(const int V, __m256i x, const q8_rqp_avx2_half *k, __m256i lo, __m256i hi) {
    const __m256i x2 = _mm256_add_epi32(x, x);
    __m256i xo = _mm256_shuffle_epi32(x2, 0xF5);
    __asm__("" : "+x"(xo)); // (as m_odd: a plain vpmuldq)
    const __m256i te = _mm256_add_epi64(_mm256_mul_epi32(x2, k->m), k->nudge2_even);
    const __m256i to = _mm256_add_epi64(_mm256_mul_epi32(xo, k->m_odd), k->nudge2_odd);
    __m256i u = _mm256_blend_epi32(_mm256_shuffle_epi32(te, 0xF5), to, 0xAA);
    if (!(V & 1)) u = _mm256_add_epi32(u, _mm256_srai_epi32(x, 31));
    __m256i q = _mm256_srav_epi32(u, k->right);
    if (V & 2) q = _mm256_max_epi32(q, lo);
    if (V & 4) q = _mm256_min_epi32(q, hi);
    return q;
}

/// Stores rows r0 and (when `two`) r1 of 16 requantized channels each (q[0], q[1] and q[2], q[3]),
/// n of them, narrowed with saturation to int8 (SIGNED) or uint8.
Q8_TARGET_AVX2 Q8_INLINE void q8_rqp_store_avx2(const int SIGNED, const __m256i *q, int two, uint8_t *r0, uint8_t *r1, int32_t n) {
    const __m256i w0 = _mm256_packs_epi32(q[0], q[1]);
    const __m256i w1 = two ? _mm256_packs_epi32(q[2], q[3]) : w0;
    // dwords: row 0 channels 0-3, 8-11, row 1 0-3, 8-11 | row 0 4-7, 12-15, row 1 4-7, 12-15
    const __m256i b = SIGNED ? _mm256_packs_epi16(w0, w1) : _mm256_packus_epi16(w0, w1);
    const __m256i rows = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    const __m128i lo = _mm256_castsi256_si128(rows);
    if (n == CK_Q8_NR) {
        _mm_storeu_si128((__m128i *)r0, lo);
        if (two) _mm_storeu_si128((__m128i *)r1, _mm256_extracti128_si256(rows, 1));
    } else {
        uint8_t tmp[32];
        _mm256_storeu_si256((__m256i *)tmp, rows);
        memcpy(r0, tmp, (size_t)n);
        if (two) memcpy(r1, tmp + 16, (size_t)n);
    }
}

/// Requantizes and stores `mr` rows of one block's accumulators with the plain requantization,
/// variant V (see q8_rqp_avx2; bit 3 int8 output). Inlined by the tiles for their common variants,
/// and out of line (q8_rqp_rows_avx2_V) for every variant.
Q8_TARGET_AVX2 Q8_INLINE void q8_rqp_rows_avx2_body(const int V, const __m256i *acc0, const __m256i *acc1, int32_t mr,
                                                    const int32_t *p, const ck_q8_output *o, uint8_t *c, size_t ldc,
                                                    int32_t n) {
    const q8_rqp_avx2_half k0 = q8_rqp_avx2_load(p, 0), k1 = q8_rqp_avx2_load(p, 1);
    const __m256i lo = _mm256_set1_epi32(o->act_min), hi = _mm256_set1_epi32(o->act_max);
    // (unrolled where mr is a constant: the tiles' accumulators then stay in registers)
    Q8_UNROLL
    for (int32_t m = 0; m < mr; m += 2) {
        const int two = m + 1 < mr;
        __m256i q[4];
        q[0] = q8_rqp_avx2(V, acc0[m], &k0, lo, hi);
        q[1] = q8_rqp_avx2(V, acc1[m], &k1, lo, hi);
        if (two) {
            q[2] = q8_rqp_avx2(V, acc0[m + 1], &k0, lo, hi);
            q[3] = q8_rqp_avx2(V, acc1[m + 1], &k1, lo, hi);
        }
        q8_rqp_store_avx2(V & 8, q, two, c + (size_t)m * ldc, c + (size_t)(m + 1) * ldc, n);
    }
}

#define Q8_RQP_AVX2_VARIANT(V)                                                                          \
    Q8_TARGET_AVX2 static void q8_rqp_rows_avx2_##V(const void *acc0, const void *acc1, int32_t mr,       \
                                                    const int32_t *p, const ck_q8_output *o, uint8_t *c,  \
                                                    size_t ldc, int32_t n) {                              \
        const __m256i *a0 = (const __m256i *)acc0, *a1 = (const __m256i *)acc1;                          \
        switch (mr) {                                                                                     \
        case 6: q8_rqp_rows_avx2_body(V, a0, a1, 6, p, o, c, ldc, n); break;                              \
        case 4: q8_rqp_rows_avx2_body(V, a0, a1, 4, p, o, c, ldc, n); break;                              \
        case 3: q8_rqp_rows_avx2_body(V, a0, a1, 3, p, o, c, ldc, n); break;                              \
        case 2: q8_rqp_rows_avx2_body(V, a0, a1, 2, p, o, c, ldc, n); break;                              \
        default: q8_rqp_rows_avx2_body(V, a0, a1, 1, p, o, c, ldc, n); break;                             \
        }                                                                                                 \
    }
Q8_RQP_AVX2_VARIANT(0) Q8_RQP_AVX2_VARIANT(1) Q8_RQP_AVX2_VARIANT(2) Q8_RQP_AVX2_VARIANT(3)
Q8_RQP_AVX2_VARIANT(4) Q8_RQP_AVX2_VARIANT(5) Q8_RQP_AVX2_VARIANT(6) Q8_RQP_AVX2_VARIANT(7)
Q8_RQP_AVX2_VARIANT(8) Q8_RQP_AVX2_VARIANT(9) Q8_RQP_AVX2_VARIANT(10) Q8_RQP_AVX2_VARIANT(11)
Q8_RQP_AVX2_VARIANT(12) Q8_RQP_AVX2_VARIANT(13) Q8_RQP_AVX2_VARIANT(14) Q8_RQP_AVX2_VARIANT(15)

/// The variant of q8_rqp_rows_avx2 for output `o`: the clamp's max and min only where the
/// activation's range is narrower than the type's. The output is taken as int8 when act_min < 0; an
/// int8 output whose range lies in [0, 127] takes the uint8 variant, which stores the same bytes.
static int32_t q8_rqp_avx2_variant_number(const ck_q8_output *o) {
    const int32_t is_signed = o->act_min < 0;
    const int32_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
    return (o->rounding == CK_Q8_ROUND_HALF_UP ? 1 : 0) | (o->act_min > lo ? 2 : 0) | (o->act_max < hi ? 4 : 0) |
           (is_signed ? 8 : 0);
}

static q8_rqp_avx2_fn q8_rqp_avx2_variant(const ck_q8_output *o) {
    static const q8_rqp_avx2_fn variants[16] = {
        q8_rqp_rows_avx2_0, q8_rqp_rows_avx2_1, q8_rqp_rows_avx2_2,  q8_rqp_rows_avx2_3,
        q8_rqp_rows_avx2_4, q8_rqp_rows_avx2_5, q8_rqp_rows_avx2_6,  q8_rqp_rows_avx2_7,
        q8_rqp_rows_avx2_8, q8_rqp_rows_avx2_9, q8_rqp_rows_avx2_10, q8_rqp_rows_avx2_11,
        q8_rqp_rows_avx2_12, q8_rqp_rows_avx2_13, q8_rqp_rows_avx2_14, q8_rqp_rows_avx2_15};
    return variants[q8_rqp_avx2_variant_number(o)];
}

Q8_TARGET_AVX2 Q8_INLINE void q8_tile_avx2_body(const int MR, const q8_tile_args *a) {
    __m256i acc0[6], acc1[6];
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)a->params);
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)(a->params + 8));
    for (int m = 0; m < MR; m++) { acc0[m] = b0; acc1[m] = b1; }
    const int16_t *w = a->w;
    for (int32_t t = 0; t < a->taps; t++) {
        const int16_t *x[6];
        for (int m = 0; m < MR; m++) x[m] = a->ptrs[t * MR + m];
        for (int32_t p = 0; p < a->kpairs; p++) {
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)w);
            const __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + 16));
            w += 2 * CK_Q8_NR;
            for (int m = 0; m < MR; m++) {
                const __m256i v = _mm256_set1_epi32(q8_ld32(x[m] + 2 * p));
                acc0[m] = _mm256_add_epi32(acc0[m], _mm256_madd_epi16(v, w0));
                acc1[m] = _mm256_add_epi32(acc1[m], _mm256_madd_epi16(v, w1));
            }
        }
    }
    if (a->rqp && a->params[Q8_PLAIN]) {
        // The constants' loads must not move above the loop (their registers would spill there):
        // read through a pointer that depends on the final accumulators.
        const int32_t *p = a->params;
        __asm__("" : "+r"(p) : "x"(acc0[0]), "x"(acc1[0]));
        switch (a->rqv) {
        case 0: q8_rqp_rows_avx2_body(0, acc0, acc1, MR, p, a->out, a->c, (size_t)a->ldc, a->nr); return;
        case 1: q8_rqp_rows_avx2_body(1, acc0, acc1, MR, p, a->out, a->c, (size_t)a->ldc, a->nr); return;
        case 8: q8_rqp_rows_avx2_body(8, acc0, acc1, MR, p, a->out, a->c, (size_t)a->ldc, a->nr); return;
        case 9: q8_rqp_rows_avx2_body(9, acc0, acc1, MR, p, a->out, a->c, (size_t)a->ldc, a->nr); return;
        default: break;
        }
        // The other variants out of line, on copies so the accumulators' addresses never escape
        // (passing the accumulators themselves kept them in memory through the K loop).
        __m256i copy0[6], copy1[6];
        Q8_UNROLL
        for (int m = 0; m < MR; m++) { copy0[m] = acc0[m]; copy1[m] = acc1[m]; }
        a->rqp(copy0, copy1, MR, a->params, a->out, a->c, (size_t)a->ldc, a->nr);
        return;
    }
    Q8_UNROLL
    for (int m = 0; m < MR; m++) {
        const __m256i r0 = q8_requant_avx2(acc0[m], a->params, a->out);
        const __m256i r1 = q8_requant_avx2(acc1[m], a->params + 8, a->out);
        q8_store16_avx2(a->c + (size_t)m * a->ldc, r0, r1, a->nr);
    }
}

Q8_TARGET_AVX2 static void q8_tile_avx2_6(const q8_tile_args *a) { q8_tile_avx2_body(6, a); }
Q8_TARGET_AVX2 static void q8_tile_avx2_4(const q8_tile_args *a) { q8_tile_avx2_body(4, a); }
Q8_TARGET_AVX2 static void q8_tile_avx2_2(const q8_tile_args *a) { q8_tile_avx2_body(2, a); }
Q8_TARGET_AVX2 static void q8_tile_avx2_1(const q8_tile_args *a) { q8_tile_avx2_body(1, a); }

// ---- AVX-512 (vpmaddwd + vpaddd) and AVX-512-VNNI (vpdpwssd): 8 x 16 tiles ----

/// One block's requantization constants in registers (loaded once per tile: the byte stores of
/// the epilogue may alias the parameters, so the compiler would reload them per row otherwise).
typedef struct {
    __m512i m, m_odd, left, zp, lo, hi;
    /// The 64-bit nudges, shifts and negative-product adjustments of the even and odd lanes (see
    /// ck_q8_params_pack).
    __m512i nudge_even, nudge_odd, shift_even, shift_odd, adjust_even, adjust_odd;
    int32_t half_up, has_left, add_zp;
} q8_rq512;

#define Q8_REQUANT512(TARGET, NAME)                                                                    \
    TARGET Q8_INLINE q8_rq512 NAME##_load(const int32_t *p, const ck_q8_output *o) {                   \
        q8_rq512 r;                                                                                    \
        r.m = _mm512_loadu_si512(p + 16);                                                              \
        r.m_odd = _mm512_srli_epi64(r.m, 32);                                                          \
        r.left = _mm512_loadu_si512(p + 32);                                                           \
        r.lo = _mm512_set1_epi32(o->act_min);                                                          \
        r.hi = _mm512_set1_epi32(o->act_max);                                                          \
        r.half_up = o->rounding == CK_Q8_ROUND_HALF_UP;                                                \
        r.nudge_even = _mm512_loadu_si512(p + 96);                                                     \
        r.nudge_odd = _mm512_loadu_si512(p + 112);                                                     \
        r.shift_even = _mm512_loadu_si512(p + 128);                                                    \
        r.shift_odd = _mm512_loadu_si512(p + 144);                                                     \
        r.zp = _mm512_loadu_si512(p + 160);                                                            \
        r.has_left = p[176];                                                                           \
        r.add_zp = p[177];                                                                             \
        r.adjust_even = _mm512_loadu_si512(p + 192);                                                   \
        r.adjust_odd = _mm512_loadu_si512(p + 208);                                                    \
        return r;                                                                                      \
    }                                                                                                  \
    TARGET Q8_INLINE __m512i NAME(__m512i x, const q8_rq512 *r) {                                      \
        if (r->has_left) x = _mm512_sllv_epi32(x, r->left);                                            \
        if (r->half_up) {                                                                              \
            /* One rounding shift per 64-bit product (ck_q8_params_pack); the odd lanes' results */    \
            /* move to the high halves with a masked vpshufd. */                                      \
            const __m512i pe = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, r->m), r->nudge_even), r->shift_even); \
            const __m512i po = _mm512_srav_epi64(                                                      \
                _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), r->m_odd), r->nudge_odd), r->shift_odd); \
            __m512i q = _mm512_mask_shuffle_epi32(pe, (__mmask16)0xAAAA, po, (_MM_PERM_ENUM)0xA0);     \
            if (r->add_zp) q = _mm512_add_epi32(q, r->zp);                                             \
            q = _mm512_max_epi32(q, r->lo);                                                            \
            return _mm512_min_epi32(q, r->hi);                                                         \
        }                                                                                              \
        /* Half away from zero: the nudge drops by 2^31 where P < -2^30 (h < 0). */                   \
        const __m512i limit = _mm512_set1_epi64(-(INT64_C(1) << 30));                                  \
        __m512i pe = _mm512_mul_epi32(x, r->m);                                                        \
        const __mmask8 ne = _mm512_cmplt_epi64_mask(pe, limit);                                        \
        pe = _mm512_add_epi64(pe, r->nudge_even);                                                      \
        pe = _mm512_srav_epi64(_mm512_mask_add_epi64(pe, ne, pe, r->adjust_even), r->shift_even);      \
        __m512i po = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), r->m_odd);                             \
        const __mmask8 no = _mm512_cmplt_epi64_mask(po, limit);                                        \
        po = _mm512_add_epi64(po, r->nudge_odd);                                                       \
        po = _mm512_srav_epi64(_mm512_mask_add_epi64(po, no, po, r->adjust_odd), r->shift_odd);        \
        __m512i q = _mm512_mask_shuffle_epi32(pe, (__mmask16)0xAAAA, po, (_MM_PERM_ENUM)0xA0);         \
        if (r->add_zp) q = _mm512_add_epi32(q, r->zp);                                                 \
        q = _mm512_max_epi32(q, r->lo);                                                                \
        return _mm512_min_epi32(q, r->hi);                                                             \
    }

Q8_REQUANT512(Q8_TARGET_AVX512, q8_requant_avx512)
Q8_REQUANT512(Q8_TARGET_VNNI, q8_requant_vnni)

/// The shorter exact requantization of q8_dw3_requant's non-GENERAL form for a block whose
/// parameters say it applies (Q8_PLAIN, set by ck_conv_q8b_pack: no left shift, the output zero
/// point folded into the nudge N, 1 <= r <= 22, and |accumulator| < 2^29 for any input, bounded
/// from the bias and the weights): the high dword U of the 64-bit 2x * m + 2N is
/// floor((x * m + N) / 2^31) = h + 2^(r-1) + zp * 2^r (|U| < 2^31), then U >> r for half up, or
/// (U - [x < 0]) >> r for half away from zero (see q8_dw3_requant), and the clamp: about 10 vector
/// instructions per 16 outputs with the narrowing store, against about 17.
///
/// Requantizes and stores MR rows of one block's accumulators (row i to c + i * ldc, n of its 16
/// channels). V: bit 0 half up (else half away from zero), bits 1 and 2 whether the clamp needs a
/// max / a min, bit 3 int8 output (else uint8); the rest of the clamp is the saturating narrowing
/// store (signed for int8, unsigned for uint8, whose values the max has made non-negative). The
/// tiles inline the variants of CONV_2D's usual outputs (Q8_EV_INT8, Q8_EV_UINT8) and call the
/// others out of line (q8_rqp_variant, picked once per call).
Q8_TARGET_VNNI Q8_INLINE void q8_rqp_rows(const int V, const __m512i *acc, const int MR, const int32_t *p,
                                          const ck_q8_output *o, uint8_t *c, size_t ldc, int32_t n) {
    const __m512i m = _mm512_loadu_si512(p + 16), m_odd = _mm512_srli_epi64(m, 32);
    const __m512i ne = _mm512_loadu_si512(p + 96), no = _mm512_loadu_si512(p + 112);
    const __m512i nudge2_even = _mm512_add_epi64(ne, ne), nudge2_odd = _mm512_add_epi64(no, no);
    const __m512i right = _mm512_loadu_si512(p + 48);
    const __m512i lo = _mm512_set1_epi32(o->act_min), hi = _mm512_set1_epi32(o->act_max);
    const __mmask16 mask = (__mmask16)((1u << n) - 1u);
    Q8_UNROLL
    for (int i = 0; i < MR; i++) {
        const __m512i x = acc[i];
        const __m512i x2 = _mm512_add_epi32(x, x);
        __m512i xo = _mm512_shuffle_epi32(x2, (_MM_PERM_ENUM)0xF5);
        __asm__("" : "+v"(xo)); // a shuffle (port 5), not the shift clang prefers
        const __m512i te = _mm512_add_epi64(_mm512_mul_epi32(x2, m), nudge2_even);
        const __m512i to = _mm512_add_epi64(_mm512_mul_epi32(xo, m_odd), nudge2_odd);
        __m512i u = _mm512_mask_shuffle_epi32(to, (__mmask16)0x5555, te, (_MM_PERM_ENUM)0xF5);
        if (!(V & 1)) u = _mm512_add_epi32(u, _mm512_srai_epi32(x, 31));
        __m512i q = _mm512_srav_epi32(u, right);
        if (V & 2) q = _mm512_max_epi32(q, lo);
        if (V & 4) q = _mm512_min_epi32(q, hi);
        uint8_t *dst = c + (size_t)i * ldc;
        if (n == CK_Q8_NR) {
            _mm_storeu_si128((__m128i *)dst, (V & 8) ? _mm512_cvtsepi32_epi8(q) : _mm512_cvtusepi32_epi8(q));
        } else if (V & 8) {
            _mm512_mask_cvtsepi32_storeu_epi8(dst, mask, q);
        } else {
            _mm512_mask_cvtusepi32_storeu_epi8(dst, mask, q);
        }
    }
}

typedef void (*q8_rqp_fn)(const __m512i *acc, int32_t mr, const int32_t *p, const ck_q8_output *o, uint8_t *c,
                          size_t ldc, int32_t n);
#define Q8_RQP_VARIANT(V)                                                                              \
    Q8_TARGET_VNNI static void q8_rqp_rows_##V(const __m512i *acc, int32_t mr, const int32_t *p,       \
                                               const ck_q8_output *o, uint8_t *c, size_t ldc, int32_t n) { \
        switch (mr) {                                                                                  \
        case 8: q8_rqp_rows(V, acc, 8, p, o, c, ldc, n); break;                                        \
        case 4: q8_rqp_rows(V, acc, 4, p, o, c, ldc, n); break;                                        \
        case 2: q8_rqp_rows(V, acc, 2, p, o, c, ldc, n); break;                                        \
        default: q8_rqp_rows(V, acc, 1, p, o, c, ldc, n); break;                                       \
        }                                                                                              \
    }
Q8_RQP_VARIANT(0) Q8_RQP_VARIANT(1) Q8_RQP_VARIANT(2) Q8_RQP_VARIANT(3)
Q8_RQP_VARIANT(4) Q8_RQP_VARIANT(5) Q8_RQP_VARIANT(6) Q8_RQP_VARIANT(7)
Q8_RQP_VARIANT(8) Q8_RQP_VARIANT(9) Q8_RQP_VARIANT(10) Q8_RQP_VARIANT(11)
Q8_RQP_VARIANT(12) Q8_RQP_VARIANT(13) Q8_RQP_VARIANT(14) Q8_RQP_VARIANT(15)

static int32_t q8_rqp_variant_number(const ck_q8_output *o, int32_t is_signed);

/// Calls an out-of-line variant on a copy of the accumulators (so theirs never leave registers).
Q8_TARGET_VNNI Q8_INLINE void q8_rqp_call(q8_rqp_fn fn, const __m512i *acc, const int MR, const int32_t *p,
                                          const ck_q8_output *o, uint8_t *c, size_t ldc, int32_t n) {
    __m512i copy[Q8_MAX_MR];
    for (int m = 0; m < MR; m++) copy[m] = acc[m];
    fn(copy, MR, p, o, c, ldc, n);
}

/// Requantizes one 16-channel block of a tile (MR rows, n live channels) and stores it: the plain
/// form where the block's flag allows (variant EV inlined, or for EV < 0 the op's variant `rqp`
/// called out of line), else the general form.
Q8_TARGET_VNNI Q8_INLINE void q8b_store_block(const int EV, const __m512i *acc, const int MR, const int32_t *p,
                                              const ck_q8_output *o, q8_rqp_fn rqp, uint8_t *c, size_t ldc, int32_t n) {
    if (p[Q8_PLAIN]) {
        if (EV >= 0) q8_rqp_rows(EV, acc, MR, p, o, c, ldc, n);
        else q8_rqp_call(rqp, acc, MR, p, o, c, ldc, n);
        return;
    }
    const __mmask16 mask = (__mmask16)((1u << n) - 1u);
    const q8_rq512 rq = q8_requant_vnni_load(p, o);
    Q8_UNROLL
    for (int m = 0; m < MR; m++) {
        const __m512i r = q8_requant_vnni(acc[m], &rq);
        uint8_t *dst = c + (size_t)m * ldc;
        if (n == CK_Q8_NR) _mm_storeu_si128((__m128i *)dst, _mm512_cvtepi32_epi8(r));
        else _mm512_mask_cvtepi32_storeu_epi8(dst, mask, r);
    }
}

/// The q8_rqp_rows variant for output `o` of the given type.
static q8_rqp_fn q8_rqp_variant(const ck_q8_output *o, int32_t is_signed) {
    static const q8_rqp_fn variants[16] = {
        q8_rqp_rows_0, q8_rqp_rows_1, q8_rqp_rows_2,  q8_rqp_rows_3,  q8_rqp_rows_4,  q8_rqp_rows_5,  q8_rqp_rows_6,  q8_rqp_rows_7,
        q8_rqp_rows_8, q8_rqp_rows_9, q8_rqp_rows_10, q8_rqp_rows_11, q8_rqp_rows_12, q8_rqp_rows_13, q8_rqp_rows_14, q8_rqp_rows_15};
    return variants[q8_rqp_variant_number(o, is_signed)];
}

#define Q8_DOT_AVX512(acc, a, b) _mm512_add_epi32(acc, _mm512_madd_epi16(a, b))
#define Q8_DOT_VNNI(acc, a, b) _mm512_dpwssd_epi32(acc, a, b)

#define Q8_TILE512(TARGET, NAME, DOT, REQUANT)                                                         \
    TARGET Q8_INLINE void NAME##_body(const int MR, const q8_tile_args *a) {                           \
        __m512i acc[Q8_MAX_MR];                                                                        \
        const __m512i bias = _mm512_loadu_si512(a->params);                                            \
        for (int m = 0; m < MR; m++) acc[m] = bias;                                                    \
        const int16_t *w = a->w;                                                                       \
        for (int32_t t = 0; t < a->taps; t++) {                                                        \
            const int16_t *x[Q8_MAX_MR];                                                               \
            for (int m = 0; m < MR; m++) x[m] = a->ptrs[t * MR + m];                                   \
            for (int32_t p = 0; p < a->kpairs; p++) {                                                  \
                const __m512i wv = _mm512_loadu_si512(w);                                              \
                w += 2 * CK_Q8_NR;                                                                     \
                for (int m = 0; m < MR; m++)                                                           \
                    acc[m] = DOT(acc[m], _mm512_set1_epi32(q8_ld32(x[m] + 2 * p)), wv);                \
            }                                                                                          \
        }                                                                                              \
        const __mmask16 mask = (__mmask16)((1u << a->nr) - 1u);                                       \
        const q8_rq512 rq = REQUANT##_load(a->params, a->out);                                         \
        Q8_UNROLL                                                                                      \
        for (int m = 0; m < MR; m++) {                                                                 \
            const __m512i r = REQUANT(acc[m], &rq);                                                    \
            if (a->nr == CK_Q8_NR) _mm_storeu_si128((__m128i *)(a->c + (size_t)m * a->ldc), _mm512_cvtepi32_epi8(r)); \
            else _mm512_mask_cvtepi32_storeu_epi8(a->c + (size_t)m * a->ldc, mask, r);                 \
        }                                                                                              \
    }                                                                                                  \
    TARGET static void NAME##_8(const q8_tile_args *a) { NAME##_body(8, a); }                          \
    TARGET static void NAME##_4(const q8_tile_args *a) { NAME##_body(4, a); }                          \
    TARGET static void NAME##_2(const q8_tile_args *a) { NAME##_body(2, a); }                          \
    TARGET static void NAME##_1(const q8_tile_args *a) { NAME##_body(1, a); }

Q8_TILE512(Q8_TARGET_AVX512, q8_tile_avx512, Q8_DOT_AVX512, q8_requant_avx512)
#endif

typedef void (*q8_tile_fn)(const q8_tile_args *);

void ck_conv_q8(int32_t isa, const ck_conv_geometry *g, const int16_t *input, const int16_t *packed,
                const int32_t *params, const ck_q8_output *out, void *output, int32_t pixel_begin,
                int32_t pixel_end, int32_t block_begin, int32_t block_end, const int16_t *zeros) {
    const int32_t taps = g->k_h * g->k_w, kp = ck_q8_padded_channels(g->in_c);
    if (taps <= 0 || taps > Q8_MAX_TAPS) return;
    // tiles[i] computes sizes[i] rows; sizes descending, the last 1.
    q8_tile_fn tiles[4] = {q8_tile_portable_4, q8_tile_portable_1, 0, 0};
    int32_t sizes[4] = {4, 1, 0, 0};
    int32_t kinds = 2;
    q8_rqp_avx2_fn rqp = NULL;
    int32_t rqv = -1;
#if CK_X86
    // AVX-512-VNNI uses the AVX-512 tile: on Zen 4, vpdpwssd measured 10-20% slower than
    // vpmaddwd + vpaddd for these tiles.
    if (isa >= CK_ISA_AVX512) {
        tiles[0] = q8_tile_avx512_8; tiles[1] = q8_tile_avx512_4; tiles[2] = q8_tile_avx512_2; tiles[3] = q8_tile_avx512_1;
        sizes[0] = 8; sizes[1] = 4; sizes[2] = 2; sizes[3] = 1; kinds = 4;
    } else if (isa >= CK_ISA_AVX2) {
        tiles[0] = q8_tile_avx2_6; tiles[1] = q8_tile_avx2_4; tiles[2] = q8_tile_avx2_2; tiles[3] = q8_tile_avx2_1;
        sizes[0] = 6; sizes[1] = 4; sizes[2] = 2; sizes[3] = 1; kinds = 4;
        rqp = q8_rqp_avx2_variant(out);
        rqv = q8_rqp_avx2_variant_number(out);
    }
#else
    (void)isa;
#endif
    const size_t block_stride = (size_t)CK_Q8_NR * (size_t)taps * (size_t)kp;
    const int16_t *ptrs[Q8_MAX_TAPS * Q8_MAX_MR];
    int32_t tap_offsets[Q8_MAX_TAPS];
    q8_tap_offsets(g, tap_offsets);
    q8_tile_args a;
    a.ptrs = ptrs;
    a.taps = taps;
    a.kpairs = kp / 2;
    a.ldc = g->out_c;
    a.out = out;
    a.rqp = rqp;
    a.rqv = rqv;
    uint8_t *dst = (uint8_t *)output;
    int32_t p = pixel_begin;
    while (p < pixel_end) {
        const int32_t remaining = pixel_end - p;
        int32_t kind = 0;
        while (kind + 1 < kinds && sizes[kind] > remaining) kind++;
        const int32_t mr = sizes[kind];
        q8_tile_pointers(g, tap_offsets, (const uint8_t *)input, (size_t)kp * 2, zeros, p, mr, (const void **)ptrs, NULL, 0, NULL);
        for (int32_t b = block_begin; b < block_end; b++) {
            a.nr = q8_min(CK_Q8_NR, g->out_c - b * CK_Q8_NR);
            a.w = packed + (size_t)b * block_stride;
            a.params = params + (size_t)b * CK_Q8_PARAMS_PER_BLOCK;
            a.c = dst + (size_t)p * g->out_c + (size_t)b * CK_Q8_NR;
            tiles[kind](&a);
        }
        p += mr;
    }
}

// ---- first layers on AVX2: 3 input channels, stride 2 along x (see c3s2.h and conv_f32.c) ----
//
// The float kernel's planes and FMAs over x - input zero point and w - filter zero point: at most
// 7 × 5 × 3 = 105 products of magnitude at most 255 × 255 per output, so every partial sum is an
// integer below 2^24 and exact in float whatever the order; the epilogue converts it to int32,
// adds the bias (wrapping, like the reference) and requantizes. Against the int16 GEMM this skips
// the converted copy of the input, the padding channel and the half-empty 16-channel tiles of 8
// output channels.

int32_t ck_conv_q8_c3s2_supported(int32_t isa, const ck_conv_geometry *g) {
#if CK_X86
    return isa >= CK_ISA_AVX2 && isa < CK_ISA_AVX512VNNI && ck_conv_c3s2_supported(g) && g->k_h * g->k_w * 3 <= 105;
#else
    (void)isa; (void)g;
    return 0;
#endif
}

size_t ck_conv_q8_c3s2_packed_count(const ck_conv_geometry *g) { return (size_t)g->out_c * (size_t)g->k_h * (size_t)g->k_w * 3; }

void ck_conv_q8_c3s2_pack(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point, float *packed) {
#if CK_X86
    const c3s2_source f = {filter, is_signed ? CK_C3S2_INT8 : CK_C3S2_UINT8, filter_zero_point};
    ck_c3s2_pack_weights(g, &f, packed);
#else
    (void)g; (void)filter; (void)is_signed; (void)filter_zero_point; (void)packed;
#endif
}

#if CK_X86
typedef struct {
    const int32_t *params;
    const ck_q8_output *out;
    uint8_t *output;
    int32_t out_c;
    int32_t rqv; ///< q8_rqp_avx2_variant_number(out)
} q8_c3s2_context;

/// q8_c3s2_epilogue's plain requantization (variant V) of n pixels' 8 channels from oc0.
Q8_TARGET_AVX2 Q8_INLINE void q8_c3s2_plain(const int V, const q8_c3s2_context *c, const int32_t *block, const float *px,
                                            int32_t n, size_t pixel, int32_t oc0) {
    const int32_t h = (oc0 % CK_Q8_NR) / 8;
    const q8_rqp_avx2_half k = q8_rqp_avx2_load(block, h);
    const __m256i bias = _mm256_loadu_si256((const __m256i *)(block + 8 * h));
    const __m256i lo = _mm256_set1_epi32(c->out->act_min), hi = _mm256_set1_epi32(c->out->act_max);
    for (int32_t i = 0; i < n; i++) {
        const __m256i sum = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_loadu_ps(px + 8 * i)), bias);
        const __m256i q = q8_rqp_avx2(V, sum, &k, lo, hi);
        const __m128i s16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        const __m128i b = (V & 8) ? _mm_packs_epi16(s16, s16) : _mm_packus_epi16(s16, s16);
        _mm_storel_epi64((__m128i *)(c->output + (pixel + (size_t)i) * (size_t)c->out_c + oc0), b);
    }
}

Q8_TARGET_AVX2 static void q8_c3s2_epilogue(const void *context, const float *px, int32_t n, size_t pixel, int32_t oc0) {
    const q8_c3s2_context *c = (const q8_c3s2_context *)context;
    const int32_t *block = c->params + (size_t)(oc0 / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK;
    if (block[Q8_PLAIN]) {
        // The plain requantization, inlined for the variants of real first layers (no clamp, a
        // ReLU's max, ReLU6's max and min); a min alone takes the general form.
        switch (c->rqv) {
        case 0: q8_c3s2_plain(0, c, block, px, n, pixel, oc0); return;
        case 1: q8_c3s2_plain(1, c, block, px, n, pixel, oc0); return;
        case 2: q8_c3s2_plain(2, c, block, px, n, pixel, oc0); return;
        case 3: q8_c3s2_plain(3, c, block, px, n, pixel, oc0); return;
        case 6: q8_c3s2_plain(6, c, block, px, n, pixel, oc0); return;
        case 7: q8_c3s2_plain(7, c, block, px, n, pixel, oc0); return;
        case 8: q8_c3s2_plain(8, c, block, px, n, pixel, oc0); return;
        case 9: q8_c3s2_plain(9, c, block, px, n, pixel, oc0); return;
        case 14: q8_c3s2_plain(14, c, block, px, n, pixel, oc0); return;
        case 15: q8_c3s2_plain(15, c, block, px, n, pixel, oc0); return;
        default: break;
        }
    }
    const int32_t *p = block + oc0 % CK_Q8_NR;
    const __m256i bias = _mm256_loadu_si256((const __m256i *)p), lowbyte = _mm256_set1_epi32(0xFF);
    for (int32_t i = 0; i < n; i++) {
        const __m256i sum = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_loadu_ps(px + 8 * i)), bias);
        const __m256i r = _mm256_and_si256(q8_requant_avx2(sum, p, c->out), lowbyte);
        const __m128i s16 = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
        _mm_storel_epi64((__m128i *)(c->output + (pixel + (size_t)i) * (size_t)c->out_c + oc0), _mm_packus_epi16(s16, s16));
    }
}
#endif

void ck_conv_q8_c3s2(int32_t isa, const ck_conv_geometry *g, const void *input, int32_t is_signed, int32_t input_zero_point,
                     const float *packed, const int32_t *params, const ck_q8_output *out, void *output, int32_t row_begin,
                     int32_t row_end) {
#if CK_X86
    if (!ck_conv_q8_c3s2_supported(isa, g)) return;
    const c3s2_source image = {input, is_signed ? CK_C3S2_INT8 : CK_C3S2_UINT8, input_zero_point};
    const q8_c3s2_context context = {params, out, (uint8_t *)output, g->out_c, q8_rqp_avx2_variant_number(out)};
    ck_c3s2_rows_avx2(g, &image, packed, NULL, 0.0f, 0.0f, NULL, q8_c3s2_epilogue, &context, row_begin, row_end);
#else
    (void)isa; (void)g; (void)input; (void)is_signed; (void)input_zero_point; (void)packed; (void)params; (void)out; (void)output;
    (void)row_begin; (void)row_end;
#endif
}

// ---- byte path (vpdpbusd) ----
//
// uint8 input: activations are the unsigned operand, weights s = w - 128 the signed one, and
//   sum (a - za)(w - zw) = sum a*s - za*sum(s) + d*(sum(a) - K*za), d = 128 - zw.
// int8 input: weights v = w + 128 are the unsigned operand, activations the signed one, and
//   sum (a - za)(w - zw) = sum a*v - za*sum(v) - c*(sum(a) - K*za), c = 128 + zw.
// int8 input with zw = 0 (per-channel int8 weights) and at most Q8B_FLIP_MAX products per output:
//   the activations flipped, a' = a ^ 0x80 = a + 128, are the unsigned operand and the weights the
//   signed one as they are, so sum (a - za) w = sum a'*w - (128 + za)*sum(w): no per-pixel term;
//   each tile's activations are flipped once into a buffer (q8b_flip_tile) that the tiles read
//   (three instructions per 64 bytes of a pixel, against a vpsadbw sum per pixel and an add per
//   accumulator for the per-pixel term).
// Taps outside the image read za (contributing 0); sum(a) per output pixel is taken over its taps
// (vpsadbw) while the tile's pointers are built; the per-channel terms are folded into the bias.

size_t ck_conv_q8b_packed_count(const ck_conv_geometry *g) {
    const size_t blocks = ((size_t)g->out_c + CK_Q8_NR - 1) / CK_Q8_NR;
    const size_t taps = (size_t)g->k_h * (size_t)g->k_w;
    return blocks * CK_Q8_NR * taps * (size_t)ck_q8b_padded_channels(g->in_c);
}

/// Most bytes per output pixel (taps * kq) of the flipped scheme: each tile copies its pixels' bytes
/// into a buffer of Q8_MAX_MR times this on the stack.
#define Q8B_FLIP_MAX 2048

/// Whether the int8 scheme without per-pixel terms applies (see above).
static inline int32_t q8b_flipped(const ck_conv_geometry *g, int32_t is_signed, int32_t filter_zero_point) {
    return is_signed && filter_zero_point == 0 && (int64_t)g->k_h * g->k_w * ck_q8b_padded_channels(g->in_c) <= Q8B_FLIP_MAX;
}

/// The coefficient of sum(a) per output pixel (d, or -c; see above).
static inline uint32_t q8b_row_coefficient(int32_t is_signed, int32_t filter_zero_point) {
    return is_signed ? (uint32_t)(-(128 + filter_zero_point)) : (uint32_t)(128 - filter_zero_point);
}

/// Clears the Q8_PLAIN flag of block p unless its lane j's parameters allow the plain
/// requantization: no left shift, the output zero point folded, 1 <= r <= 22, |x - zx| <= 255
/// (`zx_fits`) and `bound`, the accumulator's largest magnitude for any input, below 2^29.
static void q8_plain_check(int32_t *p, int32_t j, int32_t zx_fits, int64_t bound) {
    if (!zx_fits || p[32 + j] != 0 || p[160 + j] != 0 || p[48 + j] < 1 || p[48 + j] > 22 || bound >= (INT64_C(1) << 29))
        p[Q8_PLAIN] = 0;
}

/// Clears the Q8_PLAIN flag of output channel oc's block unless the plain requantization (see
/// q8_rqp) applies to it: no left shift, the output zero point folded, 1 <= r <= 22, and |bias| +
/// 255 * sum |w - zw| (bounding the accumulator for any input) below 2^29. The flag is set per block
/// by q8_plain_begin before the block's channels are checked.
static void q8_plain_lane(int32_t *params, int32_t oc, int32_t bias, const void *filter, int32_t is_signed,
                          int32_t filter_zero_point, int32_t input_zero_point, size_t row, uint32_t K) {
    int32_t *p = params + (size_t)(oc / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK;
    const int32_t j = oc % CK_Q8_NR;
    // |x - zx| <= 255 (the bound's factor) needs the input zero point inside the type's range, and
    // sum |w - zw| <= 255 * K the filter's: then only a long reduction needs the pass over its weights.
    uint64_t magnitude = 255 * (uint64_t)K;
    if (q8_zero_point_fits(is_signed, filter_zero_point) && (bias < 0 ? -(int64_t)bias : (int64_t)bias) + 255 * (int64_t)magnitude < (INT64_C(1) << 29)) {
        // the bound holds for any weights
    } else if (is_signed) {
        magnitude = 0;
        const int8_t *f = (const int8_t *)filter + row;
        for (uint32_t i = 0; i < K && magnitude < (UINT64_C(1) << 40); i++) {
            const int64_t w = (int64_t)f[i] - filter_zero_point;
            magnitude += (uint64_t)(w < 0 ? -w : w);
        }
    } else {
        magnitude = 0;
        const uint8_t *f = (const uint8_t *)filter + row;
        for (uint32_t i = 0; i < K && magnitude < (UINT64_C(1) << 40); i++) {
            const int64_t w = (int64_t)f[i] - filter_zero_point;
            magnitude += (uint64_t)(w < 0 ? -w : w);
        }
    }
    const int64_t bound = (bias < 0 ? -(int64_t)bias : (int64_t)bias) + 255 * (int64_t)(magnitude < (UINT64_C(1) << 40) ? magnitude : (UINT64_C(1) << 40));
    q8_plain_check(p, j, q8_zero_point_fits(is_signed, input_zero_point), bound);
}

/// Sets the Q8_PLAIN flag of every block of `channels` (cleared by q8_plain_lane where it does not apply).
static void q8_plain_begin(int32_t *params, int32_t channels) {
    for (int32_t b = 0; b < (channels + CK_Q8_NR - 1) / CK_Q8_NR; b++) params[(size_t)b * CK_Q8_PARAMS_PER_BLOCK + Q8_PLAIN] = 1;
}

void ck_q8_mark_plain(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point,
                      int32_t input_zero_point, int32_t *params) {
    const uint32_t K = (uint32_t)g->k_h * (uint32_t)g->k_w * (uint32_t)g->in_c;
    q8_plain_begin(params, g->out_c);
    for (int32_t oc = 0; oc < g->out_c; oc++) {
        const int32_t bias = params[(size_t)(oc / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK + oc % CK_Q8_NR];
        q8_plain_lane(params, oc, bias, filter, is_signed, filter_zero_point, input_zero_point, (size_t)oc * K, K);
    }
}

#if CK_X86
/// Transposes 16 rows of 16 dwords in place: r[l] becomes dword l of every row (row j in lane j).
Q8_TARGET_AVX512 Q8_INLINE void q8_transpose16x16_epi32(__m512i *r) {
    __m512i t[16];
    // t[j], t[j + 1] (j even): rows j and j + 1 interleaved, dwords {0, 1} and {2, 3} of each 128-bit lane.
    Q8_UNROLL
    for (int j = 0; j < 16; j += 2) {
        t[j] = _mm512_unpacklo_epi32(r[j], r[j + 1]);
        t[j + 1] = _mm512_unpackhi_epi32(r[j], r[j + 1]);
    }
    // r[j + c] (j = 4a): rows 4a..4a+3, in each 128-bit lane q their dword 4q + e, e = {0, 2, 1, 3}[c].
    Q8_UNROLL
    for (int j = 0; j < 16; j += 4) {
        Q8_UNROLL
        for (int h = 0; h < 2; h++) {
            r[j + h] = _mm512_unpacklo_epi64(t[j + h], t[j + 2 + h]);
            r[j + 2 + h] = _mm512_unpackhi_epi64(t[j + h], t[j + 2 + h]);
        }
    }
    // Then the 128-bit lanes: lane q of the four row quads' r[4a + c] make line 4q + e.
    Q8_UNROLL
    for (int c = 0; c < 4; c++) {
        t[c] = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x88);      // quads 0, 1: lanes 0, 2
        t[4 + c] = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xDD);  // quads 0, 1: lanes 1, 3
        t[8 + c] = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x88);
        t[12 + c] = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xDD);
    }
    static const int e[4] = {0, 2, 1, 3};
    Q8_UNROLL
    for (int c = 0; c < 4; c++) {
        r[e[c]] = _mm512_shuffle_i32x4(t[c], t[8 + c], 0x88);
        r[4 + e[c]] = _mm512_shuffle_i32x4(t[4 + c], t[12 + c], 0x88);
        r[8 + e[c]] = _mm512_shuffle_i32x4(t[c], t[8 + c], 0xDD);
        r[12 + e[c]] = _mm512_shuffle_i32x4(t[4 + c], t[12 + c], 0xDD);
    }
}

/// ck_conv_q8b_pack's operand bytes of block `b` with AVX-512: each 64-byte line of the layout (one
/// group of 4 input channels of the block's 16 output channels) holds one dword of each of the
/// block's 16 filter rows. Sixteen groups at a time are one 16 x 16 dword transpose of 64-byte row
/// loads (64 shuffles per 16 lines; with a 16-word gather per line instead, packing
/// tf2_mobilenet_v2's 1 x 1 layers took twice as long on Zen 4), the last 1-15 full groups the
/// same transpose of masked row loads. Each line is written once (no zeroing pass, no 4-byte
/// scattered writes). Rows past out_c and bytes past in_c are 0, as in the plain C version; a group
/// with bytes past in_c is composed in C. Also returns each row's sum of operand bytes, read as int8 (`signed_sum`) or
/// uint8, in `sums` (wrapping like the plain C sums).
Q8_TARGET_AVX512
static void q8b_pack_block_avx512(const ck_conv_geometry *g, const uint8_t *bytes, uint32_t flip, int32_t signed_sum,
                                  int32_t b, int8_t *packed, uint32_t *sums) {
    const int32_t taps = g->k_h * g->k_w, k = g->in_c;
    const int32_t groups = ck_q8b_padded_channels(k) / 4, full = k / 4;
    const size_t row = (size_t)taps * (size_t)k;
    const __m512i vflip = _mm512_set1_epi32((int32_t)flip), ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
    const int32_t rows = g->out_c - b * CK_Q8_NR < CK_Q8_NR ? g->out_c - b * CK_Q8_NR : CK_Q8_NR;
    const __mmask16 live = (__mmask16)((1u << rows) - 1u);
    __m512i acc = _mm512_setzero_si512();
#define Q8B_SUM(W) acc = _mm512_add_epi32(acc, _mm512_madd_epi16(signed_sum ? _mm512_maddubs_epi16(ones8, W) \
                                                                            : _mm512_maddubs_epi16(W, ones8), ones16))
    for (int32_t t = 0; t < taps; t++) {
        int8_t *dst = packed + ((size_t)b * taps + t) * (size_t)groups * CK_Q8_NR * 4;
        const uint8_t *src = bytes + (size_t)b * CK_Q8_NR * row + (size_t)t * k;
        int32_t i = 0;
        for (; i + 16 <= full; i += 16) {
            __m512i r[16];
            Q8_UNROLL
            for (int32_t j = 0; j < 16; j++)
                r[j] = j < rows ? _mm512_loadu_si512(src + (size_t)j * row + 4 * (size_t)i) : _mm512_setzero_si512();
            q8_transpose16x16_epi32(r);
            Q8_UNROLL
            for (int32_t l = 0; l < 16; l++) {
                const __m512i w = _mm512_maskz_xor_epi32(live, r[l], vflip);
                _mm512_storeu_si512(dst + (size_t)(i + l) * 64, w);
                Q8B_SUM(w);
            }
        }
        if (i < full) {
            // The last 1-15 full groups: the same transpose of masked row loads (only their dwords read).
            const int32_t n = full - i;
            const __mmask16 part = (__mmask16)((1u << n) - 1u);
            __m512i r[16];
            Q8_UNROLL
            for (int32_t j = 0; j < 16; j++)
                r[j] = j < rows ? _mm512_maskz_loadu_epi32(part, src + (size_t)j * row + 4 * (size_t)i) : _mm512_setzero_si512();
            q8_transpose16x16_epi32(r);
            for (int32_t l = 0; l < n; l++) {
                const __m512i w = _mm512_maskz_xor_epi32(live, r[l], vflip);
                _mm512_storeu_si512(dst + (size_t)(i + l) * 64, w);
                Q8B_SUM(w);
            }
            i = full;
        }
        for (; i < groups; i++) {
            uint8_t line[64] = {0};
            for (int32_t j = 0; j < rows; j++) {
                for (int32_t c = 4 * i; c < k && c < 4 * i + 4; c++) line[j * 4 + c - 4 * i] = src[(size_t)j * row + c] ^ (uint8_t)flip;
            }
            memcpy(dst + (size_t)i * 64, line, 64);
            const __m512i w = _mm512_loadu_si512(line);
            Q8B_SUM(w);
        }
    }
#undef Q8B_SUM
    _mm512_storeu_si512(sums, acc);
}
#endif

/// ck_conv_q8b_pack's operand bytes in plain C: filled row by row of the source (contiguous reads,
/// 4-byte-strided writes) over a zeroed buffer.
static void q8b_pack_operands(const ck_conv_geometry *g, const uint8_t *bytes, uint32_t flip, int8_t *packed) {
    const int32_t taps = g->k_h * g->k_w, k = g->in_c, kq = ck_q8b_padded_channels(k);
    const int32_t blocks = (g->out_c + CK_Q8_NR - 1) / CK_Q8_NR;
    memset(packed, 0, (size_t)blocks * CK_Q8_NR * taps * (size_t)kq);
    const size_t groups = (size_t)kq / 4;
    for (int32_t oc = 0; oc < g->out_c; oc++) {
        const int32_t b = oc / CK_Q8_NR, j = oc - b * CK_Q8_NR;
        for (int32_t t = 0; t < taps; t++) {
            int8_t *dst = packed + ((size_t)b * taps + t) * groups * CK_Q8_NR * 4 + (size_t)j * 4;
            const uint8_t *src = bytes + ((size_t)oc * taps + t) * k;
            int32_t i = 0;
            for (; i + 4 <= k; i += 4) {
                uint32_t word;
                memcpy(&word, src + i, 4);
                word ^= flip;
                memcpy(dst + (size_t)(i >> 2) * CK_Q8_NR * 4, &word, 4);
            }
            for (; i < k; i++) dst[(size_t)(i >> 2) * CK_Q8_NR * 4 + (i & 3)] = (int8_t)(src[i] ^ (uint8_t)flip);
        }
    }
}

/// The sum of output channel oc's operands, one branch-free loop per scheme. The byte-path operand
/// of weight w is w - 128 (uint8 models), w (int8 models with zw = 0) or w + 128 (other int8 models).
static uint32_t q8b_operand_sum(const void *filter, int32_t flipped, int32_t is_signed, size_t row, uint32_t K) {
    uint32_t sum = 0;
    if (flipped) {
        for (uint32_t i = 0; i < K; i++) sum += (uint32_t)(int32_t)((const int8_t *)filter)[row + i];
    } else if (is_signed) {
        for (uint32_t i = 0; i < K; i++) sum += (uint32_t)((int32_t)((const int8_t *)filter)[row + i] + 128);
    } else {
        for (uint32_t i = 0; i < K; i++) sum += (uint32_t)((int32_t)((const uint8_t *)filter)[row + i] - 128);
    }
    return sum;
}

void ck_conv_q8b_pack(int32_t isa, const ck_conv_geometry *g, const void *filter, int32_t is_signed,
                      int32_t filter_zero_point, int32_t input_zero_point, int8_t *packed, int32_t *params) {
    const int32_t taps = g->k_h * g->k_w, k = g->in_c;
    const int32_t flipped = q8b_flipped(g, is_signed, filter_zero_point);
    // Layout [block][tap][k/4][NR][4]; padding (channels beyond out_c, inputs beyond in_c) is 0.
    // The operand's byte is the source byte (flipped) or the source byte XOR 0x80 (w + 128 of an
    // int8 and w - 128 of a uint8 have the same low byte): four channels move as one 32-bit word.
    // The operand sum reads the operand bytes as int8 (flipped: w; uint8: w - 128) or as uint8
    // (int8 not flipped: w + 128).
    const uint32_t flip = flipped ? 0u : 0x80808080u;
    const uint8_t *bytes = (const uint8_t *)filter;
    const uint32_t za = (uint32_t)input_zero_point;
    const uint32_t coefficient = q8b_row_coefficient(is_signed, filter_zero_point);
    const uint32_t K = (uint32_t)taps * (uint32_t)k;
    const int32_t blocks = (g->out_c + CK_Q8_NR - 1) / CK_Q8_NR;
    int gathered = 0;
#if CK_X86
    gathered = isa >= CK_ISA_AVX512 && (int64_t)CK_Q8_NR * K < INT32_MAX;
#else
    (void)isa;
#endif
    if (!gathered) q8b_pack_operands(g, bytes, flip, packed);
    q8_plain_begin(params, g->out_c);
    for (int32_t b = 0; b < blocks; b++) {
        uint32_t sums[CK_Q8_NR];
#if CK_X86
        if (gathered) q8b_pack_block_avx512(g, bytes, flip, flipped || !is_signed, b, packed, sums);
#endif
        for (int32_t oc = b * CK_Q8_NR; oc < g->out_c && oc < (b + 1) * CK_Q8_NR; oc++) {
            const size_t row = (size_t)oc * K;
            const uint32_t sum = gathered ? sums[oc - b * CK_Q8_NR] : q8b_operand_sum(filter, flipped, is_signed, row, K);
            int32_t *bias = params + (size_t)b * CK_Q8_PARAMS_PER_BLOCK + oc % CK_Q8_NR;
            q8_plain_lane(params, oc, *bias, filter, is_signed, filter_zero_point, input_zero_point, row, K);
            if (flipped) *bias = (int32_t)((uint32_t)*bias - (128u + za) * sum);
            else *bias = (int32_t)((uint32_t)*bias - za * sum - coefficient * K * za);
        }
    }
}

/// Pads pixels of IN_C (1-3) channels to 4 bytes and sums them (the first layer of most models).
Q8_INLINE void q8b_convert_small(const int IN_C, const int SIGNED, const uint8_t *in, int32_t pixels, uint8_t *output,
                                 int32_t *pixel_sums) {
    for (int32_t p = 0; p < pixels; p++) {
        const uint8_t *src = in + (size_t)p * IN_C;
        uint8_t *dst = output + (size_t)p * 4;
        int32_t sum = 0;
        for (int i = 0; i < 4; i++) {
            const uint8_t v = i < IN_C ? src[i] : 0;
            dst[i] = v;
            sum += SIGNED ? (int32_t)(int8_t)v : (int32_t)v;
        }
        pixel_sums[p] = sum;
    }
}

void ck_q8b_convert_input(const void *input, int32_t is_signed, int32_t pixels, int32_t in_c, uint8_t *output,
                          int32_t *pixel_sums) {
    const int32_t kq = ck_q8b_padded_channels(in_c);
    const uint8_t *in = (const uint8_t *)input;
    switch (in_c * 2 + (is_signed ? 1 : 0)) {
    case 2: q8b_convert_small(1, 0, in, pixels, output, pixel_sums); return;
    case 3: q8b_convert_small(1, 1, in, pixels, output, pixel_sums); return;
    case 4: q8b_convert_small(2, 0, in, pixels, output, pixel_sums); return;
    case 5: q8b_convert_small(2, 1, in, pixels, output, pixel_sums); return;
    case 6: q8b_convert_small(3, 0, in, pixels, output, pixel_sums); return;
    case 7: q8b_convert_small(3, 1, in, pixels, output, pixel_sums); return;
    default: break;
    }
    for (int32_t p = 0; p < pixels; p++) {
        const uint8_t *src = in + (size_t)p * in_c;
        uint8_t *dst = output + (size_t)p * kq;
        int32_t sum = 0;
        if (is_signed) {
            for (int32_t i = 0; i < in_c; i++) sum += (int32_t)(int8_t)src[i];
        } else {
            for (int32_t i = 0; i < in_c; i++) sum += (int32_t)src[i];
        }
        memcpy(dst, src, (size_t)in_c);
        for (int32_t i = in_c; i < kq; i++) dst[i] = 0;
        pixel_sums[p] = sum;
    }
}

typedef struct {
    const uint8_t *const *ptrs;
    const uint32_t *row_terms;
    int32_t taps, kquads, nr, ldc;
    const int8_t *w;
    const int32_t *params;
    const ck_q8_output *out;
    uint8_t *c;
#if CK_X86
    q8_rqp_fn rqp; ///< the plain requantization's variant for the op's output
#endif
} q8b_tile_args;

static inline int32_t q8b_ld32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#if CK_X86
/// Adds the vpsadbw sums of `n` bytes (flipped to unsigned when SIGNED) to `sums`.
Q8_TARGET_VNNI Q8_INLINE __m512i q8b_bytes_sad(const int SIGNED, __m512i sums, const uint8_t *p, int32_t n) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int32_t i = 0; i < n; i += 64) {
        const int32_t r = n - i;
        const __mmask64 mask = r >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << r) - 1);
        __m512i v = _mm512_maskz_loadu_epi8(mask, p + i);
        if (SIGNED) v = _mm512_maskz_mov_epi8(mask, _mm512_xor_si512(v, flip));
        sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, _mm512_setzero_si512()));
    }
    return sums;
}

/// One vpdpbusd of broadcast activations `xv` and weights `wv` for MODE 0 (uint8 activations, the
/// unsigned operand), 1 (int8 activations, the signed operand) or 2 (int8 activations flipped to
/// unsigned by q8b_flip_tile, the unsigned operand; no row terms).
#define Q8B_DOT(MODE, acc, xv, wv)                                                                      \
    ((MODE) == 1 ? _mm512_dpbusd_epi32(acc, wv, xv) : _mm512_dpbusd_epi32(acc, xv, wv))

Q8_TARGET_VNNI Q8_INLINE void q8b_tile_body(const int MODE, const int MR, const int EV, const q8b_tile_args *a) {
    __m512i acc[Q8_MAX_MR];
    const __m512i bias = _mm512_loadu_si512(a->params);
    Q8_UNROLL
    for (int m = 0; m < MR; m++) acc[m] = MODE == 2 ? bias : _mm512_add_epi32(bias, _mm512_set1_epi32((int32_t)a->row_terms[m]));
    const int8_t *w = a->w;
    for (int32_t t = 0; t < a->taps; t++) {
        const uint8_t *x[Q8_MAX_MR];
        for (int m = 0; m < MR; m++) x[m] = a->ptrs[t * MR + m];
        for (int32_t p = 0; p < a->kquads; p++) {
            const __m512i wv = _mm512_loadu_si512(w);
            w += 4 * CK_Q8_NR;
            for (int m = 0; m < MR; m++) {
                const __m512i xv = _mm512_set1_epi32(q8b_ld32(x[m] + 4 * p));
                acc[m] = Q8B_DOT(MODE, acc[m], xv, wv);
            }
        }
    }
    q8b_store_block(EV, acc, MR, a->params, a->out, a->rqp, a->c, (size_t)a->ldc, a->nr);
}
/// The 256-bit vpdpbusd of Q8B_DOT, for a last block of at most 8 channels.
#define Q8B_DOT256(MODE, acc, xv, wv)                                                                   \
    ((MODE) == 1 ? _mm256_dpbusd_epi32(acc, wv, xv) : _mm256_dpbusd_epi32(acc, xv, wv))

/// NB (2 or 3) consecutive blocks of 16 channels for MR rows (the blocks' weights `block_stride`
/// bytes apart, their parameters one block apart, their outputs 16 bytes apart; only the last may be
/// partial, with `nr_last` channels): each broadcast activation feeds NB vpdpbusd. HALF: the last
/// block has at most 8 channels and its dot products run on 256-bit vectors (its first 8 lanes),
/// which take half the vpdpbusd pipe's time of 512-bit ones on CPUs that split those (Zen 4: a
/// 24-channel layer's second block); the products and sums are the same.
Q8_TARGET_VNNI Q8_INLINE void q8b_tilen_body(const int MODE, const int MR, const int NB, const int HALF, const int EV,
                                             const q8b_tile_args *a, size_t block_stride, int32_t nr_last) {
    const int NF = HALF ? NB - 1 : NB;
    __m512i acc[3][Q8_MAX_MR];
    __m256i half[Q8_MAX_MR];
    Q8_UNROLL
    for (int j = 0; j < NF; j++) {
        const __m512i bias = _mm512_loadu_si512(a->params + j * CK_Q8_PARAMS_PER_BLOCK);
        Q8_UNROLL
        for (int m = 0; m < MR; m++) acc[j][m] = MODE == 2 ? bias : _mm512_add_epi32(bias, _mm512_set1_epi32((int32_t)a->row_terms[m]));
    }
    if (HALF) {
        const __m256i bias = _mm256_loadu_si256((const __m256i *)(a->params + NF * CK_Q8_PARAMS_PER_BLOCK));
        Q8_UNROLL
        for (int m = 0; m < MR; m++) half[m] = MODE == 2 ? bias : _mm256_add_epi32(bias, _mm256_set1_epi32((int32_t)a->row_terms[m]));
    }
    const int8_t *w = a->w;
    for (int32_t t = 0; t < a->taps; t++) {
        const uint8_t *x[Q8_MAX_MR];
        for (int m = 0; m < MR; m++) x[m] = a->ptrs[t * MR + m];
        for (int32_t p = 0; p < a->kquads; p++) {
            __m512i wv[3];
            Q8_UNROLL
            for (int j = 0; j < NF; j++) wv[j] = _mm512_loadu_si512(w + j * block_stride);
            const __m256i wh = HALF ? _mm256_loadu_si256((const __m256i *)(w + NF * block_stride)) : _mm256_setzero_si256();
            w += 4 * CK_Q8_NR;
            Q8_UNROLL
            for (int m = 0; m < MR; m++) {
                const __m512i xv = _mm512_set1_epi32(q8b_ld32(x[m] + 4 * p));
                Q8_UNROLL
                for (int j = 0; j < NF; j++) acc[j][m] = Q8B_DOT(MODE, acc[j][m], xv, wv[j]);
                if (HALF) half[m] = Q8B_DOT256(MODE, half[m], _mm512_castsi512_si256(xv), wh);
            }
        }
    }
    Q8_UNROLL
    for (int j = 0; j < NF; j++)
        q8b_store_block(EV, acc[j], MR, a->params + j * CK_Q8_PARAMS_PER_BLOCK, a->out, a->rqp, a->c + j * CK_Q8_NR,
                        (size_t)a->ldc, j < NB - 1 ? CK_Q8_NR : nr_last);
    if (HALF) {
        __m512i last[Q8_MAX_MR];
        Q8_UNROLL
        for (int m = 0; m < MR; m++) last[m] = _mm512_zextsi256_si512(half[m]);
        q8b_store_block(EV, last, MR, a->params + NF * CK_Q8_PARAMS_PER_BLOCK, a->out, a->rqp, a->c + NF * CK_Q8_NR,
                        (size_t)a->ldc, nr_last);
    }
}
/// The tiles of one epilogue variant EV (a q8_rqp_rows variant inlined where a block takes the plain
/// requantization, or -1: the op's variant called out of line): [mode][rows 8, 4, 2, 1], and the
/// two- and three-block tiles of 8 rows per mode (modes 0 uint8, 1 int8, 2 flipped int8), each also
/// with a half last block (the `h` ones).
typedef void (*q8b_tile_fn)(const q8b_tile_args *);
typedef void (*q8b_tilen_fn)(const q8b_tile_args *, size_t, int32_t);
typedef struct {
    q8b_tile_fn tiles[3][4];
    q8b_tilen_fn tile2[3], tile3[3], tile2h[3], tile3h[3];
} q8b_tileset;

#define Q8B_TILE1(MODE, MR, EV, SUF)                                                                    \
    Q8_TARGET_VNNI static void q8b_tile_##MODE##_##MR##SUF(const q8b_tile_args *a) { q8b_tile_body(MODE, MR, EV, a); }
#define Q8B_TILEN(MODE, NB, EV, SUF)                                                                    \
    Q8_TARGET_VNNI static void q8b_tilen_##MODE##_##NB##SUF(const q8b_tile_args *a, size_t stride, int32_t nr) { \
        q8b_tilen_body(MODE, 8, NB, 0, EV, a, stride, nr);                                             \
    }                                                                                                  \
    Q8_TARGET_VNNI static void q8b_tilen_##MODE##_##NB##h##SUF(const q8b_tile_args *a, size_t stride, int32_t nr) { \
        q8b_tilen_body(MODE, 8, NB, 1, EV, a, stride, nr);                                             \
    }
#define Q8B_TILES_MODE(MODE, EV, SUF)                                                                   \
    Q8B_TILE1(MODE, 8, EV, SUF) Q8B_TILE1(MODE, 4, EV, SUF) Q8B_TILE1(MODE, 2, EV, SUF) Q8B_TILE1(MODE, 1, EV, SUF) \
    Q8B_TILEN(MODE, 2, EV, SUF) Q8B_TILEN(MODE, 3, EV, SUF)
#define Q8B_TILES_ROW(MODE, SUF) {q8b_tile_##MODE##_8##SUF, q8b_tile_##MODE##_4##SUF, q8b_tile_##MODE##_2##SUF, q8b_tile_##MODE##_1##SUF}
/// Inlined variants: int8 and uint8 outputs of CONV_2D (half up) whose clamp is the type's range
/// (the saturating store) or, for uint8, a lower bound of 0 or more and no upper one; the int8 set
/// has modes 1 and 2, the uint8 set mode 0 (the others are never used).
#define Q8_EV_INT8 9
#define Q8_EV_UINT8 3
Q8B_TILES_MODE(0, -1, _any) Q8B_TILES_MODE(1, -1, _any) Q8B_TILES_MODE(2, -1, _any)
Q8B_TILES_MODE(1, Q8_EV_INT8, _s) Q8B_TILES_MODE(2, Q8_EV_INT8, _s)
Q8B_TILES_MODE(0, Q8_EV_UINT8, _u)
static const q8b_tileset q8b_tileset_any = {
    {Q8B_TILES_ROW(0, _any), Q8B_TILES_ROW(1, _any), Q8B_TILES_ROW(2, _any)},
    {q8b_tilen_0_2_any, q8b_tilen_1_2_any, q8b_tilen_2_2_any},
    {q8b_tilen_0_3_any, q8b_tilen_1_3_any, q8b_tilen_2_3_any},
    {q8b_tilen_0_2h_any, q8b_tilen_1_2h_any, q8b_tilen_2_2h_any},
    {q8b_tilen_0_3h_any, q8b_tilen_1_3h_any, q8b_tilen_2_3h_any}};
static const q8b_tileset q8b_tileset_s = {
    {{0, 0, 0, 0}, Q8B_TILES_ROW(1, _s), Q8B_TILES_ROW(2, _s)},
    {0, q8b_tilen_1_2_s, q8b_tilen_2_2_s},
    {0, q8b_tilen_1_3_s, q8b_tilen_2_3_s},
    {0, q8b_tilen_1_2h_s, q8b_tilen_2_2h_s},
    {0, q8b_tilen_1_3h_s, q8b_tilen_2_3h_s}};
static const q8b_tileset q8b_tileset_u = {
    {Q8B_TILES_ROW(0, _u), {0, 0, 0, 0}, {0, 0, 0, 0}}, {q8b_tilen_0_2_u, 0, 0}, {q8b_tilen_0_3_u, 0, 0},
    {q8b_tilen_0_2h_u, 0, 0}, {q8b_tilen_0_3h_u, 0, 0}};

/// The q8_rqp_rows variant number of output `o` of the given type.
static int32_t q8_rqp_variant_number(const ck_q8_output *o, int32_t is_signed) {
    return (o->rounding == CK_Q8_ROUND_HALF_UP ? 1 : 0) | ((!is_signed || o->act_min > -128) ? 2 : 0) |
           (o->act_max < (is_signed ? 127 : 255) ? 4 : 0) | (is_signed ? 8 : 0);
}

/// The flipped scheme (taps * kq <= Q8B_FLIP_MAX): copies the kq bytes of each of the n tap
/// pointers, flipped to unsigned (x ^ 0x80), to consecutive places of `buffer` (n * kq bytes, plus
/// 64 of slack) and points the pointers there, so the tiles flip each byte once rather than once per
/// broadcast of every block.
Q8_TARGET_VNNI static void q8b_flip_tile(const uint8_t **ptrs, int32_t n, int32_t kq, uint8_t *buffer) {
    if (kq <= 32) {
        const __mmask32 mask = kq == 32 ? ~(__mmask32)0 : (((__mmask32)1 << kq) - 1);
        const __m256i flip = _mm256_set1_epi8((char)0x80);
        for (int32_t i = 0; i < n; i++) {
            uint8_t *dst = buffer + (size_t)i * kq;
            _mm256_storeu_si256((__m256i *)dst, _mm256_xor_si256(_mm256_maskz_loadu_epi8(mask, ptrs[i]), flip));
            ptrs[i] = dst;
        }
        return;
    }
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const int32_t tail = kq & 63;
    const __mmask64 mask = tail ? (((__mmask64)1 << tail) - 1) : ~(__mmask64)0;
    for (int32_t i = 0; i < n; i++) {
        uint8_t *dst = buffer + (size_t)i * kq;
        const uint8_t *src = ptrs[i];
        int32_t c = 0;
        for (; c + 64 <= kq; c += 64)
            _mm512_storeu_si512(dst + c, _mm512_xor_si512(_mm512_loadu_si512(src + c), flip));
        if (tail) _mm512_storeu_si512(dst + c, _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, src + c), flip));
        ptrs[i] = dst;
    }
}

/// q8b_flip_tile for the n pointers of a 1x1 layer at stride 1 without padding, which are
/// consecutive pixels kq bytes apart: their n * kq bytes flipped in one run of 64-byte vectors
/// (per pointer, a layer of 16 channels took one masked 32-byte vector each).
Q8_TARGET_VNNI static void q8b_flip_run(const uint8_t **ptrs, int32_t n, int32_t kq, uint8_t *buffer) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const uint8_t *src = ptrs[0];
    const int32_t bytes = n * kq;
    int32_t c = 0;
    for (; c + 64 <= bytes; c += 64) _mm512_storeu_si512(buffer + c, _mm512_xor_si512(_mm512_loadu_si512(src + c), flip));
    if (c < bytes) {
        const __mmask64 mask = ((__mmask64)1 << (bytes - c)) - 1;
        _mm512_storeu_si512(buffer + c, _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, src + c), flip));
    }
    for (int32_t i = 0; i < n; i++) ptrs[i] = buffer + (size_t)i * kq;
}

/// Row terms: the coefficient times the sum of every tap's bytes (pads included).
Q8_TARGET_VNNI static void q8b_row_terms(int32_t is_signed, const uint8_t *const *ptrs, int32_t taps, int32_t mr,
                                         int32_t kq, uint32_t coefficient, uint32_t *row_terms) {
    for (int32_t m = 0; m < mr; m++) {
        uint32_t sum = 0;
        if (kq < 16) {
            for (int32_t t = 0; t < taps; t++) {
                const uint8_t *x = ptrs[t * mr + m];
                for (int32_t i = 0; i < kq; i++) sum += is_signed ? (uint32_t)(int32_t)(int8_t)x[i] : (uint32_t)x[i];
            }
        } else {
            __m512i sums = _mm512_setzero_si512();
            for (int32_t t = 0; t < taps; t++)
                sums = is_signed ? q8b_bytes_sad(1, sums, ptrs[t * mr + m], kq) : q8b_bytes_sad(0, sums, ptrs[t * mr + m], kq);
            sum = (uint32_t)_mm512_reduce_add_epi64(sums);
            if (is_signed) sum -= 128u * (uint32_t)kq * (uint32_t)taps;
        }
        row_terms[m] = sum * coefficient;
    }
}
#endif

#if CK_X86
/// ck_conv_q8b with `flip_buffer` (Q8_MAX_MR * taps * kq + 64 bytes) for the flipped scheme.
static void q8b_conv(const ck_conv_geometry *g, const uint8_t *input, const int32_t *pixel_sums, const int8_t *packed,
                     const int32_t *params, const ck_q8_output *out, int32_t is_signed, int32_t filter_zero_point,
                     int32_t input_zero_point, uint8_t *output, int32_t pixel_begin, int32_t pixel_end,
                     int32_t block_begin, int32_t block_end, const uint8_t *pad, uint8_t *flip_buffer) {
    const int32_t taps = g->k_h * g->k_w, kq = ck_q8b_padded_channels(g->in_c);
    const uint32_t coefficient = q8b_row_coefficient(is_signed, filter_zero_point);
    const int32_t flipped = q8b_flipped(g, is_signed, filter_zero_point);
    const int32_t mode = flipped ? 2 : is_signed ? 1 : 0;
    // A tile's pixels are then one run of the input.
    const int32_t pointwise = q8_reads_own_pixel(g);
    const int32_t variant = q8_rqp_variant_number(out, is_signed);
    const q8b_tileset *set = variant == Q8_EV_INT8 && mode != 0   ? &q8b_tileset_s
                             : variant == Q8_EV_UINT8 && mode == 0 ? &q8b_tileset_u
                                                                   : &q8b_tileset_any;
    const q8b_tile_fn *tiles = set->tiles[mode];
    const int32_t sizes[4] = {8, 4, 2, 1};
    const size_t block_stride = (size_t)CK_Q8_NR * (size_t)taps * (size_t)kq;
    const uint8_t *ptrs[Q8_MAX_TAPS * Q8_MAX_MR];
    uint32_t row_terms[Q8_MAX_MR];
    int32_t tap_offsets[Q8_MAX_TAPS];
    q8_tap_offsets(g, tap_offsets);
    q8b_tile_args a;
    a.ptrs = ptrs;
    a.row_terms = row_terms;
    a.taps = taps;
    a.kquads = kq / 4;
    a.ldc = g->out_c;
    a.out = out;
    a.rqp = q8_rqp_variant(out, is_signed);
    uint8_t *dst = (uint8_t *)output;
    int32_t p = pixel_begin;
    while (p < pixel_end) {
        const int32_t remaining = pixel_end - p;
        int32_t kind = 0;
        while (kind < 3 && sizes[kind] > remaining) kind++;
        const int32_t mr = sizes[kind];
        if (flipped) {
            q8_tile_pointers(g, tap_offsets, input, (size_t)kq, pad, p, mr, (const void **)ptrs, NULL, 0, NULL);
            if (pointwise) q8b_flip_run(ptrs, mr, kq, flip_buffer);
            else q8b_flip_tile(ptrs, taps * mr, kq, flip_buffer);
        } else if (pixel_sums) {
            q8_tile_pointers(g, tap_offsets, input, (size_t)kq, pad, p, mr, (const void **)ptrs, pixel_sums,
                             (uint32_t)g->in_c * (uint32_t)input_zero_point, row_terms);
            for (int32_t m = 0; m < mr; m++) row_terms[m] *= coefficient;
        } else {
            q8_tile_pointers(g, tap_offsets, input, (size_t)kq, pad, p, mr, (const void **)ptrs, NULL, 0, NULL);
            q8b_row_terms(is_signed, ptrs, taps, mr, kq, coefficient, row_terms);
        }
        for (int32_t b = block_begin; b < block_end; b++) {
            a.nr = q8_min(CK_Q8_NR, g->out_c - b * CK_Q8_NR);
            a.w = packed + (size_t)b * block_stride;
            a.params = params + (size_t)b * CK_Q8_PARAMS_PER_BLOCK;
            a.c = dst + (size_t)p * g->out_c + (size_t)b * CK_Q8_NR;
            if (mr == 8 && b + 1 < block_end) {
                // Two or three full-height blocks at once (only the last block of the layer is partial).
                const int32_t nb = b + 2 < block_end ? 3 : 2;
                const int32_t nr_last = q8_min(CK_Q8_NR, g->out_c - (b + nb - 1) * CK_Q8_NR);
                const int32_t half = nr_last <= CK_Q8_NR / 2;
                if (nb == 3) {
                    (half ? set->tile3h : set->tile3)[mode](&a, block_stride, nr_last);
                } else {
                    (half ? set->tile2h : set->tile2)[mode](&a, block_stride, nr_last);
                }
                b += nb - 1;
                continue;
            }
            tiles[kind](&a);
        }
        p += mr;
    }
}

/// q8b_conv with a flip buffer for up to Q8B_FLIP_MAX bytes per pixel (a separate frame: the small
/// one of most layers keeps its locals close together, measured 3-5% faster).
__attribute__((noinline)) static void q8b_conv_wide(const ck_conv_geometry *g, const uint8_t *input, const int32_t *pixel_sums,
                                                    const int8_t *packed, const int32_t *params, const ck_q8_output *out,
                                                    int32_t is_signed, int32_t filter_zero_point, int32_t input_zero_point,
                                                    uint8_t *output, int32_t pixel_begin, int32_t pixel_end,
                                                    int32_t block_begin, int32_t block_end, const uint8_t *pad) {
    uint8_t flip_buffer[Q8_MAX_MR * Q8B_FLIP_MAX + 64];
    q8b_conv(g, input, pixel_sums, packed, params, out, is_signed, filter_zero_point, input_zero_point, output, pixel_begin,
             pixel_end, block_begin, block_end, pad, flip_buffer);
}
#endif

void ck_conv_q8b(const ck_conv_geometry *g, const uint8_t *input, const int32_t *pixel_sums, const int8_t *packed,
                 const int32_t *params, const ck_q8_output *out, int32_t is_signed, int32_t filter_zero_point,
                 int32_t input_zero_point, void *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                 int32_t block_end, const uint8_t *pad) {
#if CK_X86
    const int32_t taps = g->k_h * g->k_w, kq = ck_q8b_padded_channels(g->in_c);
    if (taps <= 0 || taps > Q8_MAX_TAPS) return;
    if (q8b_flipped(g, is_signed, filter_zero_point) && taps * kq > 32) {
        q8b_conv_wide(g, input, pixel_sums, packed, params, out, is_signed, filter_zero_point, input_zero_point,
                      (uint8_t *)output, pixel_begin, pixel_end, block_begin, block_end, pad);
        return;
    }
    uint8_t flip_buffer[Q8_MAX_MR * 32 + 64];
    q8b_conv(g, input, pixel_sums, packed, params, out, is_signed, filter_zero_point, input_zero_point, (uint8_t *)output,
             pixel_begin, pixel_end, block_begin, block_end, pad, flip_buffer);
#else
    (void)g; (void)input; (void)pixel_sums; (void)packed; (void)params; (void)out; (void)is_signed; (void)filter_zero_point;
    (void)input_zero_point; (void)output; (void)pixel_begin; (void)pixel_end; (void)block_begin; (void)block_end; (void)pad;
#endif
}

// ---- byte path for few input channels: one reduction per filter row ----
//
// With dilation 1 along x, the k_w taps of one filter row read k_w * in_c contiguous bytes of the
// input (NHWC), so a filter row is one reduction of L = k_w * in_c values in ceil(L / 4) vpdpbusd
// quads instead of k_w taps of in_c channels each padded to 4 (the first layer of most models:
// 3x3 taps of 3 channels, 9 quads of 3 useful bytes -> 3 rows of 3 quads, 27 useful bytes of 36
// either way, but the per-pixel tap pointers, pixel sums and border checks go away). The input is
// copied once per run into a padded image (rows and columns of the padding hold the input zero
// point, plus slack), flipped to unsigned (x ^ 0x80 = x + 128 for int8), so every output pixel reads
// k_h rows of the padded image at a fixed offset and the weights w - zw are the signed operand:
//   sum (a - za)(w - zw) = sum a'(w - zw) - za' * sum(w - zw), a' = a (+ 128 for int8),
// the second term folded into the bias. Quads read up to 3 bytes past a row's L (the next pixel's,
// or the slack) against zero weights. That needs every w - zw to fit int8; otherwise (mode 1) the
// weights are s = w - c0 (c0 = 128 for uint8, 0 for int8), which fit, and
//   sum a'(w - zw) = sum a' s + d * sum a', d = c0 - zw (which must fit int8),
// the per-pixel term from one more vpdpbusd per quad against a vector of d at the row's L bytes.
// Packed: a 64-byte header (int32 mode), the blocks' weights [block][k_h][quads][16][4], then
// (mode 1) the quads' d vectors.

/// Quads per filter row.
static inline int32_t q8r_quads(const ck_conv_geometry *g) { return (g->k_w * g->in_c + 3) / 4; }

/// Columns and rows of the padded image.
static inline int32_t q8r_cols(const ck_conv_geometry *g) {
    const int32_t need = (g->out_w - 1) * g->stride_w + g->k_w;
    return g->pad_left + g->in_w > need ? g->pad_left + g->in_w : need;
}

int32_t ck_conv_q8r_image_rows(const ck_conv_geometry *g) {
    const int32_t need = (g->out_h - 1) * g->stride_h + (g->k_h - 1) * g->dil_h + 1;
    return g->pad_top + g->in_h > need ? g->pad_top + g->in_h : need;
}

/// Bytes after the last row: the last quad's over-read.
#define Q8R_SLACK 64

size_t ck_conv_q8r_image_bytes(const ck_conv_geometry *g) {
    return (size_t)ck_conv_q8r_image_rows(g) * (size_t)q8r_cols(g) * (size_t)g->in_c + Q8R_SLACK;
}

/// The row variant's mode for the filter: 0 (every w - zw fits int8), 1 (the per-pixel term; see
/// above), or -1 (neither).
static int32_t q8r_mode(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point) {
    const size_t n = (size_t)g->out_c * (size_t)g->k_h * (size_t)g->k_w * (size_t)g->in_c;
    for (size_t i = 0; i < n; i++) {
        const int32_t v = (is_signed ? (int32_t)((const int8_t *)filter)[i] : (int32_t)((const uint8_t *)filter)[i]) - filter_zero_point;
        if (v < -128 || v > 127) {
            const int32_t d = (is_signed ? 0 : 128) - filter_zero_point;
            return d >= -128 && d <= 127 ? 1 : -1;
        }
    }
    return 0;
}

int32_t ck_conv_q8r_fits(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point) {
    if (g->dil_w != 1 || g->in_c <= 0 || g->in_c % 4 == 0 || g->k_w * g->in_c > 32 || g->k_h <= 0 || g->k_h > 16 ||
        g->out_h <= 0 || g->out_w <= 0 || g->out_c <= 0 || g->pad_top < 0 || g->pad_left < 0)
        return 0;
    return q8r_mode(g, filter, is_signed, filter_zero_point) >= 0;
}

/// Bytes of the packed header and of one block's weights.
#define Q8R_HEADER 64
static inline size_t q8r_block_bytes(const ck_conv_geometry *g) { return (size_t)g->k_h * (size_t)q8r_quads(g) * CK_Q8_NR * 4; }

size_t ck_conv_q8r_packed_count(const ck_conv_geometry *g) {
    const size_t blocks = ((size_t)g->out_c + CK_Q8_NR - 1) / CK_Q8_NR;
    return Q8R_HEADER + blocks * q8r_block_bytes(g) + (size_t)q8r_quads(g) * CK_Q8_NR * 4;
}

void ck_conv_q8r_pack(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point,
                      int32_t input_zero_point, int8_t *packed, int32_t *params) {
    const int32_t Q = q8r_quads(g), L = g->k_w * g->in_c, blocks = (g->out_c + CK_Q8_NR - 1) / CK_Q8_NR;
    const size_t row_len = (size_t)g->k_w * g->in_c, K = (size_t)g->k_h * row_len;
    memset(packed, 0, ck_conv_q8r_packed_count(g));
    const int32_t mode = q8r_mode(g, filter, is_signed, filter_zero_point) == 1;
    const int32_t c0 = mode ? (is_signed ? 0 : 128) : filter_zero_point; // s = w - c0
    memcpy(packed, &mode, sizeof mode);
    if (mode) {
        int8_t *dv = packed + Q8R_HEADER + (size_t)blocks * q8r_block_bytes(g);
        for (int32_t i = 0; i < L; i++)
            for (int32_t j = 0; j < CK_Q8_NR; j++) dv[(size_t)(i >> 2) * CK_Q8_NR * 4 + (size_t)j * 4 + (i & 3)] = (int8_t)(c0 - filter_zero_point);
    }
    const uint32_t za = (uint32_t)input_zero_point + (is_signed ? 128u : 0u);
    q8_plain_begin(params, g->out_c);
    for (int32_t oc = 0; oc < g->out_c; oc++) {
        const int32_t b = oc / CK_Q8_NR, j = oc % CK_Q8_NR;
        uint32_t sum = 0;
        for (int32_t ky = 0; ky < g->k_h; ky++) {
            int8_t *dst = packed + Q8R_HEADER + (size_t)b * q8r_block_bytes(g) + (size_t)ky * Q * CK_Q8_NR * 4 + (size_t)j * 4;
            for (int32_t i = 0; i < L; i++) {
                const size_t at = (size_t)oc * K + (size_t)ky * row_len + (size_t)i;
                const int32_t w = is_signed ? (int32_t)((const int8_t *)filter)[at] : (int32_t)((const uint8_t *)filter)[at];
                dst[(size_t)(i >> 2) * CK_Q8_NR * 4 + (i & 3)] = (int8_t)(w - c0);
                sum += (uint32_t)(w - filter_zero_point);
            }
        }
        int32_t *bias = params + (size_t)b * CK_Q8_PARAMS_PER_BLOCK + j;
        q8_plain_lane(params, oc, *bias, filter, is_signed, filter_zero_point, input_zero_point, (size_t)oc * K, (uint32_t)K);
        *bias = (int32_t)((uint32_t)*bias - za * sum);
    }
    (void)blocks;
}

void ck_conv_q8r_convert_input(const ck_conv_geometry *g, const void *input, int32_t is_signed, int32_t input_zero_point,
                               int32_t row_begin, int32_t row_end, uint8_t *image) {
    const int32_t C = g->in_c, cols = q8r_cols(g), rows = ck_conv_q8r_image_rows(g);
    const size_t stride = (size_t)cols * C;
    const uint8_t flip = is_signed ? 0x80 : 0;
    const uint8_t zp = (uint8_t)((uint32_t)input_zero_point ^ flip);
    const size_t left = (size_t)g->pad_left * C, inner = (size_t)g->in_w * C;
    for (int32_t r = row_begin; r < row_end; r++) {
        uint8_t *dst = image + (size_t)r * stride;
        const int32_t iy = r - g->pad_top;
        if (iy < 0 || iy >= g->in_h) {
            memset(dst, zp, stride);
            continue;
        }
        memset(dst, zp, left);
        const uint8_t *src = (const uint8_t *)input + (size_t)iy * inner;
        if (flip) {
            uint8_t *out = dst + left;
            for (size_t i = 0; i < inner; i++) out[i] = src[i] ^ 0x80; // vectorized by the compiler
        } else {
            memcpy(dst + left, src, inner);
        }
        memset(dst + left + inner, zp, stride - left - inner);
    }
    if (row_end >= rows) memset(image + (size_t)rows * stride, zp, Q8R_SLACK);
}

typedef struct {
    const uint8_t *base[Q8_MAX_MR]; ///< each output pixel's window origin in the padded image
    size_t row_stride;              ///< bytes between the filter rows' inputs (dil_h rows)
    int32_t k_h, quads;
    const int8_t *w;
    size_t block_stride;
    const int8_t *dv; ///< mode 1: the quads' d vectors (see above)
    const int32_t *params;
    const ck_q8_output *out;
    uint8_t *c;
    int32_t ldc, nr_last;
#if CK_X86
    q8_rqp_fn rqp;
#endif
} q8r_tile_args;

#if CK_X86
/// MR output pixels x NB blocks of 16 channels (the last one with nr_last channels).
Q8_TARGET_VNNI Q8_INLINE void q8r_tile_body(const int MODE, const int MR, const int NB, const int EV, const q8r_tile_args *a) {
    __m512i acc[3][Q8_MAX_MR], terms[Q8_MAX_MR];
    Q8_UNROLL
    for (int j = 0; j < NB; j++) {
        const __m512i bias = _mm512_loadu_si512(a->params + j * CK_Q8_PARAMS_PER_BLOCK);
        Q8_UNROLL
        for (int m = 0; m < MR; m++) acc[j][m] = bias;
    }
    Q8_UNROLL
    for (int m = 0; m < MR; m++) terms[m] = _mm512_setzero_si512();
    const int8_t *w = a->w;
    for (int32_t ky = 0; ky < a->k_h; ky++) {
        const size_t off = (size_t)ky * a->row_stride;
        for (int32_t q = 0; q < a->quads; q++) {
            __m512i wv[3];
            Q8_UNROLL
            for (int j = 0; j < NB; j++) wv[j] = _mm512_loadu_si512(w + j * a->block_stride);
            w += 4 * CK_Q8_NR;
            const __m512i dv = MODE ? _mm512_loadu_si512(a->dv + (size_t)q * CK_Q8_NR * 4) : _mm512_setzero_si512();
            Q8_UNROLL
            for (int m = 0; m < MR; m++) {
                const __m512i xv = _mm512_set1_epi32(q8b_ld32(a->base[m] + off + 4 * q));
                Q8_UNROLL
                for (int j = 0; j < NB; j++) acc[j][m] = _mm512_dpbusd_epi32(acc[j][m], xv, wv[j]);
                if (MODE) terms[m] = _mm512_dpbusd_epi32(terms[m], xv, dv);
            }
        }
    }
    if (MODE) {
        Q8_UNROLL
        for (int j = 0; j < NB; j++) {
            Q8_UNROLL
            for (int m = 0; m < MR; m++) acc[j][m] = _mm512_add_epi32(acc[j][m], terms[m]);
        }
    }
    Q8_UNROLL
    for (int j = 0; j < NB; j++)
        q8b_store_block(EV, acc[j], MR, a->params + j * CK_Q8_PARAMS_PER_BLOCK, a->out, a->rqp, a->c + j * CK_Q8_NR,
                        (size_t)a->ldc, j < NB - 1 ? CK_Q8_NR : a->nr_last);
}

typedef void (*q8r_tile_fn)(const q8r_tile_args *);
#define Q8R_TILES(MODE, MR, EV, SUF)                                                                   \
    Q8_TARGET_VNNI static void q8r_tile_##MODE##_##MR##_1##SUF(const q8r_tile_args *a) { q8r_tile_body(MODE, MR, 1, EV, a); } \
    Q8_TARGET_VNNI static void q8r_tile_##MODE##_##MR##_2##SUF(const q8r_tile_args *a) { q8r_tile_body(MODE, MR, 2, EV, a); } \
    Q8_TARGET_VNNI static void q8r_tile_##MODE##_##MR##_3##SUF(const q8r_tile_args *a) { q8r_tile_body(MODE, MR, 3, EV, a); }
/// [rows 8, 4, 2, 1][blocks 1, 2, 3] of one mode and epilogue variant (see q8b_tileset); mode 1 keeps
/// 8 accumulators of per-pixel terms, so its 8-row tiles take at most 2 blocks.
#define Q8R_TILESET(MODE, EV, SUF)                                                                     \
    Q8R_TILES(MODE, 8, EV, SUF) Q8R_TILES(MODE, 4, EV, SUF) Q8R_TILES(MODE, 2, EV, SUF) Q8R_TILES(MODE, 1, EV, SUF) \
    static const q8r_tile_fn q8r_tiles_##MODE##SUF[4][3] = {                                           \
        {q8r_tile_##MODE##_8_1##SUF, q8r_tile_##MODE##_8_2##SUF, q8r_tile_##MODE##_8_3##SUF},         \
        {q8r_tile_##MODE##_4_1##SUF, q8r_tile_##MODE##_4_2##SUF, q8r_tile_##MODE##_4_3##SUF},         \
        {q8r_tile_##MODE##_2_1##SUF, q8r_tile_##MODE##_2_2##SUF, q8r_tile_##MODE##_2_3##SUF},         \
        {q8r_tile_##MODE##_1_1##SUF, q8r_tile_##MODE##_1_2##SUF, q8r_tile_##MODE##_1_3##SUF}};
Q8R_TILESET(0, -1, _any)
Q8R_TILESET(0, Q8_EV_INT8, _s)
Q8R_TILESET(0, Q8_EV_UINT8, _u)
Q8R_TILESET(1, -1, _any)
Q8R_TILESET(1, Q8_EV_UINT8, _u)
#endif

void ck_conv_q8r(const ck_conv_geometry *g, const uint8_t *image, const int8_t *packed, const int32_t *params,
                 const ck_q8_output *out, int32_t is_signed, void *output, int32_t pixel_begin, int32_t pixel_end,
                 int32_t block_begin, int32_t block_end) {
#if CK_X86
    if (g->out_w <= 0 || pixel_begin >= pixel_end) return;
    const int32_t variant = q8_rqp_variant_number(out, is_signed);
    int32_t mode;
    memcpy(&mode, packed, sizeof mode);
    const q8r_tile_fn(*tiles)[3] = mode ? (variant == Q8_EV_UINT8 ? q8r_tiles_1_u : q8r_tiles_1_any)
                                        : (variant == Q8_EV_INT8 ? q8r_tiles_0_s : variant == Q8_EV_UINT8 ? q8r_tiles_0_u : q8r_tiles_0_any);
    const int32_t max_nb = mode ? 2 : 3;
    const int32_t sizes[4] = {8, 4, 2, 1};
    const int32_t C = g->in_c, cols = q8r_cols(g);
    q8r_tile_args a;
    a.row_stride = (size_t)g->dil_h * (size_t)cols * (size_t)C;
    a.k_h = g->k_h;
    a.quads = q8r_quads(g);
    a.block_stride = q8r_block_bytes(g);
    a.dv = packed + Q8R_HEADER + (size_t)((g->out_c + CK_Q8_NR - 1) / CK_Q8_NR) * a.block_stride;
    a.out = out;
    a.ldc = g->out_c;
    a.rqp = q8_rqp_variant(out, is_signed);
    uint8_t *dst = (uint8_t *)output;
    int32_t p = pixel_begin;
    // The next pixel's row and column, and its window's origin in the padded image.
    int32_t oy = p / g->out_w, ox = p - oy * g->out_w;
    const size_t row_step = (size_t)g->stride_h * cols * C, col_step = (size_t)g->stride_w * C;
    const uint8_t *row_base = image + (size_t)oy * row_step;
    while (p < pixel_end) {
        const int32_t remaining = pixel_end - p;
        int32_t kind = 0;
        while (kind < 3 && sizes[kind] > remaining) kind++;
        const int32_t mr = sizes[kind];
        for (int32_t m = 0; m < mr; m++) {
            a.base[m] = row_base + (size_t)ox * col_step;
            if (++ox == g->out_w) {
                ox = 0;
                row_base += row_step;
            }
        }
        for (int32_t b = block_begin; b < block_end;) {
            const int32_t nb = block_end - b >= max_nb ? max_nb : block_end - b;
            a.nr_last = q8_min(CK_Q8_NR, g->out_c - (b + nb - 1) * CK_Q8_NR);
            a.w = packed + Q8R_HEADER + (size_t)b * a.block_stride;
            a.params = params + (size_t)b * CK_Q8_PARAMS_PER_BLOCK;
            a.c = dst + (size_t)p * g->out_c + (size_t)b * CK_Q8_NR;
            tiles[kind][nb - 1](&a);
            b += nb;
        }
        p += mr;
    }
#else
    (void)g; (void)image; (void)packed; (void)params; (void)out; (void)is_signed; (void)output; (void)pixel_begin; (void)pixel_end;
    (void)block_begin; (void)block_end;
#endif
}

// ---- depthwise convolution, depth multiplier 1 ----

/// int32 values of the 3x3 variant's header (whether it is used, its mode and layout) before its
/// blocks (see q8_dw3_rows).
#define Q8_DW3_HEADER 16
#define Q8_DW3_VARIANT 0
#define Q8_DW3_MODE 1
#define Q8_DW3_LAYOUT 2
/// Whether the blocks after the groups of 64 channels run the per-tap AVX-512 kernel (one output
/// row per pass: faster there than 16-channel quads; its weights and bias are prepared as well).
#define Q8_DW3_REST 3
/// Weight vectors of 16 channels x 4 bytes per block of the 3x3 variant: A and B of each filter
/// column, then DA and DB; then its requantization record (Q8_DW3_R_*).
#define Q8_DW3_VECS 8
#define Q8_DW3_REC 256
#define Q8_DW3_BLOCK (Q8_DW3_VECS * 16 + Q8_DW3_REC)
static int32_t q8_dw3_block_count(int32_t C);

/// int32 values of the per-tap layout every variant but the 3x3 one reads.
static size_t q8_dw_taps_count(const ck_conv_geometry *g) {
    const size_t cp = ((size_t)g->in_c + CK_Q8_NR - 1) / CK_Q8_NR * CK_Q8_NR;
    return (size_t)g->k_h * (size_t)g->k_w * cp;
}

size_t ck_dwconv_q8_packed_count(const ck_conv_geometry *g) {
    return q8_dw_taps_count(g) + Q8_DW3_HEADER + (size_t)q8_dw3_block_count(g->in_c) * Q8_DW3_BLOCK;
}

void ck_dwconv_q8_pack(const ck_conv_geometry *g, const void *filter, int32_t is_signed,
                       int32_t filter_zero_point, int32_t *packed) {
    const int32_t taps = g->k_h * g->k_w, C = g->in_c;
    const int32_t cp = (C + CK_Q8_NR - 1) / CK_Q8_NR * CK_Q8_NR;
    const uint8_t *fu = (const uint8_t *)filter;
    const int8_t *fs = (const int8_t *)filter;
    for (int32_t t = 0; t < taps; t++) {
        for (int32_t c = 0; c < cp; c++) {
            int32_t v = 0;
            if (c < C) {
                const size_t at = (size_t)t * C + c;
                v = (is_signed ? (int32_t)fs[at] : (int32_t)fu[at]) - filter_zero_point;
            }
            packed[(size_t)t * cp + c] = v;
        }
    }
    // No 3x3 variant until ck_dwconv_q8_prepare picks it.
    const size_t taps_count = q8_dw_taps_count(g);
    memset(packed + taps_count, 0, (ck_dwconv_q8_packed_count(g) - taps_count) * sizeof(int32_t));
}

/// One output pixel's valid taps: element offsets into the image and into the packed weights.
typedef struct {
    const ck_conv_geometry *g;
    const uint8_t *input;
    int32_t input_zero_point;
    const int32_t *packed;
    const int32_t *params;
    const ck_q8_output *out;
    int32_t taps;
    const int32_t *in_off, *w_off;
    /// AVX2 and AVX-512 paths (ck_dwconv_q8_prepare): every tap's input pixel (or the zero-point pad) and
    /// the bytes between the pixels of consecutive outputs (0 for the pad).
    uintptr_t tap_base;
    const uintptr_t *tap_addr;
    const int32_t *tap_steps;
    int32_t cp;
    uint8_t *dst;
    /// Consecutive output pixels with the same valid taps (1, or 4 for the AVX2 and AVX-512 variants), and
    /// the input elements between them.
    int32_t pixels, pixel_step;
    /// The first channel the AVX-512 variants compute (a multiple of 64; the 3x3 variant has done
    /// the ones before).
    int32_t c_begin;
    /// The AVX2 variants' plain requantization for blocks flagged Q8_PLAIN (NULL: never), and its
    /// variant number (q8_rqp_avx2_variant_number).
    q8_rqp_avx2_fn rqp;
    int32_t rqv;
    /// The stride along x (1 or 2) when the filter's rows are 3 taps at dilation 1 along x (taps
    /// in row order: tap 3r + k is column k of row r, the pixels `pixel_step` apart), else 0.
    int32_t rows3;
} q8_dw_args;

Q8_INLINE void q8_dw_portable_body(const int SIGNED, const q8_dw_args *a) {
    const int32_t C = a->g->in_c;
    uint32_t acc[CK_Q8_NR * 4];
    for (int32_t c0 = 0; c0 < C; c0 += CK_Q8_NR * 4) {
        const int32_t n = q8_min(CK_Q8_NR * 4, C - c0);
        for (int32_t j = 0; j < n; j++) {
            const int32_t c = c0 + j;
            acc[j] = (uint32_t)a->params[(size_t)(c / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK + c % CK_Q8_NR];
        }
        for (int32_t t = 0; t < a->taps; t++) {
            const int32_t *w = a->packed + a->w_off[t] + c0;
            if (SIGNED) {
                const int8_t *x = (const int8_t *)a->input + a->in_off[t] + c0;
                for (int32_t j = 0; j < n; j++) acc[j] += (uint32_t)(((int32_t)x[j] - a->input_zero_point) * w[j]);
            } else {
                const uint8_t *x = a->input + a->in_off[t] + c0;
                for (int32_t j = 0; j < n; j++) acc[j] += (uint32_t)(((int32_t)x[j] - a->input_zero_point) * w[j]);
            }
        }
        for (int32_t j = 0; j < n; j++) {
            const int32_t c = c0 + j;
            a->dst[c] = (uint8_t)q8_requant_scalar((int32_t)acc[j], a->params + (size_t)(c / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK,
                                                   c % CK_Q8_NR, a->out);
        }
    }
}

static void q8_dw_portable_u(const q8_dw_args *a) { q8_dw_portable_body(0, a); }
static void q8_dw_portable_s(const q8_dw_args *a) { q8_dw_portable_body(1, a); }

#if CK_X86
// AVX2, on weights prepared by ck_dwconv_q8_prepare like the AVX-512 variants' (each weight minus
// its zero point in the low int16 of an int32 lane, the input zero point's share in the bias, taps
// outside the image reading the pad): 8 channels per vector, vpmaddwd of the zero- (uint8) or sign-
// (int8) extended raw input against the weights, NV vectors (one 16-channel parameter block) for PX
// pixels (4 where they share their taps: each weight vector loaded once for the four).
Q8_TARGET_AVX2 Q8_INLINE __m256i q8_dw_load8_avx2(const int SIGNED, const int PARTIAL, int32_t n, const uint8_t *x) {
    __m128i v;
    if (PARTIAL) {
        uint8_t tmp[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        memcpy(tmp, x, (size_t)n);
        v = _mm_loadl_epi64((const __m128i *)tmp);
    } else {
        v = _mm_loadl_epi64((const __m128i *)x);
    }
    return SIGNED ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

/// The taps of filter rows of 3 taps along x at stride S (1 or 2) and dilation 1 for 4 pixels
/// (q8_dw_avx2_group's accumulators acc[4][NV]): the pixels read 3 * S + 3 input columns of each
/// row, each loaded and widened once for the taps that read it (column c is tap c - S q of pixel
/// q), against 12 loads per row tap by tap. Returns the taps done (all of them).
Q8_TARGET_AVX2 Q8_INLINE int32_t q8_dw_avx2_rows3(const int SIGNED, const int NV, const int TAIL, const int S,
                                                  const q8_dw_args *a, int32_t c0, int32_t last, __m256i (*acc)[2]) {
    int32_t t = 0;
    for (; t + 3 <= a->taps; t += 3) {
        const uint8_t *row = (const uint8_t *)(a->tap_base + a->tap_addr[t]) + c0;
        // (the pixel step over S: one column, or 0 where the row is the pad)
        const size_t column = (size_t)a->tap_steps[t] / S;
        const int32_t *w = a->packed + (size_t)t * (size_t)a->cp + c0;
        Q8_UNROLL
        for (int j = 0; j < NV; j++) {
            const __m256i wk[3] = {_mm256_loadu_si256((const __m256i *)(w + 8 * j)),
                                   _mm256_loadu_si256((const __m256i *)(w + a->cp + 8 * j)),
                                   _mm256_loadu_si256((const __m256i *)(w + 2 * a->cp + 8 * j))};
            Q8_UNROLL
            for (int col = 0; col < 3 * S + 3; col++) {
                const __m256i xv = q8_dw_load8_avx2(SIGNED, TAIL && j == NV - 1, last, row + (size_t)col * column + 8 * j);
                Q8_UNROLL
                for (int q = 0; q < 4; q++) {
                    const int k = col - S * q;
                    if (k >= 0 && k < 3) acc[q][j] = _mm256_add_epi32(acc[q][j], _mm256_madd_epi16(xv, wk[k]));
                }
            }
        }
    }
    return t;
}

Q8_TARGET_AVX2 Q8_INLINE void q8_dw_avx2_group(const int SIGNED, const int NV, const int TAIL, const int PX, const q8_dw_args *a,
                                               int32_t c0) {
    const int32_t C = a->g->in_c;
    const int32_t *p = a->params + (size_t)(c0 / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK;
    const int32_t last = C - c0 - 8 * (NV - 1);  // channels of the last vector (TAIL: fewer than 8)
    __m256i acc[4][2];
    Q8_UNROLL
    for (int j = 0; j < NV; j++) {
        const __m256i bias = _mm256_loadu_si256((const __m256i *)(p + 8 * j));
        Q8_UNROLL
        for (int q = 0; q < PX; q++) acc[q][j] = bias;
    }
    int32_t t = 0;
    if (PX == 4 && a->rows3 == 1) t = q8_dw_avx2_rows3(SIGNED, NV, TAIL, 1, a, c0, last, acc);
    else if (PX == 4 && a->rows3 == 2) t = q8_dw_avx2_rows3(SIGNED, NV, TAIL, 2, a, c0, last, acc);
    for (; t < a->taps; t++) {
        const uint8_t *x = (const uint8_t *)(a->tap_base + a->tap_addr[t]) + c0;
        const size_t step = (size_t)a->tap_steps[t];
        const int32_t *w = a->packed + (size_t)t * (size_t)a->cp + c0;
        Q8_UNROLL
        for (int j = 0; j < NV; j++) {
            const __m256i wv = _mm256_loadu_si256((const __m256i *)(w + 8 * j));
            Q8_UNROLL
            for (int q = 0; q < PX; q++) {
                const __m256i xv = q8_dw_load8_avx2(SIGNED, TAIL && j == NV - 1, last, x + (size_t)q * step + 8 * j);
                acc[q][j] = _mm256_add_epi32(acc[q][j], _mm256_madd_epi16(xv, wv));
            }
        }
    }
    if (a->rqp && p[Q8_PLAIN]) {
        // (with NV = 1 the second half is computed on copies of the first and not stored)
        __m256i acc0[4], acc1[4];
        Q8_UNROLL
        for (int q = 0; q < PX; q++) { acc0[q] = acc[q][0]; acc1[q] = acc[q][NV - 1]; }
        const int32_t n = 8 * (NV - 1) + (TAIL ? last : 8);
        // Full groups inline the variants of an output of the input's type without a clamp
        // inside its range (as the GEMM tile; constants read after the loop).
        if (!TAIL && (a->rqv & ~1) == (SIGNED ? 8 : 0)) {
            const int32_t *pp = p;
            __asm__("" : "+r"(pp) : "x"(acc0[0]), "x"(acc1[0]));
            if (a->rqv & 1) q8_rqp_rows_avx2_body(SIGNED ? 9 : 1, acc0, acc1, PX, pp, a->out, a->dst + c0, (size_t)C, n);
            else q8_rqp_rows_avx2_body(SIGNED ? 8 : 0, acc0, acc1, PX, pp, a->out, a->dst + c0, (size_t)C, n);
            return;
        }
        a->rqp(acc0, acc1, PX, p, a->out, a->dst + c0, (size_t)C, n);
        return;
    }
    const __m256i lowbyte = _mm256_set1_epi32(0xFF);
    Q8_UNROLL
    for (int j = 0; j < NV; j++) {
        Q8_UNROLL
        for (int q = 0; q < PX; q++) {
            const __m256i r = _mm256_and_si256(q8_requant_avx2(acc[q][j], p + 8 * j, a->out), lowbyte);
            const __m128i s16 = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
            const __m128i b = _mm_packus_epi16(s16, s16);
            uint8_t *dst = a->dst + (size_t)q * C + c0 + 8 * j;
            if (TAIL && j == NV - 1) {
                uint8_t tmp[16];
                _mm_storeu_si128((__m128i *)tmp, b);
                memcpy(dst, tmp, (size_t)last);
            } else {
                _mm_storel_epi64((__m128i *)dst, b);
            }
        }
    }
}

Q8_TARGET_AVX2 Q8_INLINE void q8_dw_avx2_body(const int SIGNED, const int PX, const q8_dw_args *a) {
    const int32_t C = a->g->in_c;
    int32_t c0 = 0;
    for (; c0 + 16 <= C; c0 += 16) q8_dw_avx2_group(SIGNED, 2, 0, PX, a, c0);
    const int32_t rest = C - c0;
    if (rest > 8) q8_dw_avx2_group(SIGNED, 2, 1, PX, a, c0);
    else if (rest == 8) q8_dw_avx2_group(SIGNED, 1, 0, PX, a, c0);
    else if (rest > 0) q8_dw_avx2_group(SIGNED, 1, 1, PX, a, c0);
}

Q8_TARGET_AVX2 static void q8_dw_avx2_u(const q8_dw_args *a) {
    if (a->pixels == 4) q8_dw_avx2_body(0, 4, a); else q8_dw_avx2_body(0, 1, a);
}
Q8_TARGET_AVX2 static void q8_dw_avx2_s(const q8_dw_args *a) {
    if (a->pixels == 4) q8_dw_avx2_body(1, 4, a); else q8_dw_avx2_body(1, 1, a);
}

// NB blocks of 16 channels (the last one partial when TAIL) for PX pixels, on weights prepared by
// ck_dwconv_q8_prepare: each weight (w - filter zero point) in the low int16 of its int32 lane,
// the high int16 0, so vpmaddwd / vpdpwssd of the sign- (int8) or zero- (uint8) extended raw input
// x against it give x * w exactly; -input_zero_point * (sum of the weights of every tap) is in the
// bias, and taps outside the image read a pad of the input zero point (contributing 0).
#define Q8_DW512(TARGET, NAME, DOT, REQUANT)                                                          \
    TARGET Q8_INLINE __m512i NAME##_load(const int SIGNED, const int PARTIAL, __mmask16 mask, const uint8_t *x) { \
        const __m128i xb = PARTIAL ? _mm_maskz_loadu_epi8(mask, x) : _mm_loadu_si128((const __m128i *)x); \
        return SIGNED ? _mm512_cvtepi8_epi32(xb) : _mm512_cvtepu8_epi32(xb);                          \
    }                                                                                                 \
    TARGET Q8_INLINE void NAME##_group(const int SIGNED, const int NB, const int TAIL, const int PX,  \
                                       const q8_dw_args *a, int32_t c0) {                             \
        const int32_t C = a->g->in_c;                                                                 \
        __m512i acc[4][4];                                                                            \
        __mmask16 tail_mask = 0xFFFF;                                                                 \
        if (TAIL) tail_mask = (__mmask16)((1u << (C - c0 - 16 * (NB - 1))) - 1u);                     \
        for (int j = 0; j < NB; j++) {                                                                \
            const __m512i bias = _mm512_loadu_si512(a->params + (size_t)(c0 / CK_Q8_NR + j) * CK_Q8_PARAMS_PER_BLOCK); \
            for (int q = 0; q < PX; q++) acc[q][j] = bias;                                            \
        }                                                                                             \
        for (int32_t t = 0; t < a->taps; t++) {                                                       \
            const uint8_t *x = (const uint8_t *)(a->tap_base + a->tap_addr[t]) + c0;                  \
            const size_t step = (size_t)a->tap_steps[t];                                              \
            const int32_t *w = a->packed + (size_t)t * (size_t)a->cp + c0;                            \
            for (int j = 0; j < NB; j++) {                                                            \
                const int partial = TAIL && j == NB - 1;                                              \
                const __m512i wv = _mm512_loadu_si512(w + 16 * j);                                    \
                for (int q = 0; q < PX; q++) {                                                        \
                    const __m512i xv = NAME##_load(SIGNED, partial, tail_mask, x + (size_t)q * step + 16 * j); \
                    acc[q][j] = DOT(acc[q][j], xv, wv);                                               \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
        Q8_UNROLL                                                                                     \
        for (int j = 0; j < NB; j++) {                                                                \
            const int partial = TAIL && j == NB - 1;                                                  \
            const q8_rq512 rq = REQUANT##_load(a->params + (size_t)(c0 / CK_Q8_NR + j) * CK_Q8_PARAMS_PER_BLOCK, a->out); \
            for (int q = 0; q < PX; q++) {                                                            \
                const __m512i r = REQUANT(acc[q][j], &rq);                                            \
                if (partial) _mm512_mask_cvtepi32_storeu_epi8(a->dst + (size_t)q * C + c0 + 16 * j, tail_mask, r); \
                else _mm_storeu_si128((__m128i *)(a->dst + (size_t)q * C + c0 + 16 * j), _mm512_cvtepi32_epi8(r)); \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    TARGET Q8_INLINE void NAME##_body(const int SIGNED, const int PX, const q8_dw_args *a) {          \
        const int32_t C = a->g->in_c;                                                                 \
        int32_t c0 = a->c_begin;                                                                      \
        for (; c0 + 64 <= C; c0 += 64) NAME##_group(SIGNED, 4, 0, PX, a, c0);                         \
        const int32_t rest = (C - c0 + 15) / 16;                                                      \
        if (C % 16 == 0) {                                                                            \
            if (rest == 3) NAME##_group(SIGNED, 3, 0, PX, a, c0);                                     \
            else if (rest == 2) NAME##_group(SIGNED, 2, 0, PX, a, c0);                                \
            else if (rest == 1) NAME##_group(SIGNED, 1, 0, PX, a, c0);                                \
        } else {                                                                                      \
            if (rest == 4) NAME##_group(SIGNED, 4, 1, PX, a, c0);                                     \
            else if (rest == 3) NAME##_group(SIGNED, 3, 1, PX, a, c0);                                \
            else if (rest == 2) NAME##_group(SIGNED, 2, 1, PX, a, c0);                                \
            else if (rest == 1) NAME##_group(SIGNED, 1, 1, PX, a, c0);                                \
        }                                                                                             \
    }                                                                                                 \
    TARGET static void NAME##_u(const q8_dw_args *a) {                                                \
        if (a->pixels == 4) NAME##_body(0, 4, a); else NAME##_body(0, 1, a);                          \
    }                                                                                                 \
    TARGET static void NAME##_s(const q8_dw_args *a) {                                                \
        if (a->pixels == 4) NAME##_body(1, 4, a); else NAME##_body(1, 1, a);                          \
    }

Q8_DW512(Q8_TARGET_AVX512, q8_dw_avx512, Q8_DOT_AVX512, q8_requant_avx512)
Q8_DW512(Q8_TARGET_VNNI, q8_dw_vnni, Q8_DOT_VNNI, q8_requant_vnni)
#endif

// ---- 3x3 depthwise on AVX-512-VNNI: vpdpbusd over vertical quads of input rows ----
//
// Each int32 lane (one channel) of a quad holds the channel's bytes of one input column in four
// input rows r0..r3, as unsigned u = x (uint8) or x ^ 0x80 = x + 128 (int8). Weight vector A of
// filter column kx holds (s(0,kx), s(1,kx), s(2,kx), 0) per channel and B (0, s(0,kx), s(1,kx),
// s(2,kx)), s = (w - filter zero point) - d: with r0..r3 = iy..iy+3, one quad feeds output row oy
// through A and row oy + 1 through B (stride 1, dilation 1 vertically: two output rows per pass;
// otherwise one, r3 a pad read with weight 0). d is 0 when every weight minus its zero point fits
// int8 (mode 0: one vpdpbusd per quad and filter column); otherwise (mode 1) a per-channel d makes
// s fit and DA = (d, d, d, 0), DB = (0, d, d, d) add the d * u terms (two vpdpbusd). The sum over
// the taps of u * (w - zw) differs from the reference's (x - zx) * (w - zw) by zu * sum(w - zw),
// zu = zx (+ 128 for int8), folded into the bias; taps outside the image read the pad of zx
// (contributing 0). int32 sums wrap like the reference's.
//
// Quads come three ways. Channels in full groups of 64: each row's 64 bytes of a column go through
// two rounds of in-lane unpacks (vpunpck[lh]bw, vpunpck[lh]wd) into four blocks' quads, so lane
// 4l + i of the group's block k is channel 16l + 4k + i (weights and requantization records are
// packed in that order) and vpackssdw + vpacksswb / vpackuswb of the four blocks' results restore
// the channel order. 8, 16 or 32 channels at stride 1 ("flat"): the same on 64 bytes holding a run
// of 64 / C neighbouring pixels, lane 4l + i of block k being byte 16l + 4k + i of the run (runs
// that straddle a border are read from padded copies). Other blocks of 16 channels: four 16-byte
// row loads, a dword permute and an in-lane byte transpose per quad in two-row passes; in one-row
// passes (stride 2, dilation 2) those blocks run the per-tap AVX-512 kernel instead, faster there.
//
// Along a row, several output pixels are in flight: the quads of the input columns their windows
// cover are built once each and feed every (pixel, kx) that reads them. A table per row pass and
// chunk of output pixels holds each (row, column)'s address or the pad, so borders cost nothing in
// the loop. When fewer pixels than a window remain, the window overlaps the previous one (the same
// values, stored again).
//
// Requantization, the cost that dominates at 9 products per output (about 11 of the ~19 vector
// instructions per 16 outputs of a group at stride 1), reads a record per block built at load from
// the ck_q8_params_pack parameters (the odd lanes' multipliers moved to even lanes for vpmuldq) and
// takes the cheaper exact form of q8_dw3_requant where its conditions hold (every real model layer
// so far). The activation clamp is left to the saturating packs / narrowing stores where it equals
// the type's range.

/// Most output pixels per row chunk (the address table's width follows).
#define Q8_DW3_OXC 64
#define Q8_DW3_TABW ((Q8_DW3_OXC - 1) * 2 + 2 * 2 + 1)
/// Most output pixels in flight per 16-channel block (8 per one-row pass, 4 per two-row pass: enough
/// independent vpdpbusd chains to cover their latency).
#define Q8_DW3_PX 8

/// One requantization record (int32 offsets; 64-bit arrays hold lane j at ((j & 1) * 8 + (j >> 1)) * 2).
#define Q8_DW3_R_BIAS 0
#define Q8_DW3_R_M 16
#define Q8_DW3_R_MODD 32
#define Q8_DW3_R_LEFT 48
#define Q8_DW3_R_NUDGE 64
#define Q8_DW3_R_SHIFT 96
#define Q8_DW3_R_ADJUST 128
#define Q8_DW3_R_ZP 160
#define Q8_DW3_R_FLAGS 176 ///< any left shift, any zero point to add, whether the plain requantization applies
#define Q8_DW3_R_RIGHT 192
#define Q8_DW3_R_NUDGE2 208

#if CK_X86
typedef struct {
    const ck_conv_geometry *g;
    /// Addresses of the chunk's 4 rows x tw columns, Q8_DW3_TABW apart.
    const uint8_t *const *tab;
    int32_t n;               ///< output pixels in the chunk
    uint8_t *dst0, *dst1;    ///< the chunk's first output pixel in rows oy and oy + 1 (dst1 NULL: none)
    const int32_t *blocks;   ///< Q8_DW3_BLOCK int32 per block: 8 weight vectors, then the record
    const ck_q8_output *out;
    int32_t is_signed;
} q8_dw3_args;

/// Requantization of accumulators x by record r (see above). GENERAL: q8_requant_vnni's steps with
/// the record's left shifts, output zero points and both clamps, the half-away-from-zero adjustment
/// selected by the product's sign (vpmovq2m) rather than a compare with -2^30 (for -2^30 <= P < 0,
/// h = 0 and both give 0: r >= 1: 0 <= P + 2^30 + 2^(30+r) - 2^31 < 2^(31+r); r = 0: none; zero
/// for half up, see ck_dwconv_q8_prepare). Otherwise (every lane without left
/// shift, 1 <= r <= 22, the zero point folded in the nudge N, |bias| < 2^28 so |x| < 2^29, half away
/// from zero): the 64-bit T = 2x * m + 2N, whose high dword is U = floor((x * m + N) / 2^31) = h +
/// 2^(r-1) + zp * 2^r (h = the rounding doubling high product; |U| < 2^31), then in 32 bits
/// (U - [x < 0]) >> r: RoundingDivideByPOT's (h + 2^(r-1) - [h < 0]) >> r plus zp, x < 0 standing
/// for h < 0 as in the single shift (h = 0 gives 0 either way); only the upper clamp remains (the
/// packs saturate to the type).
Q8_TARGET_VNNI Q8_INLINE __m512i q8_dw3_requant(const int GENERAL, __m512i x, const int32_t *r, __m512i lo, __m512i hi) {
    if (!GENERAL) {
        const __m512i x2 = _mm512_add_epi32(x, x);
        __m512i xo = _mm512_shuffle_epi32(x2, (_MM_PERM_ENUM)0xF5);
        __asm__("" : "+v"(xo)); // a shuffle (port 5), not the shift clang prefers
        const __m512i te = _mm512_add_epi64(_mm512_mul_epi32(x2, _mm512_loadu_si512(r + Q8_DW3_R_M)),
                                            _mm512_loadu_si512(r + Q8_DW3_R_NUDGE2));
        const __m512i to = _mm512_add_epi64(_mm512_mul_epi32(xo, _mm512_loadu_si512(r + Q8_DW3_R_MODD)),
                                            _mm512_loadu_si512(r + Q8_DW3_R_NUDGE2 + 16));
        __m512i u = _mm512_mask_shuffle_epi32(to, (__mmask16)0x5555, te, (_MM_PERM_ENUM)0xF5);
        u = _mm512_add_epi32(u, _mm512_srai_epi32(x, 31));
        return _mm512_min_epi32(_mm512_srav_epi32(u, _mm512_loadu_si512(r + Q8_DW3_R_RIGHT)), hi);
    }
    x = _mm512_sllv_epi32(x, _mm512_loadu_si512(r + Q8_DW3_R_LEFT));
    __m512i xo = _mm512_srli_epi64(x, 32);
    __asm__("" : "+v"(xo)); // keeps vpsrlq + vpmuldq (clang makes vpsraq + the slow vpmullq of them)
    __m512i pe = _mm512_mul_epi32(x, _mm512_loadu_si512(r + Q8_DW3_R_M));
    __m512i po = _mm512_mul_epi32(xo, _mm512_loadu_si512(r + Q8_DW3_R_MODD));
    const __mmask8 ne = _mm512_movepi64_mask(pe), no = _mm512_movepi64_mask(po);
    pe = _mm512_mask_add_epi64(pe, ne, pe, _mm512_loadu_si512(r + Q8_DW3_R_ADJUST));
    po = _mm512_mask_add_epi64(po, no, po, _mm512_loadu_si512(r + Q8_DW3_R_ADJUST + 16));
    pe = _mm512_srav_epi64(_mm512_add_epi64(pe, _mm512_loadu_si512(r + Q8_DW3_R_NUDGE)), _mm512_loadu_si512(r + Q8_DW3_R_SHIFT));
    po = _mm512_srav_epi64(_mm512_add_epi64(po, _mm512_loadu_si512(r + Q8_DW3_R_NUDGE + 16)),
                           _mm512_loadu_si512(r + Q8_DW3_R_SHIFT + 16));
    __m512i q = _mm512_mask_shuffle_epi32(pe, (__mmask16)0xAAAA, po, (_MM_PERM_ENUM)0xA0);
    q = _mm512_add_epi32(q, _mm512_loadu_si512(r + Q8_DW3_R_ZP));
    q = _mm512_max_epi32(q, lo);
    return _mm512_min_epi32(q, hi);
}

/// Whether `count` records from r (Q8_DW3_BLOCK apart) need the GENERAL requantization.
static inline int q8_dw3_general(const int32_t *r, int32_t count, const q8_dw3_args *a) {
    if (a->out->act_min > (a->is_signed ? -128 : 0)) return 1;
    for (int32_t k = 0; k < count; k++)
        if (!r[(size_t)k * Q8_DW3_BLOCK + Q8_DW3_R_FLAGS + 2]) return 1;
    return 0;
}

/// Four rows' 64 bytes at the column `col` points to (+ c0) as four blocks' quads (see above).
Q8_TARGET_VNNI Q8_INLINE void q8_dw3_quads64(const uint8_t *const *col, int32_t c0, __m512i flip, __m512i *x) {
    __m512i r[4];
    Q8_UNROLL
    for (int k = 0; k < 4; k++) r[k] = _mm512_xor_si512(_mm512_loadu_si512(col[k * Q8_DW3_TABW] + c0), flip);
    ck_interleave4_epi8(r, x);
}

/// NS steps of P pixels (P = 1: a group of 64 channels at c0, blocks from b0; P = 64 / C: the flat
/// layout, stride 1) from output pixel q0: four blocks x NS x ROWS accumulators.
Q8_TARGET_VNNI Q8_INLINE void q8_dw3_wide(const int MODE, const int ROWS, const int S, const int D, const int P, const int NS,
                                          const int GENERAL, const q8_dw3_args *a, int32_t c0, int32_t b0, int32_t q0,
                                          __m512i flip, __m512i lo, __m512i hi) {
    const int32_t *blocks = a->blocks + (size_t)b0 * Q8_DW3_BLOCK;
    __m512i acc0[4][4], acc1[4][4];
    Q8_UNROLL
    for (int k = 0; k < 4; k++) {
        const __m512i bias = _mm512_loadu_si512(blocks + k * Q8_DW3_BLOCK + Q8_DW3_VECS * 16 + Q8_DW3_R_BIAS);
        Q8_UNROLL
        for (int s = 0; s < NS; s++) acc0[s][k] = acc1[s][k] = bias;
    }
    const uint8_t *const *col = a->tab + (size_t)q0 * S;
    Q8_UNROLL
    for (int j = 0; j < (NS - 1) * P * S + 2 * D + 1; j++) {
        int used = 0;
        Q8_UNROLL
        for (int kx = 0; kx < 3; kx++) {
            const int off = j - kx * D;
            if (off >= 0 && off % (P * S) == 0 && off / (P * S) < NS) used = 1;
        }
        if (!used) continue;
        __m512i x[4];
        q8_dw3_quads64(col + j, c0, flip, x);
        Q8_UNROLL
        for (int kx = 0; kx < 3; kx++) {
            const int off = j - kx * D;
            if (off < 0 || off % (P * S) != 0 || off / (P * S) >= NS) continue;
            const int s = off / (P * S);
            Q8_UNROLL
            for (int k = 0; k < 4; k++) {
                const int8_t *w = (const int8_t *)(blocks + k * Q8_DW3_BLOCK);
                acc0[s][k] = _mm512_dpbusd_epi32(acc0[s][k], x[k], _mm512_loadu_si512(w + (2 * kx) * 64));
                if (MODE) acc0[s][k] = _mm512_dpbusd_epi32(acc0[s][k], x[k], _mm512_loadu_si512(w + 6 * 64));
                if (ROWS == 2) {
                    acc1[s][k] = _mm512_dpbusd_epi32(acc1[s][k], x[k], _mm512_loadu_si512(w + (2 * kx + 1) * 64));
                    if (MODE) acc1[s][k] = _mm512_dpbusd_epi32(acc1[s][k], x[k], _mm512_loadu_si512(w + 7 * 64));
                }
            }
        }
    }
    const int32_t C = a->g->in_c;
    Q8_UNROLL
    for (int row = 0; row < ROWS; row++) {
        uint8_t *dst = row ? a->dst1 : a->dst0;
        if (!dst) break;
        Q8_UNROLL
        for (int s = 0; s < NS; s++) {
            __m512i v[4];
            Q8_UNROLL
            for (int k = 0; k < 4; k++)
                v[k] = q8_dw3_requant(GENERAL, row ? acc1[s][k] : acc0[s][k], blocks + k * Q8_DW3_BLOCK + Q8_DW3_VECS * 16, lo, hi);
            const __m512i p01 = _mm512_packs_epi32(v[0], v[1]), p23 = _mm512_packs_epi32(v[2], v[3]);
            const __m512i bytes = a->is_signed ? _mm512_packs_epi16(p01, p23) : _mm512_packus_epi16(p01, p23);
            _mm512_storeu_si512(dst + (size_t)(q0 + s * P) * C + c0, bytes);
        }
    }
}

/// Runs q8_dw3_wide over the chunk's pixels in windows of NS * P (overlapping at the end), or
/// narrower ones when the chunk is (P = 1 only: flat layouts need out_w >= NS * P, and the chunks
/// of q8_dw3_rows leave at least 8 pixels).
Q8_TARGET_VNNI Q8_INLINE void q8_dw3_wide_row(const int MODE, const int ROWS, const int S, const int D, const int P,
                                              const int NS, const q8_dw3_args *a, int32_t c0, int32_t b0) {
    const __m512i flip = _mm512_set1_epi8(a->is_signed ? (char)0x80 : 0);
    const __m512i lo = _mm512_set1_epi32(a->out->act_min), hi = _mm512_set1_epi32(a->out->act_max);
    const int32_t n = a->n, window = NS * P;
    if (n < window) {
        if (P == 1)
            for (int32_t q0 = 0; q0 < n; q0++) q8_dw3_wide(MODE, ROWS, S, D, 1, 1, 1, a, c0, b0, q0, flip, lo, hi);
        return;
    }
    const int general = q8_dw3_general(a->blocks + (size_t)b0 * Q8_DW3_BLOCK + Q8_DW3_VECS * 16, 4, a);
    for (int32_t q0 = 0;; q0 += window) {
        if (q0 > n - window) q0 = n - window;
        if (general) q8_dw3_wide(MODE, ROWS, S, D, P, NS, 1, a, c0, b0, q0, flip, lo, hi);
        else q8_dw3_wide(MODE, ROWS, S, D, P, NS, 0, a, c0, b0, q0, flip, lo, hi);
        if (q0 == n - window) break;
    }
}

Q8_TARGET_VNNI Q8_INLINE __m512i q8_dw3_quad16(const int TAIL, __mmask16 tm, const uint8_t *const *col, int32_t c0,
                                               __m512i dword_index, __m512i byte_index, __m512i flip) {
    __m512i z;
    if (TAIL) {
        z = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(tm, col[0] + c0));
        z = _mm512_inserti32x4(z, _mm_maskz_loadu_epi8(tm, col[Q8_DW3_TABW] + c0), 1);
        z = _mm512_inserti32x4(z, _mm_maskz_loadu_epi8(tm, col[2 * Q8_DW3_TABW] + c0), 2);
        z = _mm512_inserti32x4(z, _mm_maskz_loadu_epi8(tm, col[3 * Q8_DW3_TABW] + c0), 3);
    } else {
        // (The empty asms keep the inserts as vinserti32x4 from memory, not ymm inserts joined by
        // a port-5 vinserti64x4.)
        z = _mm512_zextsi128_si512(_mm_loadu_si128((const __m128i *)(col[0] + c0)));
        z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(col[Q8_DW3_TABW] + c0)), 1);
        __asm__("" : "+v"(z));
        z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(col[2 * Q8_DW3_TABW] + c0)), 2);
        __asm__("" : "+v"(z));
        z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(col[3 * Q8_DW3_TABW] + c0)), 3);
    }
    // Lane l: the dwords of channels 4l..4l+3 of rows 0..3; then each channel's 4 bytes together.
    // (The empty asm keeps clang from recombining the inserts and permutes into ~10 shuffles.)
    __asm__("" : "+v"(z));
    z = _mm512_permutexvar_epi32(dword_index, z);
    __asm__("" : "+v"(z));
    z = _mm512_shuffle_epi8(z, byte_index);
    return _mm512_xor_si512(z, flip);
}

/// PX output pixels (from q0) of block b of 16 channels in natural order (the last, partial one
/// when TAIL).
Q8_TARGET_VNNI Q8_INLINE void q8_dw3_pixels(const int MODE, const int ROWS, const int S, const int D, const int PX,
                                            const int TAIL, const int GENERAL, const q8_dw3_args *a, int32_t b, __mmask16 tm,
                                            int32_t q0, const __m512i *wv, __m512i bias, __m512i dword_index,
                                            __m512i byte_index, __m512i flip, __m512i lo, __m512i hi) {
    const int32_t c0 = b * CK_Q8_NR;
    __m512i acc0[Q8_DW3_PX], acc1[Q8_DW3_PX];
    Q8_UNROLL
    for (int q = 0; q < PX; q++) acc0[q] = acc1[q] = bias;
    const uint8_t *const *col = a->tab + (size_t)q0 * S;
    Q8_UNROLL
    for (int j = 0; j < (PX - 1) * S + 2 * D + 1; j++) {
        int used = 0;
        Q8_UNROLL
        for (int kx = 0; kx < 3; kx++) {
            const int off = j - kx * D;
            if (off >= 0 && off % S == 0 && off / S < PX) used = 1;
        }
        if (!used) continue;
        const __m512i x = q8_dw3_quad16(TAIL, tm, col + j, c0, dword_index, byte_index, flip);
        Q8_UNROLL
        for (int kx = 0; kx < 3; kx++) {
            const int off = j - kx * D;
            if (off < 0 || off % S != 0 || off / S >= PX) continue;
            const int q = off / S;
            acc0[q] = _mm512_dpbusd_epi32(acc0[q], x, wv[2 * kx]);
            if (MODE) acc0[q] = _mm512_dpbusd_epi32(acc0[q], x, wv[6]);
            if (ROWS == 2) {
                acc1[q] = _mm512_dpbusd_epi32(acc1[q], x, wv[2 * kx + 1]);
                if (MODE) acc1[q] = _mm512_dpbusd_epi32(acc1[q], x, wv[7]);
            }
        }
    }
    const int32_t C = a->g->in_c;
    const int32_t *rec = a->blocks + (size_t)b * Q8_DW3_BLOCK + Q8_DW3_VECS * 16;
    Q8_UNROLL
    for (int row = 0; row < ROWS; row++) {
        uint8_t *dst = row ? a->dst1 : a->dst0;
        if (!dst) break;
        Q8_UNROLL
        for (int q = 0; q < PX; q++) {
            // Narrowing that saturates (after the clamps: exact); vpmovusdb, only from above, needs the max.
            __m512i r = q8_dw3_requant(GENERAL, row ? acc1[q] : acc0[q], rec, lo, hi);
            if (!GENERAL) r = _mm512_max_epi32(r, lo);
            uint8_t *p = dst + (size_t)(q0 + q) * C + c0;
            if (a->is_signed) {
                if (TAIL) _mm512_mask_cvtsepi32_storeu_epi8(p, tm, r);
                else _mm_storeu_si128((__m128i *)p, _mm512_cvtsepi32_epi8(r));
            } else {
                if (TAIL) _mm512_mask_cvtusepi32_storeu_epi8(p, tm, r);
                else _mm_storeu_si128((__m128i *)p, _mm512_cvtusepi32_epi8(r));
            }
        }
    }
}

/// One block of 16 channels in natural order over the chunk's pixels.
Q8_TARGET_VNNI Q8_INLINE void q8_dw3_block(const int MODE, const int ROWS, const int S, const int D, const int TAIL,
                                           const q8_dw3_args *a, int32_t b) {
    const int32_t c0 = b * CK_Q8_NR;
    const __mmask16 tm = TAIL ? (__mmask16)((1u << (a->g->in_c - c0)) - 1u) : (__mmask16)0xFFFF;
    const int32_t *blk = a->blocks + (size_t)b * Q8_DW3_BLOCK;
    __m512i wv[Q8_DW3_VECS];
    Q8_UNROLL
    for (int v = 0; v < Q8_DW3_VECS; v++) wv[v] = _mm512_loadu_si512(blk + 16 * v);
    const __m512i bias = _mm512_loadu_si512(blk + Q8_DW3_VECS * 16 + Q8_DW3_R_BIAS);
    const __m512i dword_index = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    const __m512i byte_index = _mm512_broadcast_i32x4(_mm_set_epi8(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0));
    const __m512i flip = _mm512_set1_epi8(a->is_signed ? (char)0x80 : 0);
    const __m512i lo = _mm512_set1_epi32(a->out->act_min), hi = _mm512_set1_epi32(a->out->act_max);
    const int32_t n = a->n;
    const int PX = ROWS == 2 ? 4 : 8;
    if (n < PX) {
        for (int32_t q0 = 0; q0 < n; q0++)
            q8_dw3_pixels(MODE, ROWS, S, D, 1, TAIL, 1, a, b, tm, q0, wv, bias, dword_index, byte_index, flip, lo, hi);
        return;
    }
    // (A partial block always takes the general requantization: one variant fewer.)
    const int general = TAIL || q8_dw3_general(blk + Q8_DW3_VECS * 16, 1, a);
    for (int32_t q0 = 0;; q0 += PX) {
        if (q0 > n - PX) q0 = n - PX;
        if (general) q8_dw3_pixels(MODE, ROWS, S, D, PX, TAIL, 1, a, b, tm, q0, wv, bias, dword_index, byte_index, flip, lo, hi);
        else if (!TAIL) q8_dw3_pixels(MODE, ROWS, S, D, PX, 0, 0, a, b, tm, q0, wv, bias, dword_index, byte_index, flip, lo, hi);
        if (q0 == n - PX) break;
    }
}

/// The chunk's pixels of one unit of channels: the flat layout, a group of 64 channels (unit <
/// in_c / 64), or a block of 16 after the groups (two-row passes, and their last row alone).
Q8_TARGET_VNNI Q8_INLINE void q8_dw3_chunk(const int MODE, const int ROWS, const int S, const int D, const int FLAT,
                                           const q8_dw3_args *a, int32_t unit) {
    const int32_t C = a->g->in_c, groups = C / 64;
    if (FLAT) q8_dw3_wide_row(MODE, ROWS, S, D, FLAT, FLAT == 2 ? 2 : 1, a, 0, 0);
    else if (unit < groups) q8_dw3_wide_row(MODE, ROWS, S, D, 1, ROWS == 2 ? 2 : 4, a, unit * 64, unit * 4);
    else if (S == 1 && D == 1) {
        // (Other shapes leave these blocks to the per-tap kernel: Q8_DW3_REST.)
        const int32_t b = groups * 4 + (unit - groups);
        if ((b + 1) * CK_Q8_NR <= C) q8_dw3_block(MODE, ROWS, S, D, 0, a, b);
        else q8_dw3_block(MODE, ROWS, S, D, 1, a, b);
    }
}

#define Q8_DW3_SHAPE(MODE, ROWS, S, D, FLAT)                                                           \
    Q8_TARGET_VNNI static void q8_dw3_##MODE##_##ROWS##_##S##_##D##_##FLAT(const q8_dw3_args *a, int32_t unit) { \
        q8_dw3_chunk(MODE, ROWS, S, D, FLAT, a, unit);                                                 \
    }
Q8_DW3_SHAPE(0, 2, 1, 1, 0)
Q8_DW3_SHAPE(0, 2, 1, 1, 2)
Q8_DW3_SHAPE(0, 2, 1, 1, 4)
Q8_DW3_SHAPE(0, 2, 1, 1, 8)
Q8_DW3_SHAPE(0, 1, 1, 1, 0)
Q8_DW3_SHAPE(0, 1, 2, 1, 0)
Q8_DW3_SHAPE(0, 1, 1, 2, 0)
Q8_DW3_SHAPE(1, 2, 1, 1, 0)
Q8_DW3_SHAPE(1, 2, 1, 1, 2)
Q8_DW3_SHAPE(1, 2, 1, 1, 4)
Q8_DW3_SHAPE(1, 2, 1, 1, 8)
Q8_DW3_SHAPE(1, 1, 1, 1, 0)
Q8_DW3_SHAPE(1, 1, 2, 1, 0)
Q8_DW3_SHAPE(1, 1, 1, 2, 0)
#endif

/// Whether the 3x3 variant handles `g` (horizontal stride and dilation among the compiled shapes).
static int q8_dw3_fits(const ck_conv_geometry *g) {
    if (g->k_h != 3 || g->k_w != 3 || g->in_c <= 0 || g->out_w <= 0 || g->out_h <= 0) return 0;
    return (g->stride_w == 1 && g->dil_w == 1) || (g->stride_w == 2 && g->dil_w == 1) || (g->stride_w == 1 && g->dil_w == 2);
}

/// The pixels per 64 bytes when the 3x3 variant takes `g`'s 8, 16 or 32 channels as runs of
/// neighbouring pixels (stride and dilation 1, at least one window of output pixels), else 0.
static int32_t q8_dw3_flat(const ck_conv_geometry *g) {
    if (g->stride_w != 1 || g->dil_w != 1 || g->stride_h != 1 || g->dil_h != 1) return 0;
    if (g->in_c != 8 && g->in_c != 16 && g->in_c != 32) return 0;
    const int32_t pixels = 64 / g->in_c;
    return g->out_w >= (pixels == 2 ? 4 : pixels) ? pixels : 0;
}

/// Blocks of the 3x3 variant's packed weights and records (the flat layout has four).
static int32_t q8_dw3_block_count(int32_t C) {
    const int32_t blocks = (C + CK_Q8_NR - 1) / CK_Q8_NR;
    return blocks < 4 ? 4 : blocks;
}

/// The channel in lane j of the 3x3 variant's block b, or -1 for none (see above).
static int32_t q8_dw3_channel(int32_t C, int32_t flat, int32_t b, int32_t j) {
    const int32_t l = j / 4, i = j % 4;
    if (flat) return b < 4 ? (16 * l + 4 * b + i) % C : -1;
    if (b < C / 64 * 4) return (b / 4) * 64 + 16 * l + 4 * (b % 4) + i;
    const int32_t c = b * CK_Q8_NR + j;
    return c < C ? c : -1;
}

#if CK_X86
/// Rows [row_begin, row_end) through the 3x3 variant: per chunk of output pixels and unit of
/// channels, every row pass (so a unit's weights stay in cache while the input streams by).
/// row[j] = p + j * step for j < n, 8 addresses per store (the tables are rebuilt every row pass:
/// a scalar loop was 1% of tf2_mobilenet_v2 at 1 thread).
Q8_TARGET_VNNI static inline void q8_dw3_fill(const uint8_t **row, const uint8_t *p, size_t step, int32_t n) {
    const __m512i lanes = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    __m512i v = _mm512_add_epi64(_mm512_set1_epi64((long long)(uintptr_t)p), _mm512_mullo_epi64(lanes, _mm512_set1_epi64((long long)step)));
    const __m512i advance = _mm512_set1_epi64((long long)(8 * step));
    int32_t j = 0;
    for (; j + 8 <= n; j += 8, v = _mm512_add_epi64(v, advance)) _mm512_storeu_si512((void *)(row + j), v);
    if (j < n) _mm512_mask_storeu_epi64((void *)(row + j), (__mmask8)((1u << (n - j)) - 1u), v);
}

static void q8_dw3_rows(const ck_conv_geometry *g, const uint8_t *input, int32_t is_signed, const int32_t *header,
                        const ck_q8_output *out, uint8_t *output, int32_t row_begin, int32_t row_end, const uint8_t *pad) {
    const int32_t C = g->in_c, S = g->stride_w, D = g->dil_w;
    const int mode = header[Q8_DW3_MODE], flat = header[Q8_DW3_LAYOUT];
    // Two output rows per pass: vertical stride and dilation 1 (compiled with horizontal ones 1 only).
    const int two = g->stride_h == 1 && g->dil_h == 1 && S == 1 && D == 1;
    void (*fn)(const q8_dw3_args *, int32_t) = NULL;
    if (flat == 2) fn = mode ? q8_dw3_1_2_1_1_2 : q8_dw3_0_2_1_1_2;
    else if (flat == 4) fn = mode ? q8_dw3_1_2_1_1_4 : q8_dw3_0_2_1_1_4;
    else if (flat == 8) fn = mode ? q8_dw3_1_2_1_1_8 : q8_dw3_0_2_1_1_8;
    else if (S == 1 && D == 1) fn = two ? (mode ? q8_dw3_1_2_1_1_0 : q8_dw3_0_2_1_1_0) : (mode ? q8_dw3_1_1_1_1_0 : q8_dw3_0_1_1_1_0);
    else if (S == 2) fn = mode ? q8_dw3_1_1_2_1_0 : q8_dw3_0_1_2_1_0;
    else fn = mode ? q8_dw3_1_1_1_2_0 : q8_dw3_0_1_1_2_0;
    // A pass left with one row (odd row counts) takes the one-row variant where there is one.
    void (*fn_one)(const q8_dw3_args *, int32_t) = two && !flat ? (mode ? q8_dw3_1_1_1_1_0 : q8_dw3_0_1_1_1_0) : NULL;
    const int32_t units = flat ? 1 : C / 64 + (header[Q8_DW3_REST] ? 0 : (C % 64 + CK_Q8_NR - 1) / CK_Q8_NR);
    const uint8_t *tab[4 * Q8_DW3_TABW];
    // Flat layout: 64 bytes of the pad, and the runs of pixels that straddle a border.
    uint8_t pad64[64], edges[4][2][112];
    memset(pad64, pad[0], sizeof pad64);
    q8_dw3_args a;
    a.g = g;
    a.tab = tab;
    a.blocks = header + Q8_DW3_HEADER;
    a.out = out;
    a.is_signed = is_signed;
    for (int32_t ox0 = 0; ox0 < g->out_w; ox0 += a.n) {
        // Chunks of Q8_DW3_OXC pixels, the last at least 8 (whole windows).
        const int32_t rest = g->out_w - ox0;
        a.n = rest <= Q8_DW3_OXC ? rest : (rest - Q8_DW3_OXC < 8 ? rest - 8 : Q8_DW3_OXC);
        const int32_t tw = (a.n - 1) * S + 2 * D + 1, ix0 = ox0 * S - g->pad_left;
        {
            for (int32_t oy = row_begin; oy < row_end;) {
                const int one = two && oy + 1 == row_end && fn_one;
                const int pair = two && !one;
                const int32_t iy0 = oy * g->stride_h - g->pad_top;
                for (int k = 0; k < 4; k++) {
                    // One output row: r3 (weight 0) reads the pad.
                    const int32_t iy = k < 3 ? iy0 + k * g->dil_h : (pair ? iy0 + 3 : -1);
                    const uint8_t **row = tab + (size_t)k * Q8_DW3_TABW;
                    const uint8_t *outside = flat ? pad64 : pad;
                    if (iy < 0 || iy >= g->in_h) {
                        for (int32_t j = 0; j < tw; j++) row[j] = outside;
                        continue;
                    }
                    const uint8_t *base = input + (size_t)iy * (size_t)g->in_w * (size_t)C;
                    // Columns [lo, hi) of the table read the image (flat: every pixel of the run).
                    const int32_t last = flat ? g->in_w - flat + 1 : g->in_w;
                    const int32_t lo = q8_min(tw, ix0 < 0 ? -ix0 : 0), hi = q8_min(tw, last - ix0 > lo ? last - ix0 : lo);
                    for (int32_t j = 0; j < lo; j++) row[j] = outside;
                    if (hi > lo) q8_dw3_fill(row + lo, base + (size_t)(ix0 + lo) * (size_t)C, (size_t)C, hi - lo);
                    for (int32_t j = hi; j < tw; j++) row[j] = outside;
                    if (flat) {
                        // Runs that straddle a border read strips of the row padded on the left
                        // (pixels -(flat-1)..flat-2) and on the right (in_w-(flat-1)..in_w+flat-2).
                        const int32_t first = 1 - flat - ix0 > 0 ? 1 - flat - ix0 : 0, end = q8_min(tw, g->in_w - ix0);
                        const int32_t reach = flat - 1, strip = 2 * reach;
                        int built_left = 0, built_right = 0;
                        for (int32_t j = first; j < end; j++) {
                            if (j == lo && hi > lo) j = hi; // the runs inside the image
                            if (j >= end) break;
                            const int32_t ix = ix0 + j;
                            const int left = ix < 0;
                            uint8_t *e = edges[k][left ? 0 : 1];
                            const int32_t from = left ? -reach : g->in_w - reach; // the strip's first pixel
                            if (!(left ? built_left : built_right)) {
                                const int32_t valid0 = from > 0 ? from : 0, valid1 = q8_min(from + strip, g->in_w);
                                memset(e, pad[0], (size_t)strip * (size_t)C);
                                if (valid1 > valid0)
                                    memcpy(e + (size_t)(valid0 - from) * C, base + (size_t)valid0 * C, (size_t)(valid1 - valid0) * C);
                                if (left) built_left = 1;
                                else built_right = 1;
                            }
                            row[j] = e + (size_t)(ix - from) * C;
                        }
                    }
                }
                a.dst0 = output + ((size_t)oy * g->out_w + ox0) * C;
                a.dst1 = pair && oy + 1 < row_end ? a.dst0 + (size_t)g->out_w * C : NULL;
                // Every unit of channels from the same table (its addresses are the pixels'
                // first channel's).
                for (int32_t unit = 0; unit < units; unit++) (one ? fn_one : fn)(&a, unit);
                oy += pair ? 2 : 1;
            }
        }
    }
}
#endif

typedef void (*q8_dw_fn)(const q8_dw_args *);

void ck_dwconv_q8_prepare(int32_t isa, const ck_conv_geometry *g, int32_t is_signed, int32_t input_zero_point,
                          int32_t *packed, int32_t *params) {
    if (isa < CK_ISA_AVX2) return;
    const int32_t taps = g->k_h * g->k_w, C = g->in_c;
    const int32_t cp = (C + CK_Q8_NR - 1) / CK_Q8_NR * CK_Q8_NR;
    int32_t *header = packed + q8_dw_taps_count(g);
    if (isa >= CK_ISA_AVX512VNNI && q8_dw3_fits(g)) {
        // Mode 0 when every weight (minus its zero point) fits int8, else a per-channel d (see above)
        // when one exists: s = w - d in [-128, 127] for the channel's weights, d in [-128, 127].
        int32_t mode = 0, feasible = 1;
        for (int32_t c = 0; c < C; c++) {
            for (int32_t t = 0; t < 9; t++) {
                const int32_t v = packed[(size_t)t * cp + c];
                if (v < -128 || v > 127) mode = 1;
            }
        }
        for (int32_t c = 0; c < C && mode; c++) {
            int32_t lo = INT32_MAX, hi = INT32_MIN;
            for (int32_t t = 0; t < 9; t++) {
                const int32_t v = packed[(size_t)t * cp + c];
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
            const int32_t d = hi - 127 > -128 ? hi - 127 : -128; // the least d with s <= 127
            if (d > 127 || lo - d < -128) feasible = 0;
        }
        if (feasible) {
            const int32_t flat = q8_dw3_flat(g), blocks = q8_dw3_block_count(C);
            const uint32_t zu = (uint32_t)input_zero_point + (is_signed ? 128u : 0u);
            int32_t *fast = header + Q8_DW3_HEADER;
            memset(fast, 0, (size_t)blocks * Q8_DW3_BLOCK * sizeof(int32_t));
            for (int32_t b = 0; b < blocks; b++) {
                int8_t *w = (int8_t *)(fast + (size_t)b * Q8_DW3_BLOCK);
                int32_t *rec = fast + (size_t)b * Q8_DW3_BLOCK + Q8_DW3_VECS * 16;
                int plain = 1;
                for (int32_t j = 0; j < CK_Q8_NR; j++) {
                    const int32_t c = q8_dw3_channel(C, flat, b, j);
                    if (c < 0) {
                        plain = 0;
                        continue;
                    }
                    int32_t lo = INT32_MAX, hi = INT32_MIN;
                    uint32_t sum = 0;
                    for (int32_t t = 0; t < 9; t++) {
                        const int32_t v = packed[(size_t)t * cp + c];
                        lo = v < lo ? v : lo;
                        hi = v > hi ? v : hi;
                        sum += (uint32_t)v;
                    }
                    const int32_t d = mode ? (hi - 127 > -128 ? hi - 127 : -128) : 0;
                    for (int32_t kx = 0; kx < 3; kx++) {
                        int8_t *va = w + (size_t)(2 * kx) * 64 + (size_t)j * 4, *vb = va + 64;
                        for (int32_t ky = 0; ky < 3; ky++) {
                            const int8_t s = (int8_t)(packed[(size_t)(ky * 3 + kx) * cp + c] - d);
                            va[ky] = s;
                            vb[ky + 1] = s;
                        }
                    }
                    int8_t *da = w + (size_t)6 * 64 + (size_t)j * 4, *db = da + 64;
                    for (int32_t k = 0; k < 3; k++) { da[k] = (int8_t)d; db[k + 1] = (int8_t)d; }
                    // The record lane from the channel's parameters.
                    const int32_t *p = params + (size_t)(c / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK;
                    const int32_t pj = c % CK_Q8_NR;
                    const size_t p64 = (size_t)((pj & 1) * 8 + (pj >> 1)) * 2, r64 = (size_t)((j & 1) * 8 + (j >> 1)) * 2;
                    rec[Q8_DW3_R_BIAS + j] = (int32_t)((uint32_t)p[pj] - zu * sum);
                    rec[Q8_DW3_R_M + j] = p[16 + pj];
                    if (!(j & 1)) rec[Q8_DW3_R_MODD + j] = 0;
                    else rec[Q8_DW3_R_MODD + j - 1] = p[16 + pj];
                    rec[Q8_DW3_R_LEFT + j] = p[32 + pj];
                    memcpy(rec + Q8_DW3_R_NUDGE + r64, p + 96 + p64, 8);
                    memcpy(rec + Q8_DW3_R_SHIFT + r64, p + 128 + p64, 8);
                    // Half away from zero unless the parameters were packed for half up (their
                    // rounding constants say which: r - 1 rather than the mask 2^r - 1 for r >= 1).
                    const int32_t right = p[48 + pj];
                    const int half_up = right > 0 && p[64 + pj] != (int32_t)((1u << right) - 1u);
                    if (!half_up) memcpy(rec + Q8_DW3_R_ADJUST + r64, p + 192 + p64, 8);
                    rec[Q8_DW3_R_ZP + j] = p[160 + pj];
                    if (p[32 + pj] != 0) rec[Q8_DW3_R_FLAGS] = 1;
                    if (p[160 + pj] != 0) rec[Q8_DW3_R_FLAGS + 1] = 1;
                    // The plain requantization's values and conditions (see q8_dw3_requant).
                    int64_t nudge;
                    memcpy(&nudge, p + 96 + p64, 8);
                    nudge *= 2;
                    memcpy(rec + Q8_DW3_R_NUDGE2 + r64, &nudge, 8);
                    rec[Q8_DW3_R_RIGHT + j] = right;
                    const int32_t bias = rec[Q8_DW3_R_BIAS + j];
                    if (half_up || p[32 + pj] != 0 || p[160 + pj] != 0 || right < 1 || right > 22 || bias <= -(1 << 28) ||
                        bias >= (1 << 28))
                        plain = 0;
                }
                rec[Q8_DW3_R_FLAGS + 2] = plain;
            }
            header[Q8_DW3_MODE] = mode;
            header[Q8_DW3_LAYOUT] = flat;
            header[Q8_DW3_VARIANT] = 1;
            const int two = g->stride_h == 1 && g->dil_h == 1 && g->stride_w == 1 && g->dil_w == 1;
            header[Q8_DW3_REST] = !flat && !two && C % 64 != 0;
            if (!header[Q8_DW3_REST]) return;
        }
    }
    // The AVX2 variants' plain requantization (see ck_q8_mark_plain) per block: the accumulator,
    // bias + sum (x - zx)(w - zw) whatever order its terms are added in, stays below 2^29.
    const int32_t zx_fits = q8_zero_point_fits(is_signed, input_zero_point);
    q8_plain_begin(params, C);
    for (int32_t c = 0; c < C; c++) {
        uint32_t sum = 0;
        int64_t magnitude = 0;
        for (int32_t t = 0; t < taps; t++) {
            int32_t *w = packed + (size_t)t * cp + c;
            sum += (uint32_t)*w;
            magnitude += *w < 0 ? -(int64_t)*w : (int64_t)*w;
            *w = (int32_t)(uint32_t)(uint16_t)(int16_t)*w;
        }
        int32_t *block = params + (size_t)(c / CK_Q8_NR) * CK_Q8_PARAMS_PER_BLOCK;
        const int32_t j = c % CK_Q8_NR;
        q8_plain_check(block, j, zx_fits, (block[j] < 0 ? -(int64_t)block[j] : (int64_t)block[j]) + 255 * magnitude);
        block[j] = (int32_t)((uint32_t)block[j] - (uint32_t)input_zero_point * sum);
    }
}

void ck_dwconv_q8(int32_t isa, const ck_conv_geometry *g, const void *input, int32_t is_signed,
                  int32_t input_zero_point, const int32_t *packed, const int32_t *params,
                  const ck_q8_output *out, void *output, int32_t row_begin, int32_t row_end, const uint8_t *pad) {
    const int32_t taps = g->k_h * g->k_w, C = g->in_c;
    if (taps <= 0 || taps > Q8_MAX_TAPS) return;
    const int32_t cp = (C + CK_Q8_NR - 1) / CK_Q8_NR * CK_Q8_NR;
#if CK_X86
    int32_t c_begin = 0;
    const int32_t *header = packed + q8_dw_taps_count(g);
    if (isa >= CK_ISA_AVX512VNNI && header[Q8_DW3_VARIANT] == 1) {
        q8_dw3_rows(g, (const uint8_t *)input, is_signed, header, out, (uint8_t *)output, row_begin, row_end, pad);
        if (!header[Q8_DW3_REST]) return;
        c_begin = C / 64 * 64;
    }
#endif
    q8_dw_fn fn = is_signed ? q8_dw_portable_s : q8_dw_portable_u;
    int32_t blocked = 0; // whether fn computes 4 pixels at once
#if CK_X86
    if (isa >= CK_ISA_AVX512VNNI) { fn = is_signed ? q8_dw_vnni_s : q8_dw_vnni_u; blocked = 1; }
    else if (isa >= CK_ISA_AVX512) { fn = is_signed ? q8_dw_avx512_s : q8_dw_avx512_u; blocked = 1; }
    else if (isa >= CK_ISA_AVX2) { fn = is_signed ? q8_dw_avx2_s : q8_dw_avx2_u; blocked = 1; }
#else
    (void)isa;
#endif
    int32_t in_off[Q8_MAX_TAPS], w_off[Q8_MAX_TAPS];
    q8_dw_args a;
    a.rqp = NULL;
    a.rqv = -1;
#if CK_X86
    if (isa >= CK_ISA_AVX2 && isa < CK_ISA_AVX512) {
        a.rqp = q8_rqp_avx2_variant(out);
        a.rqv = q8_rqp_avx2_variant_number(out);
    }
#endif
    // AVX2 and AVX-512 variants: a window inside the image reads base + interior_addr[t] (byte offsets of
    // the taps from its top-left pixel); others the addresses of border_addr (tap_base 0).
    uintptr_t interior_addr[Q8_MAX_TAPS], border_addr[Q8_MAX_TAPS];
    int32_t interior_steps[Q8_MAX_TAPS], border_steps[Q8_MAX_TAPS];
    a.g = g;
    a.input = (const uint8_t *)input;
    a.input_zero_point = input_zero_point;
    a.packed = packed;
    a.params = params;
    a.out = out;
    a.in_off = in_off;
    a.w_off = w_off;
    a.pixel_step = g->stride_w * C;
    a.cp = cp;
    a.rows3 = g->k_w == 3 && g->dil_w == 1 && (g->stride_w == 1 || g->stride_w == 2) ? g->stride_w : 0;
#if CK_X86
    a.c_begin = c_begin;
#else
    a.c_begin = 0;
#endif
    const int32_t span_h = (g->k_h - 1) * g->dil_h, span_w = (g->k_w - 1) * g->dil_w;
    for (int32_t ky = 0, t = 0; ky < g->k_h; ky++) {
        for (int32_t kx = 0; kx < g->k_w; kx++, t++) {
            interior_addr[t] = (uintptr_t)(((size_t)ky * (size_t)g->dil_h * (size_t)g->in_w + (size_t)kx * (size_t)g->dil_w) * (size_t)C);
            interior_steps[t] = a.pixel_step;
        }
    }
    for (int32_t oy = row_begin; oy < row_end; oy++) {
        const int32_t iy0 = oy * g->stride_h - g->pad_top;
        const int32_t rows_inside = iy0 >= 0 && iy0 + span_h < g->in_h;
        int32_t ox = 0;
        while (ox < g->out_w) {
            const int32_t ix0 = ox * g->stride_w - g->pad_left;
            int32_t n = 0;
            if (blocked && rows_inside && ix0 >= 0 && ix0 + span_w < g->in_w) {
                a.tap_base = (uintptr_t)(a.input + ((size_t)iy0 * (size_t)g->in_w + (size_t)ix0) * (size_t)C);
                a.tap_addr = interior_addr;
                a.tap_steps = interior_steps;
                n = taps;
            } else if (blocked) {
                a.tap_base = 0;
                a.tap_addr = border_addr;
                a.tap_steps = border_steps;
                // Every tap: the pad outside the image (the same for the block's pixels, whose
                // columns are all inside when there are four).
                for (int32_t ky = 0; ky < g->k_h; ky++) {
                    const int32_t iy = iy0 + ky * g->dil_h;
                    for (int32_t kx = 0; kx < g->k_w; kx++, n++) {
                        const int32_t ix = ix0 + kx * g->dil_w;
                        if (iy < 0 || iy >= g->in_h || ix < 0 || ix >= g->in_w) {
                            border_addr[n] = (uintptr_t)pad;
                            border_steps[n] = 0;
                        } else {
                            border_addr[n] = (uintptr_t)(a.input + (size_t)(iy * g->in_w + ix) * (size_t)C);
                            border_steps[n] = a.pixel_step;
                        }
                    }
                }
            } else for (int32_t ky = 0; ky < g->k_h; ky++) {
                const int32_t iy = iy0 + ky * g->dil_h;
                if (iy < 0 || iy >= g->in_h) continue;
                for (int32_t kx = 0; kx < g->k_w; kx++) {
                    const int32_t ix = ix0 + kx * g->dil_w;
                    if (ix < 0 || ix >= g->in_w) continue;
                    in_off[n] = (iy * g->in_w + ix) * C;
                    w_off[n] = (ky * g->k_w + kx) * cp;
                    n++;
                }
            }
            // Four pixels share the valid taps when the first and the fourth have every column inside.
            const int32_t last = ix0 + 3 * g->stride_w;
            const int32_t span = (g->k_w - 1) * g->dil_w;
            a.pixels = (blocked && ox + 4 <= g->out_w && ix0 >= 0 && last + span < g->in_w) ? 4 : 1;
            a.taps = n;
            a.dst = (uint8_t *)output + ((size_t)oy * g->out_w + ox) * C;
            fn(&a);
            ox += a.pixels;
        }
    }
}
