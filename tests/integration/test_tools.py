"""The tools beyond run_shell against a real toolsd: the loadout, schema
validation, write_artifact, read_tool_result and http_get, and ListTools
output taken straight into an LLM function-calling tool list."""

import base64
import http.server
import json
import os
import re
import threading
import time
import urllib.parse

import pytest

from conftest import skill

ALL = ("echo", "run_shell", "write_artifact", "read_tool_result", "http_get")
NET_CONFIG = "[Sandbox]\nAllowNetwork=yes\n[Network]\nHttpAllowLoopback=yes\n"


@pytest.fixture
def netd(make_daemon):
    return make_daemon(config=NET_CONFIG)


def open_all(d, root, tools=ALL, **kw):
    c = d.client()
    return c, c.open_session(skill(tools, needs_network=True, **kw), root, task_id="t1")


# ---- ListTools → an LLM tool list ----

def test_list_tools_is_an_llm_tool_list(netd, root):
    c, s = open_all(netd, root)
    with c:
        specs = s.list_tools()
        assert [t["name"] for t in specs] == list(ALL)
        openai, anthropic = [], []
        for t in specs:
            assert set(t) == {"name", "description", "parameters"}
            assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", t["name"])
            assert isinstance(t["description"], str) and t["description"]
            p = t["parameters"]
            assert p["type"] == "object" and isinstance(p["properties"], dict)
            assert p.get("additionalProperties") is False
            for name in p.get("required", []):
                assert name in p["properties"]
            openai.append({"type": "function", "function": json.loads(json.dumps(t))})
            anthropic.append({"name": t["name"], "description": t["description"], "input_schema": p})
        assert "passive" in next(t for t in specs if t["name"] == "run_shell")["description"]
        # A fake model answer: a tool call with its arguments as a JSON text.
        model_call = {"id": "call_1", "type": "function",
                      "function": {"name": "write_artifact",
                                   "arguments": json.dumps({"path": "notes/a.md", "content": "# hi\n"})}}
        fn = model_call["function"]
        assert fn["name"] in [t["function"]["name"] for t in openai]
        r = s.call(fn["name"], json.loads(fn["arguments"]))
        assert r["outcome"] == "ok", r
        with open(os.path.join(root, "notes", "a.md")) as f:
            assert f.read() == "# hi\n"


# ---- loadout and schema ----

@pytest.mark.parametrize("tool,args", [
    ("echo", {"text": "x"}), ("run_shell", {"command": "ls"}),
    ("write_artifact", {"path": "a", "content": "x"}),
    ("read_tool_result", {"call_id": "0" * 32}), ("http_get", {"url": "http://127.0.0.1/"}),
    ("no_such_tool", {}),
])
def test_loadout_refusal(netd, root, tool, args):
    with netd.client() as c:
        s = c.open_session(skill(["echo"] if tool != "echo" else ["run_shell"]), root, task_id="lo")
        r = s.call(tool, args)
        assert (r["outcome"], r["reason"]) == ("refused", "not_in_loadout")
    assert not os.path.exists(os.path.join(root, "a"))
    with open(os.path.join(root, "tool_calls", "lo.jsonl")) as f:
        line = json.loads(f.read().splitlines()[-1])
    assert line["tool"] == tool and line["reason"] == "not_in_loadout"


@pytest.mark.parametrize("tool,args,text", [
    ("write_artifact", {"path": "a", "content": "x", "mode": "0777"}, "invalid argument 'mode': is not a known field"),
    ("write_artifact", {"path": 1, "content": "x"}, "invalid argument 'path': must be a string"),
    ("write_artifact", {"content": "x"}, "invalid argument 'path': is required"),
    ("write_artifact", {"path": "a" * 1025, "content": "x"}, "invalid argument 'path': must be at most 1024"),
    ("write_artifact", {"path": "a", "content": "x", "encoding": "hex"}, "invalid argument 'encoding': must be one of"),
    ("read_tool_result", {"call_id": "../../x"}, "invalid argument 'call_id': must be 32 lower-case hex digits"),
    ("read_tool_result", {"call_id": "0" * 32, "offset": -1}, "invalid argument 'offset': must be at least 0"),
    ("read_tool_result", {"call_id": "0" * 32, "length": 2 << 20}, "invalid argument 'length': must be at most"),
    ("http_get", {"url": "http://x/" + "a" * 4096}, "invalid argument 'url': must be at most 4096"),
    ("http_get", {"url": "http://127.0.0.1/", "method": "POST"}, "invalid argument 'method': is not a known field"),
    ("http_get", {"url": "http://127.0.0.1/", "max_bytes": "1"}, "invalid argument 'max_bytes': must be an integer"),
    ("run_shell", {"argv": ["ls", 1]}, "invalid argument 'argv[1]': must be a string"),
    ("echo", {"text": None}, "invalid argument 'text': must not be null"),
])
def test_schema_validation(netd, root, tool, args, text):
    c, s = open_all(netd, root)
    with c:
        r = s.call(tool, args)
        assert (r["outcome"], r["reason"]) == ("refused", "arguments"), r
        assert r["text"].startswith(text), r["text"]


