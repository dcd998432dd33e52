#!/bin/sh
# Images with a Python of their own, and with none, on a real Docker daemon (tests/lib/
# docker.sh, as t0701): a Debian trixie image (debootstrap --variant=minbase
# --include=python3,python3-venv: Python 3.13, where this machine's is another), cached
# in /var/cache/skiff-test, runs a task whose runtime_env venv is built in the container
# with the image's python3 and pip installs wheels made here and shipped by the launcher
# (no index: PIP_NO_INDEX); a busybox image (no python at all) runs a plain task, and a
# runtime_env there fails naming what it searched. Root only (skipped otherwise, a failure
# in CI).
. "$(dirname "$0")/lib.sh"

test_skip_unless_root
# The containers run the launcher's own binary: the static one (t0700).
[ -n "$SKIFF_STATIC_BIN" ] ||
	test_skip_all "containers need a static skiff, and $SKIFF_BIN is not one (run make)"
SKIFF_BIN=$SKIFF_STATIC_BIN

# shellcheck source=tests/lib/container.sh
. "$SRC_DIR/tests/lib/container.sh"
DK_PKGS="docker.io containerd runc busybox-static debootstrap"
# shellcheck disable=SC2086
ctr_install $DK_PKGS || { echo "Bail out! cannot install $DK_PKGS"; exit 1; }
# mkwheel, and PATH without pyenv shims.
# shellcheck source=tests/lib/renv.sh
. "$SRC_DIR/tests/lib/renv.sh"

# Debian's docker CLI, whatever other docker is first on PATH (t0701).
mkdir -p "$TRASH/bin" && ln -s /usr/bin/docker "$TRASH/bin/docker" || exit 1
export PATH="$TRASH/bin:$PATH"

DK=$TRASH/dk
# shellcheck source=tests/lib/docker.sh
. "$SRC_DIR/tests/lib/docker.sh"

test_cleanup_hook() {
	ctr_down_all
	docker_private_down "$DK"
}

trap 'test_cleanup_hook; exit 1' INT TERM

docker_private "$DK" "skdk$$" 10.213.50 || {
	test_cleanup_hook
	echo "Bail out! cannot start dockerd"
	exit 1
}

# shellcheck disable=SC2034 # used in the test bodies (eval) and tests/lib/container.sh
CE=docker BB_IMG=localhost/sk-busybox:latest PY_IMG=localhost/sk-trixie-py:latest
# The image's own Python, and the packages that give it venv (and ensurepip's wheels).
PY_SUITE=trixie PY_PKGS=python3,python3-venv PY_VER=3.13

test_expect_success 'busybox image (no python at all)' '
	busybox_rootfs "$TRASH/bbroot" &&
	docker import --change "CMD [\"/bin/sh\"]" "$TRASH/bbroot.tar" "$BB_IMG" >/dev/null &&
	test ! -e "$TRASH/bbroot/usr/bin/python3"
'

# debootstrap once (about a minute and 280 MB from the Debian archive), then the cached
# tarball: its name is the suite and the package list.
test_expect_success "Debian $PY_SUITE image with $PY_PKGS: from the cache, or debootstrap once" '
	t0=$(now) &&
	tar=$(ctr_debian_tar $PY_SUITE $PY_PKGS) &&
	case $tar in */$PY_SUITE-minbase+python3+python3-venv.tar) ;; *) exit 1 ;; esac &&
	docker import --change "CMD [\"/bin/bash\"]" "$tar" "$PY_IMG" >/dev/null &&
	secs_since $t0 >"$TRASH/image.s" &&
	docker run --rm --entrypoint /usr/bin/python3 "$PY_IMG" -c \
		"import sys; print(\"%d.%d\" % sys.version_info[:2])" >v &&
	test "$(cat v)" = $PY_VER
'
[ -s "$TRASH/image.s" ] && echo "# $PY_SUITE image ready (cache or debootstrap, import):" \
	"$(cat "$TRASH/image.s") s; this machine's python3 is" \
	"$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"

mkwheel skiffa 1.0 "$TRASH/wh" && mkwheel skiffb 2.0 "$TRASH/wh" skiffa || exit 1
cat >"$TRASH/venv.yaml" <<EOF
resources:
  infra: docker
  image_id: docker:$PY_IMG
runtime_env:
  pip: [./wh/skiffb-2.0-py3-none-any.whl, ./wh/skiffa-1.0-py3-none-any.whl]
  env_vars: {PIP_NO_INDEX: "1"}
