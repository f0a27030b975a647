#!/usr/bin/env bash
# Invoke latency on a busy machine: the same model with `edgevision bench` at 1 and 2 threads and
# LiteRT at 2 threads (if the bench venv of scripts/bench-litert.sh exists), while other processes
# keep the cores busy: by default two loops compiling a C file (short-lived processes, like a
# build), or HOGS=N busy loops (LOAD=spin).
#
# Usage: scripts/bench-contention.sh MODEL [RUNS]     (builds edgevision in release first)
# Environment: LOAD=compile|spin (default compile), HOGS (default 2), EDGEVISION_BENCH_VENV.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: scripts/bench-contention.sh MODEL [RUNS]}
runs=${2:-100}
load=${LOAD:-compile}
hogs=${HOGS:-2}
venv=${EDGEVISION_BENCH_VENV:-/tmp/edgevision-bench-venv}
swift build -c release --product edgevision >/dev/null
bin=$(swift build -c release --show-bin-path)/edgevision
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
for i in $(seq "$hogs"); do
  if [ "$load" = spin ]; then
    ( while :; do :; done ) & pids+=($!)
  else
    ( while :; do cc -O2 -ISources/CKernels/include -c Sources/CKernels/conv_q8.c -o "$work/$i.o" 2>/dev/null; done ) & pids+=($!)
  fi
done
sleep 1
echo "load: $hogs x $load"
for t in 1 2; do
  printf 'edgevision %d thread(s): ' "$t"
  "$bin" bench "$model" --threads "$t" --runs "$runs" | awk '/^median|^p90/ {printf "%s %s ms  ", $1, $2} END {print ""}'
done
if [ -x "$venv/bin/python" ]; then
  "$venv/bin/python" - "$model" "$runs" <<'PY' 2>/dev/null
import sys, time, numpy as np
from ai_edge_litert.interpreter import Interpreter
it = Interpreter(model_path=sys.argv[1], num_threads=2); it.allocate_tensors()
for d in it.get_input_details(): it.set_tensor(d['index'], np.zeros(d['shape'], d['dtype']))
for _ in range(10): it.invoke()
ts = []
for _ in range(int(sys.argv[2])):
    a = time.perf_counter(); it.invoke(); ts.append((time.perf_counter() - a) * 1e3)
ts.sort(); print("LiteRT 2 thread(s): median %.3f ms  p90 %.3f ms" % (ts[len(ts) // 2], ts[int(len(ts) * 0.9)]))
PY
fi
