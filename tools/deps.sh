#!/usr/bin/env bash
# Install lnkit's Debian dependencies (what is missing), or with --check only
# report what is missing.  Extra package names may follow (e.g. python3-torch).
set -euo pipefail
# python3 with NumPy, SciPy and Matplotlib: the study summaries (studies/summary),
# the demo's among them.
pkgs=(build-essential pkg-config libopenblas-dev liblapacke-dev libgsl-dev libjansson-dev
      libcmocka-dev libglpk-dev python3 python3-numpy python3-scipy python3-matplotlib)
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
pkgs+=("$@")
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ $check = 1 ]; then
    echo "lnkit: missing Debian packages: ${missing[*]} (run 'make deps')" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
echo "lnkit: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
