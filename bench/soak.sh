#!/usr/bin/env bash
# soak.sh -- hours of churn with faults and a rolling upgrade on the real control plane (kit in
# GPUPACK_K8S, default ../shared/k8s), checked all the time; exits 0 only when every invariant
# held (docs/reliability.md); the last line is a one-line summary.
#
#   bench/soak.sh                                  60 minutes, Kubernetes 1.26, seed 42
#   bench/soak.sh --minutes 10 --k8s-version 1.36  the CI variant (make soak)
#   bench/soak.sh --minutes 30 --results v1.26-30min   copy the results to bench/results/soak-v1.26-30min.*
#
# SOAK_WRAP: a command bin/soak runs under (valgrind). SOAK_GPUPACK_WRAP: a command every gpupack replica
# runs under; it must exec gpupack so that the PID stays the replica's (a heap profiler's preload).
# SOAK_GLIBC_TUNABLES: the replicas' GLIBC_TUNABLES, by default what the image sets (Dockerfile ENV),
# so that a run measures the allocator users run; "" for glibc's defaults.
# Flags: --minutes N (60) --k8s-version 1.26|1.36 (env K8S_VERSION, else 1.26) --from REV (the previous
# release the rolling upgrade starts from, default 276d699) --seed S (42) --nodes N (300, 8 GPUs each,
# models mixed as in the openb trace) --rate PODS_PER_S (8) --lifetime S (mean pod lifetime, 450:
# about 3,600 pods alive, slightly more GPUs asked than the 2,400 there are)
# --fault-gap MIN-MAX (seconds between faults; default 120-300, 20-35 below 30 minutes)
# --out DIR (raw files; default a new /tmp directory) --results NAME (copy the report and the plot to
# bench/results/soak-NAME.{txt,png}) --safety-only (CI: the exit status counts only over-commit, pods
# bound twice and bad assignments; the time bounds and growth are reported, not failed on).
# --no-faults (diagnosis: churn only, no fault and no rolling upgrade; each replica keeps its process).
# --faults K1,K2 (diagnosis: only these kinds, in turn, and no rolling upgrade).
# Faults: every kind before the rolling upgrade (at 45 % of the run); after it only those that keep both
# processes and the leader (apiserver, compact, slow, scheduler), so that growth is judged on long lives.
#
# What runs: etcd + kube-apiserver (--no-watch-cache, so that a compaction turns a resumed watch into
# 410 Gone) + kube-scheduler with the shipped scheduler configuration, pointed at bin/soak's front
# (the Service: it forwards to the replica labelled leader); two gpupack replicas with --leader-elect
# that reach the API server through bin/soak's proxy (which delays answers or cuts connections on
# command); bin/soak run creates and deletes the pods and checks the invariants.
set -euo pipefail
cd "$(dirname "$0")/.."
# the image's allocator setting (test_manifests checks that the two agree)
SOAK_GLIBC_TUNABLES=${SOAK_GLIBC_TUNABLES-glibc.malloc.tcache_count=0}
MINUTES=60 FROM=276d699 SEED=42 NODES=300 RATE=8 LIFETIME=450 GAP="" OUTDIR="" RESULTS="" SAFETY="" NOFAULTS="" ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) MINUTES=$2; shift 2 ;;
    --k8s-version) K8S_VERSION=$2; shift 2 ;;
    --from) FROM=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --lifetime) LIFETIME=$2; shift 2 ;;
    --fault-gap) GAP=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    --results) RESULTS=$2; shift 2 ;;
    --safety-only) SAFETY=--safety-only; shift ;;
    --no-faults) NOFAULTS=1; shift ;;
    --faults) ONLY=$2; shift 2 ;;
    *) echo "usage: bench/soak.sh [--minutes N] [--k8s-version 1.26|1.36] [--from REV] [--seed S] [--nodes N]" \
            "[--rate R] [--lifetime S] [--fault-gap MIN-MAX] [--out DIR] [--results NAME] [--safety-only] [--no-faults]" \
            "[--faults K1,K2]" >&2; exit 2 ;;
  esac
