#!/usr/bin/env bash
# tools/source_digest.sh: one digest of the files that build, run and measure DynamICCL (sources, tests,
# benches, scenarios, the Makefile; not docs nor results), so that a run names the tree it ran where git
# cannot: the GPU machine gets a copy of the working tree whose git metadata may be older than it.
# bench/gpu/run.sh writes it in its summary; for a commit: git worktree add /tmp/t C && tools/source_digest.sh /tmp/t
# Usage: tools/source_digest.sh [TREE] (default: this checkout). Prints 16 hexadecimal digits.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
export LC_ALL=C
digest=$(find Makefile abi agents bench coord core emu nn persist plugin scenarios sim tests tools -type f \
  ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
echo "$digest" # only once every file was read (set -e: no digest of part of the tree)
