# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of the Python client's framing and API against fake servers: a
scripted socket (exact recv boundaries) and a thread on a socketpair.
Run: /usr/bin/python3 -m pytest client/python"""

import base64
import json
import os
import socket
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import toolsd  # noqa: E402


def frame(obj):
    return json.dumps(obj).encode() + b"\0"


class ScriptedSocket:
    """recv() hands out exactly the given pieces, then EOF; sendall() records."""

    def __init__(self, pieces):
        self.pieces = list(pieces)
        self.sent = bytearray()
        self.closed = False
        self.recv_sizes = []

    def recv(self, n):
        self.recv_sizes.append(n)
        if not self.pieces:
            return b""
        piece = self.pieces.pop(0)
        if len(piece) > n:
            self.pieces.insert(0, piece[n:])
        return piece[:n]

    def sendall(self, data):
        self.sent += data

    def close(self):
        self.closed = True

    def calls(self):
        assert self.sent.endswith(b"\0")
        return [json.loads(m) for m in bytes(self.sent).split(b"\0")[:-1]]


class FakeServer:
    """A server thread on one end of a socketpair. handler(call) returns a
    list of reply objects (or raw bytes) to send for each call received."""

    def __init__(self, handler):
        self.handler = handler
        self.calls = []
        self.server_sock, client_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.client = toolsd.Client(sock=client_sock)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        buf = b""
        try:
            while True:
                data = self.server_sock.recv(65536)
                if not data:
                    return
                buf += data
                while b"\0" in buf:
                    msg, buf = buf.split(b"\0", 1)
                    call = json.loads(msg)
                    self.calls.append(call)
                    for reply in self.handler(call):
                        self.server_sock.sendall(reply if isinstance(reply, bytes) else frame(reply))
        except OSError:
            return

    def close(self):
        self.client.close()
        self.server_sock.close()
        self.thread.join(timeout=5)


@pytest.fixture
def server_factory():
    servers = []

    def make(handler):
        s = FakeServer(handler)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


# ---- framing ----------------------------------------------------------------

def test_reply_split_across_many_reads():
    data = frame({"parameters": {"version": "0.1.0", "sessions": 2}})
    sock = ScriptedSocket([data[i:i + 1] for i in range(len(data))])
    c = toolsd.Client(sock=sock)
    assert c.call("io.toolsd.Status") == {"version": "0.1.0", "sessions": 2}
    assert sock.calls() == [{"method": "io.toolsd.Status"}]
    assert sock.sent == b'{"method":"io.toolsd.Status"}\0'


def test_several_replies_in_one_read():
    data = frame({"parameters": {"a": 1}}) + frame({"parameters": {"b": 2}}) + frame({})
    sock = ScriptedSocket([data])
    c = toolsd.Client(sock=sock)
    assert c.call("io.toolsd.Status") == {"a": 1}
    assert c.call("io.toolsd.Status") == {"b": 2}
    assert c.call("io.toolsd.Status") == {}
    assert len(sock.calls()) == 3


def test_reply_boundary_inside_a_read():
    a, b = frame({"parameters": {"a": 1}}), frame({"parameters": {"b": "x" * 100}})
    both = a + b
    sock = ScriptedSocket([both[:len(a) + 5], both[len(a) + 5:]])
    c = toolsd.Client(sock=sock)
    assert c.call("m.x.A") == {"a": 1}
    assert c.call("m.x.B") == {"b": "x" * 100}


def test_parameters_absent_null_and_empty_are_the_same():
    sock = ScriptedSocket([b"{}\0", b'{"parameters":null}\0', b'{"parameters":{}}\0'])
    c = toolsd.Client(sock=sock)
    assert [c.call("io.toolsd.CloseSession", {"session": "s"}) for _ in range(3)] == [{}, {}, {}]


def test_oversized_reply_raises_and_closes():
    sock = ScriptedSocket([b'{"parameters":{"x":"' + b"a" * 200])
    c = toolsd.Client(sock=sock, max_message=64)
    with pytest.raises(toolsd.MessageTooLarge):
        c.call("io.toolsd.Status")
    assert sock.closed
    # Never asked for more than the message bound allows.
    assert all(n <= 64 for n in sock.recv_sizes)


def test_reply_one_byte_over_max_is_refused():
    msg = frame({"parameters": {"x": ""}})
    sock = ScriptedSocket([msg])
    c = toolsd.Client(sock=sock, max_message=len(msg) - 1)
    with pytest.raises(toolsd.MessageTooLarge):
        c.call("io.toolsd.Status")


def test_reply_of_exactly_max_size_is_accepted():
    msg = frame({"parameters": {"x": ""}})
    sock = ScriptedSocket([msg])
    c = toolsd.Client(sock=sock, max_message=len(msg))
    assert c.call("io.toolsd.Status") == {"x": ""}


def test_hangup_mid_reply_raises_connection_closed():
    sock = ScriptedSocket([b'{"parameters":'])
    c = toolsd.Client(sock=sock)
    with pytest.raises(toolsd.ConnectionClosed):
        c.call("io.toolsd.Status")
    with pytest.raises(toolsd.ProtocolError):
        c.call("io.toolsd.Status")


@pytest.mark.parametrize("raw", [
    b"not json\0",
    b"[1,2]\0",
    b'{"parameters":[]}\0',
    b'{"parameters":{},"continues":"yes"}\0',
    b'{"error":42}\0',
    b'{"parameters":{},"bogus":1}\0',
    b'{"parameters":{"x":NaN}}\0',
    b'{"parameters":{"x":"\xff"}}\0',
    b"[" * 100000 + b"]" * 100000 + b"\0",
], ids=["not-json", "array", "params-array", "continues-string", "error-int", "unknown-key", "nan",
        "bad-utf8", "deep"])
def test_malformed_reply_raises_protocol_error(raw):
    sock = ScriptedSocket([raw])
    c = toolsd.Client(sock=sock)
    with pytest.raises(toolsd.ProtocolError):
        c.call("io.toolsd.Status")
    assert sock.closed


def test_continues_without_more_is_a_protocol_error():
    sock = ScriptedSocket([frame({"parameters": {}, "continues": True})])
    c = toolsd.Client(sock=sock)
    with pytest.raises(toolsd.ProtocolError):
        c.call("io.toolsd.Status")


def test_call_framing_more_and_oneway():
    sock = ScriptedSocket([frame({"parameters": {"n": 1}, "continues": True}), frame({"parameters": {"n": 2}})])
    c = toolsd.Client(sock=sock)
    assert list(c.call_more("io.toolsd.Call", {"session": "s", "tool": "t"})) == [{"n": 1}, {"n": 2}]
    c.oneway("io.toolsd.Cancel", {"call_id": "c1"})
    assert sock.calls() == [
        {"method": "io.toolsd.Call", "parameters": {"session": "s", "tool": "t"}, "more": True},
        {"method": "io.toolsd.Cancel", "parameters": {"call_id": "c1"}, "oneway": True},
    ]


def test_non_ascii_is_sent_as_utf8():
    sock = ScriptedSocket([frame({})])
    toolsd.Client(sock=sock).call("io.toolsd.Call", {"tool": "é"})
    assert "é".encode() in sock.sent


# ---- errors -------------------------------------------------------------------

@pytest.mark.parametrize("name,cls", [
    ("io.toolsd.NoSuchSession", toolsd.NoSuchSession),
    ("io.toolsd.NoSuchCall", toolsd.NoSuchCall),
    ("io.toolsd.InvalidArgument", toolsd.InvalidArgument),
    ("io.toolsd.SandboxUnavailable", toolsd.SandboxUnavailable),
    ("io.toolsd.LimitExceeded", toolsd.LimitExceeded),
    ("org.varlink.service.InvalidParameter", toolsd.InvalidParameter),
    ("org.varlink.service.MethodNotFound", toolsd.MethodNotFound),
    ("org.varlink.service.PermissionDenied", toolsd.PermissionDenied),
    ("com.example.Unknown", toolsd.VarlinkError),
])
def test_error_reply_raises_the_matching_exception(name, cls):
    sock = ScriptedSocket([frame({"error": name, "parameters": {"session": "s1"}}), frame({"parameters": {"ok": True}})])
    c = toolsd.Client(sock=sock)
    with pytest.raises(cls) as e:
        c.call("io.toolsd.ListTools", {"session": "s1"})
    assert type(e.value) is cls
    assert e.value.error == name
    assert e.value.parameters == {"session": "s1"}
    assert str(e.value) == f"{name}: session=s1"
    # An error reply keeps the connection usable.
    assert c.call("io.toolsd.Status") == {"ok": True}


def test_error_during_stream_raises():
    sock = ScriptedSocket([frame({"parameters": {"call_id": "c1"}, "continues": True}),
                           frame({"error": "io.toolsd.NoSuchSession", "parameters": {"session": "s"}})])
    c = toolsd.Client(sock=sock)
    got = []
    with pytest.raises(toolsd.NoSuchSession):
        for p in c.call_more("io.toolsd.Call", {}):
            got.append(p)
    assert got == [{"call_id": "c1"}]
    assert not sock.closed


# ---- end to end against a server thread -----------------------------------

TOOLS = [{"name": "run_shell", "description": "Run a command.", "parameters": {"type": "object"}}]


def toolsd_handler(call):
    m, p = call["method"], call.get("parameters", {})
    if m == "io.toolsd.OpenSession":
        return [{"parameters": {"session": "s1", "tools": TOOLS, "sandboxed": True, "backend": "bwrap",
                                "profile": p["skill"].get("profile", "passive"), "network": False,
                                "dropped_env": []}}]
    if m == "io.toolsd.ListTools":
        if p["session"] != "s1":
            return [{"error": "io.toolsd.NoSuchSession", "parameters": {"session": p["session"]}}]
        return [{"parameters": {"tools": TOOLS}}]
    if m == "io.toolsd.Call" and call.get("more"):
        # Everything in one write: the client must split it.
        return [b"".join([
            frame({"parameters": {"call_id": "c7"}, "continues": True}),
            frame({"parameters": {"call_id": "c7", "chunk": {"stream": "stdout", "data": "héllo\n"}},
                   "continues": True}),
            frame({"parameters": {"call_id": "c7", "chunk": {"stream": "stderr",
                                                              "data": base64.b64encode(b"\xff\x00\x01").decode(),
                                                              "encoding": "base64"}},
                   "continues": True}),
            frame({"parameters": {"call_id": "c7", "result": {"outcome": "exit", "exit_code": 3, "text": "x",
                                                              "sandboxed": True, "duration_ms": 5,
                                                              "truncated": False}}}),
        ])]
    if m == "io.toolsd.Call":
        return [{"parameters": {"call_id": "c8", "result": {"outcome": "ok", "text": "done"}}}]
    if m == "io.toolsd.CloseSession":
        return [{}]
    return [{"error": "org.varlink.service.MethodNotFound", "parameters": {"method": m}}]


def test_session_lifecycle(server_factory, tmp_path, monkeypatch):
    monkeypatch.delenv("MODULATIO_REQUIRE_SANDBOX", raising=False)
    monkeypatch.delenv("MODULATIO_RUN_SHELL_UNSAFE", raising=False)
    monkeypatch.delenv("MODULATIO_SANDBOX_PROFILE", raising=False)
    monkeypatch.setenv("LANG_FOR_TEST", "fr")
    srv = server_factory(toolsd_handler)
    skill = {"name": "t", "tools": ["run_shell"], "pass_env": ["LANG_FOR_TEST", "UNSET_FOR_TEST"]}
    with srv.client.open_session(skill, tmp_path, task_id="t1") as s:
        assert s.id == "s1" and s.tools == TOOLS and s.sandboxed and s.backend == "bwrap"
        assert s.list_tools() == TOOLS
        assert s.call("run_shell", {"argv": ["true"]}, timeout_ms=1500) == {"outcome": "ok", "text": "done"}
        assert s.call_id == "c8"
        events = list(s.stream("run_shell", {"argv": ["x"]}))
        assert s.call_id == "c7"
    assert events == [
        ("chunk", {"stream": "stdout", "data": "héllo\n".encode()}),
        ("chunk", {"stream": "stderr", "data": b"\xff\x00\x01"}),
        ("result", {"outcome": "exit", "exit_code": 3, "text": "x", "sandboxed": True, "duration_ms": 5,
                    "truncated": False}),
    ]
    opened = srv.calls[0]
    assert opened["method"] == "io.toolsd.OpenSession"
    assert opened["parameters"] == {"skill": skill, "artifacts_root": str(tmp_path), "task_id": "t1",
                                    "env": {"LANG_FOR_TEST": "fr"}}
    assert srv.calls[2]["parameters"] == {"session": "s1", "tool": "run_shell", "arguments": {"argv": ["true"]},
                                          "timeout_ms": 1500}
    assert srv.calls[3]["more"] is True
    assert srv.calls[-1] == {"method": "io.toolsd.CloseSession", "parameters": {"session": "s1"}}


def test_abandoned_stream_closes_the_connection(server_factory, tmp_path):
    srv = server_factory(toolsd_handler)
    s = srv.client.open_session({"name": "t", "tools": ["run_shell"]}, tmp_path, sandbox="auto")
    gen = s.stream("run_shell", {"argv": ["x"]})
    assert next(gen)[0] == "chunk"
    with pytest.raises(RuntimeError):
        srv.client.call("io.toolsd.Status")  # one call pending per connection
    gen.close()
    assert srv.client._sock is None  # hanging up is how the call gets cancelled


def test_invalid_base64_chunk_is_a_protocol_error():
    sock = ScriptedSocket([frame({"parameters": {"call_id": "c", "chunk": {"stream": "stdout", "data": "!!",
                                                                            "encoding": "base64"}},
                                  "continues": True})])
    s = toolsd.Session(toolsd.Client(sock=sock), {"session": "s"})
    with pytest.raises(toolsd.ProtocolError):
        list(s.stream("run_shell", {}))


@pytest.mark.parametrize("environ,mode", [
    ({}, None),
    ({"MODULATIO_REQUIRE_SANDBOX": "1"}, "required"),
    ({"MODULATIO_RUN_SHELL_UNSAFE": "1"}, "off"),
    ({"MODULATIO_SANDBOX_PROFILE": "off"}, "off"),
    ({"MODULATIO_SANDBOX_PROFILE": "strict"}, None),
    ({"MODULATIO_REQUIRE_SANDBOX": "1", "MODULATIO_RUN_SHELL_UNSAFE": "1"}, "required"),
])
def test_sandbox_mode_from_environment(environ, mode, server_factory, tmp_path, monkeypatch):
    for k in ("MODULATIO_REQUIRE_SANDBOX", "MODULATIO_RUN_SHELL_UNSAFE", "MODULATIO_SANDBOX_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in environ.items():
        monkeypatch.setenv(k, v)
    assert toolsd.sandbox_from_environ() == mode
    srv = server_factory(toolsd_handler)
    srv.client.open_session({"name": "t", "tools": []}, tmp_path)
    assert srv.calls[0]["parameters"].get("sandbox") == mode


# ---- socket discovery -------------------------------------------------------

def test_discovery_order(monkeypatch):
    monkeypatch.setenv("TOOLSD_SOCKET", "/a/sock")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/7")
    assert toolsd.discover_socket_paths() == ["/a/sock", "/run/user/7/toolsd/io.toolsd", "/run/toolsd/io.toolsd"]
    assert toolsd.discover_socket_paths("/explicit") == ["/explicit"]
    monkeypatch.delenv("TOOLSD_SOCKET")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert toolsd.discover_socket_paths() == ["/run/toolsd/io.toolsd"]


def test_connects_to_the_first_socket_that_answers(tmp_path, monkeypatch):
    path = str(tmp_path / "io.toolsd")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    monkeypatch.setenv("TOOLSD_SOCKET", str(tmp_path / "missing"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "nowhere"))
    # /run/toolsd/io.toolsd is last: point XDG at our socket instead.
    os.makedirs(tmp_path / "xdg" / "toolsd")
    os.rename(path, tmp_path / "xdg" / "toolsd" / "io.toolsd")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    with toolsd.Client() as c:
        assert c.path == str(tmp_path / "xdg" / "toolsd" / "io.toolsd")
    listener.close()


def test_no_daemon_lists_what_was_tried(tmp_path):
    with pytest.raises(toolsd.DaemonUnavailable) as e:
        toolsd.Client(str(tmp_path / "missing"))
    assert e.value.tried == [(str(tmp_path / "missing"), "No such file or directory")]
    assert "systemctl start toolsd.socket" in str(e.value)
    assert isinstance(e.value, ConnectionError)
