#!/usr/bin/env bash
# bench/bench_learner_pace.sh: whether the plugin's background learner keeps up with a job issuing
# collectives back to back. The plugin library (its own thread, as in a real job) under the NCCL
# emulator on pcie-8gpu, a workload of 16,800 calls of 1-64 MiB, paced at one call every PACE us of
# wall time; each pace repeated (thread timing varies from run to run) and summarised by medians:
# measurements of calls the learner lost (it fell over 1,024 calls behind), tables published, learner
# CPU per measurement, DQN training steps put off while behind, and the steady state (last 25%) against
# the oracle and against NCCL, with the worst stream against NCCL.
# Usage: bench/bench_learner_pace.sh [build-folder] [repeats] [paces...]
#        (defaults: build, 5, 20 40 100; about 1 minute on 2 cores)
set -euo pipefail
build=${1:-build}
repeats=${2:-5}
paces=${*:3}
paces=${paces:-20 40 100}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'sweep allreduce 1M 64M x20 gap=20us\nsweep allgather 1M 64M x20 gap=20us\nrepeat 60\n' > "$work/workload"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== learner pace: pcie-8gpu, 16,800 calls, plugin library $build/libnccl-tuner-dynamiccl.so, $repeats runs per pace (medians) =="
printf '%8s | %8s %8s %12s %10s | %9s %9s %9s\n' "pace us" "lost" "tables" "CPU us/meas" "put off" "x oracle" "x NCCL" "worst"
for pace in $paces; do
  for r in $(seq 1 "$repeats"); do
    DYNAMICCL_COORD=solo DYNAMICCL_SAVE_SECONDS=0 "$build/dccl" run --profile pcie-8gpu --workload "$work/workload" \
      --policy learn --plugin "$build/libnccl-tuner-dynamiccl.so" --ranks 1 --pace-us "$pace" --steady 0.25 --verbose \
      > "$work/run-$pace-$r.txt" 2>&1 || true
  done
  cat "$work"/run-"$pace"-*.txt > "$work/all.txt"
  lost=$(grep -o '[0-9]* of them of calls it lost' "$work/all.txt" | awk '{ print $1 }' | median)
  tables=$(grep -o '[0-9]* tables published' "$work/all.txt" | awk '{ print $1 }' | median)
  cpu=$(grep -o '[0-9.]* us of background CPU' "$work/all.txt" | awk '{ print $1 / 1000 }' | median)
  put_off=$({ grep -o '[0-9]* DQN training steps put off' "$work/all.txt" || true; } | awk '{ print $1 }' | median)
  oracle=$(grep -o 'steady state ([^)]*): [0-9.]* x oracle' "$work/all.txt" | awk '{ print $(NF - 2) }' | median)
  nccl=$(grep -o 'x oracle, [0-9.]* x NCCL' "$work/all.txt" | awk '{ print $3 }' | median)
  worst=$(grep -o 'worst [0-9.]* x NCCL' "$work/all.txt" | awk '{ print $2 }' | median)
  printf '%8s | %8s %8s %12s %10s | %9s %9s %9s\n' "$pace" "$lost" "$tables" "$cpu" "${put_off:--}" "$oracle" "$nccl" "$worst"
done
