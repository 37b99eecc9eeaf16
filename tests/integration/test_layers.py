"""The layers behind bwrap, tested against a real toolsd: seccomp (loaded
by bwrap from a memfd toolsd builds per call), Landlock (applied by the
exec shim to itself before it execs the command), the shim's status
reports, and Doctor's view of each layer. docs/sandbox-layers.md lists
what each layer stops and which test here shows it.
"""

import ctypes
import errno
import json
import os
import platform
import subprocess
import tempfile

import pytest

from conftest import BUILD
from test_run_shell import open_session, py

SHIM = os.path.join(BUILD, "daemon", "toolsd-exec")
x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers are x86_64's")


def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(libc.syscall(ctypes.c_long(444), None, ctypes.c_long(0), ctypes.c_long(1)), 0)


needs_landlock = pytest.mark.skipif(platform.machine() != "x86_64" or landlock_abi() < 1,
                                    reason="this kernel has no Landlock (Doctor says so)")

# syscall(nr, args...) through ctypes; prints {name: errno or 0}. Arguments
# are chosen so that, without the filter, most calls fail with something
# other than EPERM (EFAULT, EINVAL, ...) or succeed harmlessly.
PROBE = r"""
import ctypes, json, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *a):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    e = ctypes.get_errno()
    if r >= 0 and nr != 135:
        if r == 0 and nr == 56:
            os._exit(0)
        try: os.close(r)
        except OSError: pass
    return e if r < 0 else 0
def sock(*a):
    try:
        socket.socket(*a).close()
        return 0
    except OSError as e:
        return e.errno
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
calls = {
 "keyctl": lambda: sc(250, -1, 0, 0, 0, 0),
 "add_key": lambda: sc(248, 0, 0, 0, 0, -1),
 "request_key": lambda: sc(249, 0, 0, 0, 0),
 "io_uring_setup": lambda: sc(425, 1, 0),
 "ptrace": lambda: sc(101, 16, 1, 0, 0),
 "process_vm_readv": lambda: sc(310, 1, 0, 0, 0, 0, 0),
 "pidfd_getfd": lambda: sc(438, -1, 0, 0),
 "perf_event_open": lambda: sc(298, 0, 0, -1, -1, 0),
 "bpf": lambda: sc(321, 0, 0, 0),
 "userfaultfd": lambda: sc(323, 0),
 "mount": lambda: sc(165, 0, 0, 0, 0, 0),
 "umount2": lambda: sc(166, 0, 0),
 "pivot_root": lambda: sc(155, 0, 0),
 "chroot": lambda: sc(161, 0),
 "unshare": lambda: sc(272, CLONE_NEWUSER),
 "setns": lambda: sc(308, -1, 0),
 "fsopen": lambda: sc(430, 0, 0),
 "open_tree": lambda: sc(428, -1, 0, 0),
 "clone_newnet": lambda: sc(56, CLONE_NEWNET | 17, 0, 0, 0, 0),
 "clone3": lambda: sc(435, 0, 0),
 "personality": lambda: sc(135, 0x0040000),
 "kexec_load": lambda: sc(246, 0, 0, 0, 0),
 "init_module": lambda: sc(175, 0, 0, 0),
 "delete_module": lambda: sc(176, 0, 0),
 "reboot": lambda: sc(169, 0, 0, 0, 0),
 "swapon": lambda: sc(167, 0, 0),
 "acct": lambda: sc(163, 0),
 "open_by_handle_at": lambda: sc(304, -1, 0, 0),
 "syslog": lambda: sc(103, 3, 0, 0),
 "iopl": lambda: sc(172, 3),
 "ioperm": lambda: sc(173, 0, 1, 1),
 "socket_inet": lambda: sock(socket.AF_INET, socket.SOCK_STREAM),
 "socket_inet6": lambda: sock(socket.AF_INET6, socket.SOCK_DGRAM),
 "socket_packet": lambda: sock(17, socket.SOCK_RAW, 0),
 "socket_vsock": lambda: sock(40, socket.SOCK_STREAM),
 "socket_alg": lambda: sock(38, socket.SOCK_SEQPACKET),
 "socket_netlink_diag": lambda: sock(16, socket.SOCK_RAW, 4),
 "socket_netlink_route": lambda: sock(16, socket.SOCK_RAW, 0),
 "socket_unix": lambda: sock(socket.AF_UNIX, socket.SOCK_STREAM),
}
only = sys.argv[1:] or list(calls)
print(json.dumps({k: calls[k]() for k in only}))
"""

