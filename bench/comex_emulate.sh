#!/bin/sh
# COMEX (#23) on this machine: every configs/emulate-comex-*.toml, one after another, under
# the machine-state lock, with the load average before and after each (root).
#   flock /tmp/disaggsim-machine.lock sh bench/comex_emulate.sh [CONFIG ...]
# Outputs: notebooks/data/comex/<name>/{runs,summary,speedup}.csv; the loads in
# notebooks/data/comex/load.txt. bench/RESULTS.md "COMEX (#23)".
set -eu
cd "$(dirname "$0")/.."
mkdir -p notebooks/data/comex
[ $# -gt 0 ] || set -- configs/emulate-comex-numpy-sort.toml configs/emulate-comex-pb-sweep.toml \
    configs/emulate-comex-python-sort.toml configs/emulate-comex-memcached-ycsb.toml \
    configs/emulate-comex-dask-sort.toml
for config in "$@"; do
    echo "$config start $(date -u +%FT%TZ) $(uptime | sed 's/.*load/load/')" >> notebooks/data/comex/load.txt
    .venv/bin/disaggsim emulate "$config"
    echo "$config end $(date -u +%FT%TZ) $(uptime | sed 's/.*load/load/')" >> notebooks/data/comex/load.txt
done
