/* test_cli.c -- the gpupack binary's command line: flags in both forms, usage
 * errors, shipped policies, and a clean start/stop of the embedded mode. */
#include <check.h>
#include <fcntl.h>
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
    /* the version, three ways */
    {"version", 0, "gpupack 0."},
    {"--version", 0, "gpupack 0."},
    {"-V", 0, "gpupack 0."},
    /* every subcommand's --help is its own usage, exit 0 */
    {"serve --help", 0, "usage: gpupack serve [flags]"},
    {"serve -h", 0, "--leader-elect-pod NS/NAME"},
    {"inspect --help", 0, "usage: gpupack inspect [flags] [NODE]"},
    {"explain --help", 0, "usage: gpupack explain NAMESPACE/POD"},
    {"explain -h", 0, "--pod FILE|-"},
    {"policy --help", 0, "usage: gpupack policy check FILE|DIR..."},
    {"policy check --help", 0, "usage: gpupack policy check FILE|DIR..."},
    {"simulate --help", 0, "usage: gpupack simulate --nodes"},
    {"simulate -h", 0, "strategies: node:"},
    {"version --help", 0, "usage: gpupack version"},
    /* usage errors: one line and a hint, exit 2 */
    {"serve --bogus", 2, "gpupack serve: unknown flag --bogus\ntry 'gpupack serve --help'\n"},
    {"inspect --bogus", 2, "gpupack inspect: unknown flag --bogus\ntry 'gpupack inspect --help'"},
    {"explain", 2, "gpupack explain: which pod? give NAMESPACE/POD\ntry 'gpupack explain --help'"},
    {"explain nopod", 2, "nopod is not NAMESPACE/POD"},
    {"explain a/b --cluster x --cacert y", 2, "--cacert is for --server, not --cluster"},
    {"policy", 2, "try 'gpupack policy --help'"},
    {"policy lint", 2, "gpupack policy: unknown subcommand lint (expected: check)"},
    {"policy check", 2, "try 'gpupack policy check --help'"},
    {"simulate --nodes a", 2, "--nodes and --pods are required\ntry 'gpupack simulate --help'"},
    {"simulate --mode sideways", 2, "--mode: filter, prioritize or both, not \"sideways\""},
    {"frobnicate", 2, "gpupack: unknown command frobnicate\ntry 'gpupack --help'"},
    /* a --plot into a missing directory fails before the run, naming the directory */
    {"simulate --nodes test/fixtures/sim/nodes.csv --pods test/fixtures/sim/pods.csv "
     "--scheduler-config none --plot /nonexistent-gpupack/dir/p.png",
     1, "--plot /nonexistent-gpupack/dir/p.png: directory /nonexistent-gpupack/dir: No such file"},
    /* one GPU, not "1 GPUs" */
    {"explain research/trainer --cluster examples/cluster.yaml --pod test/fixtures/explain-pod.yaml",
     0, "node-a100: 1 GPU has 70000 MiB free"},
};

/* Usage errors print exactly two lines: the error and the hint. */
static const char *const usage_errors[] = {
    "serve --bogus", "serve --threads=0", "serve --listen", "inspect a b", "explain",
    "policy", "policy check", "simulate", "simulate --seeds x --nodes a --pods b", "frobnicate",
};

START_TEST(usage_errors_are_two_lines)
{
    char out[8192];
    int st = run(usage_errors[_i], out, sizeof out);
    ck_assert_msg(st == 2, "gpupack %s: exit %d: %s", usage_errors[_i], st, out);
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    ck_assert_msg(lines == 2 && strstr(out, "\ntry 'gpupack"), "gpupack %s: %d lines: %s",
                  usage_errors[_i], lines, out);
}
END_TEST

/* The simulate --plot check happens before the run: no progress line. */
START_TEST(plot_dir_checked_before_the_run)
{
    char out[8192];
    int st = run("simulate --nodes test/fixtures/sim/nodes.csv --pods test/fixtures/sim/pods.csv "
                 "--scheduler-config none --plot /nonexistent-gpupack/p.png",
                 out, sizeof out);
    ck_assert_int_eq(st, 1);
    /* the run's progress line ("simulate: N nodes ..., M typical shapes") never came */
    ck_assert_msg(!strstr(out, "typical shape") && !strstr(out, "gnuplot"), "%s", out);
}
END_TEST

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

