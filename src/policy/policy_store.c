/* policy_store.c -- policy directory loading, hot reload by polling, reload
 * status, and the `policy check` command. */
#include "policy/policy_store.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/flags.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "policy/policy_yaml.h"

/* The directory's *.yaml files as read in one scan. */
typedef struct dir_snap {
    int n;
    char **paths;
    char **texts;
    size_t *lens;
    uint64_t fp;          /* fingerprint of names and contents */
    char err_file[512];   /* where the first scan error happened */
    char error[512];      /* scan error ("" = none) */
} dir_snap;

struct policy_store {
    char *dir;
    pthread_mutex_t mu;          /* guards everything below, held briefly */
    gp_policy_set *cur;
    uint64_t active_fp, failed_fp, seen_fp;
    char **files;                /* paths behind cur */
    int nfiles;
    char **errors;               /* messages of the last rejected change */
    int nerrors;
    policy_store_status st;

    /* the poll's shortcut: the files are read only when what stat says of
     * them changed, or a change is waiting to settle, or POLICY_STORE_READ_EVERY
     * polls went by without a read (a rewrite of the same size within the
     * file system's timestamp tick leaves stat as it was). Poll thread only. */
    uint64_t meta_fp;
    bool meta_settled;
    int polls_unread;

    pthread_mutex_t reload_mu;   /* one reload at a time */
    pthread_cond_t wake;         /* with mu: stop requests */
    bool running, stopping;
    double poll_s;
    pthread_t thread;
};

/* ============================================================ scanning */

static void snap_free(dir_snap *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->paths[i]);
        free(s->texts[i]);
    }
    free(s->paths);
    free(s->texts);
    free(s->lens);
    memset(s, 0, sizeof *s);
}

static bool wanted_name(const char *name)
{
    size_t len = strlen(name);
    return name[0] != '.' && len > 5 && !strcmp(name + len - 5, ".yaml");
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What stat says of a file, into a fingerprint: a write changes its change
 * time (and mostly its size); a ConfigMap update swaps the ..data link, so
 * the file it leads to is another inode. */
static uint64_t stat_print(uint64_t fp, const char *path, const struct stat *sb)
{
    int64_t f[7] = {(int64_t)sb->st_dev, (int64_t)sb->st_ino, (int64_t)sb->st_size,
                    (int64_t)sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec,
                    (int64_t)sb->st_ctim.tv_sec, sb->st_ctim.tv_nsec};
    fp = gp_fnv1a(fp, path, strlen(path) + 1);
    return gp_fnv1a(fp, f, sizeof f);
}

/* Sorted paths of DIR's *.yaml regular files (symlinks followed, as in a
 * ConfigMap mount; dot files skipped). Returns 0, or -1 with a message.
 * *meta (NULL: not wanted): a fingerprint of the names and of what stat
 * says of each file, in the directory's order. */
static int list_dir(const char *dir, char ***out, int *n, uint64_t *meta, gp_err *err)
{
    DIR *d = opendir(dir);
    *out = NULL;
    *n = 0;
    if (!d)
        return gp_fail(err, "cannot open directory: %s", strerror(errno));
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!wanted_name(e->d_name))
            continue;
        char *path = xasprintf("%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            free(path);
            continue;
        }
        if (meta)
            *meta = stat_print(*meta, path, &sb);
        if (*n >= POLICY_STORE_FILES_MAX) {
            free(path);
            rc = gp_fail(err, "more than %d *.yaml files", POLICY_STORE_FILES_MAX);
            break;
        }
        *out = xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
        (*out)[(*n)++] = path;
    }
    closedir(d);
    if (*n > 1)
        qsort(*out, (size_t)*n, sizeof **out, by_str);
    return rc;
}

/* A policy file's text, or NULL with why in err (the caller names the file). */
static char *read_text(const char *path, size_t *len, gp_err *err)
{
    gp_err e;
    char *text = gp_read_file(path, POLICY_FILE_MAX, len, &e);
    if (!text && errno == EFBIG)
        gp_fail(err, "larger than %d bytes", POLICY_FILE_MAX);
    else if (!text)
        gp_fail(err, "cannot %s: %s", errno == EIO ? "read" : "open", strerror(errno));
    return text;
}

/* Reads the directory once; a scan error is kept in s->error and folded
 * into the fingerprint, so the same failure is not retried every poll. */
