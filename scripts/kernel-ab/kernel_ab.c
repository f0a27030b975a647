// A/B harness for the quantized CKernels entry points (and the float depthwise one): the kernels of a base revision (every entry
// point below renamed with a `base_` prefix by scripts/kernel-ab.sh) against the working tree's,
// called alternately in one process on the shapes of the reference models' layers. Each side runs
// REPS times; the best time of each is printed with their ratio, and the two outputs are compared
// byte for byte. Random inputs and weights, a fixed seed. The kernels run at the machine's best
// instruction set, as the package runs them (KERNEL_AB_ISA=1: AVX2, 2: AVX-512, 3: AVX-512 VNNI,
// capped at the machine's).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckernels.h"
#include "ckernels_q8.h"
#include "../bench/depthwise_setup.h"

// Each entry point twice: the working tree's (plain name) and the base revision's (base_ prefix).
#define AB_DECLARE(PREFIX)                                                                                         \
    size_t PREFIX##ck_q8_params_count(int32_t channels);                                                         \
    void PREFIX##ck_q8_params_pack(int32_t, const int32_t *, const int32_t *, const int32_t *, int32_t, int32_t,   \
                                   int32_t *);                                                                   \
    void PREFIX##ck_q8_convert_input(const void *, int32_t, int32_t, int32_t, int32_t, int16_t *);               \
    size_t PREFIX##ck_conv_q8_packed_count(const ck_conv_geometry *);                                            \
    void PREFIX##ck_conv_q8_pack(int32_t, const ck_conv_geometry *, const void *, int32_t, int32_t, int16_t *);   \
    void PREFIX##ck_q8_mark_plain(const ck_conv_geometry *, const void *, int32_t, int32_t, int32_t, int32_t *);  \
    void PREFIX##ck_conv_q8(int32_t, const ck_conv_geometry *, const int16_t *, const int16_t *, const int32_t *, \
                            const ck_q8_output *, void *, int32_t, int32_t, int32_t, int32_t, const int16_t *);    \
    size_t PREFIX##ck_dwconv_q8_packed_count(const ck_conv_geometry *);                                          \
    void PREFIX##ck_dwconv_q8_pack(const ck_conv_geometry *, const void *, int32_t, int32_t, int32_t *);          \
    void PREFIX##ck_dwconv_q8_prepare(int32_t, const ck_conv_geometry *, int32_t, int32_t, int32_t *, int32_t *); \
    void PREFIX##ck_dwconv_q8(int32_t, const ck_conv_geometry *, const void *, int32_t, int32_t, const int32_t *, \
                              const int32_t *, const ck_q8_output *, void *, int32_t, int32_t, const uint8_t *);  \
    size_t PREFIX##ck_conv_q8_c3s2_packed_count(const ck_conv_geometry *);                                       \
    void PREFIX##ck_conv_q8_c3s2_pack(const ck_conv_geometry *, const void *, int32_t, int32_t, float *);         \
    void PREFIX##ck_conv_q8_c3s2(int32_t, const ck_conv_geometry *, const void *, int32_t, int32_t, const float *, \
                                 const int32_t *, const ck_q8_output *, void *, int32_t, int32_t);              \
    void PREFIX##ck_dwconv_f32(int32_t, const ck_conv_geometry *, const float *, const float *, const float *,    \
                               float *, int32_t, int32_t, float, float);                                         \
    void PREFIX##ck_maxpool_f32(int32_t, const ck_conv_geometry *, const float *, float *, int32_t, int32_t, float, \
                                float);
AB_DECLARE(base_)

