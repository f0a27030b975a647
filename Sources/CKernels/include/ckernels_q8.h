// CKernels: quantized (uint8 / int8) convolution, depthwise convolution and fully-connected
// micro-kernels, bit-exact with the engine's reference kernels (TFLite integer semantics).
//
// Scheme: exact int16 dot products. Activations are converted once per layer to int16
// (a - input_zero_point) and weights once per model to int16 (w - filter_zero_point), so
// every product fits int16 x int16 -> int32 and pairs are summed by vpdpwssd (AVX-512-VNNI) or
// vpmaddwd (AVX2 / AVX-512): no correction terms, taps outside the image read a zero buffer.
// Accumulation wraps in int32 like the reference kernels. Requantization (bias,
// MultiplyByQuantizedMultiplier, output zero point, activation clamp) is fused into the epilogue
// and vectorized, with either rounding of ``ck_q8_rounding``.
//
// Every function is thread-safe and never allocates.
#ifndef EDGEVISION_CKERNELS_Q8_H
#define EDGEVISION_CKERNELS_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "ckernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Output channels per packed block.
#define CK_Q8_NR 16
/// int32 values of requantization parameters per block of CK_Q8_NR channels: 6 arrays of 16
/// (bias, multiplier, left shift, right shift and two rounding constants), then for the AVX-512
/// epilogue (one 64-bit rounding shift) the nudges and shifts of the even and odd lanes (4 x 16),
/// the output zero point per lane (0 where folded into the nudge), 3 flags (any left shift, any
/// zero point to add, and, set by the byte-path packing functions, whether the block's shorter exact
/// requantization applies) in 16 values, and the nudge adjustments of negative products (2 x 16).
#define CK_Q8_PARAMS_PER_BLOCK 224

/// How MultiplyByQuantizedMultiplier rounds the final right shift.
typedef enum {
    /// gemmlowp RoundingDivideByPOT: half away from zero (TFLite reference kernels).
    CK_Q8_ROUND_REFERENCE = 0,
    /// ruy / cpu_backend_gemm on x86: (x + 2^(e-1)) >> e, half up.
    CK_Q8_ROUND_HALF_UP = 1,
} ck_q8_rounding;

/// Output quantization of one op: zero point and the fused activation's clamp (within the type's
/// range, so the stored byte is the low byte of the clamped value for uint8 and int8 alike).
typedef struct {
    int32_t zero_point;
    int32_t act_min, act_max;
    int32_t rounding; ///< a ck_q8_rounding
} ck_q8_output;

/// int32 values of the packed requantization parameters of `channels` output channels.
size_t ck_q8_params_count(int32_t channels);

/// Packs per-channel bias (nullable), multipliers and shifts (TFLite QuantizeMultiplier: positive =
/// left) for `rounding` and the op's output zero point (the same as the ck_q8_output given to the
/// kernels) into `params` (ck_q8_params_count values).
void ck_q8_params_pack(int32_t channels, const int32_t *bias, const int32_t *multipliers,
                       const int32_t *shifts, int32_t rounding, int32_t output_zero_point, int32_t *params);

/// Input channels as converted (rounded up to even: int16 pairs).
static inline int32_t ck_q8_padded_channels(int32_t in_c) { return (in_c + 1) & ~1; }

/// Converts `pixels` pixels of `in_c` uint8 (`is_signed` = 0) or int8 values to int16
/// (value - zero_point), `ck_q8_padded_channels(in_c)` per pixel, the padding channel 0.
void ck_q8_convert_input(const void *input, int32_t is_signed, int32_t zero_point, int32_t pixels,
                         int32_t in_c, int16_t *output);

// ---------------------------------------------------------------------------------------------
// Convolution (and FULLY_CONNECTED as a 1x1 convolution) as an implicit GEMM over int16 operands.

/// int16 values of packed weights for `g`.
size_t ck_conv_q8_packed_count(const ck_conv_geometry *g);

/// Packs filter [out_c][k_h][k_w][in_c] of uint8 (`is_signed` = 0) or int8 values minus
/// `filter_zero_point` into `packed` (ck_conv_q8_packed_count values). `isa` picks how (AVX2
/// transposes or plain C); the packed values are the same either way.
void ck_conv_q8_pack(int32_t isa, const ck_conv_geometry *g, const void *filter, int32_t is_signed,
                     int32_t filter_zero_point, int16_t *packed);

/// Marks the blocks of `params` (filled by ck_q8_params_pack for g->out_c channels; biases as the
/// int16 path and ck_conv_q8_c3s2 add them) whose shorter exact requantization applies: no left
/// shift, the output zero point folded, a right shift of 1-22, both zero points inside the type's
/// range and |bias| + 255 * sum |w - zw| below 2^29 (so any input keeps the accumulator there).
void ck_q8_mark_plain(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point,
                      int32_t input_zero_point, int32_t *params);

