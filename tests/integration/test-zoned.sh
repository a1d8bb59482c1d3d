#!/bin/bash
# Zoned null_blk (zoned=1), and the smr disk, through both front ends, under every
# scheduler, with zone write plugging on (the default) and, for
# mq-deadline, off: zoned.py pipelines 64 sequential writes at QD32
# into one zone and reads them back, checks that a misplaced write gets
# EIO and leaves its zone unchanged, and that TRIM resets whole zones
# only.  nbdinfo --list shows the zoned description; through mqblkd the
# control plane prints the zone report and resets a zone.
. "$(dirname "$0")/lib.sh"

KEYS=(zoned=1 zone_size=1 zone_nr_conv=1 size=16M memory_backed=1
	time_scale=0)
SCHEDS=(none mq-deadline bfq kyber)

for s in "${SCHEDS[@]}"; do
	echo "== nbdkit: $s"
	SCHED=$s mqblk_nbdkit -U - --run \
		"\$CLIENT nbdsh -u \"\$uri\" -c - < $SCRIPTS/zoned.py" \
		"$PLUGIN" device=null "${KEYS[@]}" scheduler="$s"
done
echo "== nbdkit: mq-deadline, zone_write_plugging=0"
SCHED=mq-deadline-noplug mqblk_nbdkit -U - --run \
	"\$CLIENT nbdsh -u \"\$uri\" -c - < $SCRIPTS/zoned.py" \
	"$PLUGIN" device=null "${KEYS[@]}" zone_write_plugging=0

echo "== nbdkit: nbdinfo --list"
mqblk_nbdkit -U - --run "\$CLIENT nbdinfo --list \"\$uri\"" \
	"$PLUGIN" device=null "${KEYS[@]}" >"$TESTTMP/list"
cat "$TESTTMP/list"
grep -q "zoned host-managed: 16 zones of 1 MB, 1 conventional" \
	"$TESTTMP/list" || die "nbdinfo --list: no zoned description"
grep -q "scheduler bfq (row 5: single queue)" "$TESTTMP/list" ||
	die "zoned null: not row 5 with zone write plugging"

SMR_KEYS=(capacity=16M zone_size=1M zone_nr_conv=1 time_scale=0)
for s in none bfq; do
	echo "== nbdkit: smr, $s"
	SCHED=smr-$s mqblk_nbdkit -U - --run \
		"\$CLIENT nbdsh -u \"\$uri\" -c - < $SCRIPTS/zoned.py" \
		"$PLUGIN" device=smr "${SMR_KEYS[@]}" scheduler="$s" \
		2>"$TESTTMP/smr.log"
	grep -q "smr0: write of 8 sectors refused in zone 2 (wp 0x1000, cond em): offset 0x201000 (sector 0x1008): not at the write pointer" \
		"$TESTTMP/smr.log" || die "smr: no misplaced write log line"
done

