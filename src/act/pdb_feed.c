/* pdb_feed.c -- PodDisruptionBudgets from the API server into preemption. */
#include "act/pdb_feed.h"

#include "kube/reflector.h"

struct gp_pdb_feed {
    gp_reflector *refl;
};

static void pdb_begin(void *ud)
{
    preempt_pdbs_resync(ud, false);
}

static void pdb_end(void *ud)
{
    preempt_pdbs_resync(ud, true);
}

static void pdb_apply(void *ud, gp_watch_type type, bool listed, const json_t *obj)
{
    preempt_pdb_event(ud, type == GP_WATCH_DELETED, obj);
}

static const gp_reflector_ops pdb_ops = {pdb_begin, pdb_end, pdb_apply, NULL, NULL};

gp_pdb_feed *pdb_feed_start(gp_kube *k, gp_preempt *p, gp_err *err)
{
    gp_reflector_config rc = {.resource = "poddisruptionbudgets",
                              .path = "/apis/policy/v1/poddisruptionbudgets",
                              .watch_timeout_s = 60, .stall_s = 90};
    gp_pdb_feed *f = xcalloc(1, sizeof *f);
    f->refl = reflector_new(k, &rc, &pdb_ops, p);
    if (reflector_start(f->refl, err) < 0) {
        pdb_feed_stop(f);
        return NULL;
    }
    return f;
}

void pdb_feed_stop(gp_pdb_feed *f)
{
    if (!f)
        return;
    reflector_free(f->refl);
    free(f);
}