/// Computes output pixels [pixel_begin, pixel_end) and channel blocks [block_begin, block_end)
/// of one image. `input` is the image converted by ck_q8_convert_input; `zeros` holds at least
/// ck_q8_padded_channels(in_c) zeros; `output` holds uint8 or int8 values [out_h*out_w][out_c].
void ck_conv_q8(int32_t isa, const ck_conv_geometry *g, const int16_t *input, const int16_t *packed,
                const int32_t *params, const ck_q8_output *out, void *output, int32_t pixel_begin,
                int32_t pixel_end, int32_t block_begin, int32_t block_end, const int16_t *zeros);

/// First layers on AVX2 below AVX-512-VNNI (where the byte path's row variant runs): 3 input
/// channels, the shapes of ck_conv_c3s2_supported. Exact through float sums (see conv_q8.c).
int32_t ck_conv_q8_c3s2_supported(int32_t isa, const ck_conv_geometry *g);

/// Floats of ck_conv_q8_c3s2_pack's weights.
size_t ck_conv_q8_c3s2_packed_count(const ck_conv_geometry *g);

/// Packs filter [out_c][k_h][k_w][3] of uint8 (`is_signed` = 0) or int8 values minus
/// `filter_zero_point` as floats (ck_conv_q8_c3s2_packed_count).
void ck_conv_q8_c3s2_pack(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point, float *packed);

/// Output rows [row_begin, row_end) of one image from the raw uint8/int8 input; `params` from
/// ck_q8_params_pack. Does nothing where ck_conv_q8_c3s2_supported is 0.
void ck_conv_q8_c3s2(int32_t isa, const ck_conv_geometry *g, const void *input, int32_t is_signed, int32_t input_zero_point,
                     const float *packed, const int32_t *params, const ck_q8_output *out, void *output, int32_t row_begin,
                     int32_t row_end);

// ---------------------------------------------------------------------------------------------
// The same convolution on AVX-512-VNNI with vpdpbusd (u8 x s8, 4 products per int32 lane, twice
// the int16 path's work per instruction), exact through constant corrections (see conv_q8.c):
// the raw activations are one operand, the weights shifted by 128 the other; the zero-point terms
// are folded into the bias, and a per-output-pixel term (the sum of the activations its taps read)
// is added in the tile (int8 with filter zero point 0 and at most 2048 products per output: the
// activations flipped to unsigned instead, once per tile into a buffer, with no per-pixel term).
// Taps outside the image read a buffer of the input zero point. The input is read in place when
// in_c is a multiple of 4, else from a copy padded to 4 channels. Blocks whose accumulators are
// bounded (|bias| + 255 * sum |w - zw| < 2^29) and whose multipliers need no left shift take a
// shorter exact requantization, and clamps equal to the type's range are left to saturating stores.

/// Input channels of the byte path's pixels (rounded up to 4: vpdpbusd quads).
static inline int32_t ck_q8b_padded_channels(int32_t in_c) { return (in_c + 3) & ~3; }

/// Bytes of packed byte-path weights for `g`.
size_t ck_conv_q8b_packed_count(const ck_conv_geometry *g);

/// Packs the filter for the byte path, folds the per-channel corrections into the bias of `params`
/// (already filled by ck_q8_params_pack for g->out_c channels) and marks the blocks whose shorter
/// requantization applies (bounded accumulators; see conv_q8.c). `isa` picks how the operand bytes
/// are moved (AVX-512 gathers or plain C); the packed bytes are the same either way.
void ck_conv_q8b_pack(int32_t isa, const ck_conv_geometry *g, const void *filter, int32_t is_signed,
                      int32_t filter_zero_point, int32_t input_zero_point, int8_t *packed, int32_t *params);

/// Copies `pixels` pixels of in_c bytes to ck_q8b_padded_channels(in_c) bytes each (padding 0)
/// and writes each pixel's sum of values (uint8, or int8 when `is_signed`) to `pixel_sums`.
void ck_q8b_convert_input(const void *input, int32_t is_signed, int32_t pixels, int32_t in_c, uint8_t *output,
                          int32_t *pixel_sums);

/// Like ck_conv_q8 for the byte path (AVX-512-VNNI only: call it only when ck_best_isa() says so).
/// `input` has ck_q8b_padded_channels(in_c) bytes per pixel; `pixel_sums` (nullable: then summed
/// per tap) the sums from ck_q8b_convert_input; `pad` holds ck_q8b_padded_channels(in_c) bytes:
/// in_c bytes of the input zero point, then zeros.
void ck_conv_q8b(const ck_conv_geometry *g, const uint8_t *input, const int32_t *pixel_sums, const int8_t *packed,
                 const int32_t *params, const ck_q8_output *out, int32_t is_signed, int32_t filter_zero_point,
                 int32_t input_zero_point, void *output, int32_t pixel_begin, int32_t pixel_end, int32_t block_begin,
                 int32_t block_end, const uint8_t *pad);

