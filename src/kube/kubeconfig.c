/* kubeconfig.c -- a kubeconfig file (libyaml) -> API server address and credentials. */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "lib/base64.h"

#define KUBECONFIG_MAX (4u * 1024u * 1024u)

typedef struct kc {
    const char *path;
    yaml_document_t doc;
    gp_err *err;
} kc;

static int fail_at(kc *k, const yaml_node_t *n, const char *fmt, ...) GP_PRINTF(3, 4);
static int fail_at(kc *k, const yaml_node_t *n, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (n)
        return gp_fail(k->err, "%s:%zu:%zu: %s", k->path, n->start_mark.line + 1,
                       n->start_mark.column + 1, what);
    return gp_fail(k->err, "%s: %s", k->path, what);
}

/* Value of `key` in mapping m (NULL when absent or m is not a mapping). */
static yaml_node_t *map_get(kc *k, const yaml_node_t *m, const char *key)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(&k->doc, p->key);
        if (kn && kn->type == YAML_SCALAR_NODE && strcmp((const char *)kn->data.scalar.value, key) == 0)
            return yaml_document_get_node(&k->doc, p->value);
    }
    return NULL;
}

/* A scalar value (borrowed), NULL when absent; -1 when present but not a scalar. */
static int scalar(kc *k, const yaml_node_t *m, const char *key, const char **out)
{
    *out = NULL;
    yaml_node_t *v = map_get(k, m, key);
    if (!v)
        return 0;
    if (v->type != YAML_SCALAR_NODE)
        return fail_at(k, v, "\"%s\" must be a string", key);
    *out = (const char *)v->data.scalar.value;
    return 0;
}

/* In sequence `list` (e.g. "clusters"), the entry named `name`; returns its
 * `inner` mapping (e.g. "cluster"). */
static int named(kc *k, const yaml_node_t *root, const char *list, const char *inner,
                 const char *name, yaml_node_t **out)
{
    *out = NULL;
    yaml_node_t *seq = map_get(k, root, list);
    if (seq && seq->type != YAML_SEQUENCE_NODE)
        return fail_at(k, seq, "\"%s\" must be a list", list);
    if (seq) {
        for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
            yaml_node_t *e = yaml_document_get_node(&k->doc, *it);
            const char *n;
            if (scalar(k, e, "name", &n) < 0)
                return -1;
            if (n && strcmp(n, name) == 0) {
                yaml_node_t *v = map_get(k, e, inner);
                if (!v || v->type != YAML_MAPPING_NODE)
                    return fail_at(k, e, "%s entry has no \"%s\" mapping", name, inner);
                *out = v;
                return 0;
            }
        }
    }
    return fail_at(k, NULL, "no %s entry named \"%s\"", list, name);
}

/* Joins a relative file name to the kubeconfig's directory (owned). */
static char *rel_path(const char *kcpath, const char *file)
{
    if (file[0] == '/')
        return xstrdup(file);
    const char *slash = strrchr(kcpath, '/');
    if (!slash)
        return xstrdup(file);
    return xasprintf("%.*s/%s", (int)(slash - kcpath), kcpath, file);
}

/* Fills file/blob from `key` (a path) or `key-data` (base64). */
static int file_or_data(kc *k, const yaml_node_t *m, const char *key, char **file, char **blob,
                        size_t *blob_len)
{
    char datakey[96];
    snprintf(datakey, sizeof datakey, "%s-data", key);
    const char *f, *d;
    if (scalar(k, m, key, &f) < 0 || scalar(k, m, datakey, &d) < 0)
        return -1;
    if (d && *d) {
        *blob = gp_base64_decode(d, blob_len);
        if (!*blob || *blob_len == 0)
            return fail_at(k, map_get(k, m, datakey), "\"%s\" is not valid base64", datakey);
    } else if (f && *f) {
        *file = rel_path(k->path, f);
        FILE *fp = fopen(*file, "rb");
        if (!fp) {
            return fail_at(k, map_get(k, m, key), "%s: %s", *file, strerror(errno));
        }
        fclose(fp);
    }
    return 0;
}

