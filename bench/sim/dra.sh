#!/usr/bin/env bash
# dra.sh -- the simulator's DRA mode on the openb traces (docs/dra.md, docs/simulator.md):
# kube-scheduler alone (its node scores, the DRA allocator's first fit) against
# kube-scheduler with the shipped gpupack stanza, seeds 42..51, every pod list.
# Usage: bench/sim/dra.sh [TRACES_DIR] > bench/results/dra-sim.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
T=${1:-../shared/traces}
for pods in default gpushare40 gpuspec10 multigpu20 cpu050; do
  for cfg in bench/sim/scheduler-config-no-extender.yaml manifests/base/scheduler-config.yaml; do
    who=$([ "$cfg" = manifests/base/scheduler-config.yaml ] && echo "with gpupack" || echo "kube-scheduler alone")
    line=$(./bin/gpupack simulate --nodes "$T/openb_node_list_gpu_node.csv" \
      --pods "$T/openb_pod_list_$pods.csv" --dra --scheduler-config "$cfg" --quiet 2>/dev/null |
      awk '/^mean/ {print "alloc " $3 " %, unallocated GPUs " $4 ", frag " $5 " %, failed pods " $6}')
    echo "openb_pod_list_$pods | $who | $line"
  done
done
