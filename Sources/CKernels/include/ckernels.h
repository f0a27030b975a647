// CKernels: EdgeVision's hot micro-kernels in C.
//
// Every kernel has a portable variant (plain C, compiled for any target, ARM64 included) and, on
// x86-64, variants compiled with per-function `__attribute__((target(...)))` for AVX2+FMA, AVX-512
// and AVX-512-VNNI. Callers pass the instruction-set level to use; `ck_best_isa()` detects the best
// one the CPU supports once. No global state besides that cached detection; every function is
// thread-safe and never allocates.
//
// This header is internal to the engine (InferenceEngine imports it); no C type appears in a
// public Swift API.
#ifndef EDGEVISION_CKERNELS_H
#define EDGEVISION_CKERNELS_H

#include <stddef.h>
#include <stdint.h>

// The worker pool of multi-threaded invokes (pool.c). Included here so that existing builds, whose
// module cache predates the header, see it too.
#include "ckernels_pool.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Instruction-set levels, ordered: a level implies every lower one.
enum {
    CK_ISA_PORTABLE = 0,   ///< plain C
    CK_ISA_AVX2 = 1,       ///< AVX2 + FMA
    CK_ISA_AVX512 = 2,     ///< AVX-512 F/BW/DQ/VL
    CK_ISA_AVX512VNNI = 3, ///< AVX-512 + VNNI
};

/// The best level this CPU supports (detected once; portable on non-x86 machines).
int32_t ck_best_isa(void);

/// Whether the CPU has AVX-512 VBMI (byte permutes), detected once; 0 elsewhere.
int32_t ck_has_avx512vbmi(void);

/// Whether the CPU runs each 512-bit operation as two 256-bit halves (AMD Zen 4: family 0x19 with
/// AVX-512), detected once; 0 elsewhere. There 512-bit vectors bring no more arithmetic per cycle
/// than AVX2's, and some kernels run faster in their AVX2 form (see conv_f32_run).
int32_t ck_avx512_split(void);

/// Makes the calling thread flush denormal floats to zero (x86: MXCSR FTZ + DAZ; ARM64: FPCR FZ)
/// and returns the previous state for ck_denormals_restore. Denormals (|x| < 1.2e-38) cost ~20x
/// per operation on x86 and carry no information a vision model uses; XNNPACK-backed runtimes run
/// with them flushed too. No-op (returns 0) elsewhere.
uint64_t ck_denormals_flush(void);
void ck_denormals_restore(uint64_t state);

/// Geometry of a 2-D convolution over one NHWC image (batches are handled by the caller).
typedef struct {
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w;
    int32_t dil_h, dil_w;
    int32_t pad_top, pad_left;
} ck_conv_geometry;

// ---------------------------------------------------------------------------------------------
// float32 convolution as an implicit GEMM (no im2col buffer): rows are output pixels, columns
// output channels in blocks of CK_F32_NR, the reduction runs over taps × input channels. Weights
// are packed once per model by ck_conv_f32_pack.

#define CK_F32_NR 16

/// Floats of packed weights for `g` (output channels rounded up to CK_F32_NR, bias included, and a
/// trailer of CK_F32_NR floats).
size_t ck_conv_f32_packed_count(const ck_conv_geometry *g);

/// Packs filter [out_c][k_h][k_w][in_c] and an optional bias [out_c] into `packed`
/// (ck_conv_f32_packed_count floats). The trailer records whether the weights are finite and no
/// bias is -0.0: then the kernels may skip input channels that are ±0 in all pixels of a tile
/// (post-ReLU inputs) with the same results to the bit.
void ck_conv_f32_pack(const ck_conv_geometry *g, const float *filter, const float *bias, float *packed);

/// Fills `offsets` (out_h * out_w * k_h * k_w entries, [pixel][tap]) with the element offset in the
/// image of the input pixel each tap of each output pixel reads, or -1 outside the image. Built once
/// per model, it spares the micro-kernels the per-tile coordinate arithmetic.
void ck_conv_offsets(const ck_conv_geometry *g, int32_t *offsets);

/// Computes output pixels [pixel_begin, pixel_end) (flattened oy * out_w + ox) and output-channel
/// blocks [block_begin, block_end) of one image: output = clamp(conv(input) + bias, out_min, out_max).
/// `zeros` holds at least k_w * in_c zero floats (read for taps outside the image); `offsets` is
/// the table of ck_conv_offsets or NULL (then computed per tile; it is not read when in_c is small
/// and each filter row's taps are read as one run of k_w * in_c floats).
void ck_conv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                 float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                 int32_t block_end, float out_min, float out_max, const float *zeros,
                 const int32_t *offsets);

