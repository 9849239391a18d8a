# lib-controlplane.sh -- sourced by bench/e2e.sh and bench/scale.sh after they set K8S (the
# kit) and WORK (their scratch directory): the cleanup of the control plane (CP) and gpupack
# (GP) they start, and how to reach gpupack as the shipped scheduler configuration says.
# Sets SCHED (the shipped profile's schedulerName) and, when the shipped stanza is HTTPS
# (mutual TLS, as shipped), GPTLS (gpupack's flags: the test certificates) and CURLTLS;
# SCHEME is http or https.
CP="" GP=""
cleanup() {
  # under a wrapper (SCALE_WRAP="perf stat ..."), gpupack first, and the wrapper given 10 s
  # to write its report and end: perf stat ends on SIGTERM without ending gpupack, which
  # would run on, orphaned, into the next run
  if [ -n "$GP" ] && pkill -TERM -P "$GP" 2>/dev/null; then
    for _ in $(seq 50); do kill -0 "$GP" 2>/dev/null || break; sleep 0.2; done
  fi
  [ -n "$GP" ] && kill "$GP" 2>/dev/null && wait "$GP" 2>/dev/null || true
  [ -n "$CP" ] && [ -f "$CP/env" ] && "$K8S/kube-down" "$CP" >/dev/null 2>&1 || true
  GP="" CP=""
}
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM

SCHED=$(bin/e2eload sched-config --port 1 --qps 1 | sed -n 's/.*"schedulerName": "\(.*\)".*/\1/p' | head -1)
TLS=test/fixtures/tls
GPTLS=() SCHEME=http CURLTLS=()
if bin/e2eload sched-config --port 1 --qps 1 | grep -q '"enableHTTPS": true'; then
  GPTLS=(--tls-cert $TLS/server.crt --tls-key $TLS/server.key --client-ca $TLS/ca.crt)
  SCHEME=https CURLTLS=(--cacert $TLS/ca.crt)
fi
