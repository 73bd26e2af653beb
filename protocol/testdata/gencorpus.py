#!/usr/bin/env python3
"""Writes seed corpus files in Go's fuzz corpus format (go test fuzz v1).

Usage: gencorpus.py DIR NAME ARG... where each ARG is TYPE:PYTHON-EXPR,
for example 'bytes:b"\\x00\\x01"' or 'uint16:300'. Kept beside the corpus so
seeds can be regenerated or extended by hand.
"""
import os, sys

def golit(b):
    out = []
    for c in b:
        ch = chr(c)
        if ch == '"' or ch == '\\':
            out.append('\\' + ch)
        elif 0x20 <= c < 0x7f:
            out.append(ch)
        else:
            out.append('\\x%02x' % c)
    return '[]byte("' + ''.join(out) + '")'

def main():
    d, name, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    lines = ['go test fuzz v1']
    for a in args:
        typ, expr = a.split(':', 1)
        v = eval(expr)
        if typ == 'bytes':
            lines.append(golit(v))
        elif typ == 'byte':
            lines.append('byte(%s)' % repr(chr(v)) if 0x20 <= v < 0x7f and chr(v) not in "'\\" else 'byte(%d)' % v)
        else:
            lines.append('%s(%d)' % (typ, v))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'w') as f:
        f.write('\n'.join(lines) + '\n')

main()
