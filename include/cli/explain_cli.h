/* explain_cli.h -- `gpupack explain NAMESPACE/POD`: against a running gpupack
 * (POST /explain) or in embedded mode (--cluster FILE, in process). */
#ifndef GP_EXPLAIN_CLI_H
#define GP_EXPLAIN_CLI_H

#include <jansson.h>

/* Finds Pod ns/name among YAML/JSON documents (Lists or single objects);
 * returns it borrowed from docs, or NULL. */
const json_t *explain_find_pod(const json_t *docs, const char *ns, const char *name);

/* The command; returns the exit status (0 ok, 1 failure, 2 usage). */
int explain_main(int argc, char **argv);

#endif