static void scan(const char *dir, dir_snap *s)
{
    gp_err err;
    char **paths = NULL;
    int n = 0;
    memset(s, 0, sizeof *s);
    s->fp = GP_FNV_OFFSET;
    if (list_dir(dir, &paths, &n, NULL, &err) < 0) {
        gp_strlcpy(s->err_file, dir, sizeof s->err_file);
        gp_strlcpy(s->error, err.msg, sizeof s->error);
        s->fp = gp_fnv1a(s->fp, err.msg, strlen(err.msg));
    }
    s->paths = paths;
    s->texts = xcalloc((size_t)n + 1, sizeof *s->texts);
    s->lens = xcalloc((size_t)n + 1, sizeof *s->lens);
    s->n = n;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        s->fp = gp_fnv1a(s->fp, paths[i], strlen(paths[i]) + 1);
        if (total > POLICY_STORE_BYTES_MAX) {
            if (!s->error[0]) {
                gp_strlcpy(s->err_file, paths[i], sizeof s->err_file);
                snprintf(s->error, sizeof s->error,
                         "the policy files exceed %d MiB in total; this one is not read",
                         POLICY_STORE_BYTES_MAX >> 20);
            }
            continue;
        }
        s->texts[i] = read_text(paths[i], &s->lens[i], &err);
        total += s->lens[i];
        if (!s->texts[i]) {
            if (!s->error[0]) {
                gp_strlcpy(s->err_file, paths[i], sizeof s->err_file);
                gp_strlcpy(s->error, err.msg, sizeof s->error);
            }
            s->fp = gp_fnv1a(s->fp, err.msg, strlen(err.msg));
            continue;
        }
        s->fp = gp_fnv1a(s->fp, &s->lens[i], sizeof s->lens[i]);
        s->fp = gp_fnv1a(s->fp, s->texts[i], s->lens[i]);
    }
}

/* Parses a snapshot into a set; every problem goes to diag. */
static int build(const dir_snap *s, gp_policy_set **out, policy_diag *diag)
{
    gp_policy **pols = NULL;
    int npols = 0;
    bool bad = false;
    *out = NULL;
    if (s->error[0]) {
        policy_diag_add(diag, s->err_file, 1, 1, "%s", s->error);
        bad = true;
    }
    for (int i = 0; i < s->n; i++)
        if (s->texts[i])
            bad |= policy_yaml_parse(s->paths[i], s->texts[i], s->lens[i], &pols, &npols,
                                     diag) != 0;
    gp_policy_set *set = NULL;
    if (policy_set_build(pols, npols, diag, &set) < 0 || bad) {
        policy_set_unref(set);
        return -1;
    }
    *out = set;
    return 0;
}

/* ============================================================ reloading */

static void set_names(const gp_policy_set *s, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < policy_set_count(s) && len < size - 1; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                                policy_set_name_at(s, i));
}

/* Applies a snapshot: swap on success, keep the old set on failure. Called
 * with reload_mu held. */
static int apply(policy_store *st, dir_snap *snap, gp_err *err)
{
    policy_diag diag = {0};
    gp_policy_set *set = NULL;
    int rc = build(snap, &set, &diag);
    int64_t now = gp_now_ns();
    gp_policy_set *old = NULL;
    char **old_strs = NULL;
    int nold = 0;

    if (rc == 0) {
        char names[1024];
        set_names(set, names, sizeof names);
        LOG_INFO("policies: loaded %d polic%s from %d file%s in %s: %s", policy_set_count(set),
                 policy_set_count(set) == 1 ? "y" : "ies", snap->n, snap->n == 1 ? "" : "s",
                 st->dir, names);
    } else {
        for (int i = 0; i < diag.n; i++)
            LOG_ERROR("policy: %s", diag.msgs[i]);
        if (st->cur)
            LOG_ERROR("policies: change in %s rejected (%d error%s); still serving the "
                      "previous policy set", st->dir, policy_diag_count(&diag),
                      policy_diag_count(&diag) == 1 ? "" : "s");
        else
            LOG_ERROR("policies: cannot load %s (%d error%s)", st->dir,
                      policy_diag_count(&diag), policy_diag_count(&diag) == 1 ? "" : "s");
        policy_diag_summary(&diag, err);
    }

    pthread_mutex_lock(&st->mu);
    st->st.last_attempt_ns = now;
    st->st.last_ok = rc == 0;
    if (rc == 0) {
        old = st->cur;
        st->cur = set;
        st->active_fp = snap->fp;
        st->failed_fp = 0;
        old_strs = st->files;     /* freed after unlocking */
        nold = st->nfiles;
        st->files = snap->paths;  /* the snapshot's paths move into the store */
        st->nfiles = snap->n;
        st->st.loads_ok++;
        st->st.last_ok_ns = now;
        st->st.nfiles = snap->n;
        st->st.npolicies = policy_set_count(set);
        st->st.last_error[0] = '\0';
    } else {
        st->failed_fp = snap->fp;
        st->st.loads_failed++;
        gp_strlcpy(st->st.last_error, err->msg, sizeof st->st.last_error);
        old_strs = st->errors;
        nold = st->nerrors;
        st->errors = diag.msgs;   /* the messages move into the store */
        st->nerrors = diag.n;
    }
    pthread_mutex_unlock(&st->mu);

    if (rc == 0) {
        snap->paths = xcalloc((size_t)snap->n + 1, sizeof *snap->paths);
        policy_diag_free(&diag);
    } else {
        diag.msgs = NULL;
        diag.n = 0;
    }
    for (int i = 0; i < nold; i++)
        free(old_strs[i]);
    free(old_strs);
    policy_set_unref(old);   /* freed here unless a request still holds it */
    return rc;
}

