/* test_watchstream.c -- the watch line splitter on real apiserver streams, split at every byte. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "livetest.h"
#include "kube/watchstream.h"
#include "lib/jsonkeep.h"
#include "model/k8s_obs.h"

typedef struct {
    gp_buf all;      /* lines joined with '\n' */
    int n;
    int stop_after;  /* callback returns -1 after this many lines (0 = never) */
    bool bad;        /* a line was not NUL-terminated at len, or overflowed */
} collect;

/* No ck_assert in here: Check records every assertion through a pipe in
 * fork mode, which would dominate tests that split streams thousands of times. */
static int on_line(void *ud, const char *line, size_t len)
{
    collect *c = ud;
    if (strlen(line) != len || gp_buf_append(&c->all, line, len) < 0 ||
        gp_buf_append(&c->all, "\n", 1) < 0)
        c->bad = true;
    c->n++;
    if (c->stop_after && c->n >= c->stop_after)
        return -1;
    return 0;
}

static const char *const streams[] = {
    "wire/watch/pods-watch.jsonl",
    "wire/watch/nodes-watch.jsonl",
    "wire/watch/pods-watch-no-rv-initial-state.jsonl",
    "wire/gone/watch-pods-rv1-410.jsonl",
    "wire/gone/watch-nodes-rv1-410.jsonl",
};

static char *load(const char *rel, size_t *len)
{
    char *p = livetest_captured(rel);
    char *data = livetest_read(p, len);
    ck_assert_msg(data != NULL, "cannot read %s", p);
    free(p);
    return data;
}

static int count_lines(const char *data, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    return n;
}

/* Every stream split in two at every offset yields exactly its lines. */
START_TEST(split_every_offset)
{
    size_t len;
    char *data = load(streams[_i], &len);
    ck_assert(len > 0 && data[len - 1] == '\n');
    int want = count_lines(data, len);
    collect c = {.n = 0};
    gp_buf_init(&c.all, 1u << 24);
    gp_watchstream *w = watchstream_new(GP_WATCH_LINE_MAX, on_line, &c);
    size_t failed_at = SIZE_MAX;
    for (size_t k = 0; k <= len && failed_at == SIZE_MAX; k++) {
        c.n = 0;
        gp_buf_reset(&c.all);
        gp_err err;
        if (watchstream_feed(w, data, k, &err) < 0 || watchstream_feed(w, data + k, len - k, &err) < 0 ||
            c.bad || c.n != want || c.all.len != len || memcmp(c.all.data, data, len) != 0 ||
            watchstream_pending(w) != 0)
            failed_at = k;
    }
    ck_assert_msg(failed_at == SIZE_MAX, "%s split at byte %zu: wrong lines", streams[_i], failed_at);
    watchstream_free(w);
    gp_buf_free(&c.all);
    free(data);
}
END_TEST

/* One byte at a time, and every line decodes as an event. */
START_TEST(bytewise_and_parse)
{
    size_t len;
    char *data = load(streams[_i], &len);
    collect c = {.n = 0};
    gp_buf_init(&c.all, 1u << 24);
    gp_watchstream *w = watchstream_new(GP_WATCH_LINE_MAX, on_line, &c);
    gp_err err;
    int fails = 0;
    for (size_t k = 0; k < len; k++)
        fails += watchstream_feed(w, data + k, 1, &err) < 0;
    ck_assert_int_eq(fails, 0);
    ck_assert(!c.bad);
    ck_assert_int_eq(c.n, count_lines(data, len));
    char *save = NULL;
    for (char *line = strtok_r(c.all.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        gp_watch_event ev;
        ck_assert_msg(watchstream_event_parse(line, strlen(line), &ev, &err) == 0, "%s", err.msg);
        ck_assert_ptr_nonnull(ev.object);
        if (ev.type == GP_WATCH_ERROR) {
            ck_assert_int_eq(ev.code, 410);
            ck_assert_str_eq(ev.reason, "Expired");
        } else {
            ck_assert(ev.rv[0] != '\0');
        }
        watchstream_event_clear(&ev);
    }
    watchstream_free(w);
    gp_buf_free(&c.all);
    free(data);
}
END_TEST

/* The event types of pods-watch.jsonl, in order (events-summary.txt). */
START_TEST(pods_event_sequence)
{
    static const gp_watch_type want[] = {
        GP_WATCH_ADDED,    GP_WATCH_MODIFIED, GP_WATCH_MODIFIED, GP_WATCH_ADDED,
        GP_WATCH_MODIFIED, GP_WATCH_MODIFIED, GP_WATCH_MODIFIED, GP_WATCH_DELETED,
        GP_WATCH_MODIFIED, GP_WATCH_DELETED,  GP_WATCH_ADDED,    GP_WATCH_MODIFIED,
        GP_WATCH_DELETED,  GP_WATCH_BOOKMARK,
    };
    static const char *const rvs[] = {"229", "231", "233", "234", "235", "238", "239",
                                      "240", "241", "242", "243", "244", "245", "245"};
    size_t len;
    char *data = load("wire/watch/pods-watch.jsonl", &len);
    size_t i = 0;
    char *save = NULL;
    for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
        ck_assert_uint_lt(i, GP_ARRAY_LEN(want));
        gp_watch_event ev;
        gp_err err;
        ck_assert(watchstream_event_parse(line, strlen(line), &ev, &err) == 0);
        ck_assert_int_eq(ev.type, want[i]);
        ck_assert_str_eq(ev.rv, rvs[i]);
        watchstream_event_clear(&ev);
    }
    ck_assert_uint_eq(i, GP_ARRAY_LEN(want));
    free(data);
}
END_TEST

