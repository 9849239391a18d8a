/* cli_http.c -- the CLI subcommands' HTTP client (cli_http.h). */
#include "cli/cli_http.h"

#include <curl/curl.h>

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    return gp_buf_append(ud, p, sz * n) ? 0 : sz * n;
}

json_t *cli_http_json(const char *url, const char *body, const char *cacert, long timeout_s,
                      size_t max_bytes, gp_err *err)
{
    gp_buf ans;
    gp_buf_init(&ans, max_bytes);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    if (!c) {
        gp_fail(err, "%s: cannot start an HTTP client", url);
        return NULL;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (body) {
        h = curl_slist_append(NULL, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &ans);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    if (cacert)
        curl_easy_setopt(c, CURLOPT_CAINFO, cacert);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    json_t *j = NULL;
    if (rc == CURLE_WRITE_ERROR && gp_buf_failed(&ans)) {
        gp_fail(err, "%s: the answer is larger than %zu bytes", url, max_bytes);
    } else if (rc != CURLE_OK) {
        gp_fail(err, "%s: %s", url, curl_easy_strerror(rc));
    } else {
        j = json_loadb(ans.data ? ans.data : "", ans.len, 0, NULL);
        if (status != 200 || !j) {
            gp_fail(err, "%s answered %ld: %.300s", url, status, ans.data ? ans.data : "");
            json_decref(j);
            j = NULL;
        }
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    gp_buf_free(&ans);
    return j;
}
