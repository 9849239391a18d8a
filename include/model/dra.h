/* dra.h -- Dynamic Resource Allocation objects (resource.k8s.io/v1) -> gpupack's structs. Pure.
 *
 * Kubernetes hands out devices itself through ResourceClaims: a driver
 * publishes its devices in ResourceSlices, an admin names kinds of device in
 * DeviceClasses, and kube-scheduler's allocator writes which device (and with
 * consumable capacity, how much of it) each claim got into the claim's
 * status.allocation. gpupack reads all three to count what claims hold on
 * each GPU and to predict what the allocator will pick.
 *
 * Which devices are GPUs, and which attribute and capacity names carry a
 * GPU's UUID, model, memory and compute share, is a driver table
 * (gp_dra_drivers): the policy's `dra.drivers`, by default NVIDIA's and
 * HAMi's (dra_default_drivers, sources cited in dra.c).
 *
 * Every decoder borrows the JSON and fills a caller-owned struct whose
 * variable-length parts are heap arrays sized to what the object holds
 * (bounded by the *_MAX limits below: an object past a limit is refused with
 * a message, never truncated silently); free them with the matching
 * dra_*_free, which accepts a zeroed struct. Strings longer than their
 * field are refused too. */
#ifndef GP_DRA_H
#define GP_DRA_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/gpu.h"
#include "lib/util.h"

#define GP_DRA_NAME_MAX 64          /* device, request, counter and attribute names (63 + NUL) */
#define GP_DRA_DRIVER_MAX 64        /* a driver name (DNS subdomain, kept to 63) */
#define GP_DRA_DEVICES_MAX 128      /* devices in one ResourceSlice (the API allows 128) */
#define GP_DRA_COUNTER_SETS_MAX 8   /* sharedCounters of one slice */
#define GP_DRA_COUNTERS_MAX 32      /* counters in one set, or consumed by one device */
#define GP_DRA_REQUESTS_MAX 32      /* device requests of one claim */
#define GP_DRA_RESULTS_MAX 64       /* allocation results of one claim */
#define GP_DRA_RESERVED_MAX 256     /* status.reservedFor entries (the API allows 256) */
#define GP_DRA_POD_CLAIMS_MAX 32    /* spec.resourceClaims of one pod */
#define GP_DRA_DRIVERS_MAX 8        /* GPU drivers in the table */
#define GP_DRA_CAPS_MAX 4           /* capacities one request asks / one result consumes */
#define GP_DRA_VALUES_MAX 16        /* requestPolicy.validValues of one capacity (the API allows 10) */
#define GP_DRA_ALTS_MAX 8           /* firstAvailable entries of one request (the API allows 8) */

/* --------------------------------------------------------- drivers --- */

/* How one DRA driver describes its GPUs. Empty names: not published. */
typedef struct gp_dra_driver {
    char driver[GP_DRA_DRIVER_MAX];      /* "gpu.nvidia.com" */
    /* a device counts as a GPU when attribute `type_attr` is the string
     * `type_value` ("type" == "gpu"); type_attr "" = every device */
    char type_attr[GP_DRA_NAME_MAX];
    char type_value[GP_DRA_NAME_MAX];
    char uuid_attr[GP_DRA_NAME_MAX];     /* string attribute with the GPU's UUID ("uuid") */
    char model_attr[GP_DRA_NAME_MAX];    /* string attribute with the model ("productName") */
    char mem_capacity[GP_DRA_NAME_MAX];  /* capacity holding the memory ("memory"), bytes */
    /* capacity holding a compute share, and what a whole GPU is in its unit
     * (e.g. "cores" = 100): converted to per-mille; "" = none (every device
     * is a whole GPU's compute, and claims use none of it) */
    char core_capacity[GP_DRA_NAME_MAX];
    int64_t core_full;
} gp_dra_driver;

typedef struct gp_dra_drivers {
    int n;
    gp_dra_driver d[GP_DRA_DRIVERS_MAX];
} gp_dra_drivers;

/* The built-in table: NVIDIA's k8s-dra-driver-gpu and HAMi's DRA driver. */
void dra_default_drivers(gp_dra_drivers *out);
/* The entry for `driver`, or NULL. */
const gp_dra_driver *dra_driver_find(const gp_dra_drivers *t, const char *driver);

