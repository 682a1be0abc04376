"""bench/gpu/graph_traces.py: checks what bench/gpu/graph_configs.sh's fixed run left, on CUDA graphs in real
NCCL. From the two ranks' traces (DYNAMICCL_TRACE_FILE): the calls both traced, and how many ran another
action on each rank (a disagreement hangs NCCL); per rank and size, whether NCCL's seqNumbers less the
graph's replays run without gaps (the profiler half subtracts the replays it saw: docs/architecture.md,
"CUDA graphs"). From rank 0's NCCL log (NCCL_DEBUG_SUBSYS=TUNING, one line per call it decided, captured
calls included): per size, where the call-by-call alternation of the fixed table's `A|B` line repeats an
action. A call captured into the graph gets the cell's exploited action and is not counted, so the
alternation repeats once per size, at the capture; a captured call counted as eager would shift it.

Usage: python3 bench/gpu/graph_traces.py TRACE_RANK0 TRACE_RANK1 [RANK0_NCCL_LOG]
"""
import collections
import csv
import re
import sys


def read_trace(path):
    calls = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if not row.get("seq") or not row.get("channels"):
                continue  # a line cut short where the process was killed
            calls[(row["collective"], int(row["bytes"]), int(row["seq"]))] = (
                row["algorithm"], row["protocol"], row["channels"])
    return calls


def seq_gaps(calls):
    """Per collective: seqNumbers traced, and those missing between its first and its last (NCCL numbers
    a collective's calls of every size in one sequence)."""
    seqs = collections.defaultdict(set)
    for (coll, _, seq) in calls:
        seqs[coll].add(seq)
    out = {}
    for coll, s in seqs.items():
        out[coll] = (len(s), sum(1 for q in range(min(s), max(s) + 1) if q not in s))
    return out


def alternation_repeats(log_path):
    """Per size: (calls decided, positions where a call ran the same action as that size's call before)."""
    pattern = re.compile(r"\[0\] NCCL INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
    runs = collections.defaultdict(list)
    with open(log_path, errors="replace") as f:
        for line in f:
            m = pattern.search(line)
            if m:
                runs[(m.group(1), int(m.group(2)))].append((m.group(3), m.group(4), int(m.group(6)) - int(m.group(5)) + 1))
    return {k: (len(v), [i for i in range(1, len(v)) if v[i] == v[i - 1]]) for k, v in sorted(runs.items())}


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    traces = [read_trace(sys.argv[1]), read_trace(sys.argv[2])]
    common = set(traces[0]) & set(traces[1])
    disagree = sorted(k for k in common if traces[0][k] != traces[1][k])
    print(f"calls traced: rank 0 {len(traces[0])}, rank 1 {len(traces[1])}, both {len(common)}; "
          f"run with another action on each rank: {len(disagree)} {disagree[:5]}")
    for rank, calls in enumerate(traces):
        for coll, (n, missing) in sorted(seq_gaps(calls).items()):
            print(f"rank {rank} {coll}: {n} seqNumbers traced, {missing} missing between the first and the last")
    if len(sys.argv) > 3:
        for (coll, size), (n, repeats) in alternation_repeats(sys.argv[3]).items():
            print(f"rank 0 log, {coll} {size} bytes: {n} calls decided, the alternation repeats at call {repeats}")
    return 1 if disagree else 0


if __name__ == "__main__":
    raise SystemExit(main())