DENIED = ["keyctl", "add_key", "request_key", "io_uring_setup", "ptrace", "process_vm_readv",
          "pidfd_getfd", "perf_event_open", "bpf", "userfaultfd", "mount", "umount2", "pivot_root",
          "chroot", "unshare", "setns", "fsopen", "open_tree", "clone_newnet", "personality",
          "kexec_load", "init_module", "delete_module", "reboot", "swapon", "acct",
          "open_by_handle_at", "syslog", "iopl", "ioperm",
          "socket_packet", "socket_vsock", "socket_alg", "socket_netlink_diag"]
# Without the filter these fail otherwise: the EPERM inside is the
# filter's, not a missing capability's. Only these run on the host (as
# root, the others could change the machine).
CONTROL = ["keyctl", "add_key", "io_uring_setup", "perf_event_open", "pidfd_getfd", "setns",
           "open_tree", "open_by_handle_at"]


def probe(s):
    r = py(s, PROBE, timeout_ms=20000)
    assert r["outcome"] == "ok", r
    return json.loads(r["stdout"])


@x86_64
def test_denied_syscall_families_fail_with_eperm(daemon, root):
    with daemon.client(timeout=60) as c:
        s = open_session(c, root)
        assert s.sandboxed
        got = probe(s)
    wrong = {k: errno.errorcode.get(got[k], got[k]) for k in DENIED if got[k] != errno.EPERM}
    assert not wrong, wrong
    # clone3 says ENOSYS so that libc falls back to clone(), which the filter can read.
    assert got["clone3"] == errno.ENOSYS
    # No network: no IP sockets at all; Unix and NETLINK_ROUTE stay.
    assert got["socket_inet"] == got["socket_inet6"] == errno.EPERM
    assert got["socket_unix"] == got["socket_netlink_route"] == 0

    host = json.loads(subprocess.run(["python3", "-c", PROBE] + CONTROL, capture_output=True, text=True,
                                     check=True).stdout)
    assert all(host[k] != errno.EPERM for k in CONTROL), {k: host[k] for k in CONTROL}


@x86_64
def test_ip_sockets_with_network(make_daemon, root):
    d = make_daemon()
    with d.client(timeout=60) as c:
        s = open_session(c, root, needs_network=True)
        got = probe(s)
    assert got["socket_inet"] == got["socket_inet6"] == 0
    assert got["socket_packet"] == got["socket_vsock"] == errno.EPERM


TIOCSTI = r"""
import ctypes, fcntl, os, select, termios
libc = ctypes.CDLL(None, use_errno=True)
master, slave = os.openpty()
res = []
try:
    fcntl.ioctl(slave, termios.TIOCSTI, b"x")
    res.append(0)
except OSError as e:
    res.append(e.errno)
# The upper 32 bits must not matter (CVE-2019-10063).
c = ctypes.c_char(b"y")
r = libc.syscall(ctypes.c_long(16), ctypes.c_long(slave), ctypes.c_ulong(termios.TIOCSTI | (1 << 32)),
                 ctypes.byref(c))
res.append(0 if r == 0 else ctypes.get_errno())
# Nothing reached the terminal's input queue.
readable = select.select([slave], [], [], 0.2)[0]
print(res[0], res[1], bool(readable))
"""


@x86_64
def test_tiocsti_cannot_push_input(daemon, root):
    with daemon.client(timeout=30) as c:
        s = open_session(c, root)
        r = py(s, TIOCSTI, timeout_ms=10000)
    assert r["outcome"] == "ok", r
    assert r["stdout"] == "%d %d False\n" % (errno.EPERM, errno.EPERM)


LANDLOCK = r"""
import json, os
def w(p):
    try:
        with open(p, "w") as f:
            f.write("toolsd")
        return 0
    except OSError as e:
        return e.errno
print(json.dumps({"proc_comm": w("/proc/self/comm"), "root": w("in-root.txt"),
                  "tmp": w("/tmp/x"), "usr": w("/usr/x"), "tool_calls": w("tool_calls/x")}))
"""


@needs_landlock
def test_landlock_blocks_write_a_mount_allows(daemon, root):
    # /proc/self/comm is writable by its own process as far as the mount
    # goes (procfs is mounted read-write): only Landlock stops the write.
    with daemon.client(timeout=30) as c:
        s = open_session(c, root)
        r = py(s, LANDLOCK)
    assert r["outcome"] == "ok", r
    got = json.loads(r["stdout"])
    assert got["proc_comm"] == errno.EACCES, got
    assert got["root"] == got["tmp"] == 0, got
    assert got["usr"] in (errno.EROFS, errno.EACCES), got
    assert got["tool_calls"] == errno.EROFS, got
    host = subprocess.run(["python3", "-c", LANDLOCK], capture_output=True, text=True, cwd=root, check=True)
    assert json.loads(host.stdout)["proc_comm"] == 0


