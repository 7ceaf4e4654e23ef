#!/bin/sh
# `disaggsim emulate` on the kernel module (backend = "kmod", swapdev/emulate_kmod.py): one
# boot runs every run of the sweep. rmem.ko (backend=ram) is the swap device; each run sets
# the delay model, then runs memtouch in a cgroup v2 group whose memory.high is the run's
# local memory (as tests.sh, which says why memory.high and not memory.max).
# Input /opt/rmem/in/runs.txt, one run a line:
#   ID MODEL LATENCY_NS BANDWIDTH_BPS TABLE FORMAT LOCAL_BYTES MIB PASSES
# (TABLE a file of /opt/rmem/in or "-"; FORMAT bytes-us | pages-ns | dist).
# Output /host/results.txt, "key value" lines: run_ID_rc, run_ID_jct_s (guest wall time of
# memtouch, /proc/uptime: 10 ms), run_ID_swap_in_bytes, run_ID_swap_out_bytes,
# run_ID_json (memtouch's report), run_ID_reads, run_ID_writes, run_ID_delay_n and
# run_ID_delay_mean_ns (the device's own counts over the run, /proc/rmem_stats reset before
# it: requests served and delays applied); setup_rc; done 1.
R=/host/results.txt
: > $R
res() { echo "$1 $2" >> $R; echo "RESULT $1 $2"; }
IN=/opt/rmem/in
P=/sys/module/rmem/parameters
CG=/sys/fs/cgroup/rmem
echo 0 > /proc/sys/vm/page-cluster
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
insmod /opt/rmem/rmem.ko backend=ram size_mb=${RMEM_SIZE_MB:-512} && mkswap /dev/rmem0 >/dev/null &&
	swapon /dev/rmem0
res setup_rc $?
vm() { awk -v k="$1" '$1 == k {print $2}' /proc/vmstat; }
while read -r id model lat bw table fmt local mib passes; do
	[ -z "$id" ] && continue
	echo none > $P/delay_model
	case "$fmt" in
	bytes-us) awk '{printf "%d %d\n", int($1 / 4096), int($2 * 1000)}' "$IN/$table" > /proc/rmem_cdf ;;
	pages-ns) cat "$IN/$table" > /proc/rmem_cdf ;;
	dist) cat "$IN/$table" > /proc/rmem_dist ;;
	esac
	echo "$lat" > $P/latency_ns
	echo "$bw" > $P/bandwidth_bps
	echo "$model" > $P/delay_model
	res "run_${id}_model" "$(cat $P/delay_model)"
	rmdir $CG 2>/dev/null
	mkdir -p $CG
	echo "$local" > $CG/memory.high
	echo 0 > /proc/rmem_stats
	in0=$(vm pswpin)
	out0=$(vm pswpout)
	t0=$(cut -d' ' -f1 /proc/uptime)
	json=$(timeout 3000 sh -c "echo \$\$ > $CG/cgroup.procs; exec /opt/rmem/memtouch $mib $passes")
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	res "run_${id}_rc" $rc
	res "run_${id}_jct_s" "$(awk -v a=$t0 -v b=$t1 'BEGIN {print b - a}')"
	res "run_${id}_swap_in_bytes" $(( ($(vm pswpin) - in0) * 4096 ))
	res "run_${id}_swap_out_bytes" $(( ($(vm pswpout) - out0) * 4096 ))
	res "run_${id}_json" "$json"
	# One read of the counts: a consistent snapshot.
	awk '$1 ~ /^(reads|writes|delay_n|delay_mean_ns)$/' /proc/rmem_stats |
		while read -r k v; do res "run_${id}_$k" "$v"; done
done < $IN/runs.txt
echo none > $P/delay_model
swapoff /dev/rmem0
rmmod rmem
res done 1
