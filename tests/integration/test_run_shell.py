"""Adversarial integration tests of run_shell: profiles, hostile command
strings, path safety, outcomes, streaming and toolsctl run.

Every test talks to a real toolsd with real bwrap. Commands that must be
killed block forever; their deadline is the call's timeout_ms. The only
waiting done here is a liveness check (a file that must stop growing, a
process that must disappear), which polls with a bounded deadline.
"""

import base64
import json
import os
import subprocess
import time

import pytest

from conftest import TOOLSCTL, check_reply, skill

import toolsd

SHORT = 2000

# ---- helpers (also used by test_sandbox.py) -------------------------------


def call(s, arguments, timeout_ms=SHORT):
    """One run_shell call; the whole reply is checked against the IDL."""
    params = {"session": s.id, "tool": "run_shell", "arguments": arguments, "timeout_ms": timeout_ms}
    reply = check_reply("io.toolsd.Call", s.client.call("io.toolsd.Call", params))
    assert reply["call_id"]
    s.call_id = reply["call_id"]
    return reply["result"]


def sh(s, command, timeout_ms=SHORT):
    return call(s, {"command": command}, timeout_ms)


def py(s, code, timeout_ms=SHORT):
    return call(s, {"argv": ["python3", "-c", code]}, timeout_ms)


def open_session(c, root, sandbox=None, env=None, **kw):
    kw.setdefault("profile", "full")
    reply = c.call("io.toolsd.OpenSession", dict(
        {"skill": skill(**kw), "artifacts_root": root, "env": env or {}},
        **({"sandbox": sandbox} if sandbox else {})))
    check_reply("io.toolsd.OpenSession", reply)
    return toolsd.Session(c, reply)


