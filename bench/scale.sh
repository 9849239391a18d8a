#!/usr/bin/env bash
# scale.sh [--k8s-version 1.26|1.36] NODES PODS -- production-scale throughput through the
# real kube-scheduler (kit in GPUPACK_K8S, default ../shared/k8s; Kubernetes version from
# --k8s-version, else env K8S_VERSION, else the kit's default 1.26): NODES nodes of 8 GPUs whose models are mixed like the openb trace's GPUs,
# PODS pods sampled (seeded) from the openb default trace -- CPU-only, GPU shares,
# 1/2/4/8 whole GPUs -- scheduled with the shipped scheduler configuration and
# policies (gpupack), and the same pods on the same nodes without the extender
# (kube-scheduler alone; the shipped profile ignores gpupack's resources).
#
# Every run gets a fresh control plane. Arrival "backlog" (the default) creates
# every pod while kube-scheduler is stopped and then starts it: pods/s measure the
# scheduler, not the creation rate. Arrival "stream" creates the pods while the
# scheduler runs (create -> bound latency under arrival). Prints Markdown tables;
# raw figures, metrics (gpupack's, kube-apiserver's, kube-scheduler's) and the pods/s
# plot go to SCALE_OUT. Flags for kube-scheduler pass through the kit's
# K8S_SCHEDULER_ARGS, e.g. K8S_SCHEDULER_ARGS=--feature-gates=OpportunisticBatching=false.
#
#   bench/scale.sh 5000 20000
#   SCALE_RUNS="gpupack:stream none:stream" bench/scale.sh 1000 2000
#   bench/scale.sh --k8s-version 1.36 200 800          # or K8S_VERSION=1.36 bench/scale.sh ...
#   SCALE_SHAPE=gpu-only bench/scale.sh --k8s-version 1.36 1000 2000
#
# One pair is one sample of a machine whose speed may swing between runs: bench/scale-pairs.sh
# repeats this script with the order of the runs alternating and prints min / median / max.
#
# Shapes (SCALE_SHAPE): "trace" (the default) as above. "gpu-only": every pod asks GPUs (the
# trace's GPU pods only) and the scheduler configuration sends only them to gpupack
# (managedResources, ignoredByScheduler); the baseline schedules the same pods asking only their
# CPU and memory, without an extender. Here the extender cannot save kube-scheduler work: with
# the shipped configuration every pod, CPU-only ones included, goes through gpupack, whose
# filter often answers a single node, which leaves kube-scheduler's scoring little to do (the
# likely reason gpupack's run beats the baseline on v1.26, bench/results/scale.md); in this
# shape every pod costs the extender calls on top of kube-scheduler's full work.
# Mode "gpupods" (SCALE_RUNS="gpupack:backlog none:backlog gpupods:backlog") is a second
# baseline: kube-scheduler alone with gpupack's own pods, GPU requests kept (NodeResourcesFit
# ignores gpupack.io's resources, as in the shipped profile). In gpu-only it tells what the pods'
# extended resources cost kube-scheduler itself (its Fit filter checks each such resource name
# against a regular expression on every node) from what the extender costs; in trace it is
# the "none" run again.
#
# Environment: SCALE_RUNS (mode:arrival list; default "gpupack:backlog none:backlog"; "filter-only":
# just the filter latency on the cluster dump already in SCALE_OUT), SCALE_REPORT_ONLY=1 (print
# the report of SCALE_RUNS from the files in SCALE_OUT again, without running),
# SCALE_QPS (kube-scheduler clientConnection.qps, default 500; burst 2x), SCALE_SEED (42),
# SCALE_THREADS (create connections, 16), SCALE_OUT (default a new /tmp directory),
# SCALE_GPUPACK_BIN (the binary to measure, default bin/gpupack),
# SCALE_GPUPACK_ARGS (extra `gpupack serve` flags), SCALE_WRAP (a command gpupack runs
# under, e.g. "valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p"), SCALE_GLIBC_TUNABLES
# (gpupack's GLIBC_TUNABLES; default what the image sets, "" for glibc's defaults), SCALE_PERF=1
# (a whole-machine `perf record -a -g` from kube-scheduler's start to the quiet after the
# last bind; the CPU by process, library and function goes to SCALE_OUT/perf-RUN.txt),
# SCALE_PERF=gpupack (the gpupack runs only: gpupack's process alone with dwarf call graphs,
# and its system calls and context switches by thread, over the same window; its CPU by
# thread and stage of the request path, bench/perf-gpupack.py, goes to perf-gpupack-RUN.txt),
# SCALE_SCHED_CONFIG (the KubeSchedulerConfiguration every run starts from, default the shipped
# manifests/base/scheduler-config.yaml; the baseline drops its extenders, so a setting such as
# percentageOfNodesToScore applies to both sides of a pair).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --k8s-version ]; then
  K8S_VERSION=${2:?usage: bench/scale.sh [--k8s-version V] NODES PODS}
  shift 2
