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
noise's structure within a set of processes comes from it, by collective and size (noise_structure): a run
is the consecutive calls of one size (collbench's round of 13), its first 4 left out (the warm-up calls and
the first timed one, after a host pause), and a stretch is a run's calls of one action, its first left out.
`noise.sigma_at` is the per-call noise: the robust spread of the differences between a stretch's calls two
apart, over the square root of 2 (a run's level and an alternation cancel there). `noise.level_at` is the
spread of a level that every call of a run shares: the robust spread of the stretches' mean log spans (6
calls or more) about their action's median, less what the per-call noise explains. `noise.alternation_at`,
by algorithm and protocol, is the amplitude of calls that alternate slow and fast: from the mean squares of
the differences between consecutive calls (T1) and calls two apart (T2), each less its largest 5%,
sqrt((T1 - T2) / 4). The simulator interpolates each in log2 size (`noise.sigma` stays for collectives
without). On the GPU test machine (run 15) the per-call noise is 0.05-0.2, the level 0.04-0.11 (0.40 at
AllReduce 64 KiB), and ring/LL's AllGather and ReduceScatter at 1-64 KiB alternate by 0.36-0.72: a rank's
span holds its wait for the other rank, and the ranks take turns. Before 2026-11-29 the whole spread of a
call about its run's median went into `noise.sigma_at` (0.4-0.9 there), drawn independently call by call.

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
       python3 bench/gpu/replay_profile.py --self-test   (noise_structure on a made-up trace of known noise)
