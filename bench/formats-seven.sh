#!/usr/bin/env bash
# formats-seven.sh -- the seven pods of issue 19, one per request format of another
# GPU-sharing system (bench/formats/seven.json: Run:ai/KAI fraction, memory and
# multi-fraction, HAMi gpumem and gpumem-percentage, Volcano vGPU, TKE vcuda), through
# an embedded gpupack (examples/cluster.yaml, the shipped policies/): filter over every
# node, bind to the first node filter keeps, then /inspect. A pod is "placed as meant"
# when it holds exactly what its format asks on every GPU it got: the number of GPUs,
# the memory (a fraction or percentage of that GPU's memory, rounded down, or the MiB
# asked) and the compute percent.
#   bench/formats-seven.sh [GPUPACK_BINARY]      (default bin/gpupack, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-bin/gpupack}
[ -x "$bin" ] || make -s >/dev/null
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$bin" serve --cluster examples/cluster.yaml --policies policies --listen 127.0.0.1:0 \
  --log-level info 2>"$tmp/log" &
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on .*(port \([0-9]*\)).*/\1/p' "$tmp/log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$tmp/log"; echo "gpupack did not start" >&2; exit 1; }
url=http://127.0.0.1:$port
nodes='["node-a100","node-hami","node-t4","node-aliyun","node-cpu"]'
n=$(jq length bench/formats/seven.json)
ok=0
printf '%-16s %-12s %-6s %s\n' POD NODE MEANT "GPUS (index: MiB held / MiB of the GPU, core %)"
for i in $(seq 0 $((n - 1))); do
  jq -c ".[$i].pod" bench/formats/seven.json > "$tmp/pod"
  jq -c ".[$i].want" bench/formats/seven.json > "$tmp/want"
  name=$(jq -r .metadata.name "$tmp/pod")
  jq -c --argjson nodes "$nodes" '{Pod: ., NodeNames: $nodes, Nodes: null}' "$tmp/pod" > "$tmp/args"
  node=$(curl -s -XPOST "$url/filter" -d @"$tmp/args" | jq -r '.NodeNames[0] // empty')
  if [ -z "$node" ]; then
    printf '%-16s %-12s %-6s %s\n' "$name" - no "filter kept no node"
    continue
  fi
  jq -c --arg node "$node" '{PodName: .metadata.name, PodNamespace: .metadata.namespace,
        PodUID: .metadata.uid, Node: $node}' "$tmp/pod" > "$tmp/bind"
  berr=$(curl -s -XPOST "$url/bind" -d @"$tmp/bind" | jq -r .Error)
  curl -s "$url/inspect/$node" > "$tmp/inspect"
  # every GPU entry of this pod: index, MiB held, the GPU's MiB, core percent
  jq -c --arg p "$name" '[.node.gpus[] | . as $g | .pods[] | select(.name == $p) |
        {index: $g.index, mem: .memMiB, total: $g.memoryMiB.total, core: .corePercent}]' \
     "$tmp/inspect" > "$tmp/got"
  meant=$(jq -n --slurpfile w "$tmp/want" --slurpfile g "$tmp/got" '
    $w[0] as $w | $g[0] as $g |
    ($g | length) == $w.gpus and
    all($g[]; .core == $w.core and
        .mem == (if $w.fraction then ((.total * $w.fraction) | floor) else $w.mib end))')
  gpus=$(jq -r 'map("\(.index): \(.mem) / \(.total), \(.core) %") | join("; ")' "$tmp/got")
  [ -n "$berr" ] && gpus="bind: $berr"
  [ -z "$gpus" ] && gpus="no GPU accounted"
  if [ "$meant" = true ]; then ok=$((ok + 1)); mark=yes; else mark=no; fi
  printf '%-16s %-12s %-6s %s\n' "$name" "$node" "$mark" "$gpus"
done
echo "$ok of $n placed as meant"
