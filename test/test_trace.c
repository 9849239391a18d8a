/* test_trace.c -- trace CSV readers: columns by name, mapping, file:line errors. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/trace.h"

#define FIX "test/fixtures/sim/"

START_TEST(loads_nodes_and_maps_them)
{
    trace_node *n = NULL;
    size_t nn = 0;
    gp_err err;
    ck_assert_int_eq(trace_load_nodes(FIX "nodes.csv", &n, &nn, &err), 0);
    ck_assert_uint_eq(nn, 2);
    ck_assert_str_eq(n[0].name, "n0");
    ck_assert_int_eq(n[0].gpus, 2);
    ck_assert_int_eq(n[0].gpu_mem_mib, 20000);
    gp_node g;
    trace_node_to_gp(&n[1], &g);
    ck_assert_int_eq(g.ngpus, 1);
    ck_assert_int_eq(g.cpu_alloc_milli, 4000);
    ck_assert_int_eq(g.host_mem_alloc_mib, 8192);
    ck_assert_int_eq(g.gpus[0].info.mem_total, 20000);
    ck_assert_int_eq(g.gpus[0].info.core_total, GP_CORE_FULL);
    ck_assert(g.gpus[0].info.healthy);
    free(n);
}
END_TEST

START_TEST(loads_pods_and_maps_them)
{
    trace_pod *p = NULL;
    size_t np = 0;
    gp_err err;
    ck_assert_int_eq(trace_load_pods(FIX "pods.csv", &p, &np, &err), 0);
    ck_assert_uint_eq(np, 5);
    ck_assert_int_eq(trace_pod_kind(&p[0]), TRACE_KIND_GPU1);
    ck_assert_int_eq(trace_pod_kind(&p[1]), TRACE_KIND_SHARE);
    ck_assert_int_eq(trace_pod_kind(&p[3]), TRACE_KIND_CPU);
    ck_assert_int_eq(trace_pod_kind(&p[4]), TRACE_KIND_GPU2);
    ck_assert_str_eq(p[2].gpu_spec, "G2");
    ck_assert(p[2].has_times);
    ck_assert_int_eq(p[2].deletion, 30);
    gp_pod_req r;
    trace_pod_to_req(&p[1], "p1-x", &r);
    ck_assert_int_eq(r.nctrs, 1);
    ck_assert_int_eq(r.ctrs[0].count, 1);
    ck_assert_int_eq(r.ctrs[0].core, 500);
    ck_assert_int_eq(r.ctrs[0].mem_ppm, 500000);
    ck_assert_int_eq(r.ctrs[0].ask, GP_ASK_SHARE);
    ck_assert_int_eq(r.ctrs[0].mem_mib, 0);
    ck_assert_int_eq(r.cpu_milli, 1000);
    trace_pod_to_req(&p[3], "p3", &r);
    ck_assert_int_eq(r.nctrs, 0);   /* CPU-only: host resources only */
    ck_assert_int_eq(r.cpu_milli, 3000);
    ck_assert_int_eq(trace_pod_gpu_milli(&p[4]), 2000);
    free(p);
}
END_TEST

START_TEST(errors_name_file_and_line)
{
    trace_pod *p = NULL;
    size_t np = 0;
    gp_err err;
    ck_assert_int_eq(trace_load_pods(FIX "bad_pods.csv", &p, &np, &err), -1);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err.msg, "bad_pods.csv:3:") != NULL, "%s", err.msg);
    ck_assert_int_eq(trace_load_pods(FIX "no-such-file.csv", &p, &np, &err), -1);
    ck_assert_msg(strstr(err.msg, "no-such-file.csv") != NULL, "%s", err.msg);
    /* a node file read as pods misses columns: named in the error */
    ck_assert_int_eq(trace_load_pods(FIX "nodes.csv", &p, &np, &err), -1);
    ck_assert_msg(strstr(err.msg, "nodes.csv:1: header has no column \"name\"") != NULL, "%s",
                  err.msg);
}
END_TEST

START_TEST(bounded_lines_and_models)
{
    char path[] = "/tmp/gpupack-trace-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "sn,cpu_milli,memory_mib,gpu,model\nx,1,1,1,H100\n");
    fclose(f);
    trace_node *n = NULL;
    size_t nn = 0;
    gp_err err;
    ck_assert_int_eq(trace_load_nodes(path, &n, &nn, &err), -1);
    ck_assert_msg(strstr(err.msg, ":2: unknown GPU model \"H100\"") != NULL, "%s", err.msg);
    f = fopen(path, "w");
    fprintf(f, "sn,cpu_milli,memory_mib,gpu,model\n");
    for (int i = 0; i < TRACE_LINE_MAX + 10; i++)
        fputc('a', f);
    fputc('\n', f);
    fclose(f);
    ck_assert_int_eq(trace_load_nodes(path, &n, &nn, &err), -1);
    ck_assert_msg(strstr(err.msg, ":2: line longer than") != NULL, "%s", err.msg);
    remove(path);
    ck_assert_int_eq(trace_model_mem_mib("t4"), 15109);
    ck_assert_int_eq(trace_model_mem_mib("nope"), 0);
}
END_TEST

Suite *suite_trace(void);
Suite *suite_trace(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, loads_nodes_and_maps_them);
    tcase_add_test(tc, loads_pods_and_maps_them);
    tcase_add_test(tc, errors_name_file_and_line);
    tcase_add_test(tc, bounded_lines_and_models);
    suite_add_tcase(s, tc);
    return s;
}