done
K8S=${GPUPACK_K8S:-../shared/k8s}
TRACES=${GPUPACK_SHARED:-../shared}/traces
export K8S_VERSION=${K8S_VERSION:-1.26}
export K8S_START_TIMEOUT=${K8S_START_TIMEOUT:-180}   # a loaded machine restarts kube-apiserver slowly
if [ -z "$GAP" ]; then
  if [ "$MINUTES" -lt 30 ]; then GAP=20-35; else GAP=120-300; fi
fi
GAP_MIN=${GAP%-*} GAP_MAX=${GAP#*-}
[ -x "$K8S/kube-up" ] || { echo "bench/soak.sh: no kit at $K8S (set GPUPACK_K8S)" >&2; exit 1; }
[ -f "$TRACES/openb_pod_list_default.csv" ] || { echo "bench/soak.sh: no traces in $TRACES" >&2; exit 1; }

make -s build bin/e2eload bin/soak >/dev/null
# the previous release, built once per REV from `git archive` (no worktree is touched)
if OLD_REV=$(git rev-parse --short --verify -q "$FROM^{commit}"); then
  OLD_BIN=build/soak-old/$OLD_REV/gpupack
else   # a shallow clone: no previous release to upgrade from
  echo "# soak: $FROM is not in this clone; the rolling upgrade replaces the current build by itself" >&2
  OLD_REV=none OLD_BIN=bin/gpupack
fi
if [ ! -x "$OLD_BIN" ]; then
  src=$(mktemp -d /tmp/gpupack-soak-old-XXXXXX)
  git archive "$OLD_REV" | tar -x -C "$src"
  echo "# building the previous release $OLD_REV in $src" >&2
  make -s -C "$src" -j2 build >"$src.log" 2>&1 || { tail -20 "$src.log" >&2; exit 1; }
  mkdir -p "$(dirname "$OLD_BIN")"
  cp "$src/bin/gpupack" "$OLD_BIN"
  rm -rf "$src" "$src.log"
fi

OUT=${OUTDIR:-$(mktemp -d /tmp/gpupack-soak-XXXXXX)}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/gpupack-soakwork-XXXXXX)
cp bin/gpupack "$WORK/gpupack-new"       # a rebuild during the run must not change what runs
cp "$OLD_BIN" "$WORK/gpupack-old"
cp bin/soak "$WORK/soak"
# shellcheck source=bench/lib-controlplane.sh
. bench/lib-controlplane.sh
SOAK_PID=""
soak_cleanup() {
  for r in soak-a soak-b; do
    p=$(cat "$OUT/pid-$r" 2>/dev/null || true)
    [ -n "$p" ] && { kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; } || true
  done
  [ -n "$SOAK_PID" ] && kill "$SOAK_PID" 2>/dev/null && wait "$SOAK_PID" 2>/dev/null || true
  cleanup
}
trap 'soak_cleanup; rm -rf "$WORK"' EXIT

log() { echo "[$(printf '%4d' $((SECONDS - T0)))s] $*" >&2; }
ctl() { echo "$(date +%s.%N) $*" >>"$OUT/control"; }
T0=$SECONDS
# the build under test: HEAD when the run starts (commits made during the run are not in it)
BUILT_AT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include bench || echo '+changes')"
echo "# bench/soak.sh --minutes $MINUTES --k8s-version $K8S_VERSION --from $OLD_REV --seed $SEED --nodes $NODES --rate $RATE --lifetime $LIFETIME --fault-gap $GAP_MIN-$GAP_MAX; $(date -u '+%F %H:%M UTC'); $BUILT_AT; raw files: $OUT; load before: $(cut -d' ' -f1-3 /proc/loadavg)"

CP=$WORK/cp
"$K8S/kube-up" "$CP" --no-watch-cache >"$OUT/up.log" 2>&1 || { cat "$OUT/up.log" >&2; exit 1; }
KC=$CP/kubeconfig
KVER=$(sed -n "s/^export K8S_VERSION=//p" "$CP/env" | tr -d "'\"")
APISERVER=$(. "$CP/env" && echo "${K8S_APISERVER#https://}")
log "control plane $KVER up; creating $NODES nodes"
bin/e2eload nodes --kubeconfig "$KC" --count "$NODES" --trace-nodes "$TRACES/openb_node_list_gpu_node.csv" \
  --seed "$SEED" --threads 8 2>"$OUT/nodes.log"
