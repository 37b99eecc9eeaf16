"""toolsd as a daemon: sessions, calls, Status and Doctor, peers of another
uid, socket activation, sd_notify, shutdown, logging and configuration
errors, against the real binary. Nothing sleeps to synchronise: waits are
socket reads with timeouts or polls with deadlines.
"""

import json
import os
import pwd
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

from conftest import PROFILES, SRC
from conftest import TOOLSCTL, TOOLSD, Daemon, check_reply, skill, toolsd
from test_protocol import Reader, err_reply, final_of, ok_reply, open_session, send, start_streamed, status_ok, \
    wait_until

HEX32 = re.compile(r"[0-9a-f]{32}")


# ---- sessions ---------------------------------------------------------------------

@pytest.fixture
def client(daemon):
    with daemon.client(timeout=30) as c:
        yield c


def refuse(c, params, field, reason=None):
    base = {"skill": skill(("echo",))}
    base.update(params)
    with pytest.raises(toolsd.InvalidArgument) as e:
        c.call("io.toolsd.OpenSession", base)
    assert e.value.parameters["field"] == field, e.value.parameters
    if reason is not None:
        assert reason in e.value.parameters["reason"], e.value.parameters
    assert c.list_sessions() == []
    return e.value.parameters["reason"]


def test_open_session_refusals(client, root, tmpdir_short):
    refuse(client, {"artifacts_root": "relative/dir"}, "artifacts_root", "absolute")
    refuse(client, {"artifacts_root": ""}, "artifacts_root", "absolute")
    refuse(client, {"artifacts_root": os.path.join(root, "nope")}, "artifacts_root", "No such file")
    f = os.path.join(tmpdir_short, "file")
    open(f, "w").close()
    refuse(client, {"artifacts_root": f}, "artifacts_root", "Not a directory")
    link = os.path.join(tmpdir_short, "link")
    os.symlink(root, link)
    refuse(client, {"artifacts_root": link}, "artifacts_root", "cannot open as a directory")
    ww = os.path.join(tmpdir_short, "ww")
    os.mkdir(ww)
    os.chmod(ww, 0o777)
    refuse(client, {"artifacts_root": ww}, "artifacts_root", "world-writable")
    refuse(client, {"artifacts_root": "/"}, "artifacts_root", "must not be /")
    refuse(client, {"artifacts_root": root, "skill": skill(("nope",))}, "skill.tools[0]", "no such tool")
    refuse(client, {"artifacts_root": root, "skill": skill(("echo", "rm"))}, "skill.tools[1]")
    refuse(client, {"artifacts_root": root, "skill": skill(("echo",), profile="nope")}, "skill.profile")
    refuse(client, {"artifacts_root": root, "skill": skill(("echo",), name="")}, "skill.name")
    refuse(client, {"artifacts_root": root, "skill": skill(("echo",), name="a\nb")}, "skill.name")
    refuse(client, {"artifacts_root": root, "skill": skill(("echo",), limits={"timeout_ms": 0})},
           "skill.limits.timeout_ms")
    refuse(client, {"artifacts_root": root, "skill": skill(("echo",), limits={"output_bytes": -1})},
           "skill.limits.output_bytes")
    for bad in ("../x", ".hidden", "-x", "a/b", "", "x" * 129, "a b"):
        refuse(client, {"artifacts_root": root, "task_id": bad}, "task_id")
    refuse(client, {"artifacts_root": root, "run_id": "a\x01"}, "run_id")
    refuse(client, {"artifacts_root": root, "role": ""}, "role")
    for bad in ("maybe", "", "OFF"):
        refuse(client, {"artifacts_root": root, "sandbox": bad}, "sandbox")
    # Nothing was created by a refusal.
    assert not os.path.exists(os.path.join(ww, "tool_calls"))


