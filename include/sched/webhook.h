/* webhook.h -- the mutating admission webhook: AdmissionReview v1 in, AdmissionReview with a
 * JSONPatch out. Points the GPU variables of every container that asks gpupack resources at the
 * per-container annotations bind writes (annotations.h). Pure: no sockets. */
#ifndef GP_WEBHOOK_H
#define GP_WEBHOOK_H

#include <jansson.h>
#include <stddef.h>

#include "lib/base64.h"
#include "model/podreq.h"
#include "lib/util.h"

/* Answers one AdmissionReview request body (borrowed, len bytes, not
 * NUL-terminated). *out gets an owned AdmissionReview JSON (free()).
 * Returns the HTTP status: 200 with a response (allowed, maybe a base64
 * JSONPatch and warnings), or 400 with allowed:false and a status message
 * when the body is not an AdmissionReview v1 request. Non-Pod kinds,
 * operations other than CREATE and subresources are allowed untouched.
 * Thread-safe (names is only read). */
int webhook_review(const char *body, size_t len, const gp_resource_names *names, char **out);

/* The JSONPatch (owned array; empty when nothing to do) that injects the
 * variables into `pod` (borrowed Pod JSON). Only env arrays of containers and
 * init containers that ask gpupack resources are touched. Human-readable
 * notes (variables the pod keeps, a request gpupack cannot read) are
 * appended to `warnings` (a borrowed JSON array) when it is not NULL. */
json_t *webhook_patch(const json_t *pod, const gp_resource_names *names, json_t *warnings);

/* The old name of gp_base64_encode (lib/base64.h), kept for test/e2e. */
static inline char *webhook_base64(const void *data, size_t n)
{
    return gp_base64_encode(data, n);
}

#endif
