/* workq.c -- a fixed pool of threads running queued jobs in arrival order. */
#include "lib/workq.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"

#define WORKQ_MAX_THREADS 256

typedef struct job {
    gp_work_fn fn;
    void *arg;
    struct job *next;
} job;

struct gp_workq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *head, *tail;
    bool stopping;
    char name[16];   /* its threads' name */
    int nthreads;
    pthread_t th[];
};

static void *worker(void *p)
{
    gp_workq *q = p;
    gp_thread_set_name(q->name);
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !q->stopping)
            pthread_cond_wait(&q->cv, &q->mu);
        job *j = q->head;
        if (!j)
            break;   /* stopping and drained */
        q->head = j->next;
        if (!q->head)
            q->tail = NULL;
        pthread_mutex_unlock(&q->mu);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

gp_workq *workq_new(int threads, const char *name, gp_err *err)
{
    if (threads < 1)
        threads = 1;
    if (threads > WORKQ_MAX_THREADS)
        threads = WORKQ_MAX_THREADS;
    gp_workq *q = xcalloc(1, sizeof *q + (size_t)threads * sizeof(pthread_t));
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    snprintf(q->name, sizeof q->name, "%s", name);
    for (int i = 0; i < threads; i++) {
        int rc = pthread_create(&q->th[q->nthreads], NULL, worker, q);
        if (rc != 0) {
            LOG_WARN("%s: started %d of %d threads: %s", name, q->nthreads, threads, strerror(rc));
            break;
        }
        q->nthreads++;
    }
    if (q->nthreads == 0) {
        gp_fail(err, "%s: cannot start a thread", name);
        workq_free(q);
        return NULL;
    }
    return q;
}

void workq_push(gp_workq *q, gp_work_fn fn, void *arg)
{
    job *j = xmalloc(sizeof *j);
    *j = (job){fn, arg, NULL};
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void workq_free(gp_workq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nthreads; i++)
        pthread_join(q->th[i], NULL);
    /* no worker ever started: nothing can be queued (workq_new failed first) */
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}
