#!/bin/sh
# Guest benchmark (run-tests.sh with RMEM_GUEST_SCRIPT=bench): per-request service time
# and sequential O_DIRECT throughput of rmem0, RAM and RDMA (rxe) backends, no delay, and
# the swap-in fault latency seen by memtouch. "key value" lines in /host/results.txt.
# TCG guest: functional numbers, not hardware numbers.
R=/host/results.txt
: > $R
res() { echo "$1 $2" >> $R; echo "RESULT $1 $2"; }
stat_of() { awk -v k="$1" '$1 == k {print $2}' /proc/rmem_stats; }
M=/opt/rmem/rmem.ko
IP=10.0.2.15
CG=/sys/fs/cgroup/rmem
echo 0 > /proc/sys/vm/page-cluster
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p $CG

bench() { # NAME
	echo 1 > /proc/rmem_stats
	dd if=/dev/rmem0 of=/dev/null bs=4096 count=2000 iflag=direct 2>/dev/null
	for k in svc_n svc_mean_ns svc_p50_ns svc_p99_ns; do res "$1_read4k_$k" "$(stat_of $k)"; done
	echo 1 > /proc/rmem_stats
	dd if=/dev/zero of=/dev/rmem0 bs=4096 count=2000 oflag=direct 2>/dev/null
	for k in svc_n svc_mean_ns svc_p50_ns svc_p99_ns; do res "$1_write4k_$k" "$(stat_of $k)"; done
	for dir in read write; do
		t0=$(cut -d' ' -f1 /proc/uptime)
		if [ $dir = read ]; then
			dd if=/dev/rmem0 of=/dev/null bs=131072 count=512 iflag=direct 2>/dev/null
		else
			dd if=/dev/zero of=/dev/rmem0 bs=131072 count=512 oflag=direct 2>/dev/null
		fi
		t1=$(cut -d' ' -f1 /proc/uptime)
		res "$1_seq128k_${dir}_MBps" "$(awk -v a=$t0 -v b=$t1 'BEGIN {printf "%.1f", 64 * 1.048576 / (b - a)}')"
	done
	# fixed-delay sweep: median service time per configured latency (no bandwidth term)
	for lat in 0 20000 200000 2000000; do
		echo $lat > /sys/module/rmem/parameters/latency_ns
		echo fixed > /sys/module/rmem/parameters/delay_model
		echo 1 > /proc/rmem_stats
		dd if=/dev/rmem0 of=/dev/null bs=4096 count=300 iflag=direct 2>/dev/null
		res "$1_fixed${lat}_svc_p50_ns" "$(stat_of svc_p50_ns)"
		res "$1_fixed${lat}_delay_mean_ns" "$(stat_of delay_mean_ns)"
	done
	echo none > /sys/module/rmem/parameters/delay_model
	mkswap /dev/rmem0 >/dev/null && swapon /dev/rmem0
	echo 16M > $CG/memory.max
	res "$1_memtouch" "$(sh -c "echo \$\$ > $CG/cgroup.procs; exec /opt/rmem/memtouch 64 1")"
	swapoff /dev/rmem0
	rmmod rmem
}

insmod $M backend=ram size_mb=128
bench ram
ip link set lo up
ip link set eth0 up
ip addr add $IP/24 dev eth0
rdma link add rxe0 type rxe netdev eth0
/opt/rmem/rmem-server -a $IP -p 7471 -s 160 > /tmp/server.log 2>&1 &
for i in $(seq 50); do grep -q listening /tmp/server.log && break; sleep 0.2; done
insmod $M backend=rdma server=$IP:7471 size_mb=128
bench rdma
res done 1
