#!/bin/sh
# consolidate.sh -- churn and consolidation in the trace simulator (docs/simulator.md,
# "Churn and consolidation"): every trace variant, seeds 42..51, consolidation off and at
# budgets of 1, 2 and 5 % of placed pods moved.
#   bench/sim/consolidate.sh     CSVs under bench/results/consolidation/, then
#                                bench/results/consolidation-sim.md (the summary table)
# Uses $GPUPACK when set, else bin/gpupack. TRACES=DIR (default ../shared/traces).
# HORIZON/WARMUP (mean lifetimes, default 1.5 / 0.5), CHECKS (fits per plan search,
# default 2000), JOBS (threads, default 2), VARIANTS (default: all five), BUDGETS (default
# "0 1 2 5"), CHURN=0 / ARRIVALS=0 skip the churn / arrivals-only runs, REPORT=0 the summary.
set -eu
cd "$(dirname "$0")/../.."
T=${TRACES:-../shared/traces}
OUT=bench/results/consolidation
mkdir -p "$OUT"
SIM="${GPUPACK:-bin/gpupack} simulate"
NODES=$T/openb_node_list_gpu_node.csv
HORIZON=${HORIZON:-1.5}
WARMUP=${WARMUP:-0.5}
CHECKS=${CHECKS:-2000}
JOBS=${JOBS:-2}
# ideal mode with the shipped policy (docs/simulator.md: the deployment's figure is within
# 0.1-0.3 points of it and takes 5-7 x longer)
BASE="--scheduler-config none --policy policies/fragmentation-aware.yaml --quiet --csv --jobs $JOBS"

run() {   # file extra-args...
  f=$OUT/$1.csv; shift
  start=$(date +%s)
  nice $SIM --nodes "$NODES" $BASE "$@" > "$f"
  printf '%s %d s\n' "$f" $(( $(date +%s) - start ))
}

[ "${CHURN:-1}" = 0 ] || for V in ${VARIANTS:-default gpushare40 gpuspec10 multigpu20 cpu050}; do
  for B in ${BUDGETS:-0 1 2 5}; do
    # churn: exponential lifetimes (mean 1 h), offered load 130 %
    run "churn__${V}__b$B" --pods "$T/openb_pod_list_$V.csv" --label "churn-b$B" \
      --churn --churn-load 1.3 --churn-lifetime 3600 --churn-horizon "$HORIZON" \
      --churn-warmup "$WARMUP" --consolidate-budget "$B" --consolidate-checks "$CHECKS"
  done
done
# the reference protocol's arrivals (130 %), pods that fit nowhere waiting instead of failing
[ "${ARRIVALS:-1}" = 0 ] || for B in ${BUDGETS:-0 1 2 5}; do
  run "arrivals__default__b$B" --pods "$T/openb_pod_list_default.csv" --label "arrivals-b$B" \
    --churn --churn-load 1.3 --churn-lifetime 0 --consolidate-budget "$B" \
    --consolidate-checks "$CHECKS"
done
[ "${REPORT:-1}" = 0 ] || sh bench/sim/consolidate_report.sh > bench/results/consolidation-sim.table.md
