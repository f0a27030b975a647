#!/usr/bin/env bash
# Times decoding a 4000x3000 JPEG and preprocessing it to a 224x224 model input (release build).
# The timing lives in Tests/MediaIOTests/ImageBenchmarkTests.swift, which only runs with
# EDGEVISION_BENCH=1 and only prints. Pass extra `swift test` options after the script name, e.g.
#   scripts/bench-image.sh --scratch-path .build-bench
set -euo pipefail
cd "$(dirname "$0")/.."
EDGEVISION_BENCH=1 swift test -c release --filter 'MediaIOTests.ImageBenchmarkTests' "$@" 2>&1 \
  | grep -E "bench-image:|error|failed|Executed" || true
