#!/usr/bin/env bash
# bench/by_size.sh: per-seed misses grouped by size, as the bench scripts list them. Reads "collective size
# seed ratio [interpolated]" lines on standard input; prints one line per (collective, size), in order of
# collective, size and seed, with its count and its seeds with their ratios (a * after a size that was not
# measured where the fifth field is 1), or "  none" when there is no line.
# Usage: ... | bench/by_size.sh
set -euo pipefail
sort -k1,1 -k2,2h -k3,3n | awk '
  {
    key = $1 " " $2
    if (!(key in count)) { order[++keys] = key; mark[key] = NF < 5 ? "" : $5 ? "*" : " " }
    count[key]++
    seeds[key] = seeds[key] (count[key] > 1 ? ", " : "") $3 " (" $4 ")"
  }
  END {
    if (keys == 0) print "  none"
    for (i = 1; i <= keys; i++) {
      split(order[i], f, " ")
      printf "  %-14s %5s%s: %d, seed %s\n", f[1], f[2], mark[order[i]], count[order[i]], seeds[order[i]]
    }
  }'
