"""bench/gpu/replay_profile.py: turns a side-by-side GPU run into a simulator profile that replays it.

Reads compare.csv of a `bench/gpu/run.sh` run (its `--steps` with compare) and a base profile
(NCCL's side: graph, channels; calibrated so that the simulated NCCL chooses what the real one chose),
and writes the base profile followed by one `measured = <collective> <bytes> <action> <latency us>` line
per swept action and size: the median over the repetitions of each entry's median call, verified and
run as asked (applied=1), entries that NCCL ran alike pooled under what ran (executed.csv or the
entries' traces, as in summarize.py). The simulator then takes its truth from those points (sim/truth.h).
Noise, from the same run: `noise.sigma` is the per-call spread within one set of processes (the
median robust spread, 1.4826 x MAD of log latency, of each size's calls in the traces under
compare-trace/); `noise.drift_sigma` is what the spread of the repetitions' medians adds beyond what
per-call noise explains over a median of `iterations` calls (the drift between moments and sets of
processes); its segment length (`noise.drift_calls`, 1000: about a second of this testbed's calls) is
not measured. Without traces, the repetitions' spread is all put in `noise.sigma` and no drift.
With a learning run's trace (rank 0's, as `bench/gpu/run.sh --learn-trace` keeps it; gzipped or not), the
per-call noise by collective and size becomes `noise.sigma_at` lines (the simulator interpolates them in
log2 size; `noise.sigma` stays for collectives without): the robust spread of each call's log span from the
median of its run (the calls of one action at one size back to back, a run's first call left out, runs of
4 calls or more: the drift between runs left out; a little low for runs of a dozen calls). On the GPU test
machine it is 0.04-0.10 from 1 MiB up and 0.4-0.9 for AllGather and ReduceScatter up to 16 KiB, where a
rank's span holds its wait for the other rank: the median over run 4's traces alone, `noise.sigma`, says
0.11 for every size.

With `--pairs PAIRS_RUN` (repeatable: runs of the pairs step), the ratios between actions at a size come
from the pairs instead: each action's median, over every repetition of every run given, of its bus
bandwidth over NCCL's own choice inside one set of processes (summarize.py's within_set_ratios), divided
by the same median of the nccl||nccl entry (the method's bias: 0.94-1.01 by size, a pair's first half a
little slower). The side-by-side run keeps the scale: an action's point is NCCL's own choice's
latency there (its median in compare.csv) over that ratio. Points the pairs lack (an action not in the
pairs, or a size whose NCCL choice compare.csv did not time) stay compare.csv's, and so does NCCL's own
choice (its entry in the pairs is NCCL against itself). The pairs are the better
truth for near ties: each side-by-side median comes from its own set of processes, whose drift moves all
of its calls alike, where a pair's two halves share theirs (AllReduce 16 KiB: run 4 has tree/LL on 1 channel 1%
ahead of ring/LL on 1; the pairs of runs 8-19 have ring/LL on 1 channel 3.6% ahead). Printed per size:
the bias, NCCL's own choice asked for as an action (NCCL against itself again) and the best action.

Usage: python3 bench/gpu/replay_profile.py [--pairs PAIRS_RUN]... RUN_DIR BASE.profile OUT.profile [LEARN_TRACE]
"""
import collections
import csv
import glob
import gzip
import itertools
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import executed_actions, pairs_executed, pooled_ratios, ran, read_trace, robust_spread  # noqa: E402

ITERATIONS = 10  # timed calls per size and pass in bench/gpu/run.sh: the repetitions' medians are over these
RUN_CALLS_MIN = 4  # calls of a run (its first left out) for its median to center the others
POINT_CALLS_MIN = 100  # deviations for a collective and size's noise.sigma_at line
PAIRS_MIN = 6  # repetitions of an action's pairs (all runs pooled) for its ratio to replace compare.csv's


def noise_by_size(trace_path):
    """{(collective, bytes): sigma} from a learning trace: each call's log span less its run's median."""
    rows = read_trace(trace_path, gzip.open if trace_path.endswith(".gz") else open)
    rows = [r for r in rows if r["rank"] == "0" and int(r["duration_ns"]) > 0]
    deviations = collections.defaultdict(list)
    # a run: consecutive calls of one action at one size
    for (collective, size, _), run in itertools.groupby(rows, lambda r: (r["collective"], int(r["bytes"]), ran(r))):
        values = [math.log(int(r["duration_ns"])) for r in run][1:]  # its first: waits, left work
        if len(values) >= RUN_CALLS_MIN:
            center = statistics.median(values)
            deviations[(collective, size)] += [v - center for v in values]
    return {size: robust_spread(d) for size, d in deviations.items() if len(d) >= POINT_CALLS_MIN}


def pairs_speedups(pairs_runs):
    """{(collective, bytes): (NCCL's own action, the nccl||nccl entry's median ratio, {action: its speed over
    NCCL's own})} from pairs runs: the median over all their repetitions of each action entry's within-set
    ratio, over the nccl||nccl entry's (sizes where that entry has fewer than PAIRS_MIN repetitions left out)."""
    by_size = collections.defaultdict(dict)
    for (entry, coll, size), values in pooled_ratios(pairs_runs).items():
        if entry != "learned" and len(values) >= PAIRS_MIN:
            by_size[(coll, size)][entry] = statistics.median(values)
    nccl_actions = collections.defaultdict(collections.Counter)
    for run in pairs_runs:
        for key, action in pairs_executed(run)[0].items():
            nccl_actions[key][action] += 1
    speedups = {}
    for key, counter in sorted(nccl_actions.items()):
        medians = by_size.get(key, {})
        if "nccl" not in medians:
            continue
        bias = medians["nccl"]
        speedups[key] = (counter.most_common(1)[0][0], bias,
                         {entry: ratio / bias for entry, ratio in medians.items() if entry != "nccl"})
    return speedups


