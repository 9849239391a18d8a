/* test_events.c -- Events on bound pods: the message, the correlator (rate
 * limit, similar-event folding, counted repeats) and what the sender posts. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act/events.h"
#include "fakeapi.h"
#include "testutil.h"

#define S INT64_C(1000000000)
#define T0 (INT64_C(1790000000) * S)

START_TEST(describe_one_and_many)
{
    int64_t mem[2] = {81920, 81920};
    gp_node *n = tu_node("node-a100", 2, mem, NULL, NULL);
    n->gpus[1].info.model = gp_model_intern("A100-SXM4-80GB");
    gp_assignment a;
    memset(&a, 0, sizeof a);
    gp_strlcpy(a.node, "node-a100", sizeof a.node);
    a.nctrs = 1;
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){1, 8192, 250};
    char msg[EVENTS_MSG_MAX];
    events_describe_bind(&a, n, "inference", msg, sizeof msg);
    ck_assert_str_eq(msg, "assigned GPU 1 (A100-SXM4-80GB, 8192 MiB, 25 %) on node-a100, policy inference");
    a.ctrs[0].ngpus = 2;
    a.ctrs[0].gpus[1] = (gp_gpu_grant){0, 4096, 0};
    events_describe_bind(&a, NULL, NULL, msg, sizeof msg);
    ck_assert_str_eq(msg, "assigned GPUs 1 (unknown model, 8192 MiB, 25 %), 0 (unknown model, "
                          "4096 MiB, 0 %) on node-a100, policy default");
    char small[20];
    events_describe_bind(&a, n, "x", small, sizeof small);   /* truncates, terminated */
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    free(n);
}
END_TEST

static events_occurrence occ(const char *pod, const char *msg)
{
    return (events_occurrence){"ns", pod, "uid-1", "Normal", EVENTS_REASON_OK, msg};
}

START_TEST(create_then_count_repeats)
{
    events_agg *a = events_agg_new("gpupack", "host-1");
    events_occurrence o = occ("p", "assigned GPU 0");
    events_send s;
    events_agg_record(a, &o, T0, &s);
    ck_assert_int_eq(s.action, EVENTS_CREATE);
    ck_assert_str_eq(s.ns, "ns");
    const json_t *b = s.body;
    ck_assert_str_eq(json_string_value(json_object_get(b, "kind")), "Event");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "metadata"), "name")), s.name);
    ck_assert_ptr_nonnull(strstr(s.name, "p."));
    const json_t *io = json_object_get(b, "involvedObject");
    ck_assert_str_eq(json_string_value(json_object_get(io, "kind")), "Pod");
    ck_assert_str_eq(json_string_value(json_object_get(io, "name")), "p");
    ck_assert_str_eq(json_string_value(json_object_get(io, "uid")), "uid-1");
    ck_assert_str_eq(json_string_value(json_object_get(b, "reason")), "GPUsAssigned");
    ck_assert_str_eq(json_string_value(json_object_get(b, "type")), "Normal");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "source"), "component")), "gpupack");
    ck_assert_str_eq(json_string_value(json_object_get(b, "reportingInstance")), "host-1");
    ck_assert_str_eq(json_string_value(json_object_get(b, "firstTimestamp")), "2026-09-21T14:13:20Z");
    ck_assert_int_eq(json_integer_value(json_object_get(b, "count")), 1);
    char first[GP_NAME_MAX];
    gp_strlcpy(first, s.name, sizeof first);
    json_decref(s.body);
    /* the same event again: a PATCH of count and lastTimestamp */
    events_agg_record(a, &o, T0 + 30 * S, &s);
    ck_assert_int_eq(s.action, EVENTS_PATCH);
    ck_assert_str_eq(s.name, first);
    ck_assert_int_eq(json_integer_value(json_object_get(s.body, "count")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(s.body, "lastTimestamp")), "2026-09-21T14:13:50Z");
    json_decref(s.body);
    /* another pod, another message: new Events */
    events_occurrence o2 = occ("q", "assigned GPU 0");
    events_agg_record(a, &o2, T0 + 31 * S, &s);
    ck_assert_int_eq(s.action, EVENTS_CREATE);
    json_decref(s.body);
    events_occurrence o3 = occ("p", "assigned GPU 1");
    events_agg_record(a, &o3, T0 + 32 * S, &s);
    ck_assert_int_eq(s.action, EVENTS_CREATE);
    json_decref(s.body);
    /* after the 10-minute window the repeat starts a new Event */
    events_agg_record(a, &o, T0 + 30 * S + 601 * S, &s);
    ck_assert_int_eq(s.action, EVENTS_CREATE);
    ck_assert_str_ne(s.name, first);
    json_decref(s.body);
    /* a vanished Event (404) is forgotten and created again */
    gp_strlcpy(first, s.name, sizeof first);
    events_agg_forget(a, "ns", first);
    events_agg_record(a, &o, T0 + 700 * S, &s);
    ck_assert_int_eq(s.action, EVENTS_CREATE);
    json_decref(s.body);
    events_agg_free(a);
}
END_TEST

