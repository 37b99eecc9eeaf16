"""Fixtures for the integration tests: a real toolsd on a temporary socket.

The daemon is the build's binary, started with its own config and socket in
a temporary directory. Readiness comes from sd_notify: the fixture listens on
its own NOTIFY_SOCKET and waits for READY=1, so no test sleeps to
synchronise. Every process started here is stopped by its pid.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("TOOLSD_BUILD", os.path.join(SRC, "build"))
TOOLSD = os.path.join(BUILD, "daemon", "toolsd")
TOOLSCTL = os.path.join(BUILD, "client", "toolsctl")
PROFILES = os.path.join(SRC, "etc", "toolsd", "profiles.d")

sys.path.insert(0, os.path.join(SRC, "client", "python"))
sys.path.insert(0, HERE)

import toolsd  # noqa: E402  (the Python client under test)
import varlink_idl  # noqa: E402

READY_TIMEOUT = 30.0


class NotifySocket:
    """A datagram socket standing in for systemd's notify socket."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.bind(self.path)
        self.messages = []

    def wait_for(self, key, timeout=READY_TIMEOUT, proc=None):
        """Blocks until a datagram holding the line `key` arrives."""
        deadline = time.monotonic() + timeout
        while True:
            for m in self.messages:
                if key in m.split("\n"):
                    return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no %s from toolsd" % key)
            if proc is not None and proc.poll() is not None:
                raise RuntimeError("toolsd exited with %d before %s" % (proc.returncode, key))
            self.sock.settimeout(min(left, 0.5))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            self.messages.append(data.decode())

    def close(self):
        self.sock.close()


class Daemon:
    """One toolsd process with its own socket, config and notify socket."""

    def __init__(self, directory, config="", env=None, args=(), listen=True):
        self.dir = directory
        self.socket = os.path.join(directory, "io.toolsd")
        self.config_path = os.path.join(directory, "toolsd.conf")
        with open(self.config_path, "w") as f:
            f.write("[Daemon]\nProfilesDirectory=%s\n" % PROFILES)
            f.write(config)
        self.notify = NotifySocket(directory)
        self.log_path = os.path.join(directory, "toolsd.log")
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith(("LISTEN_", "MODULATIO_", "TOOLSD_SOCKET")):
                del self.env[k]
        self.env["NOTIFY_SOCKET"] = self.notify.path
        self.env.update(env or {})
        self.args = list(args)
        self.listen = listen
        self.proc = None

    def command(self):
        cmd = [TOOLSD, "--config", self.config_path]
        if self.listen:
            cmd += ["--listen", self.socket]
        return cmd + self.args

    def start(self, wrapper=()):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(list(wrapper) + self.command(), env=self.env,
                                     stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        self.notify.wait_for("READY=1", proc=self.proc)
        return self

    def client(self, **kw):
        return toolsd.Client(self.socket, **kw)

    def raw(self):
        """A plain socket to the daemon, for byte-level protocol tests."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        s.settimeout(30)
        s.connect(self.socket)
        return s

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops the daemon by its pid; returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        self.log.close()
        self.notify.close()
        rc = self.proc.returncode
        self.proc = None
        return rc


@pytest.fixture
def tmpdir_short():
    """A short temporary directory (socket paths must fit in 108 bytes)."""
    d = tempfile.mkdtemp(prefix="tsd-")
    os.chmod(d, 0o700)
    yield d
    subprocess.run(["rm", "-rf", "--one-file-system", d], check=False)


@pytest.fixture
def make_daemon(tmpdir_short):
    """Starts daemons on demand; every one is stopped at the end of the test
    and must have exited cleanly (exit 0) unless the test stopped it."""
    started = []

    def make(config="", env=None, args=(), start=True, listen=True):
        d = Daemon(tmpdir_short, config=config, env=env, args=args, listen=listen)
        started.append(d)
        return d.start() if start else d

    yield make
    for d in started:
        if d.proc is not None:
            rc = d.stop()
            assert rc == 0, "toolsd exited with %r; log:\n%s" % (rc, d.log_text())


@pytest.fixture
def daemon(make_daemon):
    return make_daemon()


@pytest.fixture
def root(tmpdir_short):
    """An artifacts root owned by the test's user, mode 0700."""
    r = os.path.join(tmpdir_short, "root")
    os.mkdir(r, 0o700)
    return r


def skill(tools=("run_shell",), **kw):
    s = {"name": kw.pop("name", "test"), "tools": list(tools)}
    s.update(kw)
    return s


def check_reply(method, params):
    """Every reply must match the interface definition."""
    varlink_idl.validate(method, params, direction="out")
    return params
