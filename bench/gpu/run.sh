#!/usr/bin/env bash
# bench/gpu/run.sh: DynamICCL in real NCCL on the one-GPU test machine, in one run of under 10 minutes.
# Ranks are processes on GPU 0 with distinct NCCL_HOSTID: NCCL treats them as separate nodes and uses
# its socket transport on loopback. Writes CSVs, logs and summary.md to $OUT:
#   1. versions (GPU, CUDA, PyTorch, the NCCL PyTorch ships), builds the plugin and collbench against it;
#   2. the plugin loads (NCCL's own log lines);
#   3. DynamICCL learning online (every pass recorded; the policy is saved at the end);
#   4. side by side, each in its own set of processes, repeated in shuffled orders: NCCL alone, the
#      plugin's default policy (overhead), the learned policy frozen, and every action of the sweep
#      through a fixed table, verified (the real best per size);
#   4b. pairs: the learned policy's choices and the sweep's actions, each against NCCL's own choice inside
#      one set of processes, in alternating blocks of calls (fixed tables of A||B lines): the process sets' placement noise,
#      which 10 repetitions of step 4 cannot average out, cancels in these ratios;
#   5. a congestion run: learning while a loopback traffic generator runs for part of the time;
#   6. the profiler check: the plugin's GPU durations against CUDA events of the same calls;
#   6b. one host (NCCL 2.30 or later; said and skipped before): the ranks share GPU 0 as one node
#      (NCCL_MULTI_RANK_GPU_ENABLE=1), a second topology: load, a short learning run, side by side;
#   7. PyTorch DDP step time: NCCL alone, the plugin's default, the learned policy frozen, interleaved twice
#      (skipped, and said so, without PyTorch);
#   7b. CUDA graphs (PyTorch): AllReduce run eagerly, captured and replayed, then eagerly again, the plugin
#      learning; results checked, and what the plugin saw (calls captured, replays) against what ran;
#   8. summary.md (bench/gpu/summarize.py).
# Usage: OUT=/path bench/gpu/run.sh [options]
#   --ranks N            ranks (processes on the one GPU; default 2)
#   --quick              small sizes, short learning, 2 repetitions
#   --steps LIST         of load,learn,compare,pairs,congestion,events,onehost,ddp,graph (default: all, which do not all
#                        fit in one 10-minute command: docs/gpu.md gives the two commands that do)
#   --learn-seconds S    learning passes stop after S seconds (default 120)
#   --repeat R           side-by-side repetitions (default 4) and pairs repetitions (R, at least 6)
#   --actions LIST       the swept actions (default: 12 of ring, tree and PAT with LL and Simple; for pairs
#                        10, one per channel count NCCL runs here: 1 and 2)
#   --warm-policy DIR    the policies saved there by an earlier run: learning starts from them; without
#                        the learn step, compare, pairs and ddp run them frozen
#   --warm-from-replay   the same from a policy learned first in the simulator on this testbed's replayed
#                        measurements (2 ranks)
#   --budget S           seconds for the whole run (default 540); steps that do not fit are cut short or
#                        skipped, and say so
#   --no-mps             let the ranks' kernels time-share the GPU (no MPS)
#   --learn-trace        keep the plugin's per-call traces of the learning run in $OUT/learn-trace (every
#                        call's span and host stamps on each rank: what the learner was given)
#        bench/gpu/run.sh --dry-run   (no GPU: builds everything, checks the scripts, and runs the same
#                                      topology through the NCCL emulator instead)
set -uo pipefail
cd "$(dirname "$0")/../.."
ranks=2
quick=0
dry=0
steps=load,learn,compare,pairs,congestion,events,onehost,ddp,graph
learn_seconds=
repeat=
actions_option=
warm_policy=
warm_from_replay=0
budget=540
use_mps=1
learn_trace=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --dry-run) dry=1; shift ;;
    --steps) steps=$2; shift 2 ;;
    --learn-seconds) learn_seconds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --actions) actions_option=$2; shift 2 ;;
    --warm-policy) warm_policy=$2; shift 2 ;;
    --warm-from-replay) warm_from_replay=1; shift ;;
    --budget) budget=$2; shift 2 ;;
    --no-mps) use_mps=0; shift ;;
    --learn-trace) learn_trace=1; shift ;;
    *) echo "usage: OUT=DIR bench/gpu/run.sh [--ranks N] [--quick] [--steps LIST] [--learn-seconds S] [--repeat R]" \
            "[--actions LIST] [--warm-policy DIR | --warm-from-replay] [--budget S] [--no-mps] [--learn-trace] [--dry-run]" >&2; exit 2 ;;
  esac
