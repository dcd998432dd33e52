#!/bin/sh
# Installs what the benchmarks compare skiff against (not needed by `make test`): the
# groups test and bench of tests/packages.list (Slurm with munge for node_bench.py,
# hyperfine, rsync for sync_bench.sh). Debian 12, root.
set -eu
exec sh "$(dirname "$0")/../lib/packages.sh" install test bench
