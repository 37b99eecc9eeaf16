"""The transcript: one JSON line per call in <root>/tool_calls/<task>.jsonl,
whole under concurrency, private whatever the umask, out of every tool's
reach, and readable with toolsctl log."""

import json
import os
import stat
import subprocess
import threading

from conftest import TOOLSCTL, skill


def lines(root, task):
    with open(os.path.join(root, "tool_calls", task + ".jsonl"), "rb") as f:
        data = f.read()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.decode().splitlines()]


def test_every_call_is_audited(daemon, root):
    with daemon.client() as c:
        s = c.open_session(skill(["echo", "run_shell"], name="audit"), root, task_id="t-1", role="coder")
        s.call("echo", {"text": "hi"})
        s.call("echo", {"text": 1})
        s.call("write_artifact", {"path": "x", "content": "y"})
        s.call("run_shell", {"command": "python3 app.py"})
    got = lines(root, "t-1")
    assert [(e["tool"], e["outcome"], e["reason"]) for e in got] == [
        ("echo", "ok", None), ("echo", "refused", "arguments"),
        ("write_artifact", "refused", "not_in_loadout"), ("run_shell", "refused", "profile")]
    for e in got:
        assert e["session"] == s.id and e["skill"] == "audit" and e["role"] == "coder"
        assert e["task_id"] == "t-1" and len(e["call_id"]) == 32 and e["uid"] == os.getuid()
        assert e["result"]["outcome"] == e["outcome"]
    assert got[0]["arguments"] == {"text": "hi"}


def test_100_concurrent_calls(daemon, root):
    """Five sessions on one task, twenty connections, a hundred calls at once:
    a hundred whole lines, none lost."""
    with daemon.client() as c:
        sessions = [c.open_session(skill(["echo", "run_shell"], profile="full"), root, task_id="busy")
                    for _ in range(5)]
    ids, errors = [], []

    def worker(k):
        try:
            with daemon.client() as cc:
                for i in range(5):
                    sess = sessions[(k + i) % 5]
                    tool, args = (("echo", {"text": "%d-%d" % (k, i)}) if i % 2 else
                                  ("run_shell", {"argv": ["echo", "x" * 1000]}))
                    r = cc.call("io.toolsd.Call", {"session": sess.id, "tool": tool, "arguments": args})
                    ids.append(r["call_id"])
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    got = lines(root, "busy")
    assert len(got) == 100
    assert sorted(e["call_id"] for e in got) == sorted(ids)


def test_permissions_under_permissive_umask(make_daemon, root):
    old = os.umask(0)
    try:
        d = make_daemon()
    finally:
        os.umask(old)
    os.chmod(os.path.join(root), 0o755)
    with d.client() as c:
        s = c.open_session(skill(["echo"]), root, task_id="perm")
        s.call("echo", {"text": "x"})
    tc = os.path.join(root, "tool_calls")
    assert stat.S_IMODE(os.stat(tc).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(tc, "perm.jsonl")).st_mode) == 0o600


def test_transcript_out_of_reach(daemon, root):
    with daemon.client() as c:
        s = c.open_session(skill(["run_shell", "write_artifact"], profile="full"), root, task_id="t")
        s.call("write_artifact", {"path": "ok", "content": "x"})
        before = open(os.path.join(root, "tool_calls", "t.jsonl"), "rb").read()
        r = s.call("write_artifact", {"path": "tool_calls/t.jsonl", "content": "{}\n"})
        assert (r["outcome"], r["reason"]) == ("refused", "path")
        r = s.call("run_shell", {"argv": ["python3", "-c",
                                          "open('tool_calls/t.jsonl', 'a').write('forged\\n')"]})
        if s.sandboxed:
            assert r["outcome"] == "exit" and "Read-only file system" in r["stderr"], r
    after = open(os.path.join(root, "tool_calls", "t.jsonl"), "rb").read()
    assert after.startswith(before) and b"\nforged\n" not in after
    assert all(json.loads(line) for line in after.decode().splitlines())


def test_task_id_must_name_a_file(daemon, root):
    import toolsd
    with daemon.client() as c:
        for bad in ("../x", "a/b", ".hidden", "x" * 129):
            try:
                c.open_session(skill(["echo"]), root, task_id=bad)
            except toolsd.InvalidArgument as e:
                assert e.parameters["field"] == "task_id"
            else:
                raise AssertionError(bad)


def test_toolsctl_log(daemon, root):
    with daemon.client() as c:
        s = c.open_session(skill(["echo"]), root, task_id="show")
        s.call("echo", {"text": "hello\x1b[31m"})
        s.call("nope", {})
        s2 = c.open_session(skill(["echo"]), root, task_id="show")
        s2.call("echo", {"text": "other"})
    out = subprocess.run([TOOLSCTL, "log", "--artifacts", root, "--task", "show"],
                         capture_output=True, text=True, check=True).stdout
    assert " echo ok " in out and " nope refused/not_in_loadout " in out and "other" in out
    assert "\x1b" not in out
    out = subprocess.run([TOOLSCTL, "log", "--artifacts", root, "--session", s2.id],
                         capture_output=True, text=True, check=True).stdout
    assert out.count(" call ") == 1 and "other" in out
    out = subprocess.run([TOOLSCTL, "--json", "log", "--artifacts", root, "--task", "show"],
                         capture_output=True, text=True, check=True).stdout
    assert [json.loads(x)["tool"] for x in out.splitlines()] == ["echo", "nope", "echo"]


LOCKER = """
import fcntl, os, sys
for mode in (os.O_RDONLY, os.O_WRONLY):
    try:
        os.open('tool_calls/.lock', mode)
        print('opened', mode)
    except OSError as e:
        print('refused', mode, e.errno)
fd = os.open('tool_calls/t.jsonl', os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print('holding the transcript', flush=True)
"""


def test_sandbox_cannot_stall_the_audit(daemon, root):
    """The writers' lock is out of the sandbox's reach, and a flock on the
    transcript itself (which the sandbox may read) delays nothing."""
    with daemon.client() as c:
        s = c.open_session(skill(["run_shell", "echo"], profile="full"), root, task_id="t")
        s.call("echo", {"text": "first"})
        r = s.call("run_shell", {"argv": ["python3", "-c", LOCKER]})
        assert r["sandboxed"] is True
        assert r["stdout"].splitlines() == [
            "refused 0 13", "refused 1 30", "holding the transcript"], r
        st = os.stat(os.path.join(root, "tool_calls", ".lock"))
        assert stat.S_IMODE(st.st_mode) == 0o200
        s.call("echo", {"text": "after"})
    got = lines(root, "t")
    assert [e["tool"] for e in got] == ["echo", "run_shell", "echo"]