done
if [ "$warm_from_replay" = 1 ] && [ -n "$warm_policy" ]; then
  echo "run.sh: --warm-policy and --warm-from-replay are two starting policies; give one" >&2
  exit 2
fi
OUT=${OUT:-/tmp/dynamiccl-gpu}
mkdir -p "$OUT"
started=$(date +%s)
summary="$OUT/summary.md"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
elapsed() { echo $(( $(date +%s) - started )); }

# ---- 1. versions and builds ----
cuda_home=${CUDA_HOME:-/usr/local/cuda}
export PATH="$PATH:/usr/local/nvidia/bin"
nccl_home=${NCCL_HOME:-}
# The NCCL that PyTorch loads (its DDP step runs on it; its folder has include/nccl.h beside lib/), else
# the nvidia.nccl package's, else CUDA's.
torch_nccl=$(python3 -c '
import re, torch
for line in open("/proc/self/maps"):
    found = re.search(r"(/\S*/libnccl\.so[.0-9]*)$", line.strip())
    if found:
        print(found.group(1))
        break' 2>/dev/null || true)
if [ -z "$nccl_home" ] && [ -n "$torch_nccl" ]; then
  candidate=$(dirname "$(dirname "$torch_nccl")")
  [ -f "$candidate/include/nccl.h" ] && nccl_home=$candidate
fi
if [ -z "$nccl_home" ]; then
  nccl_home=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null ||
              python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
fi
[ -n "$nccl_home" ] && [ -f "$nccl_home/include/nccl.h" ] || nccl_home=$cuda_home
nccl_lib=$nccl_home/lib
[ -d "$nccl_lib" ] || nccl_lib=$nccl_home/lib64
# The commit, and whether the tree that ran had changes beyond it (a run's results are often committed
# with the change they measured). The GPU machine's copy of the tree may carry older git metadata than
# its files (runs 13-14 named the checkout's base commit): the sources' digest names the tree itself.
tree_state=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- 2>/dev/null || tree_state="$tree_state plus uncommitted changes"
sources=$(tools/source_digest.sh 2>/dev/null) || sources=unknown
say "# DynamICCL GPU run ($(date -u +%Y-%m-%dT%H:%MZ), commit $tree_state, sources $sources)"
say ""
say "- NCCL headers and library: $nccl_home (nccl.h says $(grep -E '^#define NCCL_(MAJOR|MINOR|PATCH)' "$nccl_home/include/nccl.h" | awk '{printf "%s%s", sep, $3; sep="."}'))"
if [ $dry -eq 0 ]; then
  say "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  say "- PyTorch: $(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1 | tail -1) (its libnccl: ${torch_nccl:-not found})"
  if [ -n "$torch_nccl" ] && [ "$(realpath "$torch_nccl")" != "$(realpath -m "$nccl_lib/libnccl.so.2")" ]; then
    say "- WARNING: collbench uses $nccl_lib/libnccl.so.2, not the NCCL PyTorch loads: the DDP step and collbench run different NCCLs"
  fi
fi
if ! make -s -j"$(nproc)" plugin build/dccl build/bench/bench_trigger_trace >/dev/null; then
  [ -f build/libnccl-tuner-dynamiccl.so ] || { say "plugin build failed"; exit 1; }
  say "- make failed or is missing here: using the plugin in build/ (carried, or built before)"
fi
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
  python3 -c "import ast; [ast.parse(open('bench/gpu/' + f).read()) for f in ('ddp_step.py', 'graph_check.py', 'graph_traces.py', 'spawn_ranks.py', 'summarize.py')]" ||
    { say "a Python script does not parse"; exit 1; }
  build/gpu/collbench --mode none --max 4K > "$OUT/dry-collbench.txt" 2>&1
  say "- collbench without a GPU: $(tail -1 "$OUT/dry-collbench.txt")"
  export DYNAMICCL_COORD=127.0.0.1:$((20000 + RANDOM % 20000)) # four "nodes": coordination over TCP
  # learn saves its policy, which frozen then runs: rank 0 loads it, the other "nodes" follow its table.
  for policy in default learn frozen; do
    build/dccl run --profile sockets-1gpu-4ranks --workload sweep --policy "$policy" --ranks 4 --steady 0.25 \
      --policy-file "$OUT/dry-policy.bin" > "$OUT/dry-$policy.txt" 2>&1 || { say "emulator run ($policy) failed"; exit 1; }
    say "- emulator, $policy: $(grep -E '^  all ' "$OUT/dry-$policy.txt" | awk '{print "x NCCL", $(NF-1), "x oracle", $NF}'); $(grep 'rank agreement' "$OUT/dry-$policy.txt" | sed 's/^ *//')"
  done
  python3 bench/gpu/summarize.py "$OUT" > "$OUT/dry-summary.md" || { say "summarize.py failed"; exit 1; }
  python3 bench/gpu/summarize.py --self-test > "$OUT/dry-self-test.txt" 2>&1 || { say "summarize.py --self-test failed"; exit 1; }
  # The pairs step's tables (A||B lines) on the same topology: the ranks must still agree on every call.
  printf 'allreduce,0,-1,ring/simple/ch=1||nccl\nallgather,0,-1,ring/ll||nccl\nreducescatter,0,-1,nccl||nccl\n' > "$OUT/dry-pairs.table"
  build/dccl run --profile sockets-1gpu-4ranks --workload sweep --policy fixed --table "$OUT/dry-pairs.table" --ranks 4 \
    > "$OUT/dry-pairs.txt" 2>&1 || { say "emulator run (pairs table) failed"; exit 1; }
  say "- emulator, pairs table (A||B lines): $(grep 'rank agreement' "$OUT/dry-pairs.txt" | sed 's/^ *//')"
  python3 bench/gpu/summarize.py docs/results/gpu/4-side-by-side-r10-warm > "$OUT/dry-run4-summary.md" ||
    { say "summarize.py failed on the committed run 4"; exit 1; }
  say "- $(tail -1 "$OUT/dry-self-test.txt"); the committed run 4 summarized again"
  graph_run=docs/results/gpu/11-graph-configs
  python3 bench/gpu/graph_traces.py "$graph_run/fixed-trace-0.csv" "$graph_run/fixed-trace-1.csv" \
    "$graph_run/fixed-alternate.log" > "$OUT/dry-graph-traces.txt" || { say "graph_traces.py failed on the committed run 11"; exit 1; }
  say "- graph_traces.py on the committed run 11: $(head -1 "$OUT/dry-graph-traces.txt")"
  say "dry run complete ($(elapsed) s): the GPU steps were not run"
  exit 0
fi

max=64M
learn_seconds_option=$learn_seconds repeat_option=$repeat
learn_seconds=${learn_seconds:-120}  # learning passes stop after this, then the reported pass
repeat=${repeat:-4}                 # repetitions of the side-by-side comparison
iterations=10
if [ $quick -eq 1 ]; then
  max=1M; iterations=5
  [ -z "$learn_seconds_option" ] && learn_seconds=20
  [ -z "$repeat_option" ] && repeat=2
fi
# Pairs need 6 repetitions or more: with fewer, no interval on the median reaches 90% coverage, so no
# verdict could say "below NCCL".
pairs_repeat=$repeat
[ "$pairs_repeat" -lt 6 ] && pairs_repeat=6
# (the budget: the device allows 600 s per command)
left() { echo $(( budget - $(date +%s) + started )); }
wanted() { [[ ",$steps," == *",$1,"* ]]; }
# The NCCL's version code (e.g. 22809), as collbench finds it; 0 when it cannot tell.
nccl_version_code() {
  local code
  code=$(build/gpu/collbench --nccl-version 2> /dev/null)
  case $code in '' | *[!0-9]*) code=0 ;; esac
  echo "$code"
}
# One collbench run, killed (with its rank processes: timeout signals the whole group) at $1 seconds or
# when the run's budget (less 20 s for the summary) is spent, whichever comes first.
bench() {
  local limit=$1; shift
  local remaining=$(( $(left) - 20 ))
  [ "$remaining" -lt "$limit" ] && limit=$remaining
  [ "$limit" -lt 5 ] && { echo "collbench $*: skipped, out of time" >&2; return 1; }
  # NCCL's warnings at least (the plugin's too: a rank waiting for rank 0 says so), unless a step asks for more.
  timeout "$limit" env NCCL_DEBUG="${NCCL_DEBUG:-WARN}" \
    build/gpu/collbench --ranks "$ranks" --plugin "$plugin" --iterations "$iterations" "$@"
}
step() { say "- $1 ($(elapsed) s)"; }
# The plugin's load check: a short default-policy run with NCCL's INFO lines into $1/load.log, and those
# lines that say what NCCL loaded under the summary's heading $2. Further arguments go to collbench.
load_check() {
  local dir=$1 heading=$2; shift 2
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV,PROFILE bench 60 --mode default --max 64K --iterations 3 "$@" \
    --out "$dir/load-check.csv" > "$dir/load.log" 2>&1
  say ""
  say "## $heading"
  say '```'
  grep -E "DynamICCL|TUNER|Tuner|PROFILER|Profiler|NCCL version|nNodes" "$dir/load.log" | head -16 | tee -a "$summary" > /dev/null
  say '```'
}
# Rows of a collbench CSV (its header left out; 0 when there is none), and those whose results were wrong.
csv_rows() { awk 'NR > 1' "$1" 2> /dev/null | wc -l; }
wrong_rows() { awk -F, 'NR > 1 && $9 == 0' "$1" 2> /dev/null | wc -l; }

