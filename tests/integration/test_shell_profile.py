"""The shell profile against a real toolsd: the command string runs as
/bin/sh -c inside the same sandbox, after the credential-exfiltration
denylist has checked the whole string and every subcommand. The denylist
is a tripwire (docs/denylist.md); these tests also show the sandbox still
holds for what it lets through.
"""

import os
import shutil
import subprocess

import pytest

from conftest import PROFILES, SRC, TOOLSD
from test_run_shell import call, open_session, sh

WHOLE = "Refused: command pattern matches credential-exfiltration denylist."
CHAINED = "Refused: chained subcommand matches credential-exfiltration denylist."


def corpus(name):
    with open(os.path.join(SRC, "tests", "data", name)) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                yield line.replace("<NL>", "\n")


EVASIONS = [tuple(x.split("\t", 1)) for x in corpus("denylist-evasions.txt")]


@pytest.fixture
def shell(daemon, root):
    with daemon.client(timeout=60) as c:
        yield open_session(c, root, profile="shell")


def test_shell_runs_pipes_and_redirections(shell, root):
    r = sh(shell, "echo hello | tr a-z A-Z > out.txt && cat out.txt; echo $((6 * 7))")
    assert (r["outcome"], r["stdout"]) == ("ok", "HELLO\n42\n"), r
    with open(os.path.join(root, "out.txt")) as f:
        assert f.read() == "HELLO\n"


def test_shell_is_still_sandboxed(shell):
    r = sh(shell, "touch /usr/x; ls /home /root 2>&1; echo x > /proc/self/comm; hostname")
    assert r["outcome"] == "ok", r
    out = r["stdout"] + r["stderr"]
    assert "Read-only file system" in out or "Permission denied" in out
    assert "No such file or directory" in out       # no /home, no /root
    assert r["stdout"].endswith("toolsd\n")


def test_shell_exit_127_is_the_commands_not_not_installed(shell):
    r = sh(shell, "no-such-program-xyz")
    assert (r["outcome"], r["exit_code"]) == ("exit", 127), r
    r = sh(shell, "exit 127")
    assert (r["outcome"], r["exit_code"]) == ("exit", 127), r


def test_shell_refusals_name_whole_or_chained(shell):
    r = sh(shell, "cat ~/.ssh/id_rsa")
    assert (r["outcome"], r["reason"], r["text"]) == ("refused", "denylist", WHOLE), r
    assert "exit_code" not in r
    r = sh(shell, "git status; env")
    assert (r["outcome"], r["reason"], r["text"]) == ("refused", "denylist", CHAINED), r


def test_shell_takes_only_a_command_string(shell):
    r = call(shell, {"argv": ["sh", "-c", "env"]})
    assert (r["outcome"], r["reason"]) == ("refused", "arguments"), r
    tools = {t["name"]: t for t in shell.list_tools()}
    spec = tools["run_shell"]
    assert "/bin/sh -c" in spec["description"]
    assert "argv" not in spec["parameters"]["properties"]


def test_evasion_corpus_through_the_daemon(shell):
    """Every evasion of the corpus is refused before anything is spawned,
    with the message that says which part matched."""
    assert len([e for e in EVASIONS if e[0] != "ok"]) >= 100
    wrong = []
    for expect, command in EVASIONS:
        if expect == "ok":
            continue
        r = sh(shell, command)
        want = WHOLE if expect == "whole" else CHAINED
        if (r["outcome"], r.get("reason"), r["text"]) != ("refused", "denylist", want):
            wrong.append((expect, command, r["outcome"], r["text"][:80]))
    assert not wrong, wrong


def test_near_misses_and_benign_commands_are_not_refused(shell):
    """Not refused through the daemon either. These do run (in an empty
    root, without network), so only a sample of the benign corpus: the unit
    test checks every line in-process."""
    commands = [c for e, c in EVASIONS if e == "ok"] + list(corpus("denylist-benign.txt"))[::6]
    refused = []
    for command in commands:
        r = sh(shell, command, timeout_ms=2000)
        if r["outcome"] == "refused":
            refused.append((command, r["text"][:80]))
    assert not refused, refused


def profiles_copy(tmp, shell_conf, denylist=True):
    """A profiles directory with the given shell.conf; returns its path."""
    d = os.path.join(tmp, "etc", "profiles.d")
    os.makedirs(d)
    for f in ("passive.conf", "full.conf"):
        shutil.copy(os.path.join(PROFILES, f), d)
    with open(os.path.join(d, "shell.conf"), "w") as f:
        f.write(shell_conf)
    if denylist:
        shutil.copy(os.path.join(PROFILES, "..", "denylist.conf"), os.path.join(tmp, "etc"))
    return d


@pytest.mark.parametrize("text,error", [
    ("profile shell\nshell\nallow ls\n", "'allow' in shell profile 'shell': a shell profile has no shapes"),
    ("profile shell\nallow ls\nshell\n", "'shell' in profile 'shell', which has shapes"),
    ("profile shell\nshell now\n", "'shell' takes no argument"),
    ("profile shell\nshell\nshell\n", "'shell' twice in profile 'shell'"),
    ("profile shell\nshell\nprofile mixed\ninclude shell\n", "include of shell profile 'shell'"),
    ("shell\n", "'shell' before any 'profile' line"),
])
def test_shell_directive_errors(tmpdir_short, text, error):
    conf = os.path.join(tmpdir_short, "check.conf")
    with open(conf, "w") as f:
        f.write("[Daemon]\nProfilesDirectory=%s\n" % profiles_copy(tmpdir_short, text))
    p = subprocess.run([TOOLSD, "--config", conf, "--check-config"], capture_output=True, text=True)
    assert p.returncode != 0
    assert error in p.stderr, p.stderr


def test_without_denylist_the_shell_profile_runs_nothing(make_daemon, tmpdir_short, root):
    d = make_daemon(config="ProfilesDirectory=%s\n" % profiles_copy(tmpdir_short, "profile shell\nshell\n",
                                                                       denylist=False))
    with d.client(timeout=30) as c:
        checks = {x["name"]: x for x in c.doctor()}
        assert checks["denylist"]["ok"] is False
        s = open_session(c, root, profile="shell")
        r = sh(s, "echo hi")
    assert (r["outcome"], r["reason"]) == ("refused", "denylist"), r
    assert "not loaded" in r["text"]
