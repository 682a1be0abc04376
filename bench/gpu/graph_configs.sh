#!/usr/bin/env bash
# bench/gpu/graph_configs.sh: graph_check.py (CUDA graphs on real NCCL) under five configurations, each with
# a watchdog, on the one-GPU test machine: without the plugin; the plugin's `fixed` mode with a table that
# alternates two actions call by call (`A|B`: a rank that counted a captured call would run the other
# action from then on, and NCCL would hang), traced on both ranks; learning; `default`; and the same fixed
# table with measurements off (DYNAMICCL_PROFILE=off: the profiler half still takes NCCL's CollApi events,
# so captured calls are still told apart). Each
# configuration's log, with every rank's progress and, where a rank hung, its Python stacks, goes to
# $OUT/graph-configs/<name>.log; the fixed run's traces to fixed-trace-<rank>.csv, which
# bench/gpu/graph_traces.py checks (ranks agree on every call, NCCL's seqNumbers less the replays are
# contiguous). Everything is also packed into $OUT/graph-configs.tgz (the device returns few files).
# Usage: OUT=DIR bench/gpu/graph_configs.sh   (about 4 minutes where every configuration hangs, 1 where none does)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/dynamiccl-gpu}
D=$OUT/graph-configs
rm -rf "$D"; mkdir -p "$D"
make -s -j"$(nproc)" plugin > "$D/make.log" 2>&1 || { echo "make failed"; tail "$D/make.log"; }
plugin=$PWD/build/libnccl-tuner-dynamiccl.so
export NCCL_SOCKET_IFNAME=lo DYNAMICCL_SAVE_SECONDS=0 PYTHONUNBUFFERED=1
# MPS, as run.sh starts it: without it the ranks' kernels time-share the GPU.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/dynamiccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dynamiccl-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
echo quit | nvidia-cuda-mps-control > /dev/null 2>&1 && sleep 1
nvidia-cuda-mps-control -d && echo "MPS on"
printf 'allreduce,0,-1,tree/simple/ch=1|ring/ll/ch=2\n' > "$D/alternate.table"
port=29600
# One configuration: its name, then its environment assignments (none: no plugin); 35 s to the watchdog, 50 s at most.
one() {
  local name=$1; shift
  port=$((port + 10))
  local t0; t0=$(date +%s)
  (export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV MASTER_PORT=$port "$@"
   timeout -k 5 50 python3 bench/gpu/graph_check.py --ranks 2 --label "$name" --watchdog 35) > "$D/$name.log" 2>&1
  local rc=$?
  pkill -9 -f graph_check.py; sleep 1
  echo "== $name: rc $rc, $(( $(date +%s) - t0 )) s"
  grep -E "^graph_check|graph_check rank|Timeout|Error|WARN|DynamICCL.*(captured|replays|waiting)" "$D/$name.log" | head -30
}
one none
one fixed-alternate NCCL_TUNER_PLUGIN="$plugin" NCCL_PROFILER_PLUGIN="$plugin" DYNAMICCL_MODE=fixed \
  DYNAMICCL_TABLE_FILE="$D/alternate.table" DYNAMICCL_TRACE_FILE="$D/fixed-trace-%r.csv"
one learn NCCL_TUNER_PLUGIN="$plugin" NCCL_PROFILER_PLUGIN="$plugin" DYNAMICCL_MODE=learn DYNAMICCL_POLICY_DIR="$D/policy" \
  DYNAMICCL_COORD_TIMEOUT_S=8
one default NCCL_TUNER_PLUGIN="$plugin" NCCL_PROFILER_PLUGIN="$plugin" DYNAMICCL_MODE=default
one fixed-alternate-noprofile NCCL_TUNER_PLUGIN="$plugin" NCCL_PROFILER_PLUGIN="$plugin" DYNAMICCL_MODE=fixed \
  DYNAMICCL_TABLE_FILE="$D/alternate.table" DYNAMICCL_PROFILE=off
echo quit | nvidia-cuda-mps-control
python3 bench/gpu/graph_traces.py "$D/fixed-trace-0.csv" "$D/fixed-trace-1.csv" "$D/fixed-alternate.log" | tee "$D/traces.txt"
tar czf "$OUT/graph-configs.tgz" -C "$OUT" graph-configs
