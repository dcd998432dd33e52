# Shared by the runtime env tests (t0810, t0811); source after tests/t/lib.sh.
# Sets PATH to the image's own dirs and PY to its python3 (installing python3-venv and
# python3-pip, tests/lib/packages.sh, when missing), and defines mkwheel, jfield and done_ok.

# The image's own Python: no pyenv shims, whatever the caller's PATH holds.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
PY=/usr/bin/python3

# Debian splits venv and pip out of python3.
if ! $PY -m venv --help >/dev/null 2>&1 || ! $PY -m pip --version >/dev/null 2>&1; then
	. "${SRC_DIR:?tests/lib/renv.sh: set SRC_DIR to the source tree first}/tests/lib/packages.sh"
	pkg_install python3-venv python3-pip
	$PY -m venv --help >/dev/null 2>&1 || test_skip_all "python3 -m venv is not available"
fi

# A wheel made by hand: NAME VERSION DIR [REQUIRES...]
mkwheel() {
	$PY - "$@" <<-\EOF
	import sys, zipfile, os
	name, ver, out = sys.argv[1:4]
	di = "%s-%s.dist-info" % (name, ver)
	meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, ver)
	meta += "".join("Requires-Dist: %s\n" % d for d in sys.argv[4:])
	files = {name + "/__init__.py": "VALUE = '%s-%s'\n" % (name, ver),
	         di + "/METADATA": meta,
	         di + "/WHEEL": "Wheel-Version: 1.0\nGenerator: t0810\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
	os.makedirs(out, exist_ok=True)
	with zipfile.ZipFile(os.path.join(out, "%s-%s-py3-none-any.whl" % (name, ver)), "w") as z:
	    for k, v in files.items():
	        z.writestr(k, v)
	    z.writestr(di + "/RECORD", "".join(k + ",,\n" for k in files) + di + "/RECORD,,\n")
	EOF
}

# jq-less JSON: field ID KEY of `node queue --json`
jfield() {
	skiff node queue --json | $PY -c "
import json, sys
for j in json.load(sys.stdin):
    if j['id'] == $1: print(j.get('$2'))"
}

done_ok() {
	skiff node logs "$1" >/dev/null 2>&1
}