def test_sessions_ids_list_close(daemon, root):
    a = daemon.client(timeout=30)
    b = daemon.client(timeout=30)
    ids = set()
    for i in range(5):
        r = open_session(a, root, task_id="t%d" % i, run_id="run 1", role="coder")
        assert HEX32.fullmatch(r["session"])
        assert r["sandboxed"] is True and r["backend"] == "bwrap"
        assert r["profile"] == "passive" and r["network"] is False and r["dropped_env"] == []
        assert [t["name"] for t in r["tools"]] == ["echo"]
        ids.add(r["session"])
    assert len(ids) == 5
    # Same uid, another connection: the same sessions.
    listed = check_reply("io.toolsd.ListSessions", b.call("io.toolsd.ListSessions"))["sessions"]
    assert {x["session"] for x in listed} == ids
    for x in listed:
        assert x["uid"] == os.geteuid()
        assert x["skill"] == "test" and x["profile"] == "passive"
        assert x["artifacts_root"] == os.path.realpath(root)
        assert x["run_id"] == "run 1" and x["role"] == "coder"
        assert re.fullmatch(r"t[0-4]", x["task_id"])
        assert x["running_calls"] == 0 and x["age_seconds"] >= 0 and x["idle_seconds"] >= 0
    # tool_calls/ was made, 0700.
    st = os.lstat(os.path.join(root, "tool_calls"))
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    # Closing from the other connection works; then the id is gone everywhere.
    sid = sorted(ids)[0]
    assert b.call("io.toolsd.CloseSession", {"session": sid}) == {}
    for method, params in (("io.toolsd.Call", {"session": sid, "tool": "echo", "arguments": {"text": "x"}}),
                           ("io.toolsd.ListTools", {"session": sid}),
                           ("io.toolsd.CloseSession", {"session": sid})):
        with pytest.raises(toolsd.NoSuchSession) as e:
            a.call(method, params)
        assert e.value.parameters == {"session": sid}
    assert len(a.list_sessions()) == 4
    # The task id defaults to the session id.
    r = open_session(a, root)
    assert [x["task_id"] for x in a.list_sessions() if x["session"] == r["session"]] == [r["session"]]
    a.close()
    b.close()


def test_made_up_ids(client, root):
    open_session(client, root)
    for sid in ("0" * 32, "x", "", "A" * 32, "0" * 33):
        with pytest.raises(toolsd.NoSuchSession) as e:
            client.call("io.toolsd.ListTools", {"session": sid})
        assert e.value.parameters == {"session": sid}
        with pytest.raises(toolsd.NoSuchSession):
            client.call("io.toolsd.CloseSession", {"session": sid})
    for cid in ("0" * 32, "", "nope"):
        with pytest.raises(toolsd.NoSuchCall) as e:
            client.cancel(cid)
        assert e.value.parameters == {"call_id": cid}
    assert len(client.list_sessions()) == 1


def test_sessions_survive_their_connection(daemon, root):
    with daemon.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
    with daemon.client(timeout=30) as c:
        assert [x["session"] for x in c.list_sessions()] == [sid]
        r = c.call("io.toolsd.Call", {"session": sid, "tool": "echo", "arguments": {"text": "again"}})
        assert r["result"]["text"] == "again"


def test_idle_expiry(make_daemon, root):
    d = make_daemon(config="[Daemon]\nSessionIdleTimeoutSec=1\n")
    with d.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
        keep = open_session(c, root)["session"]
        t0 = time.monotonic()

        def expired():
            # Using keep resets its idle time; sid is left alone.
            c.call("io.toolsd.Call", {"session": keep, "tool": "echo", "arguments": {"text": "."}})
            return sid not in [x["session"] for x in c.list_sessions()]
        wait_until(expired, timeout=10, what="idle session expired")
        assert time.monotonic() - t0 >= 1.0
        assert [x["session"] for x in c.list_sessions()] == [keep]
        with pytest.raises(toolsd.NoSuchSession):
            c.call("io.toolsd.ListTools", {"session": sid})
    assert "expired after 1 s idle" in d.log_text()


# ---- calls ------------------------------------------------------------------------

