#!/bin/bash
# Build the guest (build-image.sh), boot it once under QEMU TCG with the inputs of IN_DIR
# (copied to /opt/rmem/in) and OUT_DIR shared over 9p, and wait for it to power off.
#   swapdev/kmod/guest/run-tests.sh OUT_DIR IN_DIR [BUILD_DIR]
# OUT_DIR receives results.txt ("key value" lines), guest.log, console.log and artifacts.
# RMEM_GUEST_SCRIPT=bench runs bench.sh instead of tests.sh (emulate: emulate.sh, boot:
# boot.sh). RMEM_GUEST_ACCEL replaces -accel's value (default tcg,thread=single, see below).
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
rm -f "$OUT/results.txt" "$OUT/guest.log" "$OUT/console.log"
# no_timer_check (Documentation/admin-guide/kernel-parameters.txt: "Disables the code which
# tests for broken timer IRQ sources"): at boot the kernel counts timer interrupts over a
# TSC-timed window of a few host ms; under TCG on a loaded host QEMU delivers them late, the
# check fails on each route it tries (console: "..MP-BIOS bug: 8254 timer not connected to
# IO-APIC", "....... failed.") and at the last it panics "IO-APIC + timer doesn't work!".
# panic=-1 and -no-reboot then end QEMU with status 0 before /init runs: no guest.log, no
# results.txt (1 CI in 4). The kernel skips the check itself on KVM and Hyper-V
# (arch/x86/kernel/kvm.c paravirt_ops_setup), not under TCG.
# -accel tcg,thread=single: both vCPUs on one host thread, in turn. Multi-threaded TCG in
# QEMU < 8.1 (Debian 12: 7.2) can run a stale translation of kernel code the other vCPU
# just patched; a static key's temporary int3 then kills the guest ("Oops: int3", "Fatal
# exception in interrupt", 1 CI in 4 on 2026-11-27). swapdev/doc/swapdev.md "Limits and
# known issues" has the diagnosis and its sources.
timeout "${RMEM_GUEST_TIMEOUT:-480}" qemu-system-x86_64 -accel "${RMEM_GUEST_ACCEL:-tcg,thread=single}" -M q35 -cpu max -m 1024 -smp 2 \
	-nographic -no-reboot -kernel "$B/vmlinuz" -initrd "$STAGE/initrd" \
	-append "console=ttyS0 panic=-1 no_timer_check quiet rmemtest=${RMEM_GUEST_SCRIPT:-tests}" \
	-netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0 \
	-virtfs local,path="$OUT",mount_tag=host,security_model=none,id=host \
	> "$OUT/console.log" 2>&1 </dev/null
