#!/bin/sh
# fuzz-long.sh -- the long libFuzzer runs behind the README's fuzzing figures.
#   scripts/fuzz-long.sh SECONDS NAME...     (after `make fuzz`)
# Runs each harness for SECONDS at nice 19, one after the other, new inputs into
# build/fuzz/long/NAME; the summary (executions, corpus, findings) goes to
# build/fuzz/long/NAME.log. Merge what is worth keeping into the committed corpus with
#   build/fuzz/fuzz_NAME -merge=1 test/fuzz/corpus/NAME build/fuzz/long/NAME
set -u
secs=$1; shift
mkdir -p build/fuzz/long/bin
for n in "$@"; do
  cp -f "build/fuzz/fuzz_$n" "build/fuzz/long/bin/fuzz_$n"   # rebuilding later does not disturb the run
  mkdir -p "build/fuzz/long/$n" "build/fuzz/long/$n.crashes"
  nice -n 19 "build/fuzz/long/bin/fuzz_$n" -max_total_time="$secs" -max_len=8192 \
    -rss_limit_mb=1024 -timeout=60 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/long/$n.crashes/" \
    "build/fuzz/long/$n" "test/fuzz/corpus/$n" >"build/fuzz/long/$n.log" 2>&1
  echo "$n: exit $? $(grep -E '^stat::number_of_executed_units' "build/fuzz/long/$n.log")"
done
