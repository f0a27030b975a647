#!/usr/bin/env bash
# The float 1x1 and depthwise CKernels at AVX-512 against AVX2 on this CPU, alternately in one
# process (scripts/bench/isa_ab.c). Needs clang (or cc) and an x86-64 CPU with AVX-512.
# Usage: scripts/isa-ab.sh [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
CC=${CC:-$(command -v clang || command -v cc)}
out=$(mktemp /tmp/isa_ab.XXXXXX)
trap 'rm -f "$out"' EXIT
# SwiftPM's release flags for C (see scripts/kernel-ab.sh: the frame pointer keeps vector spills aligned).
"$CC" -O2 -fPIC -fno-omit-frame-pointer -ISources/CKernels/include -ISources/CKernels scripts/bench/isa_ab.c Sources/CKernels/*.c -o "$out" -lm -lpthread
"$out" "${1:-100}"
