#!/bin/bash
# The scsi-mq models through real clients, time off (time_scale=0):
#  - scsi (4 hw queues, can_queue shared, cmd_per_lun budget) and sata-ssd
#    (one queue, NCQ 32) pass the round-trip test (io.py) through the
#    nbdkit plugin and through mqblkd, with cmd_per_lun=2 so that the
#    budget is refused on the way;
#  - nbdinfo --list describes each export (model, can_queue, cmd_per_lun,
#    the scheduler the default policy chose: none for scsi, bfq for
#    sata-ssd);
#  - use_blk_mq=0 stops start-up with the reason, in both front ends.
. "$(dirname "$0")/lib.sh"

scsi_args() {
	case $1 in
	scsi)
		ARGS=(device=scsi size=64M cmd_per_lun=2 time_scale=0)
		;;
	sata-ssd)
		ARGS=(device=sata-ssd size=64M cmd_per_lun=2 time_scale=0)
		;;
	*)
		die "device_args: unknown device $1"
		;;
	esac
}
device_args() { scsi_args "$1"; }

# check_list FILE MODEL SCHED TAGS: the description nbdinfo --list printed
# (TAGS: "per hw queue" for scsi's 4 queues, "host-wide" for sata-ssd).
check_list() {
	cat "$1"
	grep -q 'export="sda"' "$1" || die "$2: nbdinfo --list shows no sda"
	grep -q "description: $2 sda (scsi-mq): can_queue [0-9]* $4, cmd_per_lun 2" "$1" ||
		die "$2: description"
	grep -q "scheduler $3" "$1" || die "$2: scheduler is not $3"
}

# The single-queue rule: bfq when it is built, mq-deadline otherwise.
single=bfq
grep -q 'MQBLK_BFQ:BOOL=OFF' "$MQBLK_BUILD/CMakeCache.txt" 2>/dev/null &&
	single=mq-deadline

for dev in scsi sata-ssd; do
	run_nbdsh "$dev" "$SCRIPTS/io.py"
	echo "== $dev: nbdinfo --list (nbdkit)"
	serve "$dev" -- "\$CLIENT nbdinfo --list \"\$uri\" > $TESTTMP/list"
	case $dev in
	scsi) check_list "$TESTTMP/list" "SCSI SSD" none "per hw queue" ;;
	sata-ssd) check_list "$TESTTMP/list" "SATA SSD" "$single" host-wide ;;
	esac
done

echo "== use_blk_mq=0 refused (nbdkit)"
if mqblk_nbdkit -U - --run true "$PLUGIN" device=scsi use_blk_mq=0 \
	2>"$TESTTMP/legacy.log"; then
	die "nbdkit started scsi with use_blk_mq=0"
fi
cat "$TESTTMP/legacy.log"
grep -q "use_blk_mq=0: the legacy SCSI request path is gone" \
	"$TESTTMP/legacy.log" || die "nbdkit: no reason given for use_blk_mq=0"

if [ -x "$MQBLK_BUILD/mqblkd" ]; then
	OUT=$TESTTMP
	(
		. "$SCRIPTS/mqblkd-lib.sh"
		device_args() { scsi_args "$1"; }
		for dev in scsi sata-ssd; do
			mqblkd_nbdsh "$dev" "$SCRIPTS/io.py"
			echo "== mqblkd: $dev: nbdinfo --list"
			mqblkd_serve "$dev" -- \
				"nbdinfo --list \"\$uri\" > $OUT/list2"
			case $dev in
			scsi) check_list "$OUT/list2" "SCSI SSD" none "per hw queue" ;;
			sata-ssd) check_list "$OUT/list2" "SATA SSD" "$single" host-wide ;;
			esac
		done
		echo "== mqblkd: use_blk_mq=0 refused"
		rc=0
		"$MQBLKD" -f -U "$TESTTMP/legacy.sock" sata-ssd use_blk_mq=0 \
			2>"$OUT/legacy2.log" || rc=$?
		cat "$OUT/legacy2.log"
		[ $rc -ne 0 ] || die "mqblkd started sata-ssd with use_blk_mq=0"
		grep -q "sata-ssd: use_blk_mq=0: the legacy SCSI request path is gone" \
			"$OUT/legacy2.log" || die "mqblkd: no reason given"
	)
fi
echo "scsi: ok"
