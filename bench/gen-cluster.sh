#!/usr/bin/env bash
# gen-cluster.sh NODES: an embedded cluster (a kubectl List) on stdout, for the
# benchmarks that serve a large cluster without an API server (ui-render.sh,
# inspect.sh): NODES nodes x 8 GPUs (A100 80 GiB, one GPU in 997 unhealthy),
# pods of varied sizes and three policies on two thirds of the GPUs.
set -euo pipefail
nodes=${1:?usage: bench/gen-cluster.sh NODES}
awk -v n="$nodes" 'BEGIN {
  printf "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[";
  nss[0] = "research"; nss[1] = "serving"; nss[2] = "batch";
  pols[0] = "default"; pols[1] = "inference"; pols[2] = "batch-night";
  for (i = 0; i < n; i++) {
    g = "[";
    for (k = 0; k < 8; k++)
      g = g sprintf("%s{\\\"index\\\":%d,\\\"model\\\":\\\"A100-SXM4-80GB\\\",\\\"memoryMiB\\\":81920,\\\"healthy\\\":%s}",
                    k ? "," : "", k, (i * 8 + k) % 997 == 0 ? "false" : "true");
    g = g "]";
    printf "%s{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-node-%05d\",\"annotations\":{\"gpupack.io/gpus\":\"%s\"}}}", i ? "," : "", i, g;
  }
  p = 0;
  for (i = 0; i < n; i++)
    for (k = 0; k < 8; k++) {
      if ((i + k) % 3 == 0) continue;
      mem = 4096 * (1 + (i * 7 + k * 3) % 20); core = 5 * (1 + (i + k * 5) % 20);
      printf ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"job-%d\",\"namespace\":\"%s\",\"uid\":\"uid-%d\",\"annotations\":{\"gpupack.io/policy-used\":\"%s\",\"gpupack.io/assignment\":\"{\\\"node\\\":\\\"gpu-node-%05d\\\",\\\"containers\\\":[{\\\"name\\\":\\\"main\\\",\\\"gpus\\\":[{\\\"index\\\":%d,\\\"memMiB\\\":%d,\\\"core\\\":%d}]}]}\"}},\"spec\":{\"nodeName\":\"gpu-node-%05d\",\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Running\"}}", p, nss[p % 3], p, pols[p % 3], i, k, mem, core, i;
      p++;
    }
  printf "]}\n";
}'
