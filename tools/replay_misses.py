#!/usr/bin/env python3
"""tools/replay_misses.py: why the frozen policies of a replay miss the best action, size by size.

Usage: python3 tools/replay_misses.py KEEP_DIR [--profile NAME_OR_PATH] [--dccl build/dccl]
                                     [--exclude COLLECTIVE:SIZE ...] [--cases] [--bias]
       python3 tools/replay_misses.py --self-test   (the classification on known cases)

KEEP_DIR is the folder a replay kept with BENCH_REPLAY_KEEP (bench/bench_replay.sh): each seed's
frozen-N.txt report and its learned policy-N.bin. The profile (default h100-sockets-2ranks-pairs) gives
each size's measured latency per action (its `measured =` lines); the best action is the fastest there.
Every frozen size more than 1/0.97 slower than the best (the report's `vs oracle` column) is read in the
seed's policy (`dccl inspect POLICY --arms COLLECTIVE:SIZE --all`, calm context) and put in one kind:

  untried    the best action's arm has fewer than 3 readings: 'never' (none), 'slow first readings'
             (their mean over 1.5x the action's measured latency: a spike or a burst wrote it off) or
             'first readings' (the rest);
  misjudged  read 3 times or more, but another arm read 3 times or more, or NCCL's choice, measured faster;
  unproven   measured fastest, yet not exploited (its lower bound against NCCL's choice, whose few
             readings widen it, was not above 0 when the job ended).

With --bias it also prints how far the saved arms' means put each action from the cell's most read arm (200
readings or more), against the profile's measured latencies: log(mean / most read's mean) - log(measured /
most read's measured), median and mean by the arm's readings (1-2, 3-9, 10-49, 50+); over 0, the arm reads
slower against the incumbent than it is. It mixes the learner's booking (common drift, charges for left work,
tails) with selection: an arm left at few readings is most often one that read slow, and the most read arm
one that read fast.

The best action's arm is the one of its algorithm and protocol that NCCL ran on its channel count (the
`ran on` column), the most read if several. Example (the cold pairs replay, AllGather 1 KiB left out: its
miss is within the pairs' precision):
  BENCH_REPLAY_KEEP=/tmp/keep BENCH_REPLAY_PROFILE=h100-sockets-2ranks-pairs \\
    bench/bench_replay.sh build 200 2.28 gpu-learn leftover
  python3 tools/replay_misses.py /tmp/keep --exclude allgather:1K
"""
import argparse
import collections
import glob
import math
import os
import re
import signal
import subprocess
import sys
import tempfile

TARGET = 1 / 0.97
FEW_READINGS = 3
SLOW_FIRST = 1.5
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_bytes(text):
    match = re.fullmatch(r"(\d+)([KMG]?)", text)
    if match is None:
        raise ValueError(f"not a size: {text}")
    return int(match.group(1)) * UNITS[match.group(2)]


def load_measured(path):
    measured = collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) == 6 and fields[0] == "measured" and fields[1] == "=":
                measured[(fields[2], int(fields[3]))][fields[4]] = float(fields[5])
    if not measured:
        sys.exit(f"replay_misses.py: {path} has no `measured =` lines")
    return measured


def frozen_misses(path):
    """(collective, size text, x best) of each size below the target in one frozen report."""
    for line in open(path):
        fields = line.split()
        if len(fields) == 8 and fields[0] in ("allgather", "reducescatter", "allreduce"):
            if float(fields[6]) > TARGET:
                yield fields[0], fields[1], float(fields[6])


def calm_arms(dccl, policy, collective, size):
    """NCCL's choice's (readings, mean us) and the calm context's arms as (name, readings, mean us, ran on)."""
    out = subprocess.run([dccl, "inspect", policy, "--arms", f"{collective}:{size}", "--all"],
                         capture_output=True, text=True).stdout
    if "calm context" not in out:
        return None, [], None
    calm = out.split("calm context", 1)[1].split("congested context", 1)[0]
    nccl = re.search(r"NCCL's choice ([\d.]+) samples, mean ([\d.]+) us", calm)
    arms = []
    for line in calm.splitlines()[2:]:
        fields = line.split()
        if len(fields) < 3 or "(invalid)" in line or not re.fullmatch(r"[\d.]+", fields[1]):
            continue
        ran = re.search(r"(\d+) ch", line)
        arms.append((fields[0], float(fields[1]), float(fields[2]), int(ran.group(1)) if ran else None))
    exploited = re.search(rf"^\s+{collective}\s+{size}\s+0\s+0\s+(\S+)", out, re.M)
    return (float(nccl.group(1)), float(nccl.group(2))) if nccl else None, arms, exploited.group(1) if exploited else None


def size_text(size):
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


BIAS_BUCKETS = ((1, "1-2"), (3, "3-9"), (10, "10-49"), (50, "50+"))
BIAS_INCUMBENT_READINGS = 200


