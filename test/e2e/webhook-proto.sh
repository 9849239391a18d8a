#!/usr/bin/env bash
# webhook-proto.sh -- the admission webhook against a real control plane (../shared/k8s):
# the API server calls gpupack's webhook over TLS when a pod is created, the stored pod
# carries the injected env, and after kube-scheduler binds it through gpupack the
# annotations that env points at are on the pod and name the assigned GPU.
# Usage: test/e2e/webhook-proto.sh   (from the repository root, after make build)
set -euo pipefail
K8S=${K8S:-../shared/k8s}
BIN=${BIN:-build/out/gpupack}
T=$(mktemp -d)
D=$T/cp
GP_PID=
cleanup() {
    [ -n "$GP_PID" ] && kill "$GP_PID" 2>/dev/null && wait "$GP_PID" 2>/dev/null
    [ -d "$D" ] && "$K8S/kube-down" "$D" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$T/gpupack.log" ] && tail -20 "$T/gpupack.log" >&2; exit 1; }

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
EXT=$(freeport); WH=$(freeport)

# certificates: a CA and a serving certificate for 127.0.0.1 (scripts/webhook-certs.sh)
scripts/webhook-certs.sh "$T/pki" 127.0.0.1 >/dev/null

cat >"$T/sched.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: @KUBECONFIG@}
leaderElection: {leaderElect: false}
extenders:
- urlPrefix: "http://127.0.0.1:$EXT"
  filterVerb: filter
  bindVerb: bind
  weight: 1
  nodeCacheCapable: true
  managedResources:
  - {name: gpupack.io/gpu-mem, ignoredByScheduler: true}
  - {name: gpupack.io/gpu-core, ignoredByScheduler: true}
YAML
"$K8S/kube-up" "$D" --scheduler-config "$T/sched.yaml" >/dev/null || fail "kube-up"
. "$D/env"
api() { # METHOD PATH [BODY] [CONTENT-TYPE]
    curl -sS --noproxy '*' --cacert "$K8S_CA" --cert "$K8S_CLIENT_CERT" --key "$K8S_CLIENT_KEY" \
        -X "$1" -H "Content-Type: ${4:-application/json}" "$K8S_APISERVER$2?pretty=false" ${3:+-d "$3"}
}

"$BIN" serve --kubeconfig "$KUBECONFIG" --listen "127.0.0.1:$EXT" \
    --webhook-listen "127.0.0.1:$WH" --webhook-cert "$T/pki/tls.crt" --webhook-key "$T/pki/tls.key" \
    >"$T/gpupack.log" 2>&1 &
GP_PID=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$EXT/readyz" >/dev/null && break; sleep 0.2; done
curl -sf --cacert "$T/pki/ca.crt" "https://127.0.0.1:$WH/healthz" >/dev/null || fail "webhook /healthz over TLS"

GPUS='[{"index":0,"uuid":"GPU-aaaa0000","model":"A100","memoryMiB":40960,"healthy":true},{"index":1,"uuid":"GPU-bbbb1111","model":"A100","memoryMiB":40960,"healthy":true}]'
api POST /api/v1/nodes "$(jq -cn --arg g "$GPUS" '{apiVersion:"v1",kind:"Node",
  metadata:{name:"gpu-1",labels:{"kubernetes.io/hostname":"gpu-1"},annotations:{"gpupack.io/gpus":$g}},
  status:{capacity:{cpu:"8",memory:"32Gi",pods:"110"},allocatable:{cpu:"8",memory:"32Gi",pods:"110"},
  conditions:[{type:"Ready",status:"True",reason:"KubeletReady",message:"fake"}]}}')" >/dev/null

CA_B64=$(base64 -w0 <"$T/pki/ca.crt")
api POST /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations "$(
  sed -e "s|@URL@|https://127.0.0.1:$WH/mutate|" -e "s|@CABUNDLE@|$CA_B64|" test/e2e/webhook-config.json)" \
  | jq -e '.metadata.name' >/dev/null || fail "create MutatingWebhookConfiguration"
sleep 1   # the API server picks up webhook configurations from its informer

POD='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train","namespace":"default"},
 "spec":{"initContainers":[{"name":"fetch","image":"x","resources":{"limits":{"gpupack.io/gpu-mem":"1024"}}}],
 "containers":[
  {"name":"sidecar","image":"x"},
  {"name":"main","image":"x","env":[{"name":"NVIDIA_VISIBLE_DEVICES","value":"all"},{"name":"A","value":"b"}],
   "resources":{"limits":{"gpupack.io/gpu-mem":"4096","gpupack.io/gpu-core":"30"}}}]}}'
CREATED=$(api POST /api/v1/namespaces/default/pods "$POD")
echo "$CREATED" | jq -e '.metadata.name=="train"' >/dev/null || fail "create pod: $CREATED"
# the stored pod has the env: main's NVIDIA_VISIBLE_DEVICES replaced, A kept, sidecar untouched
echo "$CREATED" | jq -e '.spec.containers[1].env | map(.name) ==
  ["NVIDIA_VISIBLE_DEVICES","A","CUDA_DEVICE_MEMORY_LIMIT","CUDA_DEVICE_SM_LIMIT","CUDA_MPS_PINNED_DEVICE_MEM_LIMIT","CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"]' >/dev/null \
  || fail "main env: $(echo "$CREATED" | jq -c '.spec.containers[1].env')"