typedef struct {
    size_t (*params_count)(int32_t);
    void (*params_pack)(int32_t, const int32_t *, const int32_t *, const int32_t *, int32_t, int32_t, int32_t *);
    void (*convert_input)(const void *, int32_t, int32_t, int32_t, int32_t, int16_t *);
    size_t (*conv_packed_count)(const ck_conv_geometry *);
    void (*conv_pack)(int32_t, const ck_conv_geometry *, const void *, int32_t, int32_t, int16_t *);
    void (*mark_plain)(const ck_conv_geometry *, const void *, int32_t, int32_t, int32_t, int32_t *);
    void (*conv)(int32_t, const ck_conv_geometry *, const int16_t *, const int16_t *, const int32_t *, const ck_q8_output *,
                 void *, int32_t, int32_t, int32_t, int32_t, const int16_t *);
    size_t (*dw_packed_count)(const ck_conv_geometry *);
    void (*dw_pack)(const ck_conv_geometry *, const void *, int32_t, int32_t, int32_t *);
    void (*dw_prepare)(int32_t, const ck_conv_geometry *, int32_t, int32_t, int32_t *, int32_t *);
    void (*dw)(int32_t, const ck_conv_geometry *, const void *, int32_t, int32_t, const int32_t *, const int32_t *,
               const ck_q8_output *, void *, int32_t, int32_t, const uint8_t *);
    size_t (*c3s2_packed_count)(const ck_conv_geometry *);
    void (*c3s2_pack)(const ck_conv_geometry *, const void *, int32_t, int32_t, float *);
    void (*c3s2)(int32_t, const ck_conv_geometry *, const void *, int32_t, int32_t, const float *, const int32_t *,
                 const ck_q8_output *, void *, int32_t, int32_t);
    void (*dw_f32)(int32_t, const ck_conv_geometry *, const float *, const float *, const float *, float *, int32_t,
                   int32_t, float, float);
    void (*maxpool_f32)(int32_t, const ck_conv_geometry *, const float *, float *, int32_t, int32_t, float, float);
} kernels;

#define AB_KERNELS(PREFIX)                                                                                         \
    {PREFIX##ck_q8_params_count, PREFIX##ck_q8_params_pack, PREFIX##ck_q8_convert_input,                          \
     PREFIX##ck_conv_q8_packed_count, PREFIX##ck_conv_q8_pack, PREFIX##ck_q8_mark_plain, PREFIX##ck_conv_q8,       \
     PREFIX##ck_dwconv_q8_packed_count, PREFIX##ck_dwconv_q8_pack, PREFIX##ck_dwconv_q8_prepare, PREFIX##ck_dwconv_q8, \
     PREFIX##ck_conv_q8_c3s2_packed_count, PREFIX##ck_conv_q8_c3s2_pack, PREFIX##ck_conv_q8_c3s2,                  \
     PREFIX##ck_dwconv_f32, PREFIX##ck_maxpool_f32}
static const kernels sides[2] = {AB_KERNELS(base_), AB_KERNELS()};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}


/// 64-byte-aligned, as the engine's arena and packed buffers are: with malloc's 16-byte alignment
/// the two sides' output buffers sat differently against cache lines, and the same code timed up
/// to 1.2x apart.
static void *xmalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

static void random_bytes(uint8_t *p, size_t n) { for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rand(); }

/// One side's requantization parameters for `channels` outputs (multipliers of about 0.6-0.85,
/// a right shift of `shift`, biases within +-1000): the same values for both sides, the generator
/// being reseeded here (callers draw their inputs before).
static int32_t *make_params(const kernels *k, int32_t channels, int32_t shift, int32_t output_zero_point) {
    int32_t *bias = xmalloc((size_t)channels * 4), *mul = xmalloc((size_t)channels * 4), *sh = xmalloc((size_t)channels * 4);
    srand(7);
    for (int32_t i = 0; i < channels; i++) {
        bias[i] = rand() % 2000 - 1000;
        mul[i] = 1300000000 + rand() % 500000000;
        sh[i] = shift;
    }
    int32_t *params = xmalloc(k->params_count(channels) * 4);
    k->params_pack(channels, bias, mul, sh, CK_Q8_ROUND_REFERENCE, output_zero_point, params);
    free(bias); free(mul); free(sh);
    return params;
}

static void report(const char *label, double best[2], const uint8_t *out[2], size_t bytes) {
    printf("%-34s base %.4f ms  new %.4f ms  new/base %.3f  %s\n", label, best[0] * 1e3, best[1] * 1e3, best[1] / best[0],
           memcmp(out[0], out[1], bytes) ? "OUTPUTS DIFFER" : "same bytes");
}

static int reps = 300;
/// Instruction set every call runs at (main: the machine's best, or KERNEL_AB_ISA).
static int32_t isa = CK_ISA_AVX2;

/// Runs CALL (which names side `s`) `reps` times for each side alternately, the best time of side s
/// into best[s].
#define AB_TIME(best, CALL)                                          \
    for (int r = 0; r < reps; r++) {                                 \
        for (int s = 0; s < 2; s++) {                                \
            const double t = now();                                  \
            CALL;                                                    \
            const double d = now() - t;                              \
            if (d < best[s]) best[s] = d;                            \
        }                                                            \
    }