def measured_key(name, ran):
    """The profile's name for what an arm measured: its algorithm and protocol on the channels NCCL ran it on
    (None where that is not known)."""
    return None if ran is None else f"{re.sub(r'/ch=[0-9]+', '', name)}/ch={ran}"


def bucket_of(readings):
    return next(label for low, label in reversed(BIAS_BUCKETS) if readings >= low)


def booked_errors(arms, times):
    """(readings, log error) of each arm against the most read one: the arms' means as booked over the
    measured latencies (`times`, by action; the most read arm of each measured key); none below 200 readings."""
    by_key = {}
    for name, readings, mean, ran in arms:
        key = measured_key(name, ran)
        if readings >= 1 and key in times and (key not in by_key or readings > by_key[key][0]):
            by_key[key] = (readings, mean)
    if not by_key:
        return []
    incumbent = max(by_key, key=lambda k: by_key[k][0])
    readings_in, mean_in = by_key[incumbent]
    if readings_in < BIAS_INCUMBENT_READINGS:
        return []
    return [(readings, math.log(mean / mean_in) - math.log(times[key] / times[incumbent]))
            for key, (readings, mean) in by_key.items() if key != incumbent]


def print_bias(errors):
    print("arms against the cell's most read arm, booked minus measured (log), by readings:")
    for _, label in reversed(BIAS_BUCKETS):
        bucket = sorted(e for r, e in errors if bucket_of(r) == label)
        if bucket:
            print(f"  {label:<6} {len(bucket):6d} arms: median {bucket[len(bucket) // 2]:+.3f}, "
                  f"mean {sum(bucket) / len(bucket):+.3f}")


def classify(best, best_us, nccl, arms):
    readings, mean = max(((a[1], a[2]) for a in arms if measured_key(a[0], a[3]) == best), default=(0.0, None))
    if readings < FEW_READINGS:
        if readings == 0:
            return "untried", "never", readings, mean
        return "untried", "slow first readings" if mean > SLOW_FIRST * best_us else "first readings", readings, mean
    faster = [a for a in arms if a[1] >= FEW_READINGS and a[2] < mean]
    if faster or (nccl is not None and nccl[1] < mean):
        return "misjudged", "", readings, mean
    return "unproven", "", readings, mean


