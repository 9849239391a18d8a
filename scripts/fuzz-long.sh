#!/bin/sh
# fuzz-long.sh -- long libFuzzer runs, one harness after the other, corpora merged back.
#   scripts/fuzz-long.sh SECONDS NAME...     (after `make fuzz`; `make fuzz-long` does both)
# Each harness runs SECONDS of wall time at nice $FUZZ_NICE (19) on one core, new inputs into
# build/fuzz/long/NAME, findings into build/fuzz/long/NAME.crashes/. A crash does not end the
# run: the harness starts again for the time left (at most 5 times). Then the committed
# corpus test/fuzz/corpus/NAME is replaced by the -merge=1 minimisation of itself plus the
# new inputs, so it keeps every feature and no redundant input.
# The figures of each harness (executions, CPU seconds, cov and ft as libFuzzer prints them,
# corpus before and after, findings) go to build/fuzz/long/summary.tsv and stdout; the raw
# output to build/fuzz/long/NAME.log. Exits 1 when any harness found something.
set -u
secs=$1; shift
nice_level=${FUZZ_NICE:-19}
out=build/fuzz/long
mkdir -p "$out/bin"
summary=$out/summary.tsv
printf 'harness\tseconds\texecs\tcpu_s\tcov\tft\tcorpus_before\tbytes_before\tcorpus_after\tbytes_after\tpeak_rss_mb\tfindings\n' >"$summary"

count() { find "$1" -type f | wc -l | tr -d ' '; }
bytes() { find "$1" -type f -exec cat {} + | wc -c | tr -d ' '; }

status=0
for n in "$@"; do
  bin=$out/bin/fuzz_$n
  cp -f "build/fuzz/fuzz_$n" "$bin"   # rebuilding later does not disturb the run
  corpus=test/fuzz/corpus/$n
  mkdir -p "$out/$n" "$out/$n.crashes" "$corpus"
  before=$(count "$corpus"); bbefore=$(bytes "$corpus")
  : >"$out/$n.log"
  start=$(date +%s); left=$secs; runs=0; execs=0; cpu=0
  while [ "$left" -gt 0 ] && [ "$runs" -lt 6 ]; do
    runs=$((runs + 1))
    /usr/bin/time -f '%U %S' -o "$out/$n.time" nice -n "$nice_level" "$bin" \
      -max_total_time="$left" -max_len=8192 -rss_limit_mb=1024 -timeout=60 \
      -print_final_stats=1 -artifact_prefix="$out/$n.crashes/" \
      "$out/$n" "$corpus" >>"$out/$n.log" 2>&1
    rc=$?
    e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$n.log" | tail -1)
    execs=$((execs + ${e:-0}))
    cpu=$(awk -v c="$cpu" 'END { print c + $1 + $2 }' "$out/$n.time")
    [ "$rc" -eq 0 ] && break
    echo "$n: exit $rc after $(( $(date +%s) - start )) s (see $out/$n.log)"
    left=$((secs - ($(date +%s) - start)))
  done
  # the last status line libFuzzer printed: "#N  DONE  cov: C ft: F corp: ..."
  cov=$(grep -E '^#[0-9]+' "$out/$n.log" | grep -o 'cov: [0-9]*' | tail -1 | cut -d' ' -f2)
  ft=$(grep -E '^#[0-9]+' "$out/$n.log" | grep -o 'ft: [0-9]*' | tail -1 | cut -d' ' -f2)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$out/$n.log" | sort -n | tail -1)
  findings=$(count "$out/$n.crashes")
  [ "$findings" -gt 0 ] && status=1

  merged=$out/$n.merged
  rm -rf "$merged"; mkdir -p "$merged"
  if nice -n "$nice_level" "$bin" -merge=1 -max_len=8192 -rss_limit_mb=1024 -timeout=60 \
       "$merged" "$corpus" "$out/$n" >"$out/$n.merge.log" 2>&1 && [ "$(count "$merged")" -gt 0 ]; then
    find "$corpus" -type f -delete
    cp "$merged"/* "$corpus"/
  else
    echo "$n: merge failed, corpus left as it was (see $out/$n.merge.log)"; status=1
  fi
  after=$(count "$corpus"); bafter=$(bytes "$corpus")
  printf '%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$secs" "$execs" "$cpu" \
    "${cov:-?}" "${ft:-?}" "$before" "$bbefore" "$after" "$bafter" "${rss:-?}" "$findings" >>"$summary"
  echo "$n: $execs executions in $secs s ($cpu CPU s), cov $cov ft $ft, corpus $before -> $after inputs ($bbefore -> $bafter bytes), findings $findings"
done
column -t "$summary" 2>/dev/null || cat "$summary"
exit $status
