#!/bin/sh
# Regenerates delays.txt, the oracle of tests/test_swapdev_seam.py: every delay model's delay
# over a grid of request sizes, computed by the sd-tool of the size-only core
# (sd_delay_ns(m, size_bytes)), before the core took a request (issue #23 step 0).
# It was run once with the sd-tool built from main at 4d6b512:
#   git archive 4d6b512 swapdev | tar x -C /tmp/old && \
#   gcc -O2 -std=gnu11 -o /tmp/old/sd-tool /tmp/old/swapdev/tools/sd_tool.c \
#       /tmp/old/swapdev/src/sd_user.c /tmp/old/swapdev/core/sd_delay.c
#   swapdev/test/oracle/make_oracle.sh /tmp/old/sd-tool > swapdev/test/oracle/delays.txt
# Each section is "## VAR=value ..." (the SWAPDEV_* environment, table paths relative to
# this folder) followed by "<size_bytes> <delay_ns>" lines in request order.
set -eu
TOOL=$1
HERE=$(cd "$(dirname "$0")" && pwd)
SIZES="0 1 512 4095 4096 4097 8191 8192 12288 16384 32768 36864 65535 65536 65537 262144
1048576 1052672 16773120 16777216 16769024 1073741824 1073741825 3221225472 1099511627776"
# fct-sample draws depend on the order: the grid 20 times over.
SAMPLE=""
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do SAMPLE="$SAMPLE $SIZES"; done
run() {
	sizes=$1
	shift
	echo "## $*"
	(cd "$HERE" && env "$@" "$TOOL" delay $sizes)
}
run "$SIZES" SWAPDEV_MODEL=none
for lb in 0:0 1000:0 1000:40000000000 2500:100000000000 0:8192000000 7:3 \
	123456789:1; do
	run "$SIZES" SWAPDEV_MODEL=fixed SWAPDEV_LATENCY_NS=${lb%:*} SWAPDEV_BANDWIDTH_BPS=${lb#*:}
done
run "$SIZES" SWAPDEV_MODEL=fct-mean SWAPDEV_FCT_FILE=fct_mean.txt
run "$SIZES" SWAPDEV_MODEL=fct-mean SWAPDEV_FCT_FILE=fct_pages.txt SWAPDEV_FCT_FORMAT=pages-ns
for seed in 1 7 18446744073709551615; do
	run "$SAMPLE" SWAPDEV_MODEL=fct-sample SWAPDEV_FCT_FILE=fct_dist.txt SWAPDEV_SEED=$seed
done