/// Whether ck_conv_f32 reads each filter row's taps as one run of k_w * in_c floats (few input
/// channels, dilation 1 along x: first layers); then it never reads an offsets table.
int32_t ck_conv_f32_row_taps(const ck_conv_geometry *g);

/// First layers with 3 input channels, stride 2 along x, dilation 1 along x, k_w 3 or 5, k_h <= 7,
/// out_c a multiple of 8 up to 64 (MobileNet's, DeepLab's, selfie segmentation's and BlazeFace's
/// first convolution): whether ck_conv_c3s2_f32 handles `g`.
int32_t ck_conv_c3s2_supported(const ck_conv_geometry *g);

/// Output rows [row_begin, row_end) of such a layer, vectorized over 16 (AVX-512) or 8 (AVX2) output pixels; `filter` is
/// the op's [out_c][k_h][k_w][3] weights, `bias` may be NULL. Returns 0 (nothing done) where the
/// ISA or the shape is not supported: the caller then runs ck_conv_f32.
int32_t ck_conv_c3s2_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *filter, const float *bias,
                         float *output, int32_t row_begin, int32_t row_end, float out_min, float out_max);

/// A residual connection folded into a convolution's epilogue (CONV_2D → [PAD of the channels] →
/// ADD): after the convolution's own clamp, output channel j of pixel p becomes
/// clamp(r + output, lo, hi) with r = data[p * pixel_stride + j - before] for before <= j < before +
/// channels and +0.0 elsewhere (the zeros of a channel PAD), TFLite's clamp (NaN passes).
typedef struct {
    const float *data;  ///< the residual image, [pixel][channels]
    int32_t channels;
    /// Floats between pixels of `data`: `channels`, or 0 when every pixel adds the same vector
    /// (a constant image's projection, see ConstantBranchFusion).
    int32_t pixel_stride;
    int32_t before;
    float lo, hi;
} ck_residual_f32;

/// ck_conv_f32 with a residual added to each tile while it is in cache (`residual` may be NULL).
void ck_conv_f32_residual(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                          float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                          int32_t block_end, float out_min, float out_max, const float *zeros,
                          const int32_t *offsets, const ck_residual_f32 *residual);

/// ck_conv_f32 that also brings the `prefetch_bytes` bytes from `prefetch` into L2, one 64-byte line
/// per reduction step of its AVX-512 1×1 tiles (as many as it has; the rest are left): the weights
/// of a later, memory-bound layer loaded while this compute-bound one runs (see WeightPrefetch).
/// Prefetches never fault and do not change any result. `prefetch` may be NULL.
void ck_conv_f32_prefetching(int32_t isa, const ck_conv_geometry *g, const float *input, const float *packed,
                             float *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                             int32_t block_end, float out_min, float out_max, const float *zeros,
                             const int32_t *offsets, const void *prefetch, size_t prefetch_bytes);

/// The residual step alone over pixels [pixel_begin, pixel_end) and channels [c_begin, c_end) of
/// an output with out_c channels per pixel (in place).
void ck_residual_add_f32(int32_t isa, const ck_residual_f32 *residual, float *output, int32_t out_c,
                         int32_t pixel_begin, int32_t pixel_end, int32_t c_begin, int32_t c_end);

// ---------------------------------------------------------------------------------------------
// float32 depthwise convolution with depth multiplier 1: weights [k_h][k_w][c] read in place.

/// Computes output rows [row_begin, row_end) of one image.
void ck_dwconv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *weights,
                   const float *bias, float *output, int32_t row_begin, int32_t row_end,
                   float out_min, float out_max);

/// ck_dwconv_f32 over an input of `ring_rows` rows that holds input row y at y mod ring_rows
/// (a window of the rows a band of output rows reads; ring_rows 0: the whole input, row y at y).
/// The rows the call reads must be in the window; the results are those of the whole input.
void ck_dwconv_f32_ring(int32_t isa, const ck_conv_geometry *g, const float *input, int32_t ring_rows,
                        const float *weights, const float *bias, float *output, int32_t row_begin, int32_t row_end,
                        float out_min, float out_max);

// ---------------------------------------------------------------------------------------------
// float32 transposed convolution, computed per output pixel (a gather: no scatter, no zeroing
// pass). `g` describes the transposed op: in_* is its input, out_* its output, k_* the filter,
// stride_*, pad_top/pad_left its leading padding; dil_* are ignored (1). Weights are the op's own
// layout [out_c][k_h][k_w][in_c], read in place. output = clamp(bias + sum, out_min, out_max).

/// Computes output rows [row_begin, row_end) of one image. `bias` may be NULL.
void ck_tconv_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *weights,
                  const float *bias, float *output, int32_t row_begin, int32_t row_end,
                  float out_min, float out_max);

