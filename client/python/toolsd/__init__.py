# SPDX-License-Identifier: LGPL-2.1-or-later
"""Client for toolsd, the sandboxed tool-execution daemon (standard library only).

It runs in the orchestrator's process, with the orchestrator's rights: toolsd
knows the caller from SO_PEERCRED. It speaks Varlink (NUL-terminated JSON over
a Unix stream socket) and reads replies through a bounded buffer, so a peer
cannot make it hold more than one maximum-sized message.

Usage: hand a session's tools to a model, forward the model's tool calls::

    import json, toolsd
    skill = {"name": "lint", "tools": ["run_shell", "write_artifact"], "profile": "passive"}
    with toolsd.Client() as client, client.open_session(skill, "/srv/runs/42", task_id="t1") as s:
        tools = [{"type": "function", "function": t} for t in s.list_tools()]  # ListTools
        reply = llm.chat(messages, tools=tools)          # your model, your API
        for tc in reply.tool_calls:                       # the model asks for tools
            result = s.call(tc.function.name, json.loads(tc.function.arguments))
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": result["text"]})
        for kind, item in s.stream("run_shell", {"argv": ["ruff", "check", "."]}):
            print(item["data"].decode(errors="replace") if kind == "chunk" else item["outcome"])

A tool's outcome (exit, refused, timeout, ...) is a result dict the model
reads; only the caller's own mistakes raise VarlinkError subclasses.
Streamed chunks are always given as bytes (text chunks encoded as UTF-8,
base64 chunks decoded), so binary output is never mangled.

A Client is one connection with one call pending at a time; it is not
thread-safe. Use one Client per thread.
"""

import base64
import json
import os
import socket

__all__ = [
    "Client", "Session", "cancel", "discover_socket_paths",
    "VarlinkError", "NoSuchSession", "NoSuchCall", "InvalidArgument",
    "SandboxUnavailable", "LimitExceeded", "InvalidParameter", "MethodNotFound",
    "MethodNotImplemented", "InterfaceNotFound", "PermissionDenied", "ExpectedMore",
    "ProtocolError", "MessageTooLarge", "ConnectionClosed", "DaemonUnavailable",
    "MAX_MESSAGE", "sandbox_from_environ",
]

# Like systemd's varlink and toolsd itself: one message is at most 16 MiB.
MAX_MESSAGE = 16 * 1024 * 1024
SYSTEM_SOCKET = "/run/toolsd/io.toolsd"
_RECV_SIZE = 64 * 1024


# ---- errors -----------------------------------------------------------------

class VarlinkError(Exception):
    """An error reply: .error is its name, .parameters its parameters."""

    def __init__(self, error, parameters=None):
        self.error = error
        self.parameters = parameters or {}
        detail = " ".join(f"{k}={v}" for k, v in self.parameters.items())
        super().__init__(f"{error}: {detail}" if detail else error)


class NoSuchSession(VarlinkError):
    """io.toolsd.NoSuchSession: unknown, closed or someone else's session."""


class NoSuchCall(VarlinkError):
    """io.toolsd.NoSuchCall: no running call of yours with that id."""


class InvalidArgument(VarlinkError):
    """io.toolsd.InvalidArgument: a malformed request field."""


class SandboxUnavailable(VarlinkError):
    """io.toolsd.SandboxUnavailable: sandbox required but not available."""


class LimitExceeded(VarlinkError):
    """io.toolsd.LimitExceeded: too many sessions, calls, bytes, ..."""


class InvalidParameter(VarlinkError):
    """org.varlink.service.InvalidParameter."""


class MethodNotFound(VarlinkError):
    """org.varlink.service.MethodNotFound."""


class MethodNotImplemented(VarlinkError):
    """org.varlink.service.MethodNotImplemented."""


class InterfaceNotFound(VarlinkError):
    """org.varlink.service.InterfaceNotFound."""


class PermissionDenied(VarlinkError):
    """org.varlink.service.PermissionDenied."""


class ExpectedMore(VarlinkError):
    """org.varlink.service.ExpectedMore."""


