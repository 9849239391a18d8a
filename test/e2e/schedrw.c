/* schedrw.c -- the shipped scheduler configuration, rewritten for a test cluster. */
#include "schedrw.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/yamljson.h"

json_t *schedrw_load(const char *path, gp_err *err)
{
    json_t *docs = yamljson_load_file(path, err);
    if (!docs)
        return NULL;
    if (json_array_size(docs) != 1 || !json_is_object(json_array_get(docs, 0))) {
        json_decref(docs);
        gp_fail(err, "%s: expected one YAML document (a KubeSchedulerConfiguration)", path);
        return NULL;
    }
    json_t *cfg = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return cfg;
}

char *schedrw_url_path(const char *url)
{
    const char *p = url ? strstr(url, "://") : NULL;
    p = p ? strchr(p + 3, '/') : NULL;
    return xstrdup(p && strcmp(p, "/") != 0 ? p : "");
}

void schedrw_rewrite(json_t *cfg, int gpupack_port)
{
    json_t *cc = json_object_get(cfg, "clientConnection");
    if (!json_is_object(cc)) {
        cc = json_object();
        json_object_set_new(cfg, "clientConnection", cc);
    }
    json_object_set_new(cc, "kubeconfig", json_string("@KUBECONFIG@"));
    json_object_set_new(cfg, "leaderElection", json_pack("{s:b}", "leaderElect", 0));
    size_t i;
    json_t *ext;
    json_array_foreach(json_object_get(cfg, "extenders"), i, ext) {
        bool https = json_is_true(json_object_get(ext, "enableHTTPS"));
        char *path = schedrw_url_path(json_string_value(json_object_get(ext, "urlPrefix")));
        char *url = xasprintf("%s://127.0.0.1:%d%s", https ? "https" : "http", gpupack_port, path);
        json_object_set_new(ext, "urlPrefix", json_string(url));
        free(url);
        free(path);
    }
}

void schedrw_tls(json_t *cfg, const char *dir)
{
    size_t i;
    json_t *ext;
    json_array_foreach(json_object_get(cfg, "extenders"), i, ext) {
        if (!json_is_true(json_object_get(ext, "enableHTTPS")))
            continue;
        json_t *tls = json_object();
        static const char *const files[][2] = {
            {"certFile", "client.crt"}, {"keyFile", "client.key"}, {"caFile", "ca.crt"}};
        for (size_t f = 0; f < GP_ARRAY_LEN(files); f++) {
            char *fp = xasprintf("%s/%s", dir, files[f][1]);
            json_object_set_new(tls, files[f][0], json_string(fp));
            free(fp);
        }
        json_object_set_new(tls, "serverName", json_string("localhost"));
        json_object_set_new(ext, "tlsConfig", tls);
    }
}
