#!/usr/bin/env bash
# libFuzzer runs of EdgeVision's input parsers (issue #11). Builds the fuzz package in Fuzz/ once
# (libFuzzer + AddressSanitizer, release), then runs each target for SECONDS seconds.
#
# Usage:
#   scripts/fuzz.sh TARGET|all [SECONDS]
#
#   TARGET   FuzzModel, FuzzFlexBuffers, FuzzModelInvoke, FuzzJPEG, FuzzPNG, FuzzWebP, FuzzBMP,
#            FuzzVideo (the "Fuzz" prefix may be left out), or all (one after the other)
#   SECONDS  fuzzing time per target (default 60)
#
# Corpora live in $FUZZ_DIR (default /tmp/edgevision-fuzz, never committed):
#   seeds/TARGET      copied from ../shared (models, images, videos) plus seeds the target generates
#   corpus/TARGET     what libFuzzer found (kept between runs, so runs add up)
#   artifacts/TARGET  crash-*, timeout-*, oom-* inputs; the path is printed
#   logs/TARGET.log   libFuzzer's output
#
# Exit status: 0 when no target crashed, hung or ran out of memory; 1 otherwise; 2 for usage or build errors.
# Replay a crash:   .build-fuzz/libfuzzer/release/FuzzModel /tmp/edgevision-fuzz/artifacts/FuzzModel/crash-...
# Minimize it:      .build-fuzz/libfuzzer/release/FuzzModel -minimize_crash=1 -runs=10000 CRASH_FILE
#
# Environment:
#   EDGEVISION_MODELS  models directory (default ../shared/models); images and videos are its siblings
#   FUZZ_DIR           where corpora, artifacts and logs go (default /tmp/edgevision-fuzz)
#   SCRATCH            SwiftPM scratch path of the fuzz build (default .build-fuzz/libfuzzer)
#   FUZZ_NO_BUILD=1    use the binaries already built
#   FUZZ_ARGS          extra libFuzzer flags (e.g. "-seed=1" or "-dict=FILE")
#   EDGEVISION_FUZZ_PACKAGE  fuzz another checkout (e.g. a snapshot) instead of this repository
#
# Everything runs under `nice -n 10`. Needs Linux, the Swift toolchain's libFuzzer and the packages of
# scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(FuzzModel FuzzFlexBuffers FuzzModelInvoke FuzzJPEG FuzzPNG FuzzWebP FuzzBMP FuzzVideo)
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
if [ "$1" = all ]; then
  targets=("${all_targets[@]}")
else
  t="$1"; [[ "$t" == Fuzz* ]] || t="Fuzz$t"
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$1' (one of: ${all_targets[*]} all)" >&2; exit 2; }
  targets=("$t")
fi
seconds="${2:-60}"
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }

models="${EDGEVISION_MODELS:-$(cd .. && pwd)/shared/models}"
models="$(cd "$models" 2>/dev/null && pwd || echo "$models")"
shared="$(dirname "$models")"
fuzz_dir="${FUZZ_DIR:-/tmp/edgevision-fuzz}"
scratch="${SCRATCH:-.build-fuzz/libfuzzer}"
bin="$scratch/release"
export EDGEVISION_MODELS="$models"
# Swift's own crash backtracer would run inside the AddressSanitizer process and hide the real report.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"

if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  echo "fuzz: building the fuzz targets (libFuzzer + AddressSanitizer, release) in $scratch" >&2
  start=$(date +%s)
  # --sanitize=fuzzer makes SwiftPM link libFuzzer's main instead of the targets' own; both sanitizers
  # are then given to swiftc as ONE option, because swiftc keeps only the last -sanitize= option and
  # SwiftPM's `--sanitize=fuzzer --sanitize=address` come out in a random order (builds then lacked
  # either the coverage or the AddressSanitizer instrumentation of the Swift code). --disable-dead-strip:
  # the release link's --gc-sections would drop libFuzzer's coverage counters. The C kernel files in
  # scripts/fuzz-asan-ignorelist.txt get the coverage but not AddressSanitizer (see that file).
  if ! nice -n 10 swift build --package-path Fuzz -c release --disable-dead-strip --scratch-path "$scratch" \
      --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xcc -fsanitize=address \
      -Xcc -fsanitize-ignorelist="$PWD/scripts/fuzz-asan-ignorelist.txt"; then
    echo "fuzz: the build failed" >&2; exit 2
  fi
  echo "fuzz: built in $(( $(date +%s) - start )) s" >&2
