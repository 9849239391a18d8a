#!/bin/sh
# run.sh -- the trace-simulator experiments of docs/simulator.md.
#   bench/sim/run.sh            all tables (CSV under bench/results/), then the plot
# Uses $GPUPACK when set (e.g. GPUPACK=build/sim2/out/gpupack), else bin/gpupack
# when it has `simulate`, else builds bench/sim/driver.c.
set -eu
cd "$(dirname "$0")/../.."
T=${TRACES:-../shared/traces}
OUT=bench/results
mkdir -p "$OUT"
if [ -n "${GPUPACK:-}" ]; then
  SIM="$GPUPACK simulate"
elif [ -x bin/gpupack ] && bin/gpupack simulate --help >/dev/null 2>&1; then
  SIM="bin/gpupack simulate"
else
  make --no-print-directory BUILD_ROOT=build/sim build/sim/out/libgpupack.a >/dev/null
  cc -std=c11 -O2 -Iinclude bench/sim/driver.c build/sim/out/libgpupack.a \
    $(pkg-config --libs libmicrohttpd libcurl jansson yaml-0.1) -lpthread -lm -o build/sim/gpupack-sim
  SIM="build/sim/gpupack-sim simulate"
fi
NODES=$T/openb_node_list_gpu_node.csv

run() {   # label trace extra-args...
  label=$1; trace=$2; shift 2
  f="$OUT/$(basename "$trace" .csv)__$label.csv"
  start=$(date +%s.%N)
  $SIM --nodes "$NODES" --pods "$T/$trace.csv" --label "$label" --csv --quiet "$@" > "$f"
  end=$(date +%s.%N)
  printf '%s %s %.1f s\n' "$trace" "$label" "$(echo "$end - $start" | bc)" | tee -a "$OUT/wall_times.txt"
}

: > "$OUT/wall_times.txt"
D=openb_pod_list_default
I="--scheduler-config none --weight 5"   # ideal: gpupack alone over every node (prioritize: weight 5)
# the shipped deployment (manifests/base/scheduler-config.yaml + policies/) on every trace
for V in $D openb_pod_list_gpushare40 openb_pod_list_gpuspec10 openb_pod_list_multigpu20 openb_pod_list_cpu050; do
  run shipped $V
done
# ... with each node strategy in place of the default policy's (filter mode)
run shipped-random   $D --node-strategy random --gpu-strategy random
run shipped-best-fit $D --node-strategy best-fit --gpu-strategy best-fit
run shipped-fgd      $D --node-strategy fragmentation-aware --gpu-strategy fragmentation-aware
run shipped-fgd-bestfit $D --node-strategy fragmentation-aware-bestfit --gpu-strategy fragmentation-aware
# the previous deployment: managedResources, adaptive sample, weight 5, binpack prioritize,
# gpupack blind to CPU (CPU-only pods placed by kube-scheduler alone)
run previous $D --scheduler-config bench/sim/scheduler-config-managed.yaml \
  --policy bench/sim/policy-binpack.yaml --extender-no-cpu
# ideal mode: both deployment modes
run random      $D $I --node-strategy random --gpu-strategy random --mode both
run best-fit    $D $I --node-strategy best-fit --gpu-strategy best-fit --mode both
run fgd-paper   $D $I --node-strategy fragmentation-aware --gpu-strategy fragmentation-aware --mode both --shape-weight pods
run fgd         $D $I --node-strategy fragmentation-aware --gpu-strategy fragmentation-aware --mode both
run fgd-bestfit  $D $I --node-strategy fragmentation-aware-bestfit --gpu-strategy fragmentation-aware --mode both
run fgd-lookahead-policy $D $I --policy policies/fragmentation-aware.yaml --mode both
run fgd-lookahead-kubecpu $D $I --policy policies/fragmentation-aware.yaml --cpu-pods kube
for V in openb_pod_list_gpushare40 openb_pod_list_gpuspec10 openb_pod_list_multigpu20 openb_pod_list_cpu050; do
  run best-fit    $V $I --node-strategy best-fit --gpu-strategy best-fit --mode filter
  run fgd-bestfit $V $I --node-strategy fragmentation-aware-bestfit --gpu-strategy fragmentation-aware --mode filter
  run fgd-lookahead-policy $V $I --policy policies/fragmentation-aware.yaml --mode filter
done
# speed: wall time of one full 10-seed default-trace experiment per policy, filter mode only
speed() {   # label args...
  label=$1; shift
  start=$(date +%s.%N)
  $SIM --nodes "$NODES" --pods "$T/$D.csv" --quiet --csv --mode filter $I "$@" > /dev/null
  end=$(date +%s.%N)
  printf 'speed %s filter %.1f s\n' "$label" "$(echo "$end - $start" | bc)" | tee -a "$OUT/wall_times.txt"
}
speed random      --node-strategy random --gpu-strategy random
speed best-fit    --node-strategy best-fit --gpu-strategy best-fit
speed fgd         --node-strategy fragmentation-aware --gpu-strategy fragmentation-aware
speed fgd-bestfit --node-strategy fragmentation-aware-bestfit --gpu-strategy fragmentation-aware
speed fgd-lookahead-policy --policy policies/fragmentation-aware.yaml
sh bench/sim/report.sh
