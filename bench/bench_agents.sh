#!/usr/bin/env bash
# bench/bench_agents.sh: the agents' evaluation on the simulated cluster (issue 3's acceptance
# figures), through the NCCL emulator with the plugin linked in and run synchronously (reproducible):
#  1. static: every hardware profile, AllReduce/AllGather/ReduceScatter 1 KiB - 1 GiB (sweep-long),
#     steady state (last 25% of the calls) against the oracle and NCCL's default, per stream;
#  2. dynamic: a mixed training-like stream on RoCE under changing conditions, learning online against
#     the same agent that learns once and then holds (after 10% and after 25% of the calls);
#  3. warm start: calls until each stream is within 5% of the oracle, cold vs from a saved policy;
#  4. learner cost: background CPU per 1,000 collectives and memory per communicator.
# Usage: bench/bench_agents.sh [build-folder]   (about 3 minutes on one core)
set -euo pipefail
build=${1:-build}
dccl="$build/dccl"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== 1. static scenarios: steady state (last 25% of 126,000 calls), learn mode =="
printf '%-22s %10s %10s %9s %9s %16s %12s %12s\n' profile "x oracle" "x NCCL" streams ">2% NCCL" "worst x NCCL" "conv median" "CPU us/1k"
for profile in pcie-8gpu nvlink-h100x8 h100-2x8-ib h100-4x8-ib roce-16x1 sockets-1gpu-4ranks; do
  out=$("$dccl" run --profile "$profile" --workload sweep-long --policy learn --ranks 1 --steady 0.25 --verbose 2>&1)
  read -r _ oracle nccl slower worst _ streams cpu < <(awk -f "$(dirname "$0")/run_summary.awk" <<<"$out")
  printf '%-22s %10s %10s %9s %9s %16s %12s %12s\n' "$profile" "$oracle" "$nccl" "$streams" "$slower" "$worst" \
    "$(grep convergence <<<"$out" | sed -n 's/.*median \([0-9]*\).*/\1/p')" "$cpu"
done

echo
echo "== 2. dynamic scenarios (roce-16x1, mixed-long, 220,000 calls): total latency / oracle's =="
printf '%-22s %10s %12s %12s %14s\n' conditions learn "hold@10%" "hold@25%" "learn closer"
for conditions in congestion-episodes congestion-step congestion-ramp interference-heavy; do
  ratio() { "$dccl" run --profile roce-16x1 --workload mixed-long --conditions "$conditions" --ranks 1 "$@" 2>&1 |
              awk '$1 == "all" {print $NF}'; }
  learn=$(ratio --policy learn)
  hold10=$(ratio --policy hold --learn-for 22000)
  hold25=$(ratio --policy hold --learn-for 55000)
  closer=$(awk -v l="$learn" -v a="$hold10" -v b="$hold25" 'BEGIN {
    worse = (a < b) ? a : b; if (worse <= 1) { print "n/a"; exit }
    printf "%+.0f%%", 100 * (1 - (l - 1) / (worse - 1)) }')
  printf '%-22s %10s %12s %12s %14s\n' "$conditions" "$learn" "$hold10" "$hold25" "$closer"
done
echo "  'learn closer' = how much closer to 1 learning's ratio is than the better of the two holds."

echo
echo "== 3. warm start (pcie-8gpu, sweep-long): a stream's calls until within 5% of the oracle =="
"$dccl" train --scenario pcie-8gpu,sweep-long --seed 1 --out "$work/policy.bin" --quiet
for seed in 2 3 4; do
  cold=$("$dccl" run --profile pcie-8gpu --workload sweep-long --policy learn --ranks 1 --steady 0.25 --seed $seed |
           sed -n 's/.*median \([0-9]*\), max.*/\1/p')
  cp "$work/policy.bin" "$work/warm.bin"
  warm=$("$dccl" run --profile pcie-8gpu --workload sweep-long --policy learn --ranks 1 --steady 0.25 --seed $seed \
           --policy-file "$work/warm.bin" | sed -n 's/.*median \([0-9]*\), max.*/\1/p')
  echo "  seed $seed: cold median $cold calls, warm median $warm calls"
done

echo
echo "== 4. learner memory per communicator =="
"$dccl" run --profile h100-4x8-ib --workload sweep --policy learn --ranks 1 --verbose 2>&1 | grep -o 'learning: .*' | head -1
