#!/usr/bin/env bash
# tests/test_run_all.sh: tests/run_all.sh, the runner of `make test`, on stand-in test binaries: it sums
# their closing lines, reports a failure, a crash, a hang and a runner lost, runs binaries side by side but
# never two of one name at once, and gives each its own coordination secret.
# Usage: tests/test_run_all.sh (the Makefile installs BUILD_DIR/tests/test_run_all, which runs this).
set -u
export LC_ALL=C
unset DYNAMICCL_COORD_SECRET DYNAMICCL_TEST_JOBS DYNAMICCL_TEST_TIMEOUT_S # make test's runner sets the first for this one
source_dir=$(cd "$(dirname "$0")/.." && pwd)
source "$source_dir/tests/shell_harness.sh"
run_all=$source_dir/tests/run_all.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/test_run_all.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A stand-in test binary BUILD/tests/NAME that notes its start and end in $work/spans, sleeps SECONDS, says
# its secret on standard error (its log) and prints CLOSING as its last line, then exits with STATUS.
stand_in() {
  local build=$1 name=$2 seconds=$3 closing=$4 status=$5
  mkdir -p "$work/$build/tests"
  cat > "$work/$build/tests/$name" << EOF
#!/bin/sh
echo "$build/$name start \$(date +%s.%N)" >> "$work/spans"
sleep $seconds
echo "secret \$DYNAMICCL_COORD_SECRET" >&2
echo "$build/$name end \$(date +%s.%N)" >> "$work/spans"
echo "$closing"
exit $status
EOF
  chmod +x "$work/$build/tests/$name"
}

begin run_all_sums_the_closing_lines_side_by_side
for build in one two; do
  for name in test_a test_b test_c; do stand_in "$build" "$name" 0.3 "2 passed, 0 failed" 0; done
done
stand_in one test_a 1 "2 passed, 0 failed" 0 # two/test_a, next in the queue, waits for it
: > "$work/spans"
(cd "$work" && DYNAMICCL_TEST_JOBS=3 "$run_all" one two) > "$work/out.txt" 2>&1 || fail "exit status $? with every binary passing"
tail -n 1 "$work/out.txt" | grep -qx "total: 12 passed, 0 failed" || { fail "not the total"; show "$work/out.txt"; }
[ "$(grep -c ': 2 passed, 0 failed (' "$work/out.txt")" -eq 6 ] || { fail "not one line a binary"; show "$work/out.txt"; }
# Never two binaries of one name at once; some of different names at once (6 binaries in 3 slots).
awk '{ split($1, p, "/"); name = p[2]
       if ($2 == "start") { start[$1] = $3; names[$1] = name } else { stop[$1] = $3 } }
     END { for (a in start) for (b in start) if (a < b) {
             overlap = start[a] < stop[b] && start[b] < stop[a]
             if (overlap && names[a] == names[b]) print "same name at once: " a " " b
             if (overlap && names[a] != names[b]) side_by_side++ }
           if (side_by_side == 0) print "no two binaries ran at once" }' "$work/spans" > "$work/overlaps.txt"
[ -s "$work/overlaps.txt" ] && { fail "$(cat "$work/overlaps.txt")"; show "$work/spans" 20; }
secrets=$(cat "$work"/one/tests/*.log "$work"/two/tests/*.log | sort -u | wc -l)
[ "$secrets" -eq 6 ] || fail "$secrets distinct coordination secrets among 6 binaries"
(cd "$work" && DYNAMICCL_COORD_SECRET=mine "$run_all" one) > /dev/null 2>&1
[ "$(cat "$work"/one/tests/*.log | sort -u)" = "secret mine" ] || fail "a secret set by the caller not kept: $(cat "$work"/one/tests/*.log)"
end

begin run_all_reports_failures_crashes_and_hangs
stand_in three test_fails 0 "3 passed, 1 failed" 1
echo 'echo "  FAIL test_something (x.c:1): 1 == 2" >&2' > "$work/fail_line"
sed -i "2r $work/fail_line" "$work/three/tests/test_fails"
stand_in three test_crashes 0 "not a closing line" 3
stand_in three test_hangs 30 "1 passed, 0 failed" 0
stand_in three test_passes 0 "5 passed, 0 failed" 0
start=$(date +%s)
if (cd "$work" && DYNAMICCL_TEST_TIMEOUT_S=1 "$run_all" three) > "$work/bad.txt" 2>&1; then fail "exit status 0 with a failure"; fi
[ $(($(date +%s) - start)) -lt 20 ] || fail "the hung binary was not stopped"
tail -n 1 "$work/bad.txt" | grep -qx "total: 8 passed, 3 failed" || { fail "not the total"; show "$work/bad.txt"; }
grep -q "^three/test_fails: 3 passed, 1 failed" "$work/bad.txt" || { fail "no line for the failing binary"; show "$work/bad.txt"; }
grep -q "^ *FAIL test_something (x.c:1): 1 == 2$" "$work/bad.txt" || { fail "the failure's line not shown"; show "$work/bad.txt"; }
grep -q "^three/test_crashes: crashed or printed no summary (exit 3)" "$work/bad.txt" || { fail "the crash not reported"; show "$work/bad.txt"; }
grep -q "^three/test_hangs: timed out after 1 s" "$work/bad.txt" || { fail "the hang not reported"; show "$work/bad.txt"; }
# A binary whose runner dies (here the binary kills it: its parent is timeout, then the shell reading its
# output, then run_one) is a failure, and the others' lines still come.
mkdir -p "$work/four/tests"
cat > "$work/four/tests/test_loses_its_runner" << 'EOF2'
#!/bin/sh
parent() { awk '{ print $4 }' "/proc/$1/stat"; }
kill -9 "$(parent "$(parent "$PPID")")"
echo "1 passed, 0 failed"
EOF2
chmod +x "$work/four/tests/test_loses_its_runner"
stand_in four test_passes 0.5 "4 passed, 0 failed" 0
if (cd "$work" && timeout 60 "$run_all" four) > "$work/lost.txt" 2>&1; then fail "exit status 0 with a runner lost"; fi
grep -q "^four/test_loses_its_runner: its runner ended without results" "$work/lost.txt" || { fail "the lost runner not reported"; show "$work/lost.txt"; }
tail -n 1 "$work/lost.txt" | grep -qx "total: 4 passed, 1 failed" || { fail "not the total with a runner lost"; show "$work/lost.txt"; }
(cd "$work" && DYNAMICCL_TEST_JOBS=x "$run_all" one) > "$work/jobs.txt" 2>&1
grep -q "DYNAMICCL_TEST_JOBS='x' is not a positive number; running one test at a time" "$work/jobs.txt" ||
  { fail "a bad DYNAMICCL_TEST_JOBS not reported"; show "$work/jobs.txt"; }
tail -n 1 "$work/jobs.txt" | grep -qx "total: 6 passed, 0 failed" || { fail "not the total with one at a time"; show "$work/jobs.txt"; }
end

finish