def test_echo_end_to_end(client, root):
    sid = open_session(client, root, skill=skill(("echo", "run_shell")))["session"]
    r = check_reply("io.toolsd.Call", client.call("io.toolsd.Call", {
        "session": sid, "tool": "echo", "arguments": {"text": "x\u00e9\u2603"}}))
    assert set(r) == {"call_id", "result"} and HEX32.fullmatch(r["call_id"])
    res = r["result"]
    assert res["outcome"] == "ok" and res["text"] == "x\u00e9\u2603"
    assert res["sandboxed"] is True and res["truncated"] is False
    assert isinstance(res["duration_ms"], int) and res["duration_ms"] >= 0
    ids = {client.call("io.toolsd.Call", {"session": sid, "tool": "echo",
                                          "arguments": {"text": ""}})["call_id"] for _ in range(5)}
    assert len(ids) == 5
    # Bad arguments to echo: a refusal the model reads, not an error.
    for args in ({}, {"text": 1}, {"text": "a", "more": 1}):
        res = client.call("io.toolsd.Call", {"session": sid, "tool": "echo", "arguments": args})["result"]
        assert (res["outcome"], res["reason"]) == ("refused", "arguments"), res


def test_call_refusals(client, root):
    sid = open_session(client, root, skill=skill(("echo",)))["session"]
    for tool in ("run_shell", "nope", ""):
        r = check_reply("io.toolsd.Call", client.call("io.toolsd.Call", {
            "session": sid, "tool": tool, "arguments": {"argv": ["ls"]}}))
        assert r["result"]["outcome"] == "refused"
        assert r["result"]["reason"] == "not_in_loadout"
        assert "not in this session's loadout" in r["result"]["text"]
    # arguments is an object in the interface: anything else is the caller's
    # mistake, refused before any tool sees it.
    for args in ([1], "text", 5, True):
        with pytest.raises(toolsd.InvalidParameter) as e:
            client.call("io.toolsd.Call", {"session": sid, "tool": "echo", "arguments": args})
        assert e.value.parameters == {"parameter": "arguments"}
    # Absent arguments are an empty object.
    r = client.call("io.toolsd.Call", {"session": sid, "tool": "echo"})
    assert (r["result"]["outcome"], r["result"]["reason"]) == ("refused", "arguments")


def test_call_timeout_bounds(make_daemon, root):
    d = make_daemon(config="[Calls]\nDefaultTimeoutSec=10\nMaxTimeoutSec=20\n")
    with d.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
        call = {"session": sid, "tool": "echo", "arguments": {"text": "t"}}
        for bad in (0, -1, 20001, 2 ** 40):
            with pytest.raises(toolsd.InvalidArgument) as e:
                c.call("io.toolsd.Call", dict(call, timeout_ms=bad))
            assert e.value.parameters["field"] == "timeout_ms"
            assert "20000" in e.value.parameters["reason"]
        # Up to MaxTimeoutSec, not only up to the default.
        for good in (1, 10000, 15000, 20000):
            assert c.call("io.toolsd.Call", dict(call, timeout_ms=good))["result"]["outcome"] == "ok"
        # A skill lowers the maximum for its session.
        low = open_session(c, root, skill=skill(("echo",), limits={"timeout_ms": 5000}))["session"]
        with pytest.raises(toolsd.InvalidArgument) as e:
            c.call("io.toolsd.Call", dict(call, session=low, timeout_ms=5001))
        assert "5000" in e.value.parameters["reason"]
        assert c.call("io.toolsd.Call", dict(call, session=low, timeout_ms=5000))["result"]["outcome"] == "ok"


# ---- Status and Doctor ------------------------------------------------------------

def test_status_fields(daemon, root):
    with daemon.client(timeout=30) as c, daemon.client(timeout=30) as c2:
        st = check_reply("io.toolsd.Status", c.status())
        assert st["version"] == "0.1.0" or re.fullmatch(r"\d+\.\d+\.\d+.*", st["version"])
        assert st["mode"] == "user"
        assert st["uid"] == os.geteuid()
        assert (st["sessions"], st["running_calls"], st["connections"]) == (0, 0, 2)
        assert st["backend"] == "bwrap" and st["sandbox_available"] is True
        assert st["require_sandbox"] is False
        assert 0 <= st["uptime_seconds"] < 600
        open_session(c, root)
        assert c2.status()["sessions"] == 1
    out = subprocess.run([TOOLSD, "--version"], capture_output=True, text=True, check=True).stdout
    assert out == "toolsd %s\n" % st["version"]