int kubeconfig_load(const char *path, const char *context, gp_kube_auth *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    size_t len = 0;
    char *data = gp_read_file(path, KUBECONFIG_MAX, &len, err);
    if (!data)
        return -1;
    kc k = {.path = path, .err = err};
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    int rc = -1;
    bool have_doc = false;
    if (!yaml_parser_load(&parser, &k.doc)) {
        gp_fail(err, "%s:%zu:%zu: %s", path, parser.problem_mark.line + 1,
                parser.problem_mark.column + 1, parser.problem ? parser.problem : "YAML syntax error");
        goto out;
    }
    have_doc = true;
    yaml_node_t *root = yaml_document_get_root_node(&k.doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        fail_at(&k, root, "not a kubeconfig (the top level must be a mapping)");
        goto out;
    }
    const char *ctxname = context && *context ? context : NULL;
    if (!ctxname) {
        if (scalar(&k, root, "current-context", &ctxname) < 0)
            goto out;
        if (!ctxname || !*ctxname) {
            fail_at(&k, NULL, "no current-context set (pass a context)");
            goto out;
        }
    }
    yaml_node_t *ctx, *cluster, *user = NULL;
    if (named(&k, root, "contexts", "context", ctxname, &ctx) < 0)
        goto out;
    const char *cluster_name, *user_name;
    if (scalar(&k, ctx, "cluster", &cluster_name) < 0 || scalar(&k, ctx, "user", &user_name) < 0)
        goto out;
    if (!cluster_name) {
        fail_at(&k, ctx, "context \"%s\" names no cluster", ctxname);
        goto out;
    }
    if (named(&k, root, "clusters", "cluster", cluster_name, &cluster) < 0)
        goto out;
    if (user_name && *user_name && named(&k, root, "users", "user", user_name, &user) < 0)
        goto out;

    const char *server, *insecure;
    if (scalar(&k, cluster, "server", &server) < 0 ||
        scalar(&k, cluster, "insecure-skip-tls-verify", &insecure) < 0)
        goto out;
    if (!server || !*server) {
        fail_at(&k, cluster, "cluster \"%s\" has no server", cluster_name);
        goto out;
    }
    out->server = xstrdup(server);
    out->insecure = insecure && strcmp(insecure, "true") == 0;
    if (file_or_data(&k, cluster, "certificate-authority", &out->ca_file, &out->ca_pem,
                     &out->ca_pem_len) < 0)
        goto out;
    if (user) {
        if (map_get(&k, user, "exec") || map_get(&k, user, "auth-provider")) {
            fail_at(&k, user, "user \"%s\": exec / auth-provider credential plugins are not "
                              "supported; use a token, tokenFile or client certificate",
                    user_name);
            goto out;
        }
        if (file_or_data(&k, user, "client-certificate", &out->cert_file, &out->cert_pem,
                         &out->cert_pem_len) < 0 ||
            file_or_data(&k, user, "client-key", &out->key_file, &out->key_pem, &out->key_pem_len) < 0)
            goto out;
        if ((out->cert_file || out->cert_pem) != (out->key_file || out->key_pem)) {
            fail_at(&k, user, "user \"%s\" has a client certificate without a key or a key "
                              "without a certificate", user_name);
            goto out;
        }
        const char *token, *token_file;
        if (scalar(&k, user, "token", &token) < 0 || scalar(&k, user, "tokenFile", &token_file) < 0)
            goto out;
        if (token && *token)
            out->token = xstrdup(token);
        else if (token_file && *token_file)
            out->token_file = rel_path(path, token_file);
    }
    out->origin = xasprintf("kubeconfig %s (context %s)", path, ctxname);
    rc = 0;
out:
    if (have_doc)
        yaml_document_delete(&k.doc);
    yaml_parser_delete(&parser);
    free(data);
    if (rc < 0)
        kube_auth_clear(out);
    return rc;
}
