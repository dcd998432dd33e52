#!/usr/bin/env python3
"""Writes the seed corpora in tests/fuzz/corpus/NAME/ (seed-* files) from examples/,
the task files in the integration tests, and streams made by the skiff under test.

    tests/fuzz/make-seeds.py [SKIFF]     (SKIFF: default build/skiff, for __sync-send)

Regression inputs (crash-*, named after what they found) are kept as they are."""
import glob, os, re, struct, subprocess, sys, tempfile

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

# --- sync streams: made by skiff __sync-send, and hostile ones (docs/sync.md) -----------
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
        f.write("*.o\n" * 50)
    if os.access(skiff, os.X_OK):
        for key, args in (("dir", []), ("compressed", ["--compress"])):
            out = subprocess.run([skiff, "__sync-send"] + args + [os.path.join(d, "src")],
                                 stdout=subprocess.PIPE, check=True).stdout
            put("untar", key + ".stream", out)
        out = subprocess.run([skiff, "__sync-send", "--file", os.path.join(d, "src/a.txt")],
                             stdout=subprocess.PIPE, check=True).stdout
        put("untar", "file.stream", out)
    else:
        print("make-seeds.py: %s not built; no __sync-send seeds" % skiff, file=sys.stderr)


sys.path.insert(0, os.path.join(top, "tests/lib"))
import sync_stream as ss  # noqa: E402


def hostile(key, records, mode="d"):
    """A one-way stream: the HELLO, the records given, an end record counting them."""
    data = ss.hello(mode) + b"".join(records) + ss.end(len(records))
    put("untar", key + ".stream", ss.frame(data))


file_rec, link_rec, rec = ss.file_rec, ss.link_rec, ss.rec


hostile("dotdot", [file_rec("../x")])
hostile("abs", [file_rec("/tmp/x")])
hostile("symlink-out", [link_rec("l", "../outside"), file_rec("l/canary", b"owned")])
hostile("through-evil", [file_rec("evil/canary", b"owned")])
hostile("unknown", [rec("L", b"h"), rec("N", b"null")])
hostile("setuid", [file_rec("s", b"#!/bin/sh\n", 0o4755)])
hostile("delete", [ss.dir_rec("d"), rec("D", b"evil"), rec("D", b"..")])
hostile("filemode", [file_rec(".", b"data\n")], "f")
hostile("sparse", [rec("f", struct.pack("<IqQ", 0o644, 0, 4096 + 2) + b"z") + rec("c", b"a") +
                   rec("z", struct.pack("<Q", 4096)) + rec("c", b"b") +
                   rec("h", ss.content_hash(b"a" + bytes(4096) + b"b"))])

# --- shell quoting ----------------------------------------------------------------------
clear("quote")
for i, s in enumerate([b"", b"plain", b"it's", b"a b", b"$(id)", b"`x`", b"~root", b"=ls",
                       b"FOO=bar", b"x\ny", b"\\", b"\xff\xfe", b"NAME\0it's a value",
                       b"a\0b\0c'd\0"]):
    put("quote", "%02d" % i, s)