_ERRORS = {
    "io.toolsd.NoSuchSession": NoSuchSession,
    "io.toolsd.NoSuchCall": NoSuchCall,
    "io.toolsd.InvalidArgument": InvalidArgument,
    "io.toolsd.SandboxUnavailable": SandboxUnavailable,
    "io.toolsd.LimitExceeded": LimitExceeded,
    "org.varlink.service.InvalidParameter": InvalidParameter,
    "org.varlink.service.MethodNotFound": MethodNotFound,
    "org.varlink.service.MethodNotImplemented": MethodNotImplemented,
    "org.varlink.service.InterfaceNotFound": InterfaceNotFound,
    "org.varlink.service.PermissionDenied": PermissionDenied,
    "org.varlink.service.ExpectedMore": ExpectedMore,
}


def _error(name, parameters):
    return _ERRORS.get(name, VarlinkError)(name, parameters)


class ProtocolError(Exception):
    """The peer broke the wire protocol; the connection is closed."""


class MessageTooLarge(ProtocolError):
    """A reply exceeded the maximum message size."""


class ConnectionClosed(ProtocolError):
    """toolsd hung up before the reply was complete."""


class DaemonUnavailable(ConnectionError):
    """No toolsd socket could be reached; .tried lists (path, error)."""

    def __init__(self, tried):
        self.tried = tried
        lines = [f"  {p}: {e}" for p, e in tried]
        super().__init__(
            "cannot connect to toolsd. Tried:\n" + "\n".join(lines) +
            "\nStart it with 'systemctl start toolsd.socket' (system-wide) or "
            "'systemctl --user start toolsd.socket', or set $TOOLSD_SOCKET.")


# ---- socket discovery and framing ------------------------------------------

def discover_socket_paths(path=None):
    """The sockets tried, in order: path alone when given (an explicit choice
    must not silently reach another daemon), else $TOOLSD_SOCKET,
    $XDG_RUNTIME_DIR/toolsd/io.toolsd and /run/toolsd/io.toolsd."""
    if path:
        return [os.fspath(path)]
    paths = []
    if os.environ.get("TOOLSD_SOCKET"):
        paths.append(os.environ["TOOLSD_SOCKET"])
    if os.environ.get("XDG_RUNTIME_DIR"):
        paths.append(os.path.join(os.environ["XDG_RUNTIME_DIR"], "toolsd", "io.toolsd"))
    paths.append(SYSTEM_SOCKET)
    return paths


def _connect(path=None, timeout=None):
    tried = []
    for p in discover_socket_paths(path):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # CLOEXEC by default
        try:
            sock.settimeout(timeout)
            sock.connect(p)
            return sock, p
        except OSError as e:
            sock.close()
            tried.append((p, e.strerror or str(e)))
    raise DaemonUnavailable(tried)


class _Reader:
    """Buffers a stream and hands out NUL-terminated messages. One recv may
    hold half a message or several; nothing beyond max bytes is kept."""

    def __init__(self, sock, max_message):
        self.sock = sock
        self.max = max_message
        self.buf = bytearray()
        self.scanned = 0  # buf[:scanned] holds no NUL: search each byte once

    def next(self):
        while True:
            i = self.buf.find(b"\0", self.scanned)
            if i >= 0:
                if i + 1 > self.max:
                    raise MessageTooLarge(f"reply larger than {self.max} bytes")
                msg = bytes(self.buf[:i])
                del self.buf[:i + 1]
                self.scanned = 0
                return msg
            self.scanned = len(self.buf)
            if len(self.buf) >= self.max:
                raise MessageTooLarge(f"reply larger than {self.max} bytes")
            data = self.sock.recv(min(_RECV_SIZE, self.max - len(self.buf)))
            if not data:
                raise ConnectionClosed("toolsd closed the connection")
            self.buf += data


def _reject_constant(name):
    raise ValueError(f"non-finite number {name}")


