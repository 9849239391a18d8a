/* frag_la.h -- fragmentation-aware node scoring with a one-step look-ahead
 * (beyond plain FGD, frag.h). A strategy function for placement's node table;
 * pure and thread-safe. */
#ifndef GP_FRAG_LA_H
#define GP_FRAG_LA_H

#include "pack/frag.h"

/* Expected fragment of a node after the next typical pod: sum over shapes m
 * of p_m x the fragment m leaves here. A one-GPU shape: on the GPU where it
 * leaves least, min'ed with the fragment as is (the pod may go elsewhere).
 * A multi-GPU shape (on the first allowed GPUs that fit) or a CPU-only shape:
 * the fragment its placement leaves, even when higher than as is (as the
 * shipped results were measured; not min'ed). A shape that does not fit: the
 * fragment as is. */
double frag_lookahead_amount(const frag_view *v, const gp_shapes *shapes);

/* Node: FGD decrease plus 5 x the decrease of the look-ahead fragment;
 * scores within 10 per-mille are ties, broken towards the node left with the
 * least free share per GPU (as fragmentation-aware-bestfit). */
double frag_node_score_lookahead(const gp_node *node, const gp_pod_req *req,
                                 const gp_assignment *a, const gp_place_opts *opts);

#endif
