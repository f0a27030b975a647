#!/usr/bin/env bash
# Concurrency stress: one ML Kit object detector, image labeler and segmenter (EdgeVisionTests) and
# one MediaPipe-style image classifier and object detector (EdgeVisionTasksTests), each shared by
# THREADS threads started together; every result is compared with the single-threaded answer.
# Prints one STRESS line per test: threads, calls, mismatches (must be 0), per task.
#
# Usage: scripts/stress.sh [THREADS] [ROUNDS]     (defaults 16 and 10; the test suite runs 8 and 3-4)
#   Each thread calls every task ROUNDS times, on images picked by thread and call number.
#   SCRATCH=.build-x to build elsewhere (default .build-stress).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-16}
rounds=${2:-10}
scratch=${SCRATCH:-.build-stress}
log=$(mktemp)
status=0
EDGEVISION_STRESS_THREADS=$threads EDGEVISION_STRESS_ROUNDS=$rounds \
    swift test -c release --scratch-path "$scratch" --filter ConcurrencyStressTests 2>&1 | tee "$log" >/dev/null || status=$?
grep -E '^STRESS|error:|failed|passed after|Executed' "$log" || true
if [ "$status" -ne 0 ]; then
    echo "stress: FAILED (swift test exit $status; full log in $log)" >&2
    exit "$status"
fi
grep -q '^STRESS' "$log" || { echo "stress: no STRESS line (tests skipped?); log in $log" >&2; exit 1; }
echo "stress: OK (threads=$threads rounds=$rounds)"
rm -f "$log"