def test_all_users_in_user_mode(daemon, root):
    """A private daemon serves one user: root's all_users view is its own
    sessions, complete, and one user in Status."""
    assert os.geteuid() == 0, "the suite runs as root"
    with daemon.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
        view = check_reply("io.toolsd.ListSessions", c.list_all_sessions())
        assert [x["session"] for x in view["sessions"]] == [sid]
        assert view["incomplete_uids"] == []
        st = check_reply("io.toolsd.Status", c.status(all_users=True))
        assert st["users"] == [{"uid": 0, "sessions": 1, "running_calls": 0, "connections": 1, "complete": True}]
        assert "incomplete_uids" not in c.call("io.toolsd.ListSessions", {"all_users": False})


def test_status_require_sandbox(make_daemon):
    d = make_daemon(config="[Sandbox]\nRequireSandbox=yes\n")
    with d.client(timeout=30) as c:
        assert c.status()["require_sandbox"] is True


def test_doctor(daemon):
    with daemon.client(timeout=30) as c:
        checks = check_reply("io.toolsd.Doctor", c.call("io.toolsd.Doctor"))["checks"]
    by = {x["name"]: x for x in checks}
    assert len(by) == len(checks), "duplicate check names"
    for name in ("sandbox", "bubblewrap", "user_namespaces", "socket", "config", "profiles"):
        assert name in by, name
        assert by[name]["ok"] is True, by[name]
        assert by[name]["detail"]
    assert daemon.socket in by["socket"]["detail"] and "0600" in by["socket"]["detail"]
    assert by["config"]["detail"] == daemon.config_path
    assert PROFILES in by["profiles"]["detail"]
    assert "0.8" in by["bubblewrap"]["detail"]
    # A socket others may connect to is flagged.
    os.chmod(daemon.socket, 0o666)
    with daemon.client(timeout=30) as c:
        sock = {x["name"]: x for x in c.doctor()}["socket"]
    assert sock["ok"] is False and "0666" in sock["detail"]


# ---- peers of another uid -----------------------------------------------------------

@pytest.fixture
def other_user():
    name = "tsd-it-%d" % random.randrange(10 ** 6)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True)
    try:
        pw = pwd.getpwnam(name)
        yield pw.pw_uid, pw.pw_gid
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


FOREIGN_PEER = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(json.dumps({"connect_errno": e.errno}))
    sys.exit(0)
try:
    s.sendall(b'{"method":"io.toolsd.ListSessions"}\0')
except OSError:
    pass
buf = b""
while True:
    try:
        d = s.recv(65536)
    except ConnectionResetError:
        break
    if not d:
        break
    buf += d
print(json.dumps({"messages": [json.loads(m) for m in buf.split(b"\0") if m],
                  "unterminated": buf[-1:] not in (b"", b"\0")}))
