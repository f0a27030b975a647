#!/usr/bin/env bash
# Soak: FRAMES frames of the shared traffic clip, looped (decoded again on every loop, timestamps
# continuing across loops), through one ML Kit object detector in stream mode (tracking) and one
# segmenter in stream mode. Samples resident memory (VmRSS) into a CSV and fails if any frame lacks
# a result or memory after warm-up (the first 5% of frames) grows beyond 10% + 10 MB.
#
# Usage: scripts/soak.sh [FRAMES] [CSV]     (defaults 20000 and soak.csv in the current directory)
#   SAMPLE_EVERY=N samples every N frames (default FRAMES/200, at least 10).
#   SCRATCH=.build-x to build elsewhere (default .build-soak). Runs under nice -n 10.
set -euo pipefail
frames=${1:-20000}
csv=${2:-$PWD/soak.csv}
case "$csv" in /*) ;; *) csv=$PWD/$csv ;; esac
cd "$(dirname "$0")/.."
scratch=${SCRATCH:-.build-soak}
log=$(mktemp)
status=0
env EDGEVISION_SOAK_FRAMES="$frames" EDGEVISION_SOAK_CSV="$csv" ${SAMPLE_EVERY:+EDGEVISION_SOAK_SAMPLE_EVERY=$SAMPLE_EVERY} \
    nice -n 10 swift test -c release --scratch-path "$scratch" --filter SoakTests 2>&1 | tee "$log" >/dev/null || status=$?
grep -E '^SOAK|error:|failed|Executed' "$log" || true
if [ "$status" -ne 0 ]; then
    echo "soak: FAILED (swift test exit $status; full log in $log)" >&2
    exit "$status"
fi
grep -q '^SOAK' "$log" || { echo "soak: no SOAK line (test skipped?); log in $log" >&2; exit 1; }
echo "soak: OK, samples in $csv"
rm -f "$log"
