#!/bin/sh
# The container infra on real, rootful Podman (runc, every podman file under $TRASH, the
# settings in docs/infra-podman.md): the tests of tests/lib/container_tests.sh, which
# t0701 runs on Docker. Root only (skipped otherwise, a failure in CI).
. "$(dirname "$0")/lib.sh"

test_skip_unless_root
# The containers (busybox: no libc) run the launcher's own binary, which must be the
# static one. Under make test-asan SKIFF_BIN is the ASan build: this test then drives the
# containers with the static build beside it (SKIFF_STATIC_BIN) instead of skipping, so
# the launcher here is not the sanitizer build.
[ -n "$SKIFF_STATIC_BIN" ] ||
	test_skip_all "containers need a static skiff, and $SKIFF_BIN is not one (run make)"
SKIFF_BIN=$SKIFF_STATIC_BIN

# shellcheck source=tests/lib/container.sh
. "$SRC_DIR/tests/lib/container.sh"
PM_PKGS="podman runc busybox-static debootstrap"
# shellcheck disable=SC2086
ctr_install $PM_PKGS || { echo "Bail out! cannot install $PM_PKGS"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

# ---- podman with private state (docs/infra-podman.md, Testing) ------------------------

PM=$TRASH/pm
# shellcheck source=tests/lib/podman.sh
. "$SRC_DIR/tests/lib/podman.sh"
podman_private "$PM" || { echo "Bail out! cannot write the podman configs"; exit 1; }

# shellcheck disable=SC2034 # used in tests/lib/container_tests.sh
CE=podman ENGINE=podman CTR_NET= BB_IMG=localhost/sk-busybox:latest \
	DEB_IMG=localhost/sk-debian:latest

test_cleanup_hook() {
	ctr_down_all
	podman_private_down "$PM"
}

trap 'test_cleanup_hook; exit 1' INT TERM

# shellcheck source=tests/lib/container_tests.sh
. "$SRC_DIR/tests/lib/container_tests.sh"

test_done