/* GET / redirects to the /ui page; `gpupack inspect` prints whole model names. */
START_TEST(root_redirects_and_inspect_keeps_names)
{
    static const char *const args[] = {"--cluster=examples/cluster.yaml", "--listen=127.0.0.1:0",
                                       NULL};
    int port;
    FILE *f;
    pid_t pid = tu_serve(args, &port, &f);
    char cmd[256], out[8192];
    snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -w '%%{http_code} %%{redirect_url}' "
             "http://127.0.0.1:%d/", port);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    pclose(p);
    char want[96];
    snprintf(want, sizeof want, "302 http://127.0.0.1:%d/ui", port);
    ck_assert_str_eq(out, want);
    snprintf(cmd, sizeof cmd, "inspect --server http://127.0.0.1:%d", port);
    int st = run(cmd, out, sizeof out);
    ck_assert_int_eq(st, 0);
    ck_assert_msg(strstr(out, "NVIDIA-Tesla V100-PCIE-32GB"), "%s", out);
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    fclose(f);
}
END_TEST

static bool hints_printed(const char *text)
{
    return strstr(text, "Ctrl-C stops it") != NULL;
}

/* With TLS the embedded mode's hints are https and work as printed: the
 * first one, run by the shell, reads /inspect. */
START_TEST(tls_hints_work_as_printed)
{
    const char *bin = getenv("GPUPACK_BIN");
    ck_assert_msg(bin && *bin, "GPUPACK_BIN is not set (make test sets it)");
    const char *const argv[] = {bin, "serve", "--cluster=examples/cluster.yaml",
                                "--listen=127.0.0.1:0", "--tls-cert=test/fixtures/tls/server.crt",
                                "--tls-key=test/fixtures/tls/server.key", NULL};
    int fds[2];
    ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
    pid_t pid = tu_spawn(argv, -1, fds[1]);
    close(fds[1]);
    /* the log up to the hints' last line (tu_serve stops reading at the port) */
    char text[16384];
    bool eof;
    tu_read_log(fds[0], hints_printed, text, sizeof text, TU_SERVE_WAIT_S, &eof);
    int port = tu_port_in(text);
    ck_assert_msg(port > 0 && strstr(text, "Ctrl-C stops it"), "no hints in the log:\n%s", text);
    char hint[1024] = "";
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        size_t ll = strcspn(l, "\n");
        if (ll < sizeof hint && memmem(l, ll, "curl ", 5) && memmem(l, ll, "/inspect", 8)) {
            snprintf(hint, sizeof hint, "%.*s", (int)ll, l);
            break;
        }
    }
    char want[64];
    snprintf(want, sizeof want, "https://127.0.0.1:%d/inspect", port);
    ck_assert_msg(strstr(hint, want), "hint \"%s\" lacks %s", hint, want);
    char cmd[1200], out[64];
    snprintf(cmd, sizeof cmd, "%s -o /dev/null -w '%%{http_code}'", hint);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    pclose(p);
    ck_assert_msg(strcmp(out, "200") == 0, "%s answered \"%s\"", cmd, out);
    /* the subcommand: with the CA it reads the table; without, the system's
     * CAs do not know the test CA and it says so */
    char big[8192];
    snprintf(cmd, sizeof cmd, "inspect --server https://127.0.0.1:%d --cacert test/fixtures/tls/ca.crt",
             port);
    ck_assert_int_eq(run(cmd, big, sizeof big), 0);
    ck_assert_msg(strstr(big, "NVIDIA-Tesla V100-PCIE-32GB"), "%s", big);
    snprintf(cmd, sizeof cmd, "inspect --server https://127.0.0.1:%d", port);
    ck_assert_int_eq(run(cmd, big, sizeof big), 1);
    ck_assert_msg(strstr(big, "certificate"), "%s", big);
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    close(fds[0]);
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
    tcase_add_loop_test(t, usage_errors_are_two_lines, 0, (int)GP_ARRAY_LEN(usage_errors));
    tcase_add_test(t, plot_dir_checked_before_the_run);
    tcase_add_test(t, root_redirects_and_inspect_keeps_names);
    tcase_add_test(t, tls_hints_work_as_printed);
    suite_add_tcase(s, t);
    return s;
}