/* ---------------------------------------------------- ResourceSlice --- */

/* One counter: a name and an amount (a quantity, kept in its own unit:
 * bytes for memory counters, a count otherwise; saturates at INT64_MAX). */
typedef struct gp_dra_counter {
    char name[GP_DRA_NAME_MAX];
    int64_t value;
} gp_dra_counter;

/* sharedCounters[i] of a slice, or consumesCounters[i] of a device. */
typedef struct gp_dra_counter_set {
    char name[GP_DRA_NAME_MAX];
    int n;
    gp_dra_counter c[GP_DRA_COUNTERS_MAX];
} gp_dra_counter_set;

typedef struct gp_dra_device {
    char name[GP_DRA_NAME_MAX];          /* "gpu-0" */
    bool gpu;                            /* matches its driver's GPU rule (false: unknown driver) */
    char uuid[GP_UUID_MAX];              /* "" when not published */
    char model[GP_MODEL_MAX];            /* "" when not published */
    int64_t mem_mib;                     /* the memory capacity, MiB rounded down; 0 = none */
    int core;                            /* per-mille; GP_CORE_FULL when the driver has no core capacity */
    /* allowMultipleAllocations: true -- several claims may share the device,
     * each consuming part of its capacity */
    bool multi;
    /* the memory capacity's requestPolicy, MiB (0 = not set): what a request
     * without a memory amount consumes (default), and how amounts are rounded
     * (validRange min/step; validValues are kept sorted in values) */
    int64_t mem_default_mib, mem_min_mib, mem_max_mib, mem_step_mib;
    int nvalues;
    int64_t mem_values_mib[GP_DRA_VALUES_MAX];
    int ncons;                           /* consumesCounters (partitionable devices) */
    gp_dra_counter_set *cons;            /* heap, ncons entries */
    char node[GP_NAME_MAX];              /* per-device nodeName (perDeviceNodeSelection), else "" */
} gp_dra_device;

typedef struct gp_dra_slice {
    char name[GP_NAME_MAX];              /* metadata.name */
    char uid[GP_UID_MAX];
    char rv[32];                         /* metadata.resourceVersion */
    char driver[GP_DRA_DRIVER_MAX];
    char pool[GP_NAME_MAX];
    int64_t pool_generation;
    int pool_slices;                     /* pool.resourceSliceCount */
    char node[GP_NAME_MAX];              /* spec.nodeName; "" for allNodes / nodeSelector slices */
    bool all_nodes;                      /* spec.allNodes (or a nodeSelector: not one node's) */
    int ndevices;
    gp_dra_device *devices;              /* heap, ndevices entries, in the slice's order */
    int nshared;
    gp_dra_counter_set *shared;          /* heap: sharedCounters */
} gp_dra_slice;

/* Decodes a ResourceSlice. Devices of drivers the table knows are classed
 * as GPUs by its rule; other drivers' devices are kept (gpu false) so that a
 * claim on them is understood as not a GPU claim. Returns 0, or -1 with a
 * message (no metadata.name/uid, no spec.driver, a bound exceeded, a
 * malformed quantity). */
int dra_slice_decode(const json_t *obj, const gp_dra_drivers *t, gp_dra_slice *out,
                     gp_err *err) GP_WUR;
void dra_slice_free(gp_dra_slice *s);

/* ------------------------------------------------------ DeviceClass --- */

typedef struct gp_dra_class {
    char name[GP_NAME_MAX];
    /* the driver its selectors pin (a CEL expression comparing device.driver
     * to a string literal, `device.driver == "gpu.nvidia.com"`), "" when none
     * or more than one */
    char driver[GP_DRA_DRIVER_MAX];
    bool other_selectors;                /* CEL beyond the driver test (gpupack cannot evaluate it) */
    /* one string-attribute test of a device, `device.attributes["D"].NAME ==
     * "V"` (either side; one top-level && conjunct, like the driver test):
     * attr "D/NAME", attr_value "V"; "" when none. Every stock class of the
     * NVIDIA and HAMi drivers has one ("gpu.nvidia.com/type" == "gpu"), which
     * tells its GPUs from its MIG devices; it does not count in
     * other_selectors (a second, different test does). */
    char attr[GP_DRA_DRIVER_MAX + GP_DRA_NAME_MAX];
    char attr_value[GP_DRA_NAME_MAX];
    char extended_resource[GP_NAME_MAX]; /* spec.extendedResourceName, "" when none */
} gp_dra_class;