out=$TESTTMP
(
	. "$SCRIPTS/mqblkd-lib.sh"
	CTL="$MQBLK_BUILD/mqblkctl -s $TESTTMP/ctl.sock"
	for s in "${SCHEDS[@]}"; do
		echo "== mqblkd: $s"
		mqblkd_start --control "$TESTTMP/ctl.sock" null "${KEYS[@]}" \
			scheduler="$s"
		SCHED=$s $CLIENT nbdsh -u "$uri" -c - <"$SCRIPTS/zoned.py"
		$CTL get nullb0/zones >"$out/zones.$s"
		mqblkd_stop
	done
	echo "== mqblkd: mq-deadline, zone_write_plugging=0; bfq refused"
	mqblkd_start null "${KEYS[@]}" zone_write_plugging=0
	SCHED=mq-deadline-noplug $CLIENT nbdsh -u "$uri" -c - <"$SCRIPTS/zoned.py"
	$CLIENT nbdinfo "$uri" >"$out/info"
	mqblkd_stop
	grep -q "scheduler mq-deadline (row 4: zoned host-managed)" \
		"$out/info" || die "zone_write_plugging=0: not row 4"
	! "$MQBLKD" -f -U "$TESTTMP/x.sock" null "${KEYS[@]}" \
		zone_write_plugging=0 scheduler=bfq 2>"$out/bfq.err" ||
		die "bfq accepted with zone_write_plugging=0"
	grep -q "bfq does not keep write order on sequential zones" \
		"$out/bfq.err" || die "bfq refusal: $(cat "$out/bfq.err")"

	echo "== mqblkd: the policy rows of a zoned disk with 2 hw queues"
	mqblkd_start null "${KEYS[@]}" submit_queues=2
	$CLIENT nbdinfo "$uri" >"$out/info.mq"
	mqblkd_stop
	grep -q "scheduler none (row 3: 2 hw queues)" "$out/info.mq" ||
		die "zoned, 2 hw queues, plugging: not row 3"
	mqblkd_start null "${KEYS[@]}" submit_queues=2 zone_write_plugging=0
	$CLIENT nbdinfo "$uri" >"$out/info.mq0"
	mqblkd_stop
	grep -q "scheduler mq-deadline (row 4: zoned host-managed)" \
		"$out/info.mq0" || die "zoned, 2 hw queues, no plugging: not row 4"

	echo "== mqblkd: smr"
	mqblkd_start smr "${SMR_KEYS[@]}"
	SCHED=smr $CLIENT nbdsh -u "$uri" -c - <"$SCRIPTS/zoned.py"
	$CLIENT nbdinfo --list "$uri" >"$out/smr.list"
	mqblkd_stop
	grep -q "host-managed SMR disk smr0 (zoned host-managed: 16 zones of 1 MB" \
		"$out/smr.list" || die "smr: nbdinfo --list description"

	echo "== mqblkd: the zone report and zone/ triggers"
	mqblkd_start --control "$TESTTMP/ctl.sock" null "${KEYS[@]}"
	$CLIENT nbdsh -u "$uri" -c 'h.pwrite(b"z" * 8192, 2 << 20)'
	$CTL get nullb0/zones >"$out/report"
	$CTL set nullb0/zone/finish 3
	$CTL get nullb0/zones >"$out/report2"
	$CTL set nullb0/zone/reset all
	$CTL get nullb0/zones >"$out/report3"
	! $CTL set nullb0/zone/reset 0 2>"$out/reset0.err" ||
		die "zone/reset of a conventional zone accepted"
	mqblkd_stop
)
cat "$TESTTMP/zones.bfq"
# After zoned.py: zone 1 was reset then written 4 KiB, zone 2 has 4 KiB.
for s in "${SCHEDS[@]}"; do
	sed -n 2p "$TESTTMP/zones.$s" | grep -q "wptr 0x000008 .*zcond: 2(oi)" ||
		die "$s: zone 1 in the report: $(sed -n 2p "$TESTTMP/zones.$s")"
	[ "$(wc -l <"$TESTTMP/zones.$s")" = 16 ] || die "$s: not 16 zones"
done
sed -n 3p "$TESTTMP/report" |
	grep -q "start: 0x000001000, len 0x000800, cap 0x000800, wptr 0x000010 reset:0 non-seq:0, zcond: 2(oi) \[type: 2(SEQ_WRITE_REQUIRED)\]" ||
	die "report: $(sed -n 3p "$TESTTMP/report")"
sed -n 4p "$TESTTMP/report2" | grep -q "wptr 0x000800 .*zcond:14(fu)" ||
	die "finish: $(sed -n 4p "$TESTTMP/report2")"
grep -q "(oi)\|(fu)" "$TESTTMP/report3" && die "reset all left zones"
grep -q "conventional zone" "$TESTTMP/reset0.err" ||
	die "reset 0: $(cat "$TESTTMP/reset0.err")"
echo "zoned: ok"
