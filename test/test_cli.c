/* test_cli.c -- the gpupack binary's command line: flags in both forms, usage
 * errors, shipped policies, and a clean start/stop of the embedded mode. */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "lib/util.h"

/* Runs the binary with args; returns the exit status and its stderr+stdout. */
static int run(const char *args, char *out, size_t outlen)
{
    const char *bin = getenv("GPUPACK_BIN");
    ck_assert_msg(bin && *bin, "GPUPACK_BIN is not set (make test sets it)");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

typedef struct cli_case {
    const char *args;
    int status;
    const char *fragment;
} cli_case;

static const cli_case cases[] = {
    {"version", 0, "gpupack "},
    {"--help", 0, "gpupack serve"},
    {"", 2, "usage:"},
    {"frobnicate", 2, "unknown command frobnicate"},
    {"serve --bogus 1", 2, "unknown flag --bogus"},
    {"serve --bogus=1", 2, "unknown flag --bogus"},
    {"serve --listen", 2, "--listen needs a value"},
    {"serve --threads=0", 2, "--threads: 0 is not a valid number"},
    {"serve --assume-ttl=-3", 2, "--assume-ttl: -3 is not a positive number"},
    {"serve --cluster a --kubeconfig b", 2, "exclude each other"},
    {"serve --leader-elect --cluster=examples/cluster.yaml", 2, "--leader-elect needs live mode"},
    {"serve --leader-elect-lease-duration=15x", 2, "15x is not a duration"},
    {"serve --leader-elect-retry-period 0s", 2, "0s is not a duration"},
    {"serve --leader-elect-renew-deadline=2h", 2, "2h is not a duration"},
    {"serve --cluster=/nonexistent.yaml --listen=127.0.0.1:0", 1, "/nonexistent.yaml"},
    {"serve --cluster=examples/cluster.yaml --policies=/nonexistent --listen=127.0.0.1:0", 1,
     "--policies /nonexistent"},
    {"serve --cluster=examples/cluster.yaml --listen=256.1.1.1:1", 1, "--listen"},
    {"policy check policies", 0, "ok:"},
    {"policy check test/fixtures/decode/../../../README.md", 1, ""},
};

START_TEST(command_line)
{
    const cli_case *c = &cases[_i];
    char out[8192];
    int st = run(c->args, out, sizeof out);
    ck_assert_msg(st == c->status, "gpupack %s: exit %d, want %d: %s", c->args, st, c->status, out);
    ck_assert_msg(strstr(out, c->fragment), "gpupack %s: output lacks \"%s\": %s", c->args,
                  c->fragment, out);
}
END_TEST

/* `--flag=value` forms (as the Deployment passes them) serve, and SIGTERM
 * stops the server cleanly with exit 0. */
START_TEST(serve_starts_and_stops)
{
    static const char *const args[] = {"--cluster=examples/cluster.yaml", "--policies=policies",
                                       "--listen=127.0.0.1:0", "--log-level=info", NULL};
    int port;
    FILE *f;
    pid_t pid = tu_serve(args, &port, &f);
    kill(pid, SIGTERM);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    fclose(f);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

Suite *suite_cli(void);
Suite *suite_cli(void)
{
    Suite *s = suite_create("cli");
    TCase *t = tcase_create("binary");
    tcase_set_timeout(t, 30);
    tcase_add_loop_test(t, command_line, 0, (int)GP_ARRAY_LEN(cases));
    tcase_add_test(t, serve_starts_and_stops);
    suite_add_tcase(s, t);
    return s;
}
