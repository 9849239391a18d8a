#!/usr/bin/env bash
# How long the /ui page takes to draw a large cluster in headless Chromium.
# Generates NODES nodes x 8 GPUs (A100 80 GiB; pods of varied sizes on two
# thirds of the GPUs), serves them embedded, loads /ui and prints the page's
# own timings in real time through the DevTools protocol (bench/ui-cdp.js):
# fetchMs = GET /inspect + JSON parse, renderMs = figures, filter lists and
# the first canvas draw, pageMs = navigation until then, scrollDrawMs = one
# redraw of the visible rows at ten scroll positions; and the /inspect size.
# Usage: bench/ui-render.sh [NODES] (default 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-5000}
port=${GPUPACK_UI_PORT:-18798}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
bench/gen-cluster.sh "$nodes" >"$work/cluster.json"
bin/gpupack serve --cluster "$work/cluster.json" --listen 127.0.0.1:$port --log-level warn 2>"$work/serve.log" &
pid=$!
for _ in $(seq 300); do curl -sf http://127.0.0.1:$port/healthz >/dev/null && break; sleep 0.1; done
read -r bytes secs < <(curl -sf -o /dev/null -w "%{size_download} %{time_total}\n" "http://127.0.0.1:$port/inspect?compact=1")
echo "cluster: $nodes nodes x 8 GPUs; GET /inspect?compact=1: $bytes bytes in $secs s (curl)"
for run in 1 2 3; do
  chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile" \
    --window-size=1280,800 --remote-debugging-port=$((port + 1)) about:blank 2>/dev/null &
  cpid=$!
  echo "run $run: $(node --experimental-websocket bench/ui-cdp.js $((port + 1)) \
    "http://127.0.0.1:$port/ui?refresh=60" 2>/dev/null)"
  kill $cpid; wait $cpid 2>/dev/null || true
done
[ "${GPUPACK_UI_SHOT:-}" ] && chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --no-first-run --user-data-dir="$work/profile" --window-size=1280,560 --virtual-time-budget=20000 \
  --screenshot="$GPUPACK_UI_SHOT" "http://127.0.0.1:$port/ui?refresh=60" 2>/dev/null
exit 0