run: |
  python -c "import sys, skiffa, skiffb; assert sys.version_info[:2] == ($(echo $PY_VER | tr . ,)), sys.version; print('py %d.%d' % sys.version_info[:2], skiffb.VALUE, skiffa.VALUE)"
  python -c "import os, sys; print('in venv', sys.prefix == os.environ['VIRTUAL_ENV'], 'base', sys.base_prefix)"
  echo "venv python \$(readlink -f "\$VIRTUAL_ENV/bin/python")"
  grep '^home = ' "\$VIRTUAL_ENV/pyvenv.cfg"
EOF

# The image's python3 has no pip (python3-pip is not in the list): the venv's pip comes
# from ensurepip, whose wheels python3-venv brings.
test_expect_success "runtime_env on $PY_SUITE: the venv is built with the image's python$PY_VER" '
	t0=$(now) &&
	skiff launch -c py venv.yaml >out 2>err &&
	secs_since $t0 >"$TRASH/venv.s" &&
	cat err out &&
	grep -q "^skiff: runtime_env: building env [0-9a-f]* with /usr/bin/python3 (Python $PY_VER\.[0-9]*)\$" out &&
	grep -q "^skiff: runtime_env: step: ensurepip\$" out &&
	grep -qx "py $PY_VER skiffb-2.0 skiffa-1.0" out &&
	grep -qx "in venv True base /usr" out &&
	grep -qx "venv python /usr/bin/python$PY_VER" out &&
	grep -qx "home = /usr/bin" out &&
	grep -q "^skiff: job 1 finished (status: SUCCEEDED)\$" err &&
	! docker exec skiff-py-0 python3 -m pip --version >/dev/null 2>&1
'
[ -s "$TRASH/venv.s" ] && echo "# launch on $PY_SUITE with the env built:" \
	"$(cat "$TRASH/venv.s") s"

test_expect_success 'the same env again: reused from the node'"'"'s cache' '
	skiff launch -c py venv.yaml >out 2>err &&
	grep -qx "py $PY_VER skiffb-2.0 skiffa-1.0" out &&
	grep -q "^skiff: runtime_env: env [0-9a-f]* is built: reused" out &&
	! grep -q "step: venv" out
'

test_expect_success "a python the image lacks (this machine's own) fails the setup, naming where it looked" '
	host=$(python3 -c "import sys; print(\"%d.%d\" % sys.version_info[:2])") &&
	{ test "$host" != $PY_VER || host=3.12; } &&
	printf "runtime_env:\n  python: \"%s\"\nrun: echo never\n" "$host" >other.yaml &&
	expect_fail 100 skiff launch -c py other.yaml >out 2>err &&
	cat err out &&
	grep -q "^skiff: job 3 finished (status: FAILED_SETUP)\$" err &&
	grep -q "^skiff: error: runtime_env.python: no working .python$host. (Python $host) found; searched: .* /usr/bin " out &&
	skiff queue py --json >q.json &&
	json "d[-1][\"status\"]" q.json | grep -qx "\"FAILED_SETUP\"" &&
	skiff down py >/dev/null
'

test_expect_success 'busybox: a plain task runs where there is no python' '
	printf "resources:\n  infra: docker\n  image_id: docker:%s\nrun: echo \"plain python3=\$(command -v python3 || echo none)\"\n" \
		"$BB_IMG" >plain.yaml &&
	skiff launch -c bb plain.yaml >out 2>err &&
	grep -qx "plain python3=none" out &&
	grep -q "^skiff: job 1 finished (status: SUCCEEDED)\$" err
'

test_expect_success 'busybox: a runtime_env fails its setup, naming where it looked for python3' '
	printf "runtime_env:\n  pip: [skiffa]\nrun: echo never\n" >nopy.yaml &&
	expect_fail 100 skiff launch -c bb nopy.yaml >out 2>err &&
	cat err out &&
	grep -q "^skiff: job 2 finished (status: FAILED_SETUP)\$" err &&
	grep -q "^skiff: error: runtime_env.python: no working .python3. found; searched: .* /usr/bin " out &&
	skiff queue bb --json >q.json &&
	json "d[-1][\"status\"]" q.json | grep -qx "\"FAILED_SETUP\"" &&
	skiff down bb >/dev/null &&
	test "$(skiff status)" = "No existing clusters." &&
	test -z "$(ctr_names)"
'

test_done