# ---- write_artifact ----

def test_write_artifact(netd, root):
    c, s = open_all(netd, root)
    with c:
        r = s.call("write_artifact", {"path": "d/e/f.txt", "content": "héllo"})
        assert r["outcome"] == "ok" and r["bytes"] == 6 and r["text"] == "wrote 6 bytes to d/e/f.txt"
        r = s.call("write_artifact", {"path": "bin", "content": base64.b64encode(b"\0\xff").decode(),
                                      "encoding": "base64"})
        assert r["outcome"] == "ok" and r["bytes"] == 2
    with open(os.path.join(root, "bin"), "rb") as f:
        assert f.read() == b"\0\xff"
    assert os.stat(os.path.join(root, "d/e/f.txt")).st_mode & 0o777 == 0o644


@pytest.mark.parametrize("path", ["../x", "/etc/x", "tool_calls/t1.jsonl", "TOOL_CALLS/x", ".bashrc",
                                  "a/../b", "a//b", "link/x", "link/../x"])
def test_write_artifact_refused_paths(netd, root, path):
    outside = os.path.join(os.path.dirname(root), "outside")
    os.mkdir(outside)
    os.symlink(outside, os.path.join(root, "link"))
    os.symlink(os.path.join(outside, "f"), os.path.join(root, "filelink"))
    c, s = open_all(netd, root)
    with c:
        r = s.call("write_artifact", {"path": path, "content": "x"})
        assert (r["outcome"], r["reason"]) == ("refused", "path"), r
        # A symlink as the last component is replaced, never followed.
        r = s.call("write_artifact", {"path": "filelink", "content": "x"})
        assert r["outcome"] == "ok"
    assert os.listdir(outside) == []
    assert not os.path.islink(os.path.join(root, "filelink"))


def test_write_artifact_refused_content(make_daemon, root):
    d = make_daemon(config="[Calls]\nMaxArtifactSize=1K\n")
    with d.client() as c:
        s = c.open_session(skill(["write_artifact"]), root)
        r = s.call("write_artifact", {"path": "big", "content": "x" * 1025})
        assert (r["outcome"], r["reason"]) == ("refused", "arguments"), r
        assert r["text"] == "content: 1025 bytes; write_artifact writes at most 1024"
        r = s.call("write_artifact", {"path": "big", "content": "x" * 1369})
        assert r["text"].startswith("invalid argument 'content': must be at most 1368 characters"), r
        r = s.call("write_artifact", {"path": "ok", "content": "x" * 1024})
        assert r["outcome"] == "ok"
        r = s.call("write_artifact", {"path": "b", "content": "!!!!", "encoding": "base64"})
        assert (r["outcome"], r["reason"]) == ("refused", "arguments") and r["text"].startswith("content: ")
    assert not os.path.exists(os.path.join(root, "big"))


def test_write_artifact_symlink_race(netd, root):
    """A directory swapped for a symlink to outside while writes go on:
    nothing ever lands outside the root."""
    outside = os.path.join(os.path.dirname(root), "outside")
    os.mkdir(outside)
    d = os.path.join(root, "d")
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            try:
                os.mkdir(d)
            except FileExistsError:
                pass
            tmp = os.path.join(root, "tmplink")
            try:
                os.symlink(outside, tmp)
                os.rename(tmp, d) if not os.listdir(d) else None
            except OSError:
                pass
            try:
                if os.path.islink(d):
                    os.unlink(d)
                elif os.path.isdir(d):
                    for n in os.listdir(d):
                        os.unlink(os.path.join(d, n))
                    os.rmdir(d)
            except OSError:
                pass

    t = threading.Thread(target=flip)
    t.start()
    try:
        c, s = open_all(netd, root)
        with c:
            outcomes = set()
            for i in range(200):
                r = s.call("write_artifact", {"path": "d/f%d" % i, "content": "x"})
                outcomes.add(r["outcome"])
                assert r["outcome"] in ("ok", "refused", "sandbox_error"), r
    finally:
        stop.set()
        t.join()
    assert os.listdir(outside) == []


# ---- read_tool_result ----

