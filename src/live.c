/* live.c -- live mode (placeholder until the API server client lands). */
#include "live.h"

gp_live *live_new(const gp_live_config *cfg, gp_cluster *c, gp_err *err)
{
    gp_fail(err, "live mode (API server) is not built yet; use --cluster FILE");
    return NULL;
}

gp_binder_fn live_binder(void)
{
    return NULL;
}

int live_start(gp_live *l, gp_extender *e, gp_err *err)
{
    return gp_fail(err, "live mode is not built yet");
}

bool live_ready(gp_live *l)
{
    return false;
}

bool live_stale(gp_live *l, char *why, size_t whylen)
{
    return true;
}

void live_free(gp_live *l)
{
}
