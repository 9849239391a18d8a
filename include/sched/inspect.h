/* inspect.h -- the /inspect answer as a per-GPU table: what `gpupack inspect`
 * prints and what GET /inspect?format=text answers. Pure formatting. */
#ifndef GP_INSPECT_H
#define GP_INSPECT_H

#include <jansson.h>
#include <stdio.h>

/* Prints the table for an /inspect answer (borrowed) to f. */
void inspect_print_table(FILE *f, const json_t *inspect);

#endif
