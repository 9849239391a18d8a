/* base64.h -- standard base64 (RFC 4648, padded) through GnuTLS, which gpupack
 * links for TLS anyway: the JSONPatch of an AdmissionReview, the *-data fields
 * of a kubeconfig. */
#ifndef GP_BASE64_H
#define GP_BASE64_H

#include <stddef.h>

/* The encoding of n bytes, padded, no line breaks; owned string (free()). */
char *gp_base64_encode(const void *data, size_t n);

/* Decodes s (NUL-terminated; whitespace and line breaks ignored, padding
 * required, as Kubernetes' own decoder wants it). Returns an owned buffer
 * (free(); NUL-terminated, *len bytes without the NUL), or NULL when s is not
 * base64. */
char *gp_base64_decode(const char *s, size_t *len);

#endif