"$WORK/soak" setup --kubeconfig "$KC" --replicas soak-a,soak-b

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A PORT BUILD
PORT[soak-a]=$(free_port) PORT[soak-b]=$(free_port)
: >"$OUT/control"
: >"$OUT/crashes"
CA=()
[ "$SCHEME" = https ] && CA=(--ca "$PWD/$TLS/ca.crt")
# shellcheck disable=SC2086
${SOAK_WRAP:-} "$WORK/soak" run --kubeconfig "$KC" --out "$OUT" --trace-pods "$TRACES/openb_pod_list_default.csv" \
  --apiserver "$APISERVER" --replica "soak-a=${PORT[soak-a]}" --replica "soak-b=${PORT[soak-b]}" "${CA[@]}" \
  --seed "$SEED" --rate "$RATE" --lifetime "$LIFETIME" --scheduler "$SCHED" $SAFETY >"$OUT/summary.txt" 2>"$OUT/soak.log" &
SOAK_PID=$!
for _ in $(seq 100); do [ -s "$OUT/proxy.port" ] && [ -s "$OUT/front.port" ] && break; sleep 0.1; done
PROXY=$(cat "$OUT/proxy.port") FRONT=$(cat "$OUT/front.port")
# gpupack reaches the API server through the proxy (same certificates; 127.0.0.1 is in the serving cert)
sed "s#server: https://[^ ]*#server: https://127.0.0.1:$PROXY#" "$KC" >"$WORK/gp.kubeconfig"