fi
NODES=${1:?usage: bench/scale.sh [--k8s-version V] NODES PODS}
PODS=${2:?usage: bench/scale.sh [--k8s-version V] NODES PODS}
K8S=${GPUPACK_K8S:-../shared/k8s}
RUNS=${SCALE_RUNS:-"gpupack:backlog none:backlog"}
[ "$RUNS" = filter-only ] && RUNS=""   # only the wrk filter figures, on SCALE_OUT's cluster dump
DO_RUNS=1
[ -n "${SCALE_REPORT_ONLY:-}" ] && DO_RUNS=""   # the report of SCALE_RUNS from SCALE_OUT's files again
QPS=${SCALE_QPS:-500}
PERF_GP_HZ=999   # SCALE_PERF=gpupack's sampling rate
SHAPE=${SCALE_SHAPE:-trace}
SCHED_CFG=${SCALE_SCHED_CONFIG:-manifests/base/scheduler-config.yaml}
[ -r "$SCHED_CFG" ] || { echo "bench/scale.sh: SCALE_SCHED_CONFIG: cannot read $SCHED_CFG" >&2; exit 2; }
case $SHAPE in
  trace) GP_SCHED=() GP_PODS=() BASE_PODS=() ;;
  gpu-only) GP_SCHED=(--managed) GP_PODS=(--gpu-only) BASE_PODS=(--gpu-only --strip-gpu) ;;
  *) echo "bench/scale.sh: SCALE_SHAPE is trace or gpu-only, not $SHAPE" >&2; exit 2 ;;
esac
SEED=${SCALE_SEED:-42}
THREADS=${SCALE_THREADS:-16}
TRACES=${GPUPACK_SHARED:-../shared}/traces
VERSION=${K8S_VERSION:-1.26}
export K8S_VERSION=$VERSION
[ -x "$K8S/kube-up" ] || { echo "bench/scale.sh: no kit at $K8S (set GPUPACK_K8S)" >&2; exit 1; }
[ -f "$TRACES/openb_pod_list_default.csv" ] || { echo "bench/scale.sh: no traces in $TRACES" >&2; exit 1; }
make -s build bin/e2eload >/dev/null
OUT=${SCALE_OUT:-$(mktemp -d /tmp/gpupack-scale-XXXXXX)}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/gpupack-scalework-XXXXXX)
# a rebuild during the run must not change the binary under test
cp "${SCALE_GPUPACK_BIN:-bin/gpupack}" "$WORK/gpupack"
# shellcheck source=bench/lib-controlplane.sh
. bench/lib-controlplane.sh
TRACE=(--trace-nodes "$TRACES/openb_node_list_gpu_node.csv" --trace-pods "$TRACES/openb_pod_list_default.csv"
       --seed "$SEED")
# shellcheck disable=SC2206
WRAP=(${SCALE_WRAP:-})
# the image's allocator setting (Dockerfile ENV; test_manifests checks that the two agree)
SCALE_GLIBC_TUNABLES=${SCALE_GLIBC_TUNABLES-glibc.malloc.tcache_count=0}
# shellcheck disable=SC2206
GPARGS=(${SCALE_GPUPACK_ARGS:-})

echo "# bench/scale.sh $NODES $PODS -- shape $SHAPE, kube $VERSION, client QPS $QPS, seed $SEED, $(date -u '+%F %H:%M UTC'), $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo '+changes'), gpupack $("$WORK/gpupack" version 2>/dev/null || echo '?')${SCALE_GPUPACK_BIN:+ ($SCALE_GPUPACK_BIN)}${SCALE_GPUPACK_ARGS:+ $SCALE_GPUPACK_ARGS}, GLIBC_TUNABLES '$SCALE_GLIBC_TUNABLES',${SCALE_SCHED_CONFIG:+ scheduler configuration $SCALE_SCHED_CONFIG,} load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# raw figures: $OUT"
# perf_stop TAG [GPUPACK_PID]: ends the run's profile. SCALE_PERF=gpupack: gpupack's CPU by thread
# and stage, and its system calls per pod (bench/perf-gpupack.py), go to perf-gpupack-TAG.txt; else
# the whole-machine summary (by process, library, Go package and function: bench/perf-summary.py)
# goes to perf-TAG.txt
perf_stop() {
  local pid pids
  pids=$(cat "$WORK/perf.pid" 2>/dev/null) || return 0
  rm -f "$WORK/perf.pid"
  for pid in $pids; do
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  done
  if [ "${SCALE_PERF:-}" = gpupack ]; then
    local bound
    bound=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bound"])' \
            "$OUT/result-$1.json" 2>/dev/null || echo 0)
    { echo "# perf record --call-graph dwarf -F $PERF_GP_HZ -p GPUPACK ($1) and perf stat --per-thread:" \
           "kube-scheduler's start to the quiet after the last bind"
      bench/perf-gpupack.py "$OUT/perf-gpupack-$1.data" "$PERF_GP_HZ" "$bound" \
        "$OUT/stat-gpupack-$1.txt"; } >"$OUT/perf-gpupack-$1.txt" 2>&1 || true
    return 0
  fi
  local named=("etcd=$(cat "$CP/run/etcd.pid")" "kube-apiserver=$(cat "$CP/run/kube-apiserver.pid")"
               "kube-scheduler=$(cat "$CP/run/kube-scheduler.pid")")
  [ -n "${2:-}" ] && named+=("gpupack=$2")
  { echo "# perf record -a -g -F 199 ($1): kube-scheduler's start to the quiet after the last bind"
    bench/perf-summary.py "$OUT/perf-$1.data" "${named[@]}"; } >"$OUT/perf-$1.txt" 2>&1 || true
}