/* The files are back to what the active set was built from (a rejected
 * edit was undone): the newest files are serving again. Called with mu. */
static void back_to_active(policy_store *st)
{
    if (st->st.last_ok)
        return;
    st->st.last_ok = true;
    st->st.last_error[0] = '\0';
    st->failed_fp = 0;
    LOG_INFO("policies: %s is back to the active policy set", st->dir);
}

int policy_store_reload(policy_store *st, gp_err *err)
{
    gp_err local;
    if (!err)
        err = &local;
    dir_snap snap;
    pthread_mutex_lock(&st->reload_mu);
    scan(st->dir, &snap);
    pthread_mutex_lock(&st->mu);
    bool same = st->cur && snap.fp == st->active_fp;
    if (same)
        back_to_active(st);
    pthread_mutex_unlock(&st->mu);
    int rc = same ? 0 : apply(st, &snap, err);
    snap_free(&snap);
    pthread_mutex_unlock(&st->reload_mu);
    return rc;
}

/* One poll: reload when the files differ from both the active and the last
 * rejected version and have been stable since the previous poll (an editor
 * caught mid-write is not reported as an error). */
static bool poll_may_skip(policy_store *st)
{
    uint64_t meta = GP_FNV_OFFSET;
    char **paths = NULL;
    int n = 0;
    gp_err err;
    bool listed = list_dir(st->dir, &paths, &n, &meta, &err) == 0;
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    bool same = listed && st->meta_settled && meta == st->meta_fp &&
                st->polls_unread + 1 < POLICY_STORE_READ_EVERY;
    st->meta_fp = listed ? meta : 0;
    if (same)
        st->polls_unread++;
    else
        st->polls_unread = 0;
    pthread_mutex_lock(&st->mu);
    st->st.polls++;
    st->st.polls_read += !same;
    pthread_mutex_unlock(&st->mu);
    return same;
}

static void poll_once(policy_store *st)
{
    dir_snap snap;
    if (poll_may_skip(st))
        return;
    pthread_mutex_lock(&st->reload_mu);
    scan(st->dir, &snap);
    pthread_mutex_lock(&st->mu);
    if (snap.fp == st->active_fp)
        back_to_active(st);
    bool changed = snap.fp != st->active_fp && snap.fp != st->failed_fp;
    bool stable = snap.fp == st->seen_fp;
    st->seen_fp = snap.fp;
    pthread_mutex_unlock(&st->mu);
    if (changed && stable) {
        gp_err err;
        (void)apply(st, &snap, &err);
    }
    /* a change read but not yet applied (waiting to be stable) is read again */
    st->meta_settled = !changed || stable;
    snap_free(&snap);
    pthread_mutex_unlock(&st->reload_mu);
}

