#!/usr/bin/env python3
"""tools/compare_eval.py: compares `dccl eval --csv` runs of one policy, seed by seed.

Usage: python3 tools/compare_eval.py BASE.csv CHANGED.csv [--policy dqn]

Run both with the same scenarios and seeds (e.g. `build/dccl eval --policies dqn --seeds 3 --csv F`
before and after a change). For every scenario it prints total and steady-state latency over the
oracle's (geometric mean over seeds) for each run, the changed run's per-seed ratios to the base run's
as min..max, and whether the change is outside the seed spread: 'better' or 'worse' when every seed
moved the same way by more than the noise floor, '~' otherwise. A change in a learning policy moves
every later decision, so on these scenarios the seed-to-seed spread of one run is often 1-2%: a
difference that does not hold on every seed is not a result.
"""
import argparse
import collections
import csv
import math
import sys

NOISE_FLOOR = 0.002  # ratios within 0.2% of 1 count as unchanged


def load(path, policy):
    runs = collections.defaultdict(dict)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["policy"] == policy:
                runs[row["scenario"]][row["seed"]] = (float(row["x_oracle"]), float(row["steady_x_oracle"]))
    return runs


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def verdict(ratios):
    if all(r < 1 - NOISE_FLOOR for r in ratios):
        return "better"
    if all(r > 1 + NOISE_FLOOR for r in ratios):
        return "worse"
    return "~"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("changed")
    parser.add_argument("--policy", default="dqn")
    args = parser.parse_args()
    base, changed = load(args.base, args.policy), load(args.changed, args.policy)
    if not base or not changed:
        sys.exit(f"no rows of policy {args.policy} in {args.base if not base else args.changed}")
    print(f"{'scenario':28} {'total: base':>12} {'changed':>8} {'per seed':>13} {'':6}"
          f" {'steady: base':>13} {'changed':>8} {'per seed':>13}")
    means = collections.defaultdict(list)
    for scenario in sorted(base):
        seeds = sorted(set(base[scenario]) & set(changed.get(scenario, {})))
        if not seeds:
            print(f"{scenario:28} (no common seeds)")
            continue
        line = f"{scenario:28}"
        for k in (0, 1):
            b = [base[scenario][s][k] for s in seeds]
            c = [changed[scenario][s][k] for s in seeds]
            ratios = [y / x for x, y in zip(b, c)]
            means[k, "base"].append(geometric_mean(b))
            means[k, "changed"].append(geometric_mean(c))
            line += (f" {geometric_mean(b):12.4f} {geometric_mean(c):8.4f} {min(ratios):6.3f}..{max(ratios):5.3f}"
                     f" {verdict(ratios):6}")
        print(line)
    print(f"{'mean over scenarios':28} {sum(means[0, 'base']) / len(means[0, 'base']):12.4f}"
          f" {sum(means[0, 'changed']) / len(means[0, 'changed']):8.4f} {'':20}"
          f" {sum(means[1, 'base']) / len(means[1, 'base']):13.4f} {sum(means[1, 'changed']) / len(means[1, 'changed']):8.4f}")


if __name__ == "__main__":
    main()
