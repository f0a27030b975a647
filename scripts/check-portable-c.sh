#!/usr/bin/env bash
# Compiles every CKernels C file as a CPU without the x86 paths would (ARM64 and the like): the x86
# detection lines (`#if defined(__x86_64__)...`) are switched off in a temporary copy, which is then
# checked with clang -fsyntax-only. Catches a portable path that calls an x86-only helper, which an
# x86 build alone never shows. Usage: scripts/check-portable-c.sh  (exit status 1 on any error)
set -euo pipefail
cd "$(dirname "$0")/.."
CC=${CC:-clang}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for f in Sources/CKernels/*.c; do
  copy="$tmp/$(basename "$f")"
  sed -E 's/^#if defined\(__x86_64__\)( \|\| defined\(__i386__\))?$/#if 0/' "$f" > "$copy"
  if ! "$CC" -fsyntax-only -Werror=implicit-function-declaration -Werror=incompatible-pointer-types \
       -ISources/CKernels/include -ISources/CKernels "$copy" 2> "$tmp/log"; then
    echo "portable C: $f does not compile without its x86 paths:" >&2
    grep -E "error" "$tmp/log" | sed "s|$tmp/|Sources/CKernels/|" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "portable C: every CKernels file compiles without its x86 paths"
exit "$status"
