#!/bin/sh
# report.sh -- bench/results/*.csv -> summary.md (mean at 130 %) and alloc_vs_arrived.png.
set -eu
cd "$(dirname "$0")/../.."
OUT=bench/results
{
  echo "| trace | policy | mode | GPU alloc % (mean of seeds) | unallocated GPUs | frag % | failed pods | s per seed (mean) |"
  echo "|---|---|---|---|---|---|---|---|"
  for f in "$OUT"/*__*.csv; do
    tr=$(basename "$f" .csv | sed 's/__.*//; s/openb_pod_list_//')
    awk -F, -v tr="$tr" 'NR>1 && $3=="mean" && $4=="end" {printf "| %s | %s | %s | %.2f | %.0f | %.1f | %.0f | %.1f |\n", tr, $1, $2, $6, $7, $8, $9, $17}' "$f"
  done
} > "$OUT/summary.md"
cat "$OUT/summary.md"
# plot: default trace, filter mode unless stated, mean of seeds
P="$OUT/alloc_vs_arrived.png"
plot=""
for f in "$OUT"/openb_pod_list_default__*.csv; do
  for m in filter prioritize; do
    d="$OUT/.plot_$(basename "$f" .csv)_$m.dat"
    awk -F, -v m="$m" 'NR>1 && $3=="mean" && $2==m {print $5, $6}' "$f" > "$d"
    [ -s "$d" ] || { rm -f "$d"; continue; }
    t="$(basename "$f" .csv | sed 's/.*__//') ($m)"
    plot="$plot${plot:+, }'$d' using 1:2 with linespoints title '$t'"
  done
done
gnuplot <<GP
set terminal pngcairo size 1000,650 noenhanced
set output '$P'
set title 'openb default trace: GPU allocation ratio vs arrived workload (mean of seeds 42..51)'
set xlabel 'arrived GPU workload (% of capacity)'
set ylabel 'GPU allocation ratio (%)'
set key right bottom
set grid
set xrange [50:135]
set yrange [50:100]
plot $plot, x with lines dt 2 lc rgb 'gray' title 'allocation = arrived'
GP
rm -f "$OUT"/.plot_*.dat
echo "wrote $P"
