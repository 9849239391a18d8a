/* inspect_cli.c -- `gpupack inspect`: fetch /inspect and print a per-GPU table. */
#include "cli/inspect_cli.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "lib/flags.h"
#include "lib/util.h"
#include "sched/inspect.h"

#define INSPECT_MAX_BODY (256u << 20)

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    gp_buf *b = ud;
    return gp_buf_append(b, ptr, size * nmemb) ? 0 : size * nmemb;
}

typedef struct inspect_opts {
    const char *server;
    bool json;
} inspect_opts;

static const gp_flag inspect_flags[] = {
    GP_FLAG("--server", FLAG_STR, offsetof(inspect_opts, server), "URL",
     "the gpupack to ask (default http://127.0.0.1:8765)"),
    GP_FLAG("--json", FLAG_BOOL, offsetof(inspect_opts, json), NULL, "print the /inspect answer as JSON"),
};

static const gp_command inspect_cmd = {
    "gpupack inspect", "[flags] [NODE]",
    "Prints a running gpupack's per-node, per-GPU allocation table (GET /inspect).",
    inspect_flags, GP_ARRAY_LEN(inspect_flags), NULL, 1};

int inspect_main(int argc, char **argv)
{
    inspect_opts o = {"http://127.0.0.1:8765", false};
    const char *args[1];
    int nargs = 0;
    int prc = flags_parse(&inspect_cmd, argc, argv, &o, args, &nargs);
    if (prc != FLAGS_OK)
        return prc == FLAGS_HELP ? 0 : 2;
    const char *server = o.server, *node = nargs ? args[0] : NULL;
    bool as_json = o.json;
    char *url = xasprintf("%s/inspect%s%s", server, node ? "/" : "", node ? node : "");
    gp_buf body;
    gp_buf_init(&body, INSPECT_MAX_BODY);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    int exit_code = 1;
    if (rc != CURLE_OK) {
        fprintf(stderr, "gpupack inspect: %s: %s\n", url, curl_easy_strerror(rc));
        goto out;
    }
    json_error_t je;
    json_t *j = json_loadb(body.data ? body.data : "", body.len, 0, &je);
    if (status != 200 || !j) {
        fprintf(stderr, "gpupack inspect: %s answered %ld: %.300s\n", url, status,
                body.data ? body.data : "");
        json_decref(j);
        goto out;
    }
    if (as_json)
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    else
        inspect_print_table(stdout, j);
    json_decref(j);
    exit_code = 0;
out:
    gp_buf_free(&body);
    free(url);
    return exit_code;
}