echo "$CREATED" | jq -e '.spec.containers[1].env[0].valueFrom.fieldRef.fieldPath ==
  "metadata.annotations['"'"'gpupack.io/ctr-1-visible-devices'"'"']"' >/dev/null || fail "main fieldPath"
echo "$CREATED" | jq -e '.spec.containers[0].env == null' >/dev/null || fail "sidecar was touched"
echo "$CREATED" | jq -e '.spec.initContainers[0].env[0].valueFrom.fieldRef.fieldPath ==
  "metadata.annotations['"'"'gpupack.io/init-0-visible-devices'"'"']"' >/dev/null || fail "init env"
echo "PASS: stored pod carries the injected env"

# a pod that asks nothing is not touched
PLAIN=$(api POST /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"plain"},
  "spec":{"schedulerName":"nobody","containers":[{"name":"c","image":"x","env":[{"name":"NVIDIA_VISIBLE_DEVICES","value":"all"}]}]}}')
echo "$PLAIN" | jq -e '.spec.containers[0].env == [{"name":"NVIDIA_VISIBLE_DEVICES","value":"all"}]' >/dev/null \
  || fail "plain pod changed: $(echo "$PLAIN" | jq -c .spec.containers)"
echo "PASS: a pod asking nothing is untouched"

# after kube-scheduler binds through gpupack, the annotations name the assigned GPU
for _ in $(seq 100); do
  P=$(api GET /api/v1/namespaces/default/pods/train)
  [ "$(echo "$P" | jq -r '.spec.nodeName // ""')" = gpu-1 ] && break; sleep 0.2
done
[ "$(echo "$P" | jq -r '.spec.nodeName // ""')" = gpu-1 ] || fail "pod not bound: $(echo "$P" | jq -c .status)"
ANN=$(echo "$P" | jq -c .metadata.annotations)
UUID=$(echo "$P" | jq -r '.metadata.annotations["gpupack.io/assignment"] | fromjson | .containers[] | select(.name=="main") | .gpus[0].uuid')
[ -n "$UUID" ] && [ "$UUID" != null ] || fail "no assignment: $ANN"
echo "$ANN" | jq -e --arg u "$UUID" '.["gpupack.io/ctr-1-visible-devices"]==$u and
  .["gpupack.io/ctr-1-mem-limit"]=="4096m" and .["gpupack.io/ctr-1-sm-limit"]=="30" and
  .["gpupack.io/ctr-1-mps-mem-limit"]=="0=4096M" and .["gpupack.io/ctr-1-mps-threads"]=="30" and
  .["gpupack.io/init-0-mem-limit"]=="1024m" and (.["gpupack.io/init-0-visible-devices"]|startswith("GPU-")) and
  (has("gpupack.io/ctr-0-visible-devices")|not)' >/dev/null || fail "annotations: $ANN"
echo "PASS: bound pod's annotations name its GPU ($UUID) in the consumers' formats"

# malformed review: 400 with a message
CODE=$(curl -s -o "$T/bad.json" -w '%{http_code}' --cacert "$T/pki/ca.crt" -XPOST \
  "https://127.0.0.1:$WH/mutate" -d '{"kind":"AdmissionReview"')
[ "$CODE" = 400 ] && jq -e '.response.allowed==false and (.response.status.message|length>0)' "$T/bad.json" >/dev/null \
  || fail "malformed review: $CODE $(cat "$T/bad.json")"
echo "PASS: malformed AdmissionReview -> 400"

# webhook unreachable (the configuration points at a closed port): a GPU pod is still
# admitted (failurePolicy Ignore) but bind refuses it, so it stays Pending with the reason
DEAD=$(freeport)
api PATCH /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/gpupack \
  '[{"op":"replace","path":"/webhooks/0/clientConfig/url","value":"https://127.0.0.1:'"$DEAD"'/mutate"}]' \
  application/json-patch+json | jq -e .metadata.name >/dev/null || fail "patch webhook url"
sleep 1
api POST /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"late"},
  "spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"gpupack.io/gpu-mem":"1024"}}}]}}' \
  | jq -e '.spec.containers[0].env == null' >/dev/null || fail "late pod"
for _ in $(seq 100); do
  grep -q 'bind default/late.*lacks the NVIDIA_VISIBLE_DEVICES' "$T/gpupack.log" && break; sleep 0.2
done
grep -q 'bind default/late.*lacks the NVIDIA_VISIBLE_DEVICES' "$T/gpupack.log" || fail "bind did not refuse the unmutated pod"
[ "$(api GET /api/v1/namespaces/default/pods/late | jq -r '.spec.nodeName // ""')" = "" ] || fail "late pod was bound"
echo "PASS: a GPU pod admitted while the webhook was down is refused at bind"
echo PASS
