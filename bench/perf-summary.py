#!/usr/bin/env python3
"""perf-summary.py PERF_DATA [NAME=PID ...] -- where the CPU went in a whole-machine
`perf record -a -g` profile (bench/scale.sh SCALE_PERF=1).

Threads are folded into their process (NAME=PID names one, else its most frequent thread
name). Prints the samples by process, by process and library, then for each process the
functions that ran (self), the Go packages that ran (self), and for Go processes the share of
samples with a function of interest anywhere on the stack (inclusive: the extender client,
TLS handshakes, JSON, watch fan-out, garbage collection), and for kube-scheduler the
scheduler plugin innermost on the stack (inclusive: NodeResourcesFit's Filter with what it
calls, and so on). Go binaries stripped of their
symbol table are resolved through .gopclntab, which every Go binary keeps for its own stack
traces. Percentages are of all samples of the machine, idle included."""
import bisect, collections, re, struct, subprocess, sys

INTEREST = [
    ("extender calls (HTTPExtender)", "HTTPExtender"),
    ("TLS handshakes (crypto/tls handshake)", "crypto/tls.(*Conn).handshakeContext"),
    ("TLS records (crypto/tls read/write)", "crypto/tls.(*Conn).Read|crypto/tls.(*Conn).Write"),
    ("encoding/json", "encoding/json."),
    ("protobuf (Marshal/Unmarshal)", ").Unmarshal|).Marshal"),
    ("watch fan-out (cacher, watch encoding)", "cacher.|watch.(*|watchEncoder|serveWatch"),
    ("HTTP server (net/http serve)", "net/http.(*conn).serve"),
    ("HTTP/2 (golang.org/x/net/http2)", "x/net/http2."),
    ("etcd client / storage", "etcd3.|go.etcd.io/etcd/client"),
    ("garbage collection (gcBgMarkWorker, gcAssist)", "runtime.gcBgMarkWorker|runtime.gcAssistAlloc"),
    ("scheduling cycle (schedulingCycle)", "schedulingCycle"),
    ("binding cycle (bindingCycle)", "bindingCycle"),
    ("framework Filter plugins (findNodesThatPassFilters)", "findNodesThatPassFilters"),
    ("framework Score plugins (prioritizeNodes)", "prioritizeNodes"),
    ("extended resource names checked (IsExtendedResourceName)", "IsExtendedResourceName"),
    ("scheduler queue / event handlers", "internal/queue.|eventhandlers"),
]


def gopclntab(path):
    """(entries, names) of a Go binary's functions, from .gopclntab (Go 1.18+ formats)."""
    secs = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True).stdout
    off = size = text = load = None
    for line in secs.splitlines():
        if "]" not in line:
            continue
        f = line.split("]", 1)[1].split()
        if len(f) > 4 and f[0] == ".gopclntab":
            off, size = int(f[3], 16), int(f[4], 16)
        elif len(f) > 4 and f[0] == ".text":
            text = int(f[2], 16)
            load = text - int(f[3], 16)   # perf prints addresses relative to the file
    if off is None:
        return None
    with open(path, "rb") as fh:
        fh.seek(off)
        d = fh.read(size)
    if struct.unpack_from("<I", d, 0)[0] not in (0xFFFFFFF0, 0xFFFFFFF1) or d[7] != 8:
        return None
    nfunc = struct.unpack_from("<Q", d, 8)[0]
    start, fnoff, pcln = (struct.unpack_from("<Q", d, 8 + k * 8)[0] for k in (2, 3, 7))
    start = start or text   # Go 1.20+: left for the loader to relocate; the .text start
    entries, names = [], []
    for i in range(nfunc):
        e, fo = struct.unpack_from("<II", d, pcln + 8 * i)
        s = fnoff + struct.unpack_from("<i", d, pcln + fo + 4)[0]
        names.append(d[s:d.index(b"\0", s)].decode("utf-8", "replace"))
        entries.append(start + e)
    return entries, names, load