def write(root, name, data, mode=0o644):
    p = os.path.join(root, name)
    with open(p, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.chmod(p, mode)
    return p


def stable_size(path, deadline=3.0, reads=5, interval=0.1):
    """Liveness check, not synchronisation: returns once the file's size has
    been the same over `reads` reads `interval` apart, fails if it keeps
    changing until the deadline. A writer that survived its call would
    append every 50 ms and never let it settle."""
    end = time.monotonic() + deadline
    last, same = -1, 0
    while time.monotonic() < end:
        size = os.path.getsize(path) if os.path.exists(path) else 0
        same = same + 1 if size == last else 0
        last = size
        if same >= reads:
            return size
        time.sleep(interval)
    pytest.fail("%s is still growing: a process of the call survived it" % path)


def pids_with(token):
    """Host pids whose command line contains token (the sandbox's pid
    namespace is visible from the host's /proc)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if token.encode() in f.read():
                    found.append(int(d))
        except OSError:
            pass
    return found


def assert_no_process(token, deadline=3.0):
    """Liveness check: no process carrying token survives (SIGKILL is
    delivered at once but reaping is asynchronous, hence the deadline)."""
    end = time.monotonic() + deadline
    while pids_with(token):
        if time.monotonic() > end:
            pytest.fail("processes of the call survived: %r" % pids_with(token))
        time.sleep(0.05)


@pytest.fixture
def files(root):
    write(root, "a.txt", "".join("line %d\n" % i for i in range(1, 11)))
    write(root, "ok.py", "x = 1\n")
    write(root, "bad.py", "def (:\n")
    write(root, "hello.py", "import sys\nprint('hello', sys.argv[1:])\n")
    write(root, "data.json", '{"b": 1, "a": [1, 2]}')
    write(root, "script.sh", "echo from-bash $1\nexit 4\n")
    write(root, "my file.txt", "spaced\n")
    return root


@pytest.fixture
def passive(daemon, files):
    with daemon.client(timeout=30) as c:
        s = open_session(c, files, profile="passive")
        yield s


@pytest.fixture
def full(daemon, files):
    with daemon.client(timeout=30) as c:
        s = open_session(c, files, profile="full")
        yield s


# ---- passive profile --------------------------------------------------------


def test_passive_python_version(passive):
    r = sh(passive, "python3 --version")
    assert r["outcome"] == "ok" and r["exit_code"] == 0 and r["sandboxed"] is True
    assert r["stdout"].startswith("Python 3.")
    assert r["text"].startswith("exit_code: 0\nstdout: Python 3.")


def test_passive_py_compile(passive, files):
    r = sh(passive, "python3 -m py_compile ok.py")
    assert (r["outcome"], r["exit_code"]) == ("ok", 0), r
    r = sh(passive, "python3 -m py_compile bad.py")
    assert (r["outcome"], r["exit_code"]) == ("exit", 1), r
    assert "SyntaxError" in r["stderr"]


def test_passive_ls(passive):
    r = sh(passive, "ls")
    assert r["outcome"] == "ok"
    assert r["stdout"].split("\n")[:-1] == sorted(
        ["a.txt", "bad.py", "data.json", "hello.py", "my file.txt", "ok.py", "script.sh", "tool_calls"])
    r = sh(passive, "ls -la")
    assert r["outcome"] == "ok" and r["stdout"].startswith("total ")
    assert " a.txt\n" in r["stdout"] and " tool_calls\n" in r["stdout"]


@pytest.mark.parametrize("command,lines", [
    ("cat a.txt", 10), ("head -n 5 a.txt", 5), ("head -3 a.txt", 3), ("tail -n 2 a.txt", 2),
])
def test_passive_reading(passive, command, lines):
    r = sh(passive, command)
    assert r["outcome"] == "ok", r
    out = r["stdout"].split("\n")[:-1]
    assert len(out) == lines
    assert all(x.startswith("line ") for x in out)


@pytest.mark.parametrize("command,program", [
    ("ruff --version", "ruff"), ("ruff check .", "ruff"), ("mypy ok.py", "mypy"),
    ("ruby --version", "ruby"), ("go version", "go"),
])
def test_passive_not_installed(passive, command, program):
    if any(os.access(os.path.join(d, program), os.X_OK) for d in ("/usr/local/bin", "/usr/bin", "/bin")):
        pytest.skip("%s is installed here" % program)
    r = sh(passive, command)
    assert r["outcome"] == "not_installed", r
    assert r["text"] == "[INFO] tool '%s' not installed" % program
    assert "exit_code" not in r and "reason" not in r


def test_passive_node_version_runs_when_installed(passive):
    if not os.access("/usr/bin/node", os.X_OK):
        pytest.skip("node is not installed")
    r = sh(passive, "node --version")
    assert r["outcome"] == "ok" and r["stdout"].startswith("v"), r


@pytest.mark.parametrize("command,why", [
    ("python3 -c 'import x'", "python3 -c runs the given code; not passive"),
    ("python3 hello.py --help", "python3 <file> runs the script's top-level code; not passive"),
    ("python3 -m mod --help", "python3 -m <module> imports and runs the module; not passive"),
    ("node hello.js --help", "node <file> runs the script; not passive"),
    ("ruby hello.rb --help", "ruby <file> runs the script; not passive"),
    ("sh -c id", "a shell runs arbitrary commands; not passive"),
    ("bash -c id", "a shell runs arbitrary commands; not passive"),
    ("rm -rf /", None),
    ("env", None),
])
def test_passive_refused(passive, files, command, why):
    write(files, "hello.js", "console.log(1)\n")
    write(files, "hello.rb", "puts 1\n")
    r = sh(passive, command)
    assert (r["outcome"], r.get("reason")) == ("refused", "profile"), r
    first = r["text"].split("\n")[0]
    assert first.startswith("command not allowed by profile passive: ")
    if why:
        assert r["text"].split("\n")[1] == why
    assert "exit_code" not in r and "stdout" not in r
    assert r["duration_ms"] < 100


def test_refusal_names_nearest_shapes(passive):
    r = sh(passive, "rm -rf /")
    assert "allowed shapes in profile passive: " in r["text"]
    r = sh(passive, "python3 -c 'import x'")
    assert "python3 -m py_compile <file>" in r["text"]


# ---- full profile -----------------------------------------------------------


def test_full_runs_script(full):
    r = sh(full, "python3 hello.py one 'two words'")
    assert r["outcome"] == "ok", r
    assert r["stdout"] == "hello ['one', 'two words']\n"


def test_full_python_c_and_m(full):
    r = sh(full, "python3 -c 'print(6*7)'")
    assert (r["outcome"], r["stdout"]) == ("ok", "42\n")
    r = sh(full, "python3 -m json.tool data.json")
    assert r["outcome"] == "ok", r
    assert json.loads(r["stdout"]) == {"b": 1, "a": [1, 2]}


def test_full_bash_file(full):
    r = sh(full, "bash script.sh arg1")
    assert (r["outcome"], r["exit_code"], r["stdout"]) == ("exit", 4, "from-bash arg1\n")
    assert r["text"].startswith("exit_code: 4\nstdout: from-bash arg1\n")


def test_full_still_refuses_shell_c(full):
    r = sh(full, "bash -c id")
    assert (r["outcome"], r["reason"]) == ("refused", "profile")
    assert r["text"].startswith("command not allowed by profile full: bash -c id")


def test_full_script_must_exist(full):
    r = sh(full, "python3 missing.py")
    assert (r["outcome"], r["reason"]) == ("refused", "path"), r
    assert r["text"].startswith("path not allowed: 'missing.py': ")


@pytest.mark.parametrize("argv", [
    ["python3", "-c", "import sys; print(sys.argv[1:])", "a b", "'q'", "$HOME"],
    ["cat", "my file.txt"],
    ["python3", "-m", "json.tool", "data.json"],
])
def test_argv_form_equals_command_form(full, argv):
    import shlex
    a = call(full, {"argv": argv})
    b = sh(full, shlex.join(argv))
    for r in (a, b):
        assert r["outcome"] == "ok", r
    for k in ("outcome", "exit_code", "stdout", "stderr"):
        assert a[k] == b[k]
    if argv[0] == "python3" and argv[1] == "-c":
        assert a["stdout"] == "['a b', \"'q'\", '$HOME']\n"


@pytest.mark.parametrize("arguments,why", [
    ({}, "give exactly one of command (a string) or argv (a list of strings)"),
    ({"command": "ls", "argv": ["ls"]}, "give exactly one of command (a string) or argv (a list of strings)"),
    # The tool's schema answers first, naming the field.
    ({"command": 5}, "invalid argument 'command': must be a string"),
    ({"argv": []}, "argv must be a list of 1 to"),
    ({"argv": ["ls", 3]}, "invalid argument 'argv[1]': must be a string"),
    ({"cmd": "ls"}, "invalid argument 'cmd': is not a known field"),
    ({"command": "ls 'unterminated"}, "cannot split command: "),
])
def test_bad_arguments(full, arguments, why):
    r = call(full, arguments)
    assert (r["outcome"], r["reason"]) == ("refused", "arguments"), r
    assert r["text"].startswith(why)


def test_nul_in_argument_is_a_protocol_error(daemon, root):
    # The codec refuses \u0000 in any string: the connection is dropped, the
    # daemon stays up and nothing runs.
    with daemon.client(timeout=30) as c:
        s = open_session(c, root)
        with pytest.raises(toolsd.ConnectionClosed):
            call(s, {"argv": ["python3", "-c", "open('PWNED','w')\0"]})
    assert not os.path.exists(os.path.join(root, "PWNED"))
    with daemon.client(timeout=30) as c:
        assert c.status()["running_calls"] == 0


# ---- hostile command strings: never interpreted by a shell ----------------


@pytest.mark.parametrize("command,reason", [
    ("ls; touch PWNED", "profile"),
    ("ls && touch PWNED", "profile"),
    ("ls || touch PWNED", "profile"),
    ("cat a.txt | sh -c 'touch PWNED'", "profile"),
    ("$(touch PWNED)", "profile"),
    ("`touch PWNED`", "profile"),
    ("ls > PWNED", "profile"),
    ("cat a.txt > PWNED", "profile"),
    ("ls\ntouch PWNED", "profile"),
    ("cat 'a;touch PWNED'", "path"),
    ("cat a.txt\\;touch\\ PWNED", "path"),
])
def test_hostile_strings_are_literal_words(passive, files, command, reason):
    r = sh(passive, command)
    assert (r["outcome"], r["reason"]) == ("refused", reason), r
    assert not os.path.exists(os.path.join(files, "PWNED"))


def test_hostile_words_reach_the_program_verbatim(passive, files):
    # ls <path> runs: the metacharacters arrive as one file name.
    r = sh(passive, "ls '$(touch PWNED)'")
    assert r["outcome"] == "exit" and r["exit_code"] == 2, r
    assert "$(touch PWNED)" in r["stderr"]
    assert not os.path.exists(os.path.join(files, "PWNED"))


def test_hostile_tail_becomes_python_argv(full, files):
    r = sh(full, "python3 -c 'import sys; print(sys.argv[1:])'; touch PWNED; `touch PWNED` $(id)")
    # The ";" sticks to the code word (valid Python); the rest is argv.
    assert (r["outcome"], r["stdout"]) == ("ok", str(["touch", "PWNED;", "`touch", "PWNED`", "$(id)"]) + "\n"), r
    r = sh(full, "python3 -c 'import sys; print(sys.argv[1:])' ; touch PWNED '&&' `id` $(id) '|' sh")
    assert r["outcome"] == "ok", r
    assert r["stdout"] == str([";", "touch", "PWNED", "&&", "`id`", "$(id)", "|", "sh"]) + "\n"
    assert not os.path.exists(os.path.join(files, "PWNED"))


# ---- path safety ------------------------------------------------------------


@pytest.mark.parametrize("command,shown", [
    ("cat ../x", "../x"),
    ("cat /etc/passwd", "/etc/passwd"),
    ("cat /proc/self/environ", "/proc/self/environ"),
    ("head -n 1 /root/.bashrc", "/root/.bashrc"),
    ("cat link", "link"),
    ("cat outdir/passwd", "outdir/passwd"),
    ("ls outdir", "outdir"),
    ("ls -la ..", ".."),
    ("cat tool_calls/../../x", "tool_calls/../../x"),
])
def test_path_refused(passive, files, command, shown):
    os.symlink("/etc/passwd", os.path.join(files, "link"))
    os.symlink("/etc", os.path.join(files, "outdir"))
    with open(os.path.join(os.path.dirname(files), "x"), "w") as f:
        f.write("outside\n")
    r = sh(passive, command)
    assert (r["outcome"], r["reason"]) == ("refused", "path"), r
    assert r["text"].startswith("path not allowed: '%s': " % shown)
    assert "stdout" not in r and "root:" not in r["text"]


@pytest.mark.parametrize("command,shown", [
    ("cat .env", ".env"),
    ("head -n 1 .git/config", ".git/config"),
    ("cat sub/.ssh/id_rsa", "sub/.ssh/id_rsa"),
])
def test_hidden_files_refused(passive, files, command, shown):
    # They exist and lie under the root: refused for being hidden, which is
    # where projects keep secrets and settings.
    for name in (".env", ".git/config", "sub/.ssh/id_rsa"):
        os.makedirs(os.path.dirname(os.path.join(files, name)), exist_ok=True)
        write(files, name, "SECRET=1\n")
    r = sh(passive, command)
    assert (r["outcome"], r["reason"]) == ("refused", "path"), r
    assert r["text"] == "path not allowed: '%s': hidden files (.env, .git, .ssh, ...) are not open to tools" % shown
    assert "SECRET" not in r["text"]
    # Listing the root still shows them by name.
    assert ".env" in sh(passive, "ls -la")["stdout"]


def test_path_absolute_inside_root_allowed(passive, files):
    r = sh(passive, "cat %s/a.txt" % files)
    assert r["outcome"] == "ok" and r["stdout"].startswith("line 1\n"), r


def test_path_with_spaces_allowed(passive):
    r = sh(passive, "cat 'my file.txt'")
    assert (r["outcome"], r["stdout"]) == ("ok", "spaced\n"), r
    r = sh(passive, "cat my\\ file.txt")
    assert (r["outcome"], r["stdout"]) == ("ok", "spaced\n"), r
    r = sh(passive, "cat my file.txt")
    assert (r["outcome"], r["reason"]) == ("refused", "profile"), r


def test_symlink_inside_root_allowed(passive, files):
    os.symlink("a.txt", os.path.join(files, "alias"))
    r = sh(passive, "head -n 1 alias")
    assert (r["outcome"], r["stdout"]) == ("ok", "line 1\n"), r


# ---- outcomes ---------------------------------------------------------------


def test_exit_127_is_not_not_installed(full):
    r = py(full, "import sys; sys.exit(127)")
    assert (r["outcome"], r["exit_code"]) == ("exit", 127), r
    assert r["text"].startswith("exit_code: 127\n")


def test_signal_outcome(full):
    r = py(full, "import os; print('before', flush=True); os.kill(os.getpid(), 9)")
    assert (r["outcome"], r["signal"]) == ("signal", "SIGKILL"), r
    assert "exit_code" not in r
    assert r["text"].startswith("signal: SIGKILL\nstdout: before\n")


def test_exit_code_128_plus_n_is_not_a_signal(full):
    r = py(full, "import sys; sys.exit(137)")
    assert (r["outcome"], r["exit_code"]) == ("exit", 137), r
    assert "signal" not in r


def test_invalid_utf8_output(full):
    code = "import sys; sys.stdout.buffer.write(b'a\\xff\\xfeb'); sys.stdout.flush()"
    r = py(full, code)
    assert r["outcome"] == "ok"
    assert r["stdout"] == "a\ufffd\ufffdb"
    assert "a\ufffd\ufffdb" in r["text"]
    # The streamed chunk carries the raw bytes.
    params = {"session": full.id, "tool": "run_shell",
              "arguments": {"argv": ["python3", "-c", code]}, "timeout_ms": SHORT}
    chunks, result = [], None
    for reply in full.client.call_more("io.toolsd.Call", params):
        check_reply("io.toolsd.Call", reply)
        if "chunk" in reply:
            chunks.append(reply["chunk"])
        if "result" in reply:
            result = reply["result"]
    assert result["outcome"] == "ok"
    out = [c for c in chunks if c["stream"] == "stdout"]
    assert out and all(c.get("encoding") == "base64" for c in out)
    assert b"".join(base64.b64decode(c["data"]) for c in out) == b"a\xff\xfeb"


def test_stream_chunks_before_result(full):
    code = ("import sys\nfor i in range(200):\n    print('line', i, flush=True)\n"
            "print('err', file=sys.stderr, flush=True)")
    items = list(full.stream("run_shell", {"argv": ["python3", "-c", code]}, timeout_ms=SHORT))
    kinds = [k for k, _ in items]
    assert kinds[-1] == "result" and kinds.count("result") == 1
    assert kinds.count("chunk") >= 1
    result = items[-1][1]
    assert result["outcome"] == "ok"
    out = b"".join(i["data"] for k, i in items if k == "chunk" and i["stream"] == "stdout")
    err = b"".join(i["data"] for k, i in items if k == "chunk" and i["stream"] == "stderr")
    assert out.decode() == result["stdout"] == "".join("line %d\n" % i for i in range(200))
    assert err == b"err\n"


# ---- toolsctl run -------------------------------------------------------------


def toolsctl_run(daemon, root, *cmd, profile="full"):
    return subprocess.run([TOOLSCTL, "--socket", daemon.socket, "run", "--artifacts", root,
                           "--profile", profile, "--"] + list(cmd),
                          capture_output=True, timeout=30, stdin=subprocess.DEVNULL)


def test_toolsctl_run_exit_code(daemon, root):
    p = toolsctl_run(daemon, root, "python3", "-c", "import sys; print('x'); sys.exit(3)")
    assert p.returncode == 3, p
    assert p.stdout == b"x\n"


def test_toolsctl_run_not_installed(daemon, root):
    p = toolsctl_run(daemon, root, "ruff", "--version")
    assert p.returncode == 127, p
    assert b"ruff" in p.stderr


def test_toolsctl_run_refused(daemon, root):
    p = toolsctl_run(daemon, root, "bash", "-c", "id", profile="passive")
    assert p.returncode == 125, p
    assert b"not allowed by profile passive" in p.stderr
    assert p.stdout == b""
