/* schedrw.h -- the shipped KubeSchedulerConfiguration, rewritten for a test or
 * benchmark cluster. No Check: bench/e2eload links it too. */
#ifndef GP_E2E_SCHEDRW_H
#define GP_E2E_SCHEDRW_H

#include <jansson.h>

#include "lib/util.h"

/* Reads a KubeSchedulerConfiguration file (YAML, one document). Returns owned
 * json, or NULL with a message. */
json_t *schedrw_load(const char *path, gp_err *err);

/* The one place that adapts the shipped file to a test cluster: every
 * extender's urlPrefix becomes http(s)://127.0.0.1:PORT/<shipped path> (https
 * when the stanza says enableHTTPS), clientConnection.kubeconfig @KUBECONFIG@
 * (kube-up fills it in), leader election off. Everything else stays as shipped.
 * Extend it when the shipped stanza gains test-side values (TLS file paths). */
void schedrw_rewrite(json_t *cfg, int gpupack_port);

/* For every extender with enableHTTPS: tlsConfig = the test certificates in
 * dir (client.crt, client.key, ca.crt), serverName localhost, which the test
 * server certificate names. */
void schedrw_tls(json_t *cfg, const char *dir);

/* The path part of a URL ("" when none or "/"); owned. */
char *schedrw_url_path(const char *url);

#endif
