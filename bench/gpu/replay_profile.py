"""bench/gpu/replay_profile.py: turns a side-by-side GPU run into a simulator profile that replays it.

Reads compare.csv of a `bench/gpu/run.sh` run (DYNAMICCL_GPU_STEPS with compare) and a base profile
(NCCL's side: graph, channels; calibrated so that the simulated NCCL chooses what the real one chose),
and writes the base profile followed by one `measured = <collective> <bytes> <action> <latency us>` line
per swept action and size: the median over the repetitions of each entry's median call, verified and
run as asked (applied=1). The simulator then takes its truth from those points (sim/truth.h). The
noise sigma is set to the median, over the measured points, of the robust spread of log(latency)
between repetitions (1.4826 x MAD): the drift between sets of processes, the testbed's largest noise.

Usage: python3 bench/gpu/replay_profile.py RUN_DIR BASE.profile OUT.profile
"""
import collections
import csv
import math
import statistics
import sys


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    run_dir, base_path, out_path = sys.argv[1:]
    times = collections.defaultdict(list)
    with open(f"{run_dir}/compare.csv") as f:
        for r in csv.DictReader(f):
            if r["mode"] != "sweep" or r["verified"] != "1" or r["applied"] != "1":
                continue
            times[(r["collective"], int(r["bytes"]), r["action"])].append(float(r["time_us"]))
    if not times:
        print(f"{run_dir}/compare.csv has no verified, applied sweep rows", file=sys.stderr)
        return 1
    spreads = []
    for values in times.values():
        if len(values) >= 3:
            logs = [math.log(v) for v in values]
            center = statistics.median(logs)
            spreads.append(1.4826 * statistics.median(abs(x - center) for x in logs))
    sigma = statistics.median(spreads) if spreads else 0.1
    with open(base_path) as f:
        base = [line.rstrip("\n") for line in f if not line.startswith(("measured", "noise.sigma"))]
    with open(out_path, "w") as out:
        for line in base:
            print(line, file=out)
        print(f"# Replayed measurements: {run_dir}/compare.csv, median over repetitions (bench/gpu/replay_profile.py).", file=out)
        print(f"noise.sigma = {sigma:.3f}", file=out)
        for (coll, size, action) in sorted(times, key=lambda k: (k[0], k[2], k[1])):
            print(f"measured = {coll} {size} {action} {statistics.median(times[(coll, size, action)]):.2f}", file=out)
    print(f"{out_path}: {len(times)} measured points, noise.sigma {sigma:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