def _parse_reply(msg):
    try:
        reply = json.loads(msg.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ProtocolError(f"malformed reply: {e}") from None
    if not isinstance(reply, dict) or not set(reply) <= {"parameters", "continues", "error"}:
        raise ProtocolError("malformed reply: not a Varlink reply object")
    params = reply.get("parameters")
    if params is None:
        params = {}
    error = reply.get("error")
    continues = reply.get("continues", False)
    if (not isinstance(params, dict) or not isinstance(continues, bool)
            or (error is not None and not isinstance(error, str))):
        raise ProtocolError("malformed reply: member of the wrong type")
    return params, continues, error


# ---- the connection ---------------------------------------------------------

class Client:
    """One connection to toolsd. path: the socket (default: discovered);
    sock: an already connected socket (tests, socket activation); timeout:
    seconds for each socket operation (default: none, calls may be long)."""

    def __init__(self, path=None, *, sock=None, timeout=None, max_message=MAX_MESSAGE):
        if sock is None:
            sock, path = _connect(path, timeout)
        self.path = path
        self._sock = sock
        self._reader = _Reader(sock, max_message)
        self._busy = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _send(self, method, params, more=False, oneway=False):
        if self._sock is None:
            raise ProtocolError("connection is closed")
        if self._busy:
            raise RuntimeError("a streamed call is still running on this connection")
        msg = {"method": method}
        if params:
            msg["parameters"] = params
        if more:
            msg["more"] = True
        if oneway:
            msg["oneway"] = True
        data = json.dumps(msg, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        self._sock.sendall(data.encode("utf-8") + b"\0")

    def _receive(self):
        try:
            return _parse_reply(self._reader.next())
        except (ProtocolError, OSError):
            # The stream's framing is lost: nothing later can be trusted.
            self.close()
            raise

    def call(self, method, params=None):
        """Calls method and returns the reply's parameters, or raises
        VarlinkError (a subclass for known error names)."""
        self._send(method, params)
        params, continues, error = self._receive()
        if error is not None:
            raise _error(error, params)
        if continues:
            self.close()
            raise ProtocolError("reply continues although the call did not ask for more")
        return params

    def call_more(self, method, params=None):
        """Calls method with more and yields each reply's parameters. Leaving
        the loop early closes the connection, which cancels the call."""
        self._send(method, params, more=True)
        self._busy = True
        done = False
        try:
            while True:
                params, continues, error = self._receive()
                if error is not None:
                    done = True
                    raise _error(error, params)
                done = not continues
                yield params
                if done:
                    return
        finally:
            self._busy = False
            if not done:
                self.close()

    def oneway(self, method, params=None):
        """Calls method without waiting: toolsd sends no reply at all."""
        self._send(method, params, oneway=True)

    # -- io.toolsd --

    def status(self, all_users=False):
        """The daemon's state. all_users (root only) adds "users": one
        entry per user with a broker, read from that broker's own report."""
        return self.call("io.toolsd.Status", {"all_users": True} if all_users else None)

    def doctor(self):
        return self.call("io.toolsd.Doctor")["checks"]

    def list_sessions(self):
        return self.call("io.toolsd.ListSessions")["sessions"]

    def list_all_sessions(self):
        """Root only: every user's sessions, read-only. Returns the reply:
        "sessions" and "incomplete_uids" (users whose list could not be
        read whole)."""
        return self.call("io.toolsd.ListSessions", {"all_users": True})

    def cancel(self, call_id):
        self.call("io.toolsd.Cancel", {"call_id": call_id})

    def open_session(self, skill, artifacts_root, *, run_id=None, task_id=None, role=None,
                     env=None, sandbox=None):
        """Opens a session and returns a Session. env: values for the skill's
        pass_env names (default: taken from os.environ). sandbox: "auto",
        "required" or "off" (default: from MODULATIO_REQUIRE_SANDBOX,
        MODULATIO_RUN_SHELL_UNSAFE, MODULATIO_SANDBOX_PROFILE)."""
        if env is None:
            env = {n: os.environ[n] for n in skill.get("pass_env") or []
                   if isinstance(n, str) and n in os.environ}
        params = {"skill": skill, "artifacts_root": os.path.abspath(os.fspath(artifacts_root))}
        for key, value in (("run_id", run_id), ("task_id", task_id), ("role", role),
                           ("sandbox", sandbox if sandbox is not None else sandbox_from_environ())):
            if value is not None:
                params[key] = value
        if env:
            params["env"] = env
        return Session(self, self.call("io.toolsd.OpenSession", params))


def sandbox_from_environ(environ=None):
    """The sandbox mode the MODULATIO_* variables ask for, or None (the
    server's default, auto). Requiring the sandbox wins over opting out;
    toolsd decides whether an opt-out is honoured."""
    environ = os.environ if environ is None else environ
    if environ.get("MODULATIO_REQUIRE_SANDBOX") == "1":
        return "required"
    if environ.get("MODULATIO_RUN_SHELL_UNSAFE") == "1" or environ.get("MODULATIO_SANDBOX_PROFILE") == "off":
        return "off"
    return None


def cancel(call_id, path=None):
    """Cancels a running call over a connection of its own (the call's own
    connection is busy reading the call's replies)."""
    with Client(path) as c:
        c.cancel(call_id)


def _decode_chunk(chunk):
    data = chunk.get("data", "")
    if chunk.get("encoding") == "base64":
        try:
            raw = base64.b64decode(data, validate=True)
        except (ValueError, TypeError) as e:
            raise ProtocolError(f"chunk with invalid base64: {e}") from None
    else:
        raw = data.encode("utf-8")
    return {"stream": chunk.get("stream"), "data": raw}


class Session:
    """An open session: .id, .tools (ToolSpecs for an LLM), .sandboxed,
    .backend, .profile, .network, .dropped_env, .reply (the whole reply)."""

    def __init__(self, client, reply):
        self.client = client
        self.reply = reply
        self.id = reply["session"]
        self.tools = reply.get("tools", [])
        self.sandboxed = reply.get("sandboxed")
        self.backend = reply.get("backend")
        self.profile = reply.get("profile")
        self.network = reply.get("network")
        self.dropped_env = reply.get("dropped_env", [])
        self.call_id = None  # of the running or last streamed call
        self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _params(self, tool, arguments, timeout_ms):
        params = {"session": self.id, "tool": tool, "arguments": arguments or {}}
        if timeout_ms is not None:
            params["timeout_ms"] = int(timeout_ms)
        return params

    def list_tools(self):
        self.tools = self.client.call("io.toolsd.ListTools", {"session": self.id})["tools"]
        return self.tools

    def call(self, tool, arguments=None, timeout_ms=None):
        """Runs a tool and returns its Result dict (outcome, text, ...)."""
        reply = self.client.call("io.toolsd.Call", self._params(tool, arguments, timeout_ms))
        self.call_id = reply.get("call_id")
        return reply["result"]

    def stream(self, tool, arguments=None, timeout_ms=None):
        """Runs a tool, yielding ("chunk", {"stream": "stdout"|"stderr",
        "data": bytes}) as output arrives and finally ("result", result).
        self.call_id is set from the first reply, for cancel()."""
        self.call_id = None
        for params in self.client.call_more("io.toolsd.Call", self._params(tool, arguments, timeout_ms)):
            if self.call_id is None and params.get("call_id"):
                self.call_id = params["call_id"]
            if isinstance(params.get("chunk"), dict):
                yield "chunk", _decode_chunk(params["chunk"])
            if isinstance(params.get("result"), dict):
                yield "result", params["result"]

    def cancel(self):
        """Cancels the running streamed call (from another thread or a signal
        handler), over a second connection to the same socket."""
        if self.call_id is None:
            raise RuntimeError("no call to cancel")
        cancel(self.call_id, self.client.path)

    def close(self):
        if self._closed or self.client._sock is None:
            return
        self._closed = True
        try:
            self.client.call("io.toolsd.CloseSession", {"session": self.id})
        except NoSuchSession:
            pass
