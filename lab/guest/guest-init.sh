#!/bin/sh
# Stage 2 (PID 1 in the guest's root): make the few writable places tools need (the root is
# a read-only 9p share), mount the per-boot job directory, run its run.sh and power off.
# The host reads /job/stdout, /job/stderr, /job/exit_code and anything under /job/out.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sys /sys
for d in /tmp /run /var/tmp /var/log /root /var/lib/iptables; do
    [ -d "$d" ] && mount -t tmpfs tmpfs "$d"
done
# bash process substitution needs /dev/fd after switch_root
ln -sf /proc/self/fd /dev/fd
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm
hostname sctp-guest
ip link set lo up
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 job /job; then
    mkdir -p /job/out
    cd /job || exit 1
    echo "sctp-guest: running job $(cat /proc/uptime)" > /dev/console
    sh /job/run.sh > /job/stdout 2> /job/stderr
    echo "$?" > /job/exit_code
    echo "sctp-guest: job done $(cat /proc/uptime)" > /dev/console
    sync
    cd /
    umount /job
else
    echo "sctp-guest: cannot mount the job share" > /dev/console
fi
/bin/busybox poweroff -f
