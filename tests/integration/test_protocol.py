"""The Varlink wire protocol of toolsd, against the real daemon.

Framing (NUL-terminated JSON, split and pipelined messages), more/oneway,
the org.varlink.service errors, malformed input (each closes only its own
connection), and the limits a peer runs into. Replies are validated against
the interface definition with check_reply. Nothing sleeps to synchronise:
waits are reads on sockets with timeouts, or polls with deadlines.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import time

import pytest

from conftest import PROFILES, SRC, TOOLSD, check_reply, skill, toolsd, varlink_idl

IFACE_PATH = os.path.join(SRC, "proto", "io.toolsd.varlink")
SERVICE_PATH = os.path.join(SRC, "proto", "org.varlink.service.varlink")


# ---- raw helpers --------------------------------------------------------------

def send(sock, *msgs):
    """Sends the messages (dicts or bytes) in one write, each NUL-terminated."""
    data = b""
    for m in msgs:
        if isinstance(m, dict):
            m = json.dumps(m).encode()
        data += m + b"\0"
    sock.sendall(data)


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def next(self, timeout=30):
        """The next whole message, parsed; None when the peer closed."""
        self.sock.settimeout(timeout)
        while b"\0" not in self.buf:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                # Closed while our unread request bytes were still queued.
                data = b""
            if not data:
                assert self.buf == b"", "partial reply before close: %r" % self.buf[:200]
                return None
            self.buf += data
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def closed(self, timeout=30):
        """True when the peer closes without sending anything more."""
        return self.next(timeout) is None


def rcall(sock, reader, method, params=None, **flags):
    m = {"method": method}
    if params is not None:
        m["parameters"] = params
    m.update(flags)
    send(sock, m)
    return reader.next()


def ok_reply(method, reply):
    """A final, non-error reply; returns its parameters after validating them."""
    assert reply is not None, "connection closed"
    assert "error" not in reply, reply
    assert "continues" not in reply, reply
    assert set(reply) <= {"parameters"}, reply
    return check_reply(method, reply.get("parameters", {}))


def err_reply(reply, error, params=None):
    assert reply is not None, "connection closed"
    assert reply.get("error") == error, reply
    assert set(reply) <= {"error", "parameters"}, reply
    if params is not None:
        assert reply.get("parameters", {}) == params, reply
    if error.startswith("io.toolsd."):
        varlink_idl.validate_error(error, reply.get("parameters", {}))
    return reply.get("parameters", {})


def status_ok(d):
    """The daemon is alive and answering a fresh connection."""
    assert d.alive()
    with d.client(timeout=30) as c:
        check_reply("io.toolsd.Status", c.status())


def open_session(c, root, tools=("echo",), **kw):
    params = {"skill": skill(tools), "artifacts_root": root}
    params.update(kw)
    return check_reply("io.toolsd.OpenSession", c.call("io.toolsd.OpenSession", params))


# ---- org.varlink.service ------------------------------------------------------

def test_get_info(daemon):
    with daemon.client(timeout=30) as c:
        info = check_reply("org.varlink.service.GetInfo", c.call("org.varlink.service.GetInfo"))
    assert info["vendor"] == "toolsd"
    assert info["product"] == "toolsd"
    assert re.fullmatch(r"\d+\.\d+.*", info["version"]), info
    assert sorted(info["interfaces"]) == ["io.toolsd", "org.varlink.service"]


def test_interface_description_is_the_source(daemon):
    with daemon.client(timeout=30) as c:
        for name, path in (("io.toolsd", IFACE_PATH), ("org.varlink.service", SERVICE_PATH)):
            r = check_reply("org.varlink.service.GetInterfaceDescription",
                            c.call("org.varlink.service.GetInterfaceDescription", {"interface": name}))
            with open(path, "rb") as f:
                assert r["description"].encode() == f.read(), name
            assert set(r) == {"description"}
        with pytest.raises(toolsd.InterfaceNotFound) as e:
            c.call("org.varlink.service.GetInterfaceDescription", {"interface": "io.nope"})
        assert e.value.parameters == {"interface": "io.nope"}
        # The same connection goes on.
        check_reply("io.toolsd.Status", c.status())


def test_unknown_method_and_interface(daemon):
    with daemon.client(timeout=30) as c:
        with pytest.raises(toolsd.MethodNotFound) as e:
            c.call("io.toolsd.Nope")
        assert e.value.parameters == {"method": "io.toolsd.Nope"}
        with pytest.raises(toolsd.MethodNotFound) as e:
            c.call("org.varlink.service.Nope")
        assert e.value.parameters == {"method": "org.varlink.service.Nope"}
        with pytest.raises(toolsd.InterfaceNotFound) as e:
            c.call("com.example.Foo")
        assert e.value.parameters == {"interface": "com.example"}
        # A type or error name is not a method.
        with pytest.raises(toolsd.MethodNotFound):
            c.call("io.toolsd.Limits")
        with pytest.raises(toolsd.MethodNotFound):
            c.call("io.toolsd.NoSuchSession")
        check_reply("io.toolsd.Status", c.status())


@pytest.mark.parametrize("params, field", [
    ({"bogus": 1}, "bogus"),
    ({"skill": {"name": "x", "tools": []}, "artifacts_root": "/tmp", "extra": True}, "extra"),
    ({"skill": {"name": "x", "tools": [], "limits": {"timeout_ms": "x"}}, "artifacts_root": "/tmp"},
     "skill.limits.timeout_ms"),
    ({"skill": {"name": "x", "tools": [1]}, "artifacts_root": "/tmp"}, "skill.tools[0]"),
    ({"skill": {"name": "x", "tools": [], "oops": 1}, "artifacts_root": "/tmp"}, "skill.oops"),
    ({"artifacts_root": "/tmp"}, "skill"),
    ({"skill": {"name": "x", "tools": []}, "artifacts_root": 5}, "artifacts_root"),
    ({"skill": {"name": "x", "tools": []}, "artifacts_root": "/tmp", "env": {"A": 1}}, "env.A"),
])
def test_invalid_parameter_names_field(daemon, params, field):
    method = "io.toolsd.Status" if field == "bogus" else "io.toolsd.OpenSession"
    with daemon.client(timeout=30) as c:
        with pytest.raises(toolsd.InvalidParameter) as e:
            c.call(method, params)
        assert e.value.parameters == {"parameter": field}
        assert c.list_sessions() == []


def test_parameters_absent_null_empty_equivalent(daemon):
    s = daemon.raw()
    r = Reader(s)
    replies = []
    for m in ({"method": "io.toolsd.Status"},
              {"method": "io.toolsd.Status", "parameters": None},
              {"method": "io.toolsd.Status", "parameters": {}}):
        replies.append(ok_reply("io.toolsd.Status", rcall(s, r, **m)))
    for rep in replies:
        rep.pop("uptime_seconds")
    assert replies[0] == replies[1] == replies[2]
    s.close()


def test_every_method_reply_validates(daemon, root):
    """One pass over every method, each reply checked against the IDL."""
    with daemon.client(timeout=30) as c:
        check_reply("org.varlink.service.GetInfo", c.call("org.varlink.service.GetInfo"))
        st = check_reply("io.toolsd.Status", c.status())
        doc = check_reply("io.toolsd.Doctor", c.call("io.toolsd.Doctor"))
        assert doc["checks"]
        opened = open_session(c, root, tools=("echo", "run_shell"))
        sid = opened["session"]
        lt = check_reply("io.toolsd.ListTools", c.call("io.toolsd.ListTools", {"session": sid}))
        assert [t["name"] for t in lt["tools"]] == [t["name"] for t in opened["tools"]]
        assert sorted(t["name"] for t in lt["tools"]) == ["echo", "run_shell"]
        ls = check_reply("io.toolsd.ListSessions", c.call("io.toolsd.ListSessions"))
        assert [x["session"] for x in ls["sessions"]] == [sid]
        cr = check_reply("io.toolsd.Call", c.call("io.toolsd.Call", {
            "session": sid, "tool": "echo", "arguments": {"text": "hi"}}))
        assert cr["result"]["outcome"] == "ok"
        assert cr["result"]["text"] == "hi"
        for p in c.call_more("io.toolsd.Call", {"session": sid, "tool": "echo", "arguments": {"text": "x"}}):
            check_reply("io.toolsd.Call", p)
        with pytest.raises(toolsd.NoSuchCall):
            c.cancel("0" * 32)
        assert check_reply("io.toolsd.CloseSession",
                           c.call("io.toolsd.CloseSession", {"session": sid})) == {}
    assert st["uid"] == os.geteuid()


# ---- framing ------------------------------------------------------------------

def test_two_calls_in_one_send(daemon):
    s = daemon.raw()
    r = Reader(s)
    send(s, {"method": "io.toolsd.Status"}, {"method": "org.varlink.service.GetInfo"})
    ok_reply("io.toolsd.Status", r.next())
    ok_reply("org.varlink.service.GetInfo", r.next())
    s.close()


def test_one_call_byte_by_byte(daemon):
    s = daemon.raw()
    r = Reader(s)
    msg = json.dumps({"method": "org.varlink.service.GetInterfaceDescription",
                      "parameters": {"interface": "io.toolsd"}}).encode() + b"\0"
    for i in range(len(msg)):
        s.send(msg[i:i + 1])
    rep = ok_reply("org.varlink.service.GetInterfaceDescription", r.next())
    with open(IFACE_PATH) as f:
        assert rep["description"] == f.read()
    # Nothing more was sent than one reply.
    s.settimeout(0.2)
    with pytest.raises(socket.timeout):
        s.recv(1)
    s.close()


def test_pipelined_calls_answered_in_order(daemon, root):
    with daemon.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
    s = daemon.raw()
    r = Reader(s)
    call = {"session": sid, "tool": "echo", "arguments": {"text": "one"}}
    send(s, {"method": "io.toolsd.Call", "parameters": call},
         {"method": "io.toolsd.Call", "parameters": dict(call, arguments={"text": "two"}), "more": True},
         {"method": "io.toolsd.ListSessions"},
         {"method": "io.toolsd.CloseSession", "parameters": {"session": sid}},
         {"method": "io.toolsd.ListSessions"},
         {"method": "io.toolsd.Call", "parameters": call})
    p = ok_reply("io.toolsd.Call", r.next())
    assert p["result"]["text"] == "one"
    # The streamed call: continues replies, then the final one.
    first = r.next()
    assert first["continues"] is True
    cid = check_reply("io.toolsd.Call", first["parameters"])["call_id"]
    chunk = r.next()
    assert chunk["continues"] is True
    assert chunk["parameters"]["chunk"] == {"stream": "stdout", "data": "two"}
    last = ok_reply("io.toolsd.Call", r.next())
    assert last["call_id"] == cid and last["result"]["text"] == "two"
    assert [x["session"] for x in ok_reply("io.toolsd.ListSessions", r.next())["sessions"]] == [sid]
    assert ok_reply("io.toolsd.CloseSession", r.next()) == {}
    assert ok_reply("io.toolsd.ListSessions", r.next())["sessions"] == []
    err_reply(r.next(), "io.toolsd.NoSuchSession", {"session": sid})
    s.close()


def test_oneway_gets_no_reply(daemon, root):
    s = daemon.raw()
    r = Reader(s)
    send(s, {"method": "org.varlink.service.GetInfo", "oneway": True},
         {"method": "io.toolsd.Nope", "oneway": True},
         {"method": "io.toolsd.Status"})
    rep = r.next()
    ok_reply("io.toolsd.Status", rep)
    assert "version" in rep["parameters"] and "vendor" not in rep["parameters"]
    # A oneway call still acts: OpenSession oneway opens a session.
    send(s, {"method": "io.toolsd.OpenSession", "oneway": True,
             "parameters": {"skill": skill(("echo",)), "artifacts_root": root}},
         {"method": "io.toolsd.ListSessions"})
    assert len(ok_reply("io.toolsd.ListSessions", r.next())["sessions"]) == 1
    s.close()


def test_more_continues_then_final(daemon, root):
    with daemon.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
        replies = list(c.call_more("io.toolsd.Call",
                                   {"session": sid, "tool": "echo", "arguments": {"text": "héllo"}}))
    assert [set(p) for p in replies] == [{"call_id"}, {"call_id", "chunk"}, {"call_id", "result"}]
    assert len({p["call_id"] for p in replies}) == 1
    assert re.fullmatch(r"[0-9a-f]{32}", replies[0]["call_id"])
    assert replies[1]["chunk"] == {"stream": "stdout", "data": "héllo"}
    assert replies[2]["result"]["outcome"] == "ok"
    assert replies[2]["result"]["text"] == "héllo"


def test_no_continues_without_more(daemon, root):
    """Without more, exactly one reply per call and never continues, even
    for a method that streams with more and for a method that cannot."""
    with daemon.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
    s = daemon.raw()
    r = Reader(s)
    send(s, {"method": "io.toolsd.Call",
             "parameters": {"session": sid, "tool": "echo", "arguments": {"text": "a"}}},
         {"method": "io.toolsd.Status", "more": True},
         {"method": "io.toolsd.Status"})
    p = ok_reply("io.toolsd.Call", r.next())
    assert set(p) == {"call_id", "result"}
    assert re.fullmatch(r"[0-9a-f]{32}", p["call_id"])
    assert p["result"]["text"] == "a"
    # Status with more: one final reply (no continues at all is allowed).
    ok_reply("io.toolsd.Status", r.next())
    ok_reply("io.toolsd.Status", r.next())
    s.close()


def test_upgrade_not_implemented(daemon):
    s = daemon.raw()
    r = Reader(s)
    err_reply(rcall(s, r, "io.toolsd.Status", upgrade=True), "org.varlink.service.MethodNotImplemented",
              {"method": "io.toolsd.Status"})
    ok_reply("io.toolsd.Status", rcall(s, r, "io.toolsd.Status"))
    s.close()


# ---- malformed input ------------------------------------------------------------

def nest(depth):
    return ("[" * depth + "]" * depth).encode()


MALFORMED = {
    "invalid_json": b'{"method": "io.toolsd.Status"',
    "garbage": b"\xff\xfe\x00",
    "non_object": b'["io.toolsd.Status"]',
    "string": b'"io.toolsd.Status"',
    "unknown_key": b'{"method": "io.toolsd.Status", "bogus": 1}',
    "no_method": b'{"parameters": {}}',
    "method_not_string": b'{"method": 5}',
    "parameters_not_object": b'{"method": "io.toolsd.Status", "parameters": [1]}',
    "more_not_bool": b'{"method": "io.toolsd.Status", "more": 1}',
    "invalid_utf8": b'{"method": "io.toolsd.Status", "parameters": {"x": "\xc3\x28"}}',
    "overlong_utf8": b'{"method": "io.toolsd.Status\xc0\xae"}',
    "trailing": b'{"method": "io.toolsd.Status"} {}',
    "nan": b'{"method": "io.toolsd.Status", "parameters": {"x": NaN}}',
    "deep": b'{"method": "io.toolsd.Status", "parameters": {"x": ' + nest(200) + b'}}',
    "empty": b"",
    "duplicate_key": b'{"method": "io.toolsd.Status", "method": "io.toolsd.Doctor"}',
    "bad_method_name": b'{"method": "Status"}',
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_closes_only_that_connection(daemon, root, name):
    other = daemon.client(timeout=30)
    sess = other.open_session(skill(("echo",)), root)
    bad = daemon.raw()
    r = Reader(bad)
    bad.sendall(MALFORMED[name] + b"\0")
    reply = r.next()
    if reply is not None:
        # At most one error reply, then the close.
        assert "error" in reply, reply
        assert r.closed()
    # The other connection, opened before, is undisturbed.
    assert sess.call("echo", {"text": "still"})["text"] == "still"
    status_ok(daemon)
    sess.close()
    other.close()


def test_depth_within_limit_is_accepted(make_daemon):
    d = make_daemon(config="[Limits]\nMaxJsonDepth=10\n")
    s = d.raw()
    r = Reader(s)
    # parameters {x: [[...]]}: the message object is depth 1.
    ok = b'{"method": "io.toolsd.Status", "parameters": {"x": ' + nest(7) + b'}}\0'
    s.sendall(ok)
    err_reply(r.next(), "org.varlink.service.InvalidParameter", {"parameter": "x"})
    s.sendall(b'{"method": "io.toolsd.Status", "parameters": {"x": ' + nest(20) + b'}}\0')
    assert r.closed()
    status_ok(d)


def test_message_too_large(make_daemon):
    d = make_daemon(config="[Limits]\nMaxMessageSize=64K\nMaxStringSize=32K\n")
    keep = d.raw()
    kr = Reader(keep)
    s = d.raw()
    r = Reader(s)
    try:
        s.sendall(b'{"method":"io.toolsd.Status","parameters":{"x":"' + b"a" * 100 * 1024)
    except (BrokenPipeError, ConnectionResetError):
        pass
    err_reply(r.next(), "io.toolsd.LimitExceeded", {"what": "message_size", "limit": 65536})
    assert r.closed()
    ok_reply("io.toolsd.Status", rcall(keep, kr, "io.toolsd.Status"))
    status_ok(d)


def test_many_small_messages_within_limit(make_daemon):
    """Many pipelined messages in one send add up past MaxMessageSize; each
    is small, so none is refused."""
    d = make_daemon(config="[Limits]\nMaxMessageSize=64K\nMaxStringSize=32K\n")
    s = d.raw()
    r = Reader(s)
    n = 3000  # ~90K in one send
    send(s, *([{"method": "io.toolsd.Status"}] * n))
    for _ in range(n):
        ok_reply("io.toolsd.Status", r.next())
    s.close()


def test_string_size_limit(make_daemon, root):
    d = make_daemon(config="[Limits]\nMaxStringSize=1K\n")
    with d.client(timeout=30) as c:
        with pytest.raises(toolsd.LimitExceeded) as e:
            c.open_session(skill(("echo",), name="n" * 1025), root)
        assert e.value.parameters == {"what": "string_size", "limit": 1024}
        # A string of exactly the limit is not refused for its size.
        with pytest.raises(toolsd.InvalidArgument) as e:
            c.open_session(skill(("echo",), name="n" * 1024), root)
        assert e.value.parameters["field"] == "skill.name"
        assert c.list_sessions() == []


# ---- slow and silent clients ----------------------------------------------------

def test_half_message_does_not_block_others(daemon, root):
    stalled = daemon.raw()
    sr = Reader(stalled)
    msg = json.dumps({"method": "io.toolsd.Status"}).encode() + b"\0"
    stalled.sendall(msg[:10])
    with daemon.client(timeout=30) as c:
        sess = c.open_session(skill(("echo",)), root)
        for i in range(20):
            assert sess.call("echo", {"text": str(i)})["text"] == str(i)
        sess.close()
    stalled.sendall(msg[10:])
    ok_reply("io.toolsd.Status", sr.next())
    stalled.close()


def sent_until_stall(sock, msg, cap, stall_after=3.0):
    """Sends msg again and again without reading until the peer stops
    reading (no room for stall_after seconds) or cap bytes went out.
    Returns (bytes sent, bytes of msg still unsent)."""
    import select
    sock.setblocking(False)
    sent, pending = 0, b""
    while sent < cap:
        if not pending:
            pending = msg
        try:
            n = sock.send(pending)
        except BlockingIOError:
            _, w, _ = select.select([], [sock], [], stall_after)
            if not w:
                return sent, pending
            continue
        sent += n
        pending = pending[n:]
    return sent, pending


def test_client_that_never_reads_is_paused(daemon, root):
    """A client pipelining streamed calls and reading nothing must not make
    the daemon queue replies without bound, nor stall anyone else."""
    with daemon.client(timeout=30) as c:
        sid = open_session(c, root)["session"]
    s = daemon.raw()
    text = "x" * 30000
    msg = json.dumps({"method": "io.toolsd.Call", "more": True, "parameters": {
        "session": sid, "tool": "echo", "arguments": {"text": text}}}).encode() + b"\0"
    cap = 64 * 1024 * 1024
    sent, pending = sent_until_stall(s, msg, cap)
    assert sent < cap, "toolsd kept reading requests whose replies nobody reads"
    # Everyone else is served meanwhile.
    with daemon.client(timeout=30) as c:
        sess = c.open_session(skill(("echo",)), root)
        assert sess.call("echo", {"text": "other"})["text"] == "other"
        sess.close()
    status_ok(daemon)
    # Once the client reads, everything it asked for arrives, in order.
    import select
    complete = sent // len(msg) + (1 if pending else 0)
    s.setblocking(True)
    s.settimeout(30)
    r = Reader(s)
    finals = 0
    while finals < complete:
        if pending:
            _, w, _ = select.select([], [s], [], 0)
            if w:
                pending = pending[s.send(pending):]
        rl, _, _ = select.select([s], [], [], 30)
        assert rl, "no reply within 30 s"
        data = s.recv(1 << 20)
        assert data, "closed after %d of %d calls" % (finals, complete)
        r.buf += data
        while b"\0" in r.buf:
            m, _, r.buf = r.buf.partition(b"\0")
            rep = json.loads(m)
            assert "error" not in rep, rep
            if not rep.get("continues"):
                assert rep["parameters"]["result"]["text"] == text
                finals += 1
    s.close()


# ---- limits ---------------------------------------------------------------------

def wait_until(pred, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def test_connections_per_user(make_daemon):
    d = make_daemon(config="[Limits]\nMaxConnectionsPerUser=3\n")
    clients = [d.client(timeout=30) for _ in range(3)]
    for c in clients:
        assert check_reply("io.toolsd.Status", c.status())["connections"] == 3
    s = d.raw()
    r = Reader(s)
    err_reply(r.next(), "io.toolsd.LimitExceeded", {"what": "connections_per_user", "limit": 3})
    assert r.closed()
    # The refused connection left the count alone; the others go on.
    for c in clients:
        assert c.status()["connections"] == 3
    clients.pop().close()
    wait_until(lambda: clients[0].status()["connections"] == 2, what="hang-up counted")
    with d.client(timeout=30) as c:
        assert c.status()["connections"] == 3
    for c in clients:
        c.close()


def test_connections_in_total(make_daemon):
    d = make_daemon(config="[Limits]\nMaxConnections=2\nMaxConnectionsPerUser=2\n")
    a, b = d.client(timeout=30), d.client(timeout=30)
    assert b.status()["connections"] == 2
    s = d.raw()
    r = Reader(s)
    err_reply(r.next(), "io.toolsd.LimitExceeded", {"what": "connections", "limit": 2})
    assert r.closed()
    assert a.status()["connections"] == 2
    a.close()
    b.close()


def test_sessions_per_user(make_daemon, root):
    d = make_daemon(config="[Limits]\nMaxSessionsPerUser=2\n")
    with d.client(timeout=30) as c:
        s1 = open_session(c, root)["session"]
        open_session(c, root)
        with pytest.raises(toolsd.LimitExceeded) as e:
            open_session(c, root)
        assert e.value.parameters == {"what": "sessions_per_user", "limit": 2}
        assert len(c.list_sessions()) == 2
        assert c.status()["sessions"] == 2
        c.call("io.toolsd.CloseSession", {"session": s1})
        open_session(c, root)
        assert c.status()["sessions"] == 2


SLEEP = ["python3", "-c", "import time; print('up', flush=True); time.sleep(30)"]


def start_streamed(d, sid, argv=SLEEP, wait_up=True):
    """Starts a streamed run_shell call on a connection of its own; returns
    (socket, reader, call_id) once the command runs (said "up")."""
    s = d.raw()
    r = Reader(s)
    send(s, {"method": "io.toolsd.Call", "more": True, "parameters": {
        "session": sid, "tool": "run_shell", "arguments": {"argv": argv}, "timeout_ms": 60000}})
    first = r.next()
    assert first.get("continues") is True, first
    cid = check_reply("io.toolsd.Call", first["parameters"])["call_id"]
    if wait_up:
        up = r.next()
        assert up.get("continues") is True, up
        assert check_reply("io.toolsd.Call", up["parameters"]) == {
            "call_id": cid, "chunk": {"stream": "stdout", "data": "up\n"}}
    return s, r, cid


def final_of(r):
    while True:
        rep = r.next()
        assert rep is not None, "closed before the final reply"
        if not rep.get("continues"):
            return ok_reply("io.toolsd.Call", rep)


def test_calls_per_session(make_daemon, root):
    d = make_daemon(config="[Limits]\nMaxCallsPerSession=2\n")
    with d.client(timeout=30) as c:
        sid = open_session(c, root, skill=skill(("echo", "run_shell"), profile="full"))["session"]
        running = [start_streamed(d, sid) for _ in range(2)]
        assert c.status()["running_calls"] == 2
        assert [x["running_calls"] for x in c.list_sessions()] == [2]
        with pytest.raises(toolsd.LimitExceeded) as e:
            c.call("io.toolsd.Call", {"session": sid, "tool": "echo", "arguments": {"text": "x"}})
        assert e.value.parameters == {"what": "calls_per_session", "limit": 2}
        # Another session of the same user is not affected.
        sid2 = open_session(c, root)["session"]
        assert c.call("io.toolsd.Call", {"session": sid2, "tool": "echo",
                                         "arguments": {"text": "y"}})["result"]["text"] == "y"
        for s, r, cid in running:
            assert c.call("io.toolsd.Cancel", {"call_id": cid}) == {}
            res = final_of(r)
            assert res["call_id"] == cid
            assert res["result"]["outcome"] == "cancelled", json.dumps(res)
            s.close()
        assert c.status()["running_calls"] == 0
        assert c.call("io.toolsd.Call", {"session": sid, "tool": "echo",
                                         "arguments": {"text": "z"}})["result"]["text"] == "z"


def test_cancel_during_setup_is_cancelled(daemon, root):
    with daemon.client(timeout=30) as c:
        sid = open_session(c, root, skill=skill(("run_shell",), profile="full"))["session"]
        s, r, cid = start_streamed(daemon, sid, wait_up=False)
        c.cancel(cid)
        res = final_of(r)
        assert res["result"]["outcome"] == "cancelled", res
        s.close()