# start_replica NAME new|old: gpupack with leader election for the Pod NAME, on NAME's fixed port
start_replica() {
  local r=$1 b=$2
  BUILD[$r]=$b
  echo "$b" >"$OUT/ver-$r"
  echo "=== $(date -u +%FT%TZ) start $b" >>"$OUT/gpupack-$r.log"
  # shellcheck disable=SC2086
  GLIBC_TUNABLES=$SOAK_GLIBC_TUNABLES ${SOAK_GPUPACK_WRAP:-} "$WORK/gpupack-$b" serve --kubeconfig "$WORK/gp.kubeconfig" --listen "127.0.0.1:${PORT[$r]}" --policies policies \
    "${GPTLS[@]}" --leader-elect --leader-elect-identity "$r-$RANDOM" --leader-elect-pod "gpupack-system/$r" \
    >>"$OUT/gpupack-$r.log" 2>&1 &
  echo $! >"$OUT/pid-$r"
}
ready() { curl -sf "${CURLTLS[@]}" "$SCHEME://127.0.0.1:${PORT[$1]}/readyz" >/dev/null 2>&1; }
wait_ready() { for _ in $(seq 600); do ready "$1" && return 0; sleep 0.2; done; log "$1 not ready after 120 s"; }
stop_replica() {   # stop_replica NAME SIGNAL
  local p
  p=$(cat "$OUT/pid-$1")
  kill -CONT "$p" 2>/dev/null || true
  kill "-$2" "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}
leader() {
  local r
  for r in soak-a soak-b; do
    [ "$(curl -sf "${CURLTLS[@]}" "$SCHEME://127.0.0.1:${PORT[$r]}/metrics" 2>/dev/null | awk '$1=="gpupack_leader"{print $2}')" = 1 ] \
      && { echo "$r"; return; }
  done
  echo soak-a
}
other() { [ "$1" = soak-a ] && echo soak-b || echo soak-a; }

start_replica soak-a new
start_replica soak-b new
wait_ready soak-a
wait_ready soak-b
bin/e2eload sched-config --port "$FRONT" --qps 100 --tls-dir "$PWD/$TLS" >"$WORK/sched.json"
"$K8S/kube-up" "$CP" --scheduler-config "$WORK/sched.json" >>"$OUT/up.log" 2>&1 || { cat "$OUT/up.log" >&2; exit 1; }
log "replicas' GLIBC_TUNABLES: '${SOAK_GLIBC_TUNABLES}'"
log "replicas on ${PORT[soak-a]} and ${PORT[soak-b]}, front $FRONT, proxy $PROXY; churn starts"
ctl go
T_GO=$SECONDS

# ------------------------------------------------------------------ faults --
RANDOM=$SEED
# Two phases. Before the rolling upgrade, every kind: those that restart a replica or move the lead
# first (seeded order), then those on the API side. After it, the endurance phase: only the faults
# that leave both processes and the leader in place (API server restarts, compactions and their
# relists, a slow API server, kube-scheduler restarts), so that two processes of the current build
# live the rest of the run in one role each: what growth is judged on (docs/reliability.md).
shuffle() { local -n a=$1; local i j t; for ((i = ${#a[@]} - 1; i > 0; i--)); do j=$((RANDOM % (i + 1))); t=${a[i]}; a[i]=${a[j]}; a[j]=$t; done; }
PROC_KINDS=(kill term leader-freeze) API_KINDS=(apiserver compact scheduler slow)
shuffle PROC_KINDS; shuffle API_KINDS
KINDS=("${PROC_KINDS[@]}" "${API_KINDS[@]}")
shuffle API_KINDS
if [ -n "$ONLY" ]; then IFS=, read -r -a KINDS <<<"$ONLY"; fi
NK=0 NA=0
fault() {
  local kind=$1 v
  ctl fault-start "$kind"
  case $kind in
    kill) v=$([ $((RANDOM % 2)) = 0 ] && echo soak-a || echo soak-b)
          log "fault: SIGKILL $v"; stop_replica "$v" KILL; start_replica "$v" "${BUILD[$v]}" ;;
    term) v=$(leader); log "fault: SIGTERM the leader $v"; stop_replica "$v" TERM; start_replica "$v" "${BUILD[$v]}" ;;
    leader-freeze) v=$(leader); log "fault: SIGSTOP the leader $v for 25 s (lease 15 s)"
          kill -STOP "$(cat "$OUT/pid-$v")"; sleep 25; kill -CONT "$(cat "$OUT/pid-$v")" ;;
    apiserver) log "fault: kube-apiserver restart"
          "$K8S/kube-ctl" "$CP" restart-apiserver >>"$OUT/up.log" 2>&1 || { log "kube-ctl restart-apiserver failed; starting it again"
            "$K8S/kube-ctl" "$CP" start-apiserver >>"$OUT/up.log" 2>&1 || log "kube-ctl start-apiserver failed too"; } ;;
    compact) log "fault: gpupack cut off the API server, etcd compacted, reconnect (410 -> relist)"
          ctl partition on; sleep 5; "$K8S/kube-ctl" "$CP" compact-etcd >>"$OUT/up.log" 2>&1 || log "kube-ctl compact-etcd failed"
          ctl partition off ;;
    scheduler) log "fault: kube-scheduler restart"; "$K8S/kube-ctl" "$CP" stop-scheduler >>"$OUT/up.log" 2>&1 || log "stop-scheduler failed"
          sleep 3; "$K8S/kube-ctl" "$CP" start-scheduler >>"$OUT/up.log" 2>&1 || log "kube-ctl start-scheduler failed" ;;
    slow) log "fault: the API server answers gpupack 300 ms late for $SLOW s"; ctl slow 300; sleep "$SLOW"; ctl slow 0 ;;
  esac
  ctl fault-end "$kind"
}
rollout() {   # rollout NAME BUILD: one replica replaced (SIGTERM, then the other build on the same port)
  ctl fault-start "rollout-$1-$2"
  log "rolling: $1 ${BUILD[$1]} -> $2"
  stop_replica "$1" TERM
  start_replica "$1" "$2"
  ctl fault-end "rollout-$1-$2"
  wait_ready "$1"
}
END=$((MINUTES * 60))
UP_AT=$((END * 45 / 100))
DWELL=$([ "$MINUTES" -lt 30 ] && echo 30 || echo 150)   # both builds side by side this long
SLOW=$([ "$MINUTES" -lt 30 ] && echo 30 || echo 60)
upgraded=""
next=$((GAP_MIN + RANDOM % (GAP_MAX - GAP_MIN + 1)))
while :; do
  now=$((SECONDS - T_GO))
  [ "$now" -ge "$END" ] && break
  if [ -z "$upgraded" ] && [ "$now" -ge "$UP_AT" ] && [ -z "$NOFAULTS" ] && [ -z "$ONLY" ]; then
    # the previous release on both replicas (one at a time), then the current build (one at a time)
    log "rolling update to the previous release $OLD_REV, then back to the current build"
    rollout soak-a old; sleep "$DWELL"
    rollout soak-b old; sleep "$DWELL"
    rollout soak-a new; sleep "$DWELL"
    rollout soak-b new
    upgraded=1
    next=$((SECONDS - T_GO + GAP_MIN))
    continue
  fi
  if [ -z "$NOFAULTS" ] && [ "$now" -ge "$next" ] && [ "$now" -lt $((END - 90)) ] && { [ -n "$upgraded" ] || [ -n "$ONLY" ] || [ "$now" -lt $((UP_AT - 60)) ]; }; then
    if [ -z "$upgraded" ]; then fault "${KINDS[NK % ${#KINDS[@]}]}"; NK=$((NK + 1))
    else fault "${API_KINDS[NA % ${#API_KINDS[@]}]}"; NA=$((NA + 1)); fi
    next=$((SECONDS - T_GO + GAP_MIN + RANDOM % (GAP_MAX - GAP_MIN + 1)))
  fi
  # a replica that died on its own is a failure; it is restarted so that the run goes on
  for r in soak-a soak-b; do
    if ! kill -0 "$(cat "$OUT/pid-$r")" 2>/dev/null; then
      log "replica $r exited by itself (see $OUT/gpupack-$r.log); restarting it"
      echo "$(date +%s) $r exited" >>"$OUT/crashes"
      start_replica "$r" "${BUILD[$r]}"
    fi
  done
  sleep 1
