"""Checks that docs/protocol.md says what proto/io.toolsd.varlink says.

The interface definition is the source of truth; docs/protocol.md quotes it
verbatim in one ```varlink block and describes it in prose. These tests fail
when the two drift apart: the quoted block must equal the file byte for byte,
every method and error of the interface must be named in the prose (not only
in the quote), and every Varlink error name the daemon's code can send must
be documented. No daemon is started; the conftest fixtures are not used.
"""

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
PROTOCOL_MD = os.path.join(SRC, "docs", "protocol.md")
VARLINK = os.path.join(SRC, "proto", "io.toolsd.varlink")
SERVICE_VARLINK = os.path.join(SRC, "proto", "org.varlink.service.varlink")
DAEMON = os.path.join(SRC, "daemon")

FENCE = re.compile(rb"^```varlink[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def varlink_blocks(doc):
    return FENCE.findall(doc)


def prose(doc):
    """The document without its ```varlink blocks."""
    return FENCE.sub(b"", doc).decode("utf-8")


def members(idl, kind):
    return re.findall(r"^%s\s+([A-Za-z][A-Za-z0-9]*)" % kind, idl.decode("utf-8"), re.M)


def test_protocol_md_is_utf8():
    read(PROTOCOL_MD).decode("utf-8")


def test_interface_block_is_verbatim():
    blocks = varlink_blocks(read(PROTOCOL_MD))
    assert len(blocks) == 1, "docs/protocol.md must hold exactly one ```varlink block, found %d" % len(blocks)
    assert blocks[0] == read(VARLINK), "the ```varlink block in docs/protocol.md differs from proto/io.toolsd.varlink"


def test_every_method_and_error_in_prose():
    text = prose(read(PROTOCOL_MD))
    idl = read(VARLINK)
    names = members(idl, "method") + members(idl, "error")
    assert len(members(idl, "method")) >= 8 and len(members(idl, "error")) >= 6, "the IDL parse here is broken"
    missing = [n for n in names if not re.search(r"\b%s\b" % re.escape(n), text)]
    assert not missing, "not described in docs/protocol.md's prose: %s" % ", ".join(missing)


def test_service_methods_in_prose():
    text = prose(read(PROTOCOL_MD))
    for name in members(read(SERVICE_VARLINK), "method"):
        assert "org.varlink.service." + name in text, "org.varlink.service.%s is not described" % name


def test_errors_the_daemon_sends_are_documented():
    """Every fully qualified error name in daemon/*.c appears in the prose."""
    text = prose(read(PROTOCOL_MD))
    sent = set()
    for name in os.listdir(DAEMON):
        if name.endswith(".c"):
            src = read(os.path.join(DAEMON, name)).decode("utf-8", errors="replace")
            sent.update(re.findall(r'"((?:io\.toolsd|org\.varlink\.service)\.[A-Z][A-Za-z]*)"', src))
    assert "io.toolsd.NoSuchSession" in sent, "the scan of daemon/*.c found nothing"
    missing = sorted(e for e in sent if e not in text)
    assert not missing, "sent by the daemon but not in docs/protocol.md: %s" % ", ".join(missing)


def test_limit_names_are_documented():
    """Every `what` of io.toolsd.LimitExceeded the daemon can send is listed."""
    text = prose(read(PROTOCOL_MD))
    whats = set()
    for name in os.listdir(DAEMON):
        if name.endswith(".c"):
            src = read(os.path.join(DAEMON, name)).decode("utf-8", errors="replace")
            whats.update(re.findall(r'error_limit\(\s*\w+,\s*"([a-z_]+)"', src))
    assert "message_size" in whats, "the scan of daemon/*.c found nothing"
    missing = sorted(w for w in whats if "`%s`" % w not in text)
    assert not missing, "LimitExceeded `what` values not in docs/protocol.md: %s" % ", ".join(missing)
