#!/usr/bin/env bash
# tests/test_cli.sh: the dccl command's outputs that people read: the GPU runs' workloads as the simulator
# plays them, `dccl inspect --arms` (measured, untried and invalid actions), its refusal of a truncated
# policy, bench/bench_replay.sh's frozen sizes after gpu-learn, its jobs in a row and its start from a saved
# policy, bench/bench_disagreeing_warm_start.sh's summary and its slow streams by size,
# bench/bench_trigger_trace's replay of a GPU learning trace, and tools/replay_misses.py's kinds of the
# frozen sizes that miss the best.
# Usage: tests/test_cli.sh BUILD_DIR (the Makefile installs BUILD_DIR/tests/test_cli, which runs this).
set -u
export LC_ALL=C
build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
source "$source_dir/tests/shell_harness.sh"
dccl=$build/dccl
work=$(mktemp -d "${TMPDIR:-/tmp}/test_cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$source_dir" # dccl finds scenarios/ from here

# One pass of gpu-learn is what collbench's learning step plays a round: every other power of two from 1 KiB to
# 64 MiB, 13 calls each (64 MiB: 6), AllReduce, then AllGather, then ReduceScatter; gpu-pairs the same
# sizes, 13 calls each.
begin workloads_play_the_gpu_runs_sizes
for spec in gpu-learn:330:6 gpu-pairs:351:13; do
  IFS=: read -r workload calls big_calls <<< "$spec"
  "$dccl" run --profile h100-sockets-2ranks-replay --workload $workload --policy default --plugin none --ranks 1 \
    --calls "$calls" --call-log "$work/$workload.csv" --quiet > "$work/$workload.log" 2>&1 ||
    { fail "$workload: dccl run exit status $?"; show "$work/$workload.log"; }
  awk -F, 'NR > 1 { print $2, $3 }' "$work/$workload.csv" | uniq -c > "$work/$workload.runs"
  runs=$(wc -l < "$work/$workload.runs")
  [ "$runs" -eq 27 ] || fail "$workload: $runs runs of one size in a pass, not 27"
  sizes=$(awk '{ print $3 }' "$work/$workload.runs" | sort -nu | tr '\n' ' ')
  [ "$sizes" = "1024 4096 16384 65536 262144 1048576 4194304 16777216 67108864 " ] || fail "$workload: sizes $sizes"
  first=$(head -n 1 "$work/$workload.runs" | awk '{ print $1, $2, $3 }')
  [ "$first" = "13 allreduce 1024" ] || fail "$workload: the pass begins with '$first'"
  big=$(awk '$3 == 67108864 { print $1 }' "$work/$workload.runs" | sort -u | tr '\n' ' ')
  [ "$big" = "$big_calls " ] || fail "$workload: 64 MiB runs of $big calls, not $big_calls"
done
end

# A policy learned briefly on the replay: --arms lists what was measured; --all adds the actions never
# measured (no samples, the DQN's prediction) without changing the measured rows.
begin inspect_lists_measured_and_untried_actions
DYNAMICCL_COST=leftover "$dccl" run --profile h100-sockets-2ranks-replay --workload gpu-learn --policy learn --ranks 1 \
  --calls 8000 --host-ahead --policy-file "$work/policy.bin" --quiet > "$work/learn.log" 2>&1 ||
  { fail "learning run: exit status $?"; show "$work/learn.log"; }
"$dccl" inspect "$work/policy.bin" --arms allreduce:1M > "$work/arms.txt" 2>&1 || fail "inspect --arms: exit status $?"
"$dccl" inspect "$work/policy.bin" --arms allreduce:1M --all > "$work/all.txt" 2>&1 || fail "inspect --arms --all: exit status $?"
calm() { sed -n '/allreduce 1M pipe 0 reg 0, calm context/,/^$/p' "$1"; }
calm "$work/arms.txt" > "$work/arms.calm"
calm "$work/all.txt" > "$work/all.calm"
grep -q "NCCL's choice [0-9]* samples" "$work/arms.calm" || { fail "no calm context of AllReduce 1 MiB"; show "$work/arms.txt"; }
grep -q "(untried)" "$work/arms.calm" && fail "--arms without --all lists untried actions"
measured=$(grep -Ec '^ +[a-z_]+/[a-z0-9]+(/[a-z0-9=]+)* +[0-9]+\.[0-9] +[0-9]+\.[0-9]{2} ' "$work/arms.calm")
[ "$measured" -ge 2 ] || { fail "$measured measured actions listed (NCCL's own and another at least)"; show "$work/arms.txt" 30; }
# The channels NCCL ran each measured action on (the replay's NCCL runs ring/Simple at 1 MiB on 2).
grep -Eq '^ +ring/simple +[0-9]+\.[0-9] .* 2 ch$' "$work/arms.calm" || { fail "no 'ran on' column for NCCL's own pair"; show "$work/arms.txt" 30; }
grep -v "(untried)" "$work/all.calm" | cmp -s - "$work/arms.calm" || fail "--all changed the measured rows"
untried=$(grep -Ec '^ +[a-z_]+/[a-z0-9]+(/[a-z0-9=]+)* +- +- +- +- +[0-9]+\.[0-9]{3}x +(-|[0-9]+ ch) \(untried\)$' "$work/all.calm")
[ "$untried" -ge 10 ] || { fail "$untried untried actions listed with the DQN's prediction"; show "$work/all.txt" 40; }
grep -E '^ +[^ ]+ +0\.0 +1\.00 ' "$work/all.calm" && fail "an unmeasured action shows a mean (not '-')"
end

begin inspect_refuses_a_truncated_policy
head -c 200 "$work/policy.bin" > "$work/truncated.bin"
if "$dccl" inspect "$work/truncated.bin" > "$work/truncated.txt" 2>&1; then fail "a truncated policy was read"; fi
grep -qi "truncated\|short\|corrupt" "$work/truncated.txt" || { fail "no reason given"; show "$work/truncated.txt"; }
end

# bench/gpu/summarize.py on a folder holding only a learning trace (a simulator's run, traced as the GPU's learning
# runs are) prints the learning trace's sections: the runs of one action list the replay's AllReduce 16 KiB.
begin summarize_reads_a_simulated_learning_trace
mkdir -p "$work/simulated/learn-trace"
DYNAMICCL_COST=leftover "$dccl" run --profile h100-sockets-2ranks-replay --workload gpu-learn --policy learn --ranks 1 \
  --calls 8000 --host-ahead --trace "$work/simulated/learn-trace/trace-%r.csv" --quiet > "$work/traced.log" 2>&1 ||
  { fail "traced run: exit status $?"; show "$work/traced.log"; }
python3 bench/gpu/summarize.py "$work/simulated" > "$work/simulated.md" 2>&1 ||
  { fail "summarize.py: exit status $?"; show "$work/simulated.md"; }
for section in "Calls right after another cell's" "The learning run's calls in runs of one action" "Bursts of slow calls"; do
  grep -qF "## $section" "$work/simulated.md" || { fail "no section '$section'"; show "$work/simulated.md"; }
done
sed -n "/^## The learning run's calls in runs of one action/,/^## /p" "$work/simulated.md" |
  grep -Eq '^\| allreduce \| 16384 \| [a-z]+/[a-z0-9]+/ch=[0-9]+ \| [0-9]+ \| ([0-9]+\.[0-9] \([0-9]+\)|-) / ' ||
  { fail "no AllReduce 16 KiB row in the runs of one action"; show "$work/simulated.md" 60; }
end

# After gpu-learn the frozen policy runs gpu-pairs: no interpolated size, 27 sizes a seed. The misses on NCCL
# are listed by size, and BENCH_REPLAY_KEEP keeps each seed's reports and policy.
begin bench_replay_freezes_on_the_sizes_learned
BENCH_REPLAY_KEEP="$work/kept" bench/bench_replay.sh "$build" 1 2.28 gpu-learn leftover > "$work/replay.txt" 2>&1 ||
  { fail "bench_replay.sh: exit status $?"; show "$work/replay.txt"; }
grep -q "over 1 seeds x 27 sizes" "$work/replay.txt" || { fail "not 27 sizes"; show "$work/replay.txt"; }
grep -q "at interpolated sizes: 0$" "$work/replay.txt" || { fail "interpolated sizes counted"; show "$work/replay.txt"; }
grep -A1 "^Streams > 2% slower than NCCL while learning" "$work/replay.txt" | grep -Eq "^  (none|[a-z]+ +[0-9]+[KMG]: [0-9]+, seed 1 )" ||
  { fail "no streams by size"; show "$work/replay.txt"; }
grep -A1 "^Frozen sizes below 0.97 of NCCL" "$work/replay.txt" | grep -Eq "^  (none|[a-z]+ +[0-9]+[KMG]: [0-9]+, seed 1 )" ||
  { fail "no frozen sizes below NCCL by size"; show "$work/replay.txt"; }
for kept in learn-1.txt frozen-1.txt policy-1.bin; do
  [ -s "$work/kept/$kept" ] || fail "BENCH_REPLAY_KEEP did not keep $kept"
done
end

# tools/replay_misses.py on the kept seed: each frozen size below 0.97 of the best is of one kind. Its report doctored
# so that all 27 sizes miss: 27 kinds, one line each with --cases, and --exclude leaves one size out.
begin replay_misses_sorts_the_kept_seeds_misses
python3 tools/replay_misses.py --self-test > "$work/misses-self.txt" 2>&1 ||
  { fail "replay_misses.py --self-test: exit status $?"; show "$work/misses-self.txt"; }
grep -Eq '^replay_misses.py self-test: [0-9]+ passed, 0 failed$' "$work/misses-self.txt" || fail "no closing line of a pass"
below=$(sed -n 's/.*frozen: \([0-9]*\) sizes below 0.97 of the best.*/\1/p' "$work/replay.txt")
python3 tools/replay_misses.py "$work/kept" --dccl "$dccl" > "$work/misses.txt" 2>&1 ||
  { fail "replay_misses.py: exit status $?"; show "$work/misses.txt"; }
grep -q "^1 seeds: ${below:-none} sizes below 0.97 of the best$" "$work/misses.txt" || { fail "not the replay's ${below:-no} misses"; show "$work/misses.txt"; }
kinds() { awk '/^  (untried|misjudged|unproven)/ { n += $NF } END { print n + 0 }' "$1"; }
[ "$(kinds "$work/misses.txt")" = "${below:-none}" ] || { fail "kinds do not add up to the misses"; show "$work/misses.txt"; }
mkdir -p "$work/doctored"
cp "$work/kept/policy-1.bin" "$work/doctored/"
awk '($1 == "allgather" || $1 == "reducescatter" || $1 == "allreduce") && NF == 8 { $7 = "1.2000" } { print }' \
  "$work/kept/frozen-1.txt" > "$work/doctored/frozen-1.txt"
python3 tools/replay_misses.py "$work/doctored" --dccl "$dccl" --cases --exclude allgather:1K > "$work/doctored.txt" 2>&1 ||
  { fail "replay_misses.py: exit status $?"; show "$work/doctored.txt"; }
grep -q "^1 seeds: 26 sizes below 0.97 of the best (1 more at excluded sizes)$" "$work/doctored.txt" || { fail "not 26 and 1 excluded"; show "$work/doctored.txt"; }
[ "$(kinds "$work/doctored.txt")" = 26 ] || { fail "kinds do not add up to 26"; show "$work/doctored.txt"; }
cases=$(grep -Ec '^seed 1 [a-z]+ [0-9]+[KM]: 1\.2000 x best, (untried|misjudged|unproven)' "$work/doctored.txt")
[ "$cases" = 26 ] || { fail "$cases case lines, not 26"; show "$work/doctored.txt"; }
grep -q "^seed 1 allgather 1K:" "$work/doctored.txt" && fail "an excluded size listed"
if python3 tools/replay_misses.py "$work/none" > "$work/no-keep.txt" 2>&1; then fail "a folder without reports accepted"; fi
grep -q "no frozen-N.txt in" "$work/no-keep.txt" || { fail "no reason given"; show "$work/no-keep.txt"; }
end

# The measurements a saved policy was learned from, as `dccl inspect` gives them.
measurements_in() { "$dccl" inspect "$1" | sed -n 's/^learned from \([0-9]*\) measurements.*/\1/p'; }

# BENCH_REPLAY_JOBS=2: the second job (seed + 1000) starts warm from the first's policy, whose measurements it adds
# to (one gpu-learn job saves about 39,500); a count that is not one is refused. BENCH_REPLAY_WARM_CALLS stops the
# second job early.
begin bench_replay_learns_jobs_in_a_row
BENCH_REPLAY_JOBS=2 BENCH_REPLAY_KEEP="$work/kept2" bench/bench_replay.sh "$build" 1 2.28 gpu-learn leftover > "$work/jobs.txt" 2>&1 ||
  { fail "bench_replay.sh: exit status $?"; show "$work/jobs.txt"; }
grep -q "leftover, 2 jobs in a row ==$" "$work/jobs.txt" || { fail "no jobs in the header"; show "$work/jobs.txt"; }
grep -q "seed 1001$" "$work/kept2/learn-1.txt" || { fail "the last job's report is not the second job's"; show "$work/kept2/learn-1.txt"; }
measurements=$(measurements_in "$work/kept2/policy-1.bin")
[ "${measurements:-0}" -gt 70000 ] || fail "the policy holds ${measurements:-no} measurements, not two jobs'"
if BENCH_REPLAY_JOBS=0 bench/bench_replay.sh "$build" 1 > "$work/zero.txt" 2>&1; then fail "BENCH_REPLAY_JOBS=0 accepted"; fi
grep -q "must be a count of jobs" "$work/zero.txt" || { fail "no reason given"; show "$work/zero.txt"; }
BENCH_REPLAY_JOBS=2 BENCH_REPLAY_WARM_CALLS=20790 BENCH_REPLAY_KEEP="$work/kept3" bench/bench_replay.sh "$build" 1 2.28 gpu-learn \
  leftover > "$work/warm.txt" 2>&1 || { fail "bench_replay.sh: exit status $?"; show "$work/warm.txt"; }
grep -q "2 jobs in a row, the later ones of 20790 calls ==$" "$work/warm.txt" || { fail "no warm calls in the header"; show "$work/warm.txt"; }
grep -Eq "^  all +20790 " "$work/kept3/learn-1.txt" || { fail "the second job did not stop at 20790 calls"; show "$work/kept3/learn-1.txt"; }
if BENCH_REPLAY_WARM_CALLS=x bench/bench_replay.sh "$build" 1 > "$work/x.txt" 2>&1; then fail "BENCH_REPLAY_WARM_CALLS=x accepted"; fi
grep -q "must be a count of calls" "$work/x.txt" || { fail "no reason given"; show "$work/x.txt"; }
end

# BENCH_REPLAY_WARM_FROM: a GPU run's saved policy as every seed's start (as bench/gpu/run.sh --warm-policy).
begin bench_replay_starts_from_a_saved_policy
gpu_policy=$(ls docs/results/gpu/19-warm-learn-trace-pairs-r8/policy/policy-*.bin)
saved=$(measurements_in "$gpu_policy")
checksum=$(cksum < "$gpu_policy")
BENCH_REPLAY_WARM_FROM="$gpu_policy" BENCH_REPLAY_WARM_CALLS=2000 BENCH_REPLAY_KEEP="$work/kept4" bench/bench_replay.sh "$build" 1 \
  2.28 gpu-learn leftover > "$work/from.txt" 2>&1 || { fail "bench_replay.sh: exit status $?"; show "$work/from.txt"; }
grep -q "leftover, of 2000 calls, warm from $gpu_policy ==$" "$work/from.txt" || { fail "no warm start in the header"; show "$work/from.txt"; }
grep -Eq "^  all +2000 " "$work/kept4/learn-1.txt" || { fail "the job did not stop at 2000 calls"; show "$work/kept4/learn-1.txt"; }
measurements=$(measurements_in "$work/kept4/policy-1.bin")
[ "${measurements:-0}" -gt "$saved" ] && [ "${measurements:-0}" -le $((saved + 2000)) ] ||
  fail "the policy holds ${measurements:-no} measurements, not the $saved saved and at most 2000 more"
[ "$(cksum < "$gpu_policy")" = "$checksum" ] || fail "the committed policy was written to"
if BENCH_REPLAY_WARM_FROM="$work/none.bin" bench/bench_replay.sh "$build" 1 > "$work/none.txt" 2>&1; then
  fail "a missing policy file accepted"
fi
grep -q "must be a saved policy file" "$work/none.txt" || { fail "no reason given"; show "$work/none.txt"; }
kept=$(cksum < "$work/kept4/policy-1.bin") # keeping into the folder of the policy started from would overwrite it
if BENCH_REPLAY_WARM_FROM="$work/kept4/policy-1.bin" BENCH_REPLAY_KEEP="$work/kept4" bench/bench_replay.sh "$build" 1 2.28 \
  gpu-learn leftover > "$work/over.txt" 2>&1; then fail "keeping over the policy started from accepted"; fi
grep -q "which keeping would overwrite" "$work/over.txt" || { fail "no reason given"; show "$work/over.txt"; }
[ "$(cksum < "$work/kept4/policy-1.bin")" = "$kept" ] || fail "the policy started from was overwritten"
end

# bench_disagreeing_warm_start.sh plays test_learning's warm start on a machine that disagrees over more seeds.
begin bench_disagreeing_warm_start_sums_up_its_seeds
bench/bench_disagreeing_warm_start.sh "$build" 2 > "$work/disagree.txt" 2>&1 ||
  { fail "bench_disagreeing_warm_start.sh: exit status $?"; show "$work/disagree.txt"; }
grep -Eq "^warm start on a machine that disagrees, 2 seeds: steady state 1\.[0-9]{4} x oracle, [0-9]+ streams > 2% slower than NCCL, [0-2] seeds with a stream >= 1\.10x NCCL, worst [0-9.]+ x NCCL$" \
  "$work/disagree.txt" || { fail "not the summary line"; show "$work/disagree.txt"; }
# then the slow streams by size: "none", or one line per size whose count matches the summary's seeds at most
sed -n "/^Streams at 1.10x NCCL or slower in the warm jobs' steady state/,\$p" "$work/disagree.txt" | tail -n +2 > "$work/slow-streams.txt"
[ -s "$work/slow-streams.txt" ] || { fail "no list of the slow streams"; show "$work/disagree.txt"; }
grep -Evq "^  (none|(allgather|reducescatter|allreduce) +[0-9]+[KMG]?: [12], seed [0-9]+ \([0-9.]+\)(, [0-9]+ \([0-9.]+\))?)$" \
  "$work/slow-streams.txt" && { fail "not a list of slow streams by size"; show "$work/slow-streams.txt"; }
if bench/bench_disagreeing_warm_start.sh "$build" 0 > "$work/zero-seeds.txt" 2>&1; then fail "0 seeds accepted"; fi
grep -q "seeds must be 1 or more" "$work/zero-seeds.txt" || { fail "no reason given"; show "$work/zero-seeds.txt"; }
mkdir -p "$work/failing" # a dccl whose seed-2 runs fail: no summary over the seeds left
printf '#!/usr/bin/env bash\nfor a in "$@"; do [ "$a" = 2 ] && exit 3; done\nexec "%s" "$@"\n' "$dccl" > "$work/failing/dccl"
chmod +x "$work/failing/dccl"
if bench/bench_disagreeing_warm_start.sh "$work/failing" 2 > "$work/failing.txt" 2>&1; then fail "a failed run not reported"; fi
grep -q "1 of 2 seeds' runs failed" "$work/failing.txt" || { fail "no reason given"; show "$work/failing.txt"; }
grep -q "^warm start on a machine" "$work/failing.txt" && fail "a summary printed over the seeds left"
end

# bench_trigger_trace feeds Agent-1 the calls the learner fed it. Under the run-start rule run 15 ran (a run's first
# call left out only where launched within the larger call), it leaves out what the plugin left out on the GPU:
# the finalize line of docs/results/gpu/15-cold-learn-trace-pairs-r6/summary.md counts 6 first calls of their
# collective, datatype, algorithm and protocol, 1,605 calls right after a switch of action and 0 run starts.
begin bench_trigger_trace_leaves_out_what_the_learner_left_out
trace15=docs/results/gpu/15-cold-learn-trace-pairs-r6/learn-trace/trace-0.csv.gz
zcat "$trace15" > "$work/trace.csv" || fail "zcat $trace15: exit status $?"
"$build/bench/bench_trigger_trace" --seeds 1 --trials 0 --run-starts within "$work/trace.csv" > "$work/within.txt" 2>&1 ||
  { fail "bench_trigger_trace: exit status $?"; show "$work/within.txt"; }
grep -q "^fed 36669 calls to 27 streams; left out 6 first calls of a collective, algorithm and protocol, 1605 right after a switch of action, 0 first of a run, 0 launched after a host pause$" \
  "$work/within.txt" || { fail "not the plugin's counts"; show "$work/within.txt"; }
# The learner's rules now: the first call of each round of 13 after a larger size (126 rounds x 27 sizes, less
# the first size of each round and the first rounds, while the cells' runs are not known yet), and the call after
# collbench's check of each round's first result (its 4th: at most 126 x 27 = 3,402, less those right after a switch
# of action and the first round, while the cells' calls are not known to come back to back).
"$build/bench/bench_trigger_trace" --seeds 1 --trials 0 "$work/trace.csv" > "$work/learn.txt" 2>&1 ||
  { fail "bench_trigger_trace: exit status $?"; show "$work/learn.txt"; }
starts=$(sed -n 's/.* \([0-9]*\) first of a run, .*/\1/p' "$work/learn.txt")
[ "${starts:-0}" -ge 300 ] && [ "${starts:-0}" -le 378 ] || { fail "${starts:-no} run starts left out"; show "$work/learn.txt"; }
pauses=$(sed -n 's/.* \([0-9]*\) launched after a host pause$/\1/p' "$work/learn.txt")
[ "${pauses:-0}" -ge 2900 ] && [ "${pauses:-0}" -le 3402 ] || { fail "${pauses:-no} calls after a pause left out"; show "$work/learn.txt"; }
grep -Eq "^lstm\+cusum onsets +[0-9]+ " "$work/learn.txt" || { fail "no onset count"; show "$work/learn.txt"; }
end

begin bench_trigger_trace_refuses_what_is_not_a_trace
head -n 2000 "$work/trace.csv" | head -c -7 > "$work/cut.csv" # the last line cut mid-line, as a stopped run leaves it
"$build/bench/bench_trigger_trace" --seeds 1 --trials 0 "$work/cut.csv" > "$work/cut.txt" 2>&1 ||
  { fail "a trace cut mid-line: exit status $?"; show "$work/cut.txt"; }
grep -q "1 lines left out (cut short or unreadable)" "$work/cut.txt" || { fail "the cut line not reported"; show "$work/cut.txt"; }
grep -q ", rank 0, 1998 calls over" "$work/cut.txt" || { fail "not the 1998 whole lines"; show "$work/cut.txt"; }
printf 'seq,bytes\n1,1024\n' > "$work/other.csv"
if "$build/bench/bench_trigger_trace" "$work/other.csv" > "$work/other.txt" 2>&1; then fail "a file without a trace's columns was read"; fi
grep -q 'no column "rank" in the header: not a DynamICCL trace' "$work/other.txt" || { fail "no reason given"; show "$work/other.txt"; }
end

finish
