#!/bin/busybox sh
# /init of the ublk test guest (busybox): mount what the tests need, run
# them, power off.  Every test prints one line on the console:
#   MQBLK-RESULT NAME pass|fail|skip DETAIL
# and the run ends with MQBLK-DONE.  The host harness
# (tests/ublk/test-ublk-guest.sh) reads them.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /run
mount -t tmpfs tmpfs /tmp
echo
echo "MQBLK-BOOTED $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
sh /tests/guest-tests.sh
echo MQBLK-DONE
sync
poweroff -f
