#!/usr/bin/env bash
# tools/abi_check.sh: checks the plugin ABI declared in abi/ against an NCCL source tree's own plugin
# headers, without copying them. Both are built with debug information and gdb reads every tuner and
# profiler struct from each build (tools/abi_layout.py): each member's offset, size, name and type, down
# to the function pointers' parameters and the layout of the structs they point to, so that a v6 entry
# point taking a v5 descriptor, or a member whose type changed at the same size, is a difference. It also
# compares the constants both sides name (result codes, collectives, log levels and subsystems, algorithm
# and protocol indices, profiler event bits, the kernel-channel stop state), and names any newer tuner or
# profiler version the tree declares. Run it when NCCL ships a new plugin ABI: NVIDIA/nccl's
# src/include/plugin/ is the reference (CI has no NCCL source tree).
# Usage: tools/abi_check.sh NCCL_SOURCE_DIR [CUDA_INCLUDE_DIR]
#        (needs gcc, g++, gdb with Python and python3; the tree's src/nccl.h.in gives nccl.h, else
#        CUDA_INCLUDE_DIR's, default /usr/local/cuda/include)
# Exit status: 0 when everything matches, 1 on a difference (printed), 2 when the check cannot run.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
nccl=${1:?usage: tools/abi_check.sh NCCL_SOURCE_DIR [CUDA_INCLUDE_DIR]}
cuda_include=${2:-/usr/local/cuda/include}
plugin_headers="$nccl/src/include/plugin"
fail() { echo "abi_check: $*" >&2; exit 2; }
for tool in gcc g++ gdb python3; do command -v "$tool" >/dev/null || fail "$tool not found"; done
gdb -nx -batch -ex "python import gdb" >/dev/null 2>&1 || fail "this gdb has no Python"
[[ -f "$plugin_headers/nccl_tuner.h" && -f "$plugin_headers/nccl_profiler.h" ]] ||
  fail "no plugin/nccl_tuner.h and plugin/nccl_profiler.h under $nccl/src/include"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/include"
# NCCL's own nccl.h (result codes) from the tree's template when there is one.
if [[ -f "$nccl/src/nccl.h.in" ]]; then
  sed 's/\${nccl:[A-Za-z]*}/0/g' "$nccl/src/nccl.h.in" > "$work/include/nccl.h"
  nccl_h="the tree's src/nccl.h.in"
elif [[ -f "$cuda_include/nccl.h" ]]; then
  nccl_h="$cuda_include/nccl.h"
else
  fail "no src/nccl.h.in in the tree and no nccl.h in $cuda_include (give CUDA_INCLUDE_DIR)"
fi
# NCCL's profiler header includes its os.h (threads, sockets) for one type: the pid.
printf '#include <sys/types.h>\ntypedef pid_t ncclPid_t;\n' > "$work/include/os.h"

