#!/usr/bin/env bash
# The quantized CKernels (and the float depthwise and max pool ones) of git revision BASE against the working tree's, called alternately in one
# process on the shapes of the reference models' layers (scripts/kernel-ab/kernel_ab.c: best of REPS
# calls of each, outputs compared byte for byte). On a machine whose speed drifts in phases of
# seconds (docs/PERFORMANCE.md, session 15) this comparison holds still where runs of two binaries
# one after the other do not. x86-64 with AVX2 at least; the kernels run at the machine's best instruction
# set, as the package runs them (KERNEL_AB_ISA=1 caps them at AVX2, 2 at AVX-512).
# Usage: scripts/kernel-ab.sh BASE [gemm|depthwise|first|float-depthwise|float-pool|all] [REPS]   (e.g. scripts/kernel-ab.sh HEAD~3 depthwise)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/kernel-ab.sh BASE [gemm|depthwise|first|float-depthwise|float-pool|all] [REPS]}
which=${2:-all}
reps=${3:-300}
CC=${CC:-clang}
# SwiftPM's flags for C targets in release builds (`swift build -c release -v`). With the frame
# pointer, clang realigns a frame that holds vector spills; without it (plain -O2) some kernels
# spill 64-byte vectors to 16-byte-aligned slots, and their speed then depends on where the stack
# happens to be (the 112 x 112 x 8 AVX-512 depthwise: 19 to 41 us with the environment's size).
CFLAGS="-O2 -fPIC -fno-omit-frame-pointer"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The base revision's CKernels, every entry point the harness calls renamed base_<name>, in one
# object whose other symbols are made local (so they cannot clash with the working tree's).
mkdir -p "$tmp/base"
git archive "$base" Sources/CKernels | tar -x -C "$tmp/base"
entries="ck_q8_params_count ck_q8_params_pack ck_q8_convert_input ck_conv_q8_packed_count ck_conv_q8_pack ck_q8_mark_plain
ck_conv_q8 ck_dwconv_q8_packed_count ck_dwconv_q8_pack ck_dwconv_q8_prepare ck_dwconv_q8 ck_conv_q8_c3s2_packed_count
ck_conv_q8_c3s2_pack ck_conv_q8_c3s2 ck_dwconv_f32 ck_maxpool_f32"
renames=() keep=()
for e in $entries; do renames+=("-D$e=base_$e"); keep+=("--keep-global-symbol=base_$e"); done
objects=()
for f in "$tmp"/base/Sources/CKernels/*.c; do
  o="$tmp/base_$(basename "$f" .c).o"
  "$CC" $CFLAGS "${renames[@]}" -I"$tmp/base/Sources/CKernels/include" -I"$tmp/base/Sources/CKernels" -c "$f" -o "$o"
  objects+=("$o")
done
ld -r "${objects[@]}" -o "$tmp/base.o"
objcopy -w "${keep[@]}" "$tmp/base.o"
"$CC" $CFLAGS -ISources/CKernels/include -ISources/CKernels scripts/kernel-ab/kernel_ab.c "$tmp/base.o" Sources/CKernels/*.c \
  -o "$tmp/kernel-ab" -lm -lpthread
echo "kernel-ab: $(git rev-parse --short "$base") (base) against the working tree, best of $reps calls each"
"$tmp/kernel-ab" "$which" "$reps"
