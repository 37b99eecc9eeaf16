"""System mode: a root master, socket-activated, hands each connection to a
broker running as the peer's uid.

Runs as root only. Two throwaway users (tsd-sys-<random>) are created for
the module and deleted (userdel -r) by the fixture's finalizer. A client
"is" user A by connecting with A's effective uid and gid: SO_PEERCRED takes
the credentials at connect(), so the test process switches its effective ids
around connect() alone. Every process is stopped by its pid.
"""

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time

import pytest

from conftest import SRC, TOOLSCTL, TOOLSD, Daemon, check_reply, skill

import toolsd

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("systemd-socket-activate") is None,
    reason="system mode tests need root, useradd and systemd-socket-activate")

CAP_SETGID, CAP_SETUID, CAP_KILL, CAP_SETPCAP = 6, 7, 5, 8
MASTER_CAPS = (1 << CAP_SETGID) | (1 << CAP_SETUID) | (1 << CAP_KILL) | (1 << CAP_SETPCAP)
NO_PASSWD_UID = 3999999  # no passwd entry (checked by the fixture)


class User:
    def __init__(self, name):
        import pwd
        pw = pwd.getpwnam(name)
        self.name, self.uid, self.gid, self.home = name, pw.pw_uid, pw.pw_gid, pw.pw_dir


@pytest.fixture(scope="module")
def users():
    """Two throwaway users, deleted with their homes at the end."""
    made = []
    try:
        for _ in range(2):
            name = "tsd-sys-" + secrets.token_hex(4)
            subprocess.run(["useradd", "--create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
                           check=True, capture_output=True)
            made.append(name)
        yield [User(n) for n in made]
    finally:
        for n in made:
            subprocess.run(["userdel", "-r", n], check=False, capture_output=True)


@contextlib.contextmanager
def as_user(user):
    """Runs the block with the user's effective ids (root stays the real uid,
    so it can switch back)."""
    uid, gid = (user, user) if isinstance(user, int) else (user.uid, user.gid)
    os.setegid(gid)
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


class SystemDaemon(Daemon):
    """toolsd --system under systemd-socket-activate (the socket is made by
    the activator, as systemd would, world-connectable)."""

    def command(self):
        return [TOOLSD, "--config", self.config_path, "--system"]

    def start(self, wrapper=()):
        env = ["-E", "NOTIFY_SOCKET=" + self.notify.path]
        for k in ("WATCHDOG_USEC", "TOOLSD_LOG_LEVEL"):
            if k in self.env:
                env += ["-E", "%s=%s" % (k, self.env[k])]
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(["systemd-socket-activate", "-l", self.socket] + env + self.command(),
                                     env=self.env, stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        # The activator starts toolsd at the first connection: a uid with no
        # passwd entry knocks, and the master refuses it without a broker.
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket):
            assert time.monotonic() < deadline, self.log_text()
            time.sleep(0.02)
        os.chmod(self.socket, 0o666)  # SocketMode=0666 (the activator makes it 0644)
        with as_user(NO_PASSWD_UID):
            knock = self.raw()
        self.notify.wait_for("READY=1", proc=self.proc)
        self.first_reply = read_messages(knock)
        knock.close()
        # Keep reading: sd_notify() blocks once the queue of unread
        # datagrams is full (net.unix.max_dgram_qlen, often 10).
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self):
        sock = self.notify.sock
        sock.settimeout(0.2)
        while sock.fileno() >= 0:
            try:
                self.notify.messages.append(sock.recv(65536).decode())
            except socket.timeout:
                continue
            except OSError:
                return

    def notified(self, line):
        return any(line in m.split("\n") for m in list(self.notify.messages))

    def client_as(self, user, **kw):
        with as_user(user):
            return toolsd.Client(self.socket, timeout=kw.pop("timeout", 30), **kw)

    def raw_as(self, user):
        with as_user(user):
            return self.raw()


@pytest.fixture
def make_system(tmpdir_short, users):
    import pwd
    with pytest.raises(KeyError):
        pwd.getpwuid(NO_PASSWD_UID)
    os.chmod(tmpdir_short, 0o755)  # brokers run as the users: they must reach the socket and config
    started = []

    def make(config="", env=None):
        d = SystemDaemon(tmpdir_short, config=config, env=env)
        assert stat.S_IMODE(os.stat(d.config_path).st_mode) & 0o004, "brokers must read the config"
        started.append(d)
        return d.start()

    yield make
    for d in started:
        if d.proc is not None:
            rc = d.stop()
            assert rc == 0, "toolsd exited with %r; log:\n%s" % (rc, d.log_text())
            # A clean master exit leaves no broker behind.
            assert wait_until(lambda: not brokers(), 10), brokers()


@pytest.fixture
def system(make_system):
    return make_system()


@pytest.fixture
def roots(tmpdir_short, users):
    """An artifacts root per user, owned by that user, mode 0700."""
    out = {}
    for u in users:
        r = os.path.join(tmpdir_short, "root-" + u.name)
        os.mkdir(r, 0o700)
        os.chown(r, u.uid, u.gid)
        out[u.name] = r
    return out


# ---- helpers ----------------------------------------------------------------

def read_messages(sock, timeout=30):
    """Every NUL-terminated message until the peer closes."""
    sock.settimeout(timeout)
    buf = b""
    while True:
        try:
            d = sock.recv(65536)
        except ConnectionResetError:
            break
        if not d:
            break
        buf += d
    return [json.loads(m) for m in buf.split(b"\0") if m]


