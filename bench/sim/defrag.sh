#!/bin/sh
# defrag.sh -- consolidation and background defragmentation below and around full load, in the
# trace simulator (docs/simulator.md, "Below full load"): the default trace, seeds 42..51, offered
# loads 0.90 .. 1.30, consolidation off and at 2 %, background defragmentation keeping 16, 64 or
# 256 GPUs entirely free.
#   bench/sim/defrag.sh      CSVs under bench/results/consolidation/load__*.csv, then the
#                            markdown table on stdout
# Uses $GPUPACK when set, else bin/gpupack. TRACES=DIR (default ../shared/traces). RUNS: the runs
# as "LOAD BUDGET FREE" triples, ';'-separated (default: the table's). HORIZON/WARMUP (mean
# lifetimes, default 1.5 / 0.5), CHECKS (default 2000), JOBS (default 1), REPORT=0 no table.
set -eu
cd "$(dirname "$0")/../.."
T=${TRACES:-../shared/traces}
OUT=bench/results/consolidation
mkdir -p "$OUT"
SIM="${GPUPACK:-bin/gpupack} simulate"
HORIZON=${HORIZON:-1.5}
WARMUP=${WARMUP:-0.5}
TAG=""
[ "$HORIZON" = 1.5 ] && [ "$WARMUP" = 0.5 ] || TAG="__w${WARMUP}h$HORIZON"
RUNS=${RUNS:-"0.9 0 0;0.9 2 0;0.95 0 0;0.95 2 0;0.95 2 16;0.95 2 64;0.95 2 256;1.0 0 0;1.0 2 0;1.0 2 64;1.3 2 64"}
echo "$RUNS" | tr ';' '\n' | while read -r L B F; do
  [ -n "$L" ] || continue
  f=$OUT/load__default__l${L}__b${B}__f${F}$TAG.csv
  extra=""
  [ "$F" = 0 ] || extra="--defrag-free $F"
  start=$(date +%s)
  nice $SIM --nodes "$T/openb_node_list_gpu_node.csv" --pods "$T/openb_pod_list_default.csv" \
    --scheduler-config none --policy policies/fragmentation-aware.yaml --quiet --csv \
    --jobs "${JOBS:-1}" --label "l$L-b$B-f$F" --churn --churn-load "$L" --churn-lifetime 3600 \
    --churn-horizon "$HORIZON" --churn-warmup "$WARMUP" --consolidate-budget "$B" \
    --consolidate-checks "${CHECKS:-2000}" $extra > "$f.tmp"
  mv "$f.tmp" "$f"
  printf '%s %d s\n' "$f" $(( $(date +%s) - start )) >&2
done
[ "${REPORT:-1}" = 0 ] && exit 0
echo "| offered load | measured (lifetimes) | budget % | GPUs kept free | GPU alloc % (mean of seeds) | min alloc % | moved % of placed | plans for waiting pods | defragmentation plans (searches without one) | whole-GPU pods that waited % | their mean wait (s) | whole-GPU pods waiting at the end | mean wait, every pod (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for f in "$OUT"/load__default__*.csv; do
  [ -f "$f" ] || continue
  case $f in
    *__w*h*.csv) win=${f##*__w}; win=${win%.csv}; win="${win%h*}–${win#*h}" ;;
    *) win="0.5–1.5" ;;
  esac
  awk -F, -v win="$win" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    $col["seed"] == "mean" {
      d = col["defrag_free"] ? $col["defrag_free"] : 0
      printf "| %.2f | %s | %g | %s | %.2f | %.2f | %.2f | %.1f | %s | %.2f | %.1f | %.1f | %.1f |\n",
        $col["load"], win, $col["budget_pct"], (d > 0 ? d : "—"), $col["alloc_pct"], $col["alloc_min_pct"],
        $col["moved_pct"], $col["plans"],
        (d > 0 ? sprintf("%.1f (%.1f)", $col["defrag_plans"], $col["defrag_failures"]) : "—"),
        $col["whole_waited_pct"], $col["whole_wait_mean_s"], $col["whole_waiting_end"],
        $col["all_wait_mean_s"] }' "$f"
done | sort -t'|' -k2,2n -k3,3 -k4,4n -k5,5n
