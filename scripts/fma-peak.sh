#!/usr/bin/env bash
# Measures one core's float32 multiply-accumulate peak (scripts/bench/fma_peak.c), the reference
# for the GMAC/s figures in docs/PERFORMANCE.md. Needs clang (or cc) and an x86-64 CPU with AVX2 + FMA
# (the 512-bit figure only where the CPU has AVX-512).
set -euo pipefail
cd "$(dirname "$0")"
CC=${CC:-$(command -v clang || command -v cc)}
out=$(mktemp /tmp/fma_peak.XXXXXX)
trap 'rm -f "$out"' EXIT
"$CC" -O2 bench/fma_peak.c -o "$out"
"$out"
