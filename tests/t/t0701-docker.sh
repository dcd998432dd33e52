#!/bin/sh
# The container infra on a real Docker daemon: Debian's docker.io (dockerd, and the
# containerd it starts), started by this test with all its state its own (tests/lib/
# docker.sh: data root in $TRASH, exec root and socket in /run/skiff-test-docker, a bridge
# of its own, DOCKER_HOST; no system docker service) and torn down after. The tests are
# those of tests/lib/container_tests.sh, which t0700 runs on Podman; here the containers
# have addresses on the bridge. Root only (skipped otherwise, a failure in CI).
. "$(dirname "$0")/lib.sh"

test_skip_unless_root
# The containers (busybox: no libc) run the launcher's own binary: the static one (t0700).
[ -n "$SKIFF_STATIC_BIN" ] ||
	test_skip_all "containers need a static skiff, and $SKIFF_BIN is not one (run make)"
SKIFF_BIN=$SKIFF_STATIC_BIN

# shellcheck source=tests/lib/container.sh
. "$SRC_DIR/tests/lib/container.sh"
DK_PKGS="docker.io containerd runc busybox-static debootstrap"
# shellcheck disable=SC2086
ctr_install $DK_PKGS || { echo "Bail out! cannot install $DK_PKGS"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

# Debian's docker CLI (docker.io's /usr/bin/docker), for the test and for skiff, whatever
# other docker is first on PATH.
mkdir -p "$TRASH/bin" && ln -s /usr/bin/docker "$TRASH/bin/docker" || exit 1
export PATH="$TRASH/bin:$PATH"

# ---- dockerd with private state (docs/infra-podman.md, Testing) -----------------------

DK=$TRASH/dk
# shellcheck source=tests/lib/docker.sh
. "$SRC_DIR/tests/lib/docker.sh"

test_cleanup_hook() {
	ctr_down_all
	docker_private_down "$DK"
}

trap 'test_cleanup_hook; exit 1' INT TERM

docker_private "$DK" "skdk$$" 10.213.10 || {
	test_cleanup_hook
	echo "Bail out! cannot start dockerd"
	exit 1
}

# shellcheck disable=SC2034 # used in tests/lib/container_tests.sh
CE=docker ENGINE=docker CTR_NET=1 BB_IMG=localhost/sk-busybox:latest \
	DEB_IMG=localhost/sk-debian:latest

test_expect_success 'dockerd is the test'"'"'s own: its data root, its socket, its bridge' '
	test "$(docker info --format "{{.DockerRootDir}}")" = "$DK/data" &&
	test "$DOCKER_HOST" = "unix://$DOCKER_SOCK" &&
	ip -4 addr show dev "$DOCKER_BRIDGE" | grep -qF " $DOCKER_NET.1/24 "
'

# shellcheck source=tests/lib/container_tests.sh
. "$SRC_DIR/tests/lib/container_tests.sh"

test_done