@needs_landlock
def test_landlock_and_seccomp_in_unsandboxed_fallback(make_daemon, root):
    outside = tempfile.mkdtemp(prefix="tsd-out-", dir="/var/tmp")
    try:
        os.chmod(outside, 0o777)
        d = make_daemon(config="[Sandbox]\nAllowUnsandboxed=yes\n")
        code = ("import ctypes, os\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "def w(p):\n"
                "    try:\n"
                "        open(p, 'w').close(); return 0\n"
                "    except OSError as e:\n"
                "        return e.errno\n"
                "r = libc.syscall(ctypes.c_long(250), ctypes.c_long(-1), 0, 0, 0, 0)\n"
                "print(w(%r), w('ok.txt'), r, ctypes.get_errno())\n" % os.path.join(outside, "x"))
        with d.client(timeout=30) as c:
            s = open_session(c, root, sandbox="off")
            assert s.sandboxed is False
            r = py(s, code)
        assert r["outcome"] == "ok", r
        assert r["stdout"] == "%d 0 -1 %d\n" % (errno.EACCES, errno.EPERM), r
        assert not os.path.exists(os.path.join(outside, "x"))
    finally:
        subprocess.run(["rm", "-rf", outside], check=False)


def test_doctor_reports_each_layer(daemon):
    with daemon.client(timeout=30) as c:
        checks = {x["name"]: x for x in c.doctor()}
    for name in ("landlock", "seccomp", "denylist", "layers", "bubblewrap", "user_namespaces"):
        assert name in checks, checks.keys()
    assert checks["landlock"]["detail"].startswith(("abi ", "unavailable"))
    assert checks["seccomp"]["ok"] and checks["seccomp"]["detail"].startswith("available: ")
    assert "rules" in checks["denylist"]["detail"] and checks["denylist"]["ok"]
    layers = checks["layers"]["detail"]
    assert "bwrap namespaces: on" in layers and "seccomp: on (loaded by bwrap)" in layers, layers


# ---- the shim itself ---------------------------------------------------------


def shim(*args, cwd=None):
    r, w = os.pipe()
    p = subprocess.run([SHIM, "--status-fd", str(w)] + list(args), pass_fds=(w,), capture_output=True,
                       text=True, cwd=cwd)
    os.close(w)
    with os.fdopen(r) as f:
        return p.returncode, f.read(), p.stderr


def test_shim_status_tells_missing_program_from_exit_127(tmp_path):
    assert shim("--", "/nonexistent/prog") == (127, "ready\nexec %d\n" % errno.ENOENT,
                                               "toolsd-exec: /nonexistent/prog: No such file or directory\n")
    assert shim("--", "sh", "-c", "exit 127")[:2] == (127, "ready\nexit 127\n")
    assert shim("--", "sh", "-c", "kill -TERM $$")[:2] == (143, "ready\nsignal 15\n")


@needs_landlock
def test_shim_landlock_failure_stops_the_command(tmp_path):
    marker = tmp_path / "ran"
    rc, status, err = shim("--landlock-rw", "/nonexistent", "--", "touch", str(marker))
    assert (rc, status) == (126, "landlock %d\n" % errno.ENOENT)
    assert "cannot apply Landlock" in err and not marker.exists()
    # tool_calls/ must already be read-only by its mount: a writable one is refused.
    (tmp_path / "tool_calls").mkdir()
    rc, status, _ = shim("--landlock-rw", str(tmp_path), "--landlock-ro-under", str(tmp_path / "tool_calls"),
                         "--", "touch", str(marker))
    assert (rc, status) == (126, "landlock %d\n" % errno.EPERM) and not marker.exists()


@needs_landlock
def test_shim_applies_landlock_and_seccomp(tmp_path):
    code = ("import socket\n"
            "open('in.txt', 'w').close()\n"
            "try:\n"
            "    open('/var/tmp/toolsd-shim-%d', 'w')\n"
            "except OSError as e:\n"
            "    print(e.errno)\n"
            "try:\n"
            "    socket.socket()\n"
            "except OSError as e:\n"
            "    print(e.errno)\n" % os.getpid())
    rc, status, err = shim("--landlock-ro", "/", "--landlock-rw", str(tmp_path), "--landlock-deny-tcp",
                           "--require-landlock", "--seccomp-no-network", "--", "python3", "-c", code,
                           cwd=str(tmp_path))
    assert (rc, status) == (0, "ready\nexit 0\n"), err
    assert (tmp_path / "in.txt").exists()


def test_shim_rejects_bad_arguments():
    assert shim("--landlock-ro", "relative", "--", "true")[0] == 126
    assert shim("--bogus", "--", "true")[0] == 126
    assert shim("--landlock-rw")[0] == 126