/* Decodes a DeviceClass. Returns 0, or -1 with a message. */
int dra_class_decode(const json_t *obj, gp_dra_class *out, gp_err *err) GP_WUR;

/* ---------------------------------------------------- ResourceClaim --- */

/* One device request (spec.devices.requests[i]): `exactly`, or the first
 * entry of `firstAvailable` (its alternatives counted in nalts). */
typedef struct gp_dra_request {
    char name[GP_DRA_NAME_MAX];
    char cls[GP_NAME_MAX];               /* deviceClassName */
    bool all;                            /* allocationMode All */
    int count;                           /* ExactCount (default 1) */
    bool admin;                          /* adminAccess: consumes nothing */
    bool selectors;                      /* CEL selectors of its own (not evaluated) */
    /* capacity.requests, as named (the driver table says which name is
     * memory): amounts as quantities in their own unit (bytes for memory) */
    int ncap;
    gp_dra_counter cap[GP_DRA_CAPS_MAX];
    int nalts;                           /* firstAvailable entries (0 for exactly) */
} gp_dra_request;

/* One allocation result (status.allocation.devices.results[i]). */
typedef struct gp_dra_result {
    char request[2 * GP_DRA_NAME_MAX];   /* "req" or "req/sub" */
    char driver[GP_DRA_DRIVER_MAX];
    char pool[GP_NAME_MAX];
    char device[GP_DRA_NAME_MAX];
    bool admin;                          /* adminAccess: holds nothing */
    /* consumedCapacity, as named; ncap 0: none recorded (the device is the
     * claim's alone unless it allows multiple allocations) */
    int ncap;
    gp_dra_counter cap[GP_DRA_CAPS_MAX];
    char share_id[GP_DRA_NAME_MAX];      /* shareID, "" when none */
} gp_dra_result;

typedef struct gp_dra_ref {               /* a reservedFor entry that names a pod */
    char uid[GP_UID_MAX];
    char name[GP_NAME_MAX];
} gp_dra_ref;

typedef struct gp_dra_claim {
    char uid[GP_UID_MAX], ns[GP_NAME_MAX], name[GP_NAME_MAX];
    char rv[32];
    bool deleting;                       /* metadata.deletionTimestamp set */
    int nreq;
    gp_dra_request *req;                 /* heap */
    bool allocated;                      /* status.allocation present */
    char node[GP_NAME_MAX];              /* the allocation's node (nodeSelector matchFields
                                          * metadata.name In [one], or matchExpressions on
                                          * kubernetes.io/hostname); "" when not one node */
    int nres;
    gp_dra_result *res;                  /* heap */
    int nreserved;                       /* reservedFor entries, all resources */
    gp_dra_ref *reserved;                /* heap: those that are pods (resource "pods", core group) */
    int nreserved_pods;
} gp_dra_claim;

/* Decodes a ResourceClaim. Returns 0, or -1 with a message. */
int dra_claim_decode(const json_t *obj, gp_dra_claim *out, gp_err *err) GP_WUR;
void dra_claim_free(gp_dra_claim *c);

/* ------------------------------------------------- a pod's claims --- */

/* spec.resourceClaims[i] joined with status.resourceClaimStatuses: the
 * ResourceClaim object the pod uses under that name. */
typedef struct gp_dra_pod_claims_entry {
    char name[GP_DRA_NAME_MAX];          /* the pod's name for it */
    char claim[GP_NAME_MAX];             /* the ResourceClaim's name; "" = not made yet
                                          * (a template whose claim the controller has not
                                          * created, or one it decided not to create) */
    bool from_template;
} gp_dra_pod_claims_entry;

typedef struct gp_dra_pod_claims {
    int n;
    gp_dra_pod_claims_entry c[GP_DRA_POD_CLAIMS_MAX];
} gp_dra_pod_claims;

/* The pod's claims (borrowed pod). Returns 0 (n may be 0), or -1 with a
 * message (malformed entries, too many). */
int dra_pod_claims(const json_t *pod, gp_dra_pod_claims *out, gp_err *err) GP_WUR;

#endif
