#!/usr/bin/env bash
# tests/test_gpu_scripts.sh: bench/gpu's collbench, run.sh and summarize.py without a GPU, on the mock CUDA
# runtime and NCCL (bench/gpu/mock/): collbench in its modes (results verified, CSV names as summarize.py
# reads them, a wrong result caught), then run.sh end to end with short steps and its summary.
# Usage: tests/test_gpu_scripts.sh BUILD_DIR HAVE_CUDA (the Makefile installs BUILD_DIR/tests/test_gpu_scripts,
# which runs this with its build). Skips (0 passed, 0 failed) without python3; without the CUDA headers and
# nccl.h, runs summarize.py's self-test only.
# run.sh builds and uses build/ of the source tree (plugin, collbench): `make test` has built it first; its
# build/gpu/collbench and loopback_load, which run.sh rebuilds against the mock, are put back afterwards.
set -u
export LC_ALL=C # sorted lists compare as written here
build=$1
have_cuda=${2:-}
source_dir=$(cd "$(dirname "$0")/.." && pwd)

skip() {
  echo "test_gpu_scripts: skipped: $1"
  echo "0 passed, 0 failed"
  exit 0
}
command -v python3 > /dev/null || skip "python3 not found"

source "$source_dir/tests/shell_harness.sh"

# Runs bench/gpu/SCRIPT --self-test: fails unless it exits 0 with its closing line of a pass.
passes_its_self_test() {
  local script=$1 log
  log=$(mktemp "${TMPDIR:-/tmp}/test_gpu_scripts.self-test.XXXXXX")
  python3 "$source_dir/bench/gpu/$script" --self-test > "$log" 2>&1 || { fail "$script --self-test: exit status $?"; show "$log"; }
  grep -Eq "^$script self-test: [0-9]+ passed, 0 failed\$" "$log" || fail "$script: no closing line of a pass"
  rm -f "$log"
}

# summarize.py's own checks (its copy of the leftover rule against tests/leftover_sequence.txt among them).
begin summarize_self_test
passes_its_self_test summarize.py
end

# replay_profile.py's estimates of the noise's structure (per call, a run's level, an alternation) on a
# made-up trace of known noise.
begin replay_profile_self_test
passes_its_self_test replay_profile.py
end

# tools/round_noise.py on run 15's learning trace prints what the replay profiles took from it (AllReduce 64 KiB's
# level, AllGather 4 KiB's ring/LL alternation) beside its two checks of the level's model.
begin round_noise_reads_run_15
round_log=$(mktemp "${TMPDIR:-/tmp}/test_gpu_scripts.round-noise.XXXXXX")
python3 "$source_dir/tools/round_noise.py" "$source_dir/docs/results/gpu/15-cold-learn-trace-pairs-r6" > "$round_log" 2>&1 ||
  { fail "round_noise.py: exit status $?"; show "$round_log"; }
level=$(awk '$1 == "noise.level_at" && $3 == "allreduce" && $4 == 65536 { print $5 }' \
  "$source_dir/scenarios/profiles/h100-sockets-2ranks-pairs.profile")
awk -v level="$level" '$1 == "allreduce" && $2 == 65536 && $4 == level && $5 == "tree/simple" { found = 1 }
  $1 == "allgather" && $2 == 4096 && $5 == "ring/ll" && $6 + 0 > 0.6 && $7 ~ /^[-+]/ { alternates = 1 }
  END { exit !(found && alternates) }' "$round_log" ||
  { fail "round_noise.py does not print the profile's level ($level) at AllReduce 64 KiB and ring/LL's alternation at AllGather 4 KiB"
    show "$round_log"; }
rm -f "$round_log"
end

# The PyTorch scripts run only on the GPU machine (no PyTorch here): they must at least compile.
begin pytorch_scripts_compile
for script in ddp_step.py graph_check.py spawn_ranks.py; do
  python3 -c "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')" "$source_dir/bench/gpu/$script" ||
    fail "$script does not compile"
done
end

