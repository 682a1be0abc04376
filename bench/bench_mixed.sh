#!/usr/bin/env bash
# bench/bench_mixed.sh: the learner under the NCCL emulator's mixed workload (compute gaps of 50 us-2 ms
# between calls of 50 us-30 ms, each call launched before the last kernel's end reached the profiler), seed
# by seed: the whole run's and the steady state's (last 25% of calls) latency over the oracle's, and how
# many calls the learner charged a leftover (DYNAMICCL_COST=leftover); then their geometric means over the
# seeds. What docs/agents.md reports for the costs side by side on one profile.
# Usage: bench/bench_mixed.sh [build-folder] [span|stream|leftover] [profile] [calls] [seeds] [nccl release]
#        (defaults: build, leftover, h100-sockets-2ranks-replay, 22000, 10, 2.28; some 4 minutes on 2 cores)
set -euo pipefail
build=${1:-build}
cost=${2:-leftover}
profile=${3:-h100-sockets-2ranks-replay}
calls=${4:-22000}
seeds=${5:-10}
nccl=${6:-2.28}
case "$cost" in
  span | stream | leftover) ;;
  *) echo "bench_mixed.sh: cost must be span, stream or leftover, not '$cost'" >&2; exit 2 ;;
esac
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "bench_mixed.sh: seeds must be 1 or more, not '$seeds'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One seed's run; its exit status goes to rc-SEED (a failed seed is reported once all have ended).
one_seed() {
  local status=0
  DYNAMICCL_COST=$cost "$build/dccl" run --profile "$profile" --workload mixed --policy learn --ranks 1 \
    --plugin builtin --host-ahead --calls "$calls" --seed "$1" --steady 0.25 --nccl "$nccl" --verbose \
    > "$work/run-$1.txt" 2>&1 || status=$?
  echo "$status" > "$work/rc-$1"
}
# As many seeds at a time as there are cores (bash 4.3's wait -n), a new one as soon as one ends.
running=0
for seed in $(seq 1 "$seeds"); do
  one_seed "$seed" &
  running=$((running + 1))
  if (( running >= $(nproc) )); then wait -n || true; running=$((running - 1)); fi
done
wait
for seed in $(seq 1 "$seeds"); do
  if [ "$(cat "$work/rc-$seed" 2> /dev/null)" != 0 ]; then
    echo "bench_mixed.sh: seed $seed failed (exit $(cat "$work/rc-$seed" 2> /dev/null || echo unknown)):" >&2
    tail -n 5 "$work/run-$seed.txt" >&2
    exit 1
  fi
done

echo "== $profile, workload mixed, $calls calls, NCCL $nccl ABIs, the learner's cost: $cost =="
printf '%5s | %12s %15s %10s\n' seed "all x oracle" "steady x oracle" "charged"
for seed in $(seq 1 "$seeds"); do
  read -r all steady _ _ _ charged _ < <(awk -f "$(dirname "$0")/run_summary.awk" "$work/run-$seed.txt")
  if [ "$all" = - ] || [ "$steady" = - ]; then
    echo "bench_mixed.sh: seed $seed: no result in the run's output" >&2
    tail -n 5 "$work/run-$seed.txt" >&2
    exit 1
  fi
  printf '%5d | %12s %15s %10s\n' "$seed" "$all" "$steady" "$charged"
done | tee "$work/rows.txt"
awk '{ all += log($3); steady += log($4); charged += $5; n++ }
     END { printf "geometric mean over %d seeds | all %.4f x oracle, steady %.4f x oracle, %d calls charged\n",
                  n, exp(all / n), exp(steady / n), charged }' "$work/rows.txt"
