#!/usr/bin/env bash
# inspect.sh -- what GET /inspect costs the server, against a baseline binary run beside it.
#
#   bench/inspect.sh [--nodes N] [--requests R] [--rounds K] [--base PATH]
#
# Serves one embedded cluster (bench/gen-cluster.sh: N nodes x 8 GPUs, default 5000) with
# bin/gpupack and, with --base, with a baseline binary too (for example one built from the
# previous commit); then, in K interleaved rounds (default 3), sends R requests (default 20) of
# /inspect?compact=1 (what the /ui page and the soak's checker ask) and R of the indented
# /inspect to each server in turn, one at a time. Prints per binary, form and round: the
# wall time per request, the server's CPU per request (utime + stime from /proc) and its RSS
# after the round; then the median ratio current / baseline. Nothing is timed in the tests:
# these figures are for the same machine, the same moment.
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=5000 REQ=20 ROUNDS=3 BASE=""
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) NODES=$2; shift 2 ;;
    --requests) REQ=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    *) echo "usage: bench/inspect.sh [--nodes N] [--requests R] [--rounds K] [--base PATH]" >&2; exit 2 ;;
  esac
done
make -s build >/dev/null
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
bench/gen-cluster.sh "$NODES" >"$work/cluster.json"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A PORT PID
names=(current)
[ -n "$BASE" ] && names+=(baseline)
for n in "${names[@]}"; do
  bin=bin/gpupack
  [ "$n" = baseline ] && bin=$BASE
  PORT[$n]=$(free_port)
  "$bin" serve --cluster "$work/cluster.json" --listen "127.0.0.1:${PORT[$n]}" --log-level warn 2>"$work/$n.log" &
  PID[$n]=$!
  pids+=("${PID[$n]}")
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:${PORT[$n]}/readyz" >/dev/null && break; sleep 0.1; done
done
ticks=$(getconf CLK_TCK)
cpu() { awk -v t="$ticks" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
bytes=$(curl -sf -o /dev/null -w '%{size_download}' "http://127.0.0.1:${PORT[current]}/inspect?compact=1")
echo "# bench/inspect.sh --nodes $NODES --requests $REQ --rounds $ROUNDS${BASE:+ --base $BASE}; $(date -u '+%F %H:%M UTC'); $(git rev-parse --short HEAD); compact answer $bytes bytes; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %-8s %5s %14s %14s %8s\n' binary form round wall_ms/req cpu_ms/req rss_mib
for ((k = 1; k <= ROUNDS; k++)); do
  for form in compact indented; do
    q=$([ $form = compact ] && echo '?compact=1' || echo '')
    for n in "${names[@]}"; do
      url="http://127.0.0.1:${PORT[$n]}/inspect$q"
      c0=$(cpu "${PID[$n]}") t0=$(date +%s.%N)
      for ((i = 0; i < REQ; i++)); do curl -sf -o /dev/null "$url"; done
      t1=$(date +%s.%N) c1=$(cpu "${PID[$n]}")
      printf '%-9s %-8s %5d %14.2f %14.2f %8s\n' "$n" "$form" "$k" \
        "$(awk -v a="$t0" -v b="$t1" -v r="$REQ" 'BEGIN {print (b - a) * 1000 / r}')" \
        "$(awk -v a="$c0" -v b="$c1" -v r="$REQ" 'BEGIN {print (b - a) * 1000 / r}')" "$(rss "${PID[$n]}")"
    done
  done
done | tee "$work/rows"
[ -n "$BASE" ] || exit 0
for form in compact indented; do
  for col in 4 5; do
    cur=$(awk -v f=$form -v c=$col '$1=="current" && $2==f {print $c}' "$work/rows" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    base=$(awk -v f=$form -v c=$col '$1=="baseline" && $2==f {print $c}' "$work/rows" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$form $([ $col = 4 ] && echo wall || echo cpu): median current $cur ms, baseline $base ms, ratio $(awk -v a="$cur" -v b="$base" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
  done
done