# Runs bench/gpu/replay_profile.py with the arguments given, then the profile NAME it writes into $replay_dir
# and run 15's learning trace (the noise's structure by size): fails unless scenarios/profiles/NAME.profile is
# what it writes.
written_as_committed() {
  local name=$1
  shift
  (cd "$source_dir" && python3 bench/gpu/replay_profile.py "$@" "$replay_dir/$name.profile" \
    docs/results/gpu/15-cold-learn-trace-pairs-r6/learn-trace/trace-0.csv.gz) \
    > "$replay_dir/log" 2>&1 || { fail "replay_profile.py for $name: exit status $?"; show "$replay_dir/log"; }
  cmp -s "$replay_dir/$name.profile" "$source_dir/scenarios/profiles/$name.profile" ||
    { fail "scenarios/profiles/$name.profile is not what replay_profile.py writes"
      diff "$replay_dir/$name.profile" "$source_dir/scenarios/profiles/$name.profile" > "$replay_dir/diff"
      show "$replay_dir/diff"; }
}

# The replay profile is its base (NCCL's side and the leftover lines, pasted from summarize.py) plus run 4's
# measurements and run 15's noise (per call, runs' levels, alternation) by size, as bench/gpu/replay_profile.py
# writes it: an edit to one profile alone fails here.
begin replay_profile_is_its_base_and_run_4
replay_dir=$(mktemp -d "${TMPDIR:-/tmp}/test_gpu_scripts.replay.XXXXXX")
written_as_committed h100-sockets-2ranks-replay docs/results/gpu/4-side-by-side-r10-warm \
  scenarios/profiles/h100-sockets-2ranks.profile
rm -rf "$replay_dir"
end

# The pairs replay is the same with the ratios between actions of the pairs runs 8-19 (--pairs), as
# bench/gpu/replay_profile.py writes it; NCCL's own choice keeps run 4's latency at every size.
begin pairs_profile_is_its_base_run_4_and_the_pairs
replay_dir=$(mktemp -d "${TMPDIR:-/tmp}/test_gpu_scripts.pairs.XXXXXX")
pairs_runs=()
for run in 8-pairs-blocks-r8 10-leftover-learn-pairs-r6 13-first-calls-learn-pairs-r6 14-warm-learn-trace-pairs-r6 \
  15-cold-learn-trace-pairs-r6 16-warm-learn-trace-pairs-r6 17-pairs-again-r4 18-cold-learn-trace-pairs-r6 \
  19-warm-learn-trace-pairs-r8; do
  pairs_runs+=(--pairs "docs/results/gpu/$run")
done
written_as_committed h100-sockets-2ranks-pairs "${pairs_runs[@]}" docs/results/gpu/4-side-by-side-r10-warm \
  scenarios/profiles/h100-sockets-2ranks.profile
grep -q "(153 from the pairs)" "$replay_dir/log" || { fail "not 153 points from the pairs"; show "$replay_dir/log"; }
# NCCL's own choice (ring/Simple on 2 channels at AllReduce 1 MiB) is run 4's; ring/LL on 1 channel at 16 KiB,
# the pairs' best there, is ahead of tree/LL, which run 4's side-by-side medians had 1% ahead of it.
point() { awk -v c="$1" -v b="$2" -v a="$3" '$1 == "measured" && $3 == c && $4 == b && $5 == a { print $6 }' "$4"; }
replayed=$source_dir/scenarios/profiles/h100-sockets-2ranks-replay.profile
paired=$replay_dir/h100-sockets-2ranks-pairs.profile
[ "$(point allreduce 1048576 ring/simple/ch=2 "$paired")" = "$(point allreduce 1048576 ring/simple/ch=2 "$replayed")" ] ||
  fail "NCCL's own choice at AllReduce 1 MiB moved"
awk -v ring="$(point allreduce 16384 ring/ll/ch=1 "$paired")" -v tree="$(point allreduce 16384 tree/ll/ch=1 "$paired")" \
  'BEGIN { exit !(ring * 1.02 < tree) }' || fail "AllReduce 16 KiB: ring/LL on 1 channel not 2% ahead of tree/LL on 1"
