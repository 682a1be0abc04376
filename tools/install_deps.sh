#!/usr/bin/env bash
# tools/install_deps.sh: installs the Debian packages a make target needs when they are missing.
# Usage: tools/install_deps.sh gnuplot   (for `make report`)
set -euo pipefail
missing=()
for need in "$@"; do
  case "$need" in
    gnuplot) command -v gnuplot >/dev/null 2>&1 || missing+=(gnuplot-nox) ;;
    *) echo "install_deps: unknown dependency $need" >&2; exit 2 ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]} (Debian packages)" >&2
if [ "$(id -u)" -eq 0 ]; then
  apt-get update -qq && apt-get install -y --no-install-recommends "${missing[@]}"
else
  sudo apt-get update -qq && sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
