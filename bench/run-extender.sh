#!/usr/bin/env bash
# run-extender.sh -- filter/prioritize latency, throughput and RSS at 100, 1,000
# and 5,000 nodes x 8 GPUs, with bin/loadgen (libcurl, one thread, keep-alive)
# and, when installed, wrk (one thread, one keep-alive connection).
# Writes bench/results/extender.md and prints it.
#   bench/run-extender.sh [requests-per-point]
set -euo pipefail
cd "$(dirname "$0")/.."
REQ=${1:-2000}
make -s bench >/dev/null && make -s build >/dev/null
mkdir -p bench/results
out=bench/results/extender.md
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
sample=test/fixtures/captured/wire/extender/cache-true/001-filter.json
{
  echo "| nodes x 8 GPUs | cluster | verb | client | requests | p50 ms | p99 ms | max ms | req/s | server RSS MiB |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} > "$tmp/table"
port=18900
for point in 100:uniform 1000:uniform 5000:uniform 100:varied 1000:varied 5000:varied; do
  n=${point%%:*}
  kind=${point##*:}
  if [ "$kind" = varied ]; then
    bin/loadgen --varied --gen-cluster "$n" > "$tmp/c$n.json"
  else
    bin/loadgen --gen-cluster "$n" > "$tmp/c$n.json"
  fi
  port=$((port + 1))
  bin/gpupack serve --cluster "$tmp/c$n.json" --listen 127.0.0.1:$port --log-level warn 2>"$tmp/log$n" &
  pid=$!
  for _ in $(seq 100); do curl -sf 127.0.0.1:$port/healthz >/dev/null && break; sleep 0.1; done
  for verb in filter prioritize; do
    line=$(bin/loadgen --url http://127.0.0.1:$port --verb $verb --nodes "$n" --requests "$REQ" \
           --pod-sample "$sample")
    echo "$line" >&2
    rss=$(awk '/VmRSS/{printf "%.1f", $2/1024}' /proc/$pid/status)
    eval "$(echo "$line" | tr ' ' '\n' | grep -E '^(p50_ms|p99_ms|max_ms|rps)=')"
    echo "| $n | $kind | $verb | loadgen | $REQ | $p50_ms | $p99_ms | $max_ms | $rps | $rss |" >> "$tmp/table"
  done
  if [ "$kind" = uniform ] && command -v wrk >/dev/null 2>&1; then
    # the same body as loadgen sends: the sample pod and node-00000.. names
    bin/loadgen --print-body --nodes "$n" --pod-sample "$sample" > "$tmp/body$n.json"
    for verb in filter prioritize; do
      w=$(GPUPACK_BODY="$tmp/body$n.json" wrk -t1 -c1 -d5s --latency -s bench/post.lua \
          http://127.0.0.1:$port/$verb 2>&1)
      echo "$w" | grep -E "Requests/sec|50%|99%" >&2
      p50=$(echo "$w" | awk '$1=="50%"{print $2}')
      p99=$(echo "$w" | awk '$1=="99%"{print $2}')
      max=$(echo "$w" | awk '$1=="Latency"{print $4}')
      rps=$(echo "$w" | awk '/Requests\/sec/{printf "%.0f", $2}')
      rss=$(awk '/VmRSS/{printf "%.1f", $2/1024}' /proc/$pid/status)
      echo "| $n | $kind | $verb | wrk | 5 s | $p50 | $p99 | $max | $rps | $rss |" >> "$tmp/table"
    done
  fi
  kill $pid; wait $pid 2>/dev/null || true
done
{
  echo "# Extender latency and throughput"
  echo
  echo "One client thread with one keep-alive connection against \`gpupack serve --cluster\` on"
  echo "loopback; every 4th node is full, so answers carry failure reasons too. *uniform*: the"
  echo "other nodes are empty (a few node states, which one request evaluates once each); *varied*:"
  echo "each of them also holds a different share of one GPU (every node evaluated). The pod is the one"
  echo "kube-scheduler v1.26 sent (test/fixtures/captured/, with managedFields). loadgen is libcurl (its"
  echo "times are in ms); wrk prints its own units. Produced by \`bench/run-extender.sh $REQ\` on"
  echo "$(nproc) cores, $(date -u +%Y-%m-%d)."
  echo
  cat "$tmp/table"
} > "$out"
cat "$out"
