#!/usr/bin/env bash
# bench/replay_policy.sh: learns a policy in the simulator on the GPU testbed's replayed measurements
# (scenarios/profiles/h100-sockets-2ranks-replay: every action's latency per size, what each leaves
# behind its kernel, the measured noise), as `bench/gpu/run.sh --warm-from-replay` and
# bench/bench_warm_start.sh start from: the gpu-sweep-long workload, seed 1, under the plugin's
# DYNAMICCL_COST with each call launched before the last kernel's end was seen (collbench's loop). Its
# shape (2 ranks, 2 "nodes") and the NCCL release's ABIs give the fingerprint the plugin computes on the
# GPU. The policy is saved in POLICY_DIR; the run's report goes to standard output.
# Usage: bench/replay_policy.sh DCCL POLICY_DIR NCCL_RELEASE   (DCCL: the dccl tool, e.g. build/dccl)
set -euo pipefail
[ $# = 3 ] || { echo "usage: bench/replay_policy.sh DCCL POLICY_DIR NCCL_RELEASE" >&2; exit 2; }
DYNAMICCL_POLICY_DIR=$2 exec "$1" run --profile h100-sockets-2ranks-replay --workload gpu-sweep-long --policy learn \
  --ranks 1 --nccl "$3" --host-ahead --seed 1 --steady 0.25
