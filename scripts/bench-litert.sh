#!/usr/bin/env bash
# LiteRT (XNNPACK) vs EdgeVision invoke latency, side by side, on the golden inputs of every model in
# ../shared/reference/goldens/index.json (status ok), at 1 and 2 threads, interleaved rounds.
# Prints Markdown tables (for docs/PERFORMANCE.md). The helper is scripts/bench_side_by_side.py.
#
# Usage: scripts/bench-litert.sh [--models a,b] [--runs N] [--warmup N] [--rounds N] [--threads 1,2] [--budget S]
# Environment: EDGEVISION_BENCH_VENV (default /tmp/edgevision-bench-venv, reused if present),
#              EDGEVISION_BENCH_SCRATCH (swift build scratch path, default .build-bench),
#              EDGEVISION_REFERENCE (default ../shared/reference).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${EDGEVISION_BENCH_VENV:-/tmp/edgevision-bench-venv}
SCRATCH=${EDGEVISION_BENCH_SCRATCH:-.build-bench}
REFERENCE=${EDGEVISION_REFERENCE:-../shared/reference}

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import ai_edge_litert, numpy' 2>/dev/null; then
  echo "[bench-litert] creating venv $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet ai-edge-litert numpy >&2
fi

echo "[bench-litert] building edgevision (release, scratch $SCRATCH)" >&2
swift build --scratch-path "$SCRATCH" -c release --product edgevision >&2
TOOL="$(swift build --scratch-path "$SCRATCH" -c release --product edgevision --show-bin-path)/edgevision"

exec "$VENV/bin/python" scripts/bench_side_by_side.py --edgevision "$TOOL" --reference "$REFERENCE" "$@"