"""


def run_as(uid, gid, path):
    def drop():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    p = subprocess.run(["/usr/bin/python3", "-c", FOREIGN_PEER, path], preexec_fn=drop,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_foreign_uid_refused(daemon, root, other_user, tmpdir_short):
    import errno
    uid, gid = other_user
    with daemon.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
        os.chmod(tmpdir_short, 0o711)
        # The socket file is 0600: the kernel refuses connect() itself.
        assert stat.S_IMODE(os.stat(daemon.socket).st_mode) == 0o600
        assert run_as(uid, gid, daemon.socket) == {"connect_errno": errno.EACCES}
        # With the file opened up, SO_PEERCRED is what refuses.
        os.chmod(daemon.socket, 0o666)
        got = run_as(uid, gid, daemon.socket)
        assert not got["unterminated"] and len(got["messages"]) == 1, got
        err_reply(got["messages"][0], "org.varlink.service.PermissionDenied", {})
        # Our own connection and session are untouched, and the refused
        # peer is not counted.
        assert [x["session"] for x in c.list_sessions()] == [sid]
        assert c.status()["connections"] == 1
    assert "refused connection from uid=%d" % uid in daemon.log_text()
    status_ok(daemon)


# ---- socket activation, sd_notify, shutdown ---------------------------------------

def wait_for_prefix(notify, prefix, timeout=30):
    """The first notify line starting with prefix (reads more as needed)."""
    deadline = time.monotonic() + timeout
    while True:
        for m in notify.messages:
            for line in m.split("\n"):
                if line.startswith(prefix):
                    return line
        left = deadline - time.monotonic()
        assert left > 0, "no %s in %r" % (prefix, notify.messages)
        notify.sock.settimeout(left)
        notify.messages.append(notify.sock.recv(65536).decode())


def test_socket_activation(make_daemon, tmpdir_short):
    d = make_daemon(listen=False, start=False)
    path = os.path.join(tmpdir_short, "activated.sock")
    d.socket = path
    d.env.pop("NOTIFY_SOCKET")
    # systemd-socket-activate binds, then starts toolsd on the first
    # connection: Daemon.start() would wait for READY=1 before connecting.
    d.log = open(d.log_path, "ab")
    d.proc = subprocess.Popen(["systemd-socket-activate", "-l", path, "--fdname=io.toolsd",
                               "-E", "NOTIFY_SOCKET=" + d.notify.path] + d.command(),
                              env=d.env, stdout=d.log, stderr=d.log, stdin=subprocess.DEVNULL)
    wait_until(lambda: os.path.exists(path) or d.proc.poll() is not None, what="socket bound")
    assert d.notify.messages == []
    with d.client(timeout=30) as c:
        d.notify.wait_for("READY=1", proc=d.proc)
        st = check_reply("io.toolsd.Status", c.status())
        assert st["connections"] == 1 and st["mode"] == "user"
        sock = {x["name"]: x for x in c.doctor()}["socket"]
        assert sock["ok"] is True and "socket activation" in sock["detail"]
    if os.access(TOOLSCTL, os.X_OK):
        p = subprocess.run([TOOLSCTL, "--socket", path, "status"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert "user" in p.stdout and str(os.geteuid()) in p.stdout, p.stdout
    assert "listening on the socket passed by systemd" in d.log_text()
    assert d.stop() == 0
    # The socket was systemd's: toolsd leaves the file alone.
    assert os.path.exists(path)


def processes_with(token):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if token.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_notify_and_sigterm_with_running_call(make_daemon, root):
    d = make_daemon()
    assert "READY=1" in "\n".join(d.notify.messages)
    status = wait_for_prefix(d.notify, "STATUS=")
    assert re.fullmatch(r"STATUS=0 sessions, 0 running calls, 0 connections", status), status
    token = "tsd-marker-%d" % random.randrange(10 ** 9)
    with d.client(timeout=30) as c:
        sid = open_session(c, root, skill=skill(("run_shell",), profile="full"))["session"]
        prog = ("import time\nprint('up', flush=True)\n"
                "while True:\n open('mark', 'a').write('x')\n time.sleep(0.02)\n# " + token)
        s, r, cid = start_streamed(d, sid, argv=["python3", "-c", prog])
        assert processes_with(token), "the command is not running"
        d.proc.send_signal(signal.SIGTERM)
        # The call's client gets a final cancelled result or a hang-up.
        rep = r.next()
        while rep is not None and rep.get("continues"):
            rep = r.next()
        if rep is not None:
            res = ok_reply("io.toolsd.Call", rep)
            assert res["result"]["outcome"] == "cancelled", res
            assert r.closed()
        assert d.proc.wait(30) == 0
        d.notify.wait_for("STOPPING=1", timeout=10)
        assert not os.path.exists(d.socket)
        assert processes_with(token) == []
        size = os.path.getsize(os.path.join(root, "mark"))
        time.sleep(0.3)  # not synchronisation: the marker must stay still
        assert os.path.getsize(os.path.join(root, "mark")) == size
        s.close()
    assert "received SIGTERM, shutting down" in d.log_text()
    assert d.stop() == 0


# ---- logging and configuration ------------------------------------------------------

def test_log_lines(make_daemon, root, monkeypatch):
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    d = make_daemon()
    with d.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
        for t in ("a", "b", "c"):
            c.call("io.toolsd.Call", {"session": sid, "tool": "echo", "arguments": {"text": t}})
        c.call("io.toolsd.Call", {"session": sid, "tool": "nope"})
    assert d.stop() == 0
    lines = d.log_text().splitlines()
    assert lines and all(re.match(r"<[0-7]>toolsd: ", x) for x in lines), lines
    assert any(x.startswith("<6>toolsd: ") for x in lines)
    calls = [x for x in lines if "tool call" in x]
    assert len(calls) == 4, calls
    outcomes = [re.search(r"TOOLSD_OUTCOME=(\S*)", x).group(1) for x in calls]
    assert outcomes == ["ok", "ok", "ok", "refused"]
    assert all("TOOLSD_SESSION=" + sid in x for x in calls)
    assert "TOOLSD_REASON=not_in_loadout" in calls[3]


@pytest.mark.parametrize("body, line, what", [
    ("[Daemon]\nBogusKey=1\n", 4, "BogusKey"),
    ("[Limits]\n\nMaxMessageSize=lots\n", 5, "MaxMessageSize"),
    ("[Nope]\nX=1\n", 3, "Nope"),
])
def test_bad_config_refused(tmpdir_short, body, line, what):
    conf = os.path.join(tmpdir_short, "bad.conf")
    with open(conf, "w") as f:
        f.write("[Daemon]\nProfilesDirectory=%s\n" % PROFILES + body)
    sock = os.path.join(tmpdir_short, "s")
    p = subprocess.run([TOOLSD, "--config", conf, "--listen", sock], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL, env={"PATH": os.environ["PATH"]})
    assert p.returncode != 0
    assert "%s:%d:" % (conf, line) in p.stderr, p.stderr
    assert what in p.stderr, p.stderr
    assert not os.path.exists(sock)


# ---- a client from the spec alone ---------------------------------------------------

def test_client_from_the_spec(daemon, root):
    """Speaks Varlink from varlink.org alone: raw socket, json, NUL."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(daemon.socket)
    buf = b""

    def call(method, parameters=None):
        nonlocal buf
        msg = {"method": method}
        if parameters is not None:
            msg["parameters"] = parameters
        s.sendall(json.dumps(msg).encode() + b"\0")
        while b"\0" not in buf:
            data = s.recv(4096)
            assert data
            buf += data
        m, _, buf = buf.partition(b"\0")
        return json.loads(m)

    info = call("org.varlink.service.GetInfo")["parameters"]
    assert "io.toolsd" in info["interfaces"]
    desc = call("org.varlink.service.GetInterfaceDescription", {"interface": "io.toolsd"})["parameters"]
    methods = re.findall(r"^method (\w+)\(", desc["description"], re.M)
    assert {"OpenSession", "CloseSession", "Call", "Status"} <= set(methods)
    opened = call("io.toolsd.OpenSession", {"skill": {"name": "spec", "tools": ["echo"]},
                                            "artifacts_root": root})
    sid = opened["parameters"]["session"]
    assert call("io.toolsd.CloseSession", {"session": sid}) == {"parameters": {}} or \
        call("io.toolsd.ListSessions")["parameters"]["sessions"] == []
    assert call("io.toolsd.ListSessions")["parameters"]["sessions"] == []
    s.close()


@pytest.mark.skipif(shutil.which("varlinkctl") is None, reason="no varlinkctl (systemd < 255)")
def test_varlinkctl(daemon):
    p = subprocess.run(["varlinkctl", "call", daemon.socket, "io.toolsd.Status", "{}"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["uid"] == os.geteuid()