/// 1x1 int8 convolution (the int16 GEMM) of an H x W image, K -> N channels.
static void gemm(int32_t H, int32_t W, int32_t K, int32_t N) {
    const ck_conv_geometry g = {H, W, K, H, W, N, 1, 1, 1, 1, 1, 1, 0, 0};
    int8_t *filter = xmalloc((size_t)N * K), *x = xmalloc((size_t)H * W * K);
    srand(1);
    for (size_t i = 0; i < (size_t)N * K; i++) filter[i] = (int8_t)(rand() % 255 - 127);
    random_bytes((uint8_t *)x, (size_t)H * W * K);
    const ck_q8_output o = {-3, -128, 127, CK_Q8_ROUND_REFERENCE};
    int16_t *zeros = calloc(4096, 2);
    int16_t *packed[2], *image[2];
    int32_t *params[2];
    uint8_t *out[2];
    for (int s = 0; s < 2; s++) {
        const kernels *k = &sides[s];
        packed[s] = xmalloc(k->conv_packed_count(&g) * 2);
        k->conv_pack(isa, &g, filter, 1, 0, packed[s]);
        params[s] = make_params(k, N, -9, -3);
        k->mark_plain(&g, filter, 1, 0, -1, params[s]);
        image[s] = xmalloc((size_t)H * W * (size_t)ck_q8_padded_channels(K) * 2);
        k->convert_input(x, 1, -1, H * W, K, image[s]);
        out[s] = xmalloc((size_t)H * W * N);
    }
    double best[2] = {1e9, 1e9};
    AB_TIME(best, sides[s].conv(isa, &g, image[s], packed[s], params[s], &o, out[s], 0, H * W, 0, (N + 15) / 16, zeros));
    char label[64];
    snprintf(label, sizeof label, "gemm %dx%d K=%d N=%d", H, W, K, N);
    report(label, best, (const uint8_t **)out, (size_t)H * W * N);
    for (int s = 0; s < 2; s++) { free(packed[s]); free(params[s]); free(image[s]); free(out[s]); }
    free(filter); free(x); free(zeros);
}

/// 3x3 depthwise convolution, stride S, SAME padding, C channels of uint8 or int8.
static void depthwise(int32_t H, int32_t W, int32_t C, int32_t S, int is_signed) {
    const int32_t OH = (H + S - 1) / S, OW = (W + S - 1) / S;
    const int32_t pad = S == 1 ? 1 : ((OH - 1) * S + 3 - H) / 2;
    const ck_conv_geometry g = {H, W, C, OH, OW, C, 3, 3, S, S, 1, 1, pad, pad};
    uint8_t *filter = xmalloc((size_t)9 * C), *x = xmalloc((size_t)H * W * C);
    srand(2);
    random_bytes(filter, (size_t)9 * C);
    if (is_signed) for (int32_t i = 0; i < 9 * C; i++) filter[i] = (uint8_t)(int8_t)(rand() % 255 - 127);
    random_bytes(x, (size_t)H * W * C);
    const int32_t zx = is_signed ? -5 : 120, zw = is_signed ? 0 : 130, zy = is_signed ? -3 : 7;
    const ck_q8_output o = {zy, is_signed ? -128 : 0, is_signed ? 127 : 255, CK_Q8_ROUND_REFERENCE};
    uint8_t pad_bytes[4096];
    memset(pad_bytes, (uint8_t)zx, sizeof pad_bytes);
    int32_t *packed[2], *params[2];
    uint8_t *out[2];
    for (int s = 0; s < 2; s++) {
        const kernels *k = &sides[s];
        packed[s] = xmalloc(k->dw_packed_count(&g) * 4);
        k->dw_pack(&g, filter, is_signed, zw, packed[s]);
        params[s] = make_params(k, C, -7, zy);
        k->dw_prepare(isa, &g, is_signed, zx, packed[s], params[s]);
        out[s] = xmalloc((size_t)OH * OW * C);
    }
    double best[2] = {1e9, 1e9};
    AB_TIME(best, sides[s].dw(isa, &g, x, is_signed, zx, packed[s], params[s], &o, out[s], 0, OH, pad_bytes));
    char label[64];
    snprintf(label, sizeof label, "depthwise %dx%d C=%d s%d %s", H, W, C, S, is_signed ? "int8" : "uint8");
    report(label, best, (const uint8_t **)out, (size_t)OH * OW * C);
    for (int s = 0; s < 2; s++) { free(packed[s]); free(params[s]); free(out[s]); }
    free(filter); free(x);
}

