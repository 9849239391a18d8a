#!/usr/bin/env bash
# malloc-ab.sh -- what an allocator setting costs the verbs: two `gpupack serve`
# on the same synthetic cluster, one as built (A) and one with the environment
# given (B), measured in alternation so that the machine's noise falls on both.
# Each round: filter with one keep-alive client (bin/loadgen), then filter with
# wrk at 2 threads x 8 connections (several HTTP threads allocating at once),
# then the pod watch's decode of one event (bin/decode_bench, same environment).
# Prints one line per round and server, then the medians and the B/A ratios.
#   bench/malloc-ab.sh [--nodes N] [--rounds R] [--env 'VAR=value ...']
# Default: 1,000 varied nodes x 8 GPUs, 6 rounds,
#          B = GLIBC_TUNABLES=glibc.malloc.tcache_count=0
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=1000
ROUNDS=6
BENV="GLIBC_TUNABLES=glibc.malloc.tcache_count=0"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --env) BENV=$2; shift 2 ;;
    *) echo "malloc-ab.sh: unknown flag $1" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "malloc-ab.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }
make -s bench >/dev/null && make -s build >/dev/null
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
sample=test/fixtures/captured/wire/extender/cache-true/001-filter.json
bin/loadgen --varied --gen-cluster "$NODES" > "$tmp/cluster.json"
bin/loadgen --print-body --nodes "$NODES" --pod-sample "$sample" > "$tmp/body.json"

start() {  # start NAME PORT [ENV...]
  local name=$1 port=$2; shift 2
  env "$@" bin/gpupack serve --cluster "$tmp/cluster.json" --listen 127.0.0.1:"$port" \
      --log-level warn 2>"$tmp/log-$name" &
  echo $! > "$tmp/pid-$name"
  for _ in $(seq 200); do curl -sf 127.0.0.1:"$port"/healthz >/dev/null && return 0; sleep 0.1; done
  echo "malloc-ab.sh: server $name did not come up" >&2; cat "$tmp/log-$name" >&2; exit 1
}
start A 18971
# shellcheck disable=SC2086
start B 18972 $BENV

POD=test/fixtures/captured/wire/pods/get-gpu-pod-multi.json
measure() {  # measure NAME PORT -> "loadgen_p50_ms loadgen_rps wrk_rps rss_mib decode_us"
  local name=$1 port=$2 lg w p50 rps wrps rss dec envs=()
  [ "$name" = B ] && read -r -a envs <<<"$BENV"
  lg=$(bin/loadgen --url http://127.0.0.1:"$port" --verb filter --nodes "$NODES" --requests 1000 \
       --pod-sample "$sample")
  p50=$(echo "$lg" | tr ' ' '\n' | sed -n 's/^p50_ms=//p')
  rps=$(echo "$lg" | tr ' ' '\n' | sed -n 's/^rps=//p')
  w=$(GPUPACK_BODY="$tmp/body.json" wrk -t2 -c8 -d5s -s bench/post.lua \
      http://127.0.0.1:"$port"/filter 2>&1)
  wrps=$(echo "$w" | awk '/Requests\/sec/{printf "%.0f", $2}')
  rss=$(awk '/VmRSS/{printf "%.1f", $2/1024}' /proc/"$(cat "$tmp/pid-$name")"/status)
  dec=$(env "${envs[@]}" bin/decode_bench "$POD" 100000 | tr ' ' '\n' | sed -n 's/^cpu_us_per_event=//p')
  echo "$p50 $rps $wrps $rss $dec"
}
echo "# $NODES varied nodes x 8 GPUs; A = as built, B = $BENV; $(nproc) cores, $(date -u +%FT%TZ)"
echo "# round server loadgen_p50_ms loadgen_rps wrk_2x8_rps rss_mib decode_us_per_event"
for r in $(seq "$ROUNDS"); do
  # alternate which server goes first
  if [ $((r % 2)) -eq 1 ]; then order="A:18971 B:18972"; else order="B:18972 A:18971"; fi
  for s in $order; do
    echo "$r ${s%%:*} $(measure "${s%%:*}" "${s##*:}")" | tee -a "$tmp/rows"
  done
done
awk '
  function median(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $2; n[k]++; p[k, n[k]] = $3; r[k, n[k]] = $4; w[k, n[k]] = $5; m[k, n[k]] = $6; d[k, n[k]] = $7 }
  END {
    for (s = 0; s < 2; s++) {
      k = s ? "B" : "A"
      for (i = 1; i <= n[k]; i++) { P[i] = p[k, i]; R[i] = r[k, i]; W[i] = w[k, i]; M[i] = m[k, i]; D[i] = d[k, i] }
      mp[k] = median(P, n[k]); mr[k] = median(R, n[k]); mw[k] = median(W, n[k]); mm[k] = median(M, n[k]); md[k] = median(D, n[k])
      printf "median %s: loadgen p50 %.3f ms, loadgen %.0f req/s, wrk 2x8 %.0f req/s, RSS %.1f MiB, decode %.2f us/event\n", k, mp[k], mr[k], mw[k], mm[k], md[k]
    }
    printf "B/A: loadgen p50 %.3f, loadgen req/s %.3f, wrk req/s %.3f, RSS %.3f, decode CPU %.3f\n", mp["B"] / mp["A"], mr["B"] / mr["A"], mw["B"] / mw["A"], mm["B"] / mm["A"], md["B"] / md["A"]
  }' "$tmp/rows"
