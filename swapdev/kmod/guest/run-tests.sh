#!/bin/bash
# Build the guest (build-image.sh), boot it once under QEMU TCG with the inputs of IN_DIR
# (copied to /opt/rmem/in) and OUT_DIR shared over 9p, and wait for it to power off.
#   swapdev/kmod/guest/run-tests.sh OUT_DIR IN_DIR [BUILD_DIR]
# OUT_DIR receives results.txt ("key value" lines), guest.log, console.log and artifacts.
# RMEM_GUEST_SCRIPT=bench runs bench.sh instead of tests.sh.
# KVM is not used (it cannot run a stock kernel on this machine kind; see
# /work/shared/notes/swap-and-rdma.md §6). Times out after RMEM_GUEST_TIMEOUT s (480; a run takes about 100 s).
set -euo pipefail
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
IN=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
B=$("$HERE/build-image.sh" ${3:+"$3"} | tail -1 | xargs dirname)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/opt/rmem/in"
cp "$IN"/* "$STAGE/opt/rmem/in/"
(cd "$STAGE" && find . | cpio -o -H newc --quiet) > "$STAGE/in.cpio"
cat "$B/base.cpio.gz" > "$STAGE/initrd"
gzip -1c "$STAGE/in.cpio" >> "$STAGE/initrd"
rm -f "$OUT/results.txt"
timeout "${RMEM_GUEST_TIMEOUT:-480}" qemu-system-x86_64 -accel tcg -M q35 -cpu max -m 1024 -smp 2 \
	-nographic -no-reboot -kernel "$B/vmlinuz" -initrd "$STAGE/initrd" \
	-append "console=ttyS0 panic=-1 quiet rmemtest=${RMEM_GUEST_SCRIPT:-tests}" \
	-netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0 \
	-virtfs local,path="$OUT",mount_tag=host,security_model=none,id=host \
	> "$OUT/console.log" 2>&1 </dev/null
