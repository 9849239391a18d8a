/* fuzz_watch.c -- libFuzzer harness for watch streams: the bounded line
 * splitter fed in arbitrary chunks, and every complete line through the event
 * decoder.
 *
 * Built and run by `make fuzz` / `make fuzz-short` (see the Makefile). The first
 * input byte picks the chunk size, so the same events arrive cut at every
 * offset; the line limit is small so that the "line too long" path is hit.
 * Each line is also decoded as the pod reflector does (reduced to the pod's
 * keep table): when both decoders accept it, they agree on the type and the
 * resourceVersion, and the reduced object is the whole one trimmed, or the
 * whole one (where the scanner declined). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/watchstream.h"
#include "lib/jsonkeep.h"
#include "model/k8s_obs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_line(void *ud, const char *line, size_t len)
{
    (void)ud;
    if (line[len] != '\0' || memchr(line, '\n', len))
        abort();   /* one line, NUL-terminated at len */
    gp_watch_event ev, kept;
    gp_err err = {0}, kerr = {0};
    int rk = watchstream_event_parse_kept(line, len, k8s_obs_pod_keep, &kept, &kerr);
    if (rk != 0 && !kerr.msg[0])
        abort();
    if (watchstream_event_parse(line, len, &ev, &err) == 0) {
        if (!ev.object && ev.type != GP_WATCH_ERROR)
            abort();
        (void)watchstream_type_name(ev.type);
        if (rk != 0)
            abort();   /* what the whole decoder accepts, the reduced one does */
        if (kept.type != ev.type || strcmp(kept.rv, ev.rv) != 0 || kept.code != ev.code)
            abort();
        json_t *trim = jsonkeep_trim(ev.object, k8s_obs_pod_keep);
        if (!json_equal(kept.object, ev.object) &&
            (ev.type == GP_WATCH_BOOKMARK || ev.type == GP_WATCH_ERROR || !json_equal(kept.object, trim)))
            abort();
        json_decref(trim);
        watchstream_event_clear(&ev);
    } else if (!err.msg[0]) {
        abort();   /* a refusal always says why */
    }
    if (rk == 0)
        watchstream_event_clear(&kept);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] % 64 + 1;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    gp_watchstream *w = watchstream_new(4096, on_line, NULL);
    gp_err err = {0};
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        if (watchstream_feed(w, p + off, k, &err) < 0) {
            if (!err.msg[0])
                abort();
            break;
        }
    }
    (void)watchstream_pending(w);
    watchstream_free(w);
    return 0;
}
