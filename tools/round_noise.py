#!/usr/bin/env python3
"""tools/round_noise.py: the noise of a GPU learning run's rounds, size by size (docs/simulator.md, "The noise of runs").

Usage: python3 tools/round_noise.py RUN_DIR [RUN_DIR ...]

Reads each run's learning trace (RUN_DIR/learn-trace/trace-0.csv[.gz], rank 0: `bench/gpu/run.sh --learn-trace`)
and prints, per collective and size: what bench/gpu/replay_profile.py's noise_structure writes into a replay
profile from it (the per-call sigma, the sigma of a level shared by a round's calls, and the alternation of
the action that ran most), and two checks of the level's model:
  next round   the correlation of consecutive rounds' means (13 calls of one action throughout, positions 4
               and later), per action, pooled: near 0 where each round draws its own level;
  shared       in rounds that ran two actions or more (from position 4), the correlation of the
               most-run action's mean with each other action's, each about its action's median over such
               rounds: near 1 where the actions of a round share its level.
"""
import collections
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "gpu"))
from replay_profile import ROUND_SKIP, noise_structure  # noqa: E402
from summarize import ROUND_CALLS, correlation, learn_trace_rows, ran, runs_of_one_cell  # noqa: E402

PAIRS_MIN = 8  # rounds for a correlation


def log_span(r):
    return math.log(int(r["duration_ns"]))


def level_checks(runs):
    """{(collective, bytes): (next-round correlation, pairs; shared correlation, pairs)}: the checks above, on
    the runs of one cell (runs_of_one_cell) that are full rounds."""
    means = collections.defaultdict(list)  # (cell, action): [mean] of one-action rounds, in call order
    mixed = collections.defaultdict(list)  # cell: [{action: mean}] of rounds of two actions or more
    for run in runs:
        if len(run) != ROUND_CALLS:
            continue
        cell = (run[0]["collective"], int(run[0]["bytes"]))
        by_action = collections.defaultdict(list)
        for r in run[ROUND_SKIP:]:
            by_action[ran(r)].append(log_span(r))
        if len(by_action) == 1:
            action, logs = next(iter(by_action.items()))
            means[cell + (action,)].append(statistics.mean(logs))
        else:
            mixed[cell].append({action: statistics.mean(logs) for action, logs in by_action.items()})
    next_round = collections.defaultdict(list)
    for (collective, size, _), series in means.items():
        next_round[(collective, size)] += list(zip(series, series[1:]))
    shared = collections.defaultdict(list)
    for cell, found in mixed.items():
        rounds_of = collections.Counter(a for means_of in found for a in means_of)  # an action: rounds it ran in
        centers = {action: statistics.median(m[action] for m in found if action in m) for action in rounds_of}
        for means_of in found:
            most = max(means_of, key=rounds_of.__getitem__)
            shared[cell] += [(means_of[most] - centers[most], means_of[a] - centers[a]) for a in means_of if a != most]
    cells = set(next_round) | set(shared)
    return {cell: (correlation(next_round[cell]) if len(next_round[cell]) >= PAIRS_MIN else None, len(next_round[cell]),
                   correlation(shared[cell]) if len(shared[cell]) >= PAIRS_MIN else None, len(shared[cell]))
            for cell in cells}


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for run_dir in sys.argv[1:]:
        rows = [r for r in learn_trace_rows(run_dir) if r["rank"] == "0" and int(r["duration_ns"]) > 0]
        if not rows:
            print(f"{run_dir}: no learn-trace/trace-0.csv[.gz]", file=sys.stderr)
            return 1
        sigma, level, alternation = noise_structure(rows)
        checks = level_checks(runs_of_one_cell(rows))
        most_run = collections.Counter((r["collective"], int(r["bytes"]), "/".join(ran(r).split("/")[:2])) for r in rows)
        print(f"== {run_dir}")
        print(f"{'collective':<14} {'bytes':>9}  {'sigma':>6} {'level':>6}  {'alternation (most run)':<28} "
              f"{'next round':>14} {'shared':>14}")
        for cell in sorted(set(sigma) | set(level) | set(checks)):
            kinds = [k for k in alternation if k[:2] == cell]
            main_kind = max(kinds, key=lambda k: most_run[k]) if kinds else None
            alt = f"{main_kind[2]} {alternation[main_kind]:.3f}" if main_kind else "-"
            nxt, n_next, shr, n_shared = checks.get(cell, (None, 0, None, 0))
            show = lambda v, n: f"{v:+.2f} ({n})" if v is not None else f"- ({n})"  # noqa: E731
            print(f"{cell[0]:<14} {cell[1]:>9}  {sigma.get(cell, float('nan')):6.3f} {level.get(cell, float('nan')):6.3f}  "
                  f"{alt:<28} {show(nxt, n_next):>14} {show(shr, n_shared):>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