/// Float depthwise K x K convolution with depth multiplier 1 (SAME padding), stride S, dilation D, ReLU6.
static void depthwise_f32_dilated(int32_t H, int32_t W, int32_t C, int32_t K, int32_t S, int32_t D) {
    const ck_conv_geometry g = same_depthwise_geometry(H, W, C, K, S, D);
    const int32_t OH = g.out_h, OW = g.out_w;
    float *x = xmalloc((size_t)H * W * C * 4), *w = xmalloc((size_t)K * K * C * 4), *b = xmalloc((size_t)C * 4);
    fill_depthwise_inputs(&g, x, w);
    for (int32_t i = 0; i < C; i++) b[i] = (float)(rand() % 201 - 100) / 100.0f;
    float *out[2];
    for (int s = 0; s < 2; s++) out[s] = xmalloc((size_t)OH * OW * C * 4);
    double best[2] = {1e9, 1e9};
    AB_TIME(best, sides[s].dw_f32(isa, &g, x, w, b, out[s], 0, OH, 0.0f, 6.0f));
    char label[64];
    snprintf(label, sizeof label, "float depthwise %dx%d C=%d %dx%d s%d d%d", H, W, C, K, K, S, D);
    report(label, best, (const uint8_t **)out, (size_t)OH * OW * C * 4);
    for (int s = 0; s < 2; s++) free(out[s]);
    free(x); free(w); free(b);
}

static void depthwise_f32(int32_t H, int32_t W, int32_t C, int32_t K, int32_t S) { depthwise_f32_dilated(H, W, C, K, S, 1); }

/// Float max pooling, K x K windows, stride S, VALID, no clamp.
static void maxpool_f32(int32_t H, int32_t W, int32_t C, int32_t K, int32_t S) {
    const int32_t OH = (H - K) / S + 1, OW = (W - K) / S + 1;
    const ck_conv_geometry g = {H, W, C, OH, OW, C, K, K, S, S, 1, 1, 0, 0};
    float *x = xmalloc((size_t)H * W * C * 4);
    srand(4);
    for (size_t i = 0; i < (size_t)H * W * C; i++) x[i] = (float)(rand() % 2001 - 1000) / 500.0f;
    float *out[2];
    for (int s = 0; s < 2; s++) out[s] = xmalloc((size_t)OH * OW * C * 4);
    double best[2] = {1e9, 1e9};
    AB_TIME(best, sides[s].maxpool_f32(isa, &g, x, out[s], 0, OH, -3.4e38f, 3.4e38f));
    char label[64];
    snprintf(label, sizeof label, "float max pool %dx%d C=%d %dx%d s%d", H, W, C, K, K, S);
    report(label, best, (const uint8_t **)out, (size_t)OH * OW * C * 4);
    for (int s = 0; s < 2; s++) free(out[s]);
    free(x);
}

