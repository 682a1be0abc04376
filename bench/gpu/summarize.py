"""bench/gpu/summarize.py: the GPU run's summary from collbench's CSVs (bench/gpu/run.sh writes them).

Per collective and size: NCCL alone, the plugin with the default policy (overhead), the real best
from the sweep (the testbed's oracle: fastest verified action that NCCL really ran), and DynamICCL
learning, as bus bandwidth; ratios learned/best and learned/default. Also the profiler check (the
plugin's GPU durations against CUDA-event timings) when its files are there.

Usage: python3 bench/gpu/summarize.py OUT_DIR   (reads none.csv, default.csv, sweep.csv, learn.csv,
event-check.csv and trace-*.csv there; prints markdown)
"""
import csv
import glob
import os
import statistics
import sys


def load(path):
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["collective"], int(r["bytes"]))
            rows.setdefault(key, []).append(r)
    return rows


def best_of(rows):
    """Median bus bandwidth over repeated runs of one configuration."""
    values = [float(r["busbw_gbs"]) for r in rows if r["verified"] == "1"]
    return statistics.median(values) if values else None


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    none, default, sweep, learn = (load(os.path.join(out, n + ".csv")) for n in ("none", "default", "sweep", "learn"))
    unverified = sum(1 for table in (none, default, sweep, learn) for rows in table.values() for r in rows if r["verified"] != "1")
    print("## DynamICCL on real NCCL: bus bandwidth (GB/s) per collective and size\n")
    print(f"Rows whose results were wrong (verified=0): {unverified}\n")
    print("| collective | bytes | NCCL alone | plugin default | overhead | real best (action) | NCCL / best | learned | learned / best | learned / NCCL |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst_vs_best, worst_vs_nccl = 10.0, 10.0
    for key in sorted(set(none) | set(sweep), key=lambda k: (k[0], k[1])):
        alone = best_of(none.get(key, []))
        plugin = best_of(default.get(key, []))
        candidates = [(float(r["busbw_gbs"]), r["action"]) for r in sweep.get(key, []) if r["verified"] == "1" and r["applied"] == "1"]
        best, action = max(candidates) if candidates else (None, "-")
        if alone is not None and (best is None or alone > best):
            best, action = alone, "NCCL's choice"
        learned = best_of(learn.get(key, []))
        def ratio(a, b):
            return f"{a / b:.3f}" if a and b else "-"
        def value(a):
            return f"{a:.3f}" if a is not None else "-"
        if learned and best:
            worst_vs_best = min(worst_vs_best, learned / best)
        if learned and alone:
            worst_vs_nccl = min(worst_vs_nccl, learned / alone)
        print(f"| {key[0]} | {key[1]} | {value(alone)} | {value(plugin)} | {ratio(alone, plugin)} | {value(best)} ({action}) | "
              f"{ratio(alone, best)} | {value(learned)} | {ratio(learned, best)} | {ratio(learned, alone)} |")
    if worst_vs_best < 10:
        print(f"\nLowest learned/best: {worst_vs_best:.3f} (target >= 0.97); lowest learned/NCCL: {worst_vs_nccl:.3f} (target >= 0.97)")

    # Profiler check: the plugin's measured GPU durations against CUDA events around the same calls.
    events = load(os.path.join(out, "event-check.csv"))
    traces = glob.glob(os.path.join(out, "event-trace", "trace-*.csv"))
    if events and traces:
        measured = {}
        for path in traces:
            with open(path) as f:
                for r in csv.DictReader(f):
                    key = (r["collective"].lower(), int(r["bytes"]))
                    measured.setdefault(key, []).append(int(r["duration_ns"]) / 1000.0)
        print("\n## Profiler check: the plugin's GPU durations against CUDA events (median us)\n")
        print("| collective | bytes | CUDA events | profiler | ratio |")
        print("|---|---|---|---|---|")
        for key in sorted(events):
            cuda_us = statistics.median(float(r["time_us"]) for r in events[key])
            traced = [v for k, v in measured.items() if k[0] == key[0] and k[1] == key[1]]
            if not traced:
                continue
            prof_us = statistics.median(traced[0])
            print(f"| {key[0]} | {key[1]} | {cuda_us:.1f} | {prof_us:.1f} | {prof_us / cuda_us:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
