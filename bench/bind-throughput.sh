#!/bin/bash
# bind-throughput.sh -- pods/s through the real kube-scheduler with and without gpupack.
#
# One control plane (../shared/k8s kit), NODES nodes with 8 GPUs each, kube-scheduler with
# clientConnection qps/burst = QPS and gpupack's extender stanza (the shipped verbs,
# managedResources and weight). Phase "plain": PODS pods asking no gpupack resource (the
# extender is not consulted: kube-scheduler's own binder). Phase "gpu": PODS pods asking
# gpupack.io/gpu-mem (filter, prioritize and bind through gpupack). Each phase creates its
# pods while kube-scheduler is stopped (creating them is slower than scheduling them on this
# machine), starts it, and counts pods/s = (PODS - 1) / (time from its first to its last
# successful bind, from kube-scheduler's scheduler_schedule_attempts_total). Then bind latency
# quantiles from gpupack's and the API server's histograms.
#
#   bench/bind-throughput.sh [NODES [PODS [QPS]]]      (defaults 1000 2000 500)
set -euo pipefail
NODES=${1:-1000}
PODS=${2:-2000}
QPS=${3:-500}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K8S=${GPUPACK_K8S:-$ROOT/../shared/k8s}
GP=${GPUPACK_BIN:-$ROOT/bin/gpupack}
WORK=$(mktemp -d /tmp/gpupack-bindbench-XXXXXX)
D=$WORK/cp
GPPID=
cleanup() {
    [ -n "$GPPID" ] && kill "$GPPID" 2>/dev/null && wait "$GPPID" 2>/dev/null || true
    [ -d "$D" ] && "$K8S/kube-down" "$D" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$K8S/kube-up" "$D" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log"; exit 1; }
. "$D/env"
"$GP" serve --kubeconfig "$KUBECONFIG" --listen 127.0.0.1:0 --policies "$ROOT/policies" \
    >"$WORK/gpupack.log" 2>&1 &
GPPID=$!
for _ in $(seq 100); do
    PORT=$(grep -o '(port [0-9]*)' "$WORK/gpupack.log" | grep -o '[0-9]*' || true)
    [ -n "$PORT" ] && break
    sleep 0.1
done
[ -n "$PORT" ] || { echo "gpupack did not start"; cat "$WORK/gpupack.log"; exit 1; }

cat >"$WORK/sched.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: @KUBECONFIG@, qps: $QPS, burst: $QPS}
leaderElection: {leaderElect: false}
profiles: [{schedulerName: default-scheduler}]
extenders:
  - urlPrefix: "http://127.0.0.1:$PORT"
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    weight: 5
    nodeCacheCapable: true
    ignorable: false
    httpTimeout: 15s
    managedResources:
      - {name: gpupack.io/gpu-mem, ignoredByScheduler: true}
YAML
"$K8S/kube-up" "$D" --scheduler-config "$WORK/sched.yaml" >>"$WORK/up.log" 2>&1 \
    || { cat "$WORK/up.log"; exit 1; }
. "$D/env"   # K8S_SCHEDULER_URL of the restarted scheduler

K8S_KIT=$K8S NODES=$NODES PODS=$PODS QPS=$QPS GPURL="http://127.0.0.1:$PORT" python3 - <<'PY'
import http.client, json, os, ssl, threading, time, urllib.request

api = os.environ["K8S_APISERVER"].replace("https://", "")
tok = open(os.environ["K8S_TOKEN_FILE"]).read().strip()
ctx = ssl.create_default_context(cafile=os.environ["K8S_CA"])
NODES, PODS = int(os.environ["NODES"]), int(os.environ["PODS"])

def conn():
    return http.client.HTTPSConnection(api, context=ctx, timeout=60)

def call(c, method, path, body=None):
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    return r.status, data

def parallel(items, fn, threads=8):
    def work(chunk):
        c = conn()
        for it in chunk:
            st, data = call(c, "POST", *fn(it))
            if st >= 300:
                raise SystemExit("create failed: %d %s" % (st, data[:200]))
    ts = [threading.Thread(target=work, args=(items[i::threads],)) for i in range(threads)]
    [t.start() for t in ts]
    [t.join() for t in ts]

gpus = json.dumps([{"index": i, "uuid": "GPU-%d" % i, "model": "A100-SXM4-80GB",
                    "memoryMiB": 81920, "healthy": True} for i in range(8)])
def node(i):
    name = "n%04d" % i
    cap = {"cpu": "64", "memory": "512Gi", "pods": "250"}
    return "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name},
                     "annotations": {"gpupack.io/gpus": gpus}},
        "status": {"capacity": cap, "allocatable": cap,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "bench"}]}}
parallel(list(range(NODES)), node)

def gp_get(path):
    return urllib.request.urlopen(os.environ["GPURL"] + path, timeout=30).read().decode()

deadline = time.time() + 120
while time.time() < deadline:
    m = [l for l in gp_get("/metrics").splitlines() if l.startswith("gpupack_nodes ")]
    if m and int(float(m[0].split()[1])) >= NODES:
        break
    time.sleep(0.2)

