#!/usr/bin/env python3
"""Turns a text file into a C header holding it as one string constant."""
import sys

src, dst, name = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(src, 'rb').read()
with open(dst, 'w') as f:
    f.write('/* generated from %s: do not edit */\n#pragma once\n' % src.split('/')[-1])
    f.write('static const char %s[] =\n' % name)
    for line in data.decode('utf-8').splitlines(keepends=True):
        esc = line.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
        f.write('        "%s"\n' % esc)
    f.write(';\n')
