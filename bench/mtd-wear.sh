#!/bin/bash
# The flash wear study of docs/devices.md: the same 200k random 4 KiB
# writes on mtdblock and on ftl (32 MiB SLC NAND, 128 KiB erase blocks,
# time off), then the spread of erase counts, the write amplification and
# the throughput the chip's operations would allow at time_scale=1; and a
# gnuplot chart of the erase count of every block (docs/mtd-wear.svg).
# The measured throughput, with real timing, is bench/mtd-throughput.sh's.
#
#   bench/mtd-wear.sh [BUILD_DIR] [NR_WRITES]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
NR=${2:-200000}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/mtd-wear.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

for dev in mtdblock ftl; do
	"$BUILD/mtd-wear" "$dev" "$NR" "$OUT/$dev.dat" size=32M seed=1 scheduler=none |
		tee "$OUT/$dev.txt"
done

# Blocks are numbered 0..NBLK-1: the x axis ends at the last one instead
# of gnuplot's autoscaled round number past it.
NBLK=$(wc -l <"$OUT/mtdblock.dat")

gnuplot <<EOF2
set terminal svg size 900,420 dynamic font "sans,11"
set output "$SRC/docs/mtd-wear.svg"
set title "Erase count per erase block after $NR random 4 KiB writes (32 MiB SLC NAND, 128 KiB blocks)"
set xlabel "erase block"
set xrange [-0.5:$NBLK - 0.5]
set xtics 0,32
set xtics add ("$((NBLK - 1))" $NBLK - 1)
set mxtics 4
set ylabel "erases"
set logscale y
set yrange [0.5:*]
set key below
plot "$OUT/mtdblock.dat" using 1:(\$2 > 0 ? \$2 : 0.5) with impulses lw 2 title "mtdblock", \
     "$OUT/ftl.dat" using 1:(\$2 > 0 ? \$2 : 0.5) with points pt 7 ps 0.5 title "ftl"
EOF2
echo "chart: $SRC/docs/mtd-wear.svg"
