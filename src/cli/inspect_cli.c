/* inspect_cli.c -- `gpupack inspect`: fetch /inspect and print a per-GPU table. */
#include "cli/inspect_cli.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "cli/cli_http.h"
#include "lib/flags.h"
#include "lib/util.h"
#include "sched/inspect.h"

#define INSPECT_MAX_BODY (256u << 20)

typedef struct inspect_opts {
    const char *server, *cacert;
    bool json;
} inspect_opts;

static const gp_flag inspect_flags[] = {
    GP_FLAG("--server", FLAG_STR, offsetof(inspect_opts, server), "URL",
     "the gpupack to ask (default http://127.0.0.1:8765)"),
    GP_FLAG("--cacert", FLAG_STR, offsetof(inspect_opts, cacert), "FILE",
     "an https --server's certificate is checked against this CA (PEM; default: the system's)"),
    GP_FLAG("--json", FLAG_BOOL, offsetof(inspect_opts, json), NULL, "print the /inspect answer as JSON"),
};

static const gp_command inspect_cmd = {
    "gpupack inspect", "[flags] [NODE]",
    "Prints a running gpupack's per-node, per-GPU allocation table (GET /inspect).",
    inspect_flags, GP_ARRAY_LEN(inspect_flags), NULL, 1};

int inspect_main(int argc, char **argv)
{
    inspect_opts o = {"http://127.0.0.1:8765", NULL, false};
    const char *args[1];
    int nargs = 0;
    int prc = flags_parse(&inspect_cmd, argc, argv, &o, args, &nargs);
    if (prc != FLAGS_OK)
        return prc == FLAGS_HELP ? 0 : 2;
    const char *server = o.server, *node = nargs ? args[0] : NULL;
    bool as_json = o.json;
    /* compact: the answer the server sends as written; indented here */
    char *url = xasprintf("%s/inspect%s%s?compact=1", server, node ? "/" : "", node ? node : "");
    gp_err err;
    json_t *j = cli_http_json(url, NULL, o.cacert, 30, INSPECT_MAX_BODY, &err);
    free(url);
    if (!j) {
        fprintf(stderr, "gpupack inspect: %s\n", err.msg);
        return 1;
    }
    if (as_json)
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    else
        inspect_print_table(stdout, j);
    json_decref(j);
    return 0;
}
