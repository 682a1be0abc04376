#!/usr/bin/env bash
# tests/run_all.sh: runs every test binary of the given build folders and prints one closing
# "N passed, N failed" line summing their own closing lines. Exits non-zero if any test failed or
# any binary crashed.
set -u
passed=0
failed=0
status=0
for build in "$@"; do
  for test in "$build"/tests/test_*; do
    [ -x "$test" ] || continue
    name="$build/$(basename "$test")"
    start=$(date +%s.%N)
    for attempt in 1 2 3; do
      # A test that hangs (ranks waiting for each other, say) fails after this long instead of stalling CI.
      output=$(timeout --kill-after=10 "${DYNAMICCL_TEST_TIMEOUT_S:-600}" "$test" 2> "$test.log")
      rc=$?
      # A sanitizer that cannot map its shadow memory in a forked rank process (seen under
      # ThreadSanitizer: errno 12, twice in a row once) is the machine's fault, not the test's: run it
      # again, up to twice, saying so.
      if [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ] && grep -q 'Sanitizer failed to allocate' "$test.log"; then
        echo "$name: the sanitizer could not map memory ($(grep -m1 -o 'Sanitizer failed to allocate.*' "$test.log")); running it again (that attempt's log: $test.log.$attempt)"
        mv "$test.log" "$test.log.$attempt"
        continue
      fi
      break
    done
    seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    line=$(printf '%s\n' "$output" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "$name: timed out after ${DYNAMICCL_TEST_TIMEOUT_S:-600} s (hung?); log: $test.log"
      tail -n 20 "$test.log" | sed 's/^/    /'
      failed=$((failed + 1))
      status=1
      continue
    fi
    if [ -z "$line" ]; then
      echo "$name: crashed or printed no summary (exit $rc); log: $test.log"
      tail -n 20 "$test.log" | sed 's/^/    /'
      failed=$((failed + 1))
      status=1
      continue
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
  done
done
echo "total: $passed passed, $failed failed"
exit $status
