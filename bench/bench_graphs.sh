#!/usr/bin/env bash
# bench/bench_graphs.sh: learning beside a CUDA graph, seed by seed, with and without the CollApi events
# that tell the plugin which calls are captured. The NCCL emulator captures calls FIRST..FIRST+N-1 of the
# workload into a graph and replays it after every E-th call that follows (`dccl run --graph F:N:E`).
# NCCL 2.28's ABIs (profiler v5) carry the CollApi events: captured calls get their cell's exploited
# action and the replays are not learned. NCCL 2.27's (profiler v4) have none, so the plugin decides and
# learns as if every call were eager: explorations are baked into the graph, and the replays' measurements
# are joined with eager calls of the same size. Per seed and release: the replayed calls' latency over
# NCCL's default and the oracle's, and the eager calls' steady state (last 25%: x oracle, streams more
# than 2% slower than NCCL, the worst stream x NCCL); then geometric means over the seeds.
# Usage: bench/bench_graphs.sh [build-folder] [seeds] [F:N:E] [profile] [workload]
#        (defaults: build, 5, 3000:48:16, pcie-8gpu, sweep-long; some 20 s on 2 cores)
set -euo pipefail
build=${1:-build}
seeds=${2:-5}
graph=${3:-3000:48:16}
profile=${4:-pcie-8gpu}
workload=${5:-sweep-long}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "bench_graphs.sh: seeds must be 1 or more, not '$seeds'" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run; its exit status goes to rc-RELEASE-SEED (a failed run is reported once all have ended).
one_run() {
  local status=0
  "$build/dccl" run --profile "$profile" --workload "$workload" --policy learn --ranks 1 --steady 0.25 \
    --nccl "$1" --seed "$2" --graph "$graph" > "$work/run-$1-$2.txt" 2>&1 || status=$?
  echo "$status" > "$work/rc-$1-$2"
}
running=0
for seed in $(seq 1 "$seeds"); do
  for release in 2.27 2.28; do
    one_run "$release" "$seed" &
    running=$((running + 1))
    if (( running >= $(nproc) )); then wait -n || true; running=$((running - 1)); fi
  done
done
wait

echo "== $profile, workload $workload, calls $graph (first:captured:replayed after every) =="
printf '%5s %7s | %15s %15s | %15s %8s %12s\n' seed release "graph x NCCL" "graph x oracle" "steady x oracle" "> 2%" "worst x NCCL"
for seed in $(seq 1 "$seeds"); do
  for release in 2.27 2.28; do
    run="$work/run-$release-$seed.txt"
    if [ "$(cat "$work/rc-$release-$seed" 2> /dev/null)" != 0 ]; then
      echo "bench_graphs.sh: NCCL $release seed $seed failed:" >&2
      tail -n 5 "$run" >&2
      exit 1
    fi
    read -r _ steady _ slower worst _ _ < <(awk -f "$(dirname "$0")/run_summary.awk" "$run")
    replay=$(sed -n 's/.*calls replayed: \([0-9.]*\) x oracle, \([0-9.]*\) x NCCL.*/\2 \1/p' "$run")
    if [ "$steady" = - ] || [ -z "$replay" ]; then
      echo "bench_graphs.sh: NCCL $release seed $seed: no result in the run's output" >&2
      tail -n 5 "$run" >&2
      exit 1
    fi
    read -r graph_nccl graph_oracle <<< "$replay"
    printf '%5d %7s | %15s %15s | %15s %8s %12s\n' "$seed" "$release" "$graph_nccl" "$graph_oracle" "$steady" "$slower" "$worst"
  done
done | tee "$work/rows.txt"
awk '{ n[$2]++; g[$2] += log($4); o[$2] += log($5); s[$2] += log($7); slow[$2] += $8; if ($9 > w[$2]) w[$2] = $9 }
     END { for (r in n)
             printf "NCCL %s, geometric means over %d seeds | graph %.4f x NCCL, %.4f x oracle | steady %.4f x oracle, %d streams > 2%% slower than NCCL, worst %.4f x NCCL\n",
                    r, n[r], exp(g[r] / n[r]), exp(o[r] / n[r]), exp(s[r] / n[r]), slow[r], w[r] }' "$work/rows.txt" | sort