# ---- 1b. MPS: without it the ranks' kernels time-share the GPU in slices of milliseconds, and every
# collective up to several MiB takes one slice (about 4.5 ms on the H100 here), whatever the action.
# With MPS their kernels run side by side and the timings are NCCL's own. --no-mps: without.
mps=0
if [ "$use_mps" = 1 ] && command -v nvidia-cuda-mps-control > /dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/dynamiccl-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dynamiccl-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  # A daemon left by an earlier run that was killed would take the ranks in: stop it first.
  echo quit | nvidia-cuda-mps-control > /dev/null 2>&1 && sleep 1
  if nvidia-cuda-mps-control -d; then
    trap 'echo quit | nvidia-cuda-mps-control' EXIT
    if bench 60 --mode none --max 64K --iterations 3 --out "$OUT/mps-probe.csv" > "$OUT/mps-probe.log" 2>&1; then
      mps=1
    else
      echo quit | nvidia-cuda-mps-control; trap - EXIT; sleep 1
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      say "- MPS started but NCCL failed under it ($(tail -1 "$OUT/mps-probe.log")): running time-sliced"
    fi
  else
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    say "- nvidia-cuda-mps-control -d failed: running time-sliced"
  fi
fi
[ $mps -eq 1 ] && say "- MPS on: the ranks' kernels run side by side on the GPU" ||
  say "- MPS off: the ranks' kernels time-share the GPU"

