"""bench/gpu/summarize.py: the GPU run's summary from collbench's CSVs (bench/gpu/run.sh writes them).

Per collective and size, as bus bandwidth: NCCL alone, the action NCCL chose (from the plugin's trace
of a `default` run), the plugin with the default policy (overhead), the real best from the sweep (the
testbed's oracle: the fastest verified action that NCCL really ran), DynamICCL learning online (its
last pass) and DynamICCL frozen on the policy it saved; ratios to the best and to NCCL. Then the
learning curve (every pass against the best), the congestion run, and the profiler check (the
plugin's GPU durations against CUDA-event timings of the same calls).

Usage: python3 bench/gpu/summarize.py OUT_DIR   (reads none.csv, default.csv, sweep.csv, learn.csv,
frozen.csv, congestion.csv, event-check.csv and the trace folders there; prints markdown)
       python3 bench/gpu/summarize.py --write-executed OUT_DIR   (writes OUT_DIR/executed.csv, what NCCL
       ran per swept entry and size, from compare-trace/: compact enough to keep with the results)
       python3 bench/gpu/summarize.py --write-learned-table TRACE_DIR FILE   (the learned policy's choices
       from a frozen run's trace, as A||B lines against NCCL's own choice, for collbench --mode pairs)
       python3 bench/gpu/summarize.py --self-test   (the statistics on known cases; run.sh --dry-run runs it)
"""
import collections
import csv
import glob
import gzip
import io
import itertools
import math
import os
import re
import statistics
import sys


def load(path, mode=None):
    """Rows of a collbench CSV by (collective, bytes), only those of `mode` when given."""
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for r in csv.DictReader(f):
            if mode is not None and r["mode"] != mode:
                continue
            rows.setdefault((r["collective"], int(r["bytes"])), []).append(r)
    return rows


def median_busbw(rows):
    """Median bus bandwidth over repeated runs of one configuration (verified rows only)."""
    values = [float(r["busbw_gbs"]) for r in rows if r["verified"] == "1" and float(r["busbw_gbs"]) > 0]
    return statistics.median(values) if values else None


def ran(row):
    """The action a plugin trace row ran, as `algorithm/protocol/ch=N`."""
    return f"{row['algorithm'].lower()}/{row['protocol'].lower()}/ch={row['channels']}"


def traced_counts(folder):
    """How often NCCL ran each action per (collective, bytes) in a plugin trace (its ranks' files)."""
    seen = collections.defaultdict(collections.Counter)
    for path in glob.glob(os.path.join(folder, "trace-*.csv")):
        for r in read_trace(path):
            key = (r["collective"].lower(), int(r["bytes"]))
            seen[key][ran(r)] += 1
    return seen


def traced_choices(folder):
    """The action NCCL ran per (collective, bytes) in a plugin trace: its most frequent one."""
    return {key: counter.most_common(1)[0][0] for key, counter in traced_counts(folder).items()}


def pass_of(row):
    """(pass number, Unix time it ended) from a learn-round row's action `round=K@T`."""
    number, _, stamp = row["action"].partition("=")[2].partition("@")
    return int(number), float(stamp) if stamp else 0.0


def groups(passes, most=30):
    """Consecutive passes in at most `most` groups (all of them one by one when they are few)."""
    size = max(1, math.ceil(len(passes) / most))
    return [passes[i:i + size] for i in range(0, len(passes), size)]


def ratio(a, b):
    return f"{a / b:.3f}" if a and b else "-"


def value(a):
    return f"{a:.3f}" if a is not None else "-"


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def executed_actions(out):
    """What NCCL really ran per swept entry, collective and size: executed.csv, else the entries' traces
    (compare-trace/<entry>/, the last repetition's). {(entry folder, collective, bytes): action}"""
    executed = {}
    path = os.path.join(out, "executed.csv")
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                executed[(r["entry"], r["collective"], int(r["bytes"]))] = r["executed"]
        return executed
    for folder in glob.glob(os.path.join(out, "compare-trace", "*")):
        for key, action in traced_choices(folder).items():
            executed[(os.path.basename(folder), key[0], key[1])] = action
    return executed


def heading(title, text):
    """A summary section's heading and the paragraph that says what its table holds."""
    print(f"\n## {title}\n")
    print(text + "\n")


