#!/usr/bin/env python3
"""Lists the format strings in skiff's C sources that build a shell command line with
%s (xasprintf, buf_addf, xsnprintf, msg_addf): one "FILE<TAB>FORMAT" line each, sorted.

tests/t/t0920-security.sh compares the list with tests/lint/cmdlines.txt, where every
entry was reviewed: each %s is either quoted with lib/quote.h (sh_quote*), or a word
skiff made itself (a hex digest, a number, a fixed flag, the node's exe path, which is a
fixed double-quoted "$HOME/.skiff/bin/skiff-SHA256"). A new command line fails the test
until it is reviewed and listed."""
import glob, os, re, sys

top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
shellish = re.compile(r"(^exec |^\[ |\bexec %|%s (-q )?node |%s __|2>&1|&&|\|\||; |>/dev/null|\$HOME|\bmkdir |\brm |\bchmod |\bcat >)")
call = re.compile(r"\b(xasprintf|buf_addf|xsnprintf|msg_addf)\s*\(")
out = set()
for f in sorted(glob.glob(os.path.join(top, "*/*.c")) + glob.glob(os.path.join(top, "*/*/*.c"))):
    rel = os.path.relpath(f, top)
    if rel.startswith("tests/"):
        continue
    src = open(f, encoding="utf-8", errors="replace").read()
    for m in call.finditer(src):
        # The call's string literals, concatenated (up to the closing parenthesis).
        depth, i = 1, m.end()
        while i < len(src) and depth:
            c = src[i]
            if c == '"':
                j = i + 1
                while src[j] != '"':
                    j += 2 if src[j] == "\\" else 1
                i = j
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            i += 1
        args = src[m.end():i - 1]
        fmt = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', args))
        if re.search(r"%[0-9$.*-]*s", fmt) and shellish.search(fmt):
            out.add("%s\t%s" % (rel, fmt))
print("\n".join(sorted(out)))
