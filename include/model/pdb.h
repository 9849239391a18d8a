/* pdb.h -- PodDisruptionBudgets as preemption weighs them: decoding, label
 * selectors, and kube-scheduler's count of budget violations. Pure.
 *
 *   gp_pdb *b = pdb_decode(obj, &err);           // owned; pdb_free
 *   pdb_violations(pdbs, n, pods, npods, flags);  // flags[i]: evicting pod i breaks a budget
 *
 * The count follows kube-scheduler's filterPodsWithPDBViolation
 * (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go,
 * v1.26 and v1.36 alike): pods are taken most important first; each matching
 * budget of the pod's namespace (a nil or empty selector matches nothing; a
 * pod listed in status.disruptedPods is not counted again) loses one allowed
 * disruption, and a pod whose budget goes below zero violates it. */
#ifndef GP_PDB_H
#define GP_PDB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/gpu.h"
#include "lib/util.h"

#define GP_PDB_REQS_MAX 32        /* selector requirements kept per budget */
#define GP_PDB_VALUES_MAX 32      /* values per requirement */
#define GP_PDB_DISRUPTED_MAX 256  /* status.disruptedPods names kept */

typedef enum { GP_SEL_IN, GP_SEL_NOT_IN, GP_SEL_EXISTS, GP_SEL_DOES_NOT_EXIST } gp_sel_op;

typedef struct gp_sel_req {
    char *key;
    gp_sel_op op;
    int nvalues;
    char **values;
} gp_sel_req;

typedef struct gp_pdb {
    char ns[GP_NAME_MAX], name[GP_NAME_MAX], uid[GP_UID_MAX];
    int32_t allowed;              /* status.disruptionsAllowed (0 when absent) */
    bool matches_nothing;         /* nil, empty or invalid selector */
    int nreqs;
    gp_sel_req *reqs;             /* all must hold */
    int ndisrupted;
    char **disrupted;             /* status.disruptedPods keys (pod names) */
} gp_pdb;

/* Decodes a PodDisruptionBudget (borrowed). Returns an owned budget, or
 * NULL with a message when the object has no metadata.name/namespace. A
 * selector gpupack cannot read makes the budget match nothing, as
 * kube-scheduler treats a selector it cannot convert. */
gp_pdb *pdb_decode(const json_t *obj, gp_err *err);
void pdb_free(gp_pdb *b);          /* accepts NULL */

/* Does the budget select a pod of namespace ns with compact labels (see
 * podprio.h)? A pod without labels matches nothing. */
bool pdb_matches(const gp_pdb *b, const char *ns, const char *labels);

/* One pod as the violation count sees it. */
typedef struct gp_pdb_pod {
    const char *ns, *name;
    const char *labels;           /* compact labels */
} gp_pdb_pod;

/* pods[] in kube-scheduler's order (most important first); sets violating[i]
 * for each pod whose eviction, after the ones before it, breaks a budget. */
void pdb_violations(gp_pdb *const *pdbs, size_t npdbs, const gp_pdb_pod *pods, size_t npods,
                    bool *violating);

/* Is the pod selected by any budget (its eviction may be refused with 429)? */
bool pdb_covered(gp_pdb *const *pdbs, size_t npdbs, const char *ns, const char *labels);

#endif
