/* test_docs.c -- the reference pages say what the code does: docs/http.md names
 * every metric family the sources emit and no other (and a running gpupack
 * serves no family the sources were not found to emit); docs/cli.md lists every
 * flag each subcommand's --help prints and no other; the links of the docs and
 * the docs/ pages the sources cite exist. Each failure names what to add or
 * remove. */
#include <check.h>
#include <pthread.h>
#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakeapi.h"
#include "testutil.h"
#include "lib/strmap.h"
#include "lib/util.h"

/* ------------------------------------------------------------ helpers -- */

/* Calls fn(path) for every file named *ext in root/<folder>/ (the layer
 * folders of src/ or include/). */
static void each_file(const char *root, const char *ext, void (*fn)(const char *path, void *ud),
                      void *ud)
{
    DIR *top = opendir(root);
    ck_assert_msg(top, "cannot open %s/ (run from the repository root)", root);
    size_t el = strlen(ext);
    struct dirent *d;
    while ((d = readdir(top))) {
        if (d->d_name[0] == '.')
            continue;
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", root, d->d_name);
        DIR *sub = opendir(dir);
        if (!sub)
            continue;
        struct dirent *e;
        while ((e = readdir(sub))) {
            size_t l = strlen(e->d_name);
            if (l <= el || strcmp(e->d_name + l - el, ext) != 0)
                continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            fn(path, ud);
        }
        closedir(sub);
    }
    closedir(top);
}

/* Adds key to m with an owned note (the first note wins). */
static void set_add(strmap *m, const char *key, char *note)
{
    if (strmap_get(m, key))
        free(note);
    else
        strmap_put(m, key, note);
}

static void set_free(strmap *m)
{
    size_t it = 0;
    char *note;
    while ((note = strmap_next(m, &it, NULL)))
        free(note);
    strmap_free(m);
}

/* Fails with what, when bad holds lines. Check keeps only the start of a long
 * message: a long list goes to stderr whole. */
static void report(const gp_buf *bad, const char *what)
{
    if (bad->len == 0)
        return;
    if (bad->len > 1500)
        fprintf(stderr, "%s:\n%s", what, bad->data);
    ck_abort_msg("%s:\n%.1500s%s", what, bad->data, bad->len > 1500 ? "... (all on stderr)" : "");
}

