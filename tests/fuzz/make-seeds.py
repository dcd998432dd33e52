#!/usr/bin/env python3
"""Writes the seed corpora in tests/fuzz/corpus/NAME/ (seed-* files) from examples/,
the task files in the integration tests, and streams made by the skiff under test.

    tests/fuzz/make-seeds.py [SKIFF]     (SKIFF: default build/skiff, for __sync-send)

Regression inputs (crash-*, named after what they found) are kept as they are."""
import glob, io, os, re, struct, subprocess, sys, tarfile, tempfile

top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
corpus = os.path.join(top, "tests/fuzz/corpus")
skiff = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "build/skiff")


def put(name, key, data):
    d = os.path.join(corpus, name)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + key), "wb") as f:
        f.write(data)


def clear(name):
    for f in glob.glob(os.path.join(corpus, name, "seed-*")):
        os.remove(f)


# --- task YAML: examples/, heredocs in tests/t, inline YAML in tests/unit/test-task.c ---
clear("task-yaml")
for f in sorted(glob.glob(os.path.join(top, "examples/*.yaml"))):
    put("task-yaml", "example-" + os.path.basename(f), open(f, "rb").read())
n = 0
for f in sorted(glob.glob(os.path.join(top, "tests/t/*.sh"))):
    text = open(f).read()
    for m in re.finditer(r"cat >\"?[^ ]*\.ya?ml\"? <<-?\\?'?EOF'?[^\n]*\n(.*?)\n\s*EOF", text, re.S):
        body = "\n".join(l.lstrip("\t") for l in m.group(1).split("\n")) + "\n"
        n += 1
        put("task-yaml", "t-%02d.yaml" % n, body)
src = open(os.path.join(top, "tests/unit/test-task.c")).read()
n = 0
for m in re.finditer(r'((?:"(?:[^"\\\n]|\\.)*"\s*)+)', src):
    s = "".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(1)))
    if ":" not in s or "\\n" not in s:
        continue
    try:
        s = bytes(s, "utf-8").decode("unicode_escape")
    except Exception:
        continue
    n += 1
    put("task-yaml", "unit-%03d.yaml" % n, s)
put("task-yaml", "anchors.yaml", """\
base: &b
  cpus: 2
name: anchors
resources:
  <<: *b
  memory: 4+
  accelerators: {H100: 8}
envs: {A: "1", B: 'two'}
secrets: {TOKEN: null}
file_mounts:
  /data: ./data
  ~/x:
    source: s3://bucket/x
    mode: MOUNT
workdir: .
num_nodes: 2
run: |
  echo $A
---
name: second
run: echo two
""")

# --- SSH node pools: the unit test's texts, and a few by hand ---------------------------
clear("pools")
src = open(os.path.join(top, "tests/unit/test-infra.c")).read()
n = 0
for m in re.finditer(r'((?:"(?:[^"\\\n]|\\.)*"\s*)+)', src):
    s = "".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(1)))
    if "hosts" not in s:
        continue
    try:
        s = bytes(s, "utf-8").decode("unicode_escape").encode("latin-1")
    except Exception:
        continue
    n += 1
    put("pools", "unit-%03d.yaml" % n, s)
put("pools", "full.yaml", """\
lab:
  user: alice
  identity_file: ~/.ssh/id_ed25519
  password: hunter2
  hosts:
    - 10.0.0.1
    - ip: 10.0.0.2
      user: bob
      port: 2222
      identity_file: /k
    - "[fe80::1]"
gpu:
  hosts: [h1, h2:22]
""")

# --- control-socket frames --------------------------------------------------------------
clear("proto")


def msg(*kv):
    body = b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in kv)
    return struct.pack(">I", len(body)) + body


put("proto", "ping", msg(("op", "ping")))
put("proto", "submit", msg(("op", "submit"), ("name", "j"), ("run", "echo 'x'; exit 3"),
                           ("cpus", "0.5"), ("env", "A=1"), ("env", "B=two"), ("priority", "-3")))
put("proto", "cancel", msg(("op", "cancel"), ("id", "1"), ("id", "22")) + msg(("op", "status")))
put("proto", "body", b"\x01" + msg(("op", "queue"), ("all", "1"))[4:])
put("proto", "toolong", b"\x01\x00\x00\x05")

# --- sync streams: made by skiff __sync-send, and hostile tars --------------------------
clear("untar")
with tempfile.TemporaryDirectory() as d:
    os.makedirs(os.path.join(d, "src/sub/deep"))
    with open(os.path.join(d, "src/a.txt"), "w") as f:
        f.write("hello\n")
    with open(os.path.join(d, "src/sub/deep/b.sh"), "w") as f:
        f.write("#!/bin/sh\necho b\n")
    os.chmod(os.path.join(d, "src/sub/deep/b.sh"), 0o755)
    os.symlink("../a.txt", os.path.join(d, "src/sub/l"))
    with open(os.path.join(d, "src/.gitignore"), "w") as f:
        f.write("*.o\n")
    if os.access(skiff, os.X_OK):
        for key, args in (("dir", []), ("gzip", ["--gzip"])):
            out = subprocess.run([skiff, "__sync-send"] + args + [os.path.join(d, "src")],
                                 stdout=subprocess.PIPE, check=True).stdout
            put("untar", key + ".tar", out)
        out = subprocess.run([skiff, "__sync-send", "--file", os.path.join(d, "src/a.txt")],
                             stdout=subprocess.PIPE, check=True).stdout
        put("untar", "file.tar", out)
    else:
        print("make-seeds.py: %s not built; no __sync-send seeds" % skiff, file=sys.stderr)


def hostile(key, members, control="skiff-sync 1\nmode dir\nend\n"):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        def add(name, typ=tarfile.REGTYPE, data=b"", link="", mode=0o644):
            i = tarfile.TarInfo(name)
            i.type, i.linkname, i.mode, i.size = typ, link, mode, len(data)
            t.addfile(i, io.BytesIO(data) if data else None)
        add(".skiff-sync-control", data=control.encode())
        for m in members:
            add(*m)
        add(".skiff-sync-end", data=b"entries %d\n" % len(members))
    put("untar", key + ".tar", b.getvalue())


hostile("dotdot", [("../x", tarfile.REGTYPE, b"x")])
hostile("abs", [("/tmp/x", tarfile.REGTYPE, b"x")])
hostile("symlink-out", [("l", tarfile.SYMTYPE, b"", "../outside"),
                        ("l/canary", tarfile.REGTYPE, b"owned")])
hostile("through-evil", [("evil/canary", tarfile.REGTYPE, b"owned")])
hostile("hardlink", [("h", tarfile.LNKTYPE, b"", "../outside/canary")])
hostile("device", [("null", tarfile.CHRTYPE), ("fifo", tarfile.FIFOTYPE)])
hostile("setuid", [("s", tarfile.REGTYPE, b"#!/bin/sh\n", "", 0o4755)])
hostile("delete", [("d", tarfile.DIRTYPE, b"", "", 0o755)],
        "skiff-sync 1\nmode dir\ndelete evil\ndelete ..\nend\n")
hostile("filemode", [(".", tarfile.REGTYPE, b"data\n")], "skiff-sync 1\nmode file\nend\n")

# --- shell quoting ----------------------------------------------------------------------
clear("quote")
for i, s in enumerate([b"", b"plain", b"it's", b"a b", b"$(id)", b"`x`", b"~root", b"=ls",
                       b"FOO=bar", b"x\ny", b"\\", b"\xff\xfe", b"NAME\0it's a value",
                       b"a\0b\0c'd\0"]):
    put("quote", "%02d" % i, s)