rm -rf "$replay_dir"
end
if [ "$have_cuda" != 1 ]; then
  echo "test_gpu_scripts: the rest skipped: no CUDA runtime header or nccl.h here (HAVE_CUDA empty): collbench is not built" >&2
  finish
fi

mock=$build/gpu/mock
plugin=$build/libnccl-tuner-dynamiccl.so
for needed in "$build/gpu/collbench" "$mock/lib/libnccl.so.2" "$plugin"; do
  [ -e "$needed" ] && continue
  echo "test_gpu_scripts: $needed is missing (make all first)" >&2
  failed=1
  finish
done

# Nothing from the caller's environment steers NCCL, the plugin or the mock; a hung rank fails in 30 s.
unset $(env | sed -n 's/^\(\(NCCL\|DYNAMICCL\)_[A-Za-z0-9_]*\)=.*/\1/p') MAKEFLAGS MAKELEVEL MFLAGS
export DYNAMICCL_MOCK_TIMEOUT_S=30
export LD_LIBRARY_PATH="$mock/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# A sanitized plugin (SANITIZE=1 builds) needs ASan's runtime first in the process that loads it; collbench
# and the mocks are built without sanitizers.
asan_runtime=$(ldd "$plugin" 2> /dev/null | awk '/libasan/ { print $3 }')

scratch=$(mktemp -d "${TMPDIR:-/tmp}/test_gpu_scripts.XXXXXX")
saved_tools=$scratch/saved-tools
mkdir -p "$saved_tools"
for tool in collbench loopback_load; do
  [ -f "$source_dir/build/gpu/$tool" ] && cp -p "$source_dir/build/gpu/$tool" "$saved_tools/"
done
restore_tools() {
  for tool in collbench loopback_load; do
    if [ -f "$saved_tools/$tool" ]; then cp -p "$saved_tools/$tool" "$source_dir/build/gpu/$tool"
    else rm -f "$source_dir/build/gpu/$tool"; fi
  done
  rm -rf "$scratch"
}
trap restore_tools EXIT

collbench() { # NCCL's (and the plugin's) warnings in the log, unless a check asks for more
  timeout 120 env LD_PRELOAD="$asan_runtime" NCCL_DEBUG="${NCCL_DEBUG:-WARN}" "$build/gpu/collbench" --ranks 2 \
    --plugin "$plugin" "$@"
}
# collbench NAME ARGS...: one run writing $scratch/NAME.csv, its output (NCCL's log too) in NAME.log; a
# failure is reported.
run_collbench() {
  local name=$1
  shift
  collbench "$@" --out "$scratch/$name.csv" > "$scratch/$name.log" 2>&1 ||
    { fail "exit status $?"; show "$scratch/$name.log"; }
}
small="--min 1K --max 64K --factor 8 --warmup 1 --iterations 3" # 1, 8 and 64 KiB

# ---- what the checks read: collbench's CSVs, the plugin's traces, summary.md's tables ----
rows() { awk 'NR > 1' "$1" | wc -l; }
# Rows of a CSV (header left out) where the awk condition $2 holds.
count_rows() { awk -F, "NR > 1 && ($2)" "$1" | wc -l; }
# The distinct values of column $2, on one line, sorted.
column_values() { awk -F, -v column="$2" 'NR > 1 { print $column }' "$1" | sort -u | tr '\n' ' '; }
# Rows there, and every result verified.
expect_verified() {
  [ "$(rows "$1")" -gt 0 ] || fail "$1 has no rows"
  [ "$(count_rows "$1" '$9 != 1')" = 0 ] || fail "$(count_rows "$1" '$9 != 1') rows of $1 have verified=0"
}
# Every traced call of collective $2 ran algorithm/protocol/channels $3 (the plugin's traces in folder $1).
expect_traced() {
  local got
  got=$(awk -F, -v coll="$2" 'FNR > 1 && $3 == coll { print $5 "/" $6 "/ch=" $7 }' "$1"/trace-*.csv 2> /dev/null |
        sort -u | tr '\n' ' ')
  [ "$got" = "$3 " ] || fail "$1: $2 ran '$got', not '$3'"
}
# The rows of the table under the heading that starts with $2 in summary $1, up to the next heading.
table_rows() {
  awk -v heading="## $2" 'index($0, heading) == 1 { inside = 1; next } /^## / { inside = 0 }
                          inside && /^\| (allreduce|allgather|reducescatter) \|/' "$1"
}
pairs_heading="Inside one set of processes"
# Rows of the pairs table whose column $2 (1: collective, 2: bytes, 3: noise, 4: best action, 5: best / NCCL,
# 6: learned / NCCL) matches the regular expression $3.
count_pairs_rows() {
  table_rows "$1" "$pairs_heading" | awk -F'|' -v column="$(($2 + 1))" -v re="$3" '$column ~ re' | wc -l
}

