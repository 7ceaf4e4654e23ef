#!/bin/sh
# A CPU of its own for the application study's measurements (bench/app_study.sh ISOLATE=).
# Root; a cgroup-v1 cpuset hierarchy at $CPUSET (this VM: /sys/fs/cgroup/cpuset).
#   sh bench/isolate.sh on        every movable task of the machine into cpuset dsim-rest
#                                 (CPU $REST_CPUS); cpuset dsim-bench (CPU $BENCH_CPUS) kept empty
#   sh bench/isolate.sh run CMD   run CMD inside dsim-bench (children inherit the cpuset)
#   sh bench/isolate.sh off       every task back to the root cpuset, both cpusets removed
#   sh bench/isolate.sh status    on or off, and how many tasks each cpuset holds
# Tasks started while isolation is on inherit dsim-rest (their parent's cpuset), so builds
# and tests of the rest of the machine stay off the measured CPU. Kernel threads bound to a
# CPU (kworker/1:0 ...) cannot move and stay where they are; that is counted, not an error.
# `off` is idempotent, so bench/app_study.sh can call it from an EXIT trap.
set -eu
CPUSET=${CPUSET:-/sys/fs/cgroup/cpuset}
REST_CPUS=${REST_CPUS:-0}
BENCH_CPUS=${BENCH_CPUS:-1}
REST=$CPUSET/dsim-rest
BENCH=$CPUSET/dsim-bench

die() { echo "isolate.sh: $*" >&2; exit 1; }

[ -f "$CPUSET/cpuset.cpus" ] || die "$CPUSET: expected a cgroup-v1 cpuset hierarchy (cpuset.cpus missing)"

make_cpuset() {  # make_cpuset DIR CPUS
    [ -d "$1" ] || mkdir "$1"
    cat "$CPUSET/cpuset.mems" > "$1/cpuset.mems"
    echo "$2" > "$1/cpuset.cpus"
}

move_all() {  # move_all FROM_TASKS TO_DIR: prints how many tasks could not move
    stuck=0
    for pid in $(cat "$1"); do
        echo "$pid" > "$2/tasks" 2>/dev/null || stuck=$((stuck + 1))
    done
    echo "$stuck"
}

case "${1:-}" in
on)
    make_cpuset "$REST" "$REST_CPUS"
    make_cpuset "$BENCH" "$BENCH_CPUS"
    move_all "$CPUSET/tasks" "$REST" > /dev/null
    stuck=$(move_all "$CPUSET/tasks" "$REST")  # again: tasks forked during the first pass
    echo "isolate.sh: on: $(wc -l < "$REST/tasks") tasks on CPU $REST_CPUS, CPU $BENCH_CPUS" \
         "kept for bench/isolate.sh run ($stuck CPU-bound kernel threads left in place)"
    ;;
run)
    shift
    [ "$#" -gt 0 ] || die "run: expected a command"
    [ -d "$BENCH" ] || die "run: isolation is off (sh bench/isolate.sh on first)"
    echo $$ > "$BENCH/tasks"
    exec "$@"
    ;;
off)
    for dir in "$BENCH" "$REST"; do
        [ -d "$dir" ] || continue
        move_all "$dir/tasks" "$CPUSET" > /dev/null
        rmdir "$dir" 2>/dev/null || die "off: $dir still holds tasks: $(tr '\n' ' ' < "$dir/tasks")"
    done
    echo "isolate.sh: off"
    ;;
status)
    if [ -d "$REST" ]; then
        echo "on: dsim-rest (CPU $(cat "$REST/cpuset.cpus")) $(wc -l < "$REST/tasks") tasks," \
             "dsim-bench (CPU $(cat "$BENCH/cpuset.cpus" 2>/dev/null || echo -)) $(cat "$BENCH/tasks" 2>/dev/null | wc -l) tasks"
    else
        echo "off"
    fi
    ;;
*)
    die "expected on, run CMD..., off or status, got '${1:-}'"
    ;;
esac
