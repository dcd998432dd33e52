#!/usr/bin/env python3
"""Every command table (struct cmd NAME[] = {...} in cmd/) is sorted by name as C's
strcmp() sorts: `skiff help` lists the commands in table order, and a table in order is
one a reader can search by eye. Prints each table it checked, and each pair out of
order; exits 1 if there is one, or if no table was found."""
import glob
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
table = re.compile(r"static const struct cmd (\w+)\[\] = \{(.*?)\n\};", re.S)
entry = re.compile(r'^\s*\{"([^"]+)",', re.M)
bad = found = 0
for path in sorted(glob.glob(os.path.join(root, "cmd", "*.c"))):
    text = open(path, encoding="utf-8").read()
    for m in table.finditer(text):
        names = entry.findall(m.group(2))
        found += 1
        rel = os.path.relpath(path, root)
        print("%s %s: %d commands" % (rel, m.group(1), len(names)))
        for a, b in zip(names, names[1:]):
            if a.encode() >= b.encode():
                print("%s %s: '%s' comes before '%s'" % (rel, m.group(1), a, b))
                bad += 1
if not found:
    print("no command table found under cmd/")
sys.exit(1 if bad or not found else 0)
