/* heldrec.h -- the record of a consolidation plan's held places, kept on the
 * waiting pod so that a restarted gpupack (or the standby that takes the lead)
 * holds them again (docs/consolidation.md, "Restarts").
 *
 * The record is the message of the pod condition GP_HELD_PLACES_CONDITION,
 * written with the nomination (one pods/status patch, before any eviction):
 *
 *   {"v":1,"at":<plan time, Unix ns>,"places":[{"owner":"<controller uid>",
 *    "ns":"<namespace>","pod":"<moved pod>","node":"<node>",
 *    "gpus":[[<index>,<MiB>,<per-mille>],...],"cpu":<milli>,"mem":<MiB>,
 *    "expires":<Unix ns>}, ...]}
 *
 * Anyone allowed to patch pods/status can write it, so it is decoded like any
 * input: bounded in size and count, every field checked. Pure. */
#ifndef GP_HELDREC_H
#define GP_HELDREC_H

#include <jansson.h>
#include <stdint.h>

#include "model/gpu.h"
#include "lib/util.h"

#define GP_HELD_PLACES_CONDITION "gpupack.io/HeldPlaces"
#define HELDREC_PLACES_MAX 64       /* places per record (a plan's moves: policy maxMoves) */
#define HELDREC_TEXT_MAX 65536      /* the message's length */
#define HELDREC_MEM_MAX (INT64_C(1) << 40)   /* MiB: a GPU or host memory, far above any */

/* One place held for the replacement of a moved pod. */
typedef struct gp_held_place {
    char owner[GP_UID_MAX];       /* the moved pod's controller */
    char ns[GP_NAME_MAX], pod[GP_NAME_MAX];   /* the moved pod */
    char node[GP_NAME_MAX];
    int nholds;
    gp_hold holds[GP_MAX_GPUS_PER_NODE];   /* index, mem_mib, core (per-mille) */
    int64_t cpu_milli, mem_mib;   /* the moved pod's host requests */
    int64_t expires_ns;           /* wall clock */
} gp_held_place;

typedef struct gp_held_rec {
    int64_t at_ns;                /* when the plan was made (wall clock): the record's identity */
    int n;
    gp_held_place *p;             /* n of them, owned */
} gp_held_rec;

void heldrec_clear(gp_held_rec *r);   /* frees p; accepts a zeroed record */

/* The record as the condition's message (owned text, compact JSON). */
char *heldrec_encode(const gp_held_rec *r);

/* Decodes a message. 0, or -1 with a message (r is then empty). */
int heldrec_decode(const char *text, gp_held_rec *r, gp_err *err) GP_WUR;

/* The record a pod carries (borrowed pod JSON): 1 when its
 * GP_HELD_PLACES_CONDITION is there and valid, 0 when it has none, -1 with a
 * message when it is malformed. r is empty unless 1. */
int heldrec_from_pod(const json_t *pod, gp_held_rec *r, gp_err *err) GP_WUR;

/* The claim's assignment for a place: its holds, at most GP_MAX_GPUS_PER_CTR
 * GPUs per container entry. */
void heldrec_assignment(const gp_held_place *pl, gp_assignment *a);

#endif