# CPU seconds of each of gpupack's threads over its life, summed by thread name (gpupack names its
# threads, libmicrohttpd its own "MHD-…", the main thread keeps the process's). Threads that ended (a
# verbs connection that closed) are only in the process's total: "(ended threads)".
thread_cpu() {
  python3 - "$1" <<'PY'
import os, sys
pid, hz = sys.argv[1], os.sysconf("SC_CLK_TCK")
def ticks(path):
    f = open(path).read()
    rest = f[f.rindex(")") + 2:].split()   # from field 3 (state) on
    return int(rest[11]) + int(rest[12])   # utime, stime: fields 14 and 15
by, count = {}, {}
for tid in os.listdir(f"/proc/{pid}/task"):
    try:
        name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
        t = ticks(f"/proc/{pid}/task/{tid}/stat")
    except OSError:
        continue   # ended meanwhile
    by[name] = by.get(name, 0) + t
    count[name] = count.get(name, 0) + 1
total = ticks(f"/proc/{pid}/stat")
for name in sorted(by, key=lambda k: -by[k]):
    print(f"{name}\t{count[name]}\t{by[name] / hz:.2f}")
print(f"(ended threads)\t-\t{max(total - sum(by.values()), 0) / hz:.2f}")
print(f"(total)\t-\t{total / hz:.2f}")
PY
}

