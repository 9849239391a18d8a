/* test_policy_configmap.c -- hot reload from a directory laid out like a
 * mounted ConfigMap: files are symlinks through ..data, and kubelet updates
 * them by swapping the ..data symlink atomically. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy_store.h"
#include "lib/util.h"

static void write_policy(const char *path, const char *name)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "apiVersion: gpupack.io/v1alpha1\nkind: PackingPolicy\nmetadata: {name: %s}\n"
            "spec:\n  priority: 5\n  match: {namespaces: [team]}\n",
            name);
    fclose(f);
}

static bool set_has(policy_store *ps, const char *name)
{
    gp_policy_set *set = policy_store_current(ps);
    bool found = false;
    for (int i = 0; i < policy_set_count(set); i++)
        found |= strcmp(policy_set_name_at(set, i), name) == 0;
    policy_set_unref(set);
    return found;
}

/* kubelet's update: a new timestamped dir, then ..data swapped with rename(2). */
static void swap_data(const char *dir, const char *target)
{
    char tmp[512], data[512];
    snprintf(tmp, sizeof tmp, "%s/..data_tmp", dir);
    snprintf(data, sizeof data, "%s/..data", dir);
    unlink(tmp);
    ck_assert_int_eq(symlink(target, tmp), 0);
    ck_assert_int_eq(rename(tmp, data), 0);
}

START_TEST(configmap_symlink_swap)
{
    char dir[] = "/tmp/gpupack-cm-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char p[512];
    snprintf(p, sizeof p, "%s/..v1", dir);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/..v1/team.yaml", dir);
    write_policy(p, "team-v1");
    swap_data(dir, "..v1");
    snprintf(p, sizeof p, "%s/team.yaml", dir);
    ck_assert_int_eq(symlink("..data/team.yaml", p), 0);

    policy_store *ps;
    gp_err err;
    ck_assert_msg(policy_store_open(dir, &ps, &err) == 0, "%s", err.msg);
    ck_assert(set_has(ps, "team-v1"));

    /* the update: new contents behind the same file name */
    snprintf(p, sizeof p, "%s/..v2", dir);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/..v2/team.yaml", dir);
    write_policy(p, "team-v2");
    swap_data(dir, "..v2");
    ck_assert_msg(policy_store_reload(ps, &err) == 0, "%s", err.msg);
    ck_assert(set_has(ps, "team-v2"));
    ck_assert(!set_has(ps, "team-v1"));

    /* and the poller sees the next swap by itself */
    ck_assert_msg(policy_store_start(ps, 0.02, &err) == 0, "%s", err.msg);
    snprintf(p, sizeof p, "%s/..v3", dir);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/..v3/team.yaml", dir);
    write_policy(p, "team-v3");
    swap_data(dir, "..v3");
    bool seen = false;
    for (int i = 0; i < 500 && !seen; i++) {   /* up to 5 s */
        seen = set_has(ps, "team-v3");
        if (!seen)
            usleep(10000);
    }
    ck_assert_msg(seen, "the poller never picked up the swapped ..data");
    policy_store_free(ps);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *suite_policy_configmap(void);
Suite *suite_policy_configmap(void)
{
    Suite *s = suite_create("policy_configmap");
    TCase *t = tcase_create("reload");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, configmap_symlink_swap);
    suite_add_tcase(s, t);
    return s;
}
