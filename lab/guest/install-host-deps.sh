#!/bin/sh
# Installs the host packages the kernel guest needs: qemu to boot it, and the tools
# lab/guest/build.sh uses to make the image (debootstrap for the root filesystem,
# busybox-static for the initramfs, kmod for depmod/modprobe -d, cpio and zstd to pack).
# Debian/Ubuntu only; run as root (or with sudo). CI calls this before `make test`.
set -eu

PACKAGES="qemu-system-x86 debootstrap busybox-static kmod cpio zstd ca-certificates"

if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-host-deps: all present ($PACKAGES)"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
echo "install-host-deps: installed$missing"