# ---- collbench on the mock ----
begin collbench_none_exact_on_the_wall_clock # no plugin; 4 MiB moves through the 1 MiB staging slots in pieces
run_collbench none --mode none --min 1K --max 4M --factor 64 --warmup 1 --iterations 3
grep -q "^mock NCCL 2.28.9" "$scratch/none.log" || fail "not the mock NCCL"
[ "$(rows "$scratch/none.csv")" = 9 ] || fail "$(rows "$scratch/none.csv") rows, not 3 collectives x 3 sizes"
expect_verified "$scratch/none.csv"
[ "$(count_rows "$scratch/none.csv" '$6 <= 0')" = 0 ] || fail "a time of 0"
# Without a warm-up call there is no result to check before the timed calls: refused, not reported wrong.
collbench --mode none --warmup 0 --out "$scratch/no-warmup.csv" 2> /dev/null
[ $? = 2 ] || fail "--warmup 0 was not refused as a usage error"
end

export DYNAMICCL_MOCK_CLOCK=model # from here on, timings that repeat exactly

begin collbench_default_loads_the_plugin_as_nccl_does
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV,PROFILE run_collbench default --mode default $small
for line in "NCCL version 2.28.9+mock" "TUNER/Plugin: Using $plugin (v5)" "PROFILER/Plugin: Using $plugin (v5)" \
            "DynamICCL: tuner v5 attached: comm [0-9a-f]* rank 1, 2 ranks on 2 nodes, mode default" \
            "DynamICCL: tuner paired with profiler context of rank 0"; do
  grep -q "$line" "$scratch/default.log" || fail "no line '$line' in the log"
done
! grep -q "NCCL WARN" "$scratch/default.log" || fail "warnings: $(grep -m 2 "NCCL WARN" "$scratch/default.log")"
expect_verified "$scratch/default.csv"
end

begin collbench_fixed_runs_the_table
printf '%s\n' allreduce,0,-1,tree/simple/ch=2 allgather,0,-1,ring/ll/ch=1 reducescatter,0,-1,pat/simple/ch=1 \
  > "$scratch/fixed.table"
run_collbench fixed --mode fixed --table "$scratch/fixed.table" $small --trace-dir "$scratch/fixed-trace"
expect_verified "$scratch/fixed.csv"
expect_traced "$scratch/fixed-trace" allreduce tree/simple/ch=2
expect_traced "$scratch/fixed-trace" allgather ring/ll/ch=1
expect_traced "$scratch/fixed-trace" reducescatter pat/simple/ch=1
end

begin collbench_sweep_names_actions_and_marks_what_nccl_ignored # the mock has no LL128 (sockets), as the GPU runs
run_collbench sweep --mode sweep --actions ring/ll/ch=2,tree/simple/ch=2,pat/simple/ch=1,ring/ll128/ch=1 $small \
  --trace-dir "$scratch/sweep-trace"
expect_verified "$scratch/sweep.csv"
[ "$(column_values "$scratch/sweep.csv" 2)" = "pat/simple/ch=1 ring/ll/ch=2 ring/ll128/ch=1 tree/simple/ch=2 " ] ||
  fail "actions in the CSV: $(column_values "$scratch/sweep.csv" 2)"
