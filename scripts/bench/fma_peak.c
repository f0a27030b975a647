// One core's float32 multiply-accumulate peak: 12 independent FMA chains (enough to cover the
// FMA latency), 512-bit and 256-bit. Built and run by scripts/fma-peak.sh; the figure the
// PERFORMANCE.md GMAC/s columns are compared with.
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

__attribute__((target("avx512f,fma"))) static double peak512(long n) {
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)i);
    CHAINS(DECL)
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    double t0 = now();
    for (long k = 0; k < n; k++) {
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, b, c);
        CHAINS(STEP)
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),
                              "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
    }
    double t = now() - t0;
#define SUM(i) s += _mm512_reduce_add_ps(a##i);
    float s = 0;
    CHAINS(SUM)
    if (s == 1.25f) printf(" ");
    return (double)n * 12 * 16 / t / 1e9;
}

__attribute__((target("avx2,fma"))) static double peak256(long n) {
#define DECL8(i) __m256 a##i = _mm256_set1_ps((float)i);
    CHAINS(DECL8)
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    double t0 = now();
    for (long k = 0; k < n; k++) {
#define STEP8(i) a##i = _mm256_fmadd_ps(a##i, b, c);
        CHAINS(STEP8)
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),
                              "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
    }
    double t = now() - t0;
    float s = 0;
    float lanes[8];
#define SUM8(i) _mm256_storeu_ps(lanes, a##i); for (int j = 0; j < 8; j++) s += lanes[j];
    CHAINS(SUM8)
    if (s == 1.25f) printf(" ");
    return (double)n * 12 * 8 / t / 1e9;
}

int main(void) {
    // The 512-bit chains only where the CPU has AVX-512 (AVX2 machines: the 256-bit figure is the peak).
    const int has512 = __builtin_cpu_supports("avx512f");
    double best512 = 0, best256 = 0;
    for (int r = 0; r < 5; r++) {
        double p = has512 ? peak512(50000000) : 0, q = peak256(50000000);
        if (p > best512) best512 = p;
        if (q > best256) best256 = q;
    }
    if (has512)
        printf("float32 FMA peak, one core: 512-bit %.1f GMAC/s (%.1f GFLOP/s), 256-bit %.1f GMAC/s\n",
               best512, 2 * best512, best256);
    else
        printf("float32 FMA peak, one core (no AVX-512): 256-bit %.1f GMAC/s (%.1f GFLOP/s)\n", best256, 2 * best256);
    return 0;
}