/// The second half of a transposed convolution computed as a GEMM: `columns` holds, per input
/// pixel, the k_h * k_w * out_c products (input pixel · filter tap, [pixel][tap][out_c]); this adds
/// each output pixel's contributions (col2im), then the bias and the clamp. Output rows
/// [row_begin, row_end) of one image.
void ck_tconv_col2im_f32(const ck_conv_geometry *g, const float *columns, const float *bias, float *output,
                         int32_t row_begin, int32_t row_end, float out_min, float out_max);

/// Most filter values per input pixel (k_h * k_w * out_c) ck_tconv_tile_f32 handles.
#define CK_TCONV_TILE_MAX_J 64

/// Transposed convolution whose windows tile the output exactly (k_h == stride_h, k_w ==
/// stride_w, no padding, out = in * k): output pixel (iy * k_h + ky, ix * k_w + kx) channel oc is
/// clamp(bias[oc] + in[iy][ix] · wt[(ky * k_w + kx) * out_c + oc]). `wt` is [k_h * k_w * out_c][in_c]
/// (at most CK_TCONV_TILE_MAX_J rows). Computes the output rows of input rows [row_begin, row_end).
void ck_tconv_tile_f32(int32_t isa, const ck_conv_geometry *g, const float *input, const float *wt, const float *bias,
                       float *output, int32_t row_begin, int32_t row_end, float out_min, float out_max);

// ---------------------------------------------------------------------------------------------
// float32 max pooling (NHWC, channels innermost): windows clipped to the image, as TFLite.

/// Computes output rows [row_begin, row_end) of one image; k_*, stride_*, pad_* describe the
/// window (in_c == out_c).
void ck_maxpool_f32(int32_t isa, const ck_conv_geometry *g, const float *input, float *output,
                    int32_t row_begin, int32_t row_end, float out_min, float out_max);

/// float32 average pooling: like ck_maxpool_f32, the window clipped to the image, summed in
/// row-major order, divided by the number of pixels summed (as the reference kernel: bit-identical).
void ck_avgpool_f32(int32_t isa, const ck_conv_geometry *g, const float *input, float *output,
                    int32_t row_begin, int32_t row_end, float out_min, float out_max);

/// The channel sums of pixels [pixel_begin, pixel_end) of an image of `channels` interleaved
/// channels (NHWC): sum[c] = input[pixel_begin][c] + input[pixel_begin + 1][c] + ..., added in
/// pixel order (the same values for every instruction set). A global average pool's partial sums.
void ck_sum_pixels_f32(int32_t isa, const float *input, int32_t channels, int32_t pixel_begin, int32_t pixel_end,
                       float *sum);

// ---------------------------------------------------------------------------------------------
// float32 element-wise functions over [begin, end).

/// Logistic 1 / (1 + exp(-x)); exp by range reduction and the Cephes polynomial (within 5e-7
/// relative of libm's result; below exp's range the result is ~4e-39 instead of 0), NaN gives NaN.
void ck_logistic_f32(int32_t isa, const float *input, float *output, size_t begin, size_t end);

/// SOFTMAX of `rows` rows of `depth` values: exp((x - max) * beta) / sum. AVX-512, rows of 16 or
/// more values without NaN or infinity: exp as in ck_logistic_f32 (within 5e-7 relative of libm's)
/// and the sum in vector lanes (each probability within about 1e-6 relative of the scalar
/// evaluation); other rows (and other instruction sets) exactly as the scalar loop of the
/// reference kernel: the maximum by `>` from x[0], libm's expf, the sum in order.
void ck_softmax_f32(int32_t isa, const float *input, float *output, size_t rows, size_t depth, float beta);

/// HARD_SWISH x * min(6, max(0, x + 3)) * (1/6), evaluated in that order (bit-identical to the
/// reference kernel); a NaN input gives NaN.
void ck_hardswish_f32(int32_t isa, const float *input, float *output, size_t begin, size_t end);

/// IEEE half-precision bits to float32 over [begin, end): normals, subnormals (exact), signed zeros,
/// infinities, and NaNs with their payload in the high mantissa bits, not quieted (the same bits
/// on every instruction set; float16 weights' DEQUANTIZE).
void ck_f16_to_f32(int32_t isa, const uint16_t *input, float *output, size_t begin, size_t end);

/// 8-bit table lookup over [begin, end): output[i] = table[input[i]] (256-entry table). Uses
/// AVX-512 VBMI byte permutes when the CPU has them (checked once), else plain C.
void ck_lut_8(int32_t isa, const uint8_t *table, const uint8_t *input, uint8_t *output, size_t begin, size_t end);

/// PAD of the innermost dimension only: output row r (rows [row_begin, row_end)) is `before_bytes`
/// bytes of `fill`, input row r (`in_bytes` bytes), then `after_bytes` bytes of `fill`.
void ck_pad_rows(int32_t isa, const void *input, void *output, size_t row_begin, size_t row_end, size_t in_bytes,
                 size_t before_bytes, size_t after_bytes, uint8_t fill);

