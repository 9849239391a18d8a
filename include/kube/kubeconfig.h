/* kubeconfig.h -- a kubeconfig file (libyaml) -> API server address and credentials. */
#ifndef GP_KUBECONFIG_H
#define GP_KUBECONFIG_H

#include "kube/kube.h"
#include "lib/util.h"

/* Reads `path` and resolves the context `context` (NULL or "" = the file's
 * current-context): the cluster's server, certificate-authority(-data) and
 * insecure-skip-tls-verify, the user's client-certificate(-data) and
 * client-key(-data), token or tokenFile. Relative file names are relative to
 * the kubeconfig's directory. TLS is verified unless the file says
 * insecure-skip-tls-verify: true. exec and auth-provider users are rejected
 * (not supported). Returns 0 and fills *out (owned; kube_auth_clear), or -1
 * with "file:line:column: what is wrong" (or "file: ..." when there is no
 * position). */
int kubeconfig_load(const char *path, const char *context, gp_kube_auth *out, gp_err *err) GP_WUR;

#endif