for run in ${DO_RUNS:+$RUNS}; do
  mode=${run%%:*} arrival=${run##*:}
  tag=$mode-$arrival
  CP=$WORK/cp-$tag
  "$K8S/kube-up" "$CP" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; exit 1; }
  KC=$CP/kubeconfig
  # what the control plane runs (DIR/env), not what was asked
  sed -n "s/^export K8S_VERSION=//p" "$CP/env" | tr -d "'\"" >"$OUT/kube-version-$tag.txt"
  bin/e2eload nodes --kubeconfig "$KC" --count "$NODES" "${TRACE[@]}" --threads "$THREADS" 2>"$OUT/nodes-$tag.log"
  pids="etcd=@$CP/run/etcd.pid,kube-apiserver=@$CP/run/kube-apiserver.pid,kube-scheduler=@$CP/run/kube-scheduler.pid"
  if [ "$mode" = gpupack ]; then
    : >"$OUT/gpupack-$tag.log"   # there before the loop below reads it
    GLIBC_TUNABLES=$SCALE_GLIBC_TUNABLES "${WRAP[@]}" "$WORK/gpupack" serve --kubeconfig "$KC" --listen 127.0.0.1:0 --policies policies "${GPTLS[@]}" \
      "${GPARGS[@]}" >"$OUT/gpupack-$tag.log" 2>&1 &
    GP=$!
    port=""
    for _ in $(seq 600); do
      port=$(sed -n 's/.*listening on .*(port \([0-9]*\)).*/\1/p' "$OUT/gpupack-$tag.log" | head -1 || true)
      [ -n "$port" ] && curl -sf "${CURLTLS[@]}" "$SCHEME://127.0.0.1:$port/readyz" >/dev/null && break
      sleep 0.2
    done
    bin/e2eload sched-config --shipped "$SCHED_CFG" --port "$port" --qps "$QPS" --tls-dir "$PWD/$TLS" "${GP_SCHED[@]}" >"$WORK/sched.json"
    pids="$pids,gpupack=$GP"
    dump=(--dump "$OUT/cluster-$tag.json")
    shape=("${GP_PODS[@]}")
  else
    dump=()
    shape=("${BASE_PODS[@]}")
    [ "$mode" = gpupods ] && shape=("${GP_PODS[@]}")
    bin/e2eload sched-config --shipped "$SCHED_CFG" --port 1 --qps "$QPS" --no-extender >"$WORK/sched.json"
  fi
  start_sched="$K8S/kube-up $CP --scheduler-config $WORK/sched.json >>$WORK/up.log 2>&1"
  if [ "${SCALE_PERF:-}" = gpupack ]; then
    # gpupack alone, from kube-scheduler's start: dwarf call graphs (gpupack has no frame
    # pointers) and the system calls and switches of each thread
    [ "$mode" = gpupack ] && start_sched="{ perf record --call-graph dwarf,32768 -F $PERF_GP_HZ -p $GP \
      -o $OUT/perf-gpupack-$tag.data >$WORK/perf.log 2>&1 & echo \$! >$WORK/perf.pid;
      perf stat --per-thread -e raw_syscalls:sys_enter,context-switches -p $GP \
      -o $OUT/stat-gpupack-$tag.txt >>$WORK/perf.log 2>&1 & echo \$! >>$WORK/perf.pid; }; $start_sched"
  elif [ -n "${SCALE_PERF:-}" ]; then
    # the profile covers scheduling only: it starts with kube-scheduler
    start_sched="{ perf record -a -g -F 199 -o $OUT/perf-$tag.data >$WORK/perf.log 2>&1 & echo \$! >$WORK/perf.pid; }; $start_sched"
  fi
  backlog=()
  if [ "$arrival" = backlog ]; then
    backlog=(--backlog "$start_sched")
  else
    eval "$start_sched" || { cat "$WORK/up.log" >&2; exit 1; }
  fi
  out=$(bin/e2eload pods --kubeconfig "$KC" --ns bench --count "$PODS" --scheduler "$SCHED" --profile openb \
        "${TRACE[@]}" --threads "$THREADS" --timeout 3600 --pids "$pids" --timeline "$OUT/timeline-$tag.csv" \
        "${backlog[@]}" "${dump[@]}" "${shape[@]}" 2>"$OUT/pods-$tag.log" || true)
  echo "$out" >"$OUT/result-$tag.json"
  if [ -n "${SCALE_PERF:-}" ]; then perf_stop "$tag" "$([ "$mode" = gpupack ] && echo "$GP")"; fi
  if [ "$mode" = gpupack ]; then
    curl -sf "${CURLTLS[@]}" "$SCHEME://127.0.0.1:$port/metrics" >"$OUT/metrics-gpupack-$tag.txt" || true
    thread_cpu "$GP" >"$OUT/threads-gpupack-$tag.txt" 2>/dev/null || true
  fi
  (. "$CP/env" && curl -sf --cacert "$K8S_CA" --oauth2-bearer "$(cat "$K8S_TOKEN_FILE")" \
     "$K8S_APISERVER/metrics" >"$OUT/metrics-apiserver-$tag.txt") || true
  # kube-scheduler's own (its serving certificate is self-signed: loopback, read-only)
  (. "$CP/env" && [ -n "${K8S_SCHEDULER_URL:-}" ] && curl -sfk --oauth2-bearer "$(cat "$K8S_TOKEN_FILE")" \
     "$K8S_SCHEDULER_URL/metrics" >"$OUT/metrics-scheduler-$tag.txt") || true
  grep -c '^E' "$CP/logs/kube-scheduler.log" >"$OUT/sched-errors-$tag.txt" || true
  grep '^E' "$CP/logs/kube-scheduler.log" | cut -c1-300 | sort -k5 | head -3 | sed "s/^/  [$tag] /" >&2 || true
  cleanup
done

# ------------------------------------------------------------------ report --
python3 - "$OUT" "$RUNS" "$PODS" <<'PY'
import json, os, re, sys
out, runs, pods = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
res = {}
for run in runs:
    tag = run.replace(":", "-")
    try:
        res[run] = json.load(open(f"{out}/result-{tag}.json"))
    except Exception:
        res[run] = None
def quantiles(text, series, match):
    """p50, p99 (linear within a bucket), mean and count of a Prometheus histogram,
    label sets that match summed."""
    buckets, total_sum, total_n = {}, 0.0, 0
    for line in text.splitlines():
        if not all(m in line for m in match):
            continue
        if line.startswith(series + "_bucket{"):
            le = line.split('le="')[1].split('"')[0]
            le = float("inf") if le == "+Inf" else float(le)
            buckets[le] = buckets.get(le, 0) + float(line.split()[-1])
        elif line.startswith(series + "_sum"):
            total_sum += float(line.split()[-1])
        elif line.startswith(series + "_count"):
            total_n += int(float(line.split()[-1]))
    b = sorted(buckets.items())
    if not b or b[-1][1] == 0:
        return None
    out = []
    for q in (0.5, 0.99):
        want, prev_le, prev_n = q * b[-1][1], 0.0, 0.0
        for le, n in b:
            if n >= want:
                out.append(prev_le if le == float("inf") else prev_le + (le - prev_le) * (want - prev_n) / max(n - prev_n, 1e-9))
                break
            prev_le, prev_n = le, n
    return out[0], out[1], total_sum / max(total_n, 1), total_n