def self_test():
    """Checks the parsing and the kinds on known cases; returns the process's exit status."""
    # Arms as `dccl inspect --arms` lists them: (name, readings, mean us, channels NCCL ran it on).
    nccl, best = (40.0, 300.0), "ring/simple/ch=1"
    faster = [("ring/simple/ch=1", 30.0, 270.0, 1), ("pat/simple/ch=1", 5.0, 265.0, 1)]
    young_faster = [("ring/simple/ch=1", 30.0, 270.0, 1), ("pat/simple/ch=1", 2.0, 200.0, 1)]
    # The best action's arm is its pair as NCCL ran it on its channel count: a request for 8 channels that
    # NCCL ran on 1 counts; one that ran on 2 does not. The most read of them gives the readings and mean.
    ran_on = [("ring/simple/ch=8", 12.0, 255.0, 1), ("ring/simple/ch=1", 3.0, 280.0, 1), ("ring/simple", 40.0, 300.0, 2)]
    # An arm read 1.1x the incumbent where the measurements say 1.0x: +log 1.1; one the profile does not
    # measure, or unread, is left out; an incumbent under 200 readings gives nothing.
    times = {"ring/simple/ch=2": 100.0, "ring/simple/ch=1": 90.0}
    errors = booked_errors([("ring/simple", 400.0, 100.0, 2), ("ring/simple/ch=1", 2.0, 99.0, 1),
                            ("ring/ll/ch=1", 3.0, 50.0, 1), ("pat/simple/ch=1", 0.0, 0.0, 1)], times)
    report = ["  collective      bytes     calls    steady us      NCCL us   vs NCCL vs oracle  convergence",
              "  allgather          1K       520        29.86        29.86    1.0000    1.0314            0",
              "  allgather          4K       520        33.43        33.43    1.0000    1.0309            0",
              "  reducescatter      1M       520       296.91       296.91    1.0000    1.0856          520",
              "  all              14040     2569.46      117.95    24897.15      2584.17      2568.21     0.994     1.000"]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "frozen-1.txt")
        with open(path, "w") as f:
            f.write("\n".join(report) + "\n")
        misses = list(frozen_misses(path))
    cases = [  # (what, got, expected)
        ("sizes", [size_bytes(t) for t in ("1K", "64K", "1M", "64M", "512")], [1024, 65536, 1 << 20, 64 << 20, 512]),
        ("size text", [size_text(b) for b in (1024, 65536, 1 << 20, 64 << 20, 1000)], ["1K", "64K", "1M", "64M", "1000"]),
        ("never read", classify(best, 250.0, nccl, [("ring/simple", 40.0, 300.0, 2)])[:2], ("untried", "never")),
        ("one slow first reading", classify(best, 250.0, nccl, [("ring/simple/ch=1", 1.0, 400.0, 1)])[:2],
         ("untried", "slow first readings")),
        ("two first readings", classify(best, 250.0, nccl, [("ring/simple/ch=1", 2.0, 260.0, 1)])[:2],
         ("untried", "first readings")),
        ("another arm measured faster", classify(best, 250.0, nccl, faster)[:2], ("misjudged", "")),
        ("NCCL's choice measured faster", classify(best, 250.0, (40.0, 260.0), faster[:1])[:2], ("misjudged", "")),
        ("a faster arm of 2 readings does not count", classify(best, 250.0, nccl, young_faster)[:2], ("unproven", "")),
        ("the arm NCCL ran on the best's channels", classify(best, 250.0, nccl, ran_on), ("unproven", "", 12.0, 255.0)),
        ("booked error", [(r, round(e, 6)) for r, e in errors], [(2.0, round(math.log(1.1), 6))]),
        ("no incumbent", booked_errors([("ring/simple", 150.0, 100.0, 2), ("ring/simple/ch=1", 2.0, 99.0, 1)], times), []),
        ("frozen misses", misses, [("allgather", "1K", 1.0314), ("reducescatter", "1M", 1.0856)]),
    ]
    failures = [f"{what}: {got} != {expected}" for what, got, expected in cases if got != expected]
    for failure in failures:
        print("replay_misses.py self-test:", failure, file=sys.stderr)
    print(f"replay_misses.py self-test: {len(cases) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quietly, into `head`
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("keep", help="a BENCH_REPLAY_KEEP folder")
    parser.add_argument("--profile", default="h100-sockets-2ranks-pairs",
                        help="the replay's profile, a name under scenarios/profiles or a path")
    parser.add_argument("--dccl", default="build/dccl")
    parser.add_argument("--exclude", action="append", default=[], metavar="COLLECTIVE:SIZE")
    parser.add_argument("--cases", action="store_true", help="one line per miss")
    parser.add_argument("--bias", action="store_true", help="the arms' booked means against the measured latencies")
    args = parser.parse_args()
    profile = args.profile if os.path.exists(args.profile) else f"scenarios/profiles/{args.profile}.profile"
    measured = load_measured(profile)
    excluded = {(c, size_bytes(s)) for c, s in (e.split(":", 1) for e in args.exclude)}
    seeds = sorted((int(re.findall(r"\d+", os.path.basename(p))[-1]), p)
                   for p in glob.glob(os.path.join(args.keep, "frozen-*.txt")))
    if not seeds:
        sys.exit(f"replay_misses.py: no frozen-N.txt in {args.keep}")
    seeds = [(seed, report, os.path.join(args.keep, f"policy-{seed}.bin")) for seed, report in seeds]
    kinds, by_size, left_out = collections.Counter(), collections.defaultdict(collections.Counter), 0
    for seed, report, policy in seeds:
        for collective, size, x_best in frozen_misses(report):
            key = (collective, size_bytes(size))
            if key in excluded:
                left_out += 1
                continue
            times = measured.get(key)
            if not times:
                continue
            best = min(times, key=times.get)
            nccl, arms, exploited = calm_arms(args.dccl, policy, collective, size)
            kind, detail, readings, mean = classify(best, times[best], nccl, arms)
            label = f"{kind} ({detail})" if detail else kind
            kinds[label] += 1
            by_size[f"{collective} {size}"][kind] += 1
            if args.cases:
                nccl_text = f"{nccl[0]:g} readings, {nccl[1]:.2f} us" if nccl else "-"
                mean_text = f"{mean:.2f} us" if mean is not None else "-"
                print(f"seed {seed} {collective} {size}: {x_best:.4f} x best, {label}; best {best} "
                      f"({times[best]:.2f} us measured) {readings:g} readings, {mean_text}; NCCL's choice "
                      f"{nccl_text}; exploited {exploited or 'nccl'}")
    if args.bias:
        errors = []
        for _, _, policy in seeds:
            for (collective, size), times in sorted(measured.items()):
                errors += booked_errors(calm_arms(args.dccl, policy, collective, size_text(size))[1], times)
        print_bias(errors)
    total = sum(kinds.values())
    print(f"{len(seeds)} seeds: {total} sizes below 0.97 of the best" +
          (f" ({left_out} more at excluded sizes)" if left_out else ""))
    for label, count in sorted(kinds.items()):
        print(f"  {label}: {count}")
    print("by size (untried / misjudged / unproven):")
    for size, counts in sorted(by_size.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"  {size:<20} {counts['untried']:4d} {counts['misjudged']:4d} {counts['unproven']:4d}")


if __name__ == "__main__":
    sys.exit(main())
