#!/usr/bin/env python3
"""The folders' include graph has no cycle (docs/architecture.md, "Layout"): a folder is
lib/, state/, cmd/, supervisor/, each folder under bootstrap/ and supervisor/ (jobs/),
and an edge A -> B means a file of A includes a header of B. Prints the edges, and each
cycle found; exits 1 if there is one."""
import collections
import glob
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
inc = re.compile(r'^#include "([^"]+)"', re.M)


def folder(rel):
    parts = rel.split("/")
    if parts[0] in ("bootstrap", "supervisor") and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


edges = collections.defaultdict(set)
for pattern in ("lib/*.[ch]", "state/*.[ch]", "cmd/*.[ch]", "supervisor/*.[ch]",
                "supervisor/*/*.[ch]", "bootstrap/*/*.[ch]"):
    for path in glob.glob(os.path.join(root, pattern)):
        rel = os.path.relpath(path, root)
        a = folder(rel)
        for h in inc.findall(open(path, encoding="utf-8").read()):
            if "/" not in h:
                continue
            b = folder(h)
            if a != b:
                edges[a].add(b)
for a in sorted(edges):
    print("%s -> %s" % (a, " ".join(sorted(edges[a]))))

# Every cycle through each folder, once (the graph is small).
cycles = set()


def walk(start, node, path):
    for b in edges.get(node, ()):
        if b == start:
            cyc = path[:]
            i = cyc.index(min(cyc))
            cycles.add(tuple(cyc[i:] + cyc[:i]))
        elif b not in path and b > start:
            walk(start, b, path + [b])


for a in sorted(edges):
    walk(a, a, [a])
for c in sorted(cycles):
    print("cycle: %s -> %s" % (" -> ".join(c), c[0]))
sys.exit(1 if cycles else 0)