def test_read_tool_result(netd, root):
    with open(os.path.join(root, "big.txt"), "w") as f:
        f.write("é" * 100000)
    with open(os.path.join(root, "bin"), "wb") as f:
        f.write(b"\xff\xfe" * 10)
    c, s = open_all(netd, root)
    with c:
        r = s.call("run_shell", {"command": "cat big.txt"})
        assert r["outcome"] == "ok"
        cid = s.call_id
        got, offset = b"", 0
        while True:
            r = s.call("read_tool_result", {"call_id": cid, "offset": offset, "length": 65537})
            assert r["outcome"] == "ok" and r["total"] == 200000, r
            assert "encoding" not in r  # pages end on a character boundary
            body = r["text"].split("\n", 1)[1].encode()
            assert len(body) == r["length"] <= 65537
            got += body
            offset += r["length"]
            if r["eof"]:
                break
        assert got == ("é" * 100000).encode()
        r = s.call("run_shell", {"command": "cat bin"})
        bid = s.call_id
        r = s.call("read_tool_result", {"call_id": bid})
        assert r["encoding"] == "base64" and base64.b64decode(r["text"].split("\n", 1)[1]) == b"\xff\xfe" * 10
        r = s.call("read_tool_result", {"call_id": cid, "stream": "stderr"})
        assert r["outcome"] == "ok" and r["total"] == 0 and r["eof"]
        r = s.call("read_tool_result", {"call_id": cid, "offset": 200001})
        assert (r["outcome"], r["reason"]) == ("refused", "arguments")
        r = s.call("read_tool_result", {"call_id": "f" * 32})
        assert (r["outcome"], r["reason"]) == ("refused", "arguments")
        # Another session on the same root cannot read this session's calls.
        s2 = c.open_session(skill(["read_tool_result"]), root)
        r = s2.call("read_tool_result", {"call_id": cid})
        assert (r["outcome"], r["reason"]) == ("refused", "arguments") and "not a run_shell call" in r["text"]


# ---- http_get ----

class Handler(http.server.BaseHTTPRequestHandler):
    seen = []

    def log_message(self, *args):
        pass

    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def do_GET(self):
        Handler.seen.append(self.command)
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/ok":
            self.send(200, b"hello")
        elif url.path == "/big":
            self.send(200, b"x" * 100000)
        elif url.path == "/slow":
            time.sleep(3)
            self.send(200, b"late")
        elif url.path == "/redirect":
            self.send(302, headers=[("Location", urllib.parse.parse_qs(url.query)["to"][0])])
        else:
            self.send(404, b"nope")

    def do_POST(self):
        Handler.seen.append(self.command)
        self.send(405)


@pytest.fixture(scope="module")
def web():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_http_get(netd, root, web):
    c, s = open_all(netd, root)
    with c:
        assert s.network
        r = s.call("http_get", {"url": web + "/ok"})
        assert r["outcome"] == "ok", r
        assert (r["http_status"], r["bytes"], r["truncated"]) == (200, 5, False)
        assert r["text"].endswith("\nbody:\nhello")
        r = s.call("http_get", {"url": web + "/missing"})
        assert (r["outcome"], r["http_status"]) == ("ok", 404)
        r = s.call("http_get", {"url": web + "/big", "max_bytes": 1000})
        assert (r["outcome"], r["bytes"], r["truncated"]) == ("ok", 1000, True)
        r = s.call("http_get", {"url": web + "/redirect?to=http://169.254.169.254/latest"})
        assert (r["outcome"], r["reason"]) == ("refused", "network"), r
        r = s.call("http_get", {"url": web + "/redirect?to=http://10.0.0.1/"})
        assert (r["outcome"], r["reason"]) == ("refused", "network"), r
        t0 = time.monotonic()
        r = s.call("http_get", {"url": web + "/slow", "timeout_ms": 500})
        assert r["outcome"] == "timeout" and time.monotonic() - t0 < 2.5, r
        r = s.call("http_get", {"url": "ftp://127.0.0.1/"})
        assert (r["outcome"], r["reason"]) == ("refused", "network")
        r = s.call("http_get", {"url": web + "/ok", "method": "POST"})
        assert (r["outcome"], r["reason"]) == ("refused", "arguments")
    assert "POST" not in Handler.seen


def test_http_get_loopback_refused_by_default(make_daemon, root, web):
    d = make_daemon(config="[Sandbox]\nAllowNetwork=yes\n")
    with d.client() as c:
        s = c.open_session(skill(["http_get"], needs_network=True), root)
        r = s.call("http_get", {"url": web + "/ok"})
        assert (r["outcome"], r["reason"]) == ("refused", "network"), r


def test_http_get_without_network(netd, root, web):
    with netd.client() as c:
        s = c.open_session(skill(["http_get"]), root)
        assert not s.network
        assert "no network access" in s.tools[0]["description"]
        r = s.call("http_get", {"url": web + "/ok"})
        assert (r["outcome"], r["reason"]) == ("refused", "network")
