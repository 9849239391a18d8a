#!/usr/bin/env bash
# Events against the real API server (shared/k8s): gpupack serve in live mode,
# one bind that succeeds and one that fails twice; prints the Events the API
# server then holds (GPUsAssigned count 1, GPUBindFailed count 2) and
# gpupack_events_total. To become test/e2e/e2e_events.c once the e2e harness
# lands on this branch. Usage: test/e2e/events_check.sh (from anywhere)
set -u
cd "$(dirname "$0")/../.."
K8S=${GPUPACK_SHARED:-../shared}/k8s
work=$(mktemp -d)
D=$work/cp
gp=
trap '[ -n "$gp" ] && kill $gp 2>/dev/null; $K8S/kube-down "$D" >/dev/null 2>&1; rm -rf "$work"' EXIT
$K8S/kube-up "$D" >$work/ev-kubeup.log 2>&1 || { echo kube-up failed; tail $work/ev-kubeup.log; exit 1; }
. "$D/env"
api() { curl -s --cacert "$K8S_CA" --oauth2-bearer "$(cat "$K8S_TOKEN_FILE")" -H 'Content-Type: application/json' "$@"; }
api -XPOST "$K8S_APISERVER/api/v1/nodes" -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","annotations":{"gpupack.io/gpus":"[{\"index\":0,\"model\":\"A100-SXM4-80GB\",\"memoryMiB\":81920,\"healthy\":true},{\"index\":1,\"model\":\"A100-SXM4-80GB\",\"memoryMiB\":81920,\"healthy\":true}]"}}}' >/dev/null
api -XPOST "$K8S_APISERVER/api/v1/namespaces/default/pods" -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nb"},"spec":{"schedulerName":"nobody","containers":[{"name":"c","image":"x","resources":{"limits":{"gpupack.io/gpu-mem":"8192","gpupack.io/gpu-core":"25"}}}]}}' > $work/ev-pod.json
uid=$(grep -o '"uid":"[^"]*"' "$work/ev-pod.json" | head -1 | cut -d\" -f4)
bin/gpupack serve --kubeconfig "$KUBECONFIG" --policies policies --listen 127.0.0.1:18777 2>$work/ev-gp.log &
gp=$!
for _ in $(seq 100); do curl -sf 127.0.0.1:18777/readyz >/dev/null && break; sleep 0.1; done
pod=$(cat $work/ev-pod.json)
curl -s -XPOST 127.0.0.1:18777/filter -d "{\"Pod\":$pod,\"NodeNames\":[\"n1\"]}"; echo
curl -s -XPOST 127.0.0.1:18777/bind -d "{\"PodName\":\"nb\",\"PodNamespace\":\"default\",\"PodUID\":\"$uid\",\"Node\":\"n1\"}"; echo
# a failing bind: a pod that does not exist
curl -s -XPOST 127.0.0.1:18777/filter -d "{\"Pod\":{\"metadata\":{\"name\":\"ghost\",\"namespace\":\"default\",\"uid\":\"ghost-uid\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"gpupack.io/gpu-mem\":\"1024\"}}}]}},\"NodeNames\":[\"n1\"]}" >/dev/null
curl -s -XPOST 127.0.0.1:18777/bind -d "{\"PodName\":\"ghost\",\"PodNamespace\":\"default\",\"PodUID\":\"ghost-uid\",\"Node\":\"n1\"}"; echo
curl -s -XPOST 127.0.0.1:18777/bind -d "{\"PodName\":\"ghost\",\"PodNamespace\":\"default\",\"PodUID\":\"ghost-uid\",\"Node\":\"n1\"}"; echo
sleep 2
api "$K8S_APISERVER/api/v1/namespaces/default/events" | python3 -c '
import json,sys
for e in json.load(sys.stdin)["items"]:
    print(e["type"], e["reason"], e["involvedObject"]["name"], e.get("count"), e["message"])'
curl -s 127.0.0.1:18777/metrics | grep events_total
grep -i event $work/ev-gp.log | head