done
ctl stop
rc=0
wait "$SOAK_PID" || rc=$?
SOAK_PID=""
crashes=$(wc -l <"$OUT/crashes" 2>/dev/null || echo 0)
[ "$crashes" -gt 0 ] && rc=1
relists=$(cat "$OUT"/gpupack-soak-*.log | grep -c "expired (410)\|answered HTTP 410" || true)
sched_err=$(grep -c '^E' "$CP/logs/kube-scheduler.log" || true)
# what kube-scheduler complained about, by kind (the text up to the first quote or colon)
grep '^E' "$CP/logs/kube-scheduler.log" | cut -d']' -f2- | sed 's/^ *"//; s/["(:=].*//' | sort | uniq -c | sort -rn | head -8 \
  >"$OUT/sched-errors.txt" || true

# -------------------------------------------------------------------- plot --
if command -v gnuplot >/dev/null; then
  # faults and rollout steps shaded on every panel
  awk -F, 'NR>1 && $2 != "nan" {printf "set object rect from %s, graph 0 to %s, graph 1 behind\n", $1, $2}' \
    "$OUT/faults.csv" >"$WORK/rects.gp"
  awk -F, 'NR>1 && $5 != "nan" {print $1, $2, $5}' "$OUT/faults.csv" >"$WORK/faults.dat"
  for r in soak-a soak-b; do awk -F, -v r=$r 'NR>1 && $2==r && $5==1' "$OUT/proc.csv" | tr , ' ' >"$WORK/$r.dat"; done
  tr , ' ' <"$OUT/cluster.csv" | tail -n +2 >"$WORK/cluster.dat"
  gnuplot <<GP 2>"$WORK/gnuplot.log" || true