def main():
    data, names = sys.argv[1], {}
    for a in sys.argv[2:]:
        n, _, p = a.partition("=")
        if p.isdigit():
            names[int(p)] = n
    proc = subprocess.Popen(["perf", "script", "-i", data, "-F", "comm,pid,tid,ip,sym,dso"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    head = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s*$")
    frame = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")
    tables, go = {}, set()

    def resolve(ip, sym, dso):
        if sym != "[unknown]" or dso.startswith("["):
            return sym
        if dso not in tables:
            try:
                tables[dso] = gopclntab(dso)
            except OSError:
                tables[dso] = None
        t = tables[dso]
        if not t:
            return sym
        go.add(dso)
        i = bisect.bisect_right(t[0], ip + t[2]) - 1
        return t[1][i] if i >= 0 else sym

    total = 0
    by_pid, comms = collections.Counter(), {}
    by_dso, by_sym, by_pkg, incl, plug = (collections.Counter() for _ in range(5))
    cur, stack = None, []

    def flush():
        if not cur or not stack:
            return
        pid = cur
        sym, dso = stack[0]
        base = dso.rsplit("/", 1)[-1]
        by_dso[(pid, base)] += 1
        by_sym[(pid, base, sym)] += 1
        if dso in go:
            pkg = re.sub(r"\.[^/]*$", "", sym.split("(")[0].rstrip(".")) if "." in sym else sym
            by_pkg[(pid, pkg)] += 1
        seen = set()
        for label, pat in INTEREST:
            alts = pat.split("|")
            if any(a in s for s, _ in stack for a in alts):
                seen.add(label)
        for label in seen:
            incl[(pid, label)] += 1
        # the innermost scheduler plugin on the stack, e.g. "noderesources.fitsRequest"
        p = next((s for s, _ in stack if "/scheduler/framework/plugins/" in s), None)
        if p:
            short = p.rsplit("/", 1)[-1]
            plug[(pid, re.sub(r"\.func\d+(\.\d+)*$", "", short))] += 1

    for line in proc.stdout:
        m = head.match(line)
        if m:
            flush()
            cur, stack = int(m.group(2)), []
            total += 1
            by_pid[cur] += 1
            comms.setdefault(cur, collections.Counter())[m.group(1).strip()] += 1
            continue
        m = frame.match(line)
        if m and cur is not None:
            stack.append((resolve(int(m.group(1), 16), m.group(2), m.group(3)), m.group(3)))
    flush()
    if not total:
        sys.exit("perf-summary.py: no samples in " + data)

    def name(pid):
        return "idle" if pid == 0 else names.get(pid) or comms[pid].most_common(1)[0][0]

    def pct(n):
        return f"{100.0 * n / total:6.2f} %"
    print(f"{total} samples (all CPUs, idle included); by process:")
    for pid, n in by_pid.most_common():
        if 100.0 * n / total >= 0.3:
            print(f"  {pct(n)}  {name(pid)}")
    print("\nby process and library (>= 0.5 %):")
    for (pid, dso), n in by_dso.most_common():
        if pid and 100.0 * n / total >= 0.5:
            print(f"  {pct(n)}  {name(pid):16s} {dso}")
    shown = [p for p, _ in by_pid.most_common() if p and (p in names or 100.0 * by_pid[p] / total >= 3)]
    for pid in shown:
        print(f"\n## {name(pid)} ({pct(by_pid[pid]).strip()} of all samples)")
        rows = [(n, lbl) for (p, lbl), n in incl.items() if p == pid]
        if rows:
            print("on the stack (inclusive; a sample may count in several rows):")
            for n, lbl in sorted(rows, reverse=True):
                print(f"  {pct(n)}  {lbl}")
        rows = [(n, f) for (p, f), n in plug.items() if p == pid]
        if rows:
            print("scheduler plugins (innermost on the stack, inclusive):")
            for n, f in sorted(rows, reverse=True)[:12]:
                print(f"  {pct(n)}  {f[:100]}")
        rows = [(n, pkg) for (p, pkg), n in by_pkg.items() if p == pid]
        if rows:
            print("Go packages (self):")
            for n, pkg in sorted(rows, reverse=True)[:20]:
                print(f"  {pct(n)}  {pkg[:100]}")
        print("functions (self):")
        rows = [(n, dso, sym) for (p, dso, sym), n in by_sym.items() if p == pid]
        for n, dso, sym in sorted(rows, reverse=True)[:25]:
            print(f"  {pct(n)}  {dso[:22]:22s} {sym[:100]}")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        pass