"""
import collections
import csv
import glob
import gzip
import itertools
import math
import os
import random
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import (STAMPED_TRACE_HEADER, executed_actions, in_call_order, pairs_executed, pooled_ratios,  # noqa: E402
                       ran, read_trace, robust_spread, runs_of_one_cell)

ITERATIONS = 10  # timed calls per size and pass in bench/gpu/run.sh: the repetitions' medians are over these
ROUND_SKIP = 4  # a run's first calls left out of the noise: collbench's 3 warm-up calls and its first timed one
STRETCH_LEVEL_MIN = 6  # calls of a stretch (its first left out) for its mean to tell the run's level
POINT_CALLS_MIN = 100  # differences for a collective and size's noise.sigma_at line
ALTERNATION_MIN = 30  # differences two apart for an algorithm and protocol's noise.alternation_at line
LEVEL_STRETCHES_MIN = 20  # stretches' means for a noise.level_at line (5 or more of each action counted)
PAIRS_MIN = 6  # repetitions of an action's pairs (all runs pooled) for its ratio to replace compare.csv's
TRIM = 0.05  # the share of the largest squared differences left out of the alternation's mean squares


def trimmed_mean_square(differences):
    """The mean of the squares, the largest TRIM of them left out."""
    squares = sorted(d * d for d in differences)
    kept = squares[:max(1, int(len(squares) * (1 - TRIM)))]
    return sum(kept) / len(kept)


def stretches(rows, skip):
    """The stretches of rank-0 trace rows in call order: (collective, bytes, action, [log spans]) for each run
    of consecutive calls of one size (its first `skip` calls left out) and, within it, of one action (its
    first call left out)."""
    for run in runs_of_one_cell(in_call_order([r for r in rows if r["rank"] == "0" and int(r["duration_ns"]) > 0])):
        for action, stretch in itertools.groupby(run[skip:], ran):
            yield run[0]["collective"], int(run[0]["bytes"]), action, [math.log(int(r["duration_ns"])) for r in stretch][1:]


def add_differences(apart, collective, size, action, logs):
    """Adds a stretch's differences between consecutive calls and calls two apart to its (collective, size,
    algorithm/protocol) in `apart`; returns those two apart."""
    one, two = apart[(collective, size, "/".join(action.split("/")[:2]))]
    one += [a - b for a, b in zip(logs, logs[1:])]
    two_apart = [a - b for a, b in zip(logs, logs[2:])]
    two += two_apart
    return two_apart


def noise_structure(rows, pairs_runs=()):
    """From a learning trace's rows (module docstring), and the pairs runs' traces for the alternation:
    ({(collective, bytes): per-call sigma}, {(collective, bytes): the run level's sigma}, {(collective, bytes,
    algorithm/protocol): alternation amplitude})."""
    apart = collections.defaultdict(lambda: ([], []))  # (cell, algorithm/protocol): differences 1 and 2 calls apart
    stretch_means = collections.defaultdict(list)  # (cell, action): (mean log span, calls) of each long stretch
    two_by_size = collections.defaultdict(list)  # (cell): the learning run's differences 2 calls apart
    for collective, size, action, logs in stretches(rows, ROUND_SKIP):
        two_by_size[(collective, size)] += add_differences(apart, collective, size, action, logs)
        if len(logs) >= STRETCH_LEVEL_MIN:
            stretch_means[(collective, size, action)].append((statistics.mean(logs), len(logs)))
    sigma = {key: robust_spread(two) / math.sqrt(2) for key, two in two_by_size.items() if len(two) >= POINT_CALLS_MIN}
    for run in pairs_runs:  # blocks of 4 calls of an action, each block's first left out
        for path in sorted(glob.glob(os.path.join(run, "pairs-trace", "*", "trace-0.csv"))):
            for collective, size, action, logs in stretches(read_trace(path), 0):
                add_differences(apart, collective, size, action, logs)
    alternation = {key: math.sqrt(max(0.0, (trimmed_mean_square(one) - trimmed_mean_square(two)) / 4))
                   for key, (one, two) in apart.items() if len(two) >= ALTERNATION_MIN}
    deviations = collections.defaultdict(list)
    for (collective, size, _), means in stretch_means.items():
        if len(means) >= 5:
            center = statistics.median(m for m, _ in means)
            deviations[(collective, size)] += [(m - center, n) for m, n in means]
    level = {}
    for key, found in deviations.items():
        if len(found) >= LEVEL_STRETCHES_MIN and key in sigma:
            calls = statistics.mean(n for _, n in found)
            level[key] = math.sqrt(max(0.0, robust_spread([d for d, _ in found]) ** 2 - sigma[key] ** 2 / calls))
    return sigma, level, alternation


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


def self_test():
    """noise_structure on a made-up learning trace: 600 rounds of 13 AllGather 4 KiB calls, each round's
    calls sharing a level (sigma 0.15), ring/LL's alternating by 0.5 (which first drawn per round), every
    call with its own noise (sigma 0.1); a third of the rounds switch to ring/Simple (no alternation) at
    their 7th call; an AllReduce call between rounds. Returns the process's exit status."""
    rng = random.Random(7)
    rows, order = [], 0
    for _ in range(600):
        level, phase, switch = rng.gauss(0, 0.15), rng.choice((1, -1)), rng.random() < 1 / 3
        for position in range(13):
            action = ("ring", "simple", 1) if switch and position >= 6 else ("ring", "ll", 1)
            log_span = math.log(20000) + level + rng.gauss(0, 0.1)
            if action[1] == "ll":
                log_span += 0.5 * phase * (1 if position % 2 else -1)
            rows.append(("allgather", 4096, action, int(math.exp(log_span))))
        rows.append(("allreduce", 1024, ("ring", "ll", 1), 9000))
    failures, checks = [], 0
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(STAMPED_TRACE_HEADER)
        for order, (collective, size, (algorithm, protocol, channels), span) in enumerate(rows):
            f.write(f"0,{order},{collective},{size},{algorithm},{protocol},{channels},{channels},{order * 100000},{span},"
                    f"{order},{order * 100000},{order * 100000 + 50000}\n")
    try:
        sigma, level, alternation = noise_structure(read_trace(f.name))
    finally:
        os.unlink(f.name)
    cell = ("allgather", 4096)
    for what, got, low, high in (("per-call sigma", sigma.get(cell), 0.09, 0.11), ("level", level.get(cell), 0.12, 0.18),
                                 ("ring/LL's alternation", alternation.get(cell + ("ring/ll",)), 0.46, 0.54),
                                 ("ring/Simple's alternation", alternation.get(cell + ("ring/simple",)), 0.0, 0.05)):
        checks += 1
        if got is None or not low <= got <= high:
            failures.append(f"{what}: {got} not in [{low}, {high}]")
    checks += 1
    if ("allreduce", 1024) in sigma or ("allreduce", 1024) in level:
        failures.append("single AllReduce calls between rounds were given noise points")
    for failure in failures:
        print("replay_profile.py self-test:", failure, file=sys.stderr)
    print(f"replay_profile.py self-test: {checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
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
                if not line.startswith(("measured", "noise.sigma", "noise.level", "noise.alternation", "noise.drift",
                                                  "# Replayed", "# Per-call noise"))]
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
            points, levels, alternations = noise_structure(
                read_trace(learn_trace, gzip.open if learn_trace.endswith(".gz") else open), pairs_runs)
            print(f"# Per-call noise, runs' levels and alternation by collective and size: {learn_trace} (rank 0; "
                  "bench/gpu/replay_profile.py).", file=out)
            for coll, size in sorted(points):
                print(f"noise.sigma_at = {coll} {size} {points[(coll, size)]:.3f}", file=out)
            for coll, size in sorted(levels):
                print(f"noise.level_at = {coll} {size} {levels[(coll, size)]:.3f}", file=out)
            for coll, size, algorithm_protocol in sorted(alternations, key=lambda k: (k[0], k[2], k[1])):
                print(f"noise.alternation_at = {coll} {size} {algorithm_protocol} "
                      f"{alternations[(coll, size, algorithm_protocol)]:.3f}", file=out)
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