def compare_table(out):
    """The side-by-side runs (compare.csv): medians over repetitions, each entry in its own processes.

    Swept entries that NCCL ran alike (it caps the channels asked for at the communicator's count, so
    ring/simple/ch=4 and ch=16 run on 2 channels here) are one action: their repetitions are pooled
    under what ran. The real best per size is the action with the highest median; since the largest
    of many noisy medians is biased upwards, it is also given as measured on held-out repetitions: the
    action is picked on the even repetitions and its median taken on the odd ones. Ratios use the
    held-out best."""
    rows = collections.defaultdict(list)
    executed = executed_actions(out)
    with open(os.path.join(out, "compare.csv")) as f:
        for r in csv.DictReader(f):
            action = r["action"]
            if r["mode"] == "sweep":
                action = executed.get((action.replace("/", "-"), r["collective"], int(r["bytes"])), action)
            rows[(r["mode"], action, r["collective"], int(r["bytes"]))].append(r)
    wrong = sum(1 for rs in rows.values() for r in rs if r["verified"] != "1")
    reps = sorted({int(r["repetition"]) for rs in rows.values() for r in rs})
    nccl_choice = traced_choices(os.path.join(out, "compare-trace", "default"))
    frozen_choice = traced_choices(os.path.join(out, "compare-trace", "frozen"))
    def med(kind, action, key, parity=None):
        return median_busbw([r for r in rows.get((kind, action, key[0], key[1]), [])
                             if parity is None or int(r["repetition"]) % 2 == parity])
    keys = sorted({(k[2], k[3]) for k in rows}, key=lambda k: (k[0], k[1]))
    print("## DynamICCL on real NCCL, side by side: bus bandwidth (GB/s), median over repetitions\n")
    print(f"{len(reps)} repetitions, each entry in its own set of processes, in a new order each time. "
          f"Rows whose results were wrong (verified=0): {wrong}. Swept entries are named by what NCCL ran"
          f"{' (executed.csv / traces: requests above 2 channels ran on 2)' if executed else ''}.\n")
    print("| collective | bytes | NCCL alone (spread) | NCCL's choice | plugin default / NCCL | real best: action, median "
          "| held-out | NCCL / best | learned policy's choice | learned frozen | / best | / NCCL |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = collections.defaultdict(list)
    best_of = {}  # the largest median per size, for the learning curve
    same, other = [], []  # learned / NCCL where the learned policy runs NCCL's own action, and elsewhere
    misses = []  # ((collective, bytes, against), paired ratios) where the learned policy is below 0.97
    pair_spreads = []  # per size, the standard deviation of log(frozen / NCCL alone) over the repetitions
    for key in keys:
        alone = med("none", "-", key)
        spread_values = [float(r["busbw_gbs"]) for r in rows.get(("none", "-", key[0], key[1]), []) if r["verified"] == "1"]
        spread = max(spread_values) / min(spread_values) if len(spread_values) > 1 and min(spread_values) > 0 else None
        plugin, frozen = med("default", "-", key), med("frozen", "-", key)
        actions = sorted({k[1] for k in rows if k[0] == "sweep" and (k[2], k[3]) == key
                          and all(r["applied"] == "1" for r in rows[k])})
        kind_of = lambda a: ("none", "-") if a == "NCCL alone" else ("sweep", a)
        actions.append("NCCL alone")  # NCCL's own choice is a candidate too
        medians = {a: med(*kind_of(a), key) for a in actions}
        medians = {a: v for a, v in medians.items() if v}
        best_action = max(medians, key=medians.get) if medians else None
        best_of[key] = medians.get(best_action)
        held_out = None
        if len(reps) > 1:
            picked = {a: med(*kind_of(a), key, 0) for a in actions}
            picked = {a: v for a, v in picked.items() if v}
            if picked:
                chosen = max(picked, key=picked.get)
                held_out = med(*kind_of(chosen), key, 1)
        best = held_out or (medians.get(best_action) if best_action else None)
        for name, got, ref in (("NCCL/best", alone, best), ("default/NCCL", plugin, alone),
                               ("frozen/best", frozen, best), ("frozen/NCCL", frozen, alone)):
            if got and ref:
                ratios[name].append(got / ref)
        if frozen and best and frozen / best < 0.97 and held_out:
            misses.append(((key[0], key[1], "best"), paired_ratios(rows, ("frozen", "-"), kind_of(chosen), key, 1)))
        pairs = paired_ratios(rows, ("frozen", "-"), ("none", "-"), key)
        if len(pairs) > 2:
            pair_spreads.append(statistics.stdev(math.log(v) for v in pairs))
        if frozen and alone and frozen / alone < 0.97:
            misses.append(((key[0], key[1], "NCCL"), pairs))
        if alone and frozen and key in nccl_choice and key in frozen_choice:
            (same if nccl_choice[key] == frozen_choice[key] else other).append(frozen / alone)
        alone_cell = f"{value(alone)} ({spread:.2f}x)" if spread else value(alone)
        print(f"| {key[0]} | {key[1]} | {alone_cell} | {nccl_choice.get(key, '-')} | {ratio(plugin, alone)} | "
              f"{best_action or '-'}, {value(medians.get(best_action))} | {value(held_out)} | {ratio(alone, best)} | "
              f"{frozen_choice.get(key, '-')} | {value(frozen)} | {ratio(frozen, best)} | {ratio(frozen, alone)} |")
    print("\n(spread: largest / smallest bus bandwidth of NCCL alone over the repetitions: the testbed's noise "
          "between sets of processes.)\n")
    for name, values in ratios.items():
        print(f"- {name}: geometric mean {geomean(values):.3f}, lowest {min(values):.3f}, "
              f"{sum(1 for v in values if v < 0.97)} of {len(values)} sizes below 0.97")
    if same:
        print(f"- sizes where the learned policy runs NCCL's own action: {len(same)}; there learned / NCCL is noise "
              f"alone: {min(same):.3f} .. {max(same):.3f}")
    if other:
        print(f"- sizes where it runs another action: {len(other)}; learned / NCCL geometric mean {geomean(other):.3f}, "
              f"lowest {min(other):.3f}, highest {max(other):.3f}, {sum(1 for v in other if v < 0.97)} below 0.97")
    target_check(misses, pair_spreads)
    return best_of


def median_interval(values, coverage=0.95):
    """A distribution-free interval for the median of `values` and its coverage: the order statistics k
    and n-1-k with the largest k whose coverage, 1 - 2 P(Binomial(n, 1/2) <= k), is at least `coverage`;
    with too few values for that (fewer than 6 at 95%), the smallest and largest and their coverage.
    None for fewer than 2 values."""
    v, n = sorted(values), len(values)
    if n < 2:
        return None
    cover = lambda k: 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    k = 0
    while k + 1 < n // 2 and cover(k + 1) >= coverage:
        k += 1
    return v[k], v[n - 1 - k], cover(k)


def against_target(values):
    """Whether the median of `values` (ratios) is below 0.97 beyond doubt: 'below' when its whole interval
    is, 'noise' when the interval reaches 0.97, 'too few pairs' under 90% coverage (fewer than 5)."""
    interval = median_interval(values)
    if interval is None or interval[2] < 0.9:
        return "too few pairs"
    return "below" if interval[1] < 0.97 else "noise"


def paired_ratios(rows, numerator, denominator, key, parity=None):
    """Per repetition (of `parity` when given), numerator's bus bandwidth over denominator's, both
    verified: the entries of one repetition ran one after the other, so the pair shares its moment."""
    def by_repetition(kind_action):
        return {int(r["repetition"]): float(r["busbw_gbs"]) for r in rows.get((*kind_action, key[0], key[1]), [])
                if r["verified"] == "1" and float(r["busbw_gbs"]) > 0
                and (parity is None or int(r["repetition"]) % 2 == parity)}
    top, bottom = by_repetition(numerator), by_repetition(denominator)
    return [top[k] / bottom[k] for k in sorted(top) if k in bottom]


def target_check(misses, pair_spreads):
    """Which per-size misses of the 0.97 targets are more than the testbed's noise: the interval of the
    median paired ratio (per repetition) entirely below 0.97; and how many repetitions a +-3% interval
    would take at this noise."""
    if pair_spreads:
        spread = statistics.median(pair_spreads)
        # The sample median's standard error is about 1.2533 sigma / sqrt(n) for normal noise.
        needed = math.ceil((1.96 * 1.2533 * spread / 0.03) ** 2)
        print(f"\n- noise of a paired comparison (learned frozen / NCCL alone, one repetition): standard deviation "
              f"of the log ratio {spread:.3f} (median over {len(pair_spreads)} sizes; {min(pair_spreads):.3f} .. "
              f"{max(pair_spreads):.3f}); a 95% interval of +-3% on a size's median ratio takes about {needed} "
              f"repetitions")
    if not misses:
        return
    heading("The 0.97 targets under the testbed's noise: paired ratios per repetition",
            "Sizes whose median ratio is below 0.97. Each repetition's pair ran one after the other; the "
            "interval is a distribution-free interval of the median paired ratio (order statistics; 95% "
            "where there are 6 pairs or more, else the smallest and largest pair), the best action's pairs on "
            "the held-out (odd) repetitions only. 'below' means the whole interval is below 0.97; 'noise' that "
            "it reaches 0.97; no verdict under 90% coverage (fewer than 5 pairs).")
    print("| collective | bytes | against | pairs | median | interval | coverage | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    verdicts = collections.Counter()
    for (coll, size, against), values in misses:
        interval = median_interval(values)
        verdict = against_target(values)
        verdicts[against, verdict] += 1
        shown = f"{interval[0]:.3f} .. {interval[1]:.3f} | {100 * interval[2]:.1f}%" if interval else "- | -"
        median = f"{statistics.median(values):.3f}" if values else "-"
        print(f"| {coll} | {size} | {against} | {len(values)} | {median} | {shown} | {verdict} |")
    print()
    for against in ("best", "NCCL"):
        counts = {v: verdicts[against, v] for v in ("below", "noise", "too few pairs") if verdicts[against, v]}
        if counts:
            print(f"- learned frozen / {against}: " + ", ".join(f"{n} {v}" for v, n in counts.items()))


def write_executed(out):
    executed = executed_actions(out)
    with open(os.path.join(out, "executed.csv"), "w") as f:
        writer = csv.writer(f)
        writer.writerow(["entry", "collective", "bytes", "executed"])
        for (entry, coll, size), action in sorted(executed.items()):
            writer.writerow([entry, coll, size, action])
    return 0


def write_learned_table(trace_dir, path):
    """A fixed table of A||B lines from a frozen run's trace: per collective and size, the action the
    learned policy ran (its most frequent) against NCCL's own choice, for collbench --mode pairs."""
    choices = traced_choices(trace_dir)
    if not choices:
        print(f"summarize.py: no trace in {trace_dir}", file=sys.stderr)
        return 1
    with open(path, "w") as f:
        f.write("# the learned policy's choices (from a frozen run's trace) against NCCL's own, in alternating blocks of calls\n")
        for (coll, size), action in sorted(choices.items()):
            action = action.replace("/ch=0", "")  # channels not reported: NCCL's count
            f.write(f"{coll},{size},{size},{action}||nccl\n")
    return 0


def within_set_ratios(rows):
    """pairs.csv: {(entry, collective, bytes): {repetition: A's bus bandwidth / B's}}, from the two rows
    (entry and nccl@entry) each set of processes wrote per size; verified pairs only, and for action
    entries only where the trace showed NCCL running the action (applied)."""
    halves = collections.defaultdict(dict)
    for r in rows:
        if r["verified"] != "1" or float(r["busbw_gbs"]) <= 0:
            continue
        second = r["action"].startswith("nccl@")
        entry = r["action"][5:] if second else r["action"]
        if not second and r["applied"] != "1":
            continue
        halves[(entry, r["collective"], int(r["bytes"]), int(r["repetition"]))][second] = float(r["busbw_gbs"])
    ratios = collections.defaultdict(dict)
    for (entry, coll, size, rep), pair in halves.items():
        if False in pair and True in pair:
            ratios[(entry, coll, size)][rep] = pair[False] / pair[True]
    return ratios


def pooled_ratios(folders):
    """The within-set ratios of pairs runs (their pairs.csv), every repetition of every run pooled:
    {(entry, collective, bytes): [A's bus bandwidth / B's, ...]}."""
    pooled = collections.defaultdict(list)
    for folder in folders:
        with open(os.path.join(folder, "pairs.csv")) as f:
            for key, reps in within_set_ratios(list(csv.DictReader(f))).items():
                pooled[key] += reps.values()
    return pooled


def pairs_executed(out):
    """What ran in the pairs run's two reference entries, from their traces (pairs-trace/nccl and
    pairs-trace/learned): per (collective, bytes), NCCL's own choice (the `nccl` entry's most frequent action:
    both its halves run it) and the learned policy's (the `learned` entry's most frequent action other than
    NCCL's own, where it ran a third of the calls or more, each half being half of them; else NCCL's own).
    ({key: NCCL's action}, {key: the learned policy's action}); empty where a trace is missing."""
    nccl = traced_choices(os.path.join(out, "pairs-trace", "nccl"))
    learned = {}
    for key, c in traced_counts(os.path.join(out, "pairs-trace", "learned")).items():
        if key not in nccl:
            continue
        other = [(n, a) for a, n in c.items() if a != nccl[key]]
        n, action = max(other) if other else (0, None)
        learned[key] = action if 3 * n >= sum(c.values()) else nccl[key]
    return nccl, learned


def pairs_table(out):
    """Actions against NCCL's own choice inside one set of processes, alternating (collbench --mode
    pairs): per size, the method's noise (nccl||nccl), the best action over NCCL (picked on even
    repetitions, its median on the odd ones when there are two or more), the learned policy over NCCL,
    and the learned policy over the best; verdicts on issue 5's 0.97 targets from the intervals.
    Where the traces say that two entries ran the same configuration (pairs_executed), they are one
    configuration measured twice: an action entry that is NCCL's own choice is not a candidate for the
    best (its ratio is the method's noise), and the learned policy running NCCL's own choice, or the best
    action, is that configuration (ratio 1 by identity). Both verdicts are given: as measured, and so."""
    with open(os.path.join(out, "pairs.csv")) as f:
        rows = list(csv.DictReader(f))
    ratios = within_set_ratios(rows)
    nccl_runs, learned_runs = pairs_executed(out)
    reps = sorted({int(r["repetition"]) for r in rows})
    entries = sorted({k[0] for k in ratios})
    actions = [e for e in entries if "/" in e]
    learned = next((e for e in entries if e not in actions and e != "nccl"), None)
    wrong = sum(1 for r in rows if r["verified"] != "1")
    print("## Inside one set of processes: actions against NCCL's own choice, alternating\n")
    print(f"{len(reps)} repetitions; each entry alternates with NCCL's own choice in its own set of processes "
          f"(a fixed table's A|B lines, call by call, in runs before the blocks; A||B lines, blocks of four calls "
          f"whose first is left out, since: docs/gpu.md), the ratio is A's median call over B's in bus bandwidth, "
          f"per repetition. "
          f"Rows whose results were wrong: {wrong}. Intervals: the median over repetitions, distribution-free "
          f"(order statistics; the smallest and largest where there are fewer than 6). 'learned runs': what "
          f"NCCL ran for the learned policy (its entry's rank-0 trace; - without one); where that is NCCL's own "
          f"choice or the best action, the learned policy is that configuration, measured again in another "
          f"entry, and the verdict takes it as such (ratio 1); 'as measured' takes every entry's ratios as "
          f"they came.\n")
    print("| collective | bytes | nccl vs nccl (noise) | best action | best / NCCL | learned runs | learned / NCCL "
          "(interval) | learned / best | verdict | as measured |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    def med(values):
        return statistics.median(values) if values else None
    def shown(values):
        interval = median_interval(values)
        return f"{med(values):.3f} ({interval[0]:.3f} .. {interval[1]:.3f})" if interval else value(med(values))
    def verdict_of(below_nccl, learned_over_best):
        if below_nccl == "too few pairs":
            return "too few pairs"
        return "below NCCL" if below_nccl == "below" else "below best" if learned_over_best < 0.97 else "meets both"
    keys = sorted({(k[1], k[2]) for k in ratios}, key=lambda k: (k[0], k[1]))
    verdicts, measured_verdicts = collections.Counter(), collections.Counter()
    def best_of(candidates):
        """The best action among `candidates` ({action: {repetition: ratio}}) and its ratio to NCCL's own."""
        best_action, best = None, None
        if candidates:
            if len(reps) > 1:
                even = {a: med([v for rep, v in by_rep.items() if rep % 2 == 0]) for a, by_rep in candidates.items()}
                even = {a: v for a, v in even.items() if v}
                best_action = max(even, key=even.get) if even else None
                if best_action:
                    best = med([v for rep, v in candidates[best_action].items() if rep % 2 == 1])
            else:
                best_action = max(candidates, key=lambda a: med(list(candidates[a].values())))
                best = med(list(candidates[best_action].values()))
        if best is None or best < 1.0:  # NCCL's own choice is a candidate too (ratio 1)
            best_action, best = "NCCL's own", 1.0
        return best_action, best
    for key in keys:
        noise = list(ratios.get(("nccl", *key), {}).values())
        candidates = {a: ratios[(a, *key)] for a in actions if (a, *key) in ratios}
        best_action, best = best_of({a: v for a, v in candidates.items() if a != nccl_runs.get(key)})
        best_measured = best_of(candidates)[1]
        ours = list(ratios.get((learned, *key), {}).values()) if learned else []
        runs = learned_runs.get(key)
        same_as_nccl = runs is not None and runs == nccl_runs.get(key)
        same_as_best = runs is not None and (runs == best_action or (best_action == "NCCL's own" and same_as_nccl))
        runs_shown = "-" if runs is None else f"{runs} (NCCL's)" if same_as_nccl else runs
        verdict = measured = "-"
        over_best = "-"
        if ours:
            against_nccl = against_target(ours)
            measured = verdict_of(against_nccl, med(ours) / best_measured)
            learned_over_nccl = 1.0 if same_as_nccl else med(ours)
            learned_over_best = 1.0 if same_as_best else learned_over_nccl / best
            verdict = verdict_of("noise" if same_as_nccl and against_nccl != "too few pairs" else against_nccl,
                                 learned_over_best)
            verdicts[verdict] += 1
            measured_verdicts[measured] += 1
            over_best = f"{learned_over_best:.3f}" + (" (same action)" if same_as_best else "")
        print(f"| {key[0]} | {key[1]} | {shown(noise) if noise else '-'} | {best_action or '-'} | {best:.3f} | "
              f"{runs_shown} | {shown(ours) if ours else '-'} | {over_best} | {verdict} | {measured} |")
    if verdicts:
        print("\n(verdict: 'below NCCL' when the learned policy's whole interval is under 0.97 of NCCL's own "
              "choice, unless it runs NCCL's own choice; 'below best' when its median (1 where it runs the best "
              "action, or NCCL's own choice) is under 0.97 of the best action's; else 'meets both'.)\n")
        print("- learned policy: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
        print("- learned policy, as measured: " + ", ".join(f"{n} {v}" for v, n in sorted(measured_verdicts.items())))


def collbench_calls(out):
    """collbench's verified per-call times of the pairs entries' actions, from pairs.csv:
    {(entry action, collective, bytes): [time_us, ...]}"""
    calls = collections.defaultdict(list)
    with open(os.path.join(out, "pairs.csv")) as f:
        for r in csv.DictReader(f):
            if r["verified"] == "1" and "/" in r["action"] and not r["action"].startswith(("nccl@", "@")):
                calls[(r["action"], r["collective"], int(r["bytes"]))].append(float(r["time_us"]))
    return calls


def pairs_traces(out):
    """The pairs entries' traces (pairs-trace/<entry>/trace-R.csv) that hold rank 0's: (entry action, {rank:
    {(collective, seq): row}}) per entry; seq counts each collective's calls, so a call is (collective, seq).
    Entries `learned` and `nccl` are named so, not by an action."""
    for folder in sorted(glob.glob(os.path.join(out, "pairs-trace", "*"))):
        by_rank = {}
        for path in glob.glob(os.path.join(folder, "trace-*.csv")):
            rows = read_trace(path)
            if rows:
                by_rank[int(rows[0]["rank"])] = {(r["collective"], int(r["seq"])): r for r in rows}
        if 0 in by_rank:
            yield os.path.basename(folder).replace("-", "/", 2), by_rank


class LeftoverCell:
    """agents/leftover.c's estimates of one cell, the same rule, constants (leftover.h) and slots: per action
    that ran, the running mean and variance of its excess (Welford's to 64 samples, then exponentially
    weighted), its span's mean, and the charge beyond its span. The level is the first slot with the least
    mean (ties go to the lower slot, as in C); a new action takes the first free slot, else the least
    recently sampled but the level's. tests/leftover_sequence.txt holds the charges that both must give."""
    ACTIONS, WINDOW, LEVEL_SAMPLES, CLIP_SPANS, BACK_TO_BACK, WAITS_SPANS = 8, 64, 4, 4, 0.5, 1.0

    class Estimate:
        def __init__(self, action=None):
            self.action, self.count, self.last_used = action, 0, 0
            self.mean = self.variance = self.span_mean = 0.0

    def __init__(self, shrink=False):
        self.slots, self.samples = [self.Estimate() for _ in range(self.ACTIONS)], 0
        self.shrink = shrink  # the rule to commit b64522d: the difference less the margin

    def level(self):
        level = None
        for e in self.slots:
            if e.count >= self.LEVEL_SAMPLES and (level is None or e.mean < level.mean):
                level = e
        return level

    def entry(self, action):
        return next((e for e in self.slots if e.count > 0 and e.action == action), None)

    def find(self, action):
        known = self.entry(action)
        if known is not None:
            return known
        level, room = self.level(), None
        for i, e in enumerate(self.slots):
            if e is not level and (room is None or (self.slots[room].count > 0 and
                                                    (e.count == 0 or e.last_used < self.slots[room].last_used))):
                room = i
        self.slots[room] = self.Estimate(action)
        return self.slots[room]

    def add(self, action, span, excess):
        if not (excess >= 0 and span >= 0 and math.isfinite(excess + span)):
            return
        e = self.find(action)
        self.samples += 1
        e.last_used = self.samples
        e.count = min(e.count + 1, self.WINDOW)
        e.span_mean += (span - e.span_mean) / e.count
        excess = min(excess, self.CLIP_SPANS * e.span_mean)
        weight, deviation = 1.0 / e.count, excess - e.mean
        e.mean += deviation * weight
        e.variance += (deviation * (excess - e.mean) - e.variance) * weight

    def charge(self, action):
        level, own = self.level(), self.entry(action)
        if own is None or own.count < 2 or level is None or own is level:
            return 0.0
        if level.mean > self.WAITS_SPANS * level.span_mean:
            return 0.0  # the calls wait on the application
        variance = lambda e: e.variance * e.count / (e.count - 1)
        difference = own.mean - level.mean
        if level.mean > self.BACK_TO_BACK * level.span_mean and level.span_mean > own.span_mean:
            difference -= level.span_mean - own.span_mean  # not quite back to back: less what it saves
        margin = 2 * math.sqrt(variance(own) / own.count + variance(level) / level.count)
        if difference <= margin:
            return 0.0
        return difference - margin if self.shrink else difference


def by_call_order(rows):
    """A trace's rows with host stamps, by call order (none in traces before run 9)."""
    return {int(r["call_order"]): r for r in rows if r.get("call_order")}


def read_trace(path, opener=open):
    """A plugin trace's rows (DYNAMICCL_TRACE_FILE), less a last line cut short: a process that the run's
    budget stopped leaves its trace ending mid-line."""
    with opener(path, "rt") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    return [r for r in csv.DictReader(io.StringIO(text)) if None not in r.values()]


def in_call_order(rows):
    """A trace's rows with host stamps, as a list in call order."""
    ordered = by_call_order(rows)
    return [ordered[k] for k in sorted(ordered)]


def stream_time_us(r, following):
    """How long r kept the stream: its kernel start to the next call's (us)."""
    return (int(following["gpu_start_ns"]) - int(r["gpu_start_ns"])) / 1e3


def launched_within(r, following):
    """Whether the call after r is the next by call order and was launched before r's kernel end reached the
    profiler (plugin/call_skips.c's dccl_launched_within): back to back, no host pause between them."""
    done = int(r["host_done_ns"] or 0)
    return (int(following["call_order"]) == int(r["call_order"]) + 1 and done > 0 and
            0 < int(following["host_launch_ns"] or 0) <= done)


def waiting(r, following):
    """Whether the call after r (by call order) was launched within it and started after its kernel's end:
    plugin/learner.c's stream_cost_us rule, under which the gap is r's (it had the stream)."""
    end = int(r["gpu_start_ns"]) + int(r["duration_ns"])
    return following is not None and launched_within(r, following) and int(following["gpu_start_ns"]) >= end


def cell_of(row):
    """A call's decision cell as the plugin keys its leftover estimates: collective and log2 size bin
    (core/decision_table.h's dccl_size_bin; the traces' sizes are powers of two, one a bin). The plugin's
    cells also hold the pipelined-ops bucket and the registered-buffer flag, which the traces do not record:
    collbench's calls are single operations on unregistered buffers, one bucket and one flag."""
    return row["collective"], min(max(int(row["bytes"]), 1).bit_length() - 1, 47)


def learned_costs(rows, passes=2, shrink=False, sample_skipped=True):
    """What the learner is given for each call it learns in one rank's trace with host stamps, replayed in
    call order: its span (DYNAMICCL_COST=span), its stream cost (stream: plugin/learner.c's stream_cost_us)
    and its leftover cost (leftover, the default: its span plus its action's charge from the excess samples
    of the calls before it, per cell: cell_of). A call right after another action of its cell is left out, as
    the learner skips it (its excess still counts). A pairs trace holds its last repetition only (24 calls
    of a size at most, of two actions), fewer than the estimates need before they charge (4 samples of the
    level, 2 of the action): the costs are the last pass's, the passes before it warm the estimates
    (shrink: the charge as to commit b64522d; sample_skipped False: excess from the learned calls only).
    {(action, collective, bytes): {"span": [us], "stream": [us], "leftover": [us]}}"""
    by_order = by_call_order(rows)
    cells = collections.defaultdict(lambda: LeftoverCell(shrink))
    for _ in range(passes):
        costs, previous, learned = collections.defaultdict(lambda: collections.defaultdict(list)), None, False
        for order in sorted(by_order):
            r = by_order[order]
            action, span = ran(r), int(r["duration_ns"]) / 1e3
            follows = previous is not None and int(previous["call_order"]) == order - 1
            if follows and waiting(previous, r) and (learned or sample_skipped):
                previous_span = int(previous["duration_ns"]) / 1e3  # the excess as release_held computes it
                cells[cell_of(previous)].add(ran(previous), previous_span, stream_time_us(previous, r) - previous_span)
            learned = not (follows and cell_of(previous) == cell_of(r) and ran(previous) != action)
            if learned:
                following = by_order.get(order + 1)
                stream = stream_time_us(r, following) if waiting(r, following) else span
                key = (action, r["collective"], int(r["bytes"]))
                costs[key]["span"].append(span)
                costs[key]["stream"].append(stream)
                costs[key]["leftover"].append(span + cells[cell_of(r)].charge(action))
            previous = r
    return costs


LEFT_SHARE_LEAST = 0.05  # an action leaves work behind where its mean share reaches this at some size
LEFT_SHARE_CALLS = 4  # calls a size needs for its share to count


def left_shares(out):
    """How much of a call an action leaves behind, call to call, from the pairs entries' rank-0 traces with host
    stamps: per (entry action, collective, bytes), over the action's calls whose next call was waiting, the
    share excess / (span + excess) and the stream time span + excess (us) of those that follow a call of their
    own action and size (the steady calls of a block), and the shares of those that follow another action of
    their size (a block's first call). {(action, collective, bytes): ([share], [stream time], [first share])}"""
    found = collections.defaultdict(lambda: ([], [], []))
    for action, by_rank in pairs_traces(out):
        by_order = by_call_order(by_rank[0].values())
        for order, r in by_order.items():
            previous, following = by_order.get(order - 1), by_order.get(order + 1)
            if ran(r) != action or previous is None or not waiting(r, following):
                continue
            if (previous["collective"], previous["bytes"]) != (r["collective"], r["bytes"]):
                continue
            stream = stream_time_us(r, following)
            if stream <= 0:  # an empty kernel at once followed: no share
                continue
            share = 1 - int(r["duration_ns"]) / 1e3 / stream
            shares, stream_times, first_shares = found[(action, r["collective"], int(r["bytes"]))]
            if ran(previous) == action:
                shares.append(share)
                stream_times.append(stream)
            else:
                first_shares.append(share)
    return found


def leaving_actions(shares, least=LEFT_SHARE_LEAST):
    """left_shares' sizes with LEFT_SHARE_CALLS calls or more, and the actions whose mean share reaches
    `least` at one of them at least (sorted): ({(action, collective, bytes): (...)}, [action])."""
    found = {k: v for k, v in shares.items() if len(v[0]) >= LEFT_SHARE_CALLS}
    return found, sorted({k[0] for k, v in found.items() if statistics.mean(v[0]) >= least})


def left_share_table(out):
    """Per action whose calls leave work behind (a mean share of 0.05 or more at some size): the mean share
    per size and, medians over those sizes, its standard deviation and coefficient of variation (sd / mean)
    from call to call, the stream time's coefficient of variation, and the share of a block's first call:
    what a profile's `leftover` line's `later` fraction and `spread` hold (docs/simulator.md)."""
    found, actions = leaving_actions(left_shares(out))
    if not actions:
        return
    heading("Work left behind, call to call",
            "From the pairs entries' rank-0 traces with host stamps: for an action's calls that follow one of their own "
            "action and size and whose next call was waiting, the share of its stream time beyond its span. Per "
            f"action, over the sizes where that share averages {LEFT_SHARE_LEAST} or more: their mean shares, and medians over "
            "those sizes of the share's standard deviation and coefficient of variation from call to call (a "
            "profile's `leftover` spread is the standard deviation over the profile's fraction), of the stream "
            "time's coefficient of variation (span and excess trade off where it is below the share's), and of "
            "the share left by a block's first call, right after NCCL's own action (its next call waiting; - "
            "where no size has one).")
    print("| action | sizes | mean share per size (bytes: share) | share's sd | share's coefficient of variation "
          "| stream time's coefficient of variation | first call's share |")
    print("|---|---|---|---|---|---|---|")
    for action in actions:
        rows = sorted((k[1], k[2], v) for k, v in found.items() if k[0] == action and statistics.mean(v[0]) >= LEFT_SHARE_LEAST)
        shown = ", ".join(f"{c} {b}: {statistics.mean(v[0]):.2f}" for c, b, v in rows)
        median = lambda values: f"{statistics.median(values):.2f}" if values else "-"
        deviation = median([statistics.pstdev(v[0]) for _, _, v in rows])
        spread = median([statistics.pstdev(v[0]) / statistics.mean(v[0]) for _, _, v in rows])
        stream_spread = median([statistics.pstdev(v[1]) / statistics.mean(v[1]) for _, _, v in rows])
        first = median([statistics.mean(v[2]) for _, _, v in rows if v[2]])
        print(f"| {action} | {len(rows)} | {shown} | {deviation} | {spread} | {stream_spread} | {first} |")


# The leftover cost's variants that cost_rankings shows beside it: (passes, shrink, sample_skipped) as
# learned_costs takes them.
LEFTOVER_VARIANTS = {"leftover, cold (one pass)": (1, False, True), "leftover, charge shrunk (to b64522d)": (2, True, True),
                     "leftover, excess of learned calls only": (2, False, False),
                     "leftover, excess of learned calls only, cold (one pass)": (1, False, False)}
COST_KINDS = ("span", "stream", "leftover") + tuple(LEFTOVER_VARIANTS)


def cost_rankings(out):
    """The learner's costs against collbench's timing, inside one set of processes: per pairs entry (an
    action A against NCCL's own choice B, in blocks) and size, A's cost over B's by geometric means over the
    calls the learner learns (what its arms average: log latencies) from rank 0's trace, under each
    DYNAMICCL_COST, and collbench's A over B (median over repetitions of the per-repetition ratio of median
    calls). {(A, collective, bytes): ({cost: ratio}, collbench ratio)}"""
    with open(os.path.join(out, "pairs.csv")) as f:
        truth = within_set_ratios(list(csv.DictReader(f)))
    found = {}
    for action, by_rank in pairs_traces(out):
        if "/" not in action or not any(r.get("call_order") for r in by_rank[0].values()):
            continue
        costs = learned_costs(by_rank[0].values())
        for variant, arguments in LEFTOVER_VARIANTS.items():
            for key, value in learned_costs(by_rank[0].values(), *arguments).items():
                costs[key][variant] = value["leftover"]
        for (ran_action, coll, size), own in costs.items():
            if ran_action != action or not truth.get((action, coll, size)):
                continue
            others = [(len(c["span"]), a) for (a, c2, s2), c in costs.items() if (c2, s2) == (coll, size) and a != action]
            if not others or len(own["span"]) < 3 or max(others)[0] < 3:
                continue
            other = costs[(max(others)[1], coll, size)]
            ratios = {kind: geomean(own[kind]) / geomean(other[kind]) for kind in COST_KINDS}
            found[(action, coll, size)] = (ratios, 1 / statistics.median(truth[(action, coll, size)].values()))
    return found


def cost_ranking_table(out):
    found = cost_rankings(out)
    if not found:
        return
    heading("The learner's costs against collbench's, inside one set of processes",
            "Per pairs entry (an action A in blocks with NCCL's own choice B, one set of processes) and size: A's cost "
            "over B's as the learner would see them on rank 0's trace (geometric means over the calls it learns; the "
            "leftover estimates replayed as in the section above), against collbench's A over B in time (median "
            "over repetitions). A cost *ranks a size wrongly* where collbench's ratio is outside 0.97-1.03 and the "
            "cost's is on the other side of 1: there the learner, given that cost, takes the slower of the two. "
            "Traces hold the last repetition only. Beside the default `leftover` (its estimates warmed by a first "
            "pass over the trace): the same cold (one pass; the worst case: in most entries A runs first in each size, "
            "before any level, where a learner starts a cell with NCCL's choice), and with "
            "the charge shrunk by twice its standard error (the rule to commit b64522d), and with the excess sampled "
            "only on the calls the learner learns (not on the first after a switch), warm and cold. The mean log error over "
            "tree's AllReduce sizes on 2 channels, where tree leaves work behind its kernel, is the cost's bias there "
            "(below 0: tree looks cheaper than it is).")
    tree = [r for k, r in found.items() if k[0] in ("tree/simple/ch=2", "tree/ll/ch=2")]
    print("| learner's cost | sizes | ranked wrongly | median abs. log error | tree on 2 channels: sizes, mean log error "
          "| wrongly ranked (A, collective, bytes: cost's ratio / collbench's) |")
    print("|---|---|---|---|---|---|")
    for kind in COST_KINDS:
        wrong = [(k, r[0][kind], r[1]) for k, r in sorted(found.items())
                 if (r[1] > 1.03 and r[0][kind] < 1) or (r[1] < 0.97 and r[0][kind] > 1)]
        error = statistics.median([abs(math.log(r[0][kind] / r[1])) for r in found.values()])
        bias = f"{len(tree)}, {statistics.mean([math.log(r[0][kind] / r[1]) for r in tree]):+.3f}" if tree else "-"
        shown = "; ".join(f"{k[0]} {k[1]} {k[2]}: {c:.3f} / {t:.3f}" for k, c, t in wrong) or "-"
        print(f"| {kind} | {len(found)} | {len(wrong)} | {error:.3f} | {bias} | {shown} |")


def stream_times(out):
    """What the profiler's kernel spans miss, from the pairs entries' traces (pairs-trace/<entry>/trace-R.csv)
    and pairs.csv: per action, the rank-0 kernel span (what rank 0's learner is given), the longest span of
    the ranks, and the stream time (this call's GPU start to the next call's on rank 0, within one size's
    back-to-back calls, so the time until the GPU could start the next call) over collbench's median call
    (event to event on rank 0's stream), and the learner's cost under DYNAMICCL_COST=stream and under
    DYNAMICCL_COST=leftover over the calls it learns (learned_costs; None for traces without host stamps).
    {(entry action, collective, bytes): (span0, span_max, stream, call, stream cost, leftover cost)}"""
    calls = collbench_calls(out)
    found = {}
    for action, by_rank in pairs_traces(out):
        samples = collections.defaultdict(lambda: ([], [], []))
        learned = learned_costs(by_rank[0].values())  # empty for traces without host stamps
        for (coll, seq), r in by_rank[0].items():
            if ran(r) != action:
                continue
            key = (action, coll, int(r["bytes"]))
            span0 = int(r["duration_ns"]) / 1e3
            spans = [int(rank[(coll, seq)]["duration_ns"]) / 1e3 for rank in by_rank.values() if (coll, seq) in rank]
            samples[key][0].append(span0)
            samples[key][1].append(max(spans))
            after = by_rank[0].get((coll, seq + 1))
            if after and after["bytes"] == r["bytes"]:
                samples[key][2].append(stream_time_us(r, after))
        for key, (span0, span_max, stream) in samples.items():
            if key in calls and stream:
                found[key] = (statistics.median(span0), statistics.median(span_max), statistics.median(stream),
                              statistics.median(calls[key]),
                              statistics.median(learned[key]["stream"]) if key in learned else None,
                              statistics.median(learned[key]["leftover"]) if key in learned else None)
    return found


def stream_time_table(out):
    """The kernel spans against the calls' stream time, per action (geometric means over sizes) and, for
    AllReduce, per size."""
    found = stream_times(out)
    if not found:
        return
    heading("What the profiler's kernel spans miss: GPU time between a call's kernel and the next",
            "From the pairs entries' traces (the calls they hold) and pairs.csv. Per action: the rank-0 kernel span "
            "(what rank 0's learner is given), the longest span of the ranks, and the stream time (this call's "
            "kernel start to the next call's on rank 0, within one size's back-to-back calls), each over "
            "collbench's median call (event to event on rank 0's stream); geometric means over the sizes.")
    print("The learner's costs (traces with host stamps only; over the calls it learns, each call right after a "
          "switch of action left out): under `DYNAMICCL_COST=stream`, the stream time where "
          "NCCL had launched the next call before this one's kernel ended, else the span; under "
          "`DYNAMICCL_COST=leftover` (the default since 2026-11-24), the span plus what the action's mean excess "
          "(stream time beyond span, where the next call was waiting) exceeds the least of the actions in its cell, "
          "replayed in call order over the entry's calls as agents/leftover.c would (the entry's two halves share "
          "the cells), its estimates warmed by a first pass over the same calls (a trace holds too few calls of a "
          "size to warm them).\n")
    print("| action | sizes | rank-0 span / call | longest rank's span / call | stream time / call "
          "| learner's cost / call: stream | leftover |")
    print("|---|---|---|---|---|---|---|")
    for action in sorted({k[0] for k in found}):
        rows = [v for k, v in found.items() if k[0] == action]
        shown = lambda index: (lambda costs: f"{geomean(costs):.3f}" if costs else "-")(
            [r[index] / r[3] for r in rows if r[index] is not None])
        print(f"| {action} | {len(rows)} | {geomean([r[0] / r[3] for r in rows]):.3f} | "
              f"{geomean([r[1] / r[3] for r in rows]):.3f} | {geomean([r[2] / r[3] for r in rows]):.3f} | "
              f"{shown(4)} | {shown(5)} |")
    sizes = sorted({k[2] for k in found if k[1] == "allreduce"})
    shown = [a for a in ("ring/simple/ch=2", "tree/simple/ch=1", "tree/simple/ch=2", "tree/ll/ch=2")
             if any(k[0] == a for k in found)]
    if sizes and shown:
        print("\nAllReduce, median us: rank-0 span, stream time, the learner's leftover cost, collbench's call\n")
        print("| bytes | " + " | ".join(shown) + " |")
        print("|---|" + "---|" * len(shown))
        for size in sizes:
            cells = [found.get((a, "allreduce", size)) for a in shown]
            print(f"| {size} | " + " | ".join(f"{c[0]:.0f}, {c[2]:.0f}, {c[5]:.0f}, {c[3]:.0f}" if c and c[5] is not None
                                               else f"{c[0]:.0f}, {c[2]:.0f}, -, {c[3]:.0f}" if c else "-" for c in cells) + " |")


def switch_effects(out):
    """What a call leaves to the next kernel, from the pairs entries' rank-0 traces where the two halves run
    in blocks (run 8 on): per entry action A and size, the median span of NCCL's own calls right after one of
    A's against after one of NCCL's, and of A's calls right after one of NCCL's against after one of A's.
    {(entry action, collective, bytes): (nccl after A, nccl after nccl, A after nccl, A after A, A's call)}"""
    calls = collbench_calls(out)
    found = {}
    for action, by_rank in pairs_traces(out):
        rows = by_rank[0]
        spans = collections.defaultdict(lambda: ([], [], [], []))
        for (coll, seq), r in rows.items():
            before = rows.get((coll, seq - 1))
            if before is None or before["bytes"] != r["bytes"]:
                continue
            mine, previous_mine = ran(r) == action, ran(before) == action
            spans[(action, coll, int(r["bytes"]))][2 * mine + previous_mine].append(int(r["duration_ns"]) / 1e3)
        for key, (nccl_after_nccl, nccl_after_action, action_after_nccl, action_after_action) in spans.items():
            if key in calls and all((nccl_after_nccl, nccl_after_action, action_after_nccl, action_after_action)):
                found[key] = tuple(statistics.median(v) for v in (nccl_after_action, nccl_after_nccl, action_after_nccl,
                                                                    action_after_action, calls[key]))
    return found


def next_kernel_longer(out):
    """Per action, from switch_effects at sizes of 64 KiB and more (where the spans are long enough): how much
    longer NCCL's next kernel runs after it than after its own, over its call (median over sizes), and its own
    kernel after NCCL's over after its own (geometric mean). {action: (sizes, longer by, own after NCCL's)}"""
    found = {k: v for k, v in switch_effects(out).items() if k[2] >= 65536}
    by_action = collections.defaultdict(list)
    for key, v in found.items():
        by_action[key[0]].append(v)
    return {action: (len(rows), statistics.median([(r[0] - r[1]) / r[4] for r in rows]),
                     geomean([r[2] / r[3] for r in rows])) for action, rows in by_action.items()}


def switch_table(out):
    """Per action, how much longer NCCL's next kernel runs after it, and how its own kernel runs after NCCL's
    (next_kernel_longer)."""
    found = next_kernel_longer(out)
    if not found:
        return
    heading("What a call leaves to the next kernel: spans after a switch of action",
            "From the pairs entries' rank-0 traces, where NCCL's own action and the entry's alternate in blocks: "
            "the kernel span of a call right after a call of the other half against right after one of its own "
            "half, sizes of 64 KiB and more. 'Next kernel longer by' is how much longer NCCL's kernel runs after "
            "one of the action's than after its own, over the action's call in collbench (work the action left "
            "that the next kernel does, whatever it runs); 'own kernel after NCCL's' is the action's span right "
            "after NCCL's over its span right after its own (below 1: it inherits work from itself). The first is "
            "a median over the sizes (it can be negative), the second a geometric mean; the spans after a switch "
            "are the first call of each block, so few.")
    print("| action | sizes | next kernel longer by / call | own kernel after NCCL's / after its own |")
    print("|---|---|---|---|")
    for action, (sizes, longer, own_after) in sorted(found.items()):
        print(f"| {action} | {sizes} | {longer:+.3f} | {own_after:.3f} |")


LEFTOVER_SPREAD_MAX = 2.0  # sim/profile.h's DCCL_LEFTOVER_SPREAD_MAX


def later_lines(shares, least):
    """leftover_profile_lines' `later` points from left_shares' {(action, collective, bytes): ([share], ...)}."""
    lines = []
    found, actions = leaving_actions(shares, least)
    for action in actions:
        for coll in sorted({k[1] for k in found if k[0] == action}):
            points = []  # (bytes, fraction, spread), as the profile line rounds them
            for size in sorted(k[2] for k in found if k[:2] == (action, coll)):
                values = found[(action, coll, size)][0]
                mean = min(max(statistics.mean(values), 0.0), 0.9)  # a profile's fraction is in [0, 0.9]
                fraction = round(mean, 2)
                spread = round(min(statistics.pstdev(values) / mean, LEFTOVER_SPREAD_MAX), 2) if fraction > 0 else 0.0
                points.append((size, fraction, spread))
            while len(points) > 1 and points[-1][1] == 0 and points[-2][1] == 0:
                points.pop()
            for size, fraction, spread in points:
                shown = f" spread {spread:.2f}" if spread > 0 else ""
                lines.append(f"leftover = {action} later {fraction:.2f}{shown} at {coll} {size}")
    return lines


def leftover_profile_lines(out, least=LEFT_SHARE_LEAST):
    """A replay profile's `leftover` lines (sim/profile.h, docs/simulator.md), measured: per action whose
    steady calls leave a mean share of `least` or more of their stream time to the next kernel at some size
    (left_shares, sizes with LEFT_SHARE_CALLS calls or more), a `later` point per collective and size: the mean share and
    its coefficient of variation from call to call, up to the first size from which the shares round to 0
    (the simulator takes the end point's share beyond it). Per action after which NCCL's next kernel runs
    longer by `least` or more of the action's call (next_kernel_longer),
    one `longer` line for every size. [line]"""
    lines = later_lines(left_shares(out), least)
    for action, (_, longer, _) in sorted(next_kernel_longer(out).items()):
        if longer >= least:
            lines.append(f"leftover = {action} longer {min(longer, 0.9):.2f}")
    return lines


def leftover_profile_table(out):
    lines = leftover_profile_lines(out)
    if not lines:
        return
    heading("A replay profile's leftover lines",
            "What the simulator's NCCL emulator needs to move the work each action leaves behind its kernel into the "
            f"next call's, as measured here (docs/simulator.md): per action whose steady calls leave {LEFT_SHARE_LEAST} or more of "
            "their stream time at some size, a `later` point per collective and size with the mean share and its "
            "coefficient of variation (the sections above), up to the size from which the shares round to 0; per "
            f"action after which NCCL's next kernel runs longer by {LEFT_SHARE_LEAST} or more of its call (median over sizes of "
            "64 KiB and more), a `longer` line. Paste into a profile (scenarios/profiles/).")
    print("```")
    for line in lines:
        print(line)
    print("```")


SLOW_CALL_FACTORS = (2, 3, 10)


def action_spans(rows, skip_calls=0):
    """A process's kernel spans (ns), in call order, by what NCCL ran: (collective, bytes, algorithm, protocol,
    channels), from its trace rows in call order; its first call of each collective, algorithm and protocol
    left out (NCCL's one-time work, which the learner skips: plugin/call_skips.c's first_call), and its first
    `skip_calls` calls."""
    groups, seen = collections.defaultdict(list), set()
    for r in rows:
        kernel = (r["collective"], r["algorithm"], r["protocol"])
        first = kernel not in seen
        seen.add(kernel)
        if first or int(r["call_order"]) < skip_calls:
            continue
        groups[(r["collective"], int(r["bytes"]), r["algorithm"], r["protocol"], r["channels"])].append(
            int(r["duration_ns"]))
    return groups


def slow_calls(out):
    """Rank 0's kernel spans in the pairs entries' traces, each over the median of its group (entry,
    collective, size and what NCCL ran; groups of 5 calls or more; a process's first 3 calls left out, and
    its first call of each collective, algorithm and protocol: action_spans): {bytes: [span / median]}."""
    shares = {}
    for _, by_rank in pairs_traces(out):
        for key, spans in action_spans(in_call_order(by_rank[0].values()), skip_calls=3).items():
            middle = statistics.median(spans) if len(spans) >= 5 else 0
            if middle > 0:
                shares.setdefault(key[1], []).extend(span / middle for span in spans)
    return shares


def slow_call_table(out):
    shares = slow_calls(out)
    if not shares:
        return
    heading("Single slow calls", "From the pairs entries' rank-0 traces: each call's kernel span over the median "
            "of its entry, collective, size and executed action (groups of 5 calls or more, a process's first 3 "
            "calls left out and its first call of each collective, algorithm and protocol: NCCL's one-time work, "
            "1-25 ms, which the learner skips), the share of calls beyond 2, 3 and 10 times that median, per size and over all. "
            "A learner that averages a few readings of an action can write it off on one such call.")
    def row(label, ratios):
        cells = " | ".join(f"{sum(x > f for x in ratios) / len(ratios):.4f}" for f in SLOW_CALL_FACTORS)
        print(f"| {label} | {len(ratios)} | {cells} |")
    factors = " | ".join(f"> {f}x" for f in SLOW_CALL_FACTORS)
    print(f"| bytes | calls | {factors} |")
    print("|---|---|" + "---|" * len(SLOW_CALL_FACTORS))
    for size in sorted(shares):
        row(size, shares[size])
    row("all", [x for size in sorted(shares) for x in shares[size]])


def learn_trace_rows(out):
    """Rank 0's trace of the learning run (learn-trace/trace-0.csv, or .csv.gz), in call order; [] without one."""
    for name, opener in (("trace-0.csv", open), ("trace-0.csv.gz", gzip.open)):
        path = os.path.join(out, "learn-trace", name)
        if os.path.exists(path):
            return in_call_order(read_trace(path, opener))
    return []


def calls_after_calls(rows):
    """Each call of a trace in call order with the call right before it, and what that one was: `same` (the
    same cell: collective, bytes), `larger` or `smaller` (another cell of more or fewer bytes), `other`
    (another cell of as many bytes). Yields (previous, call, relation)."""
    for previous, r in zip(rows, rows[1:]):
        if int(r["call_order"]) != int(previous["call_order"]) + 1:
            continue
        cell, before = (r["collective"], int(r["bytes"])), (previous["collective"], int(previous["bytes"]))
        yield previous, r, ("same" if before == cell else "larger" if before[1] > cell[1] else
                            "smaller" if before[1] < cell[1] else "other")


def after_other_cells(rows):
    """Spans (us) of the calls in a trace, grouped by the call's cell (collective, bytes) and action, and by
    what the call right before it was (calls_after_calls). {(collective, bytes, action): {relation: [us]}}"""
    groups = {}
    for _, r, relation in calls_after_calls(rows):
        key = (r["collective"], int(r["bytes"]), ran(r))
        groups.setdefault(key, {}).setdefault(relation, []).append(int(r["duration_ns"]) / 1e3)
    return groups


def idle_before_us(previous, r):
    """The GPU's idle time before call r's kernel (us): its start less the end of the call before it."""
    return (int(r["gpu_start_ns"]) - int(previous["gpu_start_ns"]) - int(previous["duration_ns"])) / 1e3


def launches_after_other_cells(rows):
    """For the calls right after a larger or smaller call of another cell (calls_after_calls), per relation:
    how many, how many were launched before that call's end reached the profiler (both host stamps set,
    the launch no later than the end seen), and the GPU's idle time before each (us: its kernel's start
    less the previous kernel's end). {relation: (calls, launched within, [idle us])}"""
    found = {}
    for previous, r, relation in calls_after_calls(rows):
        if relation not in ("larger", "smaller"):
            continue
        launch, done = int(r.get("host_launch_ns") or 0), int(previous.get("host_done_ns") or 0)
        idle = idle_before_us(previous, r)
        calls, within, idles = found.get(relation, (0, 0, []))
        found[relation] = (calls + 1, within + (launch != 0 and done != 0 and launch <= done), idles + [idle])
    return found


def calls_after_pauses(rows):
    """Per cell (collective, bytes) and action: the spans (us) of the calls right after a call of the same cell
    and action (calls_after_calls), launched within it (back to back) or after it (a host pause: collbench's
    check of a size's first result, after its warm-up calls), the latter with the GPU's idle time before them.
    {(collective, bytes, action): ([back-to-back us], [(paused us, idle us)])}"""
    found = collections.defaultdict(lambda: ([], []))
    for previous, r, relation in calls_after_calls(rows):
        if relation != "same" or ran(previous) != ran(r):
            continue
        span = int(r["duration_ns"]) / 1e3
        spans = found[(r["collective"], int(r["bytes"]), ran(r))]
        if launched_within(previous, r):
            spans[0].append(span)
        elif int(previous.get("host_done_ns") or 0) and int(r.get("host_launch_ns") or 0):
            spans[1].append((span, idle_before_us(previous, r)))
    return found


def pause_table(rows):
    """The calls launched after a host pause against the same action's back-to-back calls (calls_after_pauses),
    per cell and action with 20 of them or more and 100 back to back; the closing ranges take each cell's action
    with the most."""
    found = {key: spans for key, spans in calls_after_pauses(rows).items() if len(spans[1]) >= 20 and len(spans[0]) >= 100}
    if not found:
        return
    most = {}
    for (collective, size, action), (_, paused) in found.items():
        if len(paused) > most.get((collective, size), (None, 0))[1]:
            most[(collective, size)] = (action, len(paused))
    heading("Calls after a host pause",
            "From the learning run's rank-0 trace: per collective, size and action, the calls launched "
            "after the call before them (the same size and action) had ended (20 or more), as collbench launches a size's first "
            "timed call after waiting for its stream and checking the warm-up's result (the learner leaves such calls "
            "out where a cell's calls come back to back: plugin/call_skips.c's after_pause), against the action's calls "
            "launched back to back (100 or more): medians of the GPU's idle time before them and of the spans, and their "
            "ratio; the closing ranges take each size's action with the most such calls.")
    print("| collective | bytes | action | paused calls | idle before them us | back to back us | after the pause us | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = {}
    for key in sorted(found):
        back, paused = found[key]
        usual, after = statistics.median(back), statistics.median(s for s, _ in paused)
        if most[key[:2]][0] == key[2]:
            ratios[key[:2]] = after / usual
        print(f"| {key[0]} | {key[1]} | {key[2]} | {len(paused)} | {statistics.median(i for _, i in paused):.0f} | "
              f"{usual:.1f} | {after:.1f} | {after / usual:.3f} |")
    small = [r for (_, size), r in ratios.items() if size <= 4096]
    large = [r for (_, size), r in ratios.items() if size >= 262144]
    if small and large:
        print(f"\nRatio at 1-4 KiB {min(small):.2f}-{max(small):.2f}, at 256 KiB and more {min(large):.2f}-{max(large):.2f} "
              f"(median {statistics.median(large):.3f}).")


ROUND_CALLS = 13  # collbench's learning step plays each size in rounds of 13 calls (64 MiB: 6)


def runs_of_one_cell(rows):
    """A trace's rows in call order cut into runs: consecutive call orders of one cell (collective, bytes).
    Yields each run as a list of its rows."""
    run = []
    for r in rows:
        if run and ((r["collective"], r["bytes"]) != (run[0]["collective"], run[0]["bytes"]) or
                    int(r["call_order"]) != int(run[-1]["call_order"]) + 1):
            yield run
            run = []
        run.append(r)
    if run:
        yield run


def rounds_of_one_action(rows):
    """The learning trace's rounds (runs of one cell's calls in call order) of ROUND_CALLS calls that all ran one
    action: {(collective, bytes): [[log span of each position]]}."""
    found = collections.defaultdict(list)
    for run in runs_of_one_cell(rows):
        if len(run) == ROUND_CALLS and len({ran(x) for x in run}) == 1:
            found[(run[0]["collective"], int(run[0]["bytes"]))].append([math.log(int(x["duration_ns"])) for x in run])
    return found


def round_positions(rounds):
    """Per position in a round, the median of each call's log span over its round's median of positions 4 and
    later; and the correlation of consecutive calls' log spans (positions 4 and later, each less its round's
    mean there: about its median, the calls of a round that alternates slow and fast sit on one side or the
    other as its middle call falls, and rounds of either parity cancel out): [median by position],
    correlation (None where it cannot be told)."""
    by_position = [[] for _ in range(ROUND_CALLS)]
    pairs = []
    for spans in rounds:
        middle, mean = statistics.median(spans[4:]), statistics.mean(spans[4:])
        for position, x in enumerate(spans):
            by_position[position].append(x - middle)
        pairs += [(a - mean, b - mean) for a, b in zip(spans[4:], spans[5:])]
    return [statistics.median(v) for v in by_position], correlation(pairs)


def round_position_table(rows):
    rounds = rounds_of_one_action(rows)
    cells = {key: v for key, v in rounds.items() if len(v) >= 20}
    if not cells:
        return
    heading("A round's calls by position",
            f"From the learning run's rank-0 trace: the rounds of {ROUND_CALLS} calls of one size (collbench's "
            "learning step) that ran one action throughout (20 or more a size), each call's span over its round's "
            "median of positions 4 and later, median by position (0: the round's first call, after the last size's "
            "and collbench's check of its results; 3: the first timed call, after the check of the warm-up's: "
            "\"Calls after a host pause\"), and the correlation of consecutive calls' spans from position 4 on "
            "(below 0: slow and fast calls alternate; above 0: the calls of a round share a level).")
    print("| collective | bytes | rounds | " + " | ".join(str(p) for p in range(ROUND_CALLS)) + " | consecutive calls' correlation |")
    print("|---|---|---|" + "---|" * ROUND_CALLS + "---|")
    for key in sorted(cells):
        medians, link = round_positions(cells[key])
        shown = " | ".join(f"{math.exp(m):.2f}" for m in medians)
        print(f"| {key[0]} | {key[1]} | {len(cells[key])} | {shown} | {'-' if link is None else f'{link:+.2f}'} |")


BURST_FACTOR = 2.5  # a call in a burst spans at least this many times its group's median
BURST_MIN_CALLS = 3


def slow_bursts(rows):
    """Bursts of slow calls in a trace in call order: runs of BURST_MIN_CALLS consecutive calls or more, each
    spanning BURST_FACTOR times or more the median span of its group (collective, bytes and what ran, over
    the trace), within a run of one cell's calls (collective, bytes) less its first call, which waits for the
    call before (calls_after_calls). Returns (calls, [[factor]])."""
    groups = {}
    for r in rows:
        groups.setdefault((r["collective"], r["bytes"], ran(r)), []).append(int(r["duration_ns"]))
    medians = {k: statistics.median(v) for k, v in groups.items()}
    bursts = []
    for _, cell_run in itertools.groupby(rows, lambda r: (r["collective"], r["bytes"])):
        factors = [int(r["duration_ns"]) / medians[(r["collective"], r["bytes"], ran(r))] for r in cell_run][1:]
        for slow, run in itertools.groupby(factors, lambda factor: factor >= BURST_FACTOR):
            run = list(run)
            if slow and len(run) >= BURST_MIN_CALLS:
                bursts.append(run)
    return len(rows), bursts


def channels_across_collectives(out):
    """Per size, each pairs entry that asks for an explicit channel count: its ratio to NCCL's own choice in
    each collective (the median over all repetitions of within_set_ratios), side by side. Where NCCL's own
    choice runs the entry's algorithm and protocol, that is the channel count's effect on one pair's kernels,
    which Agent-2 carries from one collective to another at the same size (docs/agents.md, "Exploration")."""
    ratios = pooled_ratios([out])
    collectives = sorted({k[1] for k in ratios})
    rows = sorted({(k[2], k[0]) for k in ratios if "/ch=" in k[0]})
    if not rows:
        return
    nccl_runs, _ = pairs_executed(out)
    print("\n## A channel count in each collective\n")
    print("From pairs.csv: per size and action entry asking for a channel count, its speed over NCCL's own choice "
          "in each collective (the median over all repetitions of A's bus bandwidth over B's in the entry; the table "
          "above takes the best action's on the odd repetitions). NCCL's own choice, from the entries' traces, is "
          "after the ratio where known: where it runs the same algorithm and protocol on other channels, the ratio "
          "is the channel count's effect on that pair.\n")
    print("| bytes | action | " + " | ".join(collectives) + " |")
    print("|---|---|" + "---|" * len(collectives))
    for size, action in rows:
        cells = []
        for coll in collectives:
            values = ratios.get((action, coll, size))
            own = nccl_runs.get((coll, size))
            cells.append("-" if not values else f"{statistics.median(values):.3f}" + (f" ({own})" if own else ""))
        print(f"| {size} | {action} | " + " | ".join(cells) + " |")


def burst_table(rows):
    calls, bursts = slow_bursts(rows)
    heading("Bursts of slow calls", f"From the learning run's rank-0 trace: runs of {BURST_MIN_CALLS} consecutive "
            f"calls or more of one cell, each {BURST_FACTOR}x its group's median span or more (a cell's first call "
            "after another cell's left out): the testbed's disturbances, which slow every action alike for a few "
            "calls. A learner can book them as an action's readings, and Agent-1 raises an onset a few calls into "
            "one (the simulator's `noise.burst_*` lines play them: docs/simulator.md).")
    lengths = sorted(len(b) for b in bursts)
    print(f"- {len(bursts)} bursts in {calls} calls" + (f" (one in {calls / len(bursts):.0f})" if bursts else ""))
    if bursts:
        factors = [x for b in bursts for x in b]
        deciles = statistics.quantiles(factors, n=10) if len(factors) > 1 else factors
        print(f"- lengths: {', '.join(f'{n} calls x{lengths.count(n)}' for n in sorted(set(lengths)))}; "
              f"mean {statistics.mean(lengths):.1f}")
        print(f"- a call's span over its group's median, in bursts: deciles {', '.join(f'{x:.1f}' for x in deciles)}; "
              f"mean {statistics.mean(factors):.1f}")


def after_other_cell_table(rows):
    groups = after_other_cells(rows)
    heading("Calls right after another cell's", "From the learning run's rank-0 trace (`--learn-trace`): per "
            "cell and action with 20 calls or more right after a call of the same cell, their median span, and "
            "the median span of its calls right after a call of another cell with more bytes, or fewer, over "
            "that median (with their counts), by call order alone; then how many of them NCCL launched before the "
            "call before's end reached the profiler, and the GPU's idle time before them. collbench waits for its "
            "stream and checks the results between sizes, and still a call right after a larger one waits in its "
            "kernel (for the rank that left the check later): the learner leaves out a run's first call right after "
            "a larger call of another cell, where the cell's calls come in runs (plugin/call_skips.c's run_start).")
    print("| collective | bytes | action | calls after its own cell | median us | after a larger call | "
          "after a smaller call |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(groups):
        by = groups[key]
        same = by.get("same", [])
        if len(same) < 20:
            continue
        middle = statistics.median(same)
        cells = [f"{statistics.median(by[k]) / middle:.2f} ({len(by[k])})" if by.get(k) else "-"
                 for k in ("larger", "smaller")]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {len(same)} | {middle:.1f} | {cells[0]} | {cells[1]} |")
    launches = launches_after_other_cells(rows)
    if launches:
        print()
        for relation in ("larger", "smaller"):
            if relation in launches:
                calls, within, idles = launches[relation]
                print(f"- right after a {relation} call of another cell: {calls} calls, {within} of them launched before "
                      f"that call's end reached the profiler; the GPU idle before them: median "
                      f"{statistics.median(idles):.0f} us")


RUN_POSITIONS = 4  # positions in a run shown apart; the last holds every later one (4+)
RUN_STEADY_CALLS = 10  # calls at 4+ an action needs for its steady stream time to be compared


def robust_spread(logs):
    """1.4826 x the median absolute deviation: the standard deviation, were the values normal."""
    center = statistics.median(logs)
    return 1.4826 * statistics.median(abs(x - center) for x in logs)


def robust_log_spread(values):
    """robust_spread of the values' logs (positive values; 0 with fewer than 2)."""
    logs = [math.log(v) for v in values if v > 0]
    return robust_spread(logs) if len(logs) >= 2 else 0.0


def runs_of_one_action(rows):
    """The calls of a trace in call order whose next call was launched within them (launched_within), each with
    its position in a run of calls of one cell (collective, bytes) and action: 1 for the first after another
    cell or action, or after a call whose next was launched after its end (a host pause: collbench's checks),
    then 2, 3, ... The excess, the next kernel's start less this one's end, would be below 0 where that start
    came before the end the profiler gave this kernel (no call of runs 14-19's learning traces).
    {(collective, bytes, action): {position (at most RUN_POSITIONS): [(span us, excess us)]}}"""
    found = collections.defaultdict(lambda: collections.defaultdict(list))
    position, previous_key, previous_within = 0, None, False
    for r, following in zip(rows, rows[1:]):
        key = (r["collective"], int(r["bytes"]), ran(r))
        position = position + 1 if key == previous_key and previous_within else 1
        previous_key, previous_within = key, launched_within(r, following)
        if previous_within:
            span = int(r["duration_ns"]) / 1e3
            found[key][min(position, RUN_POSITIONS)].append((span, stream_time_us(r, following) - span))
    return found


def correlation(pairs):
    """Pearson's correlation of (x, y) pairs; None where either does not vary or there are fewer than 3."""
    if len(pairs) < 3:
        return None
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in pairs)
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def run_statistics(by_position):
    """One action's row of long_run_table from its runs_of_one_action entry ({position: [(span, excess)]}): the
    median stream time at each position 1..RUN_POSITIONS (None where none), and over positions 2+ the robust
    spreads of span and of stream time, the span-excess correlation (None: not known), and, over those of
    them whose excess is 0 or more (the calls whose excess the learner samples), the geometric mean of span
    plus their mean excess over that of their stream times (None: none)."""
    medians = [statistics.median(s + e for s, e in by_position[p]) if by_position.get(p) else None
               for p in range(1, RUN_POSITIONS + 1)]
    later = [c for p, calls in by_position.items() if p >= 2 for c in calls]
    waited = [(s, e) for s, e in later if e >= 0]
    mean_excess = statistics.mean(e for _, e in waited) if waited else 0
    both = [(s + mean_excess, s + e) for s, e in waited if s + e > 0]
    reading = math.exp(statistics.mean(math.log(a) - math.log(b) for a, b in both)) if both else None
    return (medians, robust_log_spread([s for s, _ in later]), robust_log_spread([s + e for s, e in later]),
            correlation(later), reading)


def long_run_table(rows):
    runs = runs_of_one_action(rows)
    if not runs:
        return
    heading("The learning run's calls in runs of one action",
            "From the learning run's rank-0 trace (`--learn-trace`), the calls whose next call NCCL launched before "
            "their end reached the profiler (back to back): per cell "
            "and action with 20 such calls or more, the median stream time (kernel start to the next call's) by "
            "position in a run of calls of one cell and action (1: the first after another cell or action, or after "
            "a host pause; the learner leaves some of these out: plugin/call_skips.c), the steady stream time "
            f"(positions {RUN_POSITIONS}+) over the cell's fastest, both among the actions with {RUN_STEADY_CALLS} "
            "calls or more there, and, over "
            "positions 2+, the robust spread (1.4826 x MAD of logs) of the span and of the stream time, and the "
            "correlation of span and excess (the stream time beyond the span) from call to call: where they trade "
            "off (near -1) the span is noisier than the stream time; and, over the calls whose next kernel started "
            "after their end (the calls whose excess the learner samples), the geometric mean of span plus the mean "
            "excess (what DYNAMICCL_COST=leftover gives the agent, which averages log latencies, for an action "
            "charged all it leaves) over that of the stream times: below 1 where the noisier span makes the log "
            "mean lower.")
    print(f"| collective | bytes | action | calls | stream time us by position: 1 / 2 / 3 / {RUN_POSITIONS}+ (calls) "
          "| steady / fastest | span's spread | stream time's spread | span-excess correlation "
          "| span + mean excess / stream time |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    statistics_of = {key: run_statistics(by_position) for key, by_position in runs.items()}
    cells = collections.defaultdict(dict)  # per cell, the steady stream time of each action with enough calls there
    for key, by_position in runs.items():
        if len(by_position.get(RUN_POSITIONS, [])) >= RUN_STEADY_CALLS:
            cells[key[:2]][key[2]] = statistics_of[key][0][-1]
    for key in sorted(runs):
        by_position = runs[key]
        calls = sum(len(v) for v in by_position.values())
        if calls < 20:
            continue
        medians, span_spread, stream_spread, link, reading = statistics_of[key]
        shown = " / ".join(f"{m:.1f} ({len(by_position[p])})" if m is not None else "-"
                           for p, m in enumerate(medians, start=1))
        steady = cells[key[:2]].get(key[2])
        versus = f"{steady / min(cells[key[:2]].values()):.3f}" if steady else "-"
        print(f"| {key[0]} | {key[1]} | {key[2]} | {calls} | {shown} | {versus} | {span_spread:.3f} | {stream_spread:.3f} | "
              f"{'-' if link is None else f'{link:.2f}'} | {'-' if reading is None else f'{reading:.3f}'} |")


# agents/config_agent.c's booked_tail_limit: from an arm's 4th reading, each is booked at most this far
# above the arm's mean (log latency): log 1.3, or 2.5 of the arm's standard deviations where that is more.
TAIL_FLOOR, TAIL_DEVIATIONS, TAIL_MIN_SAMPLES = math.log(1.3), 2.5, 3


def booked_mean(values, clip):
    """The mean log latency of `values` (one action's calls, in call order) booked one by one as the learner
    books an arm's readings (Welford): as they came, or with the slow tail clipped (booked_tail_limit; the
    spread 0.05 before two readings, at least 0.01). No drift or level: the calls as measured."""
    count, mean, m2 = 0, 0.0, 0.0
    for v in values:
        x = math.log(v)
        if clip and count >= TAIL_MIN_SAMPLES:
            sd = max(math.sqrt(m2 / (count - 1)), 0.01)
            x = min(x, mean + max(TAIL_FLOOR, TAIL_DEVIATIONS * sd))
        count += 1
        delta = x - mean
        mean += delta / count
        m2 += delta * (x - mean)
    return mean


def booked_means_table(rows):
    """Per collective and size, each action run 10 times or more (action_spans) against NCCL's most run one:
    by the median call (as the pairs rank them), by the mean as the learner booked readings before its tail
    clip, and with it."""
    cells = collections.defaultdict(dict)
    for (collective, size, algorithm, protocol, channels), spans in action_spans(rows).items():
        if len(spans) >= 10:
            cells[(collective, size)][f"{algorithm}/{protocol}/ch={channels}"] = spans
    heading("The learner's means, with and without its slow-tail clip",
            "From the learning run's rank-0 trace: per collective and size, each action NCCL ran 10 times or "
            "more (NCCL's first call of each collective, algorithm and protocol left out) against the one it ran "
            "most (NCCL's choice, the reference), as the reference's latency over the "
            "action's (> 1: faster), by median call (what the pairs compare), by the mean log latency booked call "
            "by call as the learner books an arm before its slow-tail clip, and with it (booked_tail_limit: from "
            "the 4th reading, at most log 1.3 or 2.5 standard deviations above the mean so far). No drift or level.")
    print("| collective | bytes | action | calls | by median | mean as booked before | with the tail clipped |")
    print("|---|---|---|---|---|---|---|")
    off = {"before": [], "clipped": []}  # |log| of each mean's ratio over the median's
    for key in sorted(cells):
        actions = cells[key]
        if len(actions) < 2:
            continue
        reference = max(actions, key=lambda a: len(actions[a]))
        ref = actions[reference]
        for action in sorted(actions):
            if action == reference:
                continue
            spans = actions[action]
            by_median = statistics.median(ref) / statistics.median(spans)
            plain = math.exp(booked_mean(ref, False) - booked_mean(spans, False))
            clipped = math.exp(booked_mean(ref, True) - booked_mean(spans, True))
            print(f"| {key[0]} | {key[1]} | {action} (against {reference}) | {len(spans)} | {by_median:.3f} | "
                  f"{plain:.3f} | {clipped:.3f} |")
            off["before"].append(abs(math.log(plain / by_median)))
            off["clipped"].append(abs(math.log(clipped / by_median)))
    if off["before"]:
        print(f"\nMean |log(ratio by means / ratio by medians)| over {len(off['before'])} rows: before the clip "
              f"{statistics.mean(off['before']):.4f}, with it {statistics.mean(off['clipped']):.4f}.")


def tail_ratios(rows, window=15):
    """Per (collective, bytes): each call's log span over the median of the same action's calls around it
    (up to `window` on each side, itself left out), for actions run 10 times or more (action_spans)."""
    ratios = collections.defaultdict(list)
    for key, spans in action_spans(rows).items():
        if len(spans) < 10:
            continue
        for i, span in enumerate(spans):
            around = spans[max(0, i - window):i] + spans[i + 1:i + window + 1]
            ratios[key[:2]].append(math.log(span / statistics.median(around)))
    return ratios


def slow_tail_table(rows):
    """The share of a learning run's calls well above their neighbours' median, per collective and size."""
    ratios = tail_ratios(rows)
    heading("The slow tail of the learning run's calls",
            "From the learning run's rank-0 trace: each call against the median of the same action's calls around "
            "it (15 on each side), per collective and size: the core spread (1.4826 x the median absolute log "
            "ratio: a normal's standard deviation), and the shares of calls over 1.2, 1.4 and 2 times that median "
            "and under 1/1.2 of it. A normal spread of 0.1 has 3.4% over 1.2x and as many under 1/1.2, and none "
            "over 1.4x; the learner books a reading at most log 1.3 or 2.5 standard deviations above its arm's "
            "mean (booked_tail_limit).")
    print("| collective | bytes | calls | core spread | > 1.2x | > 1.4x | > 2x | < 1/1.2 |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(ratios):
        values = ratios[key]
        spread = 1.4826 * statistics.median(abs(x) for x in values)
        share = lambda test: sum(1 for x in values if test(x)) / len(values)
        print(f"| {key[0]} | {key[1]} | {len(values)} | {spread:.3f} | {share(lambda x: x > math.log(1.2)):.3f} | "
              f"{share(lambda x: x > math.log(1.4)):.3f} | {share(lambda x: x > math.log(2)):.3f} | "
              f"{share(lambda x: x < -math.log(1.2)):.3f} |")


def learn_trace_tables(out):
    """The sections read from the learning run's rank-0 trace alone, read once; False (and none) without one."""
    rows = learn_trace_rows(out)
    if rows:
        after_other_cell_table(rows)
        long_run_table(rows)
        pause_table(rows)
        round_position_table(rows)
        burst_table(rows)
        booked_means_table(rows)
        slow_tail_table(rows)
    return bool(rows)


# The plugin's trace columns (DYNAMICCL_TRACE_FILE) with host stamps, as the self-test writes them.
STAMPED_TRACE_HEADER = ("rank,seq,collective,bytes,algorithm,protocol,channels,channels_measured,gpu_start_ns,duration_ns,"
                        "call_order,host_launch_ns,host_done_ns\n")


def self_test():
    """Checks the interval and the pairing on known cases; returns the process's exit status."""
    failures, checks = [], [0]
    def check(what, got, expected):
        checks[0] += 1
        if got != expected:
            failures.append(f"{what}: {got} != {expected}")
    # The learner's booking: three calls at 100 us and one at 200; as they came, the log mean is log 100 + log 2
    # / 4; clipped, the fourth is booked at log 1.3 above the mean (the spread's floor, 0.01, x 2.5 is less).
    check("booked mean as it came", round(math.exp(booked_mean([100, 100, 100, 200], False)), 3),
          round(100 * 2 ** 0.25, 3))
    check("booked mean, tail clipped", round(math.exp(booked_mean([100, 100, 100, 200], True)), 3),
          round(100 * 1.3 ** 0.25, 3))
    check("booked mean: the first three as they came", round(math.exp(booked_mean([100, 100, 400], True)), 3),
          round(100 * 4 ** (1 / 3), 3))
    # The slow tail: 12 calls of one action at 100 us but one at 300 (after a first call, left out): each
    # against its neighbours' median, 100; the slow one log 3 above it, the others 0.
    calls = [{"collective": "allreduce", "bytes": "1024", "algorithm": "ring", "protocol": "ll", "channels": "1",
              "call_order": str(order), "duration_ns": str(span)}
             for order, span in enumerate([9000] + [100] * 5 + [300] + [100] * 6)]
    ratios = tail_ratios(calls)
    check("slow tail: the first call left out", len(ratios[("allreduce", 1024)]), 12)
    check("slow tail: one call 3x its neighbours' median", sorted(round(x, 6) for x in ratios[("allreduce", 1024)])[-2:],
          [0.0, round(math.log(3), 6)])
    ten = [float(i) for i in range(10, 0, -1)]
    low, high, cover = median_interval(ten)
    check("10 values: order statistics 2 and 9", (low, high), (2.0, 9.0))
    check("10 values: coverage", round(cover, 4), round(1 - 2 * 11 / 1024, 4))
    low, high, cover = median_interval([float(i) for i in range(20)])
    check("20 values: order statistics 6 and 15", (low, high), (5.0, 14.0))
    check("5 values: smallest and largest", median_interval([3.0, 1.0, 2.0, 5.0, 4.0])[:2], (1.0, 5.0))
    check("1 value: none", median_interval([1.0]), None)
    row = lambda mode, rep, bw, ok="1": {"mode": mode, "repetition": str(rep), "busbw_gbs": str(bw), "verified": ok}
    rows = {("frozen", "-", "allreduce", 1024): [row("frozen", 0, 2.0), row("frozen", 1, 3.0), row("frozen", 2, 9.0, "0")],
            ("none", "-", "allreduce", 1024): [row("none", 0, 4.0), row("none", 1, 2.0), row("none", 2, 1.0)]}
    check("pairs by repetition, verified only",
          paired_ratios(rows, ("frozen", "-"), ("none", "-"), ("allreduce", 1024)), [0.5, 1.5])
    check("pairs of odd repetitions", paired_ratios(rows, ("frozen", "-"), ("none", "-"), ("allreduce", 1024), 1), [1.5])
    # pairs: at 1 KiB the learned policy runs NCCL's choice while ring/simple/ch=1 is 10% faster (below the
    # best); at 4 KiB it is 10% slower than NCCL on every repetition (below NCCL); NCCL against itself is 1.
    import contextlib, io, tempfile
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "pairs.csv"), "w") as f:
            f.write("mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied,repetition\n")
            for rep in range(6):
                for size, ours in ((1024, 1.0), (4096, 0.9)):
                    for entry, a in (("nccl", 1.0), ("ring/simple/ch=1", 1.1), ("learned", ours)):
                        f.write(f"pairs,{entry},allreduce,{size},2,1,1,{2.0 * a:.4f},1,1,{rep}\n")
                        f.write(f"pairs,nccl@{entry},allreduce,{size},2,1,1,2.0,1,1,{rep}\n")
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            pairs_table(folder)
        lines = {line.split("|")[2].strip(): line for line in text.getvalue().splitlines() if line.startswith("| allreduce")}
        check("pairs: 1 KiB below the best", "below best" in lines.get("1024", "") and "ring/simple/ch=1" in lines.get("1024", ""), True)
        check("pairs: 4 KiB below NCCL", "below NCCL" in lines.get("4096", ""), True)
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            channels_across_collectives(folder)
        check("a channel count in each collective", "| 1024 | ring/simple/ch=1 | 1.100 |" in text.getvalue(), True)
    # The same with 4 repetitions: no interval on the median covers 90%, so no verdict.
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "pairs.csv"), "w") as f:
            f.write("mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied,repetition\n")
            for rep in range(4):
                for entry, a in (("nccl", 1.0), ("ring/simple/ch=1", 1.1), ("learned", 0.9)):
                    f.write(f"pairs,{entry},allreduce,4096,2,1,1,{2.0 * a:.4f},1,1,{rep}\n")
                    f.write(f"pairs,nccl@{entry},allreduce,4096,2,1,1,2.0,1,1,{rep}\n")
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            pairs_table(folder)
        check("pairs: 4 repetitions give no verdict", "too few pairs" in text.getvalue(), True)
    # With the entries' traces: NCCL's own choice is ring/ll/ch=1 at 1 KiB and ring/simple/ch=2 at 4 KiB. At 1
    # KiB the learned policy runs NCCL's own choice but measured 0.9 of it on every repetition, and the entry
    # ring/ll/ch=1 (NCCL's own again) measured 1.1: the same configuration three times, so no candidate for the
    # best and the learned policy meets both; as measured it is below NCCL. At 4 KiB it runs ring/simple/ch=1,
    # the best action, measured 1.2 in its own entry and 1.1 in the learned one: the same action (ratio 1).
    with tempfile.TemporaryDirectory() as folder:
        own, learned_runs = {1024: "ring/ll/ch=1", 4096: "ring/simple/ch=2"}, {1024: "ring/ll/ch=1", 4096: "ring/simple/ch=1"}
        with open(os.path.join(folder, "pairs.csv"), "w") as f:
            f.write("mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied,repetition\n")
            for rep in range(6):
                for size, ours, best in ((1024, 0.9, 1.1), (4096, 1.1, 1.2)):
                    for entry, a in (("nccl", 1.0), ("ring/ll/ch=1", best if size == 1024 else 0.95),
                                     ("ring/simple/ch=1", 0.95 if size == 1024 else best), ("learned", ours)):
                        f.write(f"pairs,{entry},allreduce,{size},2,1,1,{2.0 * a:.4f},1,1,{rep}\n")
                        f.write(f"pairs,nccl@{entry},allreduce,{size},2,1,1,2.0,1,1,{rep}\n")
        for entry, runs in (("nccl", own), ("learned", learned_runs)):
            os.makedirs(os.path.join(folder, "pairs-trace", entry))
            with open(os.path.join(folder, "pairs-trace", entry, "trace-0.csv"), "w") as f:
                f.write("rank,seq,collective,bytes,algorithm,protocol,channels\n")
                seq = 0
                for size in (1024, 4096):
                    for call in range(16):  # blocks of four: A, then B (NCCL's own)
                        action = runs[size] if call % 8 < 4 else own[size]
                        algorithm, protocol, channels = action.replace("ch=", "").split("/")
                        f.write(f"0,{seq},allreduce,{size},{algorithm},{protocol},{channels}\n")
                        seq += 1
        check("pairs executed: NCCL's own and the learned policy's", pairs_executed(folder),
              ({("allreduce", s): a for s, a in own.items()}, {("allreduce", s): a for s, a in learned_runs.items()}))
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            pairs_table(folder)
        lines = {line.split("|")[2].strip(): [c.strip() for c in line.split("|")[1:-1]]
                 for line in text.getvalue().splitlines() if line.startswith("| allreduce")}
        check("pairs, identity: 1 KiB's best, verdict and verdict as measured",
              [lines.get("1024", [""] * 10)[i] for i in (3, 8, 9)], ["NCCL's own", "meets both", "below NCCL"])
        check("pairs, identity: 4 KiB's learned / best, verdict and verdict as measured",
              [lines.get("4096", [""] * 10)[i] for i in (7, 8, 9)], ["1.000 (same action)", "meets both", "below best"])
    # Stream times from a trace where AllReduce and AllGather share sequence numbers (each counts its own
    # calls): every AllReduce of 100 us is followed by another 300 us after it started (the next waiting),
    # every AllGather of 50 us by another 50 us after; the learner's cost is 300 and 50.
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "pairs.csv"), "w") as f:
            f.write("mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied,repetition\n")
            for coll in ("allreduce", "allgather"):
                f.write(f"pairs,ring/simple/ch=1,{coll},1024,2,300,1,1,1,1,0\n")
        trace = os.path.join(folder, "pairs-trace", "ring-simple-ch=1")
        os.makedirs(trace)
        with open(os.path.join(trace, "trace-0.csv"), "w") as f:
            f.write(STAMPED_TRACE_HEADER)
            order, start = 0, 0
            for coll, span, step in (("allreduce", 100000, 300000), ("allgather", 50000, 50000)):
                for seq in range(4):
                    f.write(f"0,{seq},{coll},1024,ring,simple,1,1,{start},{span},{order},1,{10 + order}\n")
                    order, start = order + 1, start + step
        found = stream_times(folder)
        check("stream times: AllReduce by its own calls",
              [round(v) for v in found.get(("ring/simple/ch=1", "allreduce", 1024), ())[:3]], [100, 100, 300])
        check("stream times: AllGather by its own calls",
              [round(v) for v in found.get(("ring/simple/ch=1", "allgather", 1024), ())[:3]], [50, 50, 50])
        check("stream times: the learner's cost", round(found.get(("ring/simple/ch=1", "allreduce", 1024), (0,) * 5)[4]), 300)
    # The leftover cost from a trace in blocks of four, ring (span 100 us, the next kernel right after) and
    # tree (span 60, the next kernel `left` later): once warm, ring is the level and tree is charged its
    # excess. With 40 left both cost 100, as their stream times say; with 50 tree costs 110 and collbench
    # says 1.1 of ring (bus bandwidth 1 against 1.1): its span (0.6 of ring's) ranks the size wrongly.
    for left_us in (40, 50):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "pairs.csv"), "w") as f:
                f.write("mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied,repetition\n")
                f.write("pairs,tree/simple/ch=2,allreduce,65536,2,110,1,1,1,1,0\n")
                f.write("pairs,nccl@tree/simple/ch=2,allreduce,65536,2,100,1,1.1,1,1,0\n")
            trace = os.path.join(folder, "pairs-trace", "tree-simple-ch=2")
            os.makedirs(trace)
            with open(os.path.join(trace, "trace-0.csv"), "w") as f:
                f.write(STAMPED_TRACE_HEADER)
                start = 0
                for seq in range(28):  # ends with a block of ring, so that tree's last call has a next
                    tree = seq % 8 >= 4
                    span, left = (60000, left_us * 1000) if tree else (100000, 0)
                    f.write(f"0,{seq},allreduce,65536,{'tree' if tree else 'ring'},simple,2,2,{start},{span},{seq},1,"
                            f"{10 + seq}\n")
                    start += span + left
            if left_us == 40:
                found = stream_times(folder)
                check("leftover cost: tree charged its excess, ring the level",
                      round(found.get(("tree/simple/ch=2", "allreduce", 65536), (0,) * 6)[5]), 100)
            else:
                ratios, truth = cost_rankings(folder).get(("tree/simple/ch=2", "allreduce", 65536), ({}, None))
                check("cost rankings: span, stream and leftover over ring's, and collbench's",
                      [round(ratios.get(k, 0), 3) for k in ("span", "stream", "leftover")] + [round(truth or 0, 3)],
                      [0.6, 1.1, 1.1, 1.1])
                text = io.StringIO()
                with contextlib.redirect_stdout(text):
                    cost_ranking_table(folder)
                wrong = {line.split("|")[1].strip(): line.split("|")[3].strip() for line in text.getvalue().splitlines()
                         if line.startswith("|") and line.split("|")[1].strip() in ("span", "stream", "leftover")}
                check("cost rankings: only the span ranks the size wrongly", wrong, {"span": "1", "stream": "0", "leftover": "0"})
                shares, times, first = left_shares(folder).get(("tree/simple/ch=2", "allreduce", 65536), ([], [], []))
                check("left shares: tree's calls after its own, 50 of 110 us each, and the blocks' first",
                      (len(shares), {round(v, 4) for v in shares}, set(times), len(first)), (9, {round(50 / 110, 4)}, {110.0}, 3))
                text = io.StringIO()
                with contextlib.redirect_stdout(text):
                    left_share_table(folder)
                check("left share table: tree's row (ring leaves nothing: no row)",
                      [line for line in text.getvalue().splitlines() if line.startswith("| ") and "/" in line],
                      ["| tree/simple/ch=2 | 1 | allreduce 65536: 0.45 | 0.00 | 0.00 | 0.00 | 0.45 |"])
                check("profile lines: tree's share at its size, no spread (ring leaves nothing, no next kernel runs longer)",
                      leftover_profile_lines(folder), ["leftover = tree/simple/ch=2 later 0.45 at allreduce 65536"])
    # The learner's costs in call order, one pass (rank 0, AllReduce 64 KiB): ring (span 100 us, the next kernel
    # right after) in orders 0-5, 12 and 13; tree (span 60) in 6-10. Order 6, right after a switch, is not
    # learned, but its excess (40) counts where the skipped calls' excess does; 7 leaves 40; 8's next was
    # launched after 8's end was seen (host_launch > host_done: not waiting, no sample, stream cost its span);
    # 9 leaves 500, counted as 4 spans (240); order 11 is missing, so 10 gives no sample and 12 is not after a
    # switch. Tree's leftover costs: 7 has 1 sample (none charged), 8 and 9 have 40 and 40 (charged 40), 10 has
    # 40, 40 and 240, whose difference from ring's (106.7) is within twice its standard error (133.3): none.
    def trace_row(order, action, start, span, launch, done):
        algorithm, protocol, channels = action.replace("ch=", "").split("/")
        return {"collective": "allreduce", "bytes": "65536", "algorithm": algorithm, "protocol": protocol,
                "channels": channels, "gpu_start_ns": str(start), "duration_ns": str(span), "call_order": str(order),
                "host_launch_ns": str(launch), "host_done_ns": str(done)}
    ring, tree, rows, start = "ring/simple/ch=2", "tree/simple/ch=2", [], 0
    for order, action, span_us, left_us in ((0, ring, 100, 0), (1, ring, 100, 0), (2, ring, 100, 0), (3, ring, 100, 0),
                                            (4, ring, 100, 0), (5, ring, 100, 0), (6, tree, 60, 40), (7, tree, 60, 40),
                                            (8, tree, 60, 40), (9, tree, 60, 500), (10, tree, 60, 0), (12, ring, 100, 0),
                                            (13, ring, 100, 0)):
        launch = 1 + order if order != 9 else 10 ** 12  # 9: launched after 8's kernel end was seen
        rows.append(trace_row(order, action, start, span_us * 1000, launch, 10 ** 9 + order))
        start += (span_us + left_us) * 1000
    costs = learned_costs(rows, passes=1)
    check("learned costs: ring's", [costs[(ring, "allreduce", 65536)][k] for k in ("span", "stream", "leftover")],
          [[100.0] * 8] * 3)
    check("learned costs: tree's span, stream and leftover costs",
          [[round(v, 6) for v in costs[(tree, "allreduce", 65536)][k]] for k in ("span", "stream", "leftover")],
          [[60.0] * 4, [100.0, 60.0, 560.0, 60.0], [60.0, 100.0, 100.0, 60.0]])
    check("learned costs: excess of the learned calls only (7, then 7 and 9)",
          [round(v, 6) for v in learned_costs(rows, passes=1, sample_skipped=False)[(tree, "allreduce", 65536)]["leftover"]],
          [60.0] * 4)
    # Cells by size bin, and a next kernel that started before this one ended: ring on 64 KiB (order 0), tree on
    # 96 KiB (1: the same bin, so right after a switch in its cell, not learned), ring on 128 KiB (2: another
    # bin, learned), whose next kernel (3) starts 20 us before 2's end: not waiting, stream cost its span.
    rows = [trace_row(0, ring, 0, 100000, 1, 10 ** 9), trace_row(1, tree, 100000, 60000, 2, 10 ** 9 + 1),
            trace_row(2, ring, 160000, 100000, 3, 10 ** 9 + 2), trace_row(3, ring, 240000, 100000, 4, 10 ** 9 + 3)]
    rows[1]["bytes"], rows[2]["bytes"], rows[3]["bytes"] = "98304", "131072", "131072"
    costs = learned_costs(rows, passes=1)
    check("learned costs: cells by size bin, an overlapping next kernel",
          (sorted(costs), costs[(ring, "allreduce", 131072)]["stream"]),
          ([(ring, "allreduce", 65536), (ring, "allreduce", 131072)], [100.0, 100.0]))
    # tests/leftover_sequence.txt: the charges that agents/leftover.c gives (tests/test_leftover.c), whole and
    # shrunk, from LeftoverCell.
    cells, charges = None, 0
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "leftover_sequence.txt")) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if fields[0] == "cell":
                cells = (LeftoverCell(), LeftoverCell(shrink=True))
            elif fields[0] == "add":
                for _ in range(int(fields[4]) if len(fields) > 4 else 1):
                    for cell in cells:
                        cell.add(int(fields[1]), float(fields[2]), float(fields[3]))
            else:
                got = [cell.charge(int(fields[1])) for cell in cells]
                near = all(abs(g - float(v)) < 1e-5 for g, v in zip(got, fields[2:4]))
                check(f"leftover sequence: {line.strip()} (got {got[0]:.6f} {got[1]:.6f})", near, True)
                charges += 1
    check("leftover sequence: charges checked", charges >= 15, True)
    # Profile points: an action's shares per size (4 calls or more), up to the first of the sizes whose shares
    # round to 0, its spread the coefficient of variation (capped at 2); an action that never leaves 0.05 has none.
    found = {("ring/ll/ch=1", "allgather", 1024): ([0.2, 0.3, 0.2, 0.3], [], []),
             ("ring/ll/ch=1", "allgather", 4096): ([0.1, 0.1, 0.1], [], []),  # 3 calls: left out
             ("ring/ll/ch=1", "allgather", 16384): ([0.08] + [0.0] * 7, [], []),  # 0.01, sd 2.65 times that
             ("ring/ll/ch=1", "allgather", 65536): ([0.001] * 4, [], []),
             ("ring/ll/ch=1", "allgather", 262144): ([0.0] * 4, [], []),
             ("ring/ll/ch=1", "allgather", 1048576): ([-0.01] * 4, [], []),
             ("ring/ll/ch=1", "allreduce", 1024): ([0.0] * 4, [], []), ("ring/ll/ch=1", "allreduce", 4096): ([0.0] * 4, [], []),
             ("tree/ll/ch=2", "allreduce", 1024): ([0.04] * 4, [], [])}
    check("profile points: sizes, shares, spreads and the zeros' end",
          later_lines(found, LEFT_SHARE_LEAST),
          ["leftover = ring/ll/ch=1 later 0.25 spread 0.20 at allgather 1024",
           "leftover = ring/ll/ch=1 later 0.01 spread 2.00 at allgather 16384",
           "leftover = ring/ll/ch=1 later 0.00 at allgather 65536",
           "leftover = ring/ll/ch=1 later 0.00 at allreduce 1024"])
    def c_define(header, name):
        """A numeric #define of one of the project's C headers (None: not there)."""
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", header)) as f:
            value = re.search(r"#define %s ([0-9.]+)" % name, f.read())
        return value and float(value.group(1))
    check("profile points: the spread's bound is sim/profile.h's", c_define("sim/profile.h", "DCCL_LEFTOVER_SPREAD_MAX"),
          LEFTOVER_SPREAD_MAX)
    for name in ("ACTIONS", "WINDOW", "LEVEL_SAMPLES", "CLIP_SPANS", "BACK_TO_BACK", "WAITS_SPANS"):
        check(f"leftover rule: {name} is agents/leftover.h's", c_define("agents/leftover.h", "DCCL_LEFTOVER_" + name),
              float(getattr(LeftoverCell, name)))
    # Switch effects from a trace in blocks of four: tree/simple/ch=1 spans 80 us after NCCL's ring and 100
    # after itself (it leaves 20 us to the next kernel); ring spans 100 after itself and 120 after tree.
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "pairs.csv"), "w") as f:
            f.write("mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied,repetition\n")
            f.write("pairs,tree/simple/ch=1,allreduce,65536,2,100,1,1,1,1,0\n")
        trace = os.path.join(folder, "pairs-trace", "tree-simple-ch=1")
        os.makedirs(trace)
        with open(os.path.join(trace, "trace-0.csv"), "w") as f:
            f.write("rank,seq,collective,bytes,algorithm,protocol,channels,channels_measured,gpu_start_ns,duration_ns\n")
            for seq in range(16):
                tree = seq % 8 < 4
                span = (80000 if seq % 4 == 0 and seq > 0 else 100000) if tree else (120000 if seq % 4 == 0 else 100000)
                f.write(f"0,{seq},allreduce,65536,{'tree' if tree else 'ring'},simple,{1 if tree else 2},1,"
                        f"{seq * 200000},{span}\n")
        got = switch_effects(folder).get(("tree/simple/ch=1", "allreduce", 65536), ())
        check("switch effects: NCCL after the action and after itself, the action after NCCL and after itself",
              [round(v) for v in got], [120, 100, 80, 100, 100])
        check("profile lines: tree leaves the next kernel longer by 0.2 of its call (no host stamps: no `later` points)",
              leftover_profile_lines(folder), ["leftover = tree/simple/ch=1 longer 0.20"])
    # Single slow calls: a process's first 3 calls (slow here) are left out, a group of fewer than 5 calls
    # too, and the first AllGather call (20 ms: NCCL's one-time work); of ten AllReduce calls at 100 us, one
    # at 250 and one at 1,200 are over 2x, one over 3x and over 10x; the five later AllGather calls are even.
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "pairs-trace", "ring-ll-ch=1")
        os.makedirs(trace)
        with open(os.path.join(trace, "trace-0.csv"), "w") as f:
            f.write(STAMPED_TRACE_HEADER)
            spans = [9000000] * 3 + [100000] * 8 + [250000, 1200000] + [400000] * 4 + [20000000] + [100000] * 5
            for order, span in enumerate(spans):
                size, algorithm = (1024, "ring") if order < 13 else (4096, "tree") if order < 17 else (1024, "ring")
                collective = "allgather" if order >= 17 else "allreduce"
                f.write(f"0,{order},{collective},{size},{algorithm},ll,1,1,{order * 2000000},{span},{order},0,0\n")
        shares = slow_calls(folder)
        check("single slow calls: groups and the first calls left out", sorted((k, len(v)) for k, v in shares.items()),
              [(1024, 15)])
        check("single slow calls: over 2, 3 and 10 times the median",
              [sum(x > f for x in shares[1024]) for f in SLOW_CALL_FACTORS], [2, 1, 1])
    # Calls right after another cell's: a 1 KiB call after a 64 MiB one, and a 4 KiB call after a 1 KiB one.
    with tempfile.TemporaryDirectory() as folder:
        os.makedirs(os.path.join(folder, "learn-trace"))
        with gzip.open(os.path.join(folder, "learn-trace", "trace-0.csv.gz"), "wt") as f:
            f.write(STAMPED_TRACE_HEADER)
            calls = [(67108864, 20000)] + [(1024, 300)] + [(1024, 30)] * 3 + [(4096, 60)] + [(4096, 40)] * 3
            for order, (size, us) in enumerate(calls):  # the 64 MiB call's end seen before the next launch
                launch = order * 1000 + 1
                done = launch + (500 if order == 0 else 5000)
                f.write(f"0,{order},allreduce,{size},ring,ll,1,1,{order * 10**8},{us * 1000},{order},{launch},{done}\n")
        got = after_other_cells(learn_trace_rows(folder))
        check("after other cells: relations", {k[1]: sorted((r, len(v)) for r, v in by.items()) for k, by in got.items()},
              {1024: [("larger", 1), ("same", 3)], 4096: [("same", 3), ("smaller", 1)]})
        check("after other cells: spans", got[("allreduce", 1024, "ring/ll/ch=1")]["larger"], [300.0])
        launches = launches_after_other_cells(learn_trace_rows(folder))
        check("after other cells: launches", {k: v[:2] for k, v in launches.items()}, {"larger": (1, 0), "smaller": (1, 1)})
        check("after other cells: idle before", launches["larger"][2], [(10**8 - 20000 * 1000) / 1e3])
    # Calls after a host pause: 1 KiB ring/LL on 1 channel, 5 calls launched back to back but for the 4th, launched
    # 2 us after the 3rd's end was seen (its kernel starting 30 us after the 3rd's end), then a call of another
    # action (not the same action's: in neither list) and one more of it.
    rows, start = [], 0
    for order, (algorithm, us, paused) in enumerate([("ring", 20, 0), ("ring", 20, 0), ("ring", 22, 0), ("ring", 45, 1),
                                                     ("ring", 21, 0), ("tree", 25, 0), ("tree", 26, 0)]):
        start += 30000 if paused else 1000
        launch = rows[-1]["host_done_ns"] + 2000 if paused else start - 500
        rows.append({"collective": "allreduce", "bytes": "1024", "algorithm": algorithm, "protocol": "ll", "channels": "1",
                     "channels_measured": "1", "gpu_start_ns": start, "duration_ns": us * 1000, "call_order": str(order),
                     "host_launch_ns": launch, "host_done_ns": start + us * 1000 + 1000})
        start += us * 1000
    rows = [{k: str(v) for k, v in r.items()} for r in rows]
    pauses = calls_after_pauses(rows)
    check("after pauses: back to back and paused", pauses[("allreduce", 1024, "ring/ll/ch=1")], ([20.0, 22.0, 21.0], [(45.0, 30.0)]))
    check("after pauses: the other action's second call", pauses[("allreduce", 1024, "tree/ll/ch=1")], ([26.0], []))
    # A round's positions: two rounds of 13 calls of one action, 200 us but the first (400) and the 4th (300), then
    # 100 and 300 us alternating from the 5th; a third round runs another action at its 2nd call (left out).
    spans = [[400, 200, 200, 300] + [100 if k % 2 else 300 for k in range(9)]] * 2 + [[200] * 13]
    rows = []
    for number, round_spans in enumerate(spans):
        for k, us in enumerate(round_spans):
            algorithm = "tree" if number == 2 and k == 1 else "ring"
            rows.append({"collective": "allreduce", "bytes": "1024", "algorithm": algorithm, "protocol": "ll", "channels": "1",
                         "channels_measured": "1", "duration_ns": str(us * 1000), "call_order": str(len(rows))})
        rows.append({"collective": "allgather", "bytes": "1024", "algorithm": "ring", "protocol": "ll", "channels": "1",
                     "channels_measured": "1", "duration_ns": "1000", "call_order": str(len(rows))})
    rounds = rounds_of_one_action(rows)
    check("rounds of one action", {k: len(v) for k, v in rounds.items()}, {("allreduce", 1024): 2})
    medians, link = round_positions(rounds[("allreduce", 1024)])
    check("round positions: over the median of positions 4+ (300 us)", [round(math.exp(m), 4) for m in medians[:5]],
          [1.3333, 0.6667, 0.6667, 1.0, 1.0])
    check("round positions: alternating calls", round(link, 6), -1.0)
    # Two rounds alternating in opposite parity (5 slow and 4 fast calls from position 4, then 4 and 5): each
    # call about its round's median would sit at 0 or on one side, and the two rounds' pairs cancel (0.0);
    # about its mean, -0.976 (the two means are not alike: 5 slow calls in one round, 4 in the other).
    opposite = [[math.log(v) for v in [300] * 4 + [100 if k % 2 else 300 for k in range(9)]],
                [math.log(v) for v in [300] * 4 + [300 if k % 2 else 100 for k in range(9)]]]
    check("round positions: alternation in either parity", round(round_positions(opposite)[1], 3), -0.976)
    # Runs of one action: at 16 KiB ring/LL, then tree/LL on 2 channels in a run of 3 whose last call's next was
    # launched after its end (a host pause: not timed, and the next run starts again at 1), then tree in a run of
    # 5 (positions 4 and 5 pooled as 4+), the next kernel after its fourth call starting 2 us before that call's
    # end, then ring/LL again; then at 4 KiB (another cell: position 1) tree in a run of 2 whose next call is
    # missing from the trace (call order 12 skipped: not timed), a call without host stamps (not timed either),
    # and one more, at position 1 again; the last call has no next call.
    calls = [(16384, "ring", 1, 50, 10)] + [(16384, "tree", 2, 20, 40), (16384, "tree", 2, 30, 30), (16384, "tree", 2, 25, 35)] + \
            [(16384, "tree", 2, 20, 40), (16384, "tree", 2, 30, 30), (16384, "tree", 2, 25, 35), (16384, "tree", 2, 28, -2),
             (16384, "tree", 2, 22, 38), (16384, "ring", 1, 50, 10)] + \
            [(4096, "tree", 2, 20, 40), (4096, "tree", 2, 30, 30), (4096, "tree", 2, 25, 35), (4096, "tree", 2, 28, 32),
             (16384, "ring", 1, 50, 10)]
    rows, start = [], 0
    for index, (size, algorithm, channels, span, excess) in enumerate(calls):
        order = index + (1 if index >= 12 else 0)
        launch = order * 1000 + 1
        done = 0 if index == 12 else launch + (500 if index == 3 else 5000)
        rows.append({"collective": "allreduce", "bytes": str(size), "algorithm": algorithm, "protocol": "ll",
                     "channels": str(channels), "gpu_start_ns": str(start * 1000), "duration_ns": str(span * 1000),
                     "call_order": str(order), "host_launch_ns": str(launch), "host_done_ns": str(done)})
        start += span + excess
    runs = runs_of_one_action(rows)
    check("runs of one action: positions", {k: dict(by) for k, by in runs.items()},
          {("allreduce", 16384, "ring/ll/ch=1"): {1: [(50.0, 10.0), (50.0, 10.0)]},
           ("allreduce", 16384, "tree/ll/ch=2"): {1: [(20.0, 40.0), (20.0, 40.0)], 2: [(30.0, 30.0), (30.0, 30.0)],
                                                 3: [(25.0, 35.0)], 4: [(28.0, -2.0), (22.0, 38.0)]},
           ("allreduce", 4096, "tree/ll/ch=2"): {1: [(20.0, 40.0), (28.0, 32.0)]}})
    # One row's statistics: the stream time 60 us at positions 1, 2 and 4; spans 30, 10, 28 at 2+ (their robust
    # spread 1.4826 x |log 30 - log 28|), span and excess summing to 60 (correlation -1, stream times alike);
    # the mean excess 112/3 us put on each span, over the stream times: (67.33 x 47.33 x 65.33)^(1/3) / 60. A call
    # whose excess is below 0 is left out of the last (its span alone is its stream time): 20 + 40 over 60.
    medians, span_spread, stream_spread, link, reading = run_statistics(
        {1: [(20.0, 40.0)], 2: [(30.0, 30.0), (10.0, 50.0)], 4: [(28.0, 32.0)]})
    check("run statistics", (medians, round(span_spread, 6), stream_spread, round(link, 12), round(reading, 6)),
          ([60.0, 60.0, None, 60.0], round(1.4826 * math.log(30 / 28), 6), 0.0, -1.0,
           round(((30 + 112 / 3) * (10 + 112 / 3) * (28 + 112 / 3)) ** (1 / 3) / 60, 6)))
    check("run statistics: an excess below 0 leaves the mean excess", round(run_statistics({2: [(30.0, -2.0), (20.0, 40.0)]})[4], 12),
          1.0)
    check("correlation: a line", round(correlation([(1, 2), (2, 4), (3, 6)]), 12), 1.0)
    check("correlation: no variation", correlation([(1, 2), (1, 4), (1, 6)]), None)
    check("robust spread of logs", round(robust_log_spread([1.0, math.e, math.e ** 2]), 12), 1.4826)
    # Bursts of slow calls: of an AllReduce 1 KiB run at 100 us (median), four calls at 300-900 us are a
    # burst; two at 400 us are not (under 3 calls); the first call of the next cell (4 KiB at 50 us) is slow
    # after another cell's and ends the run: three slow 4 KiB calls after it make one burst of 3.
    rows = []
    spans = [100] * 10 + [300, 900, 500, 400] + [100] * 5 + [400, 400] + [100] * 10
    spans_4k = [500, 150, 200, 125] + [50] * 12
    for size, group in ((1024, spans), (4096, spans_4k)):
        for us in group:
            rows.append({"collective": "allreduce", "bytes": str(size), "algorithm": "ring", "protocol": "ll",
                         "channels": "1", "duration_ns": str(us * 1000)})
    calls, bursts = slow_bursts(rows)
    check("bursts of slow calls", (calls, bursts), (len(rows), [[3.0, 9.0, 5.0, 4.0], [3.0, 4.0, 2.5]]))
    # A trace whose process was stopped mid-line: the cut line is left out, the others kept.
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace-0.csv")
        with open(path, "w") as f:
            f.write(STAMPED_TRACE_HEADER + "0,0,allreduce,1024,ring,ll,1,1,5,6,0,7,8\n0,1,reducescatter,1677721")
        check("a trace cut mid-line", [r["seq"] for r in read_trace(path)], ["0"])
        with open(path, "a") as f:
            f.write("6,ring,simple,2\n")
        check("a trace's short line", [r["seq"] for r in read_trace(path)], ["0"])
    for failure in failures:
        print("summarize.py self-test:", failure, file=sys.stderr)
    print(f"summarize.py self-test: {checks[0] - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) > 2 and sys.argv[1] == "--write-executed":
        return write_executed(sys.argv[2])
    if len(sys.argv) > 3 and sys.argv[1] == "--write-learned-table":
        return write_learned_table(sys.argv[2], sys.argv[3])
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    path = lambda name: os.path.join(out, name)
    if os.path.exists(path("pairs.csv")):
        pairs_table(out)
        stream_time_table(out)
        left_share_table(out)
        cost_ranking_table(out)
        switch_table(out)
        leftover_profile_table(out)
        slow_call_table(out)
        learn_trace_tables(out)
        channels_across_collectives(out)
        if not os.path.exists(path("compare.csv")):
            return 0
    if os.path.exists(path("compare.csv")):
        best_of = compare_table(out)
        learning_curve(out, best_of)
        congestion_table(out)
        profiler_check(out)
        return 0
    # Only a learning trace (a simulator's run: `dccl run ... --trace OUT/learn-trace/trace-%r.csv`): its sections.
    if not any(os.path.exists(path(name)) for name in ("none.csv", "sweep.csv", "learn.csv")) and learn_trace_tables(out):
        return 0
    none, default, sweep = load(path("none.csv")), load(path("default.csv")), load(path("sweep.csv"))
    learn, frozen = load(path("learn.csv"), "learn"), load(path("frozen.csv"), "frozen")
    rounds = load(path("learn.csv"), "learn-round")
    unverified = sum(1 for table in (none, default, sweep, learn, frozen, rounds)
                     for rows in table.values() for r in rows if r["verified"] != "1")
    not_applied = sum(1 for rows in sweep.values() for r in rows if r["applied"] != "1")
    choices = traced_choices(path("default-trace"))

    print("## DynamICCL on real NCCL: bus bandwidth (GB/s) per collective and size\n")
    print(f"Rows whose results were wrong (verified=0), all runs: {unverified}. "
          f"Sweep rows whose action NCCL did not run as asked (applied=0, left out of the best): {not_applied}.\n")
    print("| collective | bytes | NCCL alone | NCCL's choice | plugin default / NCCL | real best (action) | NCCL / best "
          "| learned online | / best | / NCCL | frozen policy | / best | / NCCL |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    best_of = {}
    worst = {"online/best": 10.0, "online/NCCL": 10.0, "frozen/best": 10.0, "frozen/NCCL": 10.0}
    for key in sorted(set(none) | set(sweep), key=lambda k: (k[0], k[1])):
        alone = median_busbw(none.get(key, []))
        plugin = median_busbw(default.get(key, []))
        candidates = [(float(r["busbw_gbs"]), r["action"]) for r in sweep.get(key, [])
                      if r["verified"] == "1" and r["applied"] == "1"]
        best, action = max(candidates) if candidates else (None, "-")
        if alone is not None and (best is None or alone > best):
            best, action = alone, "NCCL's choice"
        best_of[key] = best
        online, fixed = median_busbw(learn.get(key, [])), median_busbw(frozen.get(key, []))
        for name, got, ref in (("online/best", online, best), ("online/NCCL", online, alone),
                               ("frozen/best", fixed, best), ("frozen/NCCL", fixed, alone)):
            if got and ref:
                worst[name] = min(worst[name], got / ref)
        print(f"| {key[0]} | {key[1]} | {value(alone)} | {choices.get(key, '-')} | {ratio(plugin, alone)} | "
              f"{value(best)} ({action}) | {ratio(alone, best)} | {value(online)} | {ratio(online, best)} | "
              f"{ratio(online, alone)} | {value(fixed)} | {ratio(fixed, best)} | {ratio(fixed, alone)} |")
    overhead = [median_busbw(default[k]) / median_busbw(none[k]) for k in default
                if k in none and median_busbw(default[k]) and median_busbw(none[k])]
    if overhead:
        print(f"\nPlugin with the default policy / NCCL alone, bus bandwidth: median {statistics.median(overhead):.3f} "
              f"over {len(overhead)} sizes (min {min(overhead):.3f}, max {max(overhead):.3f}).")
    nccl_vs_best = [median_busbw(none[k]) / best_of[k] for k in none if best_of.get(k) and median_busbw(none[k])]
    if nccl_vs_best:
        print(f"NCCL's own choice / real best: geometric mean {geomean(nccl_vs_best):.3f}, lowest {min(nccl_vs_best):.3f}.")
    for name, low in worst.items():
        if low < 10:
            print(f"Lowest {name}: {low:.3f} (target >= 0.97)")

    learning_curve(out, best_of)
    congestion_table(out)
    profiler_check(out)
    learn_trace_tables(out)
    return 0


def learning_curve(out, best_of):
    rounds = load(os.path.join(out, "learn.csv"), "learn-round")
    if rounds:
        print("\n## Learning curve: the online run's passes against the real best\n")
        print("| passes | ended (s after the first) | geometric mean busbw / best | lowest | sizes below 0.97 of best |")
        print("|---|---|---|---|---|")
        by_pass = collections.defaultdict(dict)
        for key, rows in rounds.items():
            for r in rows:
                by_pass[pass_of(r)][key] = float(r["busbw_gbs"])
        passes = sorted(by_pass)
        for group in groups(passes):
            ratios = [v / best_of[key] for p in group for key, v in by_pass[p].items() if v > 0 and best_of.get(key)]
            if ratios:
                label = f"{group[0][0]}" if len(group) == 1 else f"{group[0][0]}-{group[-1][0]}"
                print(f"| {label} | {group[-1][1] - passes[0][1]:.1f} | {geomean(ratios):.3f} | {min(ratios):.3f} | "
                      f"{sum(1 for x in ratios if x < 0.97)} of {len(ratios)} |")



def congestion_table(out):
    path = lambda name: os.path.join(out, name)
    congestion = load(path("congestion.csv"), "learn-round")
    if congestion:
        window = []
        if os.path.exists(path("congestion-load.txt")):
            with open(path("congestion-load.txt")) as f:
                window = [float(line) for line in f if line.strip()]
        print("\n## Congestion run: AllReduce median time per group of passes (us); `load` = the loopback "
              "traffic generator ran during those passes\n")
        sizes = sorted({k[1] for k in congestion})
        print("| passes | ended (s) | load | " + " | ".join(str(s) for s in sizes) + " |")
        print("|---" * (len(sizes) + 3) + "|")
        by_pass = collections.defaultdict(dict)
        for key, rows in congestion.items():
            for r in rows:
                by_pass[pass_of(r)][key[1]] = float(r["time_us"])
        passes = sorted(by_pass)
        for group in groups(passes, 24):
            loaded = len(window) == 2 and any(window[0] <= p[1] <= window[1] + 0.5 for p in group)
            cells = []
            for size in sizes:
                got = [by_pass[p][size] for p in group if size in by_pass[p]]
                cells.append(f"{statistics.median(got):.0f}" if got else "-")
            label = f"{group[0][0]}" if len(group) == 1 else f"{group[0][0]}-{group[-1][0]}"
            print(f"| {label} | {group[-1][1] - passes[0][1]:.1f} | {'load' if loaded else ''} | " + " | ".join(cells) + " |")



def profiler_check(out):
    """The plugin's measured GPU durations against CUDA events around the same calls."""
    path = lambda name: os.path.join(out, name)
    events = load(path("event-check.csv"))
    traces = glob.glob(os.path.join(out, "event-trace", "trace-*.csv"))
    if events and traces:
        measured = {}
        for trace in traces:
            for r in read_trace(trace):
                measured.setdefault((r["collective"].lower(), int(r["bytes"])), []).append(int(r["duration_ns"]) / 1000.0)
        print("\n## Profiler check: the plugin's GPU durations against CUDA events (median us)\n")
        print("| collective | bytes | CUDA events | profiler | ratio |")
        print("|---|---|---|---|---|")
        for key in sorted(events):
            cuda_us = statistics.median(float(r["time_us"]) for r in events[key])
            if key not in measured:
                print(f"| {key[0]} | {key[1]} | {cuda_us:.1f} | (not traced) | - |")
                continue
            prof_us = statistics.median(measured[key])
            print(f"| {key[0]} | {key[1]} | {cuda_us:.1f} | {prof_us:.1f} | {prof_us / cuda_us:.3f} |")


if __name__ == "__main__":
    raise SystemExit(main())