# The structs, by NCCL's names (abi/ uses the same ones).
types="ncclTuner_v2_t ncclTuner_v3_t ncclTuner_v4_t ncclTuner_v5_t ncclTuner_v6_t ncclNvlDomainInfo_v5_t
ncclTunerConstants_v5_t ncclProfilerEventDescr_v4_t ncclProfilerEventStateArgs_v4_t ncclProfiler_v4_t
ncclProfilerEventDescr_v5_t ncclProfilerEventStateArgs_v5_t ncclProfiler_v5_t ncclProfilerEventDescr_v6_t
ncclProfilerEventStateArgs_v6_t ncclProfiler_v6_t"
# Constants: "our expression|NCCL's expression".
constants="ncclSuccess|ncclSuccess ncclSystemError|ncclSystemError ncclInternalError|ncclInternalError
ncclInvalidArgument|ncclInvalidArgument ncclInProgress|ncclInProgress
ncclFuncBroadcast|ncclFuncBroadcast ncclFuncReduce|ncclFuncReduce ncclFuncAllGather|ncclFuncAllGather
ncclFuncReduceScatter|ncclFuncReduceScatter ncclFuncAllReduce|ncclFuncAllReduce ncclFuncSendRecv|ncclFuncSendRecv
ncclFuncSend|ncclFuncSend ncclFuncRecv|ncclFuncRecv
NCCL_LOG_WARN|NCCL_LOG_WARN NCCL_LOG_INFO|NCCL_LOG_INFO NCCL_LOG_TRACE|NCCL_LOG_TRACE
NCCL_INIT|NCCL_INIT NCCL_TUNING|NCCL_TUNING NCCL_ENV|NCCL_ENV NCCL_PROFILE|NCCL_PROFILE
NCCL_ABI_NUM_ALGORITHMS|NCCL_NUM_ALGORITHMS NCCL_ABI_NUM_PROTOCOLS|NCCL_NUM_PROTOCOLS
NCCL_ABI_NUM_HW_LINKS|NCCL_NUM_HW_LINKS NCCL_ABI_NUM_COMPCAPS|NCCL_NUM_COMPCAPS
NCCL_ABI_NUM_TUNING_SCALES|NCCL_NUM_TUNING_SCALES NCCL_ABI_ALGO_PROTO_IGNORE|NCCL_ALGO_PROTO_IGNORE
DCCL_ALGO_TREE|NCCL_ALGO_TREE DCCL_ALGO_RING|NCCL_ALGO_RING DCCL_ALGO_COLLNET_DIRECT|NCCL_ALGO_COLLNET_DIRECT
DCCL_ALGO_COLLNET_CHAIN|NCCL_ALGO_COLLNET_CHAIN DCCL_ALGO_NVLS|NCCL_ALGO_NVLS DCCL_ALGO_NVLS_TREE|NCCL_ALGO_NVLS_TREE
DCCL_ALGO_PAT|NCCL_ALGO_PAT DCCL_PROTO_LL|NCCL_PROTO_LL DCCL_PROTO_LL128|NCCL_PROTO_LL128
DCCL_PROTO_SIMPLE|NCCL_PROTO_SIMPLE
ncclProfileGroup|ncclProfileGroup ncclProfileColl|ncclProfileColl ncclProfileP2p|ncclProfileP2p
ncclProfileProxyOp|ncclProfileProxyOp ncclProfileProxyStep|ncclProfileProxyStep
ncclProfileProxyCtrl|ncclProfileProxyCtrl ncclProfileKernelCh|ncclProfileKernelCh
ncclProfileNetPlugin|ncclProfileNetPlugin ncclProfileGroupApi|ncclProfileGroupApi
ncclProfileCollApi|ncclProfileCollApi ncclProfileP2pApi|ncclProfileP2pApi
ncclProfileKernelLaunch|ncclProfileKernelLaunch ncclProfileCeColl|ncclProfileCeColl
ncclProfileCeSync|ncclProfileCeSync ncclProfileCeBatch|ncclProfileCeBatch
NCCL_PROFILER_KERNEL_CH_STOP|ncclProfilerKernelChStop"

status=0
# Versions this tree declares that abi/ does not: a new ABI to declare (a difference).
newer=$(grep -rhoE '\bncclTuner_v[0-9]+_t\b|\bncclProfiler_v[0-9]+_t\b' "$plugin_headers" | sort -u |
  while read -r name; do grep -qw "$name" <<<"$types" || grep -qE "_v[0-3]_t$" <<<"$name" || echo "$name"; done | paste -sd' ' -)
if [[ -n $newer ]]; then
  echo "this NCCL declares plugin versions abi/ does not: $newer"
  status=1
fi
# Versions an older tree lacks, and constants it does not name, are listed and left out.
present="" absent=""
for t in $types; do
  if grep -rqw "$t" "$plugin_headers"; then present+=" $t"; else absent+=" $t"; fi