def wait_until(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(0.05)


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def brokers():
    """{pid: uid} of every live broker (argv[0] "toolsd: broker uid=N")."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode(errors="replace")
            if argv0.startswith("toolsd: broker uid=") and proc_status(int(p))["State"][0] != "Z":
                out[int(p)] = int(argv0.split("=", 1)[1])
        except (OSError, KeyError, ValueError):
            continue
    return out


def broker_of(uid, timeout=10):
    found = wait_until(lambda: [p for p, u in brokers().items() if u == uid], timeout)
    assert len(found) == 1, brokers()
    return found[0]


def processes_of(uid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                st = proc_status(int(p))
            except OSError:
                continue
            if int(st["Uid"].split()[1]) == uid and st["State"][0] != "Z":
                out.append(int(p))
    return out


def open_session(c, root, **kw):
    kw.setdefault("profile", "full")
    reply = c.call("io.toolsd.OpenSession", {"skill": skill(**kw), "artifacts_root": root, "env": {}})
    return toolsd.Session(c, reply)


def py(s, code, timeout_ms=10000):
    """Python code run by run_shell (the "full" profile allows python3 -c)."""
    reply = s.client.call("io.toolsd.Call", {"session": s.id, "tool": "run_shell",
                                             "arguments": {"argv": ["python3", "-c", code]},
                                             "timeout_ms": timeout_ms})
    s.call_id = reply["call_id"]
    return reply["result"]


SLEEP = "import time; print('up', flush=True); time.sleep(%d)"


def stream_in_thread(s, code, timeout_ms=60000):
    """Starts a streamed call; returns (thread, box) where box gets call_id,
    then result or error."""
    box = {"started": threading.Event()}

    def run():
        try:
            for kind, v in s.stream("run_shell", {"argv": ["python3", "-c", code]}, timeout_ms=timeout_ms):
                if s.call_id and not box["started"].is_set():
                    box["call_id"] = s.call_id
                    box["started"].set()
                if kind == "result":
                    box["result"] = v
        except Exception as e:  # noqa: BLE001 (the test inspects it)
            box["error"] = e
        finally:
            box["started"].set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert box["started"].wait(30)
    return t, box


# ---- brokers: one per user, as that user, with nothing ------------------------

def test_master_and_brokers_privileges(system, users):
    a, b = users
    master = system.proc.pid
    # The knock of a uid without passwd entry was refused by the master.
    assert system.first_reply == [{"error": "org.varlink.service.PermissionDenied", "parameters": {}}]
    assert "refused uid=%d: no passwd entry" % NO_PASSWD_UID in system.log_text()

    st = proc_status(master)
    assert st["Uid"].split() == ["0"] * 4
    assert int(st["CapEff"], 16) == MASTER_CAPS
    assert int(st["CapPrm"], 16) == MASTER_CAPS
    assert int(st["CapBnd"], 16) == MASTER_CAPS
    assert int(st["CapInh"], 16) == 0 and int(st["CapAmb"], 16) == 0

    with system.client_as(a) as ca, system.client_as(b) as cb:
        sa, sb = ca.status(), cb.status()
        assert (sa["mode"], sa["uid"]) == ("system", a.uid)
        assert (sb["mode"], sb["uid"]) == ("system", b.uid)
        pa, pb = broker_of(a.uid), broker_of(b.uid)
        assert pa != pb
        for pid, u in ((pa, a), (pb, b)):
            st = proc_status(pid)
            assert int(st["PPid"]) == master
            assert st["Uid"].split() == [str(u.uid)] * 4
            assert st["Gid"].split() == [str(u.gid)] * 4
            assert "0" not in st["Groups"].split()
            for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                assert int(st[cap], 16) == 0, (cap, st[cap])
            assert st["NoNewPrivs"] == "1"
            assert st["Seccomp"] == "2", "the broker runs under its own seccomp filter"
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = dict(x.split(b"=", 1) for x in f.read().split(b"\0") if b"=" in x)
            assert env[b"HOME"] == u.home.encode() and env[b"USER"] == u.name.encode()
            assert b"NOTIFY_SOCKET" not in env and b"LISTEN_FDS" not in env
        # A second connection of A's goes to the same broker.
        with system.client_as(a) as ca2:
            assert ca2.status()["connections"] == 2
            assert broker_of(a.uid) == pa


def test_root_is_served_by_its_own_broker(system, users, roots):
    a = users[0]
    with system.client_as(a) as ca:
        open_session(ca, roots[a.name])
        with toolsd.Client(system.socket, timeout=30) as cr:
            st = cr.status()
            assert (st["uid"], st["sessions"]) == (0, 0)
            # Root sees no other user's sessions: its broker holds only its own.
            assert cr.list_sessions() == []
            pr = broker_of(0)
            assert pr != system.proc.pid
            s = proc_status(pr)
            assert int(s["CapEff"], 16) == 0 and int(s["CapBnd"], 16) == 0 and int(s["CapPrm"], 16) == 0


def root_session_params(tmpdir_short, **kw):
    root = os.path.join(tmpdir_short, "root-of-root")
    os.mkdir(root, 0o700)
    return dict({"skill": skill(profile="full"), "artifacts_root": root, "env": {}}, **kw)


def test_root_peer_is_not_run_unsandboxed_by_default(system, tmpdir_short):
    """Root's broker has no capability, and the kernel wants CAP_SETFCAP to
    map uid 0 into a user namespace: bwrap cannot work there. A root peer's
    session is refused, saying why, instead of falling back to running the
    model's commands as root."""
    params = root_session_params(tmpdir_short)
    with toolsd.Client(system.socket, timeout=30) as cr:
        with pytest.raises(toolsd.SandboxUnavailable) as e:
            cr.call("io.toolsd.OpenSession", params)
        assert "mapping uid 0 into a user namespace needs CAP_SETFCAP" in e.value.parameters["reason"]
        by = {x["name"]: x for x in cr.doctor()}
        assert by["sandbox"]["ok"] is False and "CAP_SETFCAP" in by["sandbox"]["detail"], by["sandbox"]
        with pytest.raises(toolsd.SandboxUnavailable):
            cr.call("io.toolsd.OpenSession", dict(params, sandbox="off"))  # not allowed here


def test_root_peer_unsandboxed_only_when_asked_and_allowed(make_system, tmpdir_short):
    params = root_session_params(tmpdir_short)
    d = make_system("[Sandbox]\nAllowUnsandboxed=yes\n")
    with toolsd.Client(d.socket, timeout=30) as cr:
        with pytest.raises(toolsd.SandboxUnavailable):
            cr.call("io.toolsd.OpenSession", params)
        r = cr.call("io.toolsd.OpenSession", dict(params, sandbox="off"))
        assert r["sandboxed"] is False


# ---- root's read-only view across users ----------------------------------------

def by_uid(users_list):
    return {u["uid"]: u for u in users_list}


def test_root_sees_every_user_read_only(system, users, roots):
    a, b = users
    with system.client_as(a) as ca, system.client_as(b) as cb, toolsd.Client(system.socket, timeout=30) as cr:
        sa = toolsd.Session(ca, ca.call("io.toolsd.OpenSession", {
            "skill": skill(profile="full", name="lint"), "artifacts_root": roots[a.name], "env": {},
            "task_id": "task-a", "run_id": "run-a", "role": "reviewer"}))
        sb = open_session(cb, roots[b.name])
        t, box = stream_in_thread(sb, SLEEP % 60)
        pa, pb = broker_of(a.uid), broker_of(b.uid)

        view = check_reply("io.toolsd.ListSessions", cr.list_all_sessions())
        assert view["incomplete_uids"] == []
        got = {x["session"]: x for x in view["sessions"]}
        assert set(got) == {sa.id, sb.id}
        assert got[sa.id]["uid"] == a.uid and got[sb.id]["uid"] == b.uid
        assert (got[sa.id]["skill"], got[sa.id]["task_id"], got[sa.id]["run_id"], got[sa.id]["role"]) == \
            ("lint", "task-a", "run-a", "reviewer")
        assert got[sa.id]["artifacts_root"] == roots[a.name]
        assert (got[sa.id]["running_calls"], got[sb.id]["running_calls"]) == (0, 1)
        assert got[sb.id]["sandboxed"] is True and got[sb.id]["profile"] == "full"
        # The plain call is still root's own sessions only.
        assert cr.list_sessions() == []

        st = by_uid(check_reply("io.toolsd.Status", cr.status(all_users=True))["users"])
        assert set(st) == {0, a.uid, b.uid}
        assert (st[a.uid]["broker_pid"], st[a.uid]["sessions"], st[a.uid]["running_calls"]) == (pa, 1, 0)
        assert (st[b.uid]["broker_pid"], st[b.uid]["sessions"], st[b.uid]["running_calls"]) == (pb, 1, 1)
        assert st[a.uid]["connections"] == 1 and st[b.uid]["connections"] == 1
        assert st[0]["sessions"] == 0 and st[0]["connections"] == 1
        assert all(u["complete"] for u in st.values())
        assert "users" not in cr.status()

        # Read-only: nothing else of A's or B's is open to root.
        for method, params in (("io.toolsd.ListTools", {"session": sa.id}),
                               ("io.toolsd.CloseSession", {"session": sa.id}),
                               ("io.toolsd.Call", {"session": sb.id, "tool": "run_shell",
                                                   "arguments": {"argv": ["true"]}})):
            with pytest.raises(toolsd.NoSuchSession):
                cr.call(method, params)
        with pytest.raises(toolsd.NoSuchCall):
            cr.cancel(box["call_id"])
        assert t.is_alive()

        # The view follows: A closes its session (its reply comes after
        # its broker published), B's call is cancelled by B.
        sa.close()
        assert {x["session"] for x in cr.list_all_sessions()["sessions"]} == {sb.id}
        with system.client_as(b) as cb2:
            cb2.cancel(box["call_id"])
        t.join(30)
        assert box["result"]["outcome"] == "cancelled"
        st = by_uid(cr.status(all_users=True)["users"])
        assert (st[a.uid]["sessions"], st[b.uid]["running_calls"]) == (0, 0)

        # toolsctl, as root.
        r = subprocess.run([TOOLSCTL, "--socket", system.socket, "sessions", "--all"], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split("\n")[0].split()[:2] == ["UID", "SESSION"]
        assert any(line.split()[:2] == [str(b.uid), sb.id] for line in r.stdout.splitlines()), r.stdout
        r = subprocess.run([TOOLSCTL, "--socket", system.socket, "status", "--all"], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        rows = {line.split()[0]: line.split() for line in r.stdout.splitlines() if line[:1].isdigit()}
        assert rows[str(b.uid)][1:3] == [str(pb), "1"], r.stdout

    # A broker that ends leaves the view: the master marks its page gone.
    os.kill(pa, signal.SIGKILL)
    assert wait_until(lambda: "broker pid=%d uid=%d killed by signal 9" % (pa, a.uid) in system.log_text(), 10)
    with toolsd.Client(system.socket, timeout=30) as cr:
        assert a.uid not in by_uid(cr.status(all_users=True)["users"])


def test_all_users_is_root_only(system, users, roots):
    a = users[0]
    with system.client_as(a) as ca:
        open_session(ca, roots[a.name])
        for method in ("io.toolsd.ListSessions", "io.toolsd.Status"):
            with pytest.raises(toolsd.InvalidArgument) as e:
                ca.call(method, {"all_users": True})
            assert e.value.parameters == {"field": "all_users",
                                          "reason": "only root (uid 0) may see other users' sessions"}
            assert "users" not in ca.call(method, {"all_users": False})
        assert len(ca.list_sessions()) == 1
    r = subprocess.run([TOOLSCTL, "--socket", system.socket, "sessions", "--all"], capture_output=True,
                       text=True, timeout=30, user=a.uid, group=a.gid, extra_groups=[])
    assert r.returncode != 0 and "only root (uid 0) may see other users' sessions" in r.stderr, r


def broker_page(pid):
    """The broker's status page, opened through its mapping: the broker
    maps it and closes its fd 4. Its user could write the same through
    ptrace; the test, being root, opens /proc/PID/map_files."""
    with open("/proc/%d/maps" % pid) as f:
        ranges = [line.split()[0] for line in f if "/memfd:toolsd-status" in line]
    assert len(ranges) == 1, ranges
    return os.open("/proc/%d/map_files/%s" % (pid, ranges[0]), os.O_RDWR | os.O_CLOEXEC)


PAGE_SIZE = 256 * 1024
F_GET_SEALS, F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW = 1034, 1, 2, 4


def write_page(fd, text, seq=2, magic=0x53445354):
    """What a broker's user can write: any header, any text."""
    import struct
    os.pwrite(fd, struct.pack("<IIQII", magic, 0, seq | 1, 0, 0), 0)
    os.pwrite(fd, text, 24)
    os.pwrite(fd, struct.pack("<IIQII", magic, 0, seq, len(text), 0), 0)


def test_a_users_page_is_their_own_claim(system, users, roots):
    """A's user controls A's broker, so A's page: whatever is written there
    can only be about A, cannot grow, and cannot disturb root's broker or
    the view of B."""
    import fcntl
    a, b = users
    with system.client_as(a) as ca, system.client_as(b) as cb, toolsd.Client(system.socket, timeout=30) as cr:
        open_session(ca, roots[a.name])
        sb = open_session(cb, roots[b.name])
        cr.status()  # root's broker is up and holds both pages
        fd = broker_page(broker_of(a.uid))
        try:
            assert os.fstat(fd).st_size == PAGE_SIZE
            seals = fcntl.fcntl(fd, F_GET_SEALS)
            assert seals & (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW) == F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW
            with pytest.raises(PermissionError):
                os.ftruncate(fd, PAGE_SIZE * 1024)
            with pytest.raises(PermissionError):
                os.pwrite(fd, b"x", PAGE_SIZE)

            fake = "ab" * 16
            hostile = [
                b"\xff" * 1000,
                b'{"list":[],"sessions":1,"running_calls":0,"connections":0,"truncated":false,"uid":0}',
                b'{"list":[' + b"[" * 5000 + b"]" * 5000 + b'],"sessions":0,"running_calls":0,'
                b'"connections":0,"truncated":false}',
                json.dumps({"list": [{"session": fake, "uid": 0, "skill": "s", "profile": "p",
                                      "artifacts_root": "/r", "task_id": "t", "sandboxed": True,
                                      "network": False, "running_calls": 0, "created_usec": 1,
                                      "used_usec": 1}],
                            "sessions": 1, "running_calls": 0, "connections": 0, "truncated": False}).encode(),
            ]
            for text in hostile:
                write_page(fd, text)
                view = cr.list_all_sessions()
                assert view["incomplete_uids"] == [a.uid], text[:80]
                assert [x["session"] for x in view["sessions"]] == [sb.id]
                st = by_uid(cr.status(all_users=True)["users"])
                assert st[a.uid]["complete"] is False and st[b.uid]["complete"] is True

            # A header that never settles (odd count) or claims a length
            # past the page: unreadable, not waited on.
            write_page(fd, b"{}", seq=3)
            assert cr.list_all_sessions()["incomplete_uids"] == [a.uid]
            write_page(fd, b"{}")
            os.pwrite(fd, (PAGE_SIZE * 2).to_bytes(4, "little"), 16)
            assert cr.list_all_sessions()["incomplete_uids"] == [a.uid]

            # A well-formed lie is shown, but as A's: the uid is the
            # master's, never the page's.
            lie = json.dumps({"list": [{"session": fake, "skill": "s", "profile": "p", "artifacts_root": "/r",
                                        "task_id": "t", "sandboxed": True, "network": False,
                                        "running_calls": 0, "created_usec": 1, "used_usec": 1}],
                              "sessions": 1, "running_calls": 0, "connections": 0,
                              "truncated": False}).encode()
            write_page(fd, lie)
            got = {x["session"]: x["uid"] for x in cr.list_all_sessions()["sessions"]}
            assert got == {fake: a.uid, sb.id: b.uid}
        finally:
            os.close(fd)
        # Root's broker is unharmed, and A's broker rewrites its page at
        # its next change.
        assert cr.status()["uid"] == 0
        open_session(ca, roots[a.name])
        view = cr.list_all_sessions()
        assert view["incomplete_uids"] == []
        assert sum(x["uid"] == a.uid for x in view["sessions"]) == 2


def test_root_view_cannot_drive_roots_terminal(system, users, roots):
    """A directory may be called anything: an honest broker publishes it
    with '?' for each control character, a page that carries them raw is
    refused, and toolsctl escapes whatever it prints."""
    a, b = users
    evil = os.path.join(roots[a.name], "x\x1b]0;PWNED\x07\r\u009b2K")
    os.mkdir(evil, 0o700)
    os.chown(evil, a.uid, a.gid)
    with system.client_as(a) as ca, toolsd.Client(system.socket, timeout=30) as cr:
        sid = open_session(ca, evil).id
        view = cr.list_all_sessions()
        assert view["incomplete_uids"] == []
        got = {x["session"]: x for x in view["sessions"]}
        assert got[sid]["artifacts_root"] == os.path.join(roots[a.name], "x?]0;PWNED???2K")
        for who in (a, None):
            ids = {"user": a.uid, "group": a.gid, "extra_groups": []} if who else {}
            r = subprocess.run([TOOLSCTL, "--socket", system.socket, "sessions"] + ([] if who else ["--all"]),
                               capture_output=True, timeout=30, **ids)
            assert r.returncode == 0, r.stderr
            assert sid.encode() in r.stdout
            assert not any(c in r.stdout for c in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b")), r.stdout

        # Raw in a page (as its user could write it): refused whole.
        fd = broker_page(broker_of(a.uid))
        try:
            page = json.dumps({"list": [{"session": sid, "skill": "x\x1b]0;PWNED\x07", "profile": "p",
                                         "artifacts_root": "/r", "task_id": "t", "sandboxed": True,
                                         "network": False, "running_calls": 0, "created_usec": 1,
                                         "used_usec": 1}],
                               "sessions": 1, "running_calls": 0, "connections": 0, "truncated": False})
            write_page(fd, page.encode())
            assert cr.list_all_sessions()["incomplete_uids"] == [a.uid]
        finally:
            os.close(fd)


def test_root_gets_every_page_when_busy(make_system, users, roots):
    """A page is never dropped: with root's broker stopped and its control
    socket full (the master refuses root's connections as broker_busy), a
    new broker's page waits in the master and arrives once root's broker
    reads again."""
    a, b = users
    d = make_system()
    with toolsd.Client(d.socket, timeout=30) as cr:
        cr.status()
        pr = broker_of(0)
        socks = []
        os.kill(pr, signal.SIGSTOP)
        try:
            full = "cannot hand a connection over for uid=0: Resource temporarily unavailable"
            for _ in range(1000):
                socks.append(d.raw())
                if full in d.log_text():
                    break
            assert wait_until(lambda: full in d.log_text(), 10), "root's control socket never filled"
            with d.client_as(b) as cb:
                sb = open_session(cb, roots[b.name])
                for s in socks:
                    s.close()
                socks = []
                os.kill(pr, signal.SIGCONT)
                assert wait_until(lambda: sb.id in [x["session"] for x in cr.list_all_sessions()["sessions"]],
                                  15), d.log_text()
                st = by_uid(cr.status(all_users=True)["users"])
                assert st[b.uid]["sessions"] == 1 and st[b.uid]["complete"]
        finally:
            os.kill(pr, signal.SIGCONT)
            for s in socks:
                s.close()


def test_a_broker_cannot_hide_from_root_by_its_page(system, users, roots):
    """Whether a broker still runs comes from the master's pidfd, not from
    anything in the page: a page that claims to be gone (the header field
    that once meant it) or stops being written still shows its user."""
    import struct
    a = users[0]
    with system.client_as(a) as ca, toolsd.Client(system.socket, timeout=30) as cr:
        sid = open_session(ca, roots[a.name]).id
        fd = broker_page(broker_of(a.uid))
        try:
            os.pwrite(fd, struct.pack("<I", 1), 4)
            assert sid in [x["session"] for x in cr.list_all_sessions()["sessions"]]
            assert a.uid in by_uid(cr.status(all_users=True)["users"])
        finally:
            os.close(fd)


def test_restarting_brokers_leave_nothing_in_roots(system, users, roots):
    """A user may end their own broker as often as they like (a clean exit
    is not a crash): root's broker drops each ended broker's page and pidfd
    as the next one arrives, so it keeps a few descriptors, not one per
    restart."""
    a, b = users
    with toolsd.Client(system.socket, timeout=30) as cr:
        cr.status()
        pr = broker_of(0)

        def pidfds():
            n = 0
            for fd in os.listdir("/proc/%d/fd" % pr):
                try:
                    n += os.readlink("/proc/%d/fd/%s" % (pr, fd)) == "anon_inode:[pidfd]"
                except OSError:
                    pass
            return n

        for _ in range(40):
            with system.client_as(a) as ca:
                ca.status()
                p = broker_of(a.uid)
            os.kill(p, signal.SIGTERM)
            assert wait_until(lambda: p not in brokers(), 10)
        # No view asked for yet: what is held is what arrivals left.
        assert pidfds() <= 2, pidfds()
        with system.client_as(b) as cb:
            sb = open_session(cb, roots[b.name])
            assert wait_until(lambda: sb.id in [x["session"] for x in cr.list_all_sessions()["sessions"]], 10)
            assert pidfds() <= 3, pidfds()
            assert by_uid(cr.status(all_users=True)["users"])[b.uid]["complete"]


def open_files_limit(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return tuple(int(x) for x in line.split()[3:5])
    raise AssertionError("no open files limit")


def test_open_file_limits(make_system, users):
    """The master holds three descriptors per broker: it raises its soft
    limit to the hard one, and gives its brokers the soft limit it was
    started with; root's broker, which holds a pidfd per broker, raises
    its own."""
    import resource
    a = users[0]
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    hard = saved[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))
    try:
        d = make_system()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, saved)
    with d.client_as(a) as ca, toolsd.Client(d.socket, timeout=30) as cr:
        ca.status()
        cr.status()
        # systemd-socket-activate execs toolsd: its pid is the master's.
        assert open_files_limit(d.proc.pid) == (hard, hard)
        assert open_files_limit(broker_of(a.uid)) == (512, hard)
        assert open_files_limit(broker_of(0)) == (min(hard, 8192), hard)


def test_master_out_of_descriptors_refuses_clearly(system, users):
    """With its open-file limit reached, the master neither dies nor spins:
    a connection it has no descriptor for is accepted with the one it keeps
    in reserve and refused with LimitExceeded open_files, and so is one
    whose broker it cannot start; both work again once the limit allows."""
    import resource
    a, b = users
    master = system.proc.pid
    soft, hard = resource.prlimit(master, resource.RLIMIT_NOFILE)
    with toolsd.Client(system.socket, timeout=30) as cr:
        cr.status()
        # The limit bounds descriptor numbers: the lowest free one is how
        # many the master can have without any spare.
        taken = {int(fd) for fd in os.listdir("/proc/%d/fd" % master)}
        used = min(set(range(len(taken) + 1)) - taken)
        refusal = {"error": "io.toolsd.LimitExceeded", "parameters": {"what": "open_files", "limit": used}}
        try:
            # Every descriptor in use: not even accept() gets one.
            resource.prlimit(master, resource.RLIMIT_NOFILE, (used, hard))
            with system.raw_as(a) as s:
                assert read_messages(s) == [refusal]
            assert wait_until(lambda: "out of file descriptors (limit %d)" % used in system.log_text(), 10)
            # One to spare: the connection, but no status page for a broker.
            refusal["parameters"]["limit"] = used + 1
            resource.prlimit(master, resource.RLIMIT_NOFILE, (used + 1, hard))
            with system.raw_as(a) as s:
                assert read_messages(s) == [refusal], system.log_text()
            assert "cannot create a status page for uid=%d" % a.uid in system.log_text()
            assert cr.status()["uid"] == 0  # root's broker serves on
        finally:
            resource.prlimit(master, resource.RLIMIT_NOFILE, (soft, hard))
        with system.client_as(a) as ca:
            assert ca.status()["uid"] == a.uid


# ---- isolation between users --------------------------------------------------

def test_users_cannot_reach_each_others_sessions(system, users, roots):
    a, b = users
    with system.client_as(a) as ca, system.client_as(b) as cb, system.client_as(b) as cb2:
        sa = open_session(ca, roots[a.name])
        sb = open_session(cb, roots[b.name])
        t, box = stream_in_thread(sa, SLEEP % 30)
        cid = box["call_id"]
        made_up_sid, made_up_cid = secrets.token_hex(16), secrets.token_hex(16)

        assert [x["session"] for x in cb.list_sessions()] == [sb.id]
        for sid in (sa.id, made_up_sid):
            for method, params in (("io.toolsd.ListTools", {"session": sid}),
                                   ("io.toolsd.CloseSession", {"session": sid}),
                                   ("io.toolsd.Call", {"session": sid, "tool": "run_shell",
                                                       "arguments": {"argv": ["true"]}})):
                with pytest.raises(toolsd.NoSuchSession) as e:
                    cb2.call(method, params)
                # Indistinguishable from a session that does not exist.
                assert e.value.parameters == {"session": sid}
        for c in (cid, made_up_cid):
            with pytest.raises(toolsd.NoSuchCall) as e:
                cb2.cancel(c)
            assert e.value.parameters == {"call_id": c}
        # B cannot make A's root its own, and A's outputs are A's alone.
        with pytest.raises(toolsd.InvalidArgument):
            open_session(cb2, roots[a.name])
        r = py(sb, "import os; print(os.listdir(%r))" % roots[a.name])
        assert r["outcome"] == "exit" and r["exit_code"] != 0, r

        # A's call still runs and A can still use its session.
        assert t.is_alive()
        with system.client_as(a) as ca2:
            assert [x["session"] for x in ca2.list_sessions()] == [sa.id]
            ca2.cancel(cid)
        t.join(30)
        assert box["result"]["outcome"] == "cancelled"


def test_files_and_processes_belong_to_the_user(system, users, roots):
    a = users[0]
    with system.client_as(a) as ca:
        s = open_session(ca, roots[a.name])
        r = py(s, "import os; print(os.getuid(), os.getgid()); open('made.txt', 'w').write('hi'); os.mkdir('d')")
        assert r["outcome"] == "ok", r
        lines = r["stdout"].split()
        assert lines[0] == str(a.uid) and lines[1] == str(a.gid)
        for name in ("made.txt", "d", "tool_calls"):
            st = os.stat(os.path.join(roots[a.name], name))
            assert (st.st_uid, st.st_gid) == (a.uid, a.gid), name
        cid = s.call_id
        # Output kept on disk is the user's, private.
        for ext in (".stdout", ".stderr"):
            p = os.path.join(roots[a.name], "tool_calls", cid + ext)
            if os.path.exists(p):
                st = os.stat(p)
                assert st.st_uid == a.uid and stat.S_IMODE(st.st_mode) == 0o600
        # While a call runs, its processes are A's.
        t, box = stream_in_thread(s, SLEEP % 20)
        pids = wait_until(lambda: [p for p in processes_of(a.uid) if _comm(p) == "python3"], 10)
        assert pids
        for p in pids:
            assert proc_status(p)["Uid"].split() == [str(a.uid)] * 4
            assert int(proc_status(p)["CapEff"], 16) == 0
        with system.client_as(a) as ca2:
            ca2.cancel(box["call_id"])
        t.join(30)


def _comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


# ---- a broker dies ------------------------------------------------------------

def test_killing_a_broker_touches_only_its_user(system, users, roots):
    a, b = users
    ca, cb = system.client_as(a), system.client_as(b)
    sa, sb = open_session(ca, roots[a.name]), open_session(cb, roots[b.name])
    ta, boxa = stream_in_thread(sa, SLEEP % 60)
    tb, boxb = stream_in_thread(sb, "import time; time.sleep(3); print('b-done')")
    pa, pb = broker_of(a.uid), broker_of(b.uid)
    assert wait_until(lambda: [p for p in processes_of(a.uid) if _comm(p) == "python3"], 10)

    os.kill(pa, signal.SIGKILL)
    ta.join(30)
    assert not ta.is_alive()
    assert isinstance(boxa.get("error"), (toolsd.ProtocolError, OSError)), boxa
    # A's running call died with its broker (bwrap --die-with-parent):
    # nothing of A's is left.
    assert wait_until(lambda: not processes_of(a.uid), 10), [(p, _comm(p)) for p in processes_of(a.uid)]
    assert wait_until(lambda: "broker pid=%d uid=%d killed by signal 9" % (pa, a.uid) in system.log_text(), 10)

    # A reconnects to a fresh broker and works; its old session is gone.
    with system.client_as(a) as ca2:
        assert ca2.list_sessions() == []
        assert broker_of(a.uid) != pa
        s2 = open_session(ca2, roots[a.name])
        assert py(s2, "print('again')")["stdout"] == "again\n"

    # B's concurrent call was not touched.
    tb.join(30)
    assert boxb.get("result", {}).get("outcome") == "ok", boxb
    assert boxb["result"]["stdout"] == "b-done\n"
    assert broker_of(b.uid) == pb
    assert [x["session"] for x in cb.list_sessions()] == [sb.id]
    ca.close()
    cb.close()


def test_crash_loop_is_stopped(system, users):
    a, b = users
    for _ in range(5):
        with system.client_as(a) as c:
            c.status()
            p = broker_of(a.uid)
            os.kill(p, signal.SIGKILL)
        # Reaped by the master (not only gone from the process list).
        dead = "broker pid=%d uid=%d killed by signal 9" % (p, a.uid)
        assert wait_until(lambda: dead in system.log_text(), 10)
    # Five abnormal ends in the window: A is refused for now, with a reason.
    with system.raw_as(a) as s:
        assert read_messages(s) == [{"error": "io.toolsd.LimitExceeded",
                                     "parameters": {"what": "broker_restarts", "limit": 5}}]
    assert "its broker keeps failing" in system.log_text()
    with system.client_as(b) as c:
        assert c.status()["uid"] == b.uid


def test_idle_broker_exits_and_comes_back(make_system, users, roots):
    a = users[0]
    d = make_system("BrokerIdleTimeoutSec=1\n")
    with d.client_as(a) as c:
        c.status()
        p = broker_of(a.uid)
    # No connection, no session: it leaves on its own, cleanly.
    assert wait_until(lambda: p not in brokers(), 15), d.log_text()
    assert wait_until(lambda: "broker pid=%d uid=%d exited" % (p, a.uid) in d.log_text(), 5)
    # A session keeps a broker alive past the idle time.
    with d.client_as(a) as c:
        s = open_session(c, roots[a.name])
        p2 = broker_of(a.uid)
        assert p2 != p
        time.sleep(2.5)
        assert py(s, "print('still')")["stdout"] == "still\n"
        assert broker_of(a.uid) == p2


# ---- limits ---------------------------------------------------------------------

def test_flooding_peer_hits_its_own_limit(make_system, users):
    a, b = users
    d = make_system("[Limits]\nMaxConnectionsPerUser=4\n")
    held = [d.client_as(a) for _ in range(4)]
    for c in held:
        assert c.status()["uid"] == a.uid
    for _ in range(3):
        with d.raw_as(a) as s:
            assert read_messages(s) == [{"error": "io.toolsd.LimitExceeded",
                                         "parameters": {"what": "connections_per_user", "limit": 4}}]
    # Other users still get in.
    with d.client_as(b) as c:
        assert c.status()["uid"] == b.uid
    # A closed connection is given back to A.
    held.pop().close()

    def one_more():
        try:
            with d.client_as(a) as c:
                return c.status()["uid"] == a.uid
        except (toolsd.LimitExceeded, toolsd.ProtocolError, OSError):
            return False
    assert wait_until(one_more, 10)
    for c in held:
        c.close()


def test_total_connection_limit(make_system, users):
    a, b = users
    d = make_system("[Limits]\nMaxConnections=2\nMaxConnectionsPerUser=2\n")
    held = [d.client_as(a), d.client_as(b)]
    for c in held:
        c.status()
    with d.raw_as(b) as s:
        assert read_messages(s) == [{"error": "io.toolsd.LimitExceeded",
                                     "parameters": {"what": "connections", "limit": 2}}]
    for c in held:
        c.close()


# ---- the master never reads a client byte ------------------------------------------

def test_master_does_not_read_client_bytes(system, users):
    a, b = users
    master = system.proc.pid
    os.kill(master, signal.SIGSTOP)
    try:
        # Sent while the connection waits in the master's accept queue: a
        # whole call, then garbage. Whatever the master read would be lost.
        s = system.raw_as(a)
        s.sendall(b'{"method":"io.toolsd.Status"}\0')
    finally:
        os.kill(master, signal.SIGCONT)
    s.settimeout(30)
    buf = b""
    while not buf.endswith(b"\0"):
        d = s.recv(65536)
        assert d, "closed before the reply"
        buf += d
    reply = json.loads(buf[:-1])
    assert reply["parameters"]["uid"] == a.uid and reply["parameters"]["mode"] == "system"
    # After the hand-over: garbage; the broker closes this connection.
    s.sendall(b"\xff\xfe not json {{{" * 100 + b"\0")
    read_messages(s)
    s.close()
    # And garbage from the first byte on another connection.
    with system.raw_as(b) as g:
        g.sendall(os.urandom(4096).replace(b"\0", b"x") + b"\0")
        read_messages(g)
    assert system.alive()
    with system.client_as(a) as c:
        assert c.status()["uid"] == a.uid
    log = system.log_text()
    assert "not json" not in log
    st = proc_status(master)
    assert int(st["CapEff"], 16) == MASTER_CAPS


# ---- doctor --------------------------------------------------------------------------

def toolsctl_doctor(system, user=None):
    def drop():
        os.setgroups([])
        os.setgid(user.gid)
        os.setuid(user.uid)
    env = dict(os.environ, TOOLSD_SOCKET=system.socket)
    p = subprocess.run([TOOLSCTL, "doctor"], env=env,
                       preexec_fn=drop if user else None, capture_output=True, text=True, timeout=60)
    return p


def test_toolsctl_doctor_as_root_and_user(system, users):
    a = users[0]
    for user, uid in ((None, 0), (a, a.uid)):
        p = toolsctl_doctor(system, user)
        out = p.stdout + p.stderr
        assert "system mode, serving uid %d" % uid in out, out
        assert "broker of uid %d" % uid in out, out
        assert "bwrap" in out, out


def test_doctor_reports_capabilities(system, users):
    a = users[0]
    with system.client_as(a) as c:
        checks = {x["name"]: x for x in c.doctor()}
    assert "capabilities" in checks
    assert checks["capabilities"]["ok"] is True
    detail = checks["capabilities"]["detail"]
    assert "CapEff=0 CapPrm=0 CapBnd=0 NoNewPrivs=1" in detail, detail


def test_doctor_checks_in_a_broker(system, users):
    a = users[0]
    with system.client_as(a) as c:
        checks = {x["name"]: x for x in c.doctor()}
    assert checks["mode"]["detail"] == "system mode, serving uid %d" % a.uid
    assert checks["socket"]["ok"] and "connections come from the master" in checks["socket"]["detail"]
    assert "sandbox" in checks and checks["sandbox"]["detail"]


# ---- systemd integration ---------------------------------------------------------------

def test_status_and_watchdog(make_system, users):
    a = users[0]
    d = make_system(env={"WATCHDOG_USEC": "200000"})
    with d.client_as(a) as c:
        c.status()
        assert wait_until(lambda: d.notified("STATUS=master: 1 brokers, 1 connections"), 10), d.notify.messages
    assert wait_until(lambda: d.notified("STATUS=master: 1 brokers, 0 connections"), 10), d.notify.messages
    # Pings every half period (100 ms): at least 5 in a second.
    def pings():
        return sum(m.split("\n").count("WATCHDOG=1") for m in list(d.notify.messages))
    before = pings()
    time.sleep(1.0)
    assert 5 <= pings() - before <= 15, pings() - before
    # STATUS= only when a count changes: no repeats while idle.
    statuses = [m for m in list(d.notify.messages) if m.startswith("STATUS=")]
    assert len(statuses) == len(set(statuses)) or len(statuses) < 10, statuses


def test_no_watchdog_no_pings(system, users):
    with system.client_as(users[0]) as c:
        c.status()
    time.sleep(0.5)
    assert not any("WATCHDOG=1" in m for m in list(system.notify.messages))


def test_clean_stop_ends_brokers(make_system, users):
    a, b = users
    d = make_system()
    with d.client_as(a) as ca, d.client_as(b) as cb:
        ca.status()
        cb.status()
        pids = [broker_of(a.uid), broker_of(b.uid)]
        assert d.stop() == 0
    for p in pids:
        assert not os.path.exists("/proc/%d" % p) or proc_status(p)["State"][0] == "Z"
    assert "master: shutting down" in d.log_text()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing")
def test_system_units_verify(tmpdir_short):
    paths = []
    for name in ("toolsd.socket", "toolsd.service"):
        with open(os.path.join(SRC, "systemd", "system", name)) as f:
            text = f.read().replace("@sbindir@/toolsd", TOOLSD)
        path = os.path.join(tmpdir_short, name)
        with open(path, "w") as f:
            f.write(text)
        paths.append(path)
    assert sorted(os.listdir(os.path.join(SRC, "systemd", "system"))) == ["toolsd.service", "toolsd.socket"]
    r = subprocess.run(["systemd-analyze", "verify", "--man=no"] + paths,
                       capture_output=True, text=True, cwd=tmpdir_short)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_system_units_content():
    with open(os.path.join(SRC, "systemd", "system", "toolsd.service")) as f:
        service = f.read()
    with open(os.path.join(SRC, "systemd", "system", "toolsd.socket")) as f:
        sock = f.read()
    assert "ExecStart=@sbindir@/toolsd --system" in service
    assert "Type=notify" in service and "WatchdogSec=" in service
    assert "CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL CAP_SETPCAP" in service
    assert "NoNewPrivileges=yes" in service
    assert "ListenStream=/run/toolsd/io.toolsd" in sock and "SocketMode=0666" in sock


# ---- the process limit, where the kernel applies it ---------------------------

def test_fork_bomb_hits_process_limit_as_a_user(system, users, roots):
    """RLIMIT_NPROC is never applied to host uid 0, so test_sandbox.py's fork
    bomb is skipped when the suite runs as root; a broker runs as a real
    user, and there the limit holds: forks fail with EAGAIN, the call ends,
    and the next call works."""
    from test_sandbox import FORK_STORM
    a = users[0]
    with system.client_as(a) as c:
        s = open_session(c, roots[a.name], limits={"processes": 20})
        r = py(s, FORK_STORM % ("bomb", 2000), timeout_ms=10000)
        assert r["outcome"] == "ok", r
        limit, line = r["stdout"].split("\n")[:2]
        forks, err = line.split()
        assert (limit, err) == ("20", "EAGAIN"), r["stdout"]
        assert int(forks) < 20
        again = py(s, "print('still here')")
        assert (again["outcome"], again["stdout"]) == ("ok", "still here\n"), again


ADJTIMEX = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(512)   # struct timex, modes = 0: a read-only query
print(libc.adjtimex(buf), ctypes.get_errno())
"""


def test_broker_filter_is_inherited(system, users, roots):
    """The broker's seccomp filter stays on everything it starts, and bwrap
    still builds its sandbox under it. adjtimex() with modes 0 is a query
    any process may make (the sandbox's own filter allows it): only the
    broker's filter turns it into EPERM."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.adjtimex(ctypes.create_string_buffer(512)) >= 0  # allowed outside
    a = users[0]
    with system.client_as(a) as c:
        s = open_session(c, roots[a.name])
        r = py(s, ADJTIMEX)
    assert r["outcome"] == "ok" and r["sandboxed"] is True, r
    assert r["stdout"].split() == ["-1", "1"], r["stdout"]  # EPERM


# ---- a broker that lies -------------------------------------------------------

def broker_control_socket(pid):
    """The broker's end of its control socket (fd 3), taken with
    pidfd_getfd() as its user could with ptrace: what the broker says to
    the master is what its user makes it say."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        fd = libc.syscall(438, pidfd, 3, 0)  # SYS_pidfd_getfd
        assert fd >= 0, os.strerror(ctypes.get_errno())
    finally:
        os.close(pidfd)
    return socket.socket(fileno=fd)


def test_lying_broker_cannot_multiply(system, users):
    """A broker that says 'x' (I exit) but stays: its user gets one more
    broker, not more; the liar still counts until it is reaped, and the
    master kills it 5 s later."""
    a = users[0]
    c1 = system.client_as(a)
    c1.status()  # keeps the first broker busy: it does not leave on its own
    p1 = broker_of(a.uid)
    broker_control_socket(p1).send(b"x")
    with system.client_as(a) as c2:
        c2.status()
        p2 = wait_until(lambda: [p for p, u in brokers().items() if u == a.uid and p != p1], 10)
        assert p2, brokers()
        broker_control_socket(p2[0]).send(b"x")
        # Two brokers of this uid alive: a third is refused.
        with system.raw_as(a) as s:
            assert read_messages(s) == [{"error": "io.toolsd.LimitExceeded",
                                         "parameters": {"what": "brokers_per_user", "limit": 2}}]
        # The liar with a connection open is killed by the master.
        killed = "broker pid=%d uid=%d said it exits and did not; killing it" % (p1, a.uid)
        assert wait_until(lambda: killed in system.log_text(), 15), system.log_text()
        assert wait_until(lambda: p1 not in brokers(), 10)
        with pytest.raises((toolsd.ConnectionClosed, ConnectionError, OSError)):
            c1.status()
    c1.close()


def test_brokers_die_with_a_killed_master(system, users):
    """PR_SET_PDEATHSIG is set after the uid change (which clears it): a
    master killed outright takes its brokers with it."""
    a, b = users
    with system.client_as(a) as ca, system.client_as(b) as cb:
        ca.status()
        cb.status()
        pa, pb = broker_of(a.uid), broker_of(b.uid)
        assert system.stop(signal.SIGKILL) == -signal.SIGKILL
        assert wait_until(lambda: pa not in brokers() and pb not in brokers(), 10), brokers()
