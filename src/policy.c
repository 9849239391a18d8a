/* policy.c -- packing policies (built-in default only; policy files come with
 * the policy loader). */
#include "policy.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct gp_policy_set {
    atomic_int refs;
};

gp_policy_set *policy_set_default(void)
{
    gp_policy_set *s = xcalloc(1, sizeof *s);
    atomic_init(&s->refs, 1);
    return s;
}

void policy_set_ref(gp_policy_set *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void policy_set_unref(gp_policy_set *s)
{
    if (s && atomic_fetch_sub(&s->refs, 1) == 1)
        free(s);
}

int policy_select(const gp_policy_set *s, const char *ns, const json_t *labels,
                  const char *requested, time_t now, gp_policy_view *out, gp_err *err)
{
    memset(out, 0, sizeof *out);
    if (requested && *requested && strcmp(requested, "default") != 0)
        return gp_fail(err, "pod asks for policy \"%s\", which does not exist", requested);
    gp_strlcpy(out->name, "default", sizeof out->name);
    placement_default_opts(&out->place);
    podreq_default_names(&out->names);
    return 0;
}

int policy_set_count(const gp_policy_set *s)
{
    return 1;
}

const char *policy_set_name_at(const gp_policy_set *s, int i)
{
    return i == 0 ? "default" : NULL;
}
