#!/usr/bin/env bash
# bench/gpu/run.sh: DynamICCL in real NCCL on the one-GPU test machine, in one run of under 10 minutes.
# Ranks are processes on GPU 0 with distinct NCCL_HOSTID: NCCL treats them as separate nodes and uses
# its socket transport on loopback. Writes CSVs, logs and summary.md to $OUT:
#   1. versions (GPU, CUDA, PyTorch, the NCCL PyTorch ships), builds the plugin and collbench against it;
#   2. the plugin loads (NCCL's own log lines);
#   3. NCCL alone vs the plugin's `default` policy, twice each, interleaved (overhead);
#   4. the sweep: every action of the grid through a fixed table, verified (the real best per size);
#   5. DynamICCL learning online (the reported pass follows --rounds passes);
#   6. a congestion run: learning while a loopback traffic generator runs for part of the time;
#   7. the profiler check: the plugin's GPU durations against CUDA events of the same calls;
#   8. PyTorch DDP step time: NCCL alone, the plugin's default, the plugin learning;
#   9. summary.md (bench/gpu/summarize.py).
# Usage: OUT=/path bench/gpu/run.sh [--ranks N] [--quick]
#        bench/gpu/run.sh --dry-run   (no GPU: builds everything, checks the scripts, and runs the same
#                                      topology through the NCCL emulator instead)
set -uo pipefail
cd "$(dirname "$0")/../.."
ranks=2
quick=0
dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --dry-run) dry=1; shift ;;
    *) echo "usage: OUT=DIR bench/gpu/run.sh [--ranks N] [--quick] [--dry-run]" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-/tmp/dynamiccl-gpu}
mkdir -p "$OUT"
started=$(date +%s)
summary="$OUT/summary.md"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
elapsed() { echo $(( $(date +%s) - started )); }

# ---- 1. versions and builds ----
cuda_home=${CUDA_HOME:-/usr/local/cuda}
nccl_home=${NCCL_HOME:-}
if [ -z "$nccl_home" ]; then
  nccl_home=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null ||
              python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
fi
[ -n "$nccl_home" ] && [ -f "$nccl_home/include/nccl.h" ] || nccl_home=$cuda_home
nccl_lib=$nccl_home/lib
[ -d "$nccl_lib" ] || nccl_lib=$nccl_home/lib64
say "# DynamICCL GPU run ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
say ""
say "- NCCL headers and library: $nccl_home (nccl.h says $(grep -E '^#define NCCL_(MAJOR|MINOR|PATCH)' "$nccl_home/include/nccl.h" | awk '{printf "%s%s", sep, $3; sep="."}'))"
if [ $dry -eq 0 ]; then
  say "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  say "- PyTorch: $(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1 | tail -1)"
fi
make -s plugin >/dev/null || { say "plugin build failed"; exit 1; }
mkdir -p build/gpu
gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$nccl_home/include" -I"$cuda_home/include" \
  bench/gpu/collbench.c -o build/gpu/collbench -L"$nccl_lib" -l:libnccl.so.2 -L"$cuda_home/lib64" -lcudart -lm \
  -Wl,-rpath,"$nccl_lib" || { say "collbench build failed"; exit 1; }
gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror bench/gpu/loopback_load.c -o build/gpu/loopback_load ||
  { say "loopback_load build failed"; exit 1; }
export LD_LIBRARY_PATH="$nccl_lib:$cuda_home/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_SOCKET_IFNAME=lo DYNAMICCL_SAVE_SECONDS=0
plugin=$PWD/build/libnccl-tuner-dynamiccl.so
say "- built: plugin $(basename "$plugin"), build/gpu/collbench, build/gpu/loopback_load ($(elapsed) s)"

if [ $dry -eq 1 ]; then
  # No GPU: the same shape (4 ranks, one per "node", sockets) through the NCCL emulator, every policy.
  python3 -c "import ast; ast.parse(open('bench/gpu/ddp_step.py').read()); ast.parse(open('bench/gpu/summarize.py').read())" ||
    { say "a Python script does not parse"; exit 1; }
  build/gpu/collbench --mode none --max 4K > "$OUT/dry-collbench.txt" 2>&1
  say "- collbench without a GPU: $(tail -1 "$OUT/dry-collbench.txt")"
  export DYNAMICCL_COORD=127.0.0.1:$((20000 + RANDOM % 20000)) # four "nodes": coordination over TCP
  for policy in default learn; do
    build/dccl run --profile sockets-1gpu-4ranks --workload sweep --policy "$policy" --ranks 4 --steady 0.25 \
      > "$OUT/dry-$policy.txt" 2>&1 || { say "emulator run ($policy) failed"; exit 1; }
    say "- emulator, $policy: $(grep -E '^  all ' "$OUT/dry-$policy.txt" | awk '{print "x NCCL", $(NF-1), "x oracle", $NF}'); $(grep 'rank agreement' "$OUT/dry-$policy.txt" | sed 's/^ *//')"
  done
  say "dry run complete ($(elapsed) s): the GPU steps were not run"
  exit 0
