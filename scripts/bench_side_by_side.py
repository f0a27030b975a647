#!/usr/bin/env python3
"""LiteRT vs EdgeVision invoke latency, side by side, interleaved (used by scripts/bench-litert.sh).

For every model with status "ok" in goldens/index.json and every thread count: LiteRT
(`Interpreter(model_path, num_threads=N)`, default XNNPACK delegate, invoke() only, as in
shared/reference/bench_anchor.py) and `edgevision bench --json` get the same golden input tensors
(the model's first image, all inputs in input order). Rounds interleave: round 1 LiteRT, EdgeVision,
round 2 LiteRT, EdgeVision, ... The reported latency is the median of the per-round medians.
A model that fails in either runtime gets a row saying so.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def first_image_inputs(gdir: Path, entry: dict):
    """(image, [(file, dtype, shape)] in input order) for the model's first golden image."""
    images = entry.get("images") or []
    stem = None
    try:
        stem = json.loads((gdir / "summary.json").read_text())["images"][0]["image"]
    except Exception:
        pass
    if stem is None and images:
        stem = images[0] if isinstance(images[0], str) else images[0].get("image")
    if stem is None or not (gdir / f"{stem}.json").exists():
        jsons = sorted(p for p in gdir.glob("*.json") if p.name != "summary.json")
        if not jsons:
            raise RuntimeError("no golden inputs")
        stem = jsons[0].stem
    meta = json.loads((gdir / f"{stem}.json").read_text())
    recs = sorted(meta["inputs"], key=lambda r: r["index"])
    return stem, [(gdir / r["file"], r["dtype"], r["shape"]) for r in recs]


def time_litert(model_path: Path, threads: int, arrays, runs: int, warmup: int):
    from ai_edge_litert.interpreter import Interpreter
    # Load = file -> interpreter -> tensors allocated -> inputs set -> first invoke done (as
    # `edgevision bench`'s loadMs; the first invoke is where XNNPACK packs its weights).
    t0 = time.perf_counter_ns()
    it = Interpreter(model_path=str(model_path), num_threads=threads)
    it.allocate_tensors()
    for d, a in zip(it.get_input_details(), arrays):
        it.set_tensor(d["index"], a)
    it.invoke()
    load_ms = (time.perf_counter_ns() - t0) / 1e6
    for _ in range(warmup):
        it.invoke()
    samples = []
    for _ in range(runs):
        t = time.perf_counter_ns()
        it.invoke()
        samples.append((time.perf_counter_ns() - t) / 1e6)
    return statistics.median(samples), load_ms