/* A message cut inside a character (bounded copies cut bytes, not characters)
 * still makes an Event: jansson refuses ill-formed UTF-8, the body was NULL
 * and the Event was lost. */
START_TEST(message_cut_inside_a_character)
{
    events_agg *a = events_agg_new("gpupack", "host-1");
    char text[EVENTS_MSG_MAX + 8];
    memset(text, 'x', sizeof text);
    memcpy(text + EVENTS_MSG_MAX - 2, "\xc3\xa9", 2);   /* the last byte kept is \xc3 */
    text[sizeof text - 1] = '\0';
    events_occurrence o = occ("p", text);
    events_send s;
    events_agg_record(a, &o, T0, &s);
    ck_assert_int_eq(s.action, EVENTS_CREATE);
    ck_assert_ptr_nonnull(s.body);
    const char *m = json_string_value(json_object_get(s.body, "message"));
    ck_assert_uint_eq(strlen(m), EVENTS_MSG_MAX - 1);
    ck_assert_int_eq(m[EVENTS_MSG_MAX - 2], '?');
    json_decref(s.body);
    events_agg_free(a);
}
END_TEST

START_TEST(rate_limited_per_object)
{
    events_agg *a = events_agg_new("gpupack", "h");
    events_occurrence o = occ("p", "same");
    events_send s;
    int sent = 0, dropped = 0;
    for (int i = 0; i < 40; i++) {
        events_agg_record(a, &o, T0 + i * S, &s);
        *(s.action == EVENTS_DROP ? &dropped : &sent) += 1;
        json_decref(s.body);
    }
    ck_assert_int_eq(sent, 25);    /* the burst */
    ck_assert_int_eq(dropped, 15);
    /* another object has its own bucket */
    events_occurrence other = occ("q", "same");
    events_agg_record(a, &other, T0 + 41 * S, &s);
    ck_assert_int_ne(s.action, EVENTS_DROP);
    json_decref(s.body);
    /* one token comes back after five minutes */
    events_agg_record(a, &o, T0 + 40 * S + 300 * S, &s);
    ck_assert_int_ne(s.action, EVENTS_DROP);
    json_decref(s.body);
    events_agg_record(a, &o, T0 + 40 * S + 301 * S, &s);
    ck_assert_int_eq(s.action, EVENTS_DROP);
    events_agg_free(a);
}
END_TEST

