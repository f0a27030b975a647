// Run-time detection of the instruction-set level (see ckernels.h).
#include "ckernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static int32_t detect(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return CK_ISA_PORTABLE;
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")))
        return CK_ISA_AVX2;
    if (!__builtin_cpu_supports("avx512vnni")) return CK_ISA_AVX512;
    return CK_ISA_AVX512VNNI;
#else
    return CK_ISA_PORTABLE;
#endif
}

int32_t ck_best_isa(void) {
    // Detection is idempotent, so a race between two first callers is harmless.
    static volatile int32_t cached = -1;
    int32_t isa = cached;
    if (isa < 0) {
        isa = detect();
        cached = isa;
    }
    return isa;
}

int32_t ck_has_avx512vbmi(void) {
    // Detected once; a race between two first callers is harmless (same value).
    static volatile int32_t cached = -1;
    int32_t has = cached;
    if (has < 0) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        has = ck_best_isa() >= CK_ISA_AVX512 && __builtin_cpu_supports("avx512vbmi") ? 1 : 0;
#else
        has = 0;
#endif
        cached = has;
    }
    return has;
}

int32_t ck_avx512_split(void) {
    // Detected once; a race between two first callers is harmless (same value).
    static volatile int32_t cached = -1;
    int32_t split = cached;
    if (split < 0) {
        split = 0;
#if defined(__x86_64__) || defined(__i386__)
        unsigned int eax, ebx, ecx, edx;
        if (ck_best_isa() >= CK_ISA_AVX512 && __get_cpuid(0, &eax, &ebx, &ecx, &edx) &&
            ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u &&  // "AuthenticAMD"
            __get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
            const unsigned int base = (eax >> 8) & 0xFu;
            const unsigned int family = base == 0xFu ? base + ((eax >> 20) & 0xFFu) : base;
            split = family == 0x19u;  // Zen 4 (Zen 5, family 0x1A, has full-width AVX-512 units)
        }
#endif
        cached = split;
    }
    return split;
}

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

uint64_t ck_denormals_flush(void) {
#if defined(__x86_64__) || defined(__i386__)
    const unsigned int state = _mm_getcsr();
    _mm_setcsr(state | 0x8040u);  // FTZ (bit 15) + DAZ (bit 6)
    return state;
#elif defined(__aarch64__)
    uint64_t state;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(state));
    __asm__ __volatile__("msr fpcr, %0" : : "r"(state | (UINT64_C(1) << 24)));  // FZ
    return state;
#else
    return 0;
#endif
}

void ck_denormals_restore(uint64_t state) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr((unsigned int)state);
#elif defined(__aarch64__)
    __asm__ __volatile__("msr fpcr, %0" : : "r"(state));
#else
    (void)state;
#endif
}
