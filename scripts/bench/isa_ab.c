// The working tree's float 1×1 convolution (ck_conv_f32) and depthwise (ck_dwconv_f32) kernels at
// two instruction-set levels, AVX-512 (capped: CK_ISA_AVX512, so conv_f32_run never swaps in the
// AVX2 tiles) against AVX2, called alternately in one process on the reference models' layer
// shapes: best of REPS calls each, outputs compared byte for byte. Run by scripts/isa-ab.sh; needs
// AVX-512. What decided ck_avx512_split's use in conv_f32_run (docs/PERFORMANCE.md, session 18).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckernels.h"
#include "depthwise_setup.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int reps = 100;
static const int32_t isas[2] = {CK_ISA_AVX512, CK_ISA_AVX2};

static void *xmalloc(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}

static void report(const char *label, double macs, const double best[2], const void *a, const void *b, size_t bytes) {
    printf("%-40s avx512 %.4f ms (%5.1f GMAC/s)  avx2 %.4f ms (%5.1f GMAC/s)  avx2/avx512 %.3f  %s\n", label, best[0] * 1e3,
           macs / best[0] / 1e9, best[1] * 1e3, macs / best[1] / 1e9, best[1] / best[0], memcmp(a, b, bytes) ? "OUTPUTS DIFFER" : "same bytes");
}

static void pointwise(int32_t H, int32_t W, int32_t K, int32_t N) {
    const ck_conv_geometry g = {H, W, K, H, W, N, 1, 1, 1, 1, 1, 1, 0, 0};
    float *x = xmalloc((size_t)H * W * K * 4), *f = xmalloc((size_t)N * K * 4), *bias = xmalloc((size_t)N * 4);
    srand(1);
    for (size_t i = 0; i < (size_t)H * W * K; i++) x[i] = (float)(rand() % 2000 - 1000) / 700.0f;
    for (size_t i = 0; i < (size_t)N * K; i++) f[i] = (float)(rand() % 2000 - 1000) / 1000.0f;
    for (int32_t i = 0; i < N; i++) bias[i] = 0.1f * (float)(i % 7);
    float *packed = xmalloc(ck_conv_f32_packed_count(&g) * 4);
    ck_conv_f32_pack(&g, f, bias, packed);
    float *out[2] = {xmalloc((size_t)H * W * N * 4), xmalloc((size_t)H * W * N * 4)};
    static float zeros[4096];
    double best[2] = {1e9, 1e9};
    for (int r = 0; r < reps; r++)
        for (int s = 0; s < 2; s++) {
            const double t = now();
            ck_conv_f32(isas[s], &g, x, packed, out[s], 0, H * W, 0, (N + 15) / 16, 0.0f, 6.0f, zeros, NULL);
            const double d = now() - t;
            if (d < best[s]) best[s] = d;
        }
    char label[64];
    snprintf(label, sizeof label, "1x1 %dx%d K=%d N=%d", H, W, K, N);
    report(label, (double)H * W * K * N, best, out[0], out[1], (size_t)H * W * N * 4);
    free(x); free(f); free(bias); free(packed); free(out[0]); free(out[1]);
}

static void depthwise(int32_t H, int32_t W, int32_t C, int32_t K, int32_t S, int32_t D) {
    const ck_conv_geometry g = same_depthwise_geometry(H, W, C, K, S, D);
    const int32_t OH = g.out_h, OW = g.out_w;
    float *x = xmalloc((size_t)H * W * C * 4), *w = xmalloc((size_t)K * K * C * 4), *bias = xmalloc((size_t)C * 4);
    fill_depthwise_inputs(&g, x, w);
    for (int32_t i = 0; i < C; i++) bias[i] = 0.01f * (float)i;
    float *out[2] = {xmalloc((size_t)OH * OW * C * 4), xmalloc((size_t)OH * OW * C * 4)};
    double best[2] = {1e9, 1e9};
    for (int r = 0; r < reps; r++)
        for (int s = 0; s < 2; s++) {
            const double t = now();
            ck_dwconv_f32(isas[s], &g, x, w, bias, out[s], 0, OH, 0.0f, 6.0f);
            const double d = now() - t;
            if (d < best[s]) best[s] = d;
        }
    char label[64];
    snprintf(label, sizeof label, "depthwise %dx%d C=%d %dx%d s%d d%d", H, W, C, K, K, S, D);
    report(label, (double)OH * OW * C * K * K, best, out[0], out[1], (size_t)OH * OW * C * 4);
    free(x); free(w); free(bias); free(out[0]); free(out[1]);
}

int main(int argc, char **argv) {
    if (argc > 1) reps = atoi(argv[1]);
    if (reps < 1) reps = 1;
    if (ck_best_isa() < CK_ISA_AVX512) { fprintf(stderr, "isa-ab: needs AVX-512\n"); return 1; }
    printf("ck_avx512_split: %d\n", ck_avx512_split());
    // deeplabv3 (257 x 257 input), mobilenet_v1_0.25_224, the selfie models and BlazeFace
    pointwise(129, 129, 32, 16); pointwise(129, 129, 16, 96); pointwise(65, 65, 24, 144); pointwise(65, 65, 144, 24);
    pointwise(33, 33, 32, 192); pointwise(33, 33, 64, 384); pointwise(33, 33, 96, 576); pointwise(33, 33, 576, 96);
    pointwise(33, 33, 160, 960); pointwise(33, 33, 960, 320); pointwise(33, 33, 320, 256); pointwise(33, 33, 256, 21);
    pointwise(112, 112, 8, 16); pointwise(56, 56, 16, 32); pointwise(56, 56, 32, 32); pointwise(28, 28, 64, 64);
    pointwise(14, 14, 128, 128); pointwise(7, 7, 256, 256); pointwise(64, 64, 16, 16); pointwise(32, 32, 32, 32);
    pointwise(16, 16, 128, 128); pointwise(8, 8, 96, 96);
    depthwise(64, 64, 24, 3, 1, 1); depthwise(64, 64, 28, 3, 2, 1); depthwise(112, 112, 16, 3, 1, 1);
    depthwise(112, 112, 32, 3, 2, 1); depthwise(129, 129, 144, 3, 1, 1); depthwise(65, 65, 192, 3, 1, 1);
    depthwise(64, 64, 16, 5, 1, 1); depthwise(33, 33, 288, 3, 1, 2); depthwise(33, 33, 480, 3, 1, 4);
    return 0;
}
