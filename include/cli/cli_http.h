/* cli_http.h -- the one HTTP client of the CLI subcommands that ask a running
 * gpupack (`inspect`, `explain --server`): a GET or a JSON POST, the answer
 * bounded and parsed. */
#ifndef GP_CLI_HTTP_H
#define GP_CLI_HTTP_H

#include <jansson.h>
#include <stddef.h>

#include "lib/util.h"

/* GET url (body NULL) or POST body as application/json; waits at most
 * timeout_s and reads at most max_bytes. An https url's certificate is checked
 * against cacert (a PEM file) when given, else against the system's CAs.
 * Returns the parsed JSON of a 200 answer (owned), or NULL with a message that
 * names url and what went wrong (unreachable, the certificate, the status and
 * the start of the answer, not JSON). */
json_t *cli_http_json(const char *url, const char *body, const char *cacert, long timeout_s,
                      size_t max_bytes, gp_err *err);

#endif
