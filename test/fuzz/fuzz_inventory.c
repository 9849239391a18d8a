/* fuzz_inventory.c -- libFuzzer harness for node inventories: a Node (JSON)
 * through inventory_decode (gpupack, HAMi, GFD and aliyun sources); what
 * decodes must stay within the per-node bounds. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "model/inventory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *node = json_loadb((const char *)data, size, 0, NULL);
    if (!node)
        return 0;
    static const int64_t units[] = {1024, 1};
    for (size_t u = 0; u < 2; u++) {
        gp_inventory inv;
        gp_err err = {0};
        if (inventory_decode(node, units[u], &inv, &err) < 0) {
            if (!err.msg[0])
                abort();
            continue;
        }
        if (inv.n < 0 || inv.n > GP_MAX_GPUS_PER_NODE)
            abort();
        for (int i = 0; i < inv.n; i++)
            if (inv.gpus[i].mem_total < 0)
                abort();
    }
    (void)inventory_node_name(node);
    json_decref(node);
    return 0;
}