def run_edgevision(tool: str, model_path: Path, threads: int, files, runs: int, warmup: int, timeout: float):
    cmd = [tool, "bench", str(model_path), "--threads", str(threads), "--runs", str(runs),
           "--warmup", str(warmup), "--json"]
    for f in files:
        cmd += ["--input", str(f)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {' '.join(p.stderr.split())[:200]}")
    return json.loads(p.stdout)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgevision", required=True)
    ap.add_argument("--reference", required=True, help="shared/reference directory")
    ap.add_argument("--models", default="")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--budget", type=float, default=4.0,
                    help="max seconds of timed EdgeVision invokes per measurement (fewer runs for slow models)")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()

    ref = Path(args.reference).resolve()
    index = json.loads((ref / "goldens" / "index.json").read_text())["models"]
    want = [m for m in args.models.split(",") if m]
    names = [n for n, e in index.items() if e.get("status") == "ok" and (not want or n in want)]
    for m in want:
        if m not in index:
            print(f"warning: {m} is not in index.json", file=sys.stderr)
    threads = [int(t) for t in args.threads.split(",") if t]
    models_dir = ref.parent / "models"

    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load0 = os.getloadavg()
    rows = {}
    setup = {}
    for n in names:
        e = index[n]
        r = {"macs": (e.get("macs") or {}).get("total")}
        try:
            r["image"], inp = first_image_inputs(ref / "goldens" / n, e)
            r["files"] = [f for f, _, _ in inp]
            r["arrays"] = [np.frombuffer(f.read_bytes(), dtype=np.dtype(dt).newbyteorder("<")).reshape(sh)
                           for f, dt, sh in inp]
        except Exception as ex:
            r["setup_error"] = f"{type(ex).__name__}: {ex}"
        r["model_path"] = models_dir / e.get("model_file", f"models/{n}.tflite").split("/")[-1]
        setup[n] = r
        for t in threads:
            rows[(n, t)] = {"lite": [], "lite_load": [], "ev": [], "ev_load": [], "ev_runs": None, "ev_json": None, "errors": []}

    for rnd in range(args.rounds):
        for n in names:
            s = setup[n]
            for t in threads:
                row = rows[(n, t)]
                if "setup_error" in s:
                    continue
                print(f"[bench] round {rnd + 1}/{args.rounds} {n} {t} thread(s), load {os.getloadavg()[0]:.2f}",
                      file=sys.stderr, flush=True)
                # Which runtime goes first alternates from round to round, so neither always
                # runs right after the other.
                def litert():
                    if not any(x.startswith("LiteRT") for x in row["errors"]):
                        try:
                            median, load_ms = time_litert(s["model_path"], t, s["arrays"], args.runs, args.warmup)
                            row["lite"].append(median)
                            row["lite_load"].append(load_ms)
                        except Exception as ex:
                            row["errors"].append(f"LiteRT failed: {type(ex).__name__}: {' '.join(str(ex).split())[:160]}")

                def edgevision():
                    if not any(x.startswith("EdgeVision") for x in row["errors"]):
                        try:
                            if row["ev_runs"] is None:   # probe: adapt runs/warm-up to the time budget
                                probe = run_edgevision(args.edgevision, s["model_path"], t, s["files"], 1, 0, args.timeout)
                                per = max(probe["medianMs"], 0.01) / 1e3
                                row["ev_runs"] = int(max(3, min(args.runs, args.budget // per)))
                                row["ev_warmup"] = int(max(1, min(args.warmup, row["ev_runs"] // 5)))
                            j = run_edgevision(args.edgevision, s["model_path"], t, s["files"], row["ev_runs"],
                                               row["ev_warmup"], args.timeout)
                            row["ev"].append(j["medianMs"])
                            row["ev_load"].append(j["loadMs"])
                            row["ev_json"] = j
                        except Exception as ex:
                            row["errors"].append(f"EdgeVision failed: {type(ex).__name__}: {' '.join(str(ex).split())[:200]}")

                for measure in ((litert, edgevision) if rnd % 2 == 0 else (edgevision, litert)):
                    measure()

    load1 = os.getloadavg()
    fmt_load = lambda l: ", ".join(f"{x:.2f}" for x in l)
    out = []
    out.append(f"Machine: {cpu_model()}, nproc {os.cpu_count()}; {platform.system()} {platform.release()}; "
               f"date {started}; load average at start {fmt_load(load0)}, at end {fmt_load(load1)}")
    try:
        from importlib.metadata import version
        lv = version("ai-edge-litert")
    except Exception:
        lv = "?"
    out.append(f"LiteRT: ai-edge-litert {lv}, default XNNPACK delegate, {args.warmup} warm-up + {args.runs} timed "
               f"invokes per round; EdgeVision: `edgevision bench --json` (release), same inputs, up to "
               f"{args.runs} timed invokes per round (fewer for slow models: ~{args.budget:g} s budget); "
               f"{args.rounds} interleaved rounds (LiteRT first in odd rounds, EdgeVision in even ones); "
               f"ms = median of the per-round medians.")
    out.append("")
    out.append("| model | threads | input | MACs (M) | LiteRT ms | EdgeVision ms | ratio EV/LiteRT | EdgeVision GMAC/s | EV runs/round | LiteRT load ms | EV load ms | EV arena MiB | EV live peak MiB | EV peak RSS MiB | notes |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in names:
        s = setup[n]
        for t in threads:
            row = rows[(n, t)]
            macs = s["macs"]
            lite = statistics.median(row["lite"]) if row["lite"] else None
            ev = statistics.median(row["ev"]) if row["ev"] else None
            notes = list(row["errors"])
            if "setup_error" in s:
                notes.append("no golden inputs: " + s["setup_error"])
            if len(row["ev"]) > 1:
                notes.append("EV rounds " + "/".join(f"{x:.3f}" for x in row["ev"]))
            if len(row["lite"]) > 1:
                notes.append("LiteRT rounds " + "/".join(f"{x:.3f}" for x in row["lite"]))
            j = row["ev_json"] or {}
            f = lambda v, nd: "failed" if v is None else f"{v:.{nd}f}"
            out.append("| " + " | ".join([
                n, str(t), s.get("image", "-"), f"{macs / 1e6:.1f}" if macs else "-",
                f(lite, 3), f(ev, 3),
                f"{ev / lite:.3f}×" if ev and lite else "-",
                f"{macs / (ev / 1e3) / 1e9:.2f}" if ev and macs else "-",
                str(row["ev_runs"] or "-"),
                f"{statistics.median(row['lite_load']):.1f}" if row["lite_load"] else "-",
                f"{statistics.median(row['ev_load']):.1f}" if row["ev_load"] else "-",
                f"{j['arenaBytes'] / 1048576:.2f}" if j else "-",
                f"{j['peakLiveBytes'] / 1048576:.2f}" if j and "peakLiveBytes" in j else "-",
                f"{j['peakRSSBytes'] / 1048576:.0f}" if j else "-",
                "; ".join(notes)]) + " |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
