#!/usr/bin/env bash
# tools/demo.sh: the README's main job. On the built-in simulated cluster, shows how far NCCL's own
# choices are from the best ones, DynamICCL applying a decision table through the real plugin ABI,
# driven by the NCCL emulator, and DynamICCL's agents learning online. Usage: tools/demo.sh [build-folder]
set -euo pipefail
build=${1:-build}
dccl="$build/dccl"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

section() { printf '\n=== %s ===\n' "$1"; }

section "1. NCCL's choice vs the best action on a PCIe 8-GPU node (AllGather, simulator oracle)"
"$dccl" table --profile pcie-8gpu --collective allgather --min 1M --max 256M --chunk

section "2. NCCL alone vs DynamICCL's default policy (must be identical) on the size sweep"
"$dccl" run --profile pcie-8gpu --workload sweep --plugin none --ranks 2
"$dccl" run --profile pcie-8gpu --workload sweep --policy default --ranks 2

section "3. DynamICCL with a fixed table: the oracle's calm-network choices, applied through getCollInfo/getChunkSize"
"$dccl" table --profile pcie-8gpu --collective all --min 1K --max 1G --chunk --write-fixed "$work/pcie.table" > /dev/null
"$dccl" run --profile pcie-8gpu --workload sweep --policy fixed --table "$work/pcie.table" --ranks 4 \
  --trace "$work/trace.%r.csv"
echo "  profiler measurements written by rank 0: $(($(wc -l < "$work/trace.0.csv") - 1)) collectives"

section "4. Why a fixed table is not enough: the same kind of table on 16 RoCE nodes when congestion comes and goes"
"$dccl" table --profile roce-16x1 --collective all --min 1K --max 1G --chunk --write-fixed "$work/roce.table" > /dev/null
"$dccl" run --profile roce-16x1 --workload mixed --conditions calm --policy fixed --table "$work/roce.table"
"$dccl" run --profile roce-16x1 --workload mixed --conditions congestion-episodes --policy fixed --table "$work/roce.table"
echo
echo "Under congestion the calm-network table drifts away from the oracle ('vs oracle' grows)."

section "5. DynamICCL learning online: AllReduce/AllGather/ReduceScatter 1 KiB - 1 GiB on the PCIe node"
"$dccl" run --profile pcie-8gpu --workload sweep-long --policy learn --ranks 1 --steady 0.25 \
  --policy-file "$work/pcie.policy"
echo
echo "What it learned (a frozen policy, the same on every rank):"
"$dccl" inspect "$work/pcie.policy" | sed -n 1,24p

section "6. Learning through congestion episodes on 16 RoCE nodes (Agent-1 alarms, Agent-2 re-tunes)"
"$dccl" run --profile roce-16x1 --workload mixed-long --conditions congestion-episodes --policy learn --ranks 1 \
  --verbose 2>&1 | grep -E 'learner:|^  [a-z]|rank agreement'
echo
echo "The same agent learning once (first 25% of the calls) and then holding its decisions:"
"$dccl" run --profile roce-16x1 --workload mixed-long --conditions congestion-episodes --policy hold --ranks 1 |
  grep -E '^  [a-z]'
