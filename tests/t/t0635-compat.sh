#!/bin/sh
# SkyPilot's own example YAMLs (../shared/corpus/skypilot-yaml, Apache-2.0), unchanged, on
# local infra and on an SSH node pool (tests/lib/nodes.sh): their outputs and exit codes
# as a SkyPilot user would see them. Where an example needs what this machine lacks (a
# GPU, conda, PyPI), the check is that skiff says so with the right exit code, not that
# it pretends. The ssh half needs root (skipped otherwise, a failure in CI).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

# The corpus beside the repository when it is there, else the subset vendored in
# tests/corpus (a fresh clone, CI), which holds every file used here. Never a skip.
CORPUS=$SHARED_DIR/corpus/skypilot-yaml
[ -f "$CORPUS/http_server_with_custom_ports/task.yaml" ] ||
	CORPUS=$SRC_DIR/tests/corpus/skypilot-yaml
echo "# corpus: $CORPUS"
command -v python3 >/dev/null || test_skip_all "needs python3"

test_lazy_prereq NODES 'test "$(id -u)" = 0 && nodes_install_deps'

down_all() {
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down --purge "$_c" >/dev/null 2>&1
	done
}

test_cleanup_hook() {
	down_all
	pkill -KILL -f "$TRASH" 2>/dev/null
	! test_have_prereq NODES || nodes_down
	# The ssh half's short SKIFF_HOME outside $TRASH: into it (kept on failure), then gone.
	case ${SKIFF_HOME:-} in
	*/sk635.$$)
		cp -a "$SKIFF_HOME" "$TRASH/ssh-home" 2>/dev/null
		rm -rf "$SKIFF_HOME"
		;;
	esac
}

# The examples, run on one infra: compat INFRA PREFIX (PREFIX names its clusters).
compat() {
	infra=$1 p=$2 prereq=${3:-}

	test_expect_success $prereq "$p: env_check.yaml: ~/.bashrc from setup is seen by run, on 2 nodes" '
		skiff launch -c $p-env --infra $infra "$CORPUS/env_check.yaml" >out 2>err &&
		test $(grep -c "TEST_VAR is set to test" out) = 2 &&
		grep -q "SKYPILOT_NODE_RANK is set to 0" out &&
		grep -q "SKYPILOT_NODE_RANK is set to 1" out
	'

	test_expect_success $prereq "$p: multi_hostname.yaml: both nodes answer" '
		skiff launch -c $p-env --infra $infra "$CORPUS/multi_hostname.yaml" >out 2>err &&
		test $(grep -c "My hostname: " out) = 2 &&
		skiff down $p-env >/dev/null
	'

	test_expect_success $prereq "$p: minimal.yaml (infra: aws): --infra wins; no conda here: exit 100" '
		expect_fail 100 skiff launch -c $p-min --infra $infra "$CORPUS/minimal.yaml" >out 2>err &&
		grep -qx "running setup" out &&
		grep -q "conda" out
	'

	test_expect_success $prereq "$p: job_queue/job.yaml (T4:0.5): no GPU anywhere: exit 3, said" '
		expect_fail 3 skiff exec $p-min "$CORPUS/job_queue/job.yaml" >out 2>err &&
		grep -q "GPUs" err &&
		skiff down $p-min >/dev/null
	'

	test_expect_success $prereq "$p: http_server_with_custom_ports: the endpoint answers" '
		mkdir -p srv-$p &&
		cat >srv-$p/server.py <<-\EOF &&
		import http.server, socketserver
		class H(http.server.BaseHTTPRequestHandler):
		    def do_GET(self):
		        self.send_response(200); self.end_headers(); self.wfile.write(b"skiff-compat\n")
		socketserver.TCPServer.allow_reuse_address = True
		socketserver.TCPServer(("", 33828), H).serve_forever()
		EOF
		skiff launch -d -c $p-http --infra $infra --workdir srv-$p \
			"$CORPUS/http_server_with_custom_ports/task.yaml" 2>err &&
		ep=$(skiff status --endpoint 33828 $p-http) &&
		wait_for "python3 -c \"import urllib.request,sys; sys.exit(0 if urllib.request.urlopen(\\\"http://$ep/\\\", timeout=2).read() == b\\\"skiff-compat\\\\n\\\" else 1)\" 2>/dev/null" 30 &&
		skiff down $p-http >/dev/null
	'

	test_expect_success $prereq "$p: managed_job.yaml: pip cannot reach PyPI here: FAILED_SETUP" '
		skiff jobs launch -d --infra $infra "$CORPUS/managed_job.yaml" >id 2>err &&
		wait_for "skiff jobs queue | grep -q \"^$(cat id) .*FAILED_SETUP\"" 120
	'
}

compat local loc

# The ssh half: the pool of namespace nodes, booked under the nodes' lock.
if test_have_prereq NODES; then
	_t=${TMPDIR:-/tmp}
	[ "${#_t}" -le 12 ] || _t=/tmp
	export SKIFF_HOME=$_t/sk635.$$
	rm -rf "$SKIFF_HOME" && mkdir -m 700 "$SKIFF_HOME"
	export SKIFF_SSH_NODE_POOLS=$NODES_POOL_FILE
	nodes_up 2 || { echo "Bail out! the test nodes did not come up"; exit 1; }
	compat "ssh/$NODES_POOL" ssh NODES
else
	compat none ssh NODES
fi

test_done