START_TEST(similar_events_are_combined)
{
    events_agg *a = events_agg_new("gpupack", "h");
    events_send s;
    char name[GP_NAME_MAX] = "";
    for (int i = 0; i < 12; i++) {
        char msg[64];
        snprintf(msg, sizeof msg, "binding to n%d failed: HTTP 500", i);
        events_occurrence o = {"ns", "p", "u", "Warning", EVENTS_REASON_FAILED, msg};
        events_agg_record(a, &o, T0 + i * S, &s);
        const char *m = json_string_value(json_object_get(s.body, "message"));
        if (i < 9) {
            ck_assert_int_eq(s.action, EVENTS_CREATE);
            ck_assert_str_eq(m, msg);
        } else if (i == 9) {
            /* the tenth variant: one combined Event from now on */
            ck_assert_int_eq(s.action, EVENTS_CREATE);
            ck_assert_ptr_nonnull(strstr(m, "(combined from similar events): binding to n9"));
            gp_strlcpy(name, s.name, sizeof name);
        } else {
            ck_assert_int_eq(s.action, EVENTS_PATCH);
            ck_assert_str_eq(s.name, name);
            ck_assert_int_eq(json_integer_value(json_object_get(s.body, "count")), i - 8);
        }
        json_decref(s.body);
    }
    events_agg_free(a);
}
END_TEST

/* The sender posts what the correlator decided, off the bind path. */
START_TEST(sender_posts_events)
{
    gp_fakeapi *f = fakeapi_start();
    gp_kube_auth auth = {.server = (char *)fakeapi_url(f)};
    gp_err err;
    gp_cluster *c = cluster_new();
    gp_events *ev = events_new(&auth, c, &err);
    ck_assert_msg(ev != NULL, "%s", err.msg);
    gp_assignment a;
    memset(&a, 0, sizeof a);
    gp_strlcpy(a.node, "n1", sizeof a.node);
    a.nctrs = 1;
    a.ctrs[0].ngpus = 1;
    a.ctrs[0].gpus[0] = (gp_gpu_grant){0, 4096, 0};
    gp_bind_call call = {.ns = "team", .name = "nb", .uid = "u-1", .node = "n1", .assign = &a,
                         .policy = "default"};
    events_bind_result(ev, &call, true, NULL);
    events_bind_result(ev, &call, false, "Binding: HTTP 409: conflict");
    events_bind_result(NULL, &call, true, NULL);   /* no sender: nothing, no crash */
    for (int i = 0; i < 500 && fakeapi_count(f, "POST", "/events") < 2; i++)
        usleep(10000);
    ck_assert_int_eq(fakeapi_count(f, "POST", "/api/v1/namespaces/team/events"), 2);
    bool ok = false, failed = false;
    for (size_t i = 0; i < fakeapi_request_count(f); i++) {
        gp_fake_req r;
        ck_assert_int_eq(fakeapi_request(f, i, &r), 0);
        if (strstr(r.url, "/events")) {
            json_t *b = json_loads(r.body, 0, NULL);
            const char *reason = json_string_value(json_object_get(b, "reason"));
            const char *msg = json_string_value(json_object_get(b, "message"));
            if (strcmp(reason, "GPUsAssigned") == 0)
                ok = strcmp(msg, "assigned GPU 0 (unknown model, 4096 MiB, 0 %) on n1, policy default") == 0;
            if (strcmp(reason, "GPUBindFailed") == 0)
                failed = strcmp(msg, "binding to n1 failed: Binding: HTTP 409: conflict") == 0 &&
                         strcmp(json_string_value(json_object_get(b, "type")), "Warning") == 0;
            json_decref(b);
        }
        fakeapi_req_clear(&r);
    }
    ck_assert(ok);
    ck_assert(failed);
    gp_buf m;
    gp_buf_init(&m, 1 << 16);
    events_metrics(ev, &m);
    ck_assert_ptr_nonnull(strstr(m.data, "gpupack_events_total{result=\"failed\"}"));
    gp_buf_free(&m);
    events_free(ev);
    cluster_free(c);
    fakeapi_stop(f);
}
END_TEST

/* --bind-events: which binds leave an Event. The sender posts in order, so
 * once the failure (posted at every level) is in, the others were decided. */
