/* driver.c -- `gpupack-sim simulate ...` for bench runs until main.c wires
 * `gpupack simulate` (it calls the same sim_main). */
#include "sim/sim.h"

int main(int argc, char **argv)
{
    return sim_main(argc - 1, argv + 1);
}