START_TEST(line_limit)
{
    collect c = {.n = 0};
    gp_buf_init(&c.all, 1024);
    gp_watchstream *w = watchstream_new(8, on_line, &c);
    gp_err err;
    ck_assert(watchstream_feed(w, "12345678\n", 9, &err) == 0);   /* exactly the limit */
    ck_assert_int_eq(c.n, 1);
    ck_assert(watchstream_feed(w, "1234", 4, &err) == 0);
    ck_assert(watchstream_feed(w, "56789", 5, &err) == -1);       /* one past, split */
    ck_assert(strstr(err.msg, "exceeds 8 bytes") != NULL);
    watchstream_reset(w);
    ck_assert(watchstream_feed(w, "123456789\n", 10, &err) == -1); /* one past, whole */
    watchstream_free(w);
    gp_buf_free(&c.all);
}
END_TEST

START_TEST(crlf_blank_partial_stop)
{
    collect c = {.n = 0};
    gp_buf_init(&c.all, 1024);
    gp_watchstream *w = watchstream_new(64, on_line, &c);
    gp_err err;
    ck_assert(watchstream_feed(w, "a\r\n\n\r\nb\nhalf", 12, &err) == 0);
    ck_assert_int_eq(c.n, 2);
    ck_assert_str_eq(c.all.data, "a\nb\n");
    ck_assert_uint_eq(watchstream_pending(w), 4);   /* a cut event */
    watchstream_reset(w);
    ck_assert_uint_eq(watchstream_pending(w), 0);
    c.stop_after = 3;
    ck_assert(watchstream_feed(w, "x\ny\nz\n", 6, &err) == -1);
    ck_assert_int_eq(c.n, 3);
    watchstream_free(w);
    watchstream_free(NULL);
    gp_buf_free(&c.all);
}
END_TEST

START_TEST(bad_events)
{
    static const char *const bad[] = {
        "{", "[]", "{\"type\":\"ADDED\"}", "{\"object\":{}}",
        "{\"type\":\"WHAT\",\"object\":{}}", "{\"type\":\"ADDED\",\"object\":[1]}",
        "{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}", "\xff\xfe",
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(bad); i++) {
        gp_watch_event ev;
        gp_err err = {{0}};
        ck_assert_msg(watchstream_event_parse(bad[i], strlen(bad[i]), &ev, &err) == -1, "%s", bad[i]);
        ck_assert(err.msg[0] != '\0');
        ck_assert_ptr_null(ev.object);
    }
}
END_TEST

/* Events decoded with a keep table (what the pod reflector does): every
 * captured pod event's object is exactly the reduction of the whole object
 * (jsonkeep_trim with the same table), type and resourceVersion alike; the
 * 410 error, the bookmark and events the scanner declines come whole; bad
 * lines fail with the whole decoder's message. */