static void *reload_thread(void *arg)
{
    policy_store *st = arg;
    gp_thread_set_name("policy-reload");
    pthread_mutex_lock(&st->mu);
    while (!st->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        long ns = (long)(st->poll_s * 1e9);
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec += ns % 1000000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!st->stopping && pthread_cond_timedwait(&st->wake, &st->mu, &until) != ETIMEDOUT)
            ;
        if (st->stopping)
            break;
        pthread_mutex_unlock(&st->mu);
        poll_once(st);
        pthread_mutex_lock(&st->mu);
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* ============================================================ lifecycle */

int policy_store_open(const char *dir, policy_store **out, gp_err *err)
{
    policy_store *st = xcalloc(1, sizeof *st);
    st->dir = xstrdup(dir);
    pthread_mutex_init(&st->mu, NULL);
    pthread_mutex_init(&st->reload_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&st->wake, &ca);
    pthread_condattr_destroy(&ca);
    *out = NULL;
    if (policy_store_reload(st, err) < 0) {
        policy_store_free(st);
        return -1;
    }
    *out = st;
    return 0;
}

int policy_store_start(policy_store *st, double poll_s, gp_err *err)
{
    if (st->running)
        return 0;
    st->poll_s = poll_s > 0 ? poll_s : POLICY_STORE_POLL_S;
    st->stopping = false;
    int e = pthread_create(&st->thread, NULL, reload_thread, st);
    if (e != 0)
        return gp_fail(err, "policy reload thread: %s", strerror(e));
    st->running = true;
    return 0;
}

void policy_store_stop(policy_store *st)
{
    if (!st || !st->running)
        return;
    pthread_mutex_lock(&st->mu);
    st->stopping = true;
    pthread_cond_broadcast(&st->wake);
    pthread_mutex_unlock(&st->mu);
    pthread_join(st->thread, NULL);
    st->running = false;
}

void policy_store_free(policy_store *st)
{
    if (!st)
        return;
    policy_store_stop(st);
    policy_set_unref(st->cur);
    for (int i = 0; i < st->nfiles; i++)
        free(st->files[i]);
    free(st->files);
    for (int i = 0; i < st->nerrors; i++)
        free(st->errors[i]);
    free(st->errors);
    pthread_cond_destroy(&st->wake);
    pthread_mutex_destroy(&st->reload_mu);
    pthread_mutex_destroy(&st->mu);
    free(st->dir);
    free(st);
}

gp_policy_set *policy_store_current(void *store)
{
    policy_store *st = store;
    pthread_mutex_lock(&st->mu);
    gp_policy_set *s = st->cur;
    if (s)
        policy_set_ref(s);
    pthread_mutex_unlock(&st->mu);
    return s ? s : policy_set_default();
}

/* ============================================================ status */

void policy_store_get_status(policy_store *st, policy_store_status *out)
{
    pthread_mutex_lock(&st->mu);
    *out = st->st;
    pthread_mutex_unlock(&st->mu);
}

json_t *policy_store_inspect(policy_store *st)
{
    gp_policy_set *set = policy_store_current(st);
    json_t *o = json_object();
    json_object_set_new(o, "dir", json_string(st->dir));
    json_object_set_new(o, "active", policy_set_to_json(set, time(NULL)));
    pthread_mutex_lock(&st->mu);
    json_t *files = json_array(), *errors = json_array();
    for (int i = 0; i < st->nfiles; i++)
        json_array_append_new(files, json_string(st->files[i]));
    for (int i = 0; !st->st.last_ok && i < st->nerrors; i++)
        json_array_append_new(errors, json_string(st->errors[i]));
    json_object_set_new(o, "files", files);
    json_object_set_new(o, "loads", json_pack("{s:I,s:I}", "ok", (json_int_t)st->st.loads_ok,
                                              "failed", (json_int_t)st->st.loads_failed));
    json_object_set_new(o, "lastOk", json_boolean(st->st.last_ok));
    json_object_set_new(o, "lastAttempt", json_integer(st->st.last_attempt_ns / 1000000000));
    json_object_set_new(o, "lastSuccess", json_integer(st->st.last_ok_ns / 1000000000));
    json_object_set_new(o, "lastErrors", errors);
    pthread_mutex_unlock(&st->mu);
    policy_set_unref(set);
    return o;
}

void policy_store_metrics(void *store, gp_buf *out)
{
    policy_store *st = store;
    policy_store_status s;
    policy_store_get_status(st, &s);
    gp_policy_set *set = policy_store_current(st);
    metrics_header(out, "gpupack_policy_loads_total", "counter", "Policy directory loads by outcome.");
    metrics_u(out, "gpupack_policy_loads_total", "result=\"ok\"", s.loads_ok);
    metrics_u(out, "gpupack_policy_loads_total", "result=\"failed\"", s.loads_failed);
    metrics_header(out, "gpupack_policy_last_load_ok", "gauge",
                   "1 when the newest policy files are the ones serving.");
    metrics_i(out, "gpupack_policy_last_load_ok", NULL, s.last_ok ? 1 : 0);
    metrics_header(out, "gpupack_policy_last_success_timestamp_seconds", "gauge",
                   "When the active set was loaded.");
    metrics_i(out, "gpupack_policy_last_success_timestamp_seconds", NULL,
              (long long)(s.last_ok_ns / 1000000000));
    metrics_header(out, "gpupack_policy_active", "gauge",
                   "Policies of the active set, in selection order.");
    for (int i = 0; i < policy_set_count(set); i++) {
        char labels[GP_NAME_MAX + 48];
        snprintf(labels, sizeof labels, "policy=\"%s\",rank=\"%d\"", policy_set_name_at(set, i), i);
        metrics_i(out, "gpupack_policy_active", labels, 1);
    }
    policy_set_unref(set);
}

/* ============================================================ policy check */

static void add_path(char ***paths, int *n, char *path)
{
    *paths = xrealloc(*paths, (size_t)(*n + 1) * sizeof **paths);
    (*paths)[(*n)++] = path;
}

static const gp_command policy_cmd = {
    "gpupack policy", "check FILE|DIR...",
    "Policy files. The one subcommand, check, validates PackingPolicy files together, as\n"
    "one --policies directory: every error as file:line:column: message; exit 0 when\n"
    "valid, 1 when not, 2 on usage errors.",
    NULL, 0, NULL, 0};

static const gp_command check_cmd = {
    "gpupack policy check", "FILE|DIR...",
    "Validates PackingPolicy files together, as one --policies directory (a directory's\n"
    "*.yaml files). Prints every error as file:line:column: message; exit 0 when valid,\n"
    "1 when not, 2 on usage errors.",
    NULL, 0, NULL, 1 << 20};

int policy_check_main(int argc, char **argv)
{
    if (argc > 0 && !strcmp(argv[0], "policy")) {   /* called with the "policy" word */
        if (argc < 2)
            return flags_error(&policy_cmd, "which subcommand? (expected: check)");
        if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
            flags_usage(&policy_cmd, stdout);
            return 0;
        }
        if (strcmp(argv[1], "check") != 0)
            return flags_error(&policy_cmd, "unknown subcommand %s (expected: check)", argv[1]);
        argc--;
        argv++;
    }
    const char **files = xcalloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    int nfiles = 0;
    int prc = flags_parse(&check_cmd, argc, argv, NULL, files, &nfiles);
    if (prc == FLAGS_OK && nfiles == 0)
        prc = flags_error(&check_cmd, "which files? give FILE|DIR...");
    if (prc != FLAGS_OK) {
        free(files);
        return prc == FLAGS_HELP ? 0 : 2;
    }
    char **paths = NULL;
    int n = 0, rc = 0;
    policy_diag diag = {0};
    for (int i = 0; i < nfiles; i++) {
        struct stat sb;
        if (stat(files[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
            char **sub = NULL;
            int nsub = 0;
            gp_err err;
            if (list_dir(files[i], &sub, &nsub, NULL, &err) < 0)
                policy_diag_add(&diag, files[i], 1, 1, "%s", err.msg);
            for (int j = 0; j < nsub; j++)
                add_path(&paths, &n, sub[j]);
            free(sub);
        } else {
            add_path(&paths, &n, xstrdup(files[i]));
        }
    }
    gp_policy_set *set = NULL;
    int bad = policy_diag_count(&diag) > 0;
    if (policy_set_load_files((const char *const *)paths, n, &set, &diag) < 0 || bad) {
        for (int i = 0; i < diag.n; i++)
            fprintf(stderr, "%s\n", diag.msgs[i]);
        if (diag.dropped)
            fprintf(stderr, "... and %d more errors\n", diag.dropped);
        printf("invalid: %d error%s in %d file%s\n", policy_diag_count(&diag),
               policy_diag_count(&diag) == 1 ? "" : "s", n, n == 1 ? "" : "s");
        rc = 1;
    } else {
        char names[1024];
        set_names(set, names, sizeof names);
        printf("ok: %d file%s, %d polic%s (in selection order): %s\n", n, n == 1 ? "" : "s",
               policy_set_count(set), policy_set_count(set) == 1 ? "y" : "ies", names);
    }
    policy_set_unref(set);
    policy_diag_free(&diag);
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    free(files);
    return rc;
}
