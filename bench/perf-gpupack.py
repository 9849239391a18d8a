#!/usr/bin/env python3
"""perf-gpupack.py PERF_DATA FREQ PODS [STAT_FILE] -- where gpupack's own CPU went, by thread
and by stage of the request path, from `perf record --call-graph dwarf -F FREQ -p PID`
(bench/scale.sh SCALE_PERF=gpupack).

gpupack is built without frame pointers; dwarf call graphs unwind it, libc and the TLS and
HTTP libraries alike, so a sample counts in the first stage (in the order below) whose
function is anywhere on its stack: "filter: evaluate the nodes" holds everything the
evaluation called, the kernel included. CPU milliseconds per pod are samples / FREQ / PODS.
With STAT_FILE (`perf stat --per-thread -e raw_syscalls:sys_enter,context-switches`), system
calls and context switches per pod by thread name follow."""
import collections, re, subprocess, sys

# (thread name, stage, functions: the first on a sample's stack decides)
STAGES = {
    "verbs-conn": [
        ("TLS handshake", "gnutls_handshake"),
        ("filter: decode the request", "verb_args_decode"),
        ("filter: the pod's request and policy", "pod_decode|extender_pod_request"),
        ("filter: remember the pod for bind", "remember"),
        ("filter: evaluate the nodes", "evaluate|eval_part|eval_nodes"),
        ("filter: the rest (answer, reservation)", "filter_run"),
        ("bind: decide, annotate, hand to a bind thread", "extender_bind_start"),
        ("other verbs and routes", "srvreq_end"),
        ("receive (TLS records, HTTP/2 frames)", "tls_recv|nghttp2_session_mem_recv|read_some"),
        ("send (HTTP/2 frames, TLS records)", "flush|h2_send_all"),
        ("wait for the connection (poll)", "__GI___poll|__poll"),
    ],
    "bind threads": [
        ("the Binding's HTTP request (libcurl, TLS, kernel)", "kube_request"),
        ("the log line", "log_bound"),
        ("the answer back to the connection's thread", "bind_answered"),
        ("the store (claim, outcome)", "cluster_bind_claim|cluster_bind_outcome"),
        ("the rest of the bind", "bindpipe_run|bind_run"),
        ("wait for work", "workq_worker|__pthread_cond_wait_common|___pthread_cond_timedwait64"),
    ],
    "w-pods": [
        ("decode events", "watchstream_event_parse_kept|watchstream_event_parse"),
        ("apply to the map", "pods_apply"),
        ("read the stream (libcurl, TLS, kernel)", "kube_stream"),
    ],
}
KERNEL = [("in a system call", "entry_SYSCALL_64_after_hwframe|entry_SYSCALL_64"),
          ("switching threads (schedule)", "__schedule")]


def samples(data):
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"],
                         capture_output=True, text=True).stdout
    cur = None
    for line in out.splitlines():
        if not line.strip():
            if cur:
                yield cur
            cur = None
        elif not line[0].isspace():
            cur = (line.strip(), [])
        elif cur is not None:
            parts = line.strip().split(" ", 1)
            sym = parts[1].rsplit(" (", 1)[0] if len(parts) > 1 else ""
            cur[1].append(sym)
    if cur:
        yield cur


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    data, freq, pods = sys.argv[1], float(sys.argv[2]), max(1, int(sys.argv[3]))
    stages = {t: [(n, re.compile(r"^(?:%s)$" % f)) for n, f in s] for t, s in STAGES.items()}
    kernel = [(n, re.compile(r"^(?:%s)$" % f)) for n, f in KERNEL]
    by_thread = collections.Counter()
    by_stage = collections.defaultdict(collections.Counter)
    by_kernel = collections.defaultdict(collections.Counter)
    total = 0
    for comm, stack in samples(data):
        total += 1
        by_thread[comm] += 1
        for name, rx in stages.get(comm, []):
            if any(rx.match(f) for f in stack):
                by_stage[comm][name] += 1
                break
        else:
            by_stage[comm]["(elsewhere)"] += 1
        for name, rx in kernel:
            if any(rx.match(f) for f in stack):
                by_kernel[comm][name] += 1
    if not total:
        sys.exit("perf-gpupack.py: no samples in %s" % data)
    ms = lambda n: n / freq / pods * 1e3
    print(f"{total} samples at {freq:g} Hz = {total / freq:.2f} s of gpupack's CPU, "
          f"{ms(total):.3f} ms per pod over {pods} pods")
    print("\n| thread | share | ms per pod | in a system call | switching threads |")
    print("|---|---|---|---|---|")
    for t, n in by_thread.most_common():
        k = by_kernel[t]
        print(f"| {t} | {100 * n / total:.1f} % | {ms(n):.3f} | "
              f"{100 * k['in a system call'] / total:.1f} % | "
              f"{100 * k['switching threads (schedule)'] / total:.1f} % |")
    for t in STAGES:
        if not by_thread[t]:
            continue
        print(f"\n{t}, by stage (share of all gpupack's samples, ms per pod):")
        for name, n in by_stage[t].most_common():
            print(f"  {100 * n / total:5.1f} %  {ms(n):.3f}  {name}")
    if len(sys.argv) > 4:
        try:
            stat = open(sys.argv[4]).read().splitlines()
        except OSError as e:
            sys.exit(f"\nno system call counts: {e}")
        calls, switches = collections.Counter(), collections.Counter()
        for line in stat:
            m = re.match(r"\s*(.+)-\d+\s+([\d,]+)\s+(\S+)", line)
            if not m:
                continue
            n = int(m.group(2).replace(",", ""))
            if m.group(3) == "raw_syscalls:sys_enter":
                calls[m.group(1).strip()] += n
            elif m.group(3) == "context-switches":
                switches[m.group(1).strip()] += n
        print("\n| thread | system calls per pod | context switches per pod |")
        print("|---|---|---|")
        for t, n in calls.most_common():
            print(f"| {t} | {n / pods:.2f} | {switches[t] / pods:.2f} |")
        print(f"| all | {sum(calls.values()) / pods:.2f} | {sum(switches.values()) / pods:.2f} |")


if __name__ == "__main__":
    main()
