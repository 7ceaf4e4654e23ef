#!/bin/sh
# Issue #22's application study on this machine: each config given (configs/app-study-*.toml)
# in turn under the shared machine lock, with `uptime` before and after each and the wall
# time; the per-run load (load average, steal) is in each sweep's runs.csv. Root. A
# Figure 2 config (*-fig2.toml) runs through `disaggsim classify`, the others `emulate`.
#   sh bench/app_study.sh configs/app-study-noise-pinned.toml ...   (from the repository root)
set -eu
for config in "$@"; do
    case "$config" in *-fig2.toml) command=classify ;; *) command=emulate ;; esac
    echo "== $config: $(date -u +%FT%TZ) $(uptime)"
    start=$(date +%s)
    flock /tmp/disaggsim-machine.lock .venv/bin/disaggsim "$command" "$config" --quiet
    echo "== $config: $(( $(date +%s) - start )) s, $(date -u +%FT%TZ) $(uptime)"
done
