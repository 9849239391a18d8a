/* resnames.h -- which resource names a pod's GPU requests use, and their
 * units: what a policy may rename. Shared by the pod decoder (podreq.h) and
 * the other systems' formats it reads (formats.h), which include this rather
 * than each other. */
#ifndef GP_RESNAMES_H
#define GP_RESNAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "model/gpu.h"

/* Which resource names mean what, and their units. A policy can rename them. */
typedef struct gp_resource_names {
    char mem[GP_NAME_MAX];          /* default gpupack.io/gpu-mem */
    int64_t mem_unit_mib;           /* MiB per unit of `mem`: 1 (MiB) or 1024 (GiB) */
    char count[GP_NAME_MAX];        /* default gpupack.io/gpu-count */
    char core[GP_NAME_MAX];         /* default gpupack.io/gpu-core (percent) */
    char aliyun_mem[GP_NAME_MAX];   /* default aliyun.com/gpu-mem; "" disables the profile */
    int64_t aliyun_unit_mib;        /* default 1024 (GiB), 1 when configured as MiB */
    /* Other systems' request formats accepted (model/formats.h): bits
     * GP_FORMAT_BIT(GP_PROFILE_KAI) ...; default GP_FORMATS_OTHER (all). */
    unsigned formats;
    /* nvidia.com/gpu on its own (no HAMi key beside it) is gpupack's, read as
     * HAMi reads it (whole GPUs); default false: it is the NVIDIA device
     * plugin's resource and gpupack leaves it alone. */
    bool nvidia_gpu;
} gp_resource_names;

#define GP_FORMAT_BIT(p) (1u << (p))
#define GP_FORMATS_OTHER                                                                   \
    (GP_FORMAT_BIT(GP_PROFILE_KAI) | GP_FORMAT_BIT(GP_PROFILE_HAMI) |                      \
     GP_FORMAT_BIT(GP_PROFILE_VOLCANO) | GP_FORMAT_BIT(GP_PROFILE_TKE))

#endif
