/* fuzz_kubeconfig.c -- libFuzzer harness for kubeconfig files: the input is
 * written to a private temporary file and loaded with kubeconfig_load (the
 * current context and a named one); the base64 decoder gets the raw bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/kubeconfig.h"
#include "lib/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void remove_input(void)
{
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/gpupack-fuzz-kc-%ld.yaml", (long)getpid());
        atexit(remove_input);   /* a run that ends normally leaves nothing in /tmp */
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    static const char *contexts[] = {NULL, "ctx"};
    for (size_t i = 0; i < 2; i++) {
        gp_kube_auth auth;
        memset(&auth, 0, sizeof auth);
        gp_err err = {0};
        if (kubeconfig_load(path, contexts[i], &auth, &err) == 0)
            kube_auth_clear(&auth);
        else if (!err.msg[0])
            abort();
    }
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    size_t len = 0;
    free(gp_base64_decode(s, &len));
    free(s);
    return 0;
}