fi

# Copies files matching the patterns, at most max_bytes each, from a shared directory into a seed directory.
copy_seeds() {
  local dir="$1" max_bytes="$2" source="$3"; shift 3
  [ -d "$source" ] || return 0
  local pattern f
  for pattern in "$@"; do
    for f in "$source"/$pattern; do
      [ -f "$f" ] || continue
      [ "$(stat -c %s "$f")" -le "$max_bytes" ] && cp -f "$f" "$dir/"
    done
  done
  return 0
}

failed=0
summary=()
for target in "${targets[@]}"; do
  seeds="$fuzz_dir/seeds/$target"; corpus="$fuzz_dir/corpus/$target"
  artifacts="$fuzz_dir/artifacts/$target"; log="$fuzz_dir/logs/$target.log"
  mkdir -p "$seeds" "$corpus" "$artifacts" "$(dirname "$log")"
  # A single input running longer than this is reported as a hang (timeout-* artifact); the engine
  # target invokes real models under AddressSanitizer, on machines that may be busy.
  timeout=10; [ "$target" = FuzzModelInvoke ] && timeout=30
  flags=(-timeout="$timeout" -rss_limit_mb=2048)
  case "$target" in
    FuzzModel)       copy_seeds "$seeds" 2100000 "$models" '*.tflite'; flags+=(-max_len=2100000) ;;
    FuzzFlexBuffers) flags+=(-max_len=4096) ;;
    FuzzModelInvoke) flags+=(-max_len=4096) ;;
    FuzzJPEG)        copy_seeds "$seeds" 120000 "$shared/images" '*.jpg' '*.jpeg'; flags+=(-max_len=262144) ;;
    FuzzPNG)         copy_seeds "$seeds" 400000 "$shared/images" '*.png'; flags+=(-max_len=400000) ;;
    FuzzWebP)        copy_seeds "$seeds" 262144 "$shared/images" '*.webp'; flags+=(-max_len=65536) ;;
    FuzzBMP)         copy_seeds "$seeds" 200000 "$shared/images" '*.bmp'; flags+=(-max_len=262144) ;;
    FuzzVideo)       copy_seeds "$seeds" 262144 "$shared/videos" '*.mp4' '*.avi' '*.mkv' '*.webm' '*.mov'; flags+=(-max_len=262144) ;;
  esac
  EDGEVISION_FUZZ_WRITE_SEEDS="$seeds" "$bin/$target" >/dev/null 2>&1 || echo "fuzz: $target could not generate its seeds" >&2

  echo "fuzz: $target for $seconds s; corpus $corpus, seeds $seeds, artifacts $artifacts/, log $log" >&2
  before=$(ls "$artifacts" | wc -l)
  set +e
  # shellcheck disable=SC2086
  nice -n 10 "$bin/$target" "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" ${FUZZ_ARGS:-} "$corpus" "$seeds" >"$log" 2>&1
  status=$?
  set -e
  runs=$(grep -E '^stat::number_of_executed_units:' "$log" | tail -1 | awk '{print $2}' || true)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  if ! grep -q 'inline 8-bit counters' "$log"; then
    echo "fuzz: $target has no coverage instrumentation (see $log); the build is wrong" >&2
    status=3
  fi
  files=$(ls "$corpus" | wc -l)
  new_artifacts=$(( $(ls "$artifacts" | wc -l) - before ))
  if [ "$status" -ne 0 ] || [ "$new_artifacts" -gt 0 ]; then
    failed=1
    newest=$(ls -t "$artifacts" | head -1)
    line="$target: FAILED (exit $status) after ${runs:-?} runs; input: $artifacts/$newest; log: $log"
    grep -E 'ERROR: (AddressSanitizer|libFuzzer)|Fatal error|fuzz: |SUMMARY' "$log" | head -5 >&2 || true
  else
    line="$target: ok, ${runs:-?} runs in $seconds s, ${cov:-no coverage line}, corpus $files files"
  fi
  echo "fuzz: $line" >&2
  summary+=("$line")
done

echo "fuzz summary:"
printf '  %s\n' "${summary[@]}"
exit "$failed"
