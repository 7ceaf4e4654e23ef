#!/bin/bash
# Build the QEMU guest for the rmem driver tests, from Debian packages only:
#   - Debian's 6.12 kernel image, its modules and headers + kbuild (apt-get download, dpkg -x;
#     cached in $B/debs, never committed), with the headers' absolute Makefile include fixed;
#   - rmem.ko built against those headers, and rmem-server;
#   - a busybox-static initramfs with the needed modules (decompressed, in dependency order
#     from depmod/modprobe --show-depends), iproute2's `rdma`, rdma-core's rxe provider,
#     rmem-server, memtouch and their shared libraries.
# Recipe and pitfalls: /work/shared/notes/swap-and-rdma.md §6 (crc32_generic before rdma_rxe,
# the provider path, dwarves for module BTF).
#
#   swapdev/kmod/guest/build-image.sh [BUILD_DIR]      (default build/kmod-guest)
# Writes BUILD_DIR/vmlinuz and BUILD_DIR/base.cpio.gz; reuses what is already there.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
B=$(mkdir -p "${1:-$REPO/build/kmod-guest}" && cd "${1:-$REPO/build/kmod-guest}" && pwd)
# The kernel: RMEM_GUEST_KVER, else the one already cached, else the newest Debian 6.12
# image apt knows (bookworm-security replaces old ABIs, so no version is pinned; tested with
# 6.12.117+deb12-amd64).
KVER=${RMEM_GUEST_KVER:-}
[ -z "$KVER" ] && [ -e "$B/root/.stamp" ] && KVER=$(cat "$B/root/.stamp")
if [ -z "$KVER" ]; then
	KVER=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9.]+\+deb12-amd64$' |
		awk '{print $1}' | sed 's/^linux-image-//' | sort -V | tail -1)
fi
[ -n "$KVER" ] || { echo "build-image: no linux-image-6.12.*+deb12-amd64 in apt (apt-get update?)" >&2; exit 2; }
PKGS="linux-image-$KVER linux-headers-$KVER linux-headers-${KVER%-amd64}-common linux-kbuild-${KVER%-amd64}"
R=$B/root
HDR=$R/usr/src/linux-headers-$KVER

for tool in qemu-system-x86_64 busybox pahole cpio xz depmod modprobe rdma gcc; do
	command -v $tool >/dev/null || { echo "build-image: $tool not found (make deps)" >&2; exit 2; }
done

if [ "$(cat "$R/.stamp" 2>/dev/null)" != "$KVER" ]; then
	mkdir -p "$B/debs"
	(cd "$B/debs" && for p in $PKGS; do ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p"; done)
	rm -rf "$R" && mkdir -p "$R"
	for p in $PKGS; do dpkg -x "$(ls "$B"/debs/${p}_*.deb | head -1)" "$R"; done
	# The headers' Makefile includes the -common tree by absolute path.
	sed -i "s|^include /usr/src/|include $R/usr/src/|" "$HDR/Makefile"
	depmod -b "$R" "$KVER"
	echo "$KVER" > "$R/.stamp"
fi
cp "$R/boot/vmlinuz-$KVER" "$B/vmlinuz"

# The driver and the server.
make -s -C "$REPO/swapdev/kmod" module server KDIR="$HDR" OUT="$B/mod" >/dev/null
gcc -O2 -static -o "$B/mod/memtouch" "$REPO/swapdev/tools/memtouch.c"

I=$B/initramfs
rm -rf "$I"
mkdir -p "$I"/{bin,sbin,etc,proc,sys,dev,tmp,run,mnt,host,lib/modules,usr/lib/x86_64-linux-gnu/libibverbs,etc/libibverbs.d,opt/rmem}
cp /usr/bin/busybox "$I/bin/busybox"
for app in $("$I/bin/busybox" --list); do [ -e "$I/bin/$app" ] || ln -s busybox "$I/bin/$app"; done

# Modules in load order: crc32_generic first (rxe_newlink fails with ENOENT without it).
MODS="crc32_generic configfs virtio_net rdma_cm rdma_ucm ib_uverbs rdma_rxe netfs 9pnet 9pnet_virtio 9p"
: > "$I/lib/modules/order"
for m in $MODS; do
	modprobe -d "$R" -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" {print $2}' | while read -r ko; do
		name=$(basename "$ko" .ko.xz)
		grep -qx "$name.ko" "$I/lib/modules/order" && continue
		xz -dc "$ko" > "$I/lib/modules/$name.ko"
		echo "$name.ko" >> "$I/lib/modules/order"
	done
done

# Userspace programs and their libraries (ldd closure), the rxe verbs provider.
copy_libs() {
	ldd "$1" 2>/dev/null | awk '/=>/ {print $3} /^\t\/lib/ {print $1}' | while read -r lib; do
		[ -n "$lib" ] && [ ! -e "$I$lib" ] && mkdir -p "$I$(dirname "$lib")" && cp -L "$lib" "$I$lib"
	done || true
}
PROV=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
[ -e "$PROV" ] || { echo "build-image: $PROV missing (apt install ibverbs-providers)" >&2; exit 2; }
cp /usr/bin/rdma "$I/bin/rdma.real"
cp "$PROV" "$I$PROV"
cp /etc/libibverbs.d/rxe.driver "$I/etc/libibverbs.d/"
cp "$B/mod/rmem-server" "$B/mod/memtouch" "$B/mod/rmem.ko" "$I/opt/rmem/"
for bin in "$I/bin/rdma.real" "$I$PROV" "$I/opt/rmem/rmem-server"; do copy_libs "$bin"; done
# libgcc_s: pthread_cancel/exit unwinding in the rdma-core programs.
cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$I/lib/x86_64-linux-gnu/"
mv "$I/bin/rdma.real" "$I/bin/rdma"
cp "$REPO/swapdev/kmod/guest/init" "$I/init"
cp "$REPO/swapdev/kmod/guest/tests.sh" "$REPO/swapdev/kmod/guest/bench.sh" \
	"$REPO/swapdev/kmod/guest/emulate.sh" "$REPO/swapdev/kmod/guest/boot.sh" "$I/opt/rmem/"
chmod +x "$I/init" "$I/opt/rmem/tests.sh" "$I/opt/rmem/bench.sh" "$I/opt/rmem/emulate.sh" \
	"$I/opt/rmem/boot.sh"
(cd "$I" && find . | cpio -o -H newc --quiet | gzip -1) > "$B/base.cpio.gz.tmp"
mv "$B/base.cpio.gz.tmp" "$B/base.cpio.gz"
echo "$B/base.cpio.gz"
