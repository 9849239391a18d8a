/* strategy_bench.c -- CPU cost of one node strategy on the live path:
 * placement_fit + placement_node_score of one 8-GPU node (the openb trace's
 * most common node, G2) against the trace's typical pod shapes, over a fixed
 * set of node states from empty to nearly full. No cache, as in the extender.
 *   bin/strategy_bench NODES.csv PODS.csv [NODE_STRATEGY [GPU_STRATEGY [ROUNDS]]]
 * Prints microseconds per fit+score and a checksum of every score (bitwise,
 * %a) so that two builds can be shown to make the same decisions. The timed
 * loop is bench_loop(), for valgrind --tool=callgrind --toggle-collect=bench_loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "pack/frag.h"
#include "pack/placement.h"
#include "sim/trace.h"

#define NSTATES 24

/* A deterministic LCG, so that every build sees the same node states. */
static uint32_t lcg(uint64_t *s)
{
    *s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (uint32_t)(*s >> 33);
}

static bool cpu_fits(const gp_node *n, const gp_pod_req *r)
{
    return n->cpu_alloc_milli <= 0 || n->cpu_used_milli + r->cpu_milli <= n->cpu_alloc_milli;
}

typedef struct bench {
    gp_node states[NSTATES];
    int nstates;
    gp_pod_req *reqs;
    int nreqs;
    gp_place_opts opts;
} bench;

/* One pass over every (state, request): fit, then score when it fits.
 * Returns the number of fit+score calls; *sum accumulates the scores and *h
 * hashes their bits and the GPUs chosen (FNV-1a). */
static long bench_loop(const bench *b, int rounds, double *sum, long *fits, uint64_t *h)
{
    long calls = 0;
    for (int r = 0; r < rounds; r++) {
        for (int s = 0; s < b->nstates; s++) {
            for (int q = 0; q < b->nreqs; q++) {
                const gp_node *n = &b->states[s];
                const gp_pod_req *req = &b->reqs[q];
                if (!cpu_fits(n, req))
                    continue;
                gp_assignment a;
                calls++;
                if (placement_fit(n, req, &b->opts, &a, NULL) != 0)
                    continue;
                (*fits)++;
                double sc = placement_node_score(n, req, &a, &b->opts);
                *sum += sc;
                uint64_t bits;
                memcpy(&bits, &sc, sizeof bits);
                for (int c = 0; c < a.nctrs; c++)
                    for (int g = 0; g < a.ctrs[c].ngpus; g++)
                        bits = bits * 31 + (uint64_t)a.ctrs[c].gpus[g].index;
                *h = (*h ^ bits) * UINT64_C(1099511628211);
            }
        }
    }
    return calls;
}

/* Called through a volatile pointer so that it stays a function of its own
 * (callgrind's --toggle-collect needs the symbol). */
static long (*volatile run_loop)(const bench *, int, double *, long *, uint64_t *) = bench_loop;

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: strategy_bench NODES.csv PODS.csv [NODE_STRATEGY [GPU_STRATEGY "
                        "[ROUNDS]]]\n");
        return 2;
    }
    const char *ns = argc > 3 ? argv[3] : "fragmentation-aware-lookahead";
    const char *gs = argc > 4 ? argv[4] : "fragmentation-aware";
    int rounds = argc > 5 ? atoi(argv[5]) : 20;
    if (rounds < 1)
        rounds = 1;
    gp_err err;
    trace_node *tn = NULL;
    trace_pod *tp = NULL;
    size_t nn = 0, np = 0;
    if (trace_load_nodes(argv[1], &tn, &nn, &err) || trace_load_pods(argv[2], &tp, &np, &err)) {
        fprintf(stderr, "strategy_bench: %s\n", err.msg);
        return 1;
    }
    size_t pick = nn;
    for (size_t i = 0; i < nn && pick == nn; i++)
        if (tn[i].gpus == 8 && strcmp(tn[i].model, "G2") == 0)
            pick = i;
    if (pick == nn) {
        fprintf(stderr, "strategy_bench: no 8-GPU G2 node in %s\n", argv[1]);
        return 1;
    }

    static bench b;
    gp_shapes *shapes = xcalloc(1, sizeof *shapes);
    trace_shapes(tp, np, 0.95, true, true, shapes);   /* the simulator's default */
    placement_default_opts(&b.opts);
    b.opts.node = placement_node_strategy(ns);
    b.opts.gpu = placement_gpu_strategy(gs);
    b.opts.shapes = shapes;
    if (!b.opts.node || !b.opts.gpu) {
        fprintf(stderr, "strategy_bench: unknown strategy %s / %s\n", ns, gs);
        return 2;
    }

    /* requests: one per typical shape */
    b.reqs = xcalloc((size_t)shapes->n, sizeof *b.reqs);
    for (int k = 0; k < shapes->n; k++) {
        trace_pod p;
        memset(&p, 0, sizeof p);
        p.cpu_milli = shapes->s[k].cpu_milli;
        p.num_gpu = shapes->s[k].count;
        p.gpu_milli = shapes->s[k].core;
        gp_strlcpy(p.gpu_spec, shapes->s[k].models, sizeof p.gpu_spec);
        char name[32];
        snprintf(name, sizeof name, "shape-%d", k);
        trace_pod_to_req(&p, name, &b.reqs[b.nreqs++]);
    }

    /* node states: the node filled by random trace pods (placed by the same
     * strategies), a snapshot after every placement; refilled from empty until
     * NSTATES states (empty first) */
    gp_node empty, n;
    trace_node_to_gp(&tn[pick], &empty);
    uint64_t seed = 42;
    b.states[b.nstates++] = empty;
    for (int fill = 0; fill < 100 && b.nstates < NSTATES; fill++) {
        n = empty;
        for (int misses = 0; misses < 50 && b.nstates < NSTATES;) {
            const trace_pod *p = &tp[lcg(&seed) % np];
            gp_pod_req r;
            gp_assignment a;
            trace_pod_to_req(p, "fill", &r);
            if (!cpu_fits(&n, &r) || placement_fit(&n, &r, &b.opts, &a, NULL) != 0 ||
                placement_apply(&n, &a, 1) != 0) {
                misses++;
                continue;
            }
            n.cpu_used_milli += r.cpu_milli;
            misses = 0;
            b.states[b.nstates++] = n;
        }
    }

    double sum = 0.0;
    long fits = 0;
    uint64_t hash = UINT64_C(14695981039346656037), h2 = 0;
    run_loop(&b, 1, &sum, &fits, &hash);   /* warm-up, and the checksum */
    double checksum = sum;
    long fit1 = fits;
    sum = 0.0;
    fits = 0;
    double t0 = gp_cpu_s();
    long calls = run_loop(&b, rounds, &sum, &fits, &h2);
    double t1 = gp_cpu_s();
    printf("node %s (%d GPUs %s), %d typical shapes, %d node states, %s/%s\n", tn[pick].name,
           tn[pick].gpus, tn[pick].model, shapes->n, b.nstates, ns, gs);
    printf("calls %ld (fits %ld) in %.3f s CPU: %.2f us per fit+score\n", calls, fits, t1 - t0,
           calls ? (t1 - t0) * 1e6 / (double)calls : 0.0);
    printf("checksum over one pass: %ld fits, sum of scores %a (%.6f), hash %016llx\n", fit1,
           checksum, checksum, (unsigned long long)hash);
    free(b.reqs);
    free(shapes);
    free(tn);
    free(tp);
    return 0;
}
