"""The systemd units pass `systemd-analyze verify`, with ExecStart pointing at
the binary under test (the installed path does not exist in a build tree)."""

import os
import shutil
import subprocess

import pytest

from conftest import SRC, TOOLSD


def units(directory, kind):
    out = []
    for name in sorted(os.listdir(os.path.join(SRC, "systemd", kind))):
        with open(os.path.join(SRC, "systemd", kind, name)) as f:
            text = f.read().replace("@sbindir@/toolsd", TOOLSD)
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            f.write(text)
        out.append(path)
    return out


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze missing")
def test_user_units_verify(tmpdir_short):
    runtime = os.path.join(tmpdir_short, "xdg")
    os.mkdir(runtime, 0o700)
    paths = units(tmpdir_short, "user")
    assert {os.path.basename(p) for p in paths} == {"toolsd.socket", "toolsd.service"}
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", "--user"] + paths,
                       env=dict(os.environ, XDG_RUNTIME_DIR=runtime),
                       capture_output=True, text=True, cwd=tmpdir_short)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_user_socket_is_private():
    with open(os.path.join(SRC, "systemd", "user", "toolsd.socket")) as f:
        text = f.read()
    assert "ListenStream=%t/toolsd/io.toolsd" in text
    assert "SocketMode=0600" in text


def test_user_service_is_notify():
    with open(os.path.join(SRC, "systemd", "user", "toolsd.service")) as f:
        text = f.read()
    assert "Type=notify" in text
    assert "ExecStart=@sbindir@/toolsd" in text