/// float32 ADD, SUB, MUL, DIV with broadcasting over one outer dimension, then the clamp
/// (TFLite's: NaN passes through). Element (o, i) of the output, o in [outer_begin, outer_end),
/// i in [0, inner), is a[o * a_outer + i * a_inner] op b[o * b_outer + i * b_inner] (strides 0
/// where an operand repeats). IEEE arithmetic, so bit-identical to the scalar reference.
enum { CK_BINARY_ADD = 0, CK_BINARY_SUB = 1, CK_BINARY_MUL = 2, CK_BINARY_DIV = 3 };
void ck_binary_f32(int32_t isa, int32_t op, const float *a, const float *b, float *out,
                   size_t outer_begin, size_t outer_end, size_t inner,
                   size_t a_outer, size_t a_inner, size_t b_outer, size_t b_inner, float lo, float hi);

/// dst[j] += src[r * count + j] for r = 0, 1, ..., rows - 1 in that order, j in [0, count): the
/// float MEAN / SUM of the pixels of an image (the reference's order, so the same bits), with the
/// sums in registers instead of a load and store per pixel.
void ck_sum_rows_f32(int32_t isa, const float *src, size_t rows, size_t count, float *dst);

/// dst[j] += src[r * count + j] over r in [0, rows), j in [0, count), for int8 (is_signed) or uint8
/// bytes, in wrapping int32: the 8-bit MEAN / SUM sums (integer, so the order does not matter).
void ck_sum_rows_8(int32_t isa, const void *src, int32_t is_signed, size_t rows, size_t count, int32_t *dst);

/// float32 RESIZE_BILINEAR of one NHWC image, output rows [row_begin, row_end), as separable lerps
/// with fused multiply-adds: t0 = fma(p10 - p00, dy, p00), t1 = fma(p11 - p01, dy, p01), out =
/// fma(t1 - t0, dx, t0), with dy = ys[y] - y0[y] and dx = xs[x] - x0[x], vertically first (XNNPACK
/// also interpolates with lerps, horizontally first). Every instruction set computes these same
/// operations, so the same values; they differ from the reference kernel's four-weight sum by float
/// rounding (a few ulps).
/// y0/y1/ys (out_h entries) and x0/x1/xs (out_w entries) are the source rows/columns and the
/// float source positions.
void ck_resize_bilinear_f32(int32_t isa, const float *input, int32_t in_w, int32_t channels, float *output, int32_t out_w,
                            const int32_t *y0, const int32_t *y1, const float *ys,
                            const int32_t *x0, const int32_t *x1, const float *xs, int32_t row_begin, int32_t row_end);

/// uint8 RESIZE_BILINEAR (the reference's float path: the same weighted sum + 0.5, clamped to
/// [0, 255], truncated), bit-identical; arguments as ck_resize_bilinear_f32.
void ck_resize_bilinear_u8(int32_t isa, const uint8_t *input, int32_t in_w, int32_t channels, uint8_t *output, int32_t out_w,
                           const int32_t *y0, const int32_t *y1, const float *ys,
                           const int32_t *x0, const int32_t *x1, const float *xs, int32_t row_begin, int32_t row_end);

/// ARG_MAX over the innermost axis of 8-bit values: for rows [row_begin, row_end) of `axis`
/// bytes, the first index of the largest value (signed compares when `is_signed`), written as
/// int32 or int64 (`wide`).
void ck_argmax_8(int32_t isa, const uint8_t *input, int32_t axis, int32_t is_signed, void *output, int32_t wide,
                 size_t row_begin, size_t row_end);

// ---------------------------------------------------------------------------------------------
// 8-bit quantized ADD/SUB of same-shape tensors, bit-exact with TFLite's reference arithmetic:
// raw = table1[a] + table2[b] (each input's rescaled value, tabulated per 8-bit value by the
// caller), then SaturatingRoundingDoublingHighMul(raw, multiplier) and RoundingDivideByPOT(-shift)
// (shift in [-31, 0]), + output zero point, clamped to [act_min, act_max].

typedef struct {
    const int32_t *table1;   ///< 256 entries, indexed by the input's byte
    const int32_t *table2;
    int32_t multiplier;      ///< positive
    int32_t shift;           ///< in [-31, 0]
    int32_t output_zero_point;
    int32_t act_min, act_max;
    int32_t is_signed;       ///< int8 output (else uint8)
} ck_qadd_params;

void ck_qadd_8(int32_t isa, const ck_qadd_params *p, const uint8_t *a, const uint8_t *b, uint8_t *out,
               size_t begin, size_t end);

#ifdef __cplusplus
}
#endif

#endif