START_TEST(levels_choose_which_binds_leave_events)
{
    static const struct {
        const char *name;
        bool gpu_pod, cpu_pod;   /* whether each success leaves an Event */
    } levels[] = {{"all", true, true}, {"gpu", true, false}, {"failures", false, false}};
    gp_events_level lv;
    ck_assert_int_eq(events_level_parse("some", &lv), -1);
    for (size_t i = 0; i < GP_ARRAY_LEN(levels); i++) {
        ck_assert_int_eq(events_level_parse(levels[i].name, &lv), 0);
        gp_fakeapi *f = fakeapi_start();
        gp_kube_auth auth = {.server = (char *)fakeapi_url(f)};
        gp_err err;
        gp_cluster *c = cluster_new();
        gp_events *ev = events_new(&auth, c, &err);
        ck_assert_msg(ev != NULL, "%s", err.msg);
        events_set_level(ev, lv);
        gp_assignment a;
        memset(&a, 0, sizeof a);
        gp_strlcpy(a.node, "n1", sizeof a.node);
        a.nctrs = 1;
        a.ctrs[0].ngpus = 1;
        gp_bind_call gpu = {.ns = "t", .name = "gpu", .uid = "u-g", .node = "n1", .assign = &a};
        gp_bind_call cpu = {.ns = "t", .name = "cpu", .uid = "u-c", .node = "n1"};
        gp_bind_call bad = {.ns = "t", .name = "bad", .uid = "u-b", .node = "n1", .assign = &a};
        events_bind_result(ev, &gpu, true, NULL);
        events_bind_result(ev, &cpu, true, NULL);
        events_bind_result(ev, &bad, false, "refused");
        for (int k = 0; k < 500 && fakeapi_count(f, "POST", "/events") < 1 + levels[i].gpu_pod + levels[i].cpu_pod; k++)
            usleep(10000);
        for (int k = 0; k < 500; k++) {
            bool last = false;
            for (size_t r = 0; r < fakeapi_request_count(f) && !last; r++) {
                gp_fake_req q;
                ck_assert_int_eq(fakeapi_request(f, r, &q), 0);
                last = q.body && strstr(q.body, "\"name\":\"bad\"");
                fakeapi_req_clear(&q);
            }
            if (last)
                break;
            usleep(10000);
        }
        int n_gpu = 0, n_cpu = 0, n_bad = 0;
        for (size_t r = 0; r < fakeapi_request_count(f); r++) {
            gp_fake_req q;
            ck_assert_int_eq(fakeapi_request(f, r, &q), 0);
            if (q.body && strstr(q.url, "/events")) {
                n_gpu += strstr(q.body, "\"name\":\"gpu\"") != NULL;
                n_cpu += strstr(q.body, "\"name\":\"cpu\"") != NULL;
                n_bad += strstr(q.body, "\"name\":\"bad\"") != NULL;
            }
            fakeapi_req_clear(&q);
        }
        ck_assert_msg(n_bad == 1 && n_gpu == levels[i].gpu_pod && n_cpu == levels[i].cpu_pod,
                      "--bind-events %s: %d GPU pod, %d CPU pod, %d failure Events", levels[i].name,
                      n_gpu, n_cpu, n_bad);
        events_free(ev);
        cluster_free(c);
        fakeapi_stop(f);
    }
}
END_TEST

Suite *suite_events(void);
Suite *suite_events(void)
{
    Suite *s = suite_create("events");
    TCase *t = tcase_create("events");
    tcase_add_test(t, describe_one_and_many);
    tcase_add_test(t, create_then_count_repeats);
    tcase_add_test(t, message_cut_inside_a_character);
    tcase_add_test(t, rate_limited_per_object);
    tcase_add_test(t, similar_events_are_combined);
    tcase_add_test(t, sender_posts_events);
    tcase_add_test(t, levels_choose_which_binds_leave_events);
    suite_add_tcase(s, t);
    return s;
}
