#!/bin/sh
# Issue #22's application study on this machine: each config given (configs/app-study-*.toml)
# in turn under the shared machine lock, with `uptime` before and after each and the wall
# time; the per-run load (load average, steal) is in each sweep's runs.csv. Root. A
# Figure 2 config (*-fig2.toml) or a classification point's (*-classify.toml) runs through
# `disaggsim classify`, the others `emulate`.
#   sh bench/app_study.sh configs/app-study-noise-pinned.toml ...   (from the repository root)
#
# Isolated window (the measurements of bench/RESULTS.md "Application study (#22)" since
# 2026-11-27 08:20 UTC): with ISOLATE set to the machine's cpuset script
# (bench/isolate.sh, cgroup-v1 cpusets; `on` moves every task to CPU 0, `run CMD` runs CMD on the empty
# CPU 1, `off` restores), the whole list runs in ONE window that holds the machine lock,
# turns isolation on, runs every sweep on CPU 1 (the application and the device's handler
# together), and turns isolation off on exit, failure or signal included. WINDOW_S (default
# 1500) bounds the window: when it runs out the sweep in progress is stopped (SIGINT) and
# resumes from its runs.csv on the next call with the same config (the round it cut is
# rerun whole there: swapdev/emulate.py).
#   ISOLATE=bench/isolate.sh WINDOW_S=1200 sh bench/app_study.sh configs/app-study-....toml
# To end a window early without cutting a round: SIGUSR1 to the sweep's own process (not
# `timeout` or the window's process group: that would reach the application), e.g.
#   pkill -USR1 -f 'bin/python[0-9.]* [^ ]*bin/disaggsim (classify|emulate) '
# ends the sweep in progress after its round (disaggsim.signals.stop_requests); the window
# then goes on to the next config given, if any.
set -eu
LOCK=/tmp/disaggsim-machine.lock
if [ -n "${ISOLATE:-}" ] && [ -z "${APP_STUDY_LOCKED:-}" ]; then
    exec flock "$LOCK" env APP_STUDY_LOCKED=1 sh "$0" "$@"
fi
if [ -n "${ISOLATE:-}" ]; then
    trap '"$ISOLATE" off' EXIT
    trap 'exit 130' INT TERM
    "$ISOLATE" on
    deadline=$(( $(date +%s) + ${WINDOW_S:-1500} ))
fi
for config in "$@"; do
    case "$config" in *-fig2.toml|*-classify.toml) command=classify ;; *) command=emulate ;; esac
    echo "== $config: $(date -u +%FT%TZ) $(uptime)"
    start=$(date +%s)
    if [ -n "${ISOLATE:-}" ]; then
        left=$(( deadline - start ))
        if [ "$left" -le 0 ]; then echo "== window over: $config not started"; break; fi
        timeout -s INT "$left" "$ISOLATE" run .venv/bin/disaggsim "$command" "$config" \
            --quiet || echo "== $config: exit $? (124: window over; resumes from runs.csv)"
    else
        flock "$LOCK" .venv/bin/disaggsim "$command" "$config" --quiet
    fi
    echo "== $config: $(( $(date +%s) - start )) s, $(date -u +%FT%TZ) $(uptime)"
done
