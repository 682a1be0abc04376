#!/usr/bin/env bash
# tools/abi_check.sh: checks the plugin ABI declared in abi/ against an NCCL source tree's own plugin
# headers, without copying them: every tuner and profiler struct's layout (each member's name, offset
# and size, nested unions included, read by gdb from both builds), the function pointers' parameter
# lists, and the constants both sides name (result codes, collectives, log levels and subsystems,
# algorithm and protocol indices, profiler event bits, the kernel-channel stop state). Run it when NCCL
# ships a new plugin ABI: NVIDIA/nccl's src/include/plugin/ is the reference (CI has no NCCL source).
# Usage: tools/abi_check.sh NCCL_SOURCE_DIR [CUDA_INCLUDE_DIR]
#        (needs gcc, g++, gdb and python3; CUDA_INCLUDE_DIR holds an nccl.h, default /usr/local/cuda/include)
# Exit status: 0 when everything matches, 1 on a difference (printed), 2 when it cannot run.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
nccl=${1:?usage: tools/abi_check.sh NCCL_SOURCE_DIR [CUDA_INCLUDE_DIR]}
cuda_include=${2:-/usr/local/cuda/include}
plugin_headers="$nccl/src/include/plugin"
for tool in gcc g++ gdb python3; do
  command -v "$tool" >/dev/null || { echo "abi_check: $tool not found" >&2; exit 2; }
done
[[ -f "$plugin_headers/nccl_tuner.h" && -f "$plugin_headers/nccl_profiler.h" ]] ||
  { echo "abi_check: no plugin/nccl_tuner.h and plugin/nccl_profiler.h under $nccl/src/include" >&2; exit 2; }
[[ -f "$cuda_include/nccl.h" ]] || { echo "abi_check: no nccl.h in $cuda_include (give CUDA_INCLUDE_DIR)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT


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

# An older NCCL declares fewer versions: those it lacks are named and left out.
present="" absent=""
for t in $types; do
  if grep -rqw "$t" "$plugin_headers"; then present+=" $t"; else absent+=" $t"; fi
done
types=$present
[[ -n $absent ]] && echo "not declared by this NCCL (newer ABI versions), not compared:$absent"
kept="" absent=""
for pair in $constants; do
  if grep -qw "${pair##*|}" "$plugin_headers"/*.h "$plugin_headers"/*/*.h "$nccl/src/include/nccl_common.h" \
    "$cuda_include/nccl.h" 2>/dev/null; then kept+=" $pair"; else absent+=" ${pair##*|}"; fi
done
constants=$kept
[[ -n $absent ]] && echo "constants this NCCL does not name, not compared:$absent"

# One program per side: a variable of each type (for gdb) and the constants printed (as doubles).
write_side() { # side, includes, column of `constants`
  local side=$1 includes=$2 column=$3 source="$work/$1.c"
  [[ $side == theirs ]] && source="$work/theirs.cc"
  { printf '%s\n' "$includes" '#include <stdio.h>'
    for t in $types; do echo "$t variable_$t;"; done
    echo 'int main(void) {'
    for pair in $constants; do
      local expression=${pair##*|}
      [[ $column == 1 ]] && expression=${pair%%|*}
      echo "  printf(\"%s %.6g\\n\", \"${pair%%|*}\", (double)($expression));"
    done
    echo '  return 0;'
    echo '}'; } > "$source"
}
write_side ours "#include \"$here/abi/nccl_tuner_abi.h\"
#include \"$here/abi/nccl_profiler_abi.h\"
#include \"$here/core/types.h\"" 1
# NCCL's profiler header includes its os.h (threads, sockets) for one type: pid_t.
mkdir -p "$work/stub"
printf '#include <sys/types.h>\ntypedef pid_t ncclPid_t;\n' > "$work/stub/os.h"
write_side theirs "#include <sys/types.h>
#include \"plugin/nccl_tuner.h\"
#include \"plugin/nccl_profiler.h\"" 2
gcc -std=c11 -g -O0 -o "$work/ours" "$work/ours.c"
g++ -g -O0 -I "$work/stub" -I "$nccl/src/include" -I "$cuda_include" -o "$work/theirs" "$work/theirs.cc"

# gdb's `ptype /o` of every type (one gdb run per build), reduced to each member's offset, size and
# name, and each function pointer's parameter types (C's _Bool and C++'s bool, and the versioned
# typedef names of one type, count as the same).
layouts() { # binary, output prefix
  local commands=()
  for t in $types; do commands+=(-ex "echo == $t\\n" -ex "ptype /o $t"); done
  gdb -batch "${commands[@]}" "$1" 2>&1 | python3 -c '
import re, sys
layout, signatures = open(sys.argv[1] + ".layout", "w"), open(sys.argv[1] + ".signatures", "w")
for line in sys.stdin:
    line = line.rstrip()
    if line.startswith("== ") or line.startswith("No symbol"):
        print(line, file=layout)
        continue
    m = re.match(r"/\*\s*(\d*)\s*\|?\s*(\d+)\s*\*/\s*(.*);$", line)
    if m:
        offset, size, declaration = m.groups()
        pointer = re.search(r"\(\*\s*(\w+)\)", declaration)
        name = pointer.group(1) if pointer else re.search(r"(\w+)\s*((\[\d+\])*)$", declaration).group(0)
        print(offset or "-", size, name, file=layout)
        if pointer:
            text = re.sub(r"\b_Bool\b", "bool", declaration)
            text = re.sub(r"_v\d+_t\b", "_t", text)
            print(re.sub(r"\s+", " ", text.replace("ncclProfilerEventState_t", "int")), file=signatures)
        continue
    m = re.match(r"\s*\}\s*(\w+(\[\d+\])*)?;$", line)
    if m:
        print("end", m.group(1) or "", file=layout)
        continue
    m = re.search(r"total size \(bytes\):\s*(\d+)", line)
    if m:
        print("total", m.group(1), file=layout)' "$2"
}
status=0
layouts "$work/ours" "$work/ours"
layouts "$work/theirs" "$work/theirs"
if grep -q "No symbol" "$work/ours.layout" "$work/theirs.layout"; then
  grep -H "No symbol" "$work/ours.layout" "$work/theirs.layout" | sed "s|$work/||"
  status=1
fi
for part in layout signatures; do
  if ! diff "$work/ours.$part" "$work/theirs.$part" > "$work/$part.diff"; then
    echo "$part differ (< ours, > NCCL's):"
    cat "$work/$part.diff"
    status=1
  fi
done
"$work/ours" > "$work/ours.constants"
"$work/theirs" > "$work/theirs.constants"
if ! diff "$work/ours.constants" "$work/theirs.constants" > "$work/constants.diff"; then
  echo "constants differ (< ours, > NCCL's; named by ours):"
  cat "$work/constants.diff"
  status=1
fi
version=$(sed -n 's/^NCCL_\(MAJOR\|MINOR\|PATCH\) *:= *//p' "$nccl/makefiles/version.mk" 2>/dev/null | paste -sd. -)
members=$(grep -cv '^==\|^end\|^total' "$work/ours.layout")
echo "abi_check against NCCL ${version:-(version unknown)} at $nccl: $(wc -w <<<"$types") structs ($members members)," \
  "$(wc -l < "$work/ours.signatures") function pointers, $(wc -l < "$work/ours.constants") constants:" \
  "$([[ $status == 0 ]] && echo identical || echo DIFFERENT)"
exit $status