// ---------------------------------------------------------------------------------------------
// The byte path for few input channels (AVX-512-VNNI only): with dilation 1 along x, each filter
// row's k_w taps read k_w * in_c contiguous bytes, reduced in ceil(k_w * in_c / 4) quads (see
// conv_q8.c). The input is copied once per run into a padded image (the padding holds the input
// zero point), flipped to unsigned for int8; no per-pixel terms where every weight minus the filter
// zero point fits int8, else one more vpdpbusd per quad for them.

/// Whether the row path applies: dilation 1 along x, in_c not a multiple of 4, k_w * in_c <= 32,
/// k_h <= 16, and every weight minus the filter zero point fits int8 or (128 for uint8, 0 for int8)
/// minus the filter zero point does.
int32_t ck_conv_q8r_fits(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point);

/// Bytes of packed row-path weights.
size_t ck_conv_q8r_packed_count(const ck_conv_geometry *g);

/// Packs the filter for the row path and folds the input zero point's share into the bias of
/// `params` (already filled by ck_q8_params_pack for g->out_c channels).
void ck_conv_q8r_pack(const ck_conv_geometry *g, const void *filter, int32_t is_signed, int32_t filter_zero_point,
                      int32_t input_zero_point, int8_t *packed, int32_t *params);

/// Rows of the padded image, and its bytes (rows plus slack).
int32_t ck_conv_q8r_image_rows(const ck_conv_geometry *g);
size_t ck_conv_q8r_image_bytes(const ck_conv_geometry *g);

/// Writes rows [row_begin, row_end) of the padded image of one input image (the last row also
/// writes the slack); any split of the rows gives the same image.
void ck_conv_q8r_convert_input(const ck_conv_geometry *g, const void *input, int32_t is_signed, int32_t input_zero_point,
                               int32_t row_begin, int32_t row_end, uint8_t *image);

/// Like ck_conv_q8b on the padded image (call it only when ck_best_isa() is AVX-512-VNNI).
void ck_conv_q8r(const ck_conv_geometry *g, const uint8_t *image, const int8_t *packed, const int32_t *params,
                 const ck_q8_output *out, int32_t is_signed, void *output, int32_t pixel_begin, int32_t pixel_end,
                 int32_t block_begin, int32_t block_end);

// ---------------------------------------------------------------------------------------------
// Depthwise convolution, depth multiplier 1.

/// int32 values of packed depthwise weights: [k_h*k_w][in_c rounded up to CK_Q8_NR], then the
/// header and weights of the 3x3 AVX-512-VNNI variant (see ck_dwconv_q8_prepare).
size_t ck_dwconv_q8_packed_count(const ck_conv_geometry *g);

/// Packs filter [k_h][k_w][c] minus `filter_zero_point` as int32 values (and no 3x3 variant).
void ck_dwconv_q8_pack(const ck_conv_geometry *g, const void *filter, int32_t is_signed,
                       int32_t filter_zero_point, int32_t *packed);

/// Prepares `packed` (from ck_dwconv_q8_pack) and `params` (from ck_q8_params_pack, for the
/// rounding of the ck_q8_output the kernel will get) for `isa` (nothing below CK_ISA_AVX2). On
/// AVX-512-VNNI, 3x3 filters with horizontal stride 1 or 2 (dilation 1) or dilation 2 (stride 1)
/// whose weights fit its scheme get the 3x3 variant: weights packed as int8 quads of rows with the
/// input zero point's share folded into per-block requantization records kept in `packed` (vpdpbusd
/// over quads of input rows; see conv_q8.c). Otherwise (and for the channels past the last group of
/// 64 in the 3x3 variant's one-row passes) the AVX2 and AVX-512 variants get each weight's low int16 in its
/// int32 lane (high half 0) and -input_zero_point * (the sum of each channel's weights) folded into
/// the bias of `params`. All of them multiply the raw input; taps outside the image read `pad` (see
/// ck_dwconv_q8).
void ck_dwconv_q8_prepare(int32_t isa, const ck_conv_geometry *g, int32_t is_signed, int32_t input_zero_point,
                          int32_t *packed, int32_t *params);

/// Computes output rows [row_begin, row_end) of one image from the raw uint8/int8 input, with
/// `packed` and `params` prepared by ck_dwconv_q8_prepare for the same `isa`. `pad` holds in_c
/// bytes of the input zero point (which must fit the input type; read by the AVX2 and AVX-512 variants).
void ck_dwconv_q8(int32_t isa, const ck_conv_geometry *g, const void *input, int32_t is_signed,
                  int32_t input_zero_point, const int32_t *packed, const int32_t *params,
                  const ck_q8_output *out, void *output, int32_t row_begin, int32_t row_end, const uint8_t *pad);

#ifdef __cplusplus
}
#endif

#endif
