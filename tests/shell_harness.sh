# tests/shell_harness.sh: the checks' bookkeeping for the tests written in bash (sourced): begin NAME,
# fail MESSAGE (the check goes on), end, and finish, which prints the closing "N passed, N failed" line.
passed=0 failed=0 current= current_failed=0 began=
begin() { current=$1 current_failed=0 began=$(date +%s.%N); }
fail() { echo "  FAIL $current: $*" >&2; current_failed=1; }
end() {
  local took
  took=$(awk -v s="$began" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f s", e - s }')
  if [ "$current_failed" = 0 ]; then passed=$((passed + 1)); echo "ok $current ($took)" >&2
  else failed=$((failed + 1)); echo "not ok $current ($took)" >&2; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
  exit
}
# The last lines of a log, indented, for a failure's context.
show() { tail -n "${2:-15}" "$1" 2> /dev/null | sed 's/^/      /' >&2; }