# ---- 2. the plugin loads ----
if wanted load; then
  load_check "$OUT" "The plugin loads"
  say ""
  step "load check done"
fi

# ---- 3. learning online (every pass recorded); the policy is saved at the end ----
export DYNAMICCL_POLICY_DIR="$OUT/policy"
# --warm-from-replay: a policy learned in the simulator on this testbed's replayed measurements
# (bench/replay_policy.sh: every action's latency per size from run 4, what each leaves behind its
# kernel from run 9), with this NCCL's ABIs, so that its fingerprint is the one the plugin computes here:
# learning starts from it and goes on where the GPU disagrees; without the learn step, compare, pairs and
# ddp run it frozen.
if [ "$warm_from_replay" = 1 ]; then
  nccl_code=$(nccl_version_code)
  release=$((nccl_code / 10000)).$((nccl_code / 100 % 100))
  warm_policy=$OUT/replay-policy
  rm -rf "$warm_policy"
  if [ "$ranks" != 2 ]; then
    say "- --warm-from-replay: the replay is of 2 ranks, not $ranks; no warm start"
    warm_policy=
  elif bench/replay_policy.sh build/dccl "$warm_policy" "$release" > "$OUT/replay-learn.txt" 2>&1; then
    say "- policy learned on the replay (build/dccl run, NCCL $release's ABIs): $(grep -m1 'steady state' "$OUT/replay-learn.txt" | sed 's/^ *//')"
  else
    say "- --warm-from-replay: the simulator's run failed ($(tail -1 "$OUT/replay-learn.txt")); no warm start"
    warm_policy=
  fi
