"""toolsd-http, the http_get worker, run directly against a loopback server.

The binary is $TOOLSD_HTTP, or the build's daemon/toolsd-http; the module is
skipped when neither exists. Every request goes to 127.0.0.1 or is refused
before any connection is made (0.0.0.0, metadata, other schemes).
"""

import base64
import http.server
import json
import os
import subprocess
import threading
import time
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("TOOLSD_BUILD", os.path.join(SRC, "build"))
WORKER = os.environ.get("TOOLSD_HTTP") or os.path.join(BUILD, "daemon", "toolsd-http")

pytestmark = pytest.mark.skipif(not os.access(WORKER, os.X_OK), reason="toolsd-http not built")

BIG = 100000


class Handler(http.server.BaseHTTPRequestHandler):
    seen = []

    def log_message(self, *args):
        pass

    def send(self, code, body=b"", ctype="text/plain", headers=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        Handler.seen.append((self.command, self.path, dict(self.headers)))
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        if url.path == "/ok":
            self.send(200, b"hello world")
        elif url.path == "/bin":
            self.send(200, b"\x00\xff\x01", "application/octet-stream")
        elif url.path == "/big":
            self.send(200, b"x" * BIG)
        elif url.path == "/slow":
            time.sleep(3)
            self.send(200, b"late")
        elif url.path == "/redirect":
            self.send(302, headers=[("Location", q["to"][0])])
        elif url.path.startswith("/chain/"):
            n = int(url.path.rsplit("/", 1)[1])
            if n > 0:
                self.send(302, headers=[("Location", "/chain/%d" % (n - 1))])
            else:
                self.send(200, b"end")
        else:
            self.send(404, b"nope")

    def do_POST(self):  # never expected: the worker can only GET
        Handler.seen.append((self.command, self.path, dict(self.headers)))
        self.send(405)


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def fetch(url, *flags, env=None, timeout=20):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([WORKER, *flags, url], capture_output=True, timeout=timeout, env=e)
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert out.endswith("\n") and out.count("\n") == 1
    return json.loads(out)


def refused(doc, words):
    assert doc["error"] == "refused", doc
    assert words in doc["reason"], doc


def test_ok(server):
    Handler.seen.clear()
    d = fetch(server + "/ok", "--allow-loopback")
    assert d == {"status": 200, "url": server + "/ok", "content_type": "text/plain", "body": "hello world",
                 "bytes": 11, "truncated": False, "redirects": 0}
    assert [s[0] for s in Handler.seen] == ["GET"]
    assert "Cookie" not in Handler.seen[0][2]


def test_status_passed_through(server):
    d = fetch(server + "/missing", "--allow-loopback")
    assert d["status"] == 404 and d["body"] == "nope"


def test_binary_body_is_base64(server):
    d = fetch(server + "/bin", "--allow-loopback")
    assert d["encoding"] == "base64"
    assert base64.b64decode(d["body"]) == b"\x00\xff\x01"
    assert d["bytes"] == 3


def test_loopback_refused_without_flag(server):
    Handler.seen.clear()
    refused(fetch(server + "/ok"), "loopback addresses are not allowed")
    refused(fetch(server.replace("127.0.0.1", "localhost") + "/ok"), "loopback addresses are not allowed")
    refused(fetch(server + "/ok", "--allow-private"), "loopback")
    assert Handler.seen == []


def test_localhost_allowed_with_flag(server):
    d = fetch(server.replace("127.0.0.1", "localhost") + "/ok", "--allow-loopback")
    assert d["status"] == 200 and d["body"] == "hello world"


def test_proxy_environment_ignored(server):
    d = fetch(server + "/ok", "--allow-loopback",
              env={"http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
                   "ALL_PROXY": "http://127.0.0.1:9"})
    assert d["status"] == 200


@pytest.mark.parametrize("target,words", [
    ("http://0.0.0.0:{port}/ok", "unspecified"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://[::ffff:169.254.169.254]/", "cloud metadata"),
    ("http://10.0.0.1/", "private addresses"),
    ("ftp://127.0.0.1/", "only http:// and https://"),
    ("file:///etc/passwd", "only http:// and https://"),
    ("http://user:pw@127.0.0.1:{port}/ok", "user names and passwords"),
])
def test_redirect_to_refused_target(server, target, words):
    port = server.rsplit(":", 1)[1]
    to = urllib.parse.quote(target.format(port=port), safe="")
    d = fetch(server + "/redirect?to=" + to, "--allow-loopback")
    refused(d, words)
    assert d["redirects"] == 1


def test_redirects_followed(server):
    Handler.seen.clear()
    d = fetch(server + "/chain/3", "--allow-loopback")
    assert d["status"] == 200 and d["body"] == "end"
    assert d["redirects"] == 3 and d["url"] == server + "/chain/0"
    assert [s[0] for s in Handler.seen] == ["GET"] * 4


def test_redirect_limit(server):
    refused(fetch(server + "/chain/3", "--allow-loopback", "--max-redirects", "2"), "more than 2 redirects")
    refused(fetch(server + "/chain/1", "--allow-loopback", "--max-redirects", "0"), "more than 0 redirects")
    assert fetch(server + "/chain/2", "--allow-loopback", "--max-redirects", "2")["body"] == "end"


def test_body_truncated(server):
    d = fetch(server + "/big", "--allow-loopback", "--max-bytes", "1000")
    assert d["truncated"] is True and d["bytes"] == 1000 and d["body"] == "x" * 1000
    d = fetch(server + "/big", "--allow-loopback", "--max-bytes", str(BIG))
    assert d["truncated"] is False and d["bytes"] == BIG
    d = fetch(server + "/big", "--allow-loopback", "--max-bytes", "0")
    assert d["truncated"] is True and d["bytes"] == 0 and d["body"] == ""


def test_slow_server_times_out(server):
    start = time.monotonic()
    d = fetch(server + "/slow", "--allow-loopback", "--timeout-ms", "500")
    assert time.monotonic() - start < 2.5
    assert d["error"] == "timeout", d


@pytest.mark.parametrize("url,words", [
    ("ftp://127.0.0.1/", "only http:// and https://"),
    ("gopher://127.0.0.1/", "only http:// and https://"),
    ("file:///etc/passwd", "only http:// and https://"),
    ("http://user@127.0.0.1/", "user names and passwords"),
    ("http://u:p@127.0.0.1/", "user names and passwords"),
    ("http://2130706433/", "dotted-quad"),
    ("http://127.1/", "dotted-quad"),
    ("http://0x7f.0.0.1/", "dotted-quad"),
    ("http://[fe80::1%25lo]/", "zone ids"),
    ("http://a b/", "space"),
])
def test_bad_urls_refused(url, words):
    refused(fetch(url, "--allow-loopback", "--allow-private"), words)


@pytest.mark.parametrize("args", [[], ["a", "b"], ["--max-bytes", "-1", "http://x/"],
                                  ["--timeout-ms", "0", "http://x/"], ["--method", "POST", "http://x/"],
                                  ["--max-redirects", "x", "http://x/"]])
def test_usage_errors(args):
    p = subprocess.run([WORKER, *args], capture_output=True, timeout=10)
    assert p.returncode == 2 and p.stdout == b""
