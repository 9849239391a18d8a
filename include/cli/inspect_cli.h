/* inspect_cli.h -- `gpupack inspect`: fetch /inspect and print a per-GPU table. */
#ifndef GP_INSPECT_CLI_H
#define GP_INSPECT_CLI_H

#include <jansson.h>
#include <stdio.h>

/* Prints the table for an /inspect answer (borrowed) to f. Pure formatting. */
void inspect_print_table(FILE *f, const json_t *inspect);

/* The subcommand: gpupack inspect [--server URL] [--json] [NODE]. Exit status. */
int inspect_main(int argc, char **argv);

#endif
