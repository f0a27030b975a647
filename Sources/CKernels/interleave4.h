// CKernels internal: interleaving four vectors of bytes into dword lanes with AVX-512 BW, shared by
// the quantized depthwise quads (conv_q8.c) and the VBMI ADD's table planes (elementwise_f32.c).
// Include it inside an x86-only block, after <immintrin.h>. Not part of the public headers.
#ifndef EDGEVISION_CKERNELS_INTERLEAVE4_H
#define EDGEVISION_CKERNELS_INTERLEAVE4_H

/// x[j], 128-bit lane l, dword i = bytes 16l + 4j + i of b[0], b[1], b[2], b[3] (as bytes 0-3):
/// two rounds of in-lane unpacks. vpackssdw of x[0], x[1] and of x[2], x[3], then vpacksswb (or
/// vpackuswb) of the two, restore the bytes' order.
__attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl"), always_inline))
static inline void ck_interleave4_epi8(const __m512i *b, __m512i *x) {
    const __m512i l01 = _mm512_unpacklo_epi8(b[0], b[1]), h01 = _mm512_unpackhi_epi8(b[0], b[1]);
    const __m512i l23 = _mm512_unpacklo_epi8(b[2], b[3]), h23 = _mm512_unpackhi_epi8(b[2], b[3]);
    x[0] = _mm512_unpacklo_epi16(l01, l23);
    x[1] = _mm512_unpackhi_epi16(l01, l23);
    x[2] = _mm512_unpacklo_epi16(h01, h23);
    x[3] = _mm512_unpackhi_epi16(h01, h23);
}

#endif