/// First layer: 3 channels, stride 2, K x K filter (VALID for 3, SAME for 5), N outputs.
static void first_layer(int32_t H, int32_t K, int32_t N, int is_signed) {
    const int32_t OH = H / 2, pad = K == 5 ? 1 : 0;
    const ck_conv_geometry g = {H, H, 3, OH, OH, N, K, K, 2, 2, 1, 1, pad, pad};
    uint8_t *filter = xmalloc((size_t)N * K * K * 3), *x = xmalloc((size_t)H * H * 3);
    srand(3);
    random_bytes(filter, (size_t)N * K * K * 3);
    random_bytes(x, (size_t)H * H * 3);
    const int32_t zx = is_signed ? -3 : 128, zw = is_signed ? 0 : 120, zy = is_signed ? -128 : 0;
    if (is_signed) for (int32_t i = 0; i < N * K * K * 3; i++) filter[i] = (uint8_t)(int8_t)(rand() % 255 - 127);
    const ck_q8_output o = {zy, zy, is_signed ? -1 : 127, CK_Q8_ROUND_REFERENCE};
    float *packed[2];
    int32_t *params[2];
    uint8_t *out[2];
    for (int s = 0; s < 2; s++) {
        const kernels *k = &sides[s];
        packed[s] = xmalloc(k->c3s2_packed_count(&g) * 4);
        k->c3s2_pack(&g, filter, is_signed, zw, packed[s]);
        params[s] = make_params(k, N, -10, zy);
        k->mark_plain(&g, filter, is_signed, zw, zx, params[s]);
        out[s] = xmalloc((size_t)OH * OH * N);
    }
    double best[2] = {1e9, 1e9};
    // (This kernel serves machines without VNNI; with it, the package runs these layers otherwise.)
    const int32_t c3s2_isa = isa >= CK_ISA_AVX512VNNI ? CK_ISA_AVX512 : isa;
    AB_TIME(best, sides[s].c3s2(c3s2_isa, &g, x, is_signed, zx, packed[s], params[s], &o, out[s], 0, OH));
    char label[64];
    snprintf(label, sizeof label, "first layer %d^2 k%d N=%d %s", H, K, N, is_signed ? "int8" : "uint8");
    report(label, best, (const uint8_t **)out, (size_t)OH * OH * N);
    for (int s = 0; s < 2; s++) { free(packed[s]); free(params[s]); free(out[s]); }
    free(filter); free(x);
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all";
    if (argc > 2) reps = atoi(argv[2]);
    if (reps < 1) reps = 1;
    if (ck_best_isa() < CK_ISA_AVX2) { fprintf(stderr, "kernel-ab: needs AVX2\n"); return 1; }
    isa = ck_best_isa();
    const char *cap = getenv("KERNEL_AB_ISA");
    if (cap && atoi(cap) >= CK_ISA_AVX2 && atoi(cap) < isa) isa = atoi(cap);
    printf("kernel-ab: instruction set %d (1 AVX2, 2 AVX-512, 3 AVX-512 VNNI)\n", isa);
    const int all = !strcmp(which, "all");
    if (all || !strcmp(which, "gemm")) {
        // tf2_mobilenet_v2's 1x1 layers
        gemm(112, 112, 16, 96); gemm(56, 56, 24, 144); gemm(56, 56, 144, 24); gemm(14, 14, 96, 576);
        gemm(7, 7, 960, 320); gemm(7, 7, 320, 1280); gemm(1, 1, 1280, 1008);
    }
    if (all || !strcmp(which, "depthwise")) {
        depthwise(112, 112, 32, 1, 1); depthwise(112, 112, 96, 2, 1); depthwise(56, 56, 144, 1, 1);
        depthwise(28, 28, 192, 1, 1); depthwise(14, 14, 576, 1, 1); depthwise(7, 7, 960, 1, 1);
        depthwise(56, 56, 144, 1, 0); depthwise(14, 14, 384, 1, 0);
    }
    if (all || !strcmp(which, "first")) {
        first_layer(224, 3, 32, 1); first_layer(224, 3, 32, 0); first_layer(224, 3, 8, 0); first_layer(257, 3, 32, 0);
        first_layer(128, 5, 24, 0);
    }
    if (all || !strcmp(which, "float-depthwise")) {
        // BlazeFace's (64 x 64 x 24 ... 8 x 8 x 96, the 28-, 36- and 42-channel ones with a partial chunk),
        // mobilenet_v1_0.25's (all nine, by input size), DeepLab's and the selfie models' shapes
        depthwise_f32(64, 64, 24, 3, 1); depthwise_f32(64, 64, 28, 3, 2); depthwise_f32(32, 32, 36, 3, 1);
        depthwise_f32(32, 32, 42, 3, 2); depthwise_f32(16, 16, 80, 3, 1); depthwise_f32(8, 8, 96, 3, 1);
        depthwise_f32(112, 112, 8, 3, 1); depthwise_f32(112, 112, 16, 3, 2); depthwise_f32(56, 56, 32, 3, 1);
        depthwise_f32(56, 56, 32, 3, 2); depthwise_f32(28, 28, 64, 3, 1); depthwise_f32(28, 28, 64, 3, 2);
        depthwise_f32(14, 14, 128, 3, 1); depthwise_f32(14, 14, 128, 3, 2); depthwise_f32(7, 7, 256, 3, 1);
        depthwise_f32(129, 129, 144, 3, 1); depthwise_f32(65, 65, 192, 3, 1); depthwise_f32(64, 64, 16, 5, 1);
        depthwise_f32(16, 16, 128, 5, 1); depthwise_f32_dilated(33, 33, 288, 3, 1, 2); depthwise_f32_dilated(33, 33, 480, 3, 1, 4);
        // deeplabv3.tflite's (257 x 257 input): 129 x 129 x 16, the stride-2 ones, 65 x 65 x 72, 33 x 33 x 96 and 192
        depthwise_f32(129, 129, 16, 3, 1); depthwise_f32(129, 129, 48, 3, 2); depthwise_f32(65, 65, 72, 3, 1);
        depthwise_f32(65, 65, 72, 3, 2); depthwise_f32(33, 33, 96, 3, 1); depthwise_f32_dilated(33, 33, 192, 3, 1, 2);
    }
    if (all || !strcmp(which, "float-pool")) {
        // BlazeFace's stride-2 pools, a 3 x 3 one
        maxpool_f32(64, 64, 28, 2, 2); maxpool_f32(32, 32, 42, 2, 2); maxpool_f32(16, 16, 88, 2, 2); maxpool_f32(33, 33, 32, 3, 2);
    }
    return 0;
}