def base(run, mode="none"):
    m, a = run.split(":")
    return res.get(f"{mode}:{a}") if m == "gpupack" else None
def pct(r, b):
    return f"{100*r['pods_per_s']/b['pods_per_s']:.0f} %" if b and b.get("pods_per_s") else "—"
print()
print("| Kubernetes | scheduler | arrival | bound | pods/s | of baseline | of gpupack's pods alone | p50 | p99 | GPUs used / ideal | over-committed GPUs | gpupack peak RSS | scheduler errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for run in runs:
    r = res[run]
    m, a = run.split(":")
    if not r:
        print(f"| ? | {m} | {a} | (no result) |"); continue
    ratio, ratio2 = pct(r, base(run)), pct(r, base(run, "gpupods"))
    lat = "start→bound" if a == "backlog" else "create→bound"
    gpus = f"{r['gpus_used']} / {r['gpus_perfect']}" if m == "gpupack" else "—"
    oc = str(r["overcommitted_gpus"]) if m == "gpupack" else "—"
    rss = f"{r['peak_rss_mib'].get('gpupack', 0):.1f} MiB" if m == "gpupack" else "—"
    errs = open(f"{out}/sched-errors-{run.replace(':','-')}.txt").read().strip() or "0"
    try:
        kv = open(f"{out}/kube-version-{run.replace(':','-')}.txt").read().strip() or "?"
    except OSError:
        kv = "?"
    who = {"gpupack": "gpupack extender", "gpupods": "no extender, gpupack's pods"}.get(m, "no extender")
    print(f"| {kv} | {who} | {a} | {r['bound']}/{r['pods']} | {r['pods_per_s']} | {ratio} | {ratio2} "
          f"| {r['p50_ms']/1000:.2f} s ({lat}) | {r['p99_ms']/1000:.2f} s | {gpus} | {oc} | {rss} | {errs} |")
print()
comps = ["etcd", "kube-apiserver", "kube-scheduler", "gpupack", "load"]
for key, what in (("cpu_s_scheduling", "first bind → quiet after the last bind"), ("cpu_s", "first create → quiet after the last bind")):
    have = [run for run in runs if res[run] and key in res[run]]
    if not have:
        continue
    print(f"CPU milliseconds per pod ({what}):")
    print()
    print("| scheduler | arrival | " + " | ".join(comps) + " | total |")
    print("|---|---|" + "---|" * (len(comps) + 1))
    for run in have:
        r = res[run]; m, a = run.split(":")
        c = r[key]
        vals = [c.get(k) for k in comps]
        tot = sum(v for v in vals if v)
        n = r["bound"] or 1
        print(f"| {m} | {a} | " + " | ".join("—" if v is None else f"{1000*v/n:.2f}" for v in vals) + f" | {1000*tot/n:.2f} |")
    print()
# gpupack's CPU by thread, over its whole life (its LISTs included)
for run in runs:
    m, a = run.split(":")
    if m != "gpupack" or not res[run]:
        continue
    try:
        rows = [l.rstrip("\n").split("\t") for l in open(f"{out}/threads-gpupack-{run.replace(':', '-')}.txt")]
    except OSError:
        continue
    n = res[run]["bound"] or 1
    print(f"gpupack's CPU by thread over its life ({a}; /proc/PID/task; ms per pod bound):")
    print()
    print("| thread | threads | CPU s | ms per pod |")
    print("|---|---|---|---|")
    for name, k, sec in rows:
        print(f"| {name} | {k} | {float(sec):.2f} | {1000 * float(sec) / n:.3f} |")
    print()
# gpupack's own API requests
for run in runs:
    m, a = run.split(":")
    if m != "gpupack" or not res[run]:
        continue
    tag = run.replace(":", "-")
    try:
        text = open(f"{out}/metrics-gpupack-{tag}.txt").read()
    except OSError:
        continue
    rows = {}
    for fam, col in (("gpupack_kube_requests_total", 0), ("gpupack_kube_request_sent_bytes_total", 1),
                     ("gpupack_kube_response_received_bytes_total", 2)):
        for mm in re.finditer(fam + r'\{verb="([^"]*)",resource="([^"]*)",subresource="([^"]*)"\} (\d+)', text):
            k = (mm.group(1), mm.group(2) + ("/" + mm.group(3) if mm.group(3) else ""))
            rows.setdefault(k, [0, 0, 0])[col] = int(mm.group(4))
    n = res[run]["bound"] or 1
    print(f"gpupack's API requests ({a}, {n} pods bound), from gpupack_kube_requests_total:")
    print()
    print("| verb | resource | requests | per pod | bytes sent per pod | bytes received per pod |")
    print("|---|---|---|---|---|---|")
    for (verb, resrc), (cnt, snt, rcv) in sorted(rows.items(), key=lambda kv: -kv[1][0]):
        print(f"| {verb} | {resrc} | {cnt} | {cnt/n:.3f} | {snt/n:.0f} | {rcv/n:.0f} |")
    mc = re.search(r"^gpupack_kube_connections_total (\d+)", text, re.M)
    hc = re.search(r"^gpupack_http_connections_total (\d+)", text, re.M)
    cc = re.search(r'^gpupack_http_client_chain_checks_total\{result="cached"\} (\d+)', text, re.M)
    ev = dict(re.findall(r'^gpupack_events_total\{result="(\w+)"\} (\d+)', text, re.M))
    print()
    print(f"Connections: gpupack opened {mc.group(1) if mc else '?'} to the API server; "
          f"kube-scheduler opened {hc.group(1) if hc else '?'} to gpupack (TLS handshakes; "
          f"{cc.group(1) if cc else '?'} client chains found verified already). "
          f"Events created: {ev.get('created', '?')}.")
    try:
        api = open(f"{out}/metrics-apiserver-{tag}.txt").read()
    except OSError:
        api = ""
    for name, t, series, match in (
            ("filter in gpupack (request read → answer queued)", text, "gpupack_request_duration_seconds", ['verb="filter"']),
            ("bind in gpupack (request read → answer queued)", text, "gpupack_request_duration_seconds", ['verb="bind"']),
            ("gpupack's Binding call", text, "gpupack_api_bind_duration_seconds", []),
            ("Binding in kube-apiserver (its own histogram)", api, "apiserver_request_duration_seconds",
             ['resource="pods"', 'subresource="binding"', 'verb="POST"'])):
        q = quantiles(t, series, match)
        if q:
            print(f"- {name}: p50 {q[0]*1000:.2f} ms, p99 {q[1]*1000:.2f} ms, mean {q[2]*1000:.2f} ms over {q[3]}")
    fc = dict(re.findall(r'^gpupack_fit_cache_total\{result="(\w+)"\} (\d+)', text, re.M))
    lw = dict(re.findall(r'^gpupack_store_lock_wait_seconds_total\{mode="(\w+)"\} ([0-9.]+)', text, re.M))
    ln = dict(re.findall(r'^gpupack_store_lock_waits_total\{mode="(\w+)"\} (\d+)', text, re.M))
    if fc:
        h, m = int(fc.get("hit", 0)), int(fc.get("miss", 0))
        print(f"- fit cache: {h} hits, {m} misses ({100*h/max(h+m,1):.1f} % hits)")
    if ln:
        print(f"- store lock: {ln.get('read','?')} reads waited {float(lw.get('read',0))*1000:.1f} ms in all, "
              f"{ln.get('write','?')} writes waited {float(lw.get('write',0))*1000:.1f} ms in all")
    for verb in ("filter", "prioritize", "bind"):
        cnt = re.search(r'gpupack_http_requests_total\{route="%s",code="2xx"\} (\d+)' % verb, text)
        bi = re.search(r'gpupack_http_request_bytes_total\{verb="%s"\} (\d+)' % verb, text)
        bo = re.search(r'gpupack_http_response_bytes_total\{verb="%s"\} (\d+)' % verb, text)
        if cnt and int(cnt.group(1)):
            c = int(cnt.group(1))
            sizes = f", {int(bi.group(1))/c:.0f} bytes in, {int(bo.group(1))/c:.0f} bytes out per call" if bi and bo else ""
            print(f"- {verb}: {c} calls ({c/n:.2f} per pod){sizes}")
    print()
# kube-scheduler >= 1.35: opportunistic batching (KEP-5598) reuses a pod's filter and score
# results for the next pod of the same signature; a profile with an extender never signs pods
batch = {}
for run in runs:
    try:
        st = open(f"{out}/metrics-scheduler-{run.replace(':','-')}.txt").read()
    except OSError:
        continue
    att = dict(re.findall(r'^scheduler_batch_attempts_total\{[^}]*result="(\w+)"[^}]*\} (\d+)', st, re.M))
    fl = dict(re.findall(r'^scheduler_batch_cache_flushed_total\{[^}]*reason="(\w+)"[^}]*\} (\d+)', st, re.M))
    if att:
        batch[run] = (att, fl)
    elif res.get(run):
        batch[run] = None
if any(batch.values()):
    print("kube-scheduler's opportunistic batching (scheduler_batch_attempts_total; off for a profile with an extender):")
    print()
    for run, b in batch.items():
        if b:
            att, fl = b
            flushed = ", ".join(f"{k} {v}" for k, v in sorted(fl.items())) or "none"
            print(f"- {run}: hint used {att.get('hint_used', '0')}, hint not used {att.get('hint_not_used', '0')}, "
                  f"no hint {att.get('no_hint', '0')}; state thrown away: {flushed}")
        else:
            print(f"- {run}: no batch attempts")
    print()
# every client's requests, as kube-apiserver counts them
def api_reqs(path):
    tot = {}
    try:
        text = open(path).read()
    except OSError:
        return None
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        lab = dict(re.findall(r'(\w+)="([^"]*)"', line))
        k = (lab.get("verb"), lab.get("resource", "") + ("/" + lab["subresource"] if lab.get("subresource") else ""))
        tot[k] = tot.get(k, 0) + float(line.split()[-1])
    return tot
tabs = {run: api_reqs(f"{out}/metrics-apiserver-{run.replace(':','-')}.txt") for run in runs if res[run]}
keys = set()
for t in tabs.values():
    if t:
        keys |= {k for k, v in t.items() if v >= pods * 0.05 and k[0] not in ("WATCH",)}
if keys:
    print("Requests kube-apiserver served per pod bound, all clients (apiserver_request_total; setup included):")
    print()
    have = [run for run in runs if tabs.get(run)]
    print("| verb | resource | " + " | ".join(have) + " |")
    print("|---|---|" + "---|" * len(have))
    for k in sorted(keys):
        print(f"| {k[0]} | {k[1]} | " + " | ".join(f"{tabs[r].get(k, 0)/(res[r]['bound'] or 1):.2f}" for r in have) + " |")
    print()
PY

# ------------------------------------------------ filter latency (wrk) --
# gpupack serve --cluster on the state the gpupack run left (every node and pod as
# bound), the shipped policies, one keep-alive connection (plain HTTP: the
# handshake is per connection), a GPU-share pod of the trace's most common kind;
# NodeNames: every node, and as many as kube-scheduler passes at its default
# percentageOfNodesToScore.
dumpf=$(ls "$OUT"/cluster-gpupack-*.json 2>/dev/null | head -1 || true)
if command -v wrk >/dev/null && [ -n "$dumpf" ] && [ -s "$dumpf" ] && { [ -n "$DO_RUNS" ] || [ -z "$RUNS" ]; }; then
  : >"$OUT/gpupack-filter.log"
  "$WORK/gpupack" serve --cluster "$dumpf" --policies policies --listen 127.0.0.1:0 --log-level warn \
    >"$OUT/gpupack-filter.log" 2>&1 &
  GP=$!
  port=""
  for _ in $(seq 600); do
    port=$(sed -n 's/.*embedded cluster on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$OUT/gpupack-filter.log" | head -1 || true)
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
    sleep 0.2
  done
  python3 - "$dumpf" "$WORK" "$TRACES/openb_pod_list_default.csv" "$SEED" <<'PY'
import csv, json, math, random, sys
items = json.load(open(sys.argv[1]))["items"]
nodes = [o["metadata"]["name"] for o in items if o.get("kind") == "Node"]
mems = [g["memoryMiB"] for o in items if o.get("kind") == "Node"
        for g in json.loads(o["metadata"].get("annotations", {}).get("gpupack.io/gpus", "[]"))]
ref = min(mems) if mems else 15109          # e2eload's reference: the smallest GPU
n = len(nodes)
pct = max(5, 50 - n // 125)                 # kube-scheduler's adaptive default
want = n if n < 100 else max(100, n * pct // 100)
def pod(i, row):
    req = {"cpu": "%sm" % (row["cpu_milli"] or 100)}
    if int(row["memory_mib"]):
        req["memory"] = "%sMi" % row["memory_mib"]
    res = {"requests": req}
    g, milli = int(row["num_gpu"]), int(row["gpu_milli"])
    if g == 1 and milli < 1000:
        res["limits"] = {"gpupack.io/gpu-mem": str(math.ceil(milli * ref / 1000)),
                         "gpupack.io/gpu-core": str((milli + 9) // 10)}
    elif g > 0:
        res["limits"] = {"gpupack.io/gpu-count": str(g)}
    return {"metadata": {"name": "probe-%d" % i, "namespace": "bench", "uid": "probe-%d" % i},
            "spec": {"schedulerName": "gpupack-scheduler",
                     "containers": [{"name": "main", "resources": res}]}}
rows = list(csv.DictReader(open(sys.argv[3])))
rng = random.Random(int(sys.argv[4]))
mix = [pod(i, rng.choice(rows)) for i in range(200)]
one = pod(0, {"cpu_milli": "6000", "memory_mib": "12288", "num_gpu": "1", "gpu_milli": "460"})
w = sys.argv[2]
def write(tag, lines, count, what):
    open(f"{w}/bodies-{tag}", "w").write("".join(json.dumps(b, separators=(",", ":")) + "\n" for b in lines))
    open(f"{w}/what-{tag}", "w").write(f"{count} | {what}")
write("one-all", [{"Pod": one, "NodeNames": nodes}], n, "one pod (0.46 GPU, 6 CPUs), again and again")
write("one-sched", [{"Pod": one, "NodeNames": nodes[:want]}], want,
      "one pod, as many nodes as kube-scheduler passes")
write("mix-all", [{"Pod": p, "NodeNames": nodes} for p in mix], n, "200 pods of the trace in turn")
win = []
for i, p in enumerate(mix):                 # kube-scheduler resumes where the last search ended
    s0 = i * want % n
    win.append({"Pod": p, "NodeNames": (nodes + nodes)[s0:s0 + want]})
write("mix-sched", win, want, "200 pods of the trace in turn, kube-scheduler's rotating windows")
PY
  echo
  echo "Filter latency, \`wrk -t1 -c1 -d10s\` (bench/post-cycle.lua) on \`gpupack serve --cluster\` with the state the gpupack run left ($(basename "$dumpf")), shipped policies:"
  echo
  echo "| NodeNames | requests | p50 | p90 | p99 | max | requests/s | fit cache hits | gpupack RSS |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for b in one-all one-sched mix-all mix-sched; do
    curl -sf "http://127.0.0.1:$port/metrics" >"$WORK/m0" || true
    w=$(GPUPACK_BODIES="$WORK/bodies-$b" wrk -t1 -c1 -d10s --latency -s bench/post-cycle.lua \
        "http://127.0.0.1:$port/filter" 2>&1 || true)
    echo "$w" >"$OUT/wrk-$b.txt"
    curl -sf "http://127.0.0.1:$port/metrics" >"$WORK/m1" || true
    hits=$(python3 -c '
import re, sys
def v(t, r):
    m = re.search(r"gpupack_fit_cache_total\{result=\"%s\"\} (\d+)" % r, t)
    return int(m.group(1)) if m else 0
a, b = open(sys.argv[1]).read(), open(sys.argv[2]).read()
h, m = v(b, "hit") - v(a, "hit"), v(b, "miss") - v(a, "miss")
print(f"{100*h/(h+m):.1f} %" if h + m else "—")' "$WORK/m0" "$WORK/m1")
    rss=$(awk '/VmRSS/{printf "%.1f MiB", $2/1024}' "/proc/$GP/status" 2>/dev/null || echo "?")
    echo "| $(cat "$WORK/what-$b") | $(echo "$w" | awk '$1=="50%"{print $2}') | $(echo "$w" | awk '$1=="90%"{print $2}') | $(echo "$w" | awk '$1=="99%"{print $2}') | $(echo "$w" | awk '$1=="Latency"{print $4}') | $(echo "$w" | awk '/Requests\/sec/{printf "%.0f", $2}') | $hits | $rss |"
  done
  kill "$GP" 2>/dev/null; wait "$GP" 2>/dev/null || true
  GP=""
fi

# ------------------------------------------------------------------- plot --
if command -v gnuplot >/dev/null; then
  plots=""
  for run in $RUNS; do
    tag=${run/:/-}
    [ -s "$OUT/timeline-$tag.csv" ] || continue
    # 5-second means: the one-second counts jump with kube-scheduler's batches
    awk -F, 'NR > 1 { s += $2; n++; if (n == 5) { print $1 - 2, s / 5; s = 0; n = 0 } }' \
      "$OUT/timeline-$tag.csv" >"$OUT/timeline-$tag.5s"
    plots="$plots${plots:+, }'$OUT/timeline-$tag.5s' using 1:2 with lines lw 2 title '$tag'"
  done
  if [ -n "$plots" ]; then
    gnuplot <<GP 2>/dev/null || true
set terminal pngcairo size 1000,420 font 'sans,10'
set output '$OUT/pods-per-second.png'
set title 'bench/scale.sh $NODES $PODS (kube $VERSION): pods bound per second, 5-second means'
set xlabel 'seconds from the first bind (backlog) or the first create (stream)'
set ylabel 'pods/s'
set key top right
set grid
plot $plots
GP
    echo "plot: $OUT/pods-per-second.png"
  fi
fi
