/* inspect_cli.h -- `gpupack inspect`: fetch /inspect and print a per-GPU table. */
#ifndef GP_INSPECT_CLI_H
#define GP_INSPECT_CLI_H

/* The subcommand: gpupack inspect [--server URL] [--json] [NODE]. Exit status. */
int inspect_main(int argc, char **argv);

#endif