def main():
    args = sys.argv[1:]
    pairs_runs = []
    while len(args) >= 2 and args[0] == "--pairs":
        pairs_runs.append(args[1])
        args = args[2:]
    if len(args) not in (3, 4):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    run_dir, base_path, out_path = args[:3]
    learn_trace = args[3] if len(args) == 4 else None
    times = collections.defaultdict(list)
    executed = executed_actions(run_dir)  # entries NCCL ran alike (capped channels) are one action
    with open(f"{run_dir}/compare.csv") as f:
        for r in csv.DictReader(f):
            if r["mode"] != "sweep" or r["verified"] != "1" or r["applied"] != "1":
                continue
            size = int(r["bytes"])
            action = executed.get((r["action"].replace("/", "-"), r["collective"], size), r["action"])
            times[(r["collective"], size, action)].append(float(r["time_us"]))
    if not times:
        print(f"{run_dir}/compare.csv has no verified, applied sweep rows", file=sys.stderr)
        return 1
    latencies = {key: statistics.median(values) for key, values in times.items()}
    from_pairs = 0
    for (coll, size), (nccl_action, bias, speedups) in sorted(pairs_speedups(pairs_runs).items()):
        best = max(speedups, key=speedups.get) if speedups else nccl_action
        line = f"pairs {coll} {size}: nccl||nccl {bias:.3f}"
        if nccl_action in speedups:  # the method's precision: NCCL's own choice asked for is NCCL against itself
            line += f"; NCCL's own ({nccl_action}) as an action {speedups[nccl_action]:.3f}"
        print(f"{line}; best {best} {speedups.get(best, 1.0):.3f}", file=sys.stderr)
        anchor = latencies.get((coll, size, nccl_action))
        if anchor is None:
            continue
        for action, speedup in speedups.items():
            if action != nccl_action:  # NCCL's own choice asked for: the method's noise, not a second point
                latencies[(coll, size, action)] = anchor / speedup
                from_pairs += 1
    spreads = [robust_spread([math.log(v) for v in values]) for values in times.values() if len(values) >= 3]
    between = statistics.median(spreads) if spreads else 0.1
    per_call = []
    for path in glob.glob(f"{run_dir}/compare-trace/*/trace-*.csv"):
        calls = collections.defaultdict(list)
        with open(path) as f:
            for r in csv.DictReader(f):
                calls[(r["collective"], r["bytes"], r["algorithm"], r["protocol"], r["channels"])].append(
                    math.log(max(1, int(r["duration_ns"]))))
        per_call += [robust_spread(logs) for logs in calls.values() if len(logs) >= 8]
    if per_call:
        sigma = statistics.median(per_call)
        drift = math.sqrt(max(0.0, between ** 2 - sigma ** 2 / ITERATIONS))
    else:
        sigma, drift = between, 0.0
    with open(base_path) as f:
        base = [line.rstrip("\n") for line in f
                if not line.startswith(("measured", "noise.sigma", "noise.drift", "# Replayed", "# Per-call noise"))]
    name = os.path.basename(out_path).rsplit(".profile", 1)[0]  # a profile's name is its file's
    with open(out_path, "w") as out:
        for line in base:
            if line.startswith("name ="):
                line = f"name = {name}"
            elif line.startswith("description ="):
                line = f"description = the measured latencies of {run_dir.rstrip('/')} replayed (base: {os.path.basename(base_path)})"
                if pairs_runs:
                    line = line.replace(" replayed", f", with the ratios between actions of {len(pairs_runs)} pairs runs,"
                                        " replayed")
            print(line, file=out)
        print(f"# Replayed measurements: {run_dir}/compare.csv, median over repetitions (bench/gpu/replay_profile.py).", file=out)
        if pairs_runs:
            print(f"# Ratios between actions at a size: the pairs of {', '.join(r.rstrip('/') for r in pairs_runs)} "
                  f"({from_pairs} points), scaled by NCCL's own choice in compare.csv.", file=out)
        print(f"noise.sigma = {sigma:.3f}", file=out)
        if learn_trace is not None:
            points = noise_by_size(learn_trace)
            print(f"# Per-call noise by collective and size: {learn_trace} (rank 0; bench/gpu/replay_profile.py).",
                  file=out)
            for coll, size in sorted(points):
                print(f"noise.sigma_at = {coll} {size} {points[(coll, size)]:.3f}", file=out)
        if drift > 0:
            print(f"noise.drift_sigma = {drift:.3f}", file=out)
            print("noise.drift_calls = 1000", file=out)
        for (coll, size, action) in sorted(latencies, key=lambda k: (k[0], k[2], k[1])):
            print(f"measured = {coll} {size} {action} {latencies[(coll, size, action)]:.2f}", file=out)
    print(f"{out_path}: {len(latencies)} measured points ({from_pairs} from the pairs), noise.sigma {sigma:.3f} per call "
          f"({len(per_call)} traced groups), "
          f"drift {drift:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
