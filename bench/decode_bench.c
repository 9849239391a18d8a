/* decode_bench.c -- CPU per pod watch event as the pod watch decodes it: the
 * event line scanned to the members gpupack reads (watchstream, k8s_obs_pod_keep),
 * then the pod decoded (k8s_obs_pod). No store, no socket: what the w-pods
 * thread spends on one event before it applies it. For allocator A/Bs
 * (bench/malloc-ab.sh) and decoder work.
 *   bin/decode_bench POD.json [EVENTS]   POD.json: one pod object, as a GET returns it */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/watchstream.h"
#include "lib/util.h"
#include "model/k8s_obs.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: decode_bench POD.json [EVENTS]\n");
        return 2;
    }
    long events = argc > 2 ? atol(argv[2]) : 100000;
    if (events <= 0)
        events = 100000;
    json_error_t je;
    json_t *pod = json_load_file(argv[1], 0, &je);
    if (!json_is_object(pod)) {
        fprintf(stderr, "decode_bench: %s: not a JSON object (%s)\n", argv[1], je.text);
        json_decref(pod);
        return 1;
    }
    json_t *ev = json_pack("{s:s,s:O}", "type", "MODIFIED", "object", pod);
    char *line = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    json_decref(pod);
    size_t len = strlen(line);
    gp_pod_view *v = xmalloc(sizeof *v);
    long decoded = 0;
    double t0 = gp_cpu_s();
    for (long i = 0; i < events; i++) {
        gp_watch_event e;
        gp_err err;
        if (watchstream_event_parse_kept(line, len, k8s_obs_pod_keep, &e, &err) < 0) {
            fprintf(stderr, "decode_bench: %s\n", err.msg);
            return 1;
        }
        if (k8s_obs_pod(e.object, false, 1024, v, &err) == 0)
            decoded++;
        watchstream_event_clear(&e);
    }
    double t = gp_cpu_s() - t0;
    printf("events=%ld decoded=%ld line_bytes=%zu cpu_us_per_event=%.3f\n", events, decoded, len,
           t / (double)events * 1e6);
    free(v);
    free(line);
    return decoded == events ? 0 : 1;
}