START_TEST(kept_events_are_the_reduction)
{
    static const struct {
        const char *file;
        const gp_keep *keep;
    } files[] = {{"wire/watch/pods-watch.jsonl", k8s_obs_pod_keep},
                 {"wire/watch/pods-watch-no-rv-initial-state.jsonl", k8s_obs_pod_keep},
                 {"wire/gone/watch-pods-rv1-410.jsonl", k8s_obs_pod_keep},
                 {"wire/watch/nodes-watch.jsonl", k8s_obs_node_keep},
                 {"wire/gone/watch-nodes-rv1-410.jsonl", k8s_obs_node_keep}};
    int reduced = 0, whole = 0, nodes = 0;
    for (size_t f = 0; f < GP_ARRAY_LEN(files); f++) {
        const gp_keep *keep = files[f].keep;
        size_t len;
        char *data = load(files[f].file, &len);
        char *save = NULL;
        for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            gp_watch_event full, kept;
            gp_err err;
            ck_assert(watchstream_event_parse(line, strlen(line), &full, &err) == 0);
            ck_assert(watchstream_event_parse_kept(line, strlen(line), keep, &kept, &err) == 0);
            ck_assert_int_eq(kept.type, full.type);
            ck_assert_str_eq(kept.rv, full.rv);
            ck_assert_int_eq(kept.code, full.code);
            ck_assert_str_eq(kept.reason, full.reason);
            ck_assert_str_eq(kept.message, full.message);
            if (full.type == GP_WATCH_BOOKMARK || full.type == GP_WATCH_ERROR) {
                ck_assert(json_equal(kept.object, full.object));
                whole++;
            } else {
                json_t *want = jsonkeep_trim(full.object, keep);
                ck_assert_msg(json_equal(kept.object, want), "%.120s", line);
                ck_assert_ptr_null(json_object_get(json_object_get(kept.object, "metadata"), "managedFields"));
                json_decref(want);
                reduced++;
                if (keep == k8s_obs_node_keep) {   /* the node decodes as whole */
                    char na[GP_NAME_MAX], nb[GP_NAME_MAX];
                    gp_inventory ia, ib;
                    gp_err ea, eb;
                    int ra = k8s_obs_node(full.object, 0, na, &ia, &ea);
                    ck_assert_int_eq(k8s_obs_node(kept.object, 0, nb, &ib, &eb), ra);
                    ck_assert_str_eq(na, nb);
                    ck_assert(memcmp(&ia, &ib, sizeof ia) == 0);
                    nodes++;
                }
            }
            watchstream_event_clear(&full);
            watchstream_event_clear(&kept);
        }
        free(data);
    }
    ck_assert_int_ge(reduced, 15);
    ck_assert_int_ge(nodes, 3);
    ck_assert_int_ge(whole, 2);
    /* the scanner declines a key with an escape: the object comes whole */
    const char *esc = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p\",\"a\\u0062\":1,"
                      "\"resourceVersion\":\"7\"},\"junk\":[1,2]}}";
    gp_watch_event ev;
    gp_err err;
    ck_assert(watchstream_event_parse_kept(esc, strlen(esc), k8s_obs_pod_keep, &ev, &err) == 0);
    ck_assert_ptr_nonnull(json_object_get(ev.object, "junk"));
    ck_assert_str_eq(ev.rv, "7");
    watchstream_event_clear(&ev);
    /* a duplicate key among the members read fails as whole; among those
     * skipped it is never looked at (nothing reads either value) */
    const char *dup = "{\"type\":\"ADDED\",\"object\":{\"junk\":1,\"junk\":2,\"metadata\":{\"name\":\"p\"}}}";
    ck_assert(watchstream_event_parse(dup, strlen(dup), &ev, &err) == -1);
    ck_assert(watchstream_event_parse_kept(dup, strlen(dup), k8s_obs_pod_keep, &ev, &err) == 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev.object, "metadata"), "name")), "p");
    watchstream_event_clear(&ev);
    static const char *const bad[] = {
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"name\":\"b\"}}}",
        "{\"type\":\"ADDED\",\"object\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]},\"junk\":[1,}}",
        "{\"type\":\"ADDED\",\"object\":{},\"object\":{}}",
    };
    for (size_t i = 0; i < GP_ARRAY_LEN(bad); i++) {
        gp_watch_event a, b;
        gp_err ea = {{0}}, eb = {{0}};
        int ra = watchstream_event_parse(bad[i], strlen(bad[i]), &a, &ea);
        int rb = watchstream_event_parse_kept(bad[i], strlen(bad[i]), k8s_obs_pod_keep, &b, &eb);
        ck_assert_int_eq(ra, rb);
        ck_assert_int_eq(rb, -1);
        ck_assert_str_eq(ea.msg, eb.msg);
        ck_assert_ptr_null(b.object);
    }
}
END_TEST

Suite *suite_watchstream(void);
Suite *suite_watchstream(void)
{
    Suite *s = suite_create("watchstream");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, split_every_offset, 0, (int)GP_ARRAY_LEN(streams));
    tcase_add_loop_test(tc, bytewise_and_parse, 0, (int)GP_ARRAY_LEN(streams));
    tcase_add_test(tc, pods_event_sequence);
    tcase_add_test(tc, line_limit);
    tcase_add_test(tc, crlf_blank_partial_stop);
    tcase_add_test(tc, bad_events);
    tcase_add_test(tc, kept_events_are_the_reduction);
    suite_add_tcase(s, tc);
    return s;
}
