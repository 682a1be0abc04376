#!/usr/bin/env bash
# tests/run_all.sh: runs every test binary of the given build folders, DYNAMICCL_TEST_JOBS of them at
# a time (default: the machine's processors), and prints one closing "N passed, N failed" line summing
# their own closing lines. Exits non-zero if any test failed or any binary crashed.
#
# Two binaries of one name (build/tests/test_coord and build-asan/tests/test_coord) never run at the
# same time: they would play the same communicators. Every binary gets its own DYNAMICCL_COORD_SECRET
# (unless one is set already), so that the plugin's Unix sockets, named from the communicator and the
# secret, differ between tests that emulate the same communicator at the same time.
set -u
jobs=${DYNAMICCL_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]* | 0) echo "DYNAMICCL_TEST_JOBS='$jobs' is not a positive number; running one test at a time"; jobs=1 ;; esac
timeout_s=${DYNAMICCL_TEST_TIMEOUT_S:-600}
results=$(mktemp -d "${TMPDIR:-/tmp}/run_all.XXXXXX") || exit 1
trap 'rm -rf "$results"' EXIT

queue=()
for build in "$@"; do
  for test in "$build"/tests/test_*; do
    [ -x "$test" ] && [ -f "$test" ] && queue+=("$test")
  done
done

# How a binary is named in the output: its build folder and its name (build-asan/test_coord).
display_name() { echo "$(dirname "$(dirname "$1")")/$(basename "$1")"; }

# Runs one binary; writes its exit status, seconds and standard output under $results/<index>, then
# <index>.done last.
run_one() {
  local index=$1 test=$2 name=$3 output rc start seconds attempt
  start=$(date +%s.%N)
  for attempt in 1 2 3; do
    # A test that hangs (ranks waiting for each other, say) fails after this long instead of stalling CI.
    output=$(DYNAMICCL_COORD_SECRET=${DYNAMICCL_COORD_SECRET:-run_all.$$.$index} \
             timeout --kill-after=10 "$timeout_s" "$test" 2> "$test.log")
    rc=$?
    # A sanitizer that cannot map its shadow memory in a forked rank process (seen under
    # ThreadSanitizer: errno 12, twice in a row once) is the machine's fault, not the test's: run it
    # again, up to twice, saying so.
    if [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ] && grep -q 'Sanitizer failed to allocate' "$test.log"; then
      echo "$name: the sanitizer could not map memory ($(grep -m1 -o 'Sanitizer failed to allocate.*' "$test.log")); running it again (that attempt's log: $test.log.$attempt)" >> "$results/$index.notes"
      mv "$test.log" "$test.log.$attempt"
      continue
    fi
    break
  done
  seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  printf '%s\n' "$output" > "$results/$index.out"
  echo "$rc $seconds" > "$results/$index.status"
  : > "$results/$index.done"
}

passed=0
failed=0
status=0
# Reads a finished binary's results, prints its line (and its failures) and adds up its counts.
report() {
  local index=$1 test=${queue[$1]} name rc seconds line p f
  name=$(display_name "$test")
  [ -f "$results/$index.notes" ] && cat "$results/$index.notes"
  read -r rc seconds < "$results/$index.status"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$results/$index.out" | tail -n 1)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "$name: timed out after $timeout_s s (hung?); log: $test.log"
    tail -n 20 "$test.log" | sed 's/^/    /'
    failed=$((failed + 1))
    status=1
    return
  fi
  if [ -z "$line" ]; then
    echo "$name: crashed or printed no summary (exit $rc); log: $test.log"
    tail -n 20 "$test.log" | sed 's/^/    /'
    failed=$((failed + 1))
    status=1
    return
  fi
  p=${line%% passed*}
  f=${line#*passed, }
  f=${f%% failed*}
  passed=$((passed + p))
  failed=$((failed + f))
  echo "$name: $line (${seconds}s)"
  if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
    status=1
    grep -E 'FAIL|ERROR|runtime error' "$test.log" | head -n 20 | sed 's/^/    /'
  fi
}

declare -A running_names=() # index -> the binary's name, while it runs
declare -A running_pids=()  # index -> the process running it (run_one)
started=()                  # 1 once a binary has been started
remaining=${#queue[@]}
while [ "$remaining" -gt 0 ]; do
  # Start the first binaries in the queue whose name is not running, while a slot is free.
  for index in "${!queue[@]}"; do
    [ "${#running_names[@]}" -lt "$jobs" ] || break
    [ -z "${started[$index]:-}" ] || continue
    name=$(basename "${queue[$index]}")
    busy=0
    for other in "${running_names[@]}"; do [ "$other" = "$name" ] && busy=1; done
    [ "$busy" -eq 0 ] || continue
    started[$index]=1
    running_names[$index]=$name
    run_one "$index" "${queue[$index]}" "$(display_name "${queue[$index]}")" &
    running_pids[$index]=$!
  done
  # Polled, not `wait -n`: that bash builtin's handling of jobs that ended before the call varies between
  # versions, and one that waited for a job already ended would stall the run.
  sleep 0.1
  for index in "${!running_names[@]}"; do
    if [ -f "$results/$index.done" ]; then
      report "$index"
    elif ! kill -0 "${running_pids[$index]}" 2> /dev/null; then
      # Its run_one ended without results (killed, or the results folder unwritable): a failure, not a hang.
      echo "$(display_name "${queue[$index]}"): its runner ended without results; log: ${queue[$index]}.log"
      failed=$((failed + 1))
      status=1
    else
      continue
    fi
    unset "running_names[$index]" "running_pids[$index]"
    remaining=$((remaining - 1))
  done
done
wait
echo "total: $passed passed, $failed failed"
exit $status
