#!/bin/sh
# consolidate_report.sh -- the summary table of bench/sim/consolidate.sh's CSVs (markdown on stdout).
set -eu
cd "$(dirname "$0")/../.."
D=bench/results/consolidation
echo "| run | trace | budget % | GPU alloc % (mean of seeds) | min alloc % | moved % of placed | plans | plan searches without a plan (stopped by the checks budget) | whole-GPU pods that waited % | their mean wait (min) | p95 wait (min) | whole-GPU pods waiting at the end | mean wait, every pod (min) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for f in "$D"/churn__*.csv "$D"/arrivals__*.csv; do
  [ -f "$f" ] || continue
  b=$(basename "$f" .csv)
  kind=${b%%__*}; rest=${b#*__}; trace=${rest%__*}; budget=${rest##*__b}
  awk -F, -v kind="$kind" -v trace="$trace" -v budget="$budget" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["seed"] == "mean" {
      printf "| %s | %s | %s | %.2f | %.2f | %.2f | %.1f | %.1f (%.1f) | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
        kind, trace, budget, $col["alloc_pct"], $col["alloc_min_pct"], $col["moved_pct"],
        $col["plans"], $col["plan_failures"], ($col["plan_incomplete"] == "" ? 0 : $col["plan_incomplete"]), $col["whole_waited_pct"],
        $col["whole_wait_mean_s"] / 60, $col["whole_wait_p95_s"] / 60,
        $col["whole_waiting_end"], $col["all_wait_mean_s"] / 60 }' "$f"
done
