#!/usr/bin/env bash
# End-to-end task latencies (classify, label, segment, detect, track) on decoded images, release
# build, printed as a Markdown table for docs/PERFORMANCE.md. Usage: scripts/bench-tasks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
EDGEVISION_BENCH=1 swift test -c release --filter TaskLatencyBenchmarks "$@" 2>&1 | sed -n '/^Task latencies/,/^Test Case/p' | grep -v '^Test Case'