fi

max=256M
sweep_max=64M
rounds=20
iterations=10
if [ $quick -eq 1 ]; then max=4M; sweep_max=1M; rounds=5; iterations=5; fi
bench() { timeout 240 build/gpu/collbench --ranks "$ranks" --plugin "$plugin" --iterations "$iterations" "$@"; }

# ---- 2. the plugin loads ----
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV bench --mode default --max 64K --out "$OUT/load-check.csv" \
  > "$OUT/load.log" 2>&1
say ""
say "## The plugin loads"
say '```'
grep -E "DynamICCL|TUNER|Tuner|PROFILER|Profiler" "$OUT/load.log" | grep -vi "error" | head -12 | tee -a "$summary" > /dev/null
say '```'

# ---- 3. overhead: NCCL alone vs the plugin's default policy, interleaved ----
: > "$OUT/none.csv.parts"
for rep in 1 2; do
  bench --mode none --max "$max" --out "$OUT/none-$rep.csv" 2>> "$OUT/runs.log"
  bench --mode default --max "$max" --out "$OUT/default-$rep.csv" 2>> "$OUT/runs.log"
done
for mode in none default; do
  head -1 "$OUT/$mode-1.csv" > "$OUT/$mode.csv"
  tail -q -n +2 "$OUT/$mode-1.csv" "$OUT/$mode-2.csv" >> "$OUT/$mode.csv" 2>/dev/null
done
rm -f "$OUT/none.csv.parts"
say ""
say "- overhead runs done ($(elapsed) s)"

# ---- 4. the sweep ----
bench --mode sweep --max "$sweep_max" --iterations 5 --out "$OUT/sweep.csv" 2>> "$OUT/runs.log"
say "- sweep done: $(($(wc -l < "$OUT/sweep.csv") - 1)) rows, $(awk -F, 'NR > 1 && $10 == 0' "$OUT/sweep.csv" | wc -l) of them actions NCCL did not run ($(elapsed) s)"

# ---- 5. learning ----
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING bench --mode learn --max "$max" --rounds "$rounds" --out "$OUT/learn.csv" \
  2> "$OUT/learn.log"
say "- learning done ($(elapsed) s): $(grep -m1 -o 'learner: .*' "$OUT/learn.log" | head -1)"

# ---- 6. congestion: learning while the loopback is loaded for part of the run ----
if [ $(( $(date +%s) - started )) -lt 330 ]; then
  (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING bench --mode learn --max 16M --rounds 60 --collectives allreduce \
     --out "$OUT/congestion.csv" 2> "$OUT/congestion.log") &
  learner=$!
  sleep 8
  build/gpu/loopback_load 4 12 2>> "$OUT/runs.log"
  wait $learner
  say "- congestion run ($(elapsed) s): $(grep -o '[0-9]* congestion onsets, [0-9]* recoveries' "$OUT/congestion.log" | head -1) on rank 0"
else
  say "- congestion run skipped: out of time"
fi

# ---- 7. profiler check ----
rm -rf "$OUT/event-trace"
bench --mode default --max 16M --event-check --trace-dir "$OUT/event-trace" --out "$OUT/event-check.csv" 2>> "$OUT/runs.log"
export DYNAMICCL_TRACE_FILE=  # not for what follows
unset DYNAMICCL_TRACE_FILE

# ---- 8. PyTorch DDP ----
if [ $(( $(date +%s) - started )) -lt 480 ]; then
  ddp() { timeout 90 python3 bench/gpu/ddp_step.py --ranks "$ranks" --label "$1" 2>> "$OUT/ddp.log" | tail -1; }
  (unset NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN; ddp nccl-alone) > "$OUT/ddp.csv"
  (export NCCL_TUNER_PLUGIN=$plugin NCCL_PROFILER_PLUGIN=$plugin DYNAMICCL_MODE=default; ddp plugin-default) >> "$OUT/ddp.csv"
  (export NCCL_TUNER_PLUGIN=$plugin NCCL_PROFILER_PLUGIN=$plugin DYNAMICCL_MODE=learn; ddp plugin-learn) >> "$OUT/ddp.csv"
  say ""
  say "## PyTorch DDP step (median ms; columns: label, ranks, width, depth, step ms, parameters identical)"
  say '```'
  tee -a "$summary" < "$OUT/ddp.csv" > /dev/null
  say '```'
else
  say "- DDP runs skipped: out of time"
fi

# ---- 9. summary ----
say ""
python3 bench/gpu/summarize.py "$OUT" >> "$summary" 2>> "$OUT/runs.log"
say ""
say "total: $(elapsed) s"
cat "$summary"