fi
# --warm-policy: a folder of policies saved by an earlier run. Learning starts from them; without the
# learn step, they are the learned policy that compare, pairs and ddp run frozen.
if [ -n "$warm_policy" ] && [ "$(realpath -m "$warm_policy")" != "$(realpath -m "$DYNAMICCL_POLICY_DIR")" ]; then
  rm -rf "$DYNAMICCL_POLICY_DIR"; mkdir -p "$DYNAMICCL_POLICY_DIR"
  if cp "$warm_policy"/*.bin "$DYNAMICCL_POLICY_DIR"/; then
    say "- policy from $warm_policy: $(ls "$DYNAMICCL_POLICY_DIR" | tr '\n' ' ')"
  else
    say "- --warm-policy $warm_policy: no policy file (*.bin) there"
  fi
elif [ -z "$warm_policy" ] && wanted learn; then
  rm -rf "$DYNAMICCL_POLICY_DIR"; mkdir -p "$DYNAMICCL_POLICY_DIR"
fi
if wanted learn; then
  rm -rf "$OUT/learn-trace" # a folder of an earlier run would be summarized as this one's
  trace_option=()
  [ "$learn_trace" = 1 ] && trace_option=(--trace-dir "$OUT/learn-trace")
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING bench $((learn_seconds + 60)) --mode learn --max "$max" --rounds 500 \
    --seconds "$learn_seconds" ${trace_option[@]+"${trace_option[@]}"} --out "$OUT/learn.csv" > "$OUT/learn.log" 2>&1
  # What the plugin itself said: a policy of another topology or NCCL ABI is not loaded.
  [ -n "$warm_policy" ] && say "- the plugin's word on the warm start: $(grep -m1 -oE 'warm start from .*|ignoring the saved policy.*|no saved policy at .*' "$OUT/learn.log" || echo 'no warm-start line: learned from scratch')"
  step "learning done: $(grep -m1 -o 'learner: .*' "$OUT/learn.log")"
  # Agent-1 fed rank 0's trace offline as the learner fed it (docs/agents.md): its onsets beside the plugin's
  # count above tell whether the bench still plays the learner (a warm run's plugin began from the saved LSTM).
  if [ "$learn_trace" = 1 ] && [ -x build/bench/bench_trigger_trace ] && [ -f "$OUT/learn-trace/trace-0.csv" ]; then
    replayed=$(build/bench/bench_trigger_trace --seeds 8 --trials 0 "$OUT/learn-trace/trace-0.csv" 2>&1 |
      grep -m1 -E '^lstm\+cusum|too few|not a DynamICCL trace' | tr -s ' ')
    say "- Agent-1 replayed on rank 0's learning trace (build/bench/bench_trigger_trace, 8 seeds): ${replayed:-no output}"
  fi
fi

# ---- 4. side by side, each entry in its own set of processes, $repeat times in shuffled orders: NCCL
# alone, the plugin's default policy (its overhead), the learned policy frozen, and every action of the
# sweep forced through a fixed table (the real best per size). Tree runs only AllReduce, PAT only
# AllGather and ReduceScatter; LL128 is left out (NCCL does not run it over sockets). ----
if wanted compare; then
  # Run 4's twelve: NCCL runs at most 2 channels here (docs/results/gpu), so a few requests for more are
  # kept as probes of that cap and the other duplicates are left out; 15 entries x 10 repetitions took
  # 368 s in run 4, within this step's 400.
  actions="ring/ll/ch=1,ring/ll/ch=2,ring/ll/ch=8,ring/simple/ch=1,ring/simple/ch=2,ring/simple/ch=4"
  actions="$actions,ring/simple/ch=16,tree/ll/ch=1,tree/simple/ch=2,tree/simple/ch=8,pat/simple/ch=1,pat/simple/ch=4"
  actions=${actions_option:-$actions}
  entries="none,default,$actions"
  ls "$DYNAMICCL_POLICY_DIR"/*.bin > /dev/null 2>&1 && entries="none,default,frozen,$actions"
  rm -rf "$OUT/compare-trace"
  bench 400 --mode rotate --entries "$entries" --repeat "$repeat" --max "$max" --trace-dir "$OUT/compare-trace" \
    --out "$OUT/compare.csv" 2>> "$OUT/runs.log"
  step "side-by-side runs done: $(csv_rows "$OUT/compare.csv") rows, $(wrong_rows "$OUT/compare.csv") wrong results"
  python3 bench/gpu/summarize.py --write-executed "$OUT" 2>> "$OUT/runs.log"
fi
unset DYNAMICCL_POLICY_DIR

# ---- 4b. pairs: each action, and the learned policy's choices, against NCCL's own choice inside one set
# of processes, in alternating blocks of four calls (a fixed table's A||B lines: a size's calls 0-3 of every
# eight run A, calls 4-7 NCCL's choice; collbench leaves the first call of each block out, as it may pay for
# the other action's leftover work); `nccl` against itself measures the method's own noise. The learned choices come from
# the frozen entry's trace of step 4, else from a frozen run of their own. ----
if wanted pairs; then
  pair_actions="ring/ll/ch=1,ring/ll/ch=2,ring/simple/ch=1,ring/simple/ch=2,tree/ll/ch=1,tree/ll/ch=2"
  pair_actions="$pair_actions,tree/simple/ch=1,tree/simple/ch=2,pat/simple/ch=1,pat/simple/ch=2"
  pair_actions=${actions_option:-$pair_actions}
  entries="nccl,$pair_actions"
  frozen_trace=$OUT/compare-trace/frozen
  if ls "$OUT/policy"/*.bin > /dev/null 2>&1 && [ ! -f "$frozen_trace/trace-0.csv" ]; then
    rm -rf "$OUT/frozen-trace"
    DYNAMICCL_POLICY_DIR="$OUT/policy" bench 60 --mode frozen --max "$max" --trace-dir "$OUT/frozen-trace" \
      --out "$OUT/frozen.csv" 2>> "$OUT/runs.log"
    frozen_trace=$OUT/frozen-trace
  fi
  if [ -f "$frozen_trace/trace-0.csv" ] &&
     python3 bench/gpu/summarize.py --write-learned-table "$frozen_trace" "$OUT/learned.table" 2>> "$OUT/runs.log"; then
    entries="nccl,@$OUT/learned.table,$pair_actions"
  else
    say "- pairs: no learned policy to compare (run the learn step first)"
  fi
  rm -rf "$OUT/pairs-trace"
  bench 300 --mode pairs --entries "$entries" --repeat "$pairs_repeat" --max "$max" --iterations 21 \
    --trace-dir "$OUT/pairs-trace" --out "$OUT/pairs.csv" 2>> "$OUT/runs.log"
  step "pairs done: $(csv_rows "$OUT/pairs.csv") rows, $(wrong_rows "$OUT/pairs.csv") wrong results"
fi

# ---- 5. congestion: learning while the loopback is loaded for part of the run ----
if wanted congestion && [ "$(left)" -gt 150 ]; then
  (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING bench 75 --mode learn --max 16M --rounds 500 --seconds 45 --collectives allreduce \
     --out "$OUT/congestion.csv" > "$OUT/congestion.log" 2>&1) &
  learner=$!
  sleep 15
  date +%s.%N > "$OUT/congestion-load.txt"        # the load's start and stop, Unix time
  build/gpu/loopback_load 4 15 2>> "$OUT/runs.log"
  date +%s.%N >> "$OUT/congestion-load.txt"
  wait $learner
  step "congestion run: $(grep -o '[0-9]* congestion onsets, [0-9]* recoveries' "$OUT/congestion.log" | head -1) on rank 0"
elif wanted congestion; then
  say "- congestion run skipped: out of time"
fi

# ---- 6. profiler check ----
if wanted events; then
  rm -rf "$OUT/event-trace"
  bench 60 --mode default --max 16M --event-check --trace-dir "$OUT/event-trace" --out "$OUT/event-check.csv" \
    2>> "$OUT/runs.log"
  step "profiler check done"
fi

# ---- 6b. one host: the ranks as one host sharing GPU 0 (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL 2.30 or
# later), NCCL's intra-node transports: a second topology. The plugin loads there, learns briefly into a
# policy folder of its own, and NCCL alone, the default policy, the learned policy frozen and intra-node
# actions (LL128 included; PAT is for one rank per node) run side by side, verified, in $OUT/onehost/
# with its own summary. ----
if wanted onehost; then
  nccl_code=$(nccl_version_code)
  if [ "$nccl_code" -lt 23000 ]; then
    say "- one-host topology skipped: NCCL_MULTI_RANK_GPU_ENABLE needs NCCL 2.30 or later (this NCCL's version code: $nccl_code)"
  elif [ "$(left)" -lt 120 ]; then
    say "- one-host topology skipped: out of time"
  else
    one=$OUT/onehost
    rm -rf "$one"; mkdir -p "$one/policy"
    load_check "$one" "One host: the ranks share GPU 0 (NCCL_MULTI_RANK_GPU_ENABLE=1)" --one-host
    one_learn=$(( learn_seconds < 60 ? learn_seconds : 60 ))
    DYNAMICCL_POLICY_DIR="$one/policy" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING bench $((one_learn + 60)) --one-host \
      --mode learn --max "$max" --rounds 500 --seconds "$one_learn" --out "$one/learn.csv" > "$one/learn.log" 2>&1
    one_actions="ring/ll/ch=1,ring/ll/ch=4,ring/ll128/ch=2,ring/ll128/ch=8,ring/simple/ch=1,ring/simple/ch=4"
    one_actions="$one_actions,tree/ll/ch=2,tree/simple/ch=2"
    one_actions=${actions_option:-$one_actions}
    entries="none,default,$one_actions"
    ls "$one/policy"/*.bin > /dev/null 2>&1 && entries="none,default,frozen,$one_actions"
    DYNAMICCL_POLICY_DIR="$one/policy" bench 300 --one-host --mode rotate --entries "$entries" --repeat "$repeat" \
      --max "$max" --trace-dir "$one/compare-trace" --out "$one/compare.csv" 2>> "$OUT/runs.log"
    python3 bench/gpu/summarize.py --write-executed "$one" 2>> "$OUT/runs.log"
    python3 bench/gpu/summarize.py "$one" > "$one/summary.md" 2>> "$OUT/runs.log"
    learned=$(grep -m1 -o 'learner: [0-9]* measurements' "$one/learn.log" | sed 's/learner: //')
    step "one-host runs done: ${learned:-no} learned, $(csv_rows "$one/compare.csv") side-by-side rows, $(wrong_rows "$one/compare.csv") wrong results (onehost/summary.md)"
  fi
fi

# ---- 7. PyTorch DDP, NCCL alone / plugin default / learned policy frozen, interleaved twice ----
if wanted ddp && ! python3 -c 'import torch' > /dev/null 2>&1; then
  say "- DDP runs skipped: PyTorch not found"
elif wanted ddp && [ "$(left)" -gt 120 ]; then
  # Each run gets 50 s at most, and never more than the budget has left (less 20 s for the summary).
  ddp() {
    local limit=$(( $(left) - 20 ))
    [ "$limit" -gt 50 ] && limit=50
    [ "$limit" -lt 10 ] && { echo "ddp $1: skipped, out of time" >&2; return 0; }
    timeout "$limit" python3 bench/gpu/ddp_step.py --ranks "$ranks" --label "$1" 2>> "$OUT/ddp.log" | tail -1
  }
  : > "$OUT/ddp.csv"
  # The learned policy, frozen, where step 3 saved one (the DDP communicator has the same topology
  # fingerprint); else the plugin learning during the short run (saving nothing).
  learned=learn policy_dir=
  ls "$OUT/policy"/*.bin > /dev/null 2>&1 && learned=frozen policy_dir=$OUT/policy
  for rep in 1 2; do
    [ "$(left)" -gt 90 ] || break
    (unset NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN; MASTER_PORT=$((29500 + rep * 10)) ddp nccl-alone) >> "$OUT/ddp.csv"
    (export NCCL_TUNER_PLUGIN=$plugin NCCL_PROFILER_PLUGIN=$plugin DYNAMICCL_MODE=default MASTER_PORT=$((29501 + rep * 10))
     ddp plugin-default) >> "$OUT/ddp.csv"
    (export NCCL_TUNER_PLUGIN=$plugin NCCL_PROFILER_PLUGIN=$plugin DYNAMICCL_MODE=$learned DYNAMICCL_POLICY_DIR="$policy_dir"
     MASTER_PORT=$((29502 + rep * 10)); ddp plugin-$learned) >> "$OUT/ddp.csv"
  done
  say ""
  say "## PyTorch DDP step (columns: ddp, label, ranks, width, depth, median step ms, parameters identical)"
  say '```'
  tee -a "$summary" < "$OUT/ddp.csv" > /dev/null
  say '```'
elif wanted ddp; then
  say "- DDP runs skipped: out of time"
fi

# ---- 7b. CUDA graphs: what the plugin saw of a captured graph and its replays, results checked ----
if wanted graph && ! python3 -c 'import torch' > /dev/null 2>&1; then
  say "- CUDA graph check skipped: PyTorch not found"
elif wanted graph && [ "$(left)" -gt 60 ]; then
  limit=$(( $(left) - 20 ))
  [ "$limit" -gt 60 ] && limit=60
  (export NCCL_TUNER_PLUGIN=$plugin NCCL_PROFILER_PLUGIN=$plugin DYNAMICCL_MODE=learn DYNAMICCL_POLICY_DIR="$OUT/graph-policy" \
     NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING MASTER_PORT=29561
   timeout "$limit" python3 bench/gpu/graph_check.py --ranks "$ranks" --label learn) > "$OUT/graph.log" 2>&1
  # The closing line (captured, replays, correct); the lines before it are each rank's progress.
  ran=$(grep '^graph_check captured=' "$OUT/graph.log" | tail -1)
  [ -n "$ran" ] || ran="graph_check failed ($(grep '^graph_check rank' "$OUT/graph.log" | tail -1); graph.log)"
  # Rank 0's finalize lines: the tuner's count of captured calls, the profiler's of replays.
  captured=$(sed -n 's/.*rank 0: .* \([0-9]*\) captured into CUDA graphs.*/\1/p' "$OUT/graph.log" | head -1)
  replays=$(sed -n 's/.*rank 0: .* \([0-9]*\) CUDA-graph replays.*/\1/p' "$OUT/graph.log" | head -1)
  say ""
  say "## CUDA graphs (AllReduce at 5 sizes, captured once and replayed 40 times; the plugin learning)"
  say "- ran: $ran"
  say "- the plugin on rank 0: ${captured:-no} calls captured into CUDA graphs (the exploited action), ${replays:-no} CUDA-graph replays not measured (expected: 5 and 200)"
elif wanted graph; then
  say "- CUDA graph check skipped: out of time"
fi

# ---- 8. summary ----
say ""
python3 bench/gpu/summarize.py "$OUT" >> "$summary" 2>> "$OUT/runs.log"
say ""
say "total: $(elapsed) s"
cat "$summary"