c = conn()
for ns in ("bench-plain", "bench-gpu"):
    call(c, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": ns}})

sched = os.environ["K8S_SCHEDULER_URL"].replace("https://", "")
sctx = ssl.create_default_context(cafile=None)
sctx.check_hostname = False
sctx.verify_mode = ssl.CERT_NONE   # kube-scheduler serves a self-signed certificate on 127.0.0.1

def scheduled():
    """Pods kube-scheduler bound (counted after a successful Binding)."""
    sc = http.client.HTTPSConnection(sched, context=sctx, timeout=30)
    sc.request("GET", "/metrics", headers={"Authorization": "Bearer " + tok})
    text = sc.getresponse().read().decode()
    sc.close()
    return sum(float(l.split()[-1]) for l in text.splitlines()
               if l.startswith("scheduler_schedule_attempts_total{") and 'result="scheduled"' in l)

import subprocess
def ctl(action):
    subprocess.run([os.environ["K8S_KIT"] + "/kube-ctl", os.environ["K8S_DIR"], action],
                   check=True, stdout=subprocess.DEVNULL)

def phase(ns, limits):
    def pod(i):
        res = {"requests": {"cpu": "10m"}}
        if limits:
            res["limits"] = limits
        return "/api/v1/namespaces/%s/pods" % ns, {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p%05d" % i},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/x", "resources": res}]}}
    ctl("stop-scheduler")
    t0 = time.time()
    parallel(list(range(PODS)), pod)
    created = time.time() - t0
    ctl("start-scheduler")
    first = None
    while True:
        try:
            n = scheduled()
        except OSError:
            n = 0   # still starting
        now = time.time()
        if n > 0 and first is None:
            first = now
        if n >= PODS:
            break
        if now - t0 > 900:
            raise SystemExit("%s: only %d of %d bound after 900 s" % (ns, n, PODS))
        time.sleep(0.05)
    el = now - first
    print("%-12s %d pods (created in %.1f s with kube-scheduler stopped), bound in %.1f s: %.1f pods/s"
          % (ns, PODS, created, el, (PODS - 1) / el), flush=True)
    return (PODS - 1) / el

plain = phase("bench-plain", None)
gpu = phase("bench-gpu", {"gpupack.io/gpu-mem": "8192"})
print("gpupack / no extender: %.1f %%" % (100 * gpu / plain))

def quantiles(text, series, match):
    """p50/p99 from a Prometheus histogram (linear within a bucket)."""
    buckets = []
    for line in text.splitlines():
        if line.startswith(series + "_bucket{") and all(m in line for m in match):
            le = line.split('le="')[1].split('"')[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.split()[-1])))
    buckets.sort()
    # sum over label sets with the same le
    merged = {}
    for le, v in buckets:
        merged[le] = merged.get(le, 0) + v
    buckets = sorted(merged.items())
    if not buckets or buckets[-1][1] == 0:
        return None
    total = buckets[-1][1]
    out = []
    for q in (0.5, 0.99):
        want, prev_le, prev_n = q * total, 0.0, 0.0
        for le, n in buckets:
            if n >= want:
                if le == float("inf"):
                    out.append(prev_le)
                else:
                    out.append(prev_le + (le - prev_le) * (want - prev_n) / max(n - prev_n, 1e-9))
                break
            prev_le, prev_n = le, n
    return out, total

gm = gp_get("/metrics")
c = conn()
st, am = call(c, "GET", "/metrics")
am = am.decode()
r = quantiles(gm, "gpupack_request_duration_seconds", ['verb="bind"'])
if r:
    print("gpupack bind (HTTP, kube-scheduler's view minus network): p50 %.1f ms, p99 %.1f ms over %d"
          % (r[0][0] * 1e3, r[0][1] * 1e3, r[1]))
r = quantiles(gm, "gpupack_api_bind_duration_seconds", [""])
if r:
    print("gpupack's Binding call as it waits for it: p50 %.1f ms, p99 %.1f ms over %d"
          % (r[0][0] * 1e3, r[0][1] * 1e3, r[1]))
for verb in ("filter", "prioritize"):
    r = quantiles(gm, "gpupack_request_duration_seconds", ['verb="%s"' % verb])
    if r:
        print("gpupack %-10s p50 %.2f ms, p99 %.2f ms over %d" % (verb, r[0][0] * 1e3, r[0][1] * 1e3, r[1]))
r = quantiles(am, "apiserver_request_duration_seconds",
              ['resource="pods"', 'subresource="binding"', 'verb="POST"'])
if r:
    print("API server Binding (its own histogram, both phases): p50 %.1f ms, p99 %.1f ms over %d"
          % (r[0][0] * 1e3, r[0][1] * 1e3, r[1]))
for l in gm.splitlines():
    if l.startswith("gpupack_api_binds_total") or l.startswith("gpupack_bind_errors_total"):
        print(l)
PY
