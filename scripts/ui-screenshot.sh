#!/usr/bin/env bash
# Regenerates docs/ui.png: the example cluster of `make run`, the example pod
# filtered and bound, the /ui page in headless Chromium with GPU 0 of
# node-t4 (where it was bound) pinned. Usage: scripts/ui-screenshot.sh [OUT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/ui.png}
port=${GPUPACK_UI_PORT:-18799}
bin/gpupack serve --cluster examples/cluster.yaml --policies policies --listen 127.0.0.1:$port \
  --log-level warn 2>/dev/null &
pid=$!
profile=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$profile"' EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:$port/healthz >/dev/null && break; sleep 0.1; done
curl -sf -XPOST http://127.0.0.1:$port/filter -d @examples/filter-request.json >/dev/null
curl -sf -XPOST http://127.0.0.1:$port/bind -d @examples/bind-request.json >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --user-data-dir="$profile" --window-size=1280,560 --virtual-time-budget=4000 \
  --screenshot="$out" "http://127.0.0.1:$port/ui#gpu=node-t4/0" 2>/dev/null
echo "wrote $out"