static bool is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Runs `$GPUPACK_BIN args` and returns its stdout (owned); *status its exit status. */
static char *run_bin(const char *args, int *status)
{
    const char *bin = getenv("GPUPACK_BIN");
    ck_assert_msg(bin && *bin, "GPUPACK_BIN is not set (make test sets it)");
    char *cmd = xasprintf("%s %s", bin, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    gp_buf b;
    gp_buf_init(&b, 1 << 20);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        gp_buf_printf(&b, "%.*s", (int)n, chunk);
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    ck_assert(!gp_buf_failed(&b));
    char *out = xstrdup(b.data ? b.data : "");
    gp_buf_free(&b);
    free(cmd);
    return out;
}

/* ------------------------------------------------------ metric families -- */

/* Every family gpupack can emit is a string literal that is exactly its name
 * ("gpupack_x_total"), passed to metrics_header / metrics_u / ... or kept in a
 * table of names. A literal that starts with "gpupack_" and is not a whole name
 * (a format, a prefix, a sample written by hand) is a name this scan cannot
 * read: it goes to `bad`, so the test fails rather than miss a family. */
typedef struct scan {
    strmap *names;   /* name -> "path:line" */
    gp_buf *bad;
} scan;

static void scan_literal(scan *s, const char *path, int line, const char *lit, size_t len)
{
    if (len < 8 || strncmp(lit, "gpupack_", 8) != 0)
        return;
    bool whole = lit[len - 1] != '_';
    for (size_t i = 0; i < len && whole; i++)
        whole = islower((unsigned char)lit[i]) || isdigit((unsigned char)lit[i]) || lit[i] == '_';
    if (!whole) {
        gp_buf_printf(s->bad, "%s:%d: \"%.*s\" is not a whole metric name: write each family's "
                      "name as one literal through lib/metrics.h\n", path, line, (int)len, lit);
        return;
    }
    char *name = xasprintf("%.*s", (int)len, lit);
    set_add(s->names, name, xasprintf("%s:%d", path, line));
    free(name);
}

/* Reads the string literals of one C file, outside comments and char literals. */
static void scan_file(const char *path, void *ud)
{
    char *src = tu_read_text(path);
    int line = 1;
    for (const char *p = src; *p; p++) {
        if (*p == '\n') {
            line++;
        } else if (p[0] == '/' && p[1] == '*') {
            for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
                line += *p == '\n';
            if (!*p)
                break;
            p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (p[1] && p[1] != '\n')
                p++;
        } else if (*p == '\'') {
            for (p++; *p && *p != '\''; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (!*p)
                break;
        } else if (*p == '"') {
            const char *start = ++p;
            for (; *p && *p != '"' && *p != '\n'; p++)
                if (*p == '\\' && p[1])
                    p++;
            scan_literal(ud, path, line, start, (size_t)(p - start));
            if (!*p)
                break;
        }
    }
    free(src);
}

/* Is name one series of a histogram in set: NAME_bucket, NAME_sum or
 * NAME_count with NAME in set? */
static bool is_series_of(const char *name, const strmap *set)
{
    static const char *const series[] = {"_bucket", "_sum", "_count"};
    size_t l = strlen(name);
    for (size_t i = 0; i < GP_ARRAY_LEN(series); i++) {
        size_t sl = strlen(series[i]);
        if (l > sl && strcmp(name + l - sl, series[i]) == 0) {
            char *base = xasprintf("%.*s", (int)(l - sl), name);
            bool in = strmap_get(set, base) != NULL;
            free(base);
            if (in)
                return true;
        }
    }
    return false;
}

/* The families of the sources. A histogram written sample by sample
 * (NAME_bucket, NAME_sum, NAME_count beside NAME) is one family. */
static strmap *source_families(void)
{
    gp_buf bad;
    gp_buf_init(&bad, 1 << 16);
    scan s = {strmap_new(), &bad};
    each_file("src", ".c", scan_file, &s);
    ck_assert(!gp_buf_failed(&bad));
    report(&bad, "metric names the scan cannot read");
    gp_buf_free(&bad);
    strmap *fam = strmap_new();
    size_t it = 0;
    const char *name;
    char *where;
    while ((where = strmap_next(s.names, &it, &name)))
        if (!is_series_of(name, s.names))
            set_add(fam, name, xstrdup(where));
    set_free(s.names);
    return fam;
}

/* The "gpupack_..." words of a text. */
static strmap *words(const char *text)
{
    strmap *m = strmap_new();
    for (const char *p = strstr(text, "gpupack_"); p; p = strstr(p + 1, "gpupack_")) {
        if (p > text && is_ident(p[-1]))
            continue;
        size_t l = 0;
        while (is_ident(p[l]))
            l++;
        char *w = xasprintf("%.*s", (int)l, p);
        set_add(m, w, xstrdup(""));
        free(w);
    }
    return m;
}

START_TEST(http_md_names_every_metric_family)
{
    strmap *fam = source_families();
    ck_assert_int_gt(strmap_count(fam), 60);   /* the scan found them at all */
    char *doc = tu_read_text("docs/http.md");
    strmap *named = words(doc);
    gp_buf bad;
    gp_buf_init(&bad, 1 << 16);
    size_t it = 0;
    const char *name;
    char *where;
    while ((where = strmap_next(fam, &it, &name)))
        if (!strmap_get(named, name))
            gp_buf_printf(&bad, "docs/http.md lacks %s (emitted at %s)\n", name, where);
    it = 0;
    while (strmap_next(named, &it, &name))
        if (!strmap_get(fam, name) && !is_series_of(name, fam))
            gp_buf_printf(&bad, "docs/http.md names %s, which no source emits\n", name);
    ck_assert(!gp_buf_failed(&bad));
    report(&bad, "docs/http.md and the metrics disagree");
    printf("docs: docs/http.md names all %zu metric families\n", strmap_count(fam));
    gp_buf_free(&bad);
    set_free(named);
    free(doc);
    set_free(fam);
}
END_TEST

/* What a running gpupack serves, with every writer on (live mode against the
 * fake API server, leader election, policies), is among the families the scan
 * found: a name the scan cannot see (built at run time) fails here. Every
 * family the scan found is served too. */
START_TEST(served_families_are_the_scanned_ones)
{
    gp_fakeapi *f = fakeapi_start();
    ck_assert_ptr_nonnull(f);
    char kc[64];
    tu_kubeconfig(fakeapi_url(f), kc, sizeof kc);
    const char *args[] = {"--kubeconfig", kc, "--policies", "policies", "--listen",
                          "127.0.0.1:0", "--log-level", "info", "--leader-elect",
                          "--leader-elect-identity", "docs-test", NULL};
    tu_server s;
    tu_server_start(&s, args);
    char url[96];
    long st;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", s.port);
    char *page = tu_http("GET", url, NULL, &st);
    ck_assert_int_eq(st, 200);
    tu_server_stop(&s);
    unlink(kc);
    fakeapi_stop(f);

    strmap *fam = source_families();
    strmap *served = strmap_new();
    gp_buf bad;
    gp_buf_init(&bad, 1 << 16);
    for (const char *p = strstr(page, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
        p += 7;
        size_t l = strcspn(p, " \n");
        char *name = xasprintf("%.*s", (int)l, p);
        set_add(served, name, xstrdup(""));
        if (!strmap_get(fam, name))
            gp_buf_printf(&bad, "/metrics serves %s, which the scan of src/ did not find (a "
                          "name built at run time? write it as one literal)\n", name);
        free(name);
    }
    size_t it = 0;
    const char *name;
    char *where;
    while ((where = strmap_next(fam, &it, &name)))
        if (!strmap_get(served, name))
            gp_buf_printf(&bad, "%s (%s) is not on /metrics in live mode with leader election: "
                          "turn on what it needs in this test\n", name, where);
    ck_assert(!gp_buf_failed(&bad));
    report(&bad, "/metrics and the sources disagree");
    printf("docs: /metrics in live mode serves the %zu families the sources emit\n",
           strmap_count(served));
    gp_buf_free(&bad);
    set_free(served);
    set_free(fam);
    free(page);
}
END_TEST

/* ------------------------------------------------------------ flags -- */

/* The line after p's, or NULL after the last. */
static const char *next_line(const char *p)
{
    p = strchr(p, '\n');
    return p ? p + 1 : NULL;
}

/* The flags of a --help text: lines "  --name ...". */
static strmap *help_flags(const char *help)
{
    strmap *m = strmap_new();
    for (const char *p = help; p && *p; p = next_line(p)) {
        if (strncmp(p, "  --", 4) != 0)
            continue;
        size_t l = 2 + strspn(p + 4, "abcdefghijklmnopqrstuvwxyz0123456789-");
        char *flag = xasprintf("%.*s", (int)l, p + 2);
        set_add(m, flag, xstrdup(""));
        free(flag);
    }
    return m;
}

/* The flags docs/cli.md's section "## gpupack CMD" lists: the --names in the
 * first cell of its table rows. NULL when there is no such section. */
static strmap *doc_flags(const char *doc, const char *cmd)
{
    char *head = xasprintf("\n## gpupack %s\n", cmd);
    const char *sec = strstr(doc, head);
    free(head);
    if (!sec)
        return NULL;
    sec++;
    const char *end = strstr(sec, "\n## ");
    if (!end)
        end = sec + strlen(sec);
    strmap *m = strmap_new();
    for (const char *p = sec; p && p < end; p = next_line(p)) {
        if (strncmp(p, "| `--", 5) == 0) {
            const char *cell = p + 1, *stop = cell;
            while (*stop && *stop != '\n' && !(*stop == '|' && stop[-1] != '\\'))
                stop++;
            for (const char *q = strstr(cell, "--"); q && q < stop; q = strstr(q + 2, "--")) {
                if (is_ident(q[-1]) || q[-1] == '-')
                    continue;
                size_t l = 2 + strspn(q + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");
                char *flag = xasprintf("%.*s", (int)l, q);
                set_add(m, flag, xstrdup(""));
                free(flag);
                q += l - 2;
            }
        }
    }
    return m;
}

/* Appends to bad every key of a that b lacks. */
static void missing(gp_buf *bad, const strmap *a, const strmap *b, const char *fmt_cmd,
                    const char *what)
{
    size_t it = 0;
    const char *k;
    while (strmap_next(a, &it, &k))
        if (!strmap_get(b, k))
            gp_buf_printf(bad, "gpupack %s: %s %s\n", fmt_cmd, k, what);
}

START_TEST(cli_md_lists_every_flag)
{
    int st;
    char *top = run_bin("--help", &st);
    ck_assert_int_eq(st, 0);
    char *doc = tu_read_text("docs/cli.md");
    gp_buf bad;
    gp_buf_init(&bad, 1 << 16);
    int cmds = 0, flags = 0;
    /* the commands: usage lines "  gpupack NAME [NAME] ..." of `gpupack --help` */
    for (const char *p = top; p && *p; p = next_line(p)) {
        if (strncmp(p, "  gpupack ", 10) != 0)
            continue;
        /* the words in lowercase after "gpupack", each followed by one space:
         * "policy check" of "gpupack policy check FILE|DIR..." */
        const char *w = p + 10, *e = w;
        for (size_t l; (l = strspn(e, "abcdefghijklmnopqrstuvwxyz")) > 0;) {
            e += l;
            if (*e != ' ' || !islower((unsigned char)e[1]))
                break;
            e++;
        }
        ck_assert_msg(e > w && e - w < 64 && (*e == ' ' || *e == '\n'),
                      "no command in the usage line: %.60s", p);
        char cmd[64];
        snprintf(cmd, sizeof cmd, "%.*s", (int)(e - w), w);
        cmds++;
        char *args = xasprintf("%s --help", cmd);
        char *help = run_bin(args, &st);
        free(args);
        ck_assert_msg(st == 0, "gpupack %s --help: exit %d", cmd, st);
        strmap *hf = help_flags(help), *df = doc_flags(doc, cmd);
        if (!df) {
            gp_buf_printf(&bad, "docs/cli.md has no section \"## gpupack %s\"\n", cmd);
        } else {
            missing(&bad, hf, df, cmd, "is in --help, not in docs/cli.md's table");
            missing(&bad, df, hf, cmd, "is in docs/cli.md's table, not in --help");
            set_free(df);
        }
        flags += (int)strmap_count(hf);
        set_free(hf);
        free(help);
    }
    /* and docs/cli.md describes no command that is gone */
    for (const char *p = strstr(doc, "\n## gpupack "); p; p = strstr(p + 1, "\n## gpupack ")) {
        size_t l = strcspn(p + 12, "\n");
        char *usage = xasprintf("\n  gpupack %.*s ", (int)l, p + 12);
        char *usage_nl = xasprintf("\n  gpupack %.*s\n", (int)l, p + 12);
        if (!strstr(top, usage) && !strstr(top, usage_nl))
            gp_buf_printf(&bad, "docs/cli.md describes gpupack %.*s, which `gpupack --help` "
                          "does not list\n", (int)l, p + 12);
        free(usage);
        free(usage_nl);
    }
    ck_assert(!gp_buf_failed(&bad));
    report(&bad, "docs/cli.md and --help disagree");
    ck_assert_int_ge(cmds, 6);
    ck_assert_int_gt(flags, 50);
    printf("docs: docs/cli.md lists the %d flags of %d commands\n", flags, cmds);
    gp_buf_free(&bad);
    free(doc);
    free(top);
}
END_TEST

/* ------------------------------------------------------------ links -- */

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Relative links "](target)" of one Markdown file point at files that exist. */
static void check_links(const char *md, gp_buf *bad)
{
    char *text = tu_read_text(md);
    const char *slash = strrchr(md, '/');
    int dirlen = slash ? (int)(slash - md + 1) : 0;
    for (const char *p = strstr(text, "]("); p; p = strstr(p + 1, "](")) {
        const char *t = p + 2;
        size_t l = strcspn(t, ")# \n");
        if (l == 0 || memchr(t, ':', l))   /* an anchor in the page, or a URL */
            continue;
        char *path = xasprintf("%.*s%.*s", dirlen, md, (int)l, t);
        if (!exists(path))
            gp_buf_printf(bad, "%s links to %.*s, which does not exist\n", md, (int)l, t);
        free(path);
    }
    free(text);
}

/* The docs/NAME.md pages a source file cites exist. */
static void check_cites(const char *path, void *ud)
{
    char *text = tu_read_text(path);
    for (const char *p = strstr(text, "docs/"); p; p = strstr(p + 1, "docs/")) {
        size_t l = 5 + strspn(p + 5, "abcdefghijklmnopqrstuvwxyz0123456789_-./");
        if (l < 9 || strncmp(p + l - 3, ".md", 3) != 0 || (p > text && is_ident(p[-1])))
            continue;
        char *page = xasprintf("%.*s", (int)l, p);
        if (!exists(page))
            gp_buf_printf(ud, "%s cites %s, which does not exist\n", path, page);
        free(page);
    }
    free(text);
}

START_TEST(docs_links_and_cites_exist)
{
    gp_buf bad;
    gp_buf_init(&bad, 1 << 16);
    check_links("README.md", &bad);
    DIR *d = opendir("docs");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int pages = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".md") != 0)
            continue;
        char *md = xasprintf("docs/%s", e->d_name);
        check_links(md, &bad);
        free(md);
        pages++;
    }
    closedir(d);
    each_file("src", ".c", check_cites, &bad);
    each_file("include", ".h", check_cites, &bad);
    ck_assert(!gp_buf_failed(&bad));
    report(&bad, "references to documents that do not exist");
    ck_assert_int_gt(pages, 10);
    gp_buf_free(&bad);
}
END_TEST

Suite *suite_docs(void);
Suite *suite_docs(void)
{
    Suite *s = suite_create("docs");
    TCase *t = tcase_create("docs");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, http_md_names_every_metric_family);
    tcase_add_test(t, served_families_are_the_scanned_ones);
    tcase_add_test(t, cli_md_lists_every_flag);
    tcase_add_test(t, docs_links_and_cites_exist);
    suite_add_tcase(s, t);
    return s;
}
