/* inspect_cli.c -- `gpupack inspect`: fetch /inspect and print a per-GPU table. */
#include "cli/inspect_cli.h"

#include <curl/curl.h>
#include <string.h>

#include "lib/util.h"
#include "sched/inspect.h"

#define INSPECT_MAX_BODY (256u << 20)

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    gp_buf *b = ud;
    return gp_buf_append(b, ptr, size * nmemb) ? 0 : size * nmemb;
}

int inspect_main(int argc, char **argv)
{
    const char *server = "http://127.0.0.1:8765";
    const char *node = NULL;
    int as_json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--server") == 0 && i + 1 < argc)
            server = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            as_json = 1;
        else if (argv[i][0] != '-' && !node)
            node = argv[i];
        else {
            fprintf(stderr, "usage: gpupack inspect [--server URL] [--json] [NODE]\n");
            return 2;
        }
    }
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
