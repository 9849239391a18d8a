/* test_kubeconfig.c -- kubeconfig and in-cluster credential loading. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "livetest.h"

#define FIX "test/fixtures/live/"

START_TEST(current_context_token)
{
    gp_kube_auth a;
    gp_err err;
    ck_assert_msg(kubeconfig_load(FIX "kubeconfig-token.yaml", NULL, &a, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(a.server, "https://127.0.0.1:46443/");
    ck_assert_str_eq(a.ca_file, FIX "ca.crt");   /* relative to the kubeconfig */
    ck_assert_ptr_null(a.ca_pem);
    ck_assert_str_eq(a.token, "abc.def-123");
    ck_assert_ptr_null(a.token_file);
    ck_assert(!a.insecure);
    ck_assert(strstr(a.origin, "context lab") != NULL);
    kube_auth_clear(&a);
    ck_assert_ptr_null(a.server);
    kube_auth_clear(NULL);
}
END_TEST

START_TEST(explicit_context_token_file)
{
    gp_kube_auth a;
    gp_err err;
    ck_assert_msg(kubeconfig_load(FIX "kubeconfig-token.yaml", "other", &a, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(a.server, "https://other.invalid:6443");
    ck_assert_ptr_null(a.ca_file);
    ck_assert_str_eq(a.token_file, FIX "token.txt");
    ck_assert_ptr_null(a.token);
    /* the client reads the token file at once, and strips the newline */
    gp_kube *k = kube_new(&a, &err);
    ck_assert_msg(k != NULL, "%s", err.msg);
    ck_assert_str_eq(kube_server(k), "https://other.invalid:6443");
    kube_free(k);
    kube_auth_clear(&a);

    ck_assert(kubeconfig_load(FIX "kubeconfig-token.yaml", "nope", &a, &err) == -1);
    ck_assert_msg(strstr(err.msg, "no contexts entry named \"nope\"") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(cert_data)
{
    gp_kube_auth a;
    gp_err err;
    ck_assert_msg(kubeconfig_load(FIX "kubeconfig-certdata.yaml", NULL, &a, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(a.server, "https://127.0.0.1:39999");
    ck_assert_ptr_nonnull(a.ca_pem);
    ck_assert(strncmp(a.ca_pem, "-----BEGIN CERTIFICATE-----\n", 28) == 0);
    ck_assert_str_eq(a.cert_pem, "client cert pem");
    ck_assert_uint_eq(a.cert_pem_len, 15);
    ck_assert_str_eq(a.key_pem, "client key pem");
    ck_assert_ptr_null(a.token);
    gp_kube *k = kube_new(&a, &err);
    ck_assert_ptr_nonnull(k);
    kube_free(k);
    kube_auth_clear(&a);
}
END_TEST

START_TEST(insecure_no_user)
{
    gp_kube_auth a;
    gp_err err;
    ck_assert_msg(kubeconfig_load(FIX "kubeconfig-insecure.yaml", NULL, &a, &err) == 0, "%s", err.msg);
    ck_assert(a.insecure);
    ck_assert_str_eq(a.server, "http://127.0.0.1:8080");
    ck_assert_ptr_null(a.token);
    kube_auth_clear(&a);
}
END_TEST

static const struct {
    const char *file, *want;
} bad[] = {
    {"kubeconfig-exec.yaml", FIX "kubeconfig-exec.yaml:11:5: user \"eks\": exec / auth-provider"},
    {"kubeconfig-badb64.yaml", FIX "kubeconfig-badb64.yaml:6:33: \"certificate-authority-data\" is not valid base64"},
    {"kubeconfig-syntax.yaml", FIX "kubeconfig-syntax.yaml:5:"},
    {"kubeconfig-missing-ca.yaml", "no-such-ca.crt: No such file"},
    {"no-such-file.yaml", FIX "no-such-file.yaml: No such file"},
};

START_TEST(bad_files)
{
    gp_kube_auth a;
    gp_err err = {{0}};
    char *path = xasprintf(FIX "%s", bad[_i].file);
    ck_assert(kubeconfig_load(path, NULL, &a, &err) == -1);
    ck_assert_msg(strstr(err.msg, bad[_i].want) != NULL, "got: %s", err.msg);
    ck_assert_ptr_null(a.server);
    free(path);
}
END_TEST

START_TEST(incluster)
{
    char *dir = livetest_tmpdir();
    ck_assert_ptr_nonnull(dir);
    char *tok = xasprintf("%s/token", dir), *ca = xasprintf("%s/ca.crt", dir);
    gp_kube_auth a;
    gp_err err;
    unsetenv("KUBERNETES_SERVICE_HOST");
    ck_assert(kube_auth_incluster(dir, &a, &err) == -1);
    ck_assert(strstr(err.msg, "KUBERNETES_SERVICE_HOST") != NULL);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    ck_assert(kube_auth_incluster(dir, &a, &err) == -1);   /* no token yet */
    ck_assert(strstr(err.msg, "/token") != NULL);
    ck_assert(livetest_write(tok, "tok\n", 4) == 0);
    ck_assert(livetest_write(ca, "ca\n", 3) == 0);
    ck_assert_msg(kube_auth_incluster(dir, &a, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(a.server, "https://10.96.0.1:443");
    ck_assert_str_eq(a.token_file, tok);
    ck_assert_str_eq(a.ca_file, ca);
    kube_auth_clear(&a);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    ck_assert(kube_auth_incluster(dir, &a, &err) == 0);
    ck_assert_str_eq(a.server, "https://[fd00::1]:443");
    kube_auth_clear(&a);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    free(tok);
    free(ca);
    livetest_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(status_message_and_escape)
{
    char out[128];
    const char *st = "{\"kind\":\"Status\",\"message\":\"pods \\\"x\\\" not found\",\"code\":404}";
    kube_status_message(st, strlen(st), out, sizeof out);
    ck_assert_str_eq(out, "pods \"x\" not found");
    kube_status_message("<html>\n bad gateway", 19, out, sizeof out);
    ck_assert_str_eq(out, "<html>  bad gateway");
    kube_status_message("", 0, out, sizeof out);
    ck_assert_str_eq(out, "(empty body)");
    char *e = kube_escape("spec.nodeName=a b/c");
    ck_assert_str_eq(e, "spec.nodeName%3Da%20b%2Fc");
    free(e);
}
END_TEST

Suite *suite_kubeconfig(void);
Suite *suite_kubeconfig(void)
{
    Suite *s = suite_create("kubeconfig");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, current_context_token);
    tcase_add_test(tc, explicit_context_token_file);
    tcase_add_test(tc, cert_data);
    tcase_add_test(tc, insecure_no_user);
    tcase_add_loop_test(tc, bad_files, 0, (int)GP_ARRAY_LEN(bad));
    tcase_add_test(tc, incluster);
    tcase_add_test(tc, status_message_and_escape);
    suite_add_tcase(s, tc);
    return s;
}
