/* test_layers.c -- dependencies point one way: every #include of src/ and
 * include/ names a folder at or below its own in the layer order (src/README.md),
 * the pure layers never include a network library, and the verbs (sched/)
 * never include the API client (kube/). Fails naming each include that breaks
 * a rule. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

/* Top to bottom: a folder may include its own headers and those of the
 * folders after it. Keep in step with src/README.md. */
static const char *const layers[] = {"cli", "http", "act", "sched", "ha", "sim",
                                     "kube", "policy", "pack", "model", "lib"};

/* Layers that do no I/O of their own: no HTTP client or server. */
static const char *const pure[] = {"policy", "pack", "model", "lib"};
static const char *const net_headers[] = {"curl/curl.h", "microhttpd.h"};

/* The verbs decide and call no API server: what carries a decision out (a
 * Binding, an eviction, an Event, a watch) is act/'s, so sched/ never
 * includes kube/. */
static const char *const verbs = "sched", *const api_client = "kube";

static int layer_of(const char *folder, size_t len)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(layers); i++)
        if (strlen(layers[i]) == len && strncmp(layers[i], folder, len) == 0)
            return (int)i;
    return -1;
}

static bool is_pure(int layer)
{
    for (size_t i = 0; i < GP_ARRAY_LEN(pure); i++)
        if (layer_of(pure[i], strlen(pure[i])) == layer)
            return true;
    return false;
}

/* Checks one file of folder `layer`; appends a line per violation to bad.
 * Returns how many includes it read. */
static int check_file(const char *path, int layer, gp_buf *bad)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f, "cannot open %s", path);
    char line[512];
    int n = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "#include", 8) != 0)
            continue;
        p += 8;
        while (*p == ' ' || *p == '\t')
            p++;
        n++;
        char open = *p++;
        const char *end = strchr(p, open == '<' ? '>' : '"');
        if (!end || (open != '<' && open != '"'))
            continue;
        size_t len = (size_t)(end - p);
        for (size_t i = 0; is_pure(layer) && i < GP_ARRAY_LEN(net_headers); i++)
            if (len == strlen(net_headers[i]) && strncmp(p, net_headers[i], len) == 0)
                gp_buf_printf(bad, "%s:%d includes <%.*s>: %s is a pure layer (no I/O)\n", path,
                              lineno, (int)len, p, layers[layer]);
        if (open != '"')
            continue;
        const char *slash = memchr(p, '/', len);
        int to = slash ? layer_of(p, (size_t)(slash - p)) : -1;
        if (to < 0)
            gp_buf_printf(bad, "%s:%d includes \"%.*s\": not FOLDER/NAME.h of a known layer\n",
                          path, lineno, (int)len, p);
        else if (to < layer)
            gp_buf_printf(bad, "%s:%d includes \"%.*s\": %s may not use %s (a layer above it)\n",
                          path, lineno, (int)len, p, layers[layer], layers[to]);
        else if (strcmp(layers[layer], verbs) == 0 && strcmp(layers[to], api_client) == 0)
            gp_buf_printf(bad, "%s:%d includes \"%.*s\": the verbs call no API server (carry "
                          "the decision out in act/)\n", path, lineno, (int)len, p);
    }
    fclose(f);
    return n;
}

START_TEST(includes_point_down)
{
    gp_buf bad;
    gp_buf_init(&bad, 1 << 20);
    int files = 0, includes = 0;
    const char *const roots[] = {"src", "include"};
    for (size_t r = 0; r < GP_ARRAY_LEN(roots); r++) {
        DIR *top = opendir(roots[r]);
        ck_assert_msg(top, "cannot open %s/ (run from the repository root)", roots[r]);
        struct dirent *d;
        while ((d = readdir(top))) {
            if (d->d_name[0] == '.')
                continue;
            char dir[512];
            snprintf(dir, sizeof dir, "%s/%s", roots[r], d->d_name);
            DIR *sub = opendir(dir);
            if (!sub)
                continue;   /* a file at the top (README.md) */
            int layer = layer_of(d->d_name, strlen(d->d_name));
            if (layer < 0)
                gp_buf_printf(&bad, "%s/: a folder that is not a layer (add it to layers[])\n", dir);
            struct dirent *e;
            while (layer >= 0 && (e = readdir(sub))) {
                size_t l = strlen(e->d_name);
                if (l < 3 || (strcmp(e->d_name + l - 2, ".c") && strcmp(e->d_name + l - 2, ".h")))
                    continue;
                char path[1024];
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                includes += check_file(path, layer, &bad);
                files++;
            }
            closedir(sub);
        }
        closedir(top);
    }
    ck_assert(!gp_buf_failed(&bad));
    printf("layers: %d files, %d includes checked, %s\n", files, includes,
           bad.len ? "some break the rules" : "none breaks the rules");
    ck_assert_msg(bad.len == 0, "includes that break the layer rules (top to bottom: cli http "
                  "act sched ha sim kube policy pack model lib):\n%s", bad.data);
    ck_assert_int_gt(files, 90);
    gp_buf_free(&bad);
}
END_TEST

Suite *suite_layers(void);
Suite *suite_layers(void)
{
    Suite *s = suite_create("layers");
    TCase *t = tcase_create("layers");
    tcase_add_test(t, includes_point_down);
    suite_add_tcase(s, t);
    return s;
}
