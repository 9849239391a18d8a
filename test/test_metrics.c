/* test_metrics.c -- the Prometheus text helpers and the writer list /metrics renders. */
#include <check.h>
#include <string.h>

#include "lib/metrics.h"

START_TEST(samples_have_one_style)
{
    gp_buf b;
    gp_buf_init(&b, 4096);
    metrics_header(&b, "gp_x_total", "counter", "Things.");
    metrics_u(&b, "gp_x_total", NULL, 3);
    metrics_u(&b, "gp_x_total", "", 4);
    metrics_u(&b, "gp_x_total", "k=\"v\"", 18446744073709551615ull);
    metrics_i(&b, "gp_y", "a=\"1\",b=\"2\"", -7);
    metrics_f(&b, "gp_z", NULL, 3, -1.0);
    metrics_f(&b, "gp_z", "kind=\"used\"", 1, 12.25);
    ck_assert(!gp_buf_failed(&b));
    ck_assert_str_eq(b.data, "# HELP gp_x_total Things.\n# TYPE gp_x_total counter\n"
                             "gp_x_total 3\ngp_x_total 4\ngp_x_total{k=\"v\"} 18446744073709551615\n"
                             "gp_y{a=\"1\",b=\"2\"} -7\ngp_z -1.000\ngp_z{kind=\"used\"} 12.2\n");
    gp_buf_free(&b);
}
END_TEST

START_TEST(label_values_are_made_safe)
{
    char v[8];
    metrics_label_value(v, sizeof v, "a\"b\\c\n\xc3\xa9xyz");
    ck_assert_str_eq(v, "a_b_c__");   /* quote, backslash, newline, non-ASCII; truncated */
    metrics_label_value(v, sizeof v, "node-1");
    ck_assert_str_eq(v, "node-1");
}
END_TEST

static void w_one(void *ud, gp_buf *out)
{
    metrics_u(out, (const char *)ud, NULL, 1);
}

/* Writers run in the order they were listed; a page past its limit fails once. */
START_TEST(writers_render_in_order)
{
    gp_metrics m;
    metrics_init(&m);
    metrics_add(&m, w_one, "first");
    metrics_add(&m, w_one, "second");
    gp_buf b;
    gp_buf_init(&b, 4096);
    metrics_write(&m, &b);
    metrics_write(NULL, &b);
    ck_assert_str_eq(b.data, "first 1\nsecond 1\n");
    gp_buf_free(&b);
    gp_buf_init(&b, 10);
    metrics_write(&m, &b);
    ck_assert(gp_buf_failed(&b));
    gp_buf_free(&b);
}
END_TEST

START_TEST(histogram_is_cumulative)
{
    static gp_histo h;
    metrics_observe(&h, 0.00005);
    metrics_observe(&h, 0.003);
    metrics_observe(&h, 10);
    gp_buf b;
    gp_buf_init(&b, 1 << 16);
    metrics_render_histo(&b, "gp_d_seconds", "verb=\"bind\"", &h);
    ck_assert_ptr_nonnull(strstr(b.data, "gp_d_seconds_bucket{verb=\"bind\",le=\"0.0001\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "gp_d_seconds_bucket{verb=\"bind\",le=\"0.005\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "gp_d_seconds_bucket{verb=\"bind\",le=\"+Inf\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "gp_d_seconds_count{verb=\"bind\"} 3\n"));
    gp_buf_free(&b);
}
END_TEST

Suite *suite_metrics(void);
Suite *suite_metrics(void)
{
    Suite *s = suite_create("metrics");
    TCase *t = tcase_create("text");
    tcase_add_test(t, samples_have_one_style);
    tcase_add_test(t, label_values_are_made_safe);
    tcase_add_test(t, writers_render_in_order);
    tcase_add_test(t, histogram_is_cumulative);
    suite_add_tcase(s, t);
    return s;
}
