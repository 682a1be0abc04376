"""tools/calibrate_profile.py: fits a profile's truth model to measured latencies.

Takes a profile (the model to fit) and a replay profile (its `measured =` lines, written by
bench/gpu/replay_profile.py from a GPU run), and searches the model's truth parameters (launch, per
channel and step costs, per-protocol channel bandwidth, link bandwidth, tree and PAT factors) by
coordinate descent on the median and mean absolute log error between `dccl table --actions` (the
simulator's noise-free latency of each measured action) and the measurements. Prints the error before
and after and writes the fitted profile.

Usage: python3 tools/calibrate_profile.py MODEL.profile REPLAY.profile OUT.profile [--rounds N]
(run from the repository root after `make`; uses build/dccl)
"""
import collections
import math
import os
import subprocess
import sys
import tempfile

PARAMETERS = [  # key, lowest, highest
    ("truth.launch_us", 1, 200),
    ("truth.channel_us", 0, 50),
    ("truth.net.link_bw", 0.2, 50),
    ("truth.net.channel_bw.ll", 0.02, 20),
    ("truth.net.channel_bw.simple", 0.05, 50),
    ("truth.net.step_us.ll", 0.5, 500),
    ("truth.net.step_us.simple", 0.5, 500),
    ("truth.tree_bw", 0.1, 10),
    ("truth.pat_bw", 0.1, 10),
]


def read_measured(path):
    points = collections.defaultdict(dict)  # (collective, action) -> {bytes: us}
    with open(path) as f:
        for line in f:
            if line.startswith("measured"):
                coll, size, action, us = line.split("=", 1)[1].split()
                points[(coll, action)][int(size)] = float(us)
    return points


def with_values(lines, values):
    out, seen = [], set()
    for line in lines:
        key = line.split("=", 1)[0].strip() if "=" in line and not line.startswith("#") else None
        if key in values:
            out.append(f"{key} = {values[key]:.6g}")
            seen.add(key)
        elif not line.startswith("measured"):
            out.append(line)
    out += [f"{k} = {v:.6g}" for k, v in values.items() if k not in seen]
    return out


def predict(lines, values, points, dccl):
    """The model's latency of every measured (collective, action, bytes)."""
    with tempfile.NamedTemporaryFile("w", suffix=".profile", delete=False) as f:
        f.write("\n".join(with_values(lines, values)) + "\n")
        path = f.name
    predicted = {}
    try:
        by_coll = collections.defaultdict(set)
        for coll, action in points:
            by_coll[coll].add(action)
        for coll, actions in by_coll.items():
            sizes = sorted({s for (c, a), v in points.items() if c == coll for s in v})
            text = subprocess.run([dccl, "table", "--profile", path, "--collective", coll, "--min", str(sizes[0]),
                                   "--max", str(sizes[-1]), "--actions", ",".join(sorted(actions))],
                                  capture_output=True, text=True, check=True).stdout.splitlines()
            size = None
            for line in text:
                fields = line.split()
                if len(fields) > 2 and fields[0][-1] in "KMG" and fields[0][:-1].isdigit():
                    size = int(fields[0][:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[fields[0][-1]]
                elif size is not None and fields and "=" in fields[0] and "/" in fields[0]:
                    for item in fields:
                        action, _, us = item.rpartition("=")
                        if us != "-":
                            predicted[(coll, action, size)] = float(us)
    finally:
        os.unlink(path)
    return predicted


def error_of(predicted, points):
    errors = [abs(math.log(predicted[(c, a, s)] / us)) for (c, a), by_size in points.items()
              for s, us in by_size.items() if (c, a, s) in predicted]
    if not errors:
        return float("inf"), float("inf")
    errors.sort()
    return sum(errors) / len(errors), errors[len(errors) // 2]


def main():
    args = sys.argv[1:]
    rounds = 4
    if "--rounds" in args:
        rounds = int(args[args.index("--rounds") + 1])
        del args[args.index("--rounds"):args.index("--rounds") + 2]
    if len(args) != 3:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    model_path, replay_path, out_path = args
    dccl = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "dccl")
    lines = [line.rstrip("\n") for line in open(model_path)]
    points = read_measured(replay_path)
    values = {}
    for line in lines:
        key = line.split("=", 1)[0].strip()
        if any(key == p[0] for p in PARAMETERS):
            values[key] = float(line.split("=", 1)[1])
    for key, low, high in PARAMETERS:
        values.setdefault(key, math.sqrt(low * high) if low > 0 else 1.0)
    best = error_of(predict(lines, values, points, dccl), points)
    print(f"before: mean |log error| {best[0]:.3f}, median {best[1]:.3f}")
    step = 2.0
    for _ in range(rounds):
        for key, low, high in PARAMETERS:
            improved = True
            while improved:
                improved = False
                for factor in (step, 1 / step):
                    trial = dict(values)
                    base = trial[key] if trial[key] > 0 else 0.1
                    trial[key] = min(high, max(low, base * factor))
                    score = error_of(predict(lines, trial, points, dccl), points)
                    if score[0] < best[0] - 1e-4:
                        values, best, improved = trial, score, True
                        break
        step = math.sqrt(step)
    print(f"after:  mean |log error| {best[0]:.3f}, median {best[1]:.3f}")
    with open(out_path, "w") as f:
        f.write("\n".join(with_values(lines, values)) + "\n")
    for key, _, _ in PARAMETERS:
        print(f"  {key} = {values[key]:.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
