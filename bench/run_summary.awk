# bench/run_summary.awk: one `dccl run` report (run with --steady; --verbose for the leftover count) as the
# bench scripts read it, on one line: the whole run's mean latency over the oracle's (to 5 places: the
# report prints 3), then from its steady-state line: x oracle, x NCCL, streams more than 2% slower than
# NCCL, the worst stream x NCCL; the calls the learner charged a leftover; the steady-state line's
# stream count; and the learner's background CPU per 1,000 measurements (us; --verbose). "-" for what it
# lacks.
# Usage: awk -f bench/run_summary.awk RUN_OUTPUT   (or the report on standard input)
/^  all / { all = sprintf("%.5f", $3 / $7) }
/steady state/ {
  match($0, /: [0-9.]+ x oracle/); oracle = substr($0, RSTART + 2, RLENGTH - 11)
  match($0, /oracle, [0-9.]+ x NCCL/); nccl = substr($0, RSTART + 8, RLENGTH - 15)
  match($0, /, [0-9]+ slower/); slower = substr($0, RSTART + 2, RLENGTH - 9)
  match($0, /worst [0-9.]+/); worst = substr($0, RSTART + 6, RLENGTH - 6)
  match($0, /; [0-9]+ streams/); streams = substr($0, RSTART + 2, RLENGTH - 10)
}
/charged a leftover/ { match($0, /[0-9]+ charged/); charged = substr($0, RSTART, RLENGTH - 8) }
/us of background CPU/ { match($0, /[0-9.]+ us of background CPU/); cpu = substr($0, RSTART, RLENGTH - 21) }
function or_dash(value) { return value == "" ? "-" : value }
END { print or_dash(all), or_dash(oracle), or_dash(nccl), or_dash(slower), or_dash(worst), or_dash(charged), or_dash(streams),
      or_dash(cpu) }
