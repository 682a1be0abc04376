#!/usr/bin/env bash
# bench/bench_warm_start.sh: what `bench/gpu/run.sh --warm-from-replay` can expect, in the simulator. A
# policy is learned on the GPU testbed's replay as run.sh learns it (bench/replay_policy.sh), then each
# seed learns a workload (gpu-sweep, 520 calls a stream, unless given) cold and warm-started from that
# policy on two truths: the replay itself under other seeds (the GPU as the replay says it is), and the
# calibrated model of the same testbed, h100-sockets-2ranks (a GPU that disagrees with the replay: both
# have the policy's fingerprint). Per seed: the whole run's and the steady state's (last 25% of calls)
# latency over the oracle's, and the steady state's streams more than 2% slower than NCCL; then geometric
# means over seeds.
# Usage: bench/bench_warm_start.sh [build-folder] [seeds] [nccl release] [workload]
#        (defaults: build, 5, 2.28 as on the GPU machine, gpu-sweep; about 10 s on 2 cores, gpu-sweep-long 25)
set -euo pipefail
build=${1:-build}
seeds=${2:-5}
nccl=${3:-2.28}
workload=${4:-gpu-sweep}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "bench_warm_start.sh: seeds must be 1 or more, not '$seeds'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/replay-policy"
"$(dirname "$0")/replay_policy.sh" "$build/dccl" "$work/replay-policy" "$nccl" > "$work/replay-learn.txt" 2>&1
policy=$(ls "$work"/replay-policy/policy-*.bin)

# One run: PROFILE SEED cold|warm -> "total steady slower" (x oracle, x oracle, streams > 2% slower than NCCL).
one_run() {
  local profile=$1 seed=$2 start=$3 file=$work/$1-$2-$3
  local warm=()
  if [ "$start" = warm ]; then cp "$policy" "$file.bin"; warm=(--policy-file "$file.bin"); fi
  "$build/dccl" run --profile "$profile" --workload "$workload" --policy learn --ranks 1 --nccl "$nccl" --host-ahead \
    --seed "$seed" --steady 0.25 "${warm[@]}" > "$file.txt" 2>&1
  awk -f "$(dirname "$0")/run_summary.awk" "$file.txt" | awk '{ print $1, $2, $4 }' > "$file.row"
}
for profile in h100-sockets-2ranks-replay h100-sockets-2ranks; do
  for seed in $(seq 2 $((seeds + 1))); do
    one_run "$profile" "$seed" cold &
    one_run "$profile" "$seed" warm &
    wait
  done
done

echo "== warm start from a policy learned on the replay (seed 1, gpu-sweep-long: $(grep -o 'steady state.*x oracle' "$work/replay-learn.txt")), NCCL $nccl ABIs =="
echo "$workload per seed, cold against warm: total x oracle, steady state x oracle, steady streams > 2% slower than NCCL"
for profile in h100-sockets-2ranks-replay h100-sockets-2ranks; do
  printf '%-28s %7s | %8s %8s %6s | %8s %8s %6s\n' "$profile" seed "total" steady ">2%" "total" steady ">2%"
  for seed in $(seq 2 $((seeds + 1))); do
    printf '%-28s %7s | %8s %8s %6s | %8s %8s %6s\n' "" "$seed" $(cat "$work/$profile-$seed-cold.row") \
      $(cat "$work/$profile-$seed-warm.row")
  done
  for start in cold warm; do
    for seed in $(seq 2 $((seeds + 1))); do cat "$work/$profile-$seed-$start.row"; done
  done | awk -v seeds="$seeds" -v profile="$profile" '
    { n++; total[n > seeds] += log($1); steady[n > seeds] += log($2); slower[n > seeds] += $3 }
    END { printf "%-28s %7s | %8.4f %8.4f %6d | %8.4f %8.4f %6d\n", "", "geomean", exp(total[0] / seeds),
          exp(steady[0] / seeds), slower[0], exp(total[1] / seeds), exp(steady[1] / seeds), slower[1] }'
done
