#!/usr/bin/env bash
# scale-pairs.sh -- bench/scale.sh repeated, its runs interleaved, the ratios summarised.
#
#   bench/scale-pairs.sh [--k8s-version V] [--pairs N] NODES PODS
#   SCALE_SHAPE=gpu-only SCALE_RUNS="gpupack:backlog none:backlog gpupods:backlog" \
#     bench/scale-pairs.sh --k8s-version 1.36 --pairs 3 1000 2000
#
# On a shared VM the CPU a pod costs can change by a third from one minute to the next
# (bench/results/scale.md, 1 December), so one gpupack run against one baseline run says
# little. This runs bench/scale.sh N times (default 3) into SCALE_OUT/pair-K, every
# variable of it passed through, the order of SCALE_RUNS reversed on every other pair so
# that a drift of the machine does not always favour the same mode, and then prints for
# each pair the pods/s of every mode and gpupack's ratio to each baseline in that pair,
# then the ratio's min / median / max and the median CPU milliseconds per pod by process.
# SCALE_PAIRS_REPORT_ONLY=1 prints the summary of SCALE_OUT's pairs again without running.
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
PAIRS=3
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=${2:?--pairs N}; shift 2 ;;
    --k8s-version) args+=(--k8s-version "${2:?--k8s-version V}"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
case $PAIRS in ''|*[!0-9]*|0) echo "scale-pairs.sh: --pairs takes a positive whole number, not '$PAIRS'" >&2; exit 2 ;; esac
OUT=${SCALE_OUT:-$(mktemp -d /tmp/gpupack-scalepairs-XXXXXX)}
mkdir -p "$OUT"
RUNS=${SCALE_RUNS:-"gpupack:backlog none:backlog"}
reversed=$(echo "$RUNS" | tr ' ' '\n' | tac | tr '\n' ' ' | sed 's/ $//')
if [ -z "${SCALE_PAIRS_REPORT_ONLY:-}" ]; then
  for k in $(seq "$PAIRS"); do
    order=$RUNS
    [ $((k % 2)) -eq 0 ] && order=$reversed
    echo "== pair $k of $PAIRS ($order), $(date -u '+%H:%M:%S') UTC" >&2
    # a failed pair is reported as missing ("—") and the others still run
    SCALE_OUT=$OUT/pair-$k SCALE_RUNS=$order bench/scale.sh "${args[@]}" >"$OUT/pair-$k.txt" ||
      echo "scale-pairs.sh: pair $k failed (exit $?); its output: $OUT/pair-$k.txt" >&2
  done
fi
echo "# bench/scale-pairs.sh ${args[*]} -- $PAIRS pairs of \"$RUNS\", shape ${SCALE_SHAPE:-trace}, $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M') UTC"
echo "# raw figures: $OUT"
python3 - "$OUT" "$PAIRS" "$RUNS" <<'PY'
import json, statistics, sys
out, pairs, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
rows = []
for k in range(1, pairs + 1):
    r = {}
    for run in runs:
        try:
            r[run] = json.load(open(f"{out}/pair-{k}/result-{run.replace(':', '-')}.json"))
        except (OSError, ValueError):
            r[run] = None
    rows.append(r)
gp = [run for run in runs if run.startswith("gpupack:")]
bases = [run for run in runs if not run.startswith("gpupack:")]
def rate(x):
    return x.get("pods_per_s") if x and x.get("pods_per_s") else None
print()
print("| pair | " + " | ".join(f"{run} pods/s" for run in runs) + " | "
      + " | ".join(f"{g.split(':')[0]} / {b.split(':')[0]}" for g in gp for b in bases) + " |")
print("|---" * (1 + len(runs) + len(gp) * len(bases)) + "|")
ratios = {(g, b): [] for g in gp for b in bases}
for k, r in enumerate(rows, 1):
    cells = [f"{rate(r[run]):.1f}" if rate(r[run]) else "—" for run in runs]
    for g in gp:
        for b in bases:
            if rate(r[g]) and rate(r[b]):
                q = 100.0 * rate(r[g]) / rate(r[b])
                ratios[(g, b)].append(q)
                cells.append(f"{q:.0f} %")
            else:
                cells.append("—")
    print(f"| {k} | " + " | ".join(cells) + " |")
print()
for (g, b), qs in ratios.items():
    if qs:
        print(f"- {g.split(':')[0]} / {b.split(':')[0]}: min {min(qs):.0f} %, median "
              f"{statistics.median(qs):.0f} %, max {max(qs):.0f} % over {len(qs)} pairs")
print()
print("Median CPU milliseconds per pod over the pairs (first bind → quiet after the last bind):")
print()
procs = ["etcd", "kube-apiserver", "kube-scheduler", "gpupack", "load"]
print("| run | " + " | ".join(procs) + " | total |")
print("|---" * (len(procs) + 2) + "|")
for run in runs:
    per = {p: [] for p in procs + ["total"]}
    for r in rows:
        x = r[run]
        if not x or not x.get("bound"):
            continue
        cpu = x.get("cpu_s_scheduling") or {}
        tot = 0.0
        for p in procs:
            if p in cpu:
                v = 1000.0 * cpu[p] / x["bound"]
                per[p].append(v)
                tot += v
        per["total"].append(tot)
    cells = [f"{statistics.median(per[p]):.2f}" if per[p] else "—" for p in procs + ["total"]]
    print(f"| {run} | " + " | ".join(cells) + " |")
PY