done
types=$present
[[ -n $absent ]] && echo "not declared by this NCCL (newer ABI versions), not compared:$absent"
kept="" absent=""
for pair in $constants; do
  if grep -qw "${pair##*|}" "$plugin_headers"/*.h "$plugin_headers"/*/*.h "$nccl/src/include/nccl_common.h" \
    "$work/include/nccl.h" "$cuda_include/nccl.h" 2>/dev/null; then kept+=" $pair"; else absent+=" ${pair##*|}"; fi
done
constants=$kept
[[ -n $absent ]] && echo "constants this NCCL does not name, not compared:$absent"

# One program per side: a variable of each type (for gdb) and the constants printed.
write_side() { # source file, includes, 1 for our expressions or 2 for NCCL's
  local source=$1 includes=$2 column=$3 pair expression
  { printf '%s\n' "$includes" '#include <stdio.h>'
    for t in $types; do echo "$t variable_$t;"; done
    echo 'int main(void) {'
    for pair in $constants; do
      expression=${pair##*|}
      [[ $column == 1 ]] && expression=${pair%%|*}
      echo "  printf(\"%s %.17g\\n\", \"${pair%%|*}\", (double)($expression));"
    done
    echo '  return 0;'
    echo '}'; } > "$source"
}
write_side "$work/ours.c" "#include \"$here/abi/nccl_tuner_abi.h\"
#include \"$here/abi/nccl_profiler_abi.h\"
#include \"$here/core/types.h\"" 1
write_side "$work/theirs.cc" "#include <sys/types.h>
#include \"plugin/nccl_tuner.h\"
#include \"plugin/nccl_profiler.h\"" 2
gcc -std=c11 -g -O0 -o "$work/ours" "$work/ours.c" 2> "$work/ours.compile" ||
  { cat "$work/ours.compile" >&2; fail "cannot compile abi/'s headers (above)"; }
g++ -g -O0 -I "$work/include" -I "$nccl/src/include" -I "$cuda_include" -o "$work/theirs" "$work/theirs.cc" \
  2> "$work/theirs.compile" || { cat "$work/theirs.compile" >&2; fail "cannot compile NCCL's plugin headers (above)"; }

for side in ours theirs; do
  ABI_TYPES="$types" ABI_OUT="$work/$side.layout" gdb -nx -batch -x "$here/tools/abi_layout.py" "$work/$side" \
    > "$work/$side.gdb" 2>&1
  [[ $(grep -c '^== ' "$work/$side.layout" 2>/dev/null) == $(wc -w <<<"$types") ]] ||
    { cat "$work/$side.gdb" >&2; fail "gdb did not describe every type of the $side build (above)"; }
  "$work/$side" > "$work/$side.constants" || fail "the $side constants program failed"
done
if grep -q ' missing$' "$work/ours.layout" "$work/theirs.layout"; then
  grep -H ' missing$' "$work/ours.layout" "$work/theirs.layout" | sed "s|$work/||"
  status=1
fi
if ! diff "$work/ours.layout" "$work/theirs.layout" > "$work/layout.diff"; then
  echo "layouts differ (< abi/, > NCCL's; offset, size, member: type; ptr(struct<size>#<layout digest>)):"
  cat "$work/layout.diff"
  status=1
fi
if ! diff "$work/ours.constants" "$work/theirs.constants" > "$work/constants.diff"; then
  echo "constants differ (< abi/, > NCCL's; named by abi/):"
  cat "$work/constants.diff"
  status=1
fi
version=$(sed -n 's/^NCCL_\(MAJOR\|MINOR\|PATCH\) *:= *//p' "$nccl/makefiles/version.mk" 2>/dev/null | paste -sd. -)
echo "abi_check against NCCL ${version:-(version unknown)} at $nccl (nccl.h: $nccl_h):" \
  "$(wc -w <<<"$types") structs, $(grep -cv '^==' "$work/ours.layout") members," \
  "$(wc -l < "$work/ours.constants") constants: $([[ $status == 0 ]] && echo identical || echo DIFFERENT)"
exit $status
