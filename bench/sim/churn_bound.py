#!/usr/bin/env python3
"""churn_bound.py POD_LIST.csv [...] -- the highest GPU allocation that any scheduler can hold
in the steady state of `gpupack simulate --churn` on a trace (docs/simulator.md, "What churn
can reach").

Why there is such a ceiling: under --churn every pod leaves after a lifetime drawn from one
exponential law, whatever its shape, and pods that wait never give up. A shape that is started
less often than it arrives piles up among the waiting pods, whose GPU request counts in the
offered load, until the waiting pods crowd out the running ones. So in a steady state every
shape starts as often as it arrives, and by Little's law the running pods are the trace's mix.
Their GPU request is then fixed, and so is the least number of GPUs they can fill: whole-GPU
pods take their GPUs whole, and shares of one GPU (num_gpu 1, gpu_milli < 1000) need at least
as many GPUs as a lower bound of one-dimensional bin packing of their sizes says (Martello and
Toth's L2, over every threshold K). The ceiling is the request over those GPUs. CPU, memory,
GPU memory and GPU models are left out: each can only lower it. Moves do not raise it either:
they change where pods run, not which.

Prints one line per trace: pods, whole-GPU demand and share demand (in GPUs), the least GPUs
the shares need (L2) and the GPUs a first-fit-decreasing packing of them uses (a packing that
exists), then the ceiling and the allocation that packing would give, in percent of the GPUs in
use."""
import csv, math, sys


def l2_bins(sizes, cap=1000):
    """Martello-Toth L2 lower bound on the bins that items of these sizes need."""
    best = math.ceil(sum(sizes) / cap)
    for k in sorted({0} | {s for s in sizes if s <= cap // 2}):
        j1 = [s for s in sizes if s > cap - k]
        j2 = [s for s in sizes if cap // 2 < s <= cap - k]
        j3 = [s for s in sizes if k <= s <= cap // 2]
        room = len(j2) * cap - sum(j2)
        extra = max(0, math.ceil((sum(j3) - room) / cap))
        best = max(best, len(j1) + len(j2) + extra)
    return best


def ffd_bins(sizes, cap=1000):
    """GPUs that first-fit decreasing fills with these shares: a packing that exists, so the
    least number lies between l2_bins and this."""
    rooms = []
    for s in sorted(sizes, reverse=True):
        for i, r in enumerate(rooms):
            if r >= s:
                rooms[i] -= s
                break
        else:
            rooms.append(cap - s)
    return len(rooms)


def ceiling(path):
    whole = 0
    shares = []
    pods = 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            pods += 1
            n, m = int(row["num_gpu"]), int(row["gpu_milli"])
            if n == 0 or m == 0:
                continue
            if n == 1 and m < 1000:
                shares.append(m)
            else:
                whole += n * m
    bins, packed = l2_bins(shares), ffd_bins(shares)
    demand = whole + sum(shares)
    return (pods, whole / 1000, sum(shares) / 1000, bins, packed,
            100 * demand / (whole + 1000 * bins), 100 * demand / (whole + 1000 * packed))


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__.split("\n\n")[0] + "\n")
        return 2
    print("trace pods whole_gpus share_gpus least_gpus_for_shares ffd_gpus_for_shares ceiling_pct ffd_pct")
    for path in argv[1:]:
        pods, whole, share, bins, packed, pct, ffd = ceiling(path)
        print(f"{path} {pods} {whole:.1f} {share:.1f} {bins} {packed} {pct:.2f} {ffd:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
