#!/bin/sh
# A controller on a cluster of its own launches its managed jobs onto Podman containers:
# the controller on namespace sshd node tn1, whose user reaches a rootful, private Podman
# through its API socket, as a controller VM would use its own engine (tn1's home is
# bind-mounted here where tn1 sees it, so that the skiff binary Podman bind-mounts into a
# container is tn1's); a job runs in a busybox container and its logs outlive it.
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
[ -n "$SKIFF_STATIC_BIN" ] ||
	test_skip_all "containers need a static skiff, and $SKIFF_BIN is not one (run make)"
SKIFF_BIN=$SKIFF_STATIC_BIN
. "$SRC_DIR/tests/lib/container.sh"
PM_PKGS="podman runc busybox-static"
ctr_install $PM_PKGS || { echo "Bail out! cannot install $PM_PKGS"; exit 1; }
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk761.$$
# The API socket, where the node's user can reach it (a test machine's shortcut: whoever
# can use it is root here).
API=$_t/sk761pm.$$
PM=$TRASH/pm
. "$SRC_DIR/tests/lib/podman.sh"
podman_private "$PM" || { echo "Bail out! cannot write the podman configs"; exit 1; }
BB_IMG=localhost/sk761-busybox:latest
export SKIFF_JOBS_POLL_MS=300 SKIFF_JOBS_BACKOFF_S=1

# shellcheck source=tests/lib/jobs_ctl.sh
. "$SRC_DIR/tests/lib/jobs_ctl.sh"

test_cleanup_hook() {
	[ -d "$SKIFF_HOME" ] && timeout 30 "$SKIFF_BIN" jobs cancel -a >/dev/null 2>&1
	nodes_ssh 1 "cat $CTL_HOME/jobs/controller.log" >"$TRASH/controller.log" 2>&1
	[ -f "$API/pid" ] && kill "$(cat "$API/pid")" 2>/dev/null
	podman_private_down "$PM"
	umount "$NODES_DIR/home" 2>/dev/null
	rm -rf "$SKIFF_HOME" "$API"
	nodes_down
}
trap 'test_cleanup_hook; exit 1' INT TERM

test_expect_success 'a controller host with Podman: tn1, the API socket, a busybox image' '
	nodes_up 1 &&
	R=$TRASH/bbroot && busybox_rootfs "$R" &&
	podman import --change "CMD [\"/bin/sh\"]" "$R.tar" "$BB_IMG" >/dev/null &&
	mkdir -m 755 "$API" &&
	mount --bind "$NODES_DIR/tn1/home" "$NODES_DIR/home" &&
	{ podman system service --time=0 "unix://$API/podman.sock" >"$TRASH/service.log" 2>&1 &
	  echo $! >"$API/pid"; } &&
	wait_for "test -S $API/podman.sock" 30 &&
	chmod 666 "$API/podman.sock" &&
	nodes_ssh 1 "mkdir -p ~/.config/containers && printf \"[engine]\\nremote = true\\nactive_service = \\\"host\\\"\\n[engine.service_destinations.host]\\nuri = \\\"unix://$API/podman.sock\\\"\\n\" >~/.config/containers/containers.conf && podman images" >imgs &&
	grep -q sk761-busybox imgs &&
	mkdir -m 700 -p "$SKIFF_HOME" &&
	cat >"$SKIFF_HOME/ssh_node_pools.yaml" <<-EOF &&
	ctl:
	  hosts:
	    - ip: $(nodes_ip 1)
	      user: $NODES_USER
	      identity_file: $NODES_KEY
	EOF
	printf "jobs:\n  controller:\n    resources:\n      infra: ssh/ctl\n" >"$SKIFF_HOME/config.yaml"
'

test_expect_success 'a managed job from the remote controller runs in a Podman container' '
	mkdir wd && echo "through two hops" >wd/note.txt &&
	cat >p.yaml <<-EOF &&
	name: pj
	workdir: wd
	resources: {infra: podman, image_id: "docker:$BB_IMG"}
	run: cat note.txt; echo "pid1=\$(tr "\\\\0" " " </proc/1/cmdline)"
	EOF
	skiff jobs launch -d p.yaml >id 2>err &&
	J=$(tail -n 1 id) &&
	{ wait_for "test \"\$(ctl_field $J status)\" = SUCCEEDED" 180 || { ctl jobs logs --controller $J >&2; false; }; } &&
	skiff jobs logs "$J" >log &&
	grep -q "through two hops" log &&
	grep -q "pid1=.*init" log
'

test_expect_success 'its container is gone, its logs are kept on the controller' '
	J=$(tail -n 1 id) &&
	wait_for "test -z \"\$(podman ps -a -q --filter label=skiff.managed=1)\"" 60 &&
	skiff jobs logs "$J" >log2 &&
	grep -q "through two hops" log2
'

test_done