set terminal pngcairo size 1200,1700 font 'sans,9'
set output '$OUT/soak.png'
set multiplot layout 6,1 title 'bench/soak.sh --minutes $MINUTES, Kubernetes $KVER, seed $SEED (shaded: faults and rollout steps)'
set grid; set key top left horizontal; set xlabel 'seconds since the churn started'
set style rect fc rgb '#ffdddd' fs solid 0.5 noborder
load '$WORK/rects.gp'
set ylabel 'RSS MiB'; plot '$WORK/soak-a.dat' u 1:6 w lp pt 7 ps 0.3 t 'soak-a RSS', '$WORK/soak-b.dat' u 1:6 w lp pt 7 ps 0.3 t 'soak-b RSS', '$WORK/soak-a.dat' u 1:19 w l dt 2 t 'soak-a anon', '$WORK/soak-b.dat' u 1:19 w l dt 2 t 'soak-b anon'
set ylabel 'count'; set yrange [0:*]; plot '$WORK/soak-a.dat' u 1:7 w l t 'soak-a fds', '$WORK/soak-b.dat' u 1:7 w l t 'soak-b fds', '$WORK/soak-a.dat' u 1:8 w l t 'soak-a threads', '$WORK/soak-b.dat' u 1:8 w l t 'soak-b threads'
set ylabel 'pods'; set yrange [*:*]; plot '$WORK/cluster.dat' u 1:3 w l t 'bound (annotations)', '$WORK/cluster.dat' u 1:4 w l t 'pending', '$WORK/soak-a.dat' u 1:12 w l t 'soak-a remembered', '$WORK/soak-b.dat' u 1:12 w l t 'soak-b remembered', '$WORK/soak-a.dat' u 1:(\$13*100) w l t 'soak-a reservations x100', '$WORK/soak-b.dat' u 1:(\$13*100) w l t 'soak-b reservations x100'
set ylabel 'ms'; set yrange [*:*]; set logscale y; plot '$WORK/cluster.dat' u 1:6 w l t 'filter p50', '$WORK/cluster.dat' u 1:7 w l t 'filter p99', '$WORK/cluster.dat' u 1:8 w l t 'bind p50', '$WORK/cluster.dat' u 1:9 w l t 'bind p99'
unset logscale y
set ylabel '%'; set yrange [0:105]; plot '$WORK/cluster.dat' u 1:15 w l t 'GPUs holding a pod', '$WORK/cluster.dat' u 1:16 w l t 'compute held (of all GPUs)'
set ylabel 'binds/s, s'; set yrange [0:*]; plot '$WORK/cluster.dat' u 1:5 w l t 'binds/s', '$WORK/faults.dat' u 2:(0):(0):3 w vectors nohead lw 3 t 'after a fault: seconds until /inspect = annotations (bar height)'
unset multiplot
GP
fi
{
  echo "# bench/soak.sh --minutes $MINUTES --k8s-version $K8S_VERSION ($KVER) --from $OLD_REV --seed $SEED --nodes $NODES --rate $RATE --lifetime $LIFETIME --fault-gap $GAP_MIN-$GAP_MAX"
  echo "# $(date -u '+%F %H:%M UTC'), commit $BUILT_AT (built when the run started), wall time $((SECONDS - T0)) s, load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "faults (seconds since the churn started; converged = every running replica's /inspect equal to the annotations):"
  column -t -s, "$OUT/faults.csv"
  echo
  echo "relists after 410 in the gpupack logs: $relists; kube-scheduler error lines: $sched_err; replicas that exited by themselves: $crashes"
  echo "kube-scheduler's error lines by kind:"
  cat "$OUT/sched-errors.txt"
  echo
  echo "samples every 10 s (cluster.csv, one line a minute):"
  awk -F, 'NR==1 || (NR-2) % 6 == 0' "$OUT/cluster.csv" | column -t -s,
  echo
  echo "replicas (proc.csv, one line a minute each):"
  awk -F, 'NR==1 || (NR-2) % 12 < 2' "$OUT/proc.csv" | cut -d, -f1-13 | column -t -s,
  echo
  grep VIOLATION "$OUT/soak.log" | head -50 || true
  cat "$OUT/summary.txt"
} >"$OUT/soak.txt"
if [ -n "$RESULTS" ]; then
  cp "$OUT/soak.txt" "bench/results/soak-$RESULTS.txt"
  [ -f "$OUT/soak.png" ] && cp "$OUT/soak.png" "bench/results/soak-$RESULTS.png"
fi
cat "$OUT/soak.txt" >&2
[ "$crashes" -gt 0 ] && echo "soak: $crashes gpupack exit(s) nobody asked for" >&2
echo "raw files: $OUT" >&2
tail -1 "$OUT/summary.txt"
exit $rc
