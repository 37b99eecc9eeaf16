#!/usr/bin/env python3
"""Turns toolsd's Markdown man pages (docs/*.[158].md) into man(7) roff.

The pages use a small subset of pandoc's Markdown: a `% NAME(S) title |
section` line, `#` and `##` headings, paragraphs, `term` + `:   definition`
lists, `*`/`-` bullets, fenced code blocks, pipe tables, and inline **bold**,
*italic* and `code`. Only that subset is handled; anything else is kept as
text. Standard library only, so building the pages needs no pandoc.

    md2man.py INPUT.md OUTPUT.N
"""

import re
import sys


def escape(text):
    text = text.replace("\\", "\\e")
    # groff reads ASCII; anything else goes in as a Unicode escape.
    text = "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)
    # A line starting with . or ' would be a roff request.
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.M)


def inline(text):
    text = escape(text)
    text = re.sub(r"`([^`]+)`", lambda m: "\\fB" + m.group(1) + "\\fR", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\\fI\1\\fR", text)
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", text)
    return text.replace("-", "\\-")


def convert(lines):
    out = []
    head = lines[0]
    m = re.match(r"%\s*(\S+)\((\w+)\)\s*(.*?)\s*(?:\|\s*(.*))?$", head)
    if not m:
        raise SystemExit("md2man: the first line must be '% NAME(SECTION) ...'")
    name, section, _, manual = m.groups()
    out.append('.TH "%s" "%s" "" "toolsd" "%s"' % (name, section, manual or ""))
    i = 1
    para = []

    def flush():
        if para:
            out.append(".PP")
            out.append(inline(" ".join(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            out.append(".PP\n.nf\n.RS 4")
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(escape(lines[i]) or "\\&")
                i += 1
            out.append(".RE\n.fi")
        elif line.startswith("## "):
            flush()
            out.append(".SS " + inline(line[3:].strip()))
        elif line.startswith("# "):
            flush()
            out.append(".SH " + inline(line[2:].strip().upper()))
        elif line.startswith("|"):
            flush()
            out.append(".PP\n.nf")
            while i < len(lines) and lines[i].startswith("|"):
                if not re.match(r"^\|[-| :]+\|$", lines[i]):
                    cells = [c.strip() for c in lines[i].strip("|").split("|")]
                    out.append(inline("  ".join(cells)))
                i += 1
            out.append(".fi")
            continue
        elif i + 1 < len(lines) and lines[i + 1].startswith(":   ") and line.strip():
            flush()
            out.append(".TP\n" + inline(line.strip()))
            i += 1
            body = []
            while i < len(lines) and (lines[i].startswith(":   ") or lines[i].startswith("    ")
                                      or (lines[i] == "" and i + 1 < len(lines)
                                          and lines[i + 1].startswith("    "))):
                body.append(lines[i][4:] if lines[i] else "")
                i += 1
            out.append(inline(" ".join(b for b in body if b)))
            continue
        elif re.match(r"^\s*[*-] ", line):
            flush()
            item = [re.sub(r"^\s*[*-] ", "", line)]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and not re.match(r"^\s*[*-] ", lines[i]):
                item.append(lines[i].strip())
                i += 1
            out.append('.IP "\\(bu" 2\n' + inline(" ".join(item)))
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out) + "\n"


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        lines = f.read().splitlines()
    with open(dst, "w", encoding="utf-8") as f:
        f.write(convert(lines))


if __name__ == "__main__":
    main()
