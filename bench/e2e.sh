#!/usr/bin/env bash
# e2e.sh [--k8s-version 1.26|1.36] NODES PODS -- end-to-end throughput with the real
# kube-scheduler (kit in GPUPACK_K8S, default ../shared/k8s; Kubernetes version from
# --k8s-version, else env K8S_VERSION, else the kit's default 1.26; every row names
# the version the control plane reported): gpupack as extender (aliyun-profile
# pods of 4 GiB on nodes of 4 x 16 GiB GPUs) vs the same scheduler without
# extender (CPU-only pods), each at kube-scheduler client QPS 50 and 500.
# Every run gets a fresh control plane. Prints a Markdown table.
#
#   bench/e2e.sh 1000 2000
#   bench/e2e.sh --k8s-version 1.36 1000 2000             # or K8S_VERSION=1.36 bench/e2e.sh ...
#   E2E_RUNS="gpupack:500 none:500" bench/e2e.sh 200 400   # a subset
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --k8s-version ]; then
  K8S_VERSION=${2:?usage: bench/e2e.sh [--k8s-version V] NODES PODS}
  shift 2
fi
export K8S_VERSION=${K8S_VERSION:-1.26}   # kube-up reads it
NODES=${1:?usage: bench/e2e.sh NODES PODS}
PODS=${2:?usage: bench/e2e.sh NODES PODS}
K8S=${GPUPACK_K8S:-../shared/k8s}
RUNS=${E2E_RUNS:-"gpupack:50 none:50 gpupack:500 none:500"}
THREADS=${E2E_THREADS:-16}
[ -x "$K8S/kube-up" ] || { echo "bench/e2e.sh: no kit at $K8S (set GPUPACK_K8S)" >&2; exit 1; }
make -s build bin/e2eload >/dev/null
WORK=$(mktemp -d /tmp/gpupack-e2ebench-XXXXXX)
# shellcheck source=bench/lib-controlplane.sh
. bench/lib-controlplane.sh

echo "| Kubernetes | scheduler | client QPS | pods | bound | pods/s (first create → last bind) | p50 create→bound | p99 | GPUs used / perfect | scheduler error lines | load tool alone |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for run in $RUNS; do
  mode=${run%%:*} qps=${run##*:}
  CP=$WORK/cp-$mode-$qps
  "$K8S/kube-up" "$CP" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; exit 1; }
  KC=$CP/kubeconfig
  # what the control plane runs (DIR/env), not what was asked
  kver=$(sed -n "s/^export K8S_VERSION=//p" "$CP/env" | tr -d "'\"")
  if [ "$mode" = gpupack ]; then
    bin/e2eload nodes --kubeconfig "$KC" --count "$NODES" --gpus 4 --gpu-gib 16 --threads "$THREADS"
    bin/gpupack serve --kubeconfig "$KC" --listen 127.0.0.1:0 --policies policies "${GPTLS[@]}" \
      >"$WORK/gpupack-$qps.log" 2>&1 &
    GP=$!
    port=""
    for _ in $(seq 200); do
      port=$(sed -n 's/.*listening on .*(port \([0-9]*\)).*/\1/p' "$WORK/gpupack-$qps.log" | head -1)
      [ -n "$port" ] && curl -sf "${CURLTLS[@]}" "$SCHEME://127.0.0.1:$port/readyz" >/dev/null && break
      sleep 0.1
    done
    bin/e2eload sched-config --port "$port" --qps "$qps" --tls-dir "$PWD/$TLS" >"$WORK/sched.json"
    profile=aliyun
  else
    bin/e2eload nodes --kubeconfig "$KC" --count "$NODES" --gpus 0 --threads "$THREADS"
    bin/e2eload sched-config --port 1 --qps "$qps" --no-extender >"$WORK/sched.json"
    profile=cpu
  fi
  "$K8S/kube-up" "$CP" --scheduler-config "$WORK/sched.json" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; exit 1; }
  out=$(bin/e2eload pods --kubeconfig "$KC" --ns "bench-$qps" --count "$PODS" --scheduler "$SCHED" \
        --profile "$profile" --gib 4 --gpu-gib 16 --threads "$THREADS" --timeout 900 || true)
  errs=$(grep -c '^E' "$CP/logs/kube-scheduler.log" || true)
  grep '^E' "$CP/logs/kube-scheduler.log" | cut -c1-300 | sort -k5 | head -3 | sed "s/^/  [$mode QPS $qps] /" >&2 || true
  j() { echo "$out" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
  gpus="—"
  [ "$mode" = gpupack ] && gpus="$(j gpus_used) / $(j gpus_perfect)"
  echo "| ${kver:-?} | $([ "$mode" = gpupack ] && echo 'gpupack extender' || echo 'no extender (CPU pods)') | $qps | $PODS | $(j bound) | $(j pods_per_s) | $(j p50_ms) ms | $(j p99_ms) ms | $gpus | $errs | $(j create_per_s) creates/s |"
  echo "$out" >>"$WORK/raw.jsonl"
  cleanup
done
