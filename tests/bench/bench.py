#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""toolsd benchmark suite (issue 7). Standard library only, plus a small C
helper (spawn.c, compiled on the fly with cc) for the direct-bwrap baseline.

Every figure is measured side by side with its baseline in one run and
reported as median and p99 and as a ratio to the baseline:

  sequential   run_shell `true` through toolsd vs. the same bwrap command
               line launched directly (C, fork+exec like toolsd's supervisor)
               vs. Python subprocess.run of it; plus the in-process parts:
               echo round trip, OpenSession/CloseSession, connect+Status
  throughput   1, 2, 8, 32 concurrent clients vs. as many parallel direct
               launches: calls/s, host CPU per call, daemon CPU per call
  cancel       Cancel / hang-up / timeout → every process of the call dead
  scale        daemon RSS with 0, 1,000, 10,000 idle sessions; 1,000
               concurrent connections; 1 GiB streamed through one call
  fairness     a client's latency alone vs. while another floods calls

It starts its own private toolsd (the build's binary) with its own config
and a temporary profile directory holding the shipped profiles plus a
`bench` profile (`true`, `python3 -c`, `cat <file>`). The exact bwrap argv
of a call is captured once with strace and reused for the baselines, so
they run the very same sandbox. Run as the user who owns the build:

  /usr/bin/python3 tests/bench/bench.py --build /tmp/build-bench [--quick]

It writes a Markdown report to stdout and the raw numbers as JSON
(--json). Processes it starts are stopped by their pid.
"""

import argparse
import json
import os
import platform
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "client", "python"))

import toolsd  # noqa: E402

SKILL = {"name": "bench", "tools": ["run_shell", "echo"], "profile": "bench"}
BENCH_PROFILE = """# Shapes for tests/bench/bench.py only.
profile bench
allow true
allow python3 -c <arg> <args>...
allow cat <file>
"""
TRUE = {"argv": ["true"]}
SLEEP = ["python3", "-c", "import time; time.sleep(1000)"]
BUSY = ["python3", "-c", "while True: pass"]
BUSY_NOTERM = ["python3", "-c", "import signal; signal.signal(15, signal.SIG_IGN)\nwhile True: pass"]
FORKER = ["python3", "-c", "import os, time\nif os.fork() == 0: os.setsid()\ntime.sleep(1000)"]
GIB_CODE = "import sys\nb = b'x' * 1048576\nw = sys.stdout.buffer.write\nfor _ in range(1024): w(b)"


# ---- statistics -------------------------------------------------------------

def pct(xs, p):
    """Nearest-rank percentile of xs (p in 0..100)."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def summary(xs, scale=1.0):
    return {"n": len(xs), "median": pct(xs, 50) * scale, "p99": pct(xs, 99) * scale,
            "max": max(xs) * scale if xs else float("nan"), "min": min(xs) * scale if xs else float("nan")}


def ratio(a, b):
    return a / b if b else float("nan")


# ---- /proc ------------------------------------------------------------------

def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def proc_cpu(pid):
    """(self, reaped children) CPU seconds of pid."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tck, (int(fields[13]) + int(fields[14])) / tck


def host_busy():
    """Busy CPU seconds of the whole host (all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:7]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")   # steal is the hypervisor's


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def kids_of(pid):
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def is_dead(pid):
    """Gone, or a zombie: it runs no more code."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def spin(cond, timeout=30.0, step=0.0002):
    deadline = time.perf_counter() + timeout
    while not cond():
        if time.perf_counter() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(step)


# ---- the daemon -------------------------------------------------------------

class Daemon:
    def __init__(self, build, directory, name="d"):
        self.dir = os.path.join(directory, name)
        os.mkdir(self.dir, 0o700)
        self.sock = os.path.join(self.dir, "sock")
        self.conf = os.path.join(self.dir, "toolsd.conf")
        prof = os.path.join(directory, "profiles.d")
        if not os.path.isdir(prof):
            os.mkdir(prof)
            for f in ("passive.conf", "full.conf"):
                shutil.copy(os.path.join(SRC, "etc", "toolsd", "profiles.d", f), prof)
            with open(os.path.join(prof, "bench.conf"), "w") as f:
                f.write(BENCH_PROFILE)
        with open(self.conf, "w") as f:
            f.write(f"[Daemon]\nProfilesDirectory={prof}\n"
                    "[Limits]\nMaxSessionsPerUser=20000\nMaxConnections=4096\nMaxConnectionsPerUser=4096\n"
                    "[Calls]\nMaxOutputSize=2G\n")
        self.binary = os.path.join(build, "daemon", "toolsd")
        self.proc = None

    def start(self):
        npath = os.path.join(self.dir, "notify")
        ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        ns.bind(npath)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("LISTEN_", "MODULATIO_", "TOOLSD_SOCKET", "NOTIFY_SOCKET"))}
        env["NOTIFY_SOCKET"] = npath
        self.log = open(os.path.join(self.dir, "toolsd.log"), "ab")
        self.proc = subprocess.Popen([self.binary, "--listen", self.sock, "--config", self.conf], env=env,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        ns.settimeout(30)
        try:
            while b"READY=1" not in ns.recv(4096).split(b"\n"):
                pass
        finally:
            ns.close()
        self.pid = self.proc.pid
        return self

    def client(self):
        return toolsd.Client(self.sock)

    def session(self, client=None):
        c = client or self.client()
        return c.open_session(SKILL, self.root, sandbox="required")

    def rss(self):
        return proc_status(self.pid, "VmRSS")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()
        self.proc = None


def strace_unescape(s):
    def rep(m):
        e = m.group(1)
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0].isdigit():
            return chr(int(e, 8))
        return {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f"}.get(e, e)
    return re.sub(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)", rep, s)


def capture_bwrap_argv(d, tmp):
    """The argv toolsd executes for run_shell `true`, from strace."""
    out = os.path.join(tmp, "strace.txt")
    st = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=execve", "-s", "65536", "-o", out,
                           "-p", str(d.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        spin(lambda: proc_status(d.pid, "TracerPid") // 1024 == st.pid, step=0.001)
        with d.client() as c, d.session(c) as s:
            r = s.call("run_shell", TRUE)
            assert r["outcome"] == "ok", r
    finally:
        st.terminate()
        st.wait()
    with open(out) as f:
        for line in f:
            m = re.search(r'execve\("([^"]*bwrap)", \[(.*?)\], ', line)
            if m:
                argv = [strace_unescape(a) for a in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2))]
                if "--seccomp" in argv:
                    capture_seccomp(d, tmp)
                return argv
    raise RuntimeError("no bwrap execve in strace output")


def capture_seccomp(d, tmp):
    """The seccomp program toolsd hands bwrap (--seccomp FD: a memfd it
    writes per call), so the direct baselines load the same filter. Sets
    BENCH_SECCOMP for spawn.c and the subprocess baseline."""
    out = os.path.join(tmp, "strace-seccomp.txt")
    st = subprocess.Popen(["strace", "-qq", "-xx", "-s", "1000000", "-e", "trace=memfd_create,write",
                           "-o", out, "-p", str(d.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        spin(lambda: proc_status(d.pid, "TracerPid") // 1024 == st.pid, step=0.001)
        with d.client() as c, d.session(c) as s:
            assert s.call("run_shell", TRUE)["outcome"] == "ok"
    finally:
        st.terminate()
        st.wait()
    fd = None
    with open(out) as f:
        for line in f:
            m = re.match(r'memfd_create\(".*?", .*\) = (\d+)', line)
            if m:
                fd = m.group(1)
                continue
            m = re.match(r'write\((\d+), "((?:\\x[0-9a-f]{2})*)", \d+\) = \d+', line)
            if m and m.group(1) == fd:
                path = os.path.join(tmp, "seccomp.bpf")
                with open(path, "wb") as g:
                    g.write(bytes.fromhex(m.group(2).replace("\\x", "")))
                os.environ["BENCH_SECCOMP"] = path
                return
    raise RuntimeError("no seccomp program in strace output")


# ---- baselines --------------------------------------------------------------

def variant_no_shim(argv):
    """The same sandbox running the command without toolsd-exec: what the
    shim's exec and extra fork cost."""
    first = argv.index("--")                 # bwrap's own end of options
    shim = argv[first + 1]
    out = []
    k = 0
    while k < first:
        if argv[k] == "--ro-bind" and argv[k + 1] == shim:
            k += 3
            continue
        out.append(argv[k])
        k += 1
    cmd = argv[first + 1:]
    return out + ["--"] + cmd[cmd.index("--") + 1:]


def variant_minimal(argv):
    """No shim and none of the /etc --ro-bind-try binds: what the per-bind
    work in bwrap costs."""
    v = variant_no_shim(argv)
    out, k = [], 0
    while k < len(v):
        if v[k] == "--ro-bind-try" and v[k + 1].startswith("/etc"):
            k += 3
            continue
        out.append(v[k])
        k += 1
    return out


class Spawner:
    """The C direct-bwrap launcher (spawn.c), one persistent process."""

    def __init__(self, exe, root, argv):
        self.p = subprocess.Popen([exe, root, "--"] + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().split()

    def one(self):
        ns, nbytes = self.cmd("one")
        if int(nbytes) < 0:
            raise RuntimeError("direct bwrap launch failed")
        return int(ns) / 1e9, int(nbytes)

    def par(self, n, sec):
        return int(self.cmd(f"par {n} {sec}")[0])

    def close(self):
        self.p.stdin.close()
        self.p.wait()


class PySub:
    """A persistent Python process running subprocess.run of the argv."""

    def __init__(self, root, argv):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--_pysub", root, json.dumps(argv)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def one(self):
        self.p.stdin.write("one\n")
        self.p.stdin.flush()
        return int(self.p.stdout.readline()) / 1e9

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def move_fd(fd, target):
    if fd != target:
        os.dup2(fd, target, inheritable=False)
        os.close(fd)


def pysub_main(root, argv_json):
    argv = json.loads(argv_json)
    # Out of the way first, so 3, 4 and 5 are free, then into place.
    hi = []
    for i, path in enumerate((root, os.path.join(root, "tool_calls"))):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        hi.append(os.dup2(fd, 200 + i, inheritable=False))
        os.close(fd)
    for fd in (3, 4, 5, 6):
        try:
            os.fstat(fd)
            raise SystemExit(f"fd {fd} is busy")
        except OSError:
            pass
    move_fd(hi[0], 3)
    move_fd(hi[1], 4)
    env = {"PATH": "/usr/bin:/bin"}
    status_at = int(argv[argv.index("--status-fd") + 1]) if "--status-fd" in argv else 5
    seccomp_at = int(argv[argv.index("--seccomp") + 1]) if "--seccomp" in argv else None
    for line in sys.stdin:
        t = time.perf_counter_ns()
        r, w = os.pipe()
        move_fd(r, 210)
        r = 210
        move_fd(w, status_at)
        fds = [3, 4, status_at]
        if seccomp_at is not None:
            move_fd(os.open(os.environ["BENCH_SECCOMP"], os.O_RDONLY | os.O_CLOEXEC), seccomp_at)
            fds.append(seccomp_at)
        p = subprocess.run(argv, pass_fds=fds, stdin=subprocess.DEVNULL, capture_output=True, cwd=root,
                           env=env)
        os.close(status_at)
        if seccomp_at is not None:
            os.close(seccomp_at)
        os.read(r, 256)
        os.close(r)
        dt = time.perf_counter_ns() - t
        if p.returncode != 0:
            raise SystemExit(f"subprocess baseline failed: {p.returncode} {p.stderr!r}")
        print(dt, flush=True)


# ---- load-generating clients (separate processes) ---------------------------

def worker_main(sockpath, root, kind, conns):
    """Opens conns connections with a session each, prints "ready", waits for
    "go SEC" on stdin, then calls back to back (run_shell true, or echo
    pipelined 32 deep) until SEC pass or "stop" arrives."""
    conns = int(conns)
    stop = threading.Event()
    go = threading.Event()
    deadline = [0.0]
    counts = [0] * conns
    sessions = []
    for _ in range(conns):
        c = toolsd.Client(sockpath)
        sessions.append(c.open_session(SKILL, root, sandbox="required"))

    def loop(i):
        s = sessions[i]
        go.wait()
        if kind == "echo":
            c = s.client
            msg = json.dumps({"method": "io.toolsd.Call", "parameters": {
                "session": s.id, "tool": "echo", "arguments": {"text": "x"}}}).encode() + b"\0"
            c._sock.sendall(msg * 32)
            while not stop.is_set() and time.monotonic() < deadline[0]:
                c._receive()
                counts[i] += 1
                c._sock.sendall(msg)
            return
        while not stop.is_set() and time.monotonic() < deadline[0]:
            r = s.call("run_shell", TRUE)
            if r["outcome"] != "ok":
                raise RuntimeError(r)
            counts[i] += 1

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(conns)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    line = sys.stdin.readline().split()
    deadline[0] = time.monotonic() + float(line[1])
    go.set()

    def watch():
        sys.stdin.readline()
        stop.set()
    threading.Thread(target=watch, daemon=True).start()
    for t in threads:
        t.join()
    cpu = os.times()
    print(json.dumps({"calls": sum(counts), "cpu": cpu.user + cpu.system}), flush=True)
    os._exit(0)


class Workers:
    def __init__(self, d, n, kind="true", conns=1):
        self.ps = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--_worker", d.sock, d.root,
                                     kind, str(conns)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                    bufsize=1) for _ in range(n)]
        for p in self.ps:
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("worker failed to start")

    def go(self, sec):
        for p in self.ps:
            p.stdin.write(f"go {sec}\n")
            p.stdin.flush()

    def finish(self, stop=False):
        res = []
        for p in self.ps:
            if stop:
                p.stdin.write("stop\n")
                p.stdin.flush()
            res.append(json.loads(p.stdout.readline()))
            p.stdin.close()
            p.wait()
        return {"calls": sum(r["calls"] for r in res), "cpu": sum(r["cpu"] for r in res)}


# ---- sections ---------------------------------------------------------------

def bench_sequential(d, spawner, pysub, extra, n, perf_out=None):
    warm = max(5, n // 20)
    c = d.client()
    s = d.session(c)
    t_toolsd, t_direct, t_py = [], [], []
    t_extra = {k: [] for k in extra}
    perf = None
    if perf_out:
        perf = subprocess.Popen(["perf", "record", "-g", "-o", perf_out, "-p", str(d.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # perf has no readiness signal; only the profile waits for it
    cpu0 = proc_cpu(d.pid)
    for i in range(warm + n):
        t = time.perf_counter()
        r = s.call("run_shell", TRUE)
        dt = time.perf_counter() - t
        if r["outcome"] != "ok":
            raise RuntimeError(r)
        dd, _ = spawner.one()
        dp = pysub.one()
        de = {k: sp.one()[0] for k, sp in extra.items()}
        if i >= warm:
            for k in extra:
                t_extra[k].append(de[k])
            t_toolsd.append(dt)
            t_direct.append(dd)
            t_py.append(dp)
    cpu1 = proc_cpu(d.pid)
    if perf:
        perf.send_signal(2)
        perf.wait()
    total = warm + n
    out = {"toolsd": summary(t_toolsd, 1e3), "direct_bwrap": summary(t_direct, 1e3),
           "python_subprocess": summary(t_py, 1e3),
           **{k: summary(v, 1e3) for k, v in t_extra.items()},
           "daemon_cpu_ms_per_call": (cpu1[0] - cpu0[0]) * 1e3 / total,
           "sandbox_cpu_ms_per_call": (cpu1[1] - cpu0[1]) * 1e3 / total}

    # The in-process parts.
    n_echo = n * 5
    e = []
    for i in range(n_echo + warm):
        t = time.perf_counter()
        s.call("echo", {"text": "x"})
        if i >= warm:
            e.append(time.perf_counter() - t)
    out["echo"] = summary(e, 1e3)
    o, cl = [], []
    for i in range(n + warm):
        t = time.perf_counter()
        s2 = d.session(c)
        t1 = time.perf_counter()
        s2.close()
        t2 = time.perf_counter()
        if i >= warm:
            o.append(t1 - t)
            cl.append(t2 - t1)
    out["open_session"] = summary(o, 1e3)
    out["close_session"] = summary(cl, 1e3)
    cs = []
    for i in range(n + warm):
        t = time.perf_counter()
        with d.client() as c2:
            c2.status()
        if i >= warm:
            cs.append(time.perf_counter() - t)
    out["connect_status"] = summary(cs, 1e3)
    s.close()
    c.close()
    return out


def bench_ab(da, db, spawner, n):
    """run_shell true through two builds and direct bwrap, interleaved
    (A, B, direct, ...): the before/after of a change in one run."""
    warm = max(5, n // 20)
    ca, cb = da.client(), db.client()
    sa, sb = da.session(ca), db.session(cb)
    t = {"a": [], "b": [], "direct": []}
    cpu0 = {"a": proc_cpu(da.pid), "b": proc_cpu(db.pid)}
    for i in range(warm + n):
        order = [("a", sa), ("b", sb)] if i % 2 == 0 else [("b", sb), ("a", sa)]
        got = {}
        for k, s in order:
            x = time.perf_counter()
            r = s.call("run_shell", TRUE)
            got[k] = time.perf_counter() - x
            if r["outcome"] != "ok":
                raise RuntimeError(r)
        got["direct"] = spawner.one()[0]
        if i >= warm:
            for k, v in got.items():
                t[k].append(v)
    out = {k: summary(v, 1e3) for k, v in t.items()}
    for k, d in (("a", da), ("b", db)):
        c1 = proc_cpu(d.pid)
        out[k]["daemon_cpu_ms_per_call"] = (c1[0] - cpu0[k][0]) * 1e3 / (warm + n)
    for s, c in ((sa, ca), (sb, cb)):
        s.close()
        c.close()
    return out


def bench_throughput(d, spawner, levels, sec):
    rows = []
    for p in levels:
        w = Workers(d, p)
        h0, c0 = host_busy(), proc_cpu(d.pid)
        t0 = time.perf_counter()
        w.go(sec)
        res = w.finish()
        el = time.perf_counter() - t0
        h1, c1 = host_busy(), proc_cpu(d.pid)
        calls = max(res["calls"], 1)
        ts = {"calls_per_s": res["calls"] / el, "host_cpu_ms_per_call": (h1 - h0) * 1e3 / calls,
              "host_cpu_ms_per_call_without_clients": (h1 - h0 - res["cpu"]) * 1e3 / calls,
              "daemon_cpu_ms_per_call": (c1[0] - c0[0]) * 1e3 / calls}
        h0 = host_busy()
        t0 = time.perf_counter()
        n = spawner.par(p, sec)
        el = time.perf_counter() - t0
        h1 = host_busy()
        db = {"calls_per_s": n / el, "host_cpu_ms_per_call": (h1 - h0) * 1e3 / max(n, 1)}
        rows.append({"clients": p, "toolsd": ts, "direct_bwrap": db})
    return rows


def start_call(c, session, argv, timeout_ms=None):
    params = {"session": session.id, "tool": "run_shell", "arguments": {"argv": argv}}
    if timeout_ms:
        params["timeout_ms"] = timeout_ms
    t = time.perf_counter()
    c._send("io.toolsd.Call", params, more=True)
    first, cont, err = c._receive()
    if err or not cont:
        raise RuntimeError(f"call did not start: {err} {first}")
    return t, first["call_id"]


def call_pids(d, n_python):
    """Every process under the daemon, once n_python python3 commands run."""
    found = []

    def ready():
        found[:] = descendants(d.pid)
        return sum(comm(p) == "python3" for p in found) >= n_python
    spin(ready)
    return list(found)


def finish_call(c):
    while True:
        params, cont, err = c._receive()
        if err:
            raise RuntimeError(err)
        if not cont:
            return params["result"]


def bench_cancel(d, n):
    out = {}
    ctl = d.client()
    for name, argv, n_py, how in (("cancel (sleeping command)", SLEEP, 1, "cancel"),
                                  ("cancel (busy command)", BUSY, 1, "cancel"),
                                  ("cancel (fork + setsid)", FORKER, 2, "cancel"),
                                  ("hang-up (sleeping command)", SLEEP, 1, "hangup"),
                                  ("timeout 200 ms (busy)", BUSY, 1, "timeout"),
                                  ("timeout 200 ms (ignores SIGTERM)", BUSY_NOTERM, 1, "timeout")):
        dead, result, n_procs, child_dead = [], [], 0, []
        c = d.client()
        s = d.session(c)
        for _ in range(n):
            if c._sock is None:
                c = d.client()
                s = d.session(c)
            if how == "timeout":
                t_send, call_id = start_call(c, s, argv, 200)
                pids = call_pids(d, n_py)
                t0 = t_send + 0.200
            else:
                _, call_id = start_call(c, s, argv)
                pids = call_pids(d, n_py)
                t0 = time.perf_counter()
                if how == "cancel":
                    ctl.cancel(call_id)
                else:
                    c.close()
            # The daemon signals its direct child (the outer bwrap); the
            # rest die through bwrap's --die-with-parent and the PID
            # namespace. Both times are kept, to tell whose latency it is.
            direct = [p for p in pids if p in kids_of(d.pid)] or pids[:1]
            first = [None]

            def gone():
                if first[0] is None and all(is_dead(p) for p in direct):
                    first[0] = time.perf_counter()
                return all(is_dead(p) for p in pids)
            spin(gone, step=0.0001)
            t1 = time.perf_counter()
            child_dead.append((first[0] or t1) - t0)
            n_procs = max(n_procs, len(pids))
            dead.append(t1 - t0)
            if how != "hangup":
                r = finish_call(c)
                want = "timeout" if how == "timeout" else "cancelled"
                if r["outcome"] != want:
                    raise RuntimeError(f"{name}: outcome {r['outcome']}")
                result.append(time.perf_counter() - t0)
            # The reaper finishes asynchronously; the next round starts clean.
            spin(lambda: not descendants(d.pid), step=0.0005)
        out[name] = {"all_dead": summary(dead, 1e3), "processes": n_procs,
                     "daemon_child_dead": summary(child_dead, 1e3)}
        if result:
            out[name]["result_received"] = summary(result, 1e3)
        c.close()
    ctl.close()
    return out


def bench_sessions(d, counts, n_lat):
    c = d.client()
    s = d.session(c)
    s.close()
    rows = [{"sessions": 0, "rss": d.rss()}]
    opened = []

    def lat():
        s0 = d.session(c)
        e, t = [], []
        for _ in range(n_lat):
            x = time.perf_counter()
            s0.call("echo", {"text": "x"})
            e.append(time.perf_counter() - x)
        for _ in range(max(10, n_lat // 10)):
            x = time.perf_counter()
            s0.call("run_shell", TRUE)
            t.append(time.perf_counter() - x)
        s0.close()
        return summary(e, 1e3), summary(t, 1e3)

    rows[0]["echo"], rows[0]["run_shell_true"] = lat()
    rows[0]["rss"] = d.rss()
    for n in counts:
        t = time.perf_counter()
        k = n - len(opened)
        while len(opened) < n:
            opened.append(c.call("io.toolsd.OpenSession", {"skill": SKILL, "artifacts_root": d.root,
                                                           "sandbox": "required"})["session"])
        el = time.perf_counter() - t
        rss = d.rss()
        row = {"sessions": n, "rss": rss, "bytes_per_session": (rss - rows[0]["rss"]) / n,
               "open_ms_each": el * 1e3 / k}
        row["echo"], row["run_shell_true"] = lat()
        rows.append(row)
    for sid in opened:
        c.call("io.toolsd.CloseSession", {"session": sid})
    rows.append({"sessions": "0 (after closing all)", "rss": d.rss()})
    c.close()
    return rows


def bench_connections(d, n):
    rss0 = d.rss()
    t = time.perf_counter()
    socks = [d.client() for _ in range(n)]
    t_conn = time.perf_counter() - t
    msg = b'{"method":"io.toolsd.Status"}\0'
    t = time.perf_counter()
    for c in socks:
        c._sock.sendall(msg)
    for c in socks:
        params, _, err = c._receive()
        if err:
            raise RuntimeError(err)
    t_all = time.perf_counter() - t
    rss1 = d.rss()
    st = socks[0].status()
    lat = []
    for _ in range(200):
        x = time.perf_counter()
        socks[-1].status()
        lat.append(time.perf_counter() - x)
    for c in socks:
        c.close()
    with d.client() as c:
        spin(lambda: c.status()["connections"] <= 1, step=0.01)
    return {"connections": n, "daemon_counted": st["connections"], "connect_ms_total": t_conn * 1e3,
            "status_all_ms": t_all * 1e3, "rss_before": rss0, "rss_with": rss1,
            "bytes_per_connection": (rss1 - rss0) / n, "status_latency_with_all_open": summary(lat, 1e3),
            "rss_after_close": d.rss()}


def bench_stream(d, spawner_exe, argv_true, tmp):
    cmd = ["python3", "-c", GIB_CODE]
    c = d.client()
    s = d.session(c)
    with open(f"/proc/{d.pid}/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, so the peak is this call's
    rss0 = d.rss()
    peak = [rss0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], d.rss())
            time.sleep(0.02)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    total, chunks, result = 0, 0, None
    cpu0, me0 = proc_cpu(d.pid)[0], os.times()
    t = time.perf_counter()
    for kind, item in s.stream("run_shell", {"argv": cmd}, timeout_ms=600000):
        if kind == "chunk":
            total += len(item["data"])
            chunks += 1
        else:
            result = item
    el = time.perf_counter() - t
    cpu1, me1 = proc_cpu(d.pid)[0], os.times()
    done.set()
    th.join()
    hwm = proc_status(d.pid, "VmHWM")
    rss1 = d.rss()
    s.close()
    c.close()
    for f in os.listdir(os.path.join(d.root, "tool_calls")):
        os.unlink(os.path.join(d.root, "tool_calls", f))
    direct = Spawner(spawner_exe, d.root, argv_true[:-1] + cmd)
    dt, dbytes = direct.one()
    direct.close()
    return {"bytes": total, "chunks": chunks, "outcome": result and result["outcome"], "seconds": el,
            "mib_per_s": total / el / 2**20, "direct_seconds": dt, "direct_mib_per_s": dbytes / dt / 2**20,
            "rss_before": rss0, "rss_after": rss1, "rss_peak_sampled": peak[0], "vm_hwm": hwm,
            "growth": max(hwm, peak[0]) - rss0, "daemon_cpu_s": cpu1 - cpu0,
            "client_cpu_s": me1.user + me1.system - me0.user - me0.system}


def measure_latency(s, n, tool):
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        if tool == "echo":
            s.call("echo", {"text": "x"})
        else:
            r = s.call("run_shell", TRUE)
            if r["outcome"] != "ok":
                raise RuntimeError(r)
        lat.append(time.perf_counter() - t)
    return lat


def bench_fairness(d, n):
    c = d.client()
    s = d.session(c)
    measure_latency(s, 10, "true")
    solo = {"true": summary(measure_latency(s, n, "true"), 1e3), "echo": summary(measure_latency(s, n * 5, "echo"), 1e3)}
    rows = []
    for label, kind, conns in (("run_shell flood, 1 connection", "true", 1),
                               ("run_shell flood, 8 connections", "true", 8),
                               ("echo flood, 32 pipelined", "echo", 1)):
        w = Workers(d, 1, kind, conns)
        w.go(3600)
        under = {"true": summary(measure_latency(s, n, "true"), 1e3),
                 "echo": summary(measure_latency(s, n * 5, "echo"), 1e3)}
        res = w.finish(stop=True)
        rows.append({"flood": label, "flood_calls": res["calls"], "latency": under,
                     "p99_ratio_true": ratio(under["true"]["p99"], solo["true"]["p99"]),
                     "p99_ratio_echo": ratio(under["echo"]["p99"], solo["echo"]["p99"])})
    s.close()
    c.close()
    return {"solo": solo, "floods": rows}


# ---- report -----------------------------------------------------------------

def machine():
    def run(*a):
        try:
            return subprocess.run(a, capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""
    model = ""
    for line in run("lscpu").splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) * 1024
    osr = ""
    try:
        with open("/etc/os-release") as f:
            osr = dict(line.strip().split("=", 1) for line in f if "=" in line).get("PRETTY_NAME", "").strip('"')
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "ram_gib": round(mem / 2**30, 1), "kernel": platform.release(),
            "os": osr, "bwrap": run("bwrap", "--version"), "python": platform.python_version(),
            "commit": run("git", "-C", SRC, "rev-parse", "--short", "HEAD"),
            "commit_dirty": bool(run("git", "-C", SRC, "status", "--porcelain", "--untracked-files=no"))}


def ms(x):
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def mib(b):
    return f"{b / 2**20:.1f} MiB"


def report(R):
    L = []
    m = R["machine"]
    L.append(f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, {m['os']}, kernel {m['kernel']}, "
             f"{m['bwrap']}, Python {m['python']}, toolsd {m['commit']}; mode {R['mode']}")
    L.append("")
    if "sequential" in R:
        q = R["sequential"]
        b = q["direct_bwrap"]
        L += ["### Sequential call latency (ms)", "",
              "| what | n | median | p99 | max | median / direct | p99 / direct |", "|---|---|---|---|---|---|---|"]
        for key, label in (("toolsd", "run_shell `true` through toolsd"), ("direct_bwrap", "same bwrap argv, direct (C fork+exec)"),
                           ("python_subprocess", "same bwrap argv, Python subprocess.run"),
                           ("direct_no_shim", "direct, without toolsd-exec (bwrap runs `true`)"),
                           ("direct_minimal", "direct, without toolsd-exec and /etc binds"),
                           ("echo", "echo (protocol round trip)"), ("open_session", "OpenSession"),
                           ("close_session", "CloseSession"), ("connect_status", "connect + Status + close")):
            if key not in q:
                continue
            x = q[key]
            L.append(f"| {label} | {x['n']} | {ms(x['median'])} | {ms(x['p99'])} | {ms(x['max'])} | "
                     f"{ratio(x['median'], b['median']):.3f} | {ratio(x['p99'], b['p99']):.3f} |")
        L += ["", f"toolsd overhead over direct bwrap: median {ms(q['toolsd']['median'] - b['median'])} ms "
                  f"({100 * (ratio(q['toolsd']['median'], b['median']) - 1):+.1f} %), p99 "
                  f"{ms(q['toolsd']['p99'] - b['p99'])} ms ({100 * (ratio(q['toolsd']['p99'], b['p99']) - 1):+.1f} %). "
                  f"Daemon CPU per call {q['daemon_cpu_ms_per_call']:.3f} ms (self), sandbox tree "
                  f"{q['sandbox_cpu_ms_per_call']:.2f} ms (reaped children).", ""]
    if "throughput" in R:
        L += ["### Throughput", "",
              "| clients | toolsd calls/s | direct calls/s | ratio | toolsd host CPU ms/call (w/o clients) | direct host CPU ms/call | daemon CPU ms/call |",
              "|---|---|---|---|---|---|---|"]
        for r in R["throughput"]:
            t, b = r["toolsd"], r["direct_bwrap"]
            L.append(f"| {r['clients']} | {t['calls_per_s']:.1f} | {b['calls_per_s']:.1f} | "
                     f"{ratio(t['calls_per_s'], b['calls_per_s']):.3f} | {t['host_cpu_ms_per_call']:.2f} "
                     f"({t['host_cpu_ms_per_call_without_clients']:.2f}) | {b['host_cpu_ms_per_call']:.2f} | "
                     f"{t['daemon_cpu_ms_per_call']:.3f} |")
        L.append("")
    if "cancel" in R:
        L += ["### Cancellation and timeout (ms; from Cancel sent / socket closed / deadline to every process of the call dead)", "",
              "| case | n | procs | p50 | p99 | max | outer bwrap dead p50 / p99 | result at client p50 / p99 |",
              "|---|---|---|---|---|---|---|---|"]
        for name, x in R["cancel"].items():
            a = x["all_dead"]
            rr = x.get("result_received")
            cd = x["daemon_child_dead"]
            L.append(f"| {name} | {a['n']} | {x['processes']} | {ms(a['median'])} | {ms(a['p99'])} | {ms(a['max'])} | "
                     f"{ms(cd['median'])} / {ms(cd['p99'])} | " + (f"{ms(rr['median'])} / {ms(rr['p99'])} |" if rr else "— |"))
        L.append("")
    if "sessions" in R:
        L += ["### Idle sessions", "", "| sessions | daemon RSS | bytes/session | OpenSession ms | echo p50 / p99 ms | run_shell true p50 / p99 ms |",
              "|---|---|---|---|---|---|"]
        for r in R["sessions"]:
            bps = f"{r['bytes_per_session']:.0f}" if "bytes_per_session" in r else "—"
            op = f"{r['open_ms_each']:.3f}" if "open_ms_each" in r else "—"
            e = f"{ms(r['echo']['median'])} / {ms(r['echo']['p99'])}" if "echo" in r else "—"
            t = f"{ms(r['run_shell_true']['median'])} / {ms(r['run_shell_true']['p99'])}" if "run_shell_true" in r else "—"
            L.append(f"| {r['sessions']} | {mib(r['rss'])} | {bps} | {op} | {e} | {t} |")
        L.append("")
    if "connections" in R:
        x = R["connections"]
        L += ["### Concurrent connections", "",
              f"{x['connections']} connections (daemon counted {x['daemon_counted']}): connecting all took "
              f"{x['connect_ms_total']:.0f} ms; one Status on each, all sent then all read: {x['status_all_ms']:.0f} ms; "
              f"RSS {mib(x['rss_before'])} → {mib(x['rss_with'])} ({x['bytes_per_connection']:.0f} bytes/connection), "
              f"{mib(x['rss_after_close'])} after closing; Status latency with all open p50 "
              f"{ms(x['status_latency_with_all_open']['median'])} ms, p99 {ms(x['status_latency_with_all_open']['p99'])} ms.", ""]
    if "stream" in R:
        x = R["stream"]
        L += ["### Streaming 1 GiB through one call", "",
              f"{x['bytes']} bytes in {x['chunks']} chunks, outcome {x['outcome']}: {x['seconds']:.2f} s, "
              f"{x['mib_per_s']:.0f} MiB/s through toolsd to the Python client vs {x['direct_mib_per_s']:.0f} MiB/s "
              f"direct (ratio {ratio(x['mib_per_s'], x['direct_mib_per_s']):.3f}). Daemon RSS before "
              f"{mib(x['rss_before'])}, after {mib(x['rss_after'])}, peak {mib(max(x['vm_hwm'], x['rss_peak_sampled']))} "
              f"(growth {mib(x['growth'])}). CPU: daemon {x['daemon_cpu_s']:.2f} s, Python client "
              f"{x['client_cpu_s']:.2f} s, direct reader: the C helper.", ""]
    if "fairness" in R:
        f = R["fairness"]
        L += ["### Fairness (measuring client's latency, ms)", "",
              "| flood | flood calls | run_shell true p50 / p99 | p99 vs solo | echo p50 / p99 | p99 vs solo |",
              "|---|---|---|---|---|---|",
              f"| none (solo) | 0 | {ms(f['solo']['true']['median'])} / {ms(f['solo']['true']['p99'])} | 1.00 | "
              f"{ms(f['solo']['echo']['median'])} / {ms(f['solo']['echo']['p99'])} | 1.00 |"]
        for r in f["floods"]:
            u = r["latency"]
            L.append(f"| {r['flood']} | {r['flood_calls']} | {ms(u['true']['median'])} / {ms(u['true']['p99'])} | "
                     f"{r['p99_ratio_true']:.2f} | {ms(u['echo']['median'])} / {ms(u['echo']['p99'])} | {r['p99_ratio_echo']:.2f} |")
        L.append("")
    L += ["### Targets", "", "| target | measured | met |", "|---|---|---|"]
    for t in R["targets"]:
        L.append(f"| {t[0]} | {t[1]} | {'yes' if t[2] else '**no**'} |")
    return "\n".join(L)


def targets(R):
    T = []
    if "sequential" in R:
        q = R["sequential"]
        om = ratio(q["toolsd"]["median"], q["direct_bwrap"]["median"]) - 1
        op = ratio(q["toolsd"]["p99"], q["direct_bwrap"]["p99"]) - 1
        T.append(("overhead on a sandboxed call ≤ 5 % at the median", f"{100 * om:+.1f} %", om <= 0.05))
        T.append(("overhead on a sandboxed call ≤ 10 % at p99", f"{100 * op:+.1f} %", op <= 0.10))
    if "cancel" in R:
        for name, x in R["cancel"].items():
            p = x["all_dead"]["p99"]
            T.append((f"{name}: all dead ≤ 10 ms p99", f"{ms(p)} ms", p <= 10))
    if "sessions" in R:
        b = max(r.get("bytes_per_session", 0) for r in R["sessions"])
        T.append(("≤ 4 KiB daemon memory per idle session", f"{b:.0f} bytes", b <= 4096))
    if "stream" in R:
        g = R["stream"]["growth"]
        T.append(("1 GiB stream grows the daemon by a fixed buffer only (≤ 16 MiB)", mib(g), g <= 16 * 2**20))
    if "fairness" in R:
        for r in R["fairness"]["floods"]:
            T.append((f"{r['flood']}: other client's run_shell p99 ≤ 2× solo", f"{r['p99_ratio_true']:.2f}×",
                      r["p99_ratio_true"] <= 2))
    return T


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("TOOLSD_BUILD", os.path.join(SRC, "build")))
    ap.add_argument("--quick", action="store_true", help="smaller samples (about 2 minutes)")
    ap.add_argument("--only", default="", help="comma-separated sections: sequential,throughput,cancel,"
                                                "sessions,connections,stream,fairness")
    ap.add_argument("--json", default="bench-results.json", help="where to write the raw results")
    ap.add_argument("--perf", metavar="FILE", help="perf record -g the daemon during the sequential test")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (daemon logs)")
    ap.add_argument("-n", type=int, help="sequential samples (default 300, quick 100)")
    ap.add_argument("--ab", metavar="BUILD", help="sequential run_shell true: --build (A) against this build (B), "
                                                 "interleaved, with direct bwrap; prints the comparison only")
    a = ap.parse_args()

    all_sections = ["sequential", "throughput", "cancel", "sessions", "connections", "stream", "fairness"]
    sections = [x for x in a.only.split(",") if x] or all_sections
    q = a.quick
    n_seq = a.n or (100 if q else 500)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    tmp = tempfile.mkdtemp(prefix="tsb-")
    os.chmod(tmp, 0o700)
    exe = os.path.join(tmp, "bench-spawn")
    subprocess.run(["cc", "-O2", "-Wall", "-o", exe, os.path.join(HERE, "spawn.c")], check=True)
    R = {"machine": machine(), "build": os.path.abspath(a.build), "mode": "quick" if q else "full", "command": " ".join([sys.executable] + sys.argv)}
    daemons = []
    try:
        d = Daemon(a.build, tmp).start()
        daemons.append(d)
        d.root = os.path.join(tmp, "root")
        os.mkdir(d.root, 0o700)
        argv = capture_bwrap_argv(d, tmp)
        R["bwrap_argv"] = argv
        spawner = Spawner(exe, d.root, argv)
        pysub = PySub(d.root, argv)
        extra = {"direct_no_shim": Spawner(exe, d.root, variant_no_shim(argv)),
                 "direct_minimal": Spawner(exe, d.root, variant_minimal(argv))}
        t0 = time.perf_counter()
        if a.ab:
            db = Daemon(a.ab, tmp, "b").start()
            daemons.append(db)
            db.root = d.root
            argv_b = capture_bwrap_argv(db, tmp)
            same = [x.replace(os.path.abspath(a.ab), os.path.abspath(a.build)) for x in argv_b] == argv
            if not same:
                print("note: the two builds run different bwrap command lines", file=sys.stderr)
            R["ab_same_argv"] = same
            R["ab"] = bench_ab(d, db, spawner, n_seq)
            R["ab"]["builds"] = [os.path.abspath(a.build), os.path.abspath(a.ab)]
            print(json.dumps(R["ab"], indent=1))
            return

        def step(name, fn):
            if name in sections:
                print(f"[{time.perf_counter() - t0:6.1f}s] {name}...", file=sys.stderr, flush=True)
                R[name] = fn()

        step("sequential", lambda: bench_sequential(d, spawner, pysub, extra, n_seq, a.perf))
        step("throughput", lambda: bench_throughput(d, spawner, [1, 2, 8, 32], 2 if q else 5))
        step("cancel", lambda: bench_cancel(d, 30 if q else 100))
        if "sessions" in sections or "connections" in sections:
            # A fresh daemon, so RSS is not what earlier sections left.
            d2 = Daemon(a.build, tmp, "scale").start()
            daemons.append(d2)
            d2.root = d.root
            # Each idle session holds two fds in the daemon (root and
            # tool_calls): without CAP_SYS_RESOURCE the fd hard limit may cap
            # the count below 10,000; the report says so.
            top = min(10000, (resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 200) // 2)
            R["sessions_fd_limit"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            step("sessions", lambda: bench_sessions(d2, [1000, top], 200 if q else 1000))
            step("connections", lambda: bench_connections(d2, 1000))
        step("stream", lambda: bench_stream(d, exe, argv, tmp))
        step("fairness", lambda: bench_fairness(d, 50 if q else 200))
        for sp in [spawner, pysub] + list(extra.values()):
            sp.close()
        R["seconds"] = time.perf_counter() - t0
    finally:
        for x in daemons:
            x.stop()
        if a.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", "--one-file-system", tmp], check=False)
    R["targets"] = targets(R)
    with open(a.json, "w") as f:
        json.dump(R, f, indent=1)
    print(report(R))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_pysub":
        pysub_main(*sys.argv[2:4])
    elif len(sys.argv) > 1 and sys.argv[1] == "--_worker":
        worker_main(*sys.argv[2:6])
    else:
        main()
