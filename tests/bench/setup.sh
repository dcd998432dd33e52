#!/bin/sh
# Installs what the benchmarks compare skiff against (not needed by `make test`):
# Slurm with munge (node_bench.py), hyperfine, rsync (sync_bench.sh). Debian 12, root or sudo.
set -eu
pkgs="slurm-wlm munge hyperfine python3 rsync"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
