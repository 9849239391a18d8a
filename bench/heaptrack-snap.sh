#!/usr/bin/env bash
# heaptrack-snap.sh PROFILE.zst [N]: what a process under bench/heaptrack-wrap.sh holds now, by
# allocation site (the N largest, default 400), from its profile as written so far: the profile is
# copied and read up to its last complete block, so the process keeps running. Copies taken at
# several times compare one process's sites over time (docs/reliability.md). Prints heaptrack_print's
# leak list: "leaked" means still held at the copy's end.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/heaptrack-snap.sh PROFILE.zst [N]" >&2; exit 2; }
n=${2:-400}
tmp=$(mktemp -d /tmp/heaptrack-snap-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$1" "$tmp/p.zst"
# the copy ends inside a compressed block: zstd decodes what is complete and reports the rest
zstd -dcq "$tmp/p.zst" 2>/dev/null | gzip -1 >"$tmp/p.gz" || true
heaptrack_print -f "$tmp/p.gz" -n "$n" -s 60 --print-leaks 1 --print-peaks 0 --print-allocators 0 \
  --print-temporary 0