[ "$(count_rows "$scratch/sweep.csv" '$2 ~ /^tree/ && $3 != "allreduce" || $2 ~ /^pat/ && $3 == "allreduce"')" = 0 ] ||
  fail "tree ran other than AllReduce, or PAT AllReduce"
[ "$(count_rows "$scratch/sweep.csv" '($2 ~ /ll128/) != ($10 == 0)')" = 0 ] ||
  fail "applied is not 0 for exactly the LL128 rows: $(column_values "$scratch/sweep.csv" 10)"
expect_traced "$scratch/sweep-trace/tree-simple-ch=2" allreduce tree/simple/ch=2
end

begin collbench_learn_saves_a_policy # the ranks coordinate over TCP
DYNAMICCL_POLICY_DIR=$scratch/warm-policy run_collbench learn --mode learn --rounds 3 $small
expect_verified "$scratch/learn.csv"
[ "$(column_values "$scratch/learn.csv" 1)" = "learn learn-round " ] ||
  fail "modes: $(column_values "$scratch/learn.csv" 1)"
ls "$scratch/warm-policy"/*.bin > /dev/null 2>&1 || fail "no policy saved in $scratch/warm-policy"
end

begin collbench_frozen_ranks_follow_rank_0 # the two "nodes" run rank 0's policy, found through the registry
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING DYNAMICCL_POLICY_DIR=$scratch/warm-policy \
  run_collbench frozen --mode frozen $small --trace-dir "$scratch/frozen-trace"
expect_verified "$scratch/frozen.csv"
for line in "DynamICCL: coordination: rank 0 leads comm [0-9a-f]* (2 ranks, tcp through the registry, its saved policy, frozen, 0 rule pins)" \
            "DynamICCL: coordination: rank 1 follows rank 0"; do
  grep -q "$line" "$scratch/frozen.log" || fail "no line '$line' in the log"
done
! grep -q "NCCL WARN" "$scratch/frozen.log" || fail "warnings: $(grep -m 2 "NCCL WARN" "$scratch/frozen.log")"
# Both ranks ran the same action on every call (the traces' rows, rank column aside, are the same).
[ "$(rows "$scratch/frozen-trace/trace-1.csv")" -gt 0 ] || fail "rank 1 traced nothing"
diff <(cut -d, -f2-7 "$scratch/frozen-trace/trace-0.csv") <(cut -d, -f2-7 "$scratch/frozen-trace/trace-1.csv") \
  > /dev/null || fail "the ranks' traces differ"
end

begin collbench_one_host_shares_the_gpu_from_2_30 # NCCL_MULTI_RANK_GPU_ENABLE: one node, coordination on this host
collbench --one-host --mode none $small --out "$scratch/one-host-2.28.csv" > "$scratch/one-host-2.28.log" 2>&1
[ $? = 3 ] && grep -q "needs NCCL 2.30 or later" "$scratch/one-host-2.28.log" || fail "NCCL 2.28 was not refused"
[ "$(DYNAMICCL_MOCK_NCCL=2.30 "$build/gpu/collbench" --nccl-version 2> /dev/null)" = 23007 ] || fail "--nccl-version"
# (PAT is for one rank per node: not in this table.)
printf '%s\n' allreduce,0,-1,tree/simple/ch=2 allgather,0,-1,ring/ll/ch=1 reducescatter,0,-1,ring/simple/ch=1 \
  > "$scratch/one-host.table"
DYNAMICCL_MOCK_NCCL=2.30 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING run_collbench one-host --one-host --mode fixed \
  --table "$scratch/one-host.table" $small --trace-dir "$scratch/one-host-trace"
expect_verified "$scratch/one-host.csv"
for line in "NCCL version 2.30.7+mock" "TUNER/Plugin: Using $plugin (v6)" "nRanks 2 nNodes 1" \
            "DynamICCL: coordination: rank 0 leads comm [0-9a-f]* (2 ranks, unix sockets, its fixed table, frozen, 0 rule pins)"; do
  grep -q "$line" "$scratch/one-host.log" || fail "no line '$line' in the log"
done
! grep -q "NCCL WARN" "$scratch/one-host.log" || fail "warnings: $(grep -m 2 "NCCL WARN" "$scratch/one-host.log")"
expect_traced "$scratch/one-host-trace" allreduce tree/simple/ch=2
expect_traced "$scratch/one-host-trace" allgather ring/ll/ch=1
expect_traced "$scratch/one-host-trace" reducescatter ring/simple/ch=1
end

begin collbench_pairs_and_their_summary # the summary must name the swept actions (they keep their / in the CSV)
run_collbench pairs --mode pairs --entries nccl,ring/simple/ch=2,tree/simple/ch=2 --repeat 2 $small \
  --trace-dir "$scratch/pairs-trace"
expect_verified "$scratch/pairs.csv"
[ "$(column_values "$scratch/pairs.csv" 2)" = \
  "nccl nccl@nccl nccl@ring/simple/ch=2 nccl@tree/simple/ch=2 ring/simple/ch=2 tree/simple/ch=2 " ] ||
  fail "actions in the CSV: $(column_values "$scratch/pairs.csv" 2)"
[ "$(count_rows "$scratch/pairs.csv" '$2 ~ /\// && $2 !~ /@/ && $10 != 1')" = 0 ] || fail "an action not applied"
# A size's calls ran the action in blocks of four (calls 0-3 of every eight), and NCCL's own choice
# (another action at 1 KiB) the blocks between (calls 4-7).
alternation=$(awk -F, 'FNR > 1 && $3 == "allreduce" && $4 == 1024 { print int((k++ % 8) / 4) ":" $5 "/" $6 "/ch=" $7 }' \
  "$scratch/pairs-trace/ring-simple-ch=2/trace-0.csv" | sort -u | tr '\n' ' ')
[[ "$alternation" == "0:ring/simple/ch=2 1:"* && "$alternation" != *"1:ring/simple/ch=2"* ]] ||
  fail "allreduce 1 KiB calls (block:action): $alternation"
mkdir -p "$scratch/pairs-summary"
cp "$scratch/pairs.csv" "$scratch/pairs-summary/"
python3 "$source_dir/bench/gpu/summarize.py" "$scratch/pairs-summary" > "$scratch/pairs-summary.md" 2>&1 ||
  { fail "summarize.py: exit status $?"; show "$scratch/pairs-summary.md"; }
[ "$(count_pairs_rows "$scratch/pairs-summary.md" 1 .)" = 9 ] ||
  fail "$(count_pairs_rows "$scratch/pairs-summary.md" 1 .) rows in the pairs table, not 3 collectives x 3 sizes"
[ "$(count_pairs_rows "$scratch/pairs-summary.md" 4 /)" -gt 0 ] ||
  { fail "the pairs summary names no action as the best anywhere"; show "$scratch/pairs-summary.md" 14; }
[ "$(count_pairs_rows "$scratch/pairs-summary.md" 6 '[0-9]')" = 0 ] ||
  fail "the pairs summary shows a learned policy, and none was run"
end

begin collbench_catches_a_wrong_result # DYNAMICCL_MOCK_CORRUPT=1: one element of rank 0's every result is off
DYNAMICCL_MOCK_CORRUPT=1 collbench --mode none --min 1K --max 8K --factor 8 --warmup 1 --iterations 3 \
  --out "$scratch/corrupt.csv" 2> "$scratch/corrupt.log" && fail "collbench exited 0 on wrong results"
[ "$(rows "$scratch/corrupt.csv")" = 6 ] || fail "$(rows "$scratch/corrupt.csv") rows, not 6"
[ "$(count_rows "$scratch/corrupt.csv" '$9 != 0')" = 0 ] || fail "rows with verified=1 despite the corruption"
grep -q "results were WRONG" "$scratch/corrupt.log" || fail "no word of the wrong results"
end

begin collbench_kills_a_hung_rank # DYNAMICCL_MOCK_HANG_RANK=1: rank 1 never returns, rank 0 gives up waiting for it
began=$(date +%s)
DYNAMICCL_MOCK_HANG_RANK=1 DYNAMICCL_MOCK_TIMEOUT_S=2 timeout 20 "$build/gpu/collbench" --ranks 2 --mode none --min 1K \
  --max 1K --warmup 1 --iterations 3 --grace 1 --out "$scratch/hung.csv" 2> "$scratch/hung.log"
status=$?
[ "$status" = 1 ] || fail "exit status $status, not 1 (124: the run waited for the hung rank)"
[ $(( $(date +%s) - began )) -lt 20 ] || fail "took $(( $(date +%s) - began )) s"
grep -q "collbench: ncclCommInitRank.*; rank 1 killed, still running 1 s after" "$scratch/hung.log" ||
  { fail "no word of the killed rank"; show "$scratch/hung.log"; }
end

# ---- run.sh end to end, on the mock (NCCL_HOME: the mock's lib/ and the real nccl.h), with short steps. It
# runs build/'s plain plugin whatever the build: a sanitized build leaves it to the plain build's test. ----
if [ -n "$asan_runtime" ]; then
  echo "test_gpu_scripts: run_sh_end_to_end left to the plain build (run.sh uses build/ whatever the build)" >&2
  finish
fi
begin run_sh_end_to_end
steps=load,learn,compare,pairs,events,onehost
torch=1
python3 -c 'import torch' > /dev/null 2>&1 || { torch=0; steps=$steps,ddp,graph; } # ddp, graph must then skip, and say so
(cd "$source_dir" && OUT=$scratch/run NCCL_HOME=$mock timeout 280 bench/gpu/run.sh --quick --no-mps --steps "$steps" \
   --learn-seconds 1 --repeat 2 --actions tree/simple/ch=2 --warm-policy "$scratch/warm-policy" --budget 270) \
  > "$scratch/run.log" 2>&1 || { fail "exit status $?"; show "$scratch/run.log"; }
summary=$scratch/run/summary.md
for line in "NCCL headers and library: $mock (nccl.h says 2.28" "NCCL version 2.28.9+mock" \
            "DynamICCL: tuner v5 attached" "policy from $scratch/warm-policy: policy-" \
            "the plugin's word on the warm start: warm start from" "learning done: learner: [1-9][0-9]* measurements" \
            "side-by-side runs done: [1-9][0-9]* rows, 0 wrong results" \
            "pairs done: [1-9][0-9]* rows, 0 wrong results" "profiler check done" \
            "one-host topology skipped: NCCL_MULTI_RANK_GPU_ENABLE needs NCCL 2.30 or later (this NCCL's version code: 22809)" \
            "^total: [0-9]* s"; do
  grep -q -- "$line" "$summary" 2> /dev/null || fail "summary.md has no line '$line'"
done
# The header names the tree by its sources' digest, the one tools/source_digest.sh gives here.
digest=$("$source_dir/tools/source_digest.sh" "$source_dir")
head -n 1 "$summary" | grep -q "^# DynamICCL GPU run (.*, sources $digest)$" ||
  fail "the summary's header does not name the sources $digest: $(head -n 1 "$summary")"
[ "$torch" = 1 ] || grep -q "DDP runs skipped: PyTorch not found" "$summary" || fail "no word that DDP was skipped"
[ "$torch" = 1 ] || grep -q "CUDA graph check skipped: PyTorch not found" "$summary" ||
  fail "no word that the CUDA graph check was skipped"
[ "$(column_values "$scratch/run/compare.csv" 1)" = "default frozen none sweep " ] ||
  fail "compare entries: $(column_values "$scratch/run/compare.csv" 1)"
grep -q '^pairs,learned,' "$scratch/run/pairs.csv" && grep -q '^pairs,nccl@learned,' "$scratch/run/pairs.csv" ||
  fail "pairs.csv has no learned entry (from the frozen trace's learned.table)"
# The pairs table names a best action somewhere and the learned policy everywhere, the side-by-side table
# the learned policy's choices, and on the mock's clock the profiler's durations are the CUDA events' exactly.
[ "$(count_pairs_rows "$summary" 4 /)" -gt 0 ] || fail "the pairs summary names no action as the best anywhere"
[ "$(count_pairs_rows "$summary" 6 '^ *-')" = 0 ] || fail "the pairs summary lacks the learned policy somewhere"
table_rows "$summary" "DynamICCL on real NCCL, side by side" |
  awk -F'|' '$10 ~ /\// { found = 1 } END { exit !found }' ||
  fail "the side-by-side summary shows no learned policy's choice"
ratios=$(table_rows "$summary" "Profiler check" | awk -F'|' '{ print $6 }' | sort | uniq -c | tr -s ' \n' ' ')
[[ "$ratios" =~ ^\ ?[0-9]+\ 1\.000\ ?$ ]] || fail "profiler / CUDA events ratios: '$ratios' (not all 1.000)"
[ "$current_failed" = 0 ] || { show "$summary" 40; show "$scratch/run/runs.log" 40; } # runs.log: collbench's errors
end

# With --learn-trace, Agent-1 is also fed rank 0's trace offline (bench_trigger_trace) and its onsets reported.
begin run_sh_warms_up_on_the_replay # --warm-from-replay: the simulator learns on the replayed GPU first
(cd "$source_dir" && OUT=$scratch/run-replay NCCL_HOME=$mock timeout 120 bench/gpu/run.sh --quick --no-mps \
   --steps learn --learn-seconds 1 --warm-from-replay --learn-trace --budget 100) > "$scratch/run-replay.log" 2>&1 ||
  { fail "exit status $?"; show "$scratch/run-replay.log"; }
summary=$scratch/run-replay/summary.md
for line in "policy learned on the replay (build/dccl run, NCCL 2.28's ABIs): steady state" \
            "policy from $scratch/run-replay/replay-policy: policy-[0-9a-f]\{16\}\.bin" \
            "the plugin's word on the warm start: warm start from $scratch/run-replay/policy/policy-" \
            "Agent-1 replayed on rank 0's learning trace (build/bench/bench_trigger_trace, 8 seeds): lstm+cusum onsets [0-9]"; do
  grep -q -- "$line" "$summary" 2> /dev/null || fail "summary.md has no line '$line'"
done
[ "$current_failed" = 0 ] || { show "$summary" 20; show "$scratch/run-replay/learn.log" 20; }
end

begin run_sh_one_host_on_2_30 # the second topology's step where the NCCL has it
(cd "$source_dir" && DYNAMICCL_MOCK_NCCL=2.30 OUT=$scratch/run-one NCCL_HOME=$mock timeout 200 bench/gpu/run.sh --quick \
   --no-mps --steps onehost --learn-seconds 1 --repeat 2 --actions tree/simple/ch=2,ring/ll128/ch=2 --budget 190) \
  > "$scratch/run-one.log" 2>&1 || { fail "exit status $?"; show "$scratch/run-one.log"; }
summary=$scratch/run-one/summary.md
for line in "## One host: the ranks share GPU 0" "nRanks 2 nNodes 1" \
            "one-host runs done: [1-9][0-9]* measurements learned, [1-9][0-9]* side-by-side rows, 0 wrong results"; do
  grep -q -- "$line" "$summary" 2> /dev/null || fail "summary.md has no line '$line'"
done
[ "$(column_values "$scratch/run-one/onehost/compare.csv" 1)" = "default frozen none sweep " ] ||
  fail "one-host compare entries: $(column_values "$scratch/run-one/onehost/compare.csv" 1)"
grep -q "^|" "$scratch/run-one/onehost/summary.md" || fail "onehost/summary.md has no table"
[ "$current_failed" = 0 ] || { show "$summary" 40; show "$scratch/run-one/runs.log" 40; } # runs.log: collbench's errors
end
finish
