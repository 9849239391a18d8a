#!/usr/bin/env bash
# heaptrack-wrap.sh CMD ARGS...: runs CMD under heaptrack's preload from its first allocation,
# keeping its PID (exec), for bench/soak.sh's SOAK_GPUPACK_WRAP (docs/reliability.md). The
# profile goes to $HEAPTRACK_DIR (default /tmp)/heaptrack.PID.zst, readable with heaptrack_print
# (Debian: apt-get install heaptrack). A process SIGKILLed leaves a profile of what it held.
set -euo pipefail
dir=${HEAPTRACK_DIR:-/tmp}
lib=/usr/lib/heaptrack
[ -x "$lib/libexec/heaptrack_interpret" ] || { echo "heaptrack-wrap.sh: no heaptrack in $lib" >&2; exit 1; }
fifo=$(mktemp -u "$dir/heaptrack-fifo.XXXXXX")
mkfifo "$fifo"
# $$ is the PID CMD will have after the exec below
"$lib/libexec/heaptrack_interpret" <"$fifo" | zstd -q >"$dir/heaptrack.$$.zst" &
( sleep 5; rm -f "$fifo" ) &   # both ends are open by then
export LD_PRELOAD=$lib/libheaptrack_preload.so DUMP_HEAPTRACK_OUTPUT=$fifo
exec "$@"
