#!/bin/sh
# Clusters that share an SSH host by resources (supervisor/hold.h, docs/infra-ssh.md
# "Sharing a host"): two clusters that each ask for half its cores live on one host, each
# with its own supervisor, job queue and ~/sky_workdir under ~/.skiff/c/; a third that
# does not fit is refused by the host itself and goes to the pool's next host; a cluster
# that asks for nothing needs a host to itself; another launcher (another SKIFF_HOME, as
# another machine) meets the same record; down removes a share's home and no one else's.
# Real sshd nodes (tests/lib/nodes.sh). Root only (skipped otherwise, a failure in CI).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

# A short SKIFF_HOME: the launcher's ssh sockets live there (see t0610).
_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk614.$$
OTHER=$_t/sk614b.$$
rm -rf "$SKIFF_HOME" "$OTHER"
mkdir -m 700 "$SKIFF_HOME" "$OTHER" || { echo "Bail out! cannot create $SKIFF_HOME"; exit 1; }
POOLS=$TRASH/pools.yaml
export SKIFF_SSH_NODE_POOLS=$POOLS
other() { SKIFF_HOME=$OTHER "$SKIFF_BIN" "$@"; }

down_all() {
	for _h in "$SKIFF_HOME" "$OTHER"; do
		for _c in $(SKIFF_HOME=$_h "$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
			"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
			SKIFF_HOME=$_h timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
		done
	done
}

test_cleanup_hook() {
	down_all
	for _d in "$NODES_DIR"/tn*/home/.skiff; do
		[ -d "$_d" ] || continue
		_n=${_d#"$NODES_DIR"/}
		_n=${_n%%/*}
		mkdir -p "$TRASH/nodes/$_n" && cp -R "$_d" "$TRASH/nodes/$_n/"
	done 2>/dev/null
	nodes_down
	cp -a "$SKIFF_HOME" "$TRASH/home" 2>/dev/null
	rm -rf "$SKIFF_HOME" "$OTHER"
}

# json EXPR FILE: a Python expression over the JSON in FILE (as d), as JSON.
json() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(($1)))" "$2"
}

test_expect_success 'two test nodes; pool one is tn1 alone, pool two is tn1 and tn2' '
	nodes_up 2 &&
	cat >"$POOLS" <<-EOF &&
	one:
	  user: $NODES_USER
	  identity_file: $NODES_KEY
	  hosts:
	    - ip: $(nodes_ip 1)
	two:
	  user: $NODES_USER
	  identity_file: $NODES_KEY
	  hosts:
	    - ip: $(nodes_ip 1)
	    - ip: $(nodes_ip 2)
	EOF
	nodes_ssh 1 nproc >nproc
'
# Two clusters of half tn1's cores each fill it (tn1 is this machine's cores).
NPROC=$(cat "$TRASH/nproc" 2>/dev/null)
HALF=$(awk -v n="${NPROC:-2}" 'BEGIN { print n / 2 }')

test_expect_success 'two clusters of half its cores each share tn1, each with its own workdir and queue' '
	mkdir wd1 wd2 &&
	echo "of s1" >wd1/mine &&
	echo "of s2" >wd2/mine &&
	skiff launch -c s1 --infra ssh/one --cpus $HALF --workdir wd1 "cat mine; pwd" >o1 2>e1 &&
	skiff launch -c s2 --infra ssh/one --cpus $HALF --workdir wd2 "cat mine; pwd" >o2 2>e2 &&
	cat e1 e2 o1 o2 &&
	grep -qx "of s1" o1 && grep -qx "of s2" o2 &&
	grep -q "/.skiff/c/s1-[0-9a-f]*/sky_workdir$" o1 &&
	grep -q "/.skiff/c/s2-[0-9a-f]*/sky_workdir$" o2 &&
	skiff status >st && cat st &&
	grep -q "^s1 .*UP" st && grep -q "^s2 .*UP" st &&
	skiff queue --json s1 >q1 && skiff queue --json s2 >q2 &&
	test "$(json "[j[\"id\"] for j in d]" q1)" = "[1]" &&
	test "$(json "[j[\"id\"] for j in d]" q2)" = "[1]" &&
	nodes_ssh 1 "cat ~/.skiff/holds; ls ~/.skiff/c; test ! -e ~/sky_workdir && echo no-host-workdir" >h &&
	cat h &&
	grep -q "^launcher=[0-9a-f]* cluster=s1 from=[^ ]* since=[0-9]* cpus=$HALF memory=0$" h &&
	grep -q "^launcher=[0-9a-f]* cluster=s2 from=[^ ]* since=[0-9]* cpus=$HALF memory=0$" h &&
	test "$(grep -c "^s[12]-[0-9a-f]*$" h)" = 2 &&
	grep -qx no-host-workdir h
'

test_expect_success 'each share has its own supervisor, offering its CPUs' '
	for c in s1 s2; do
		nodes_ssh 1 "\$HOME/.skiff/c/$c-*/bin/skiff node status" >ns.$c || exit 1
		cat ns.$c &&
		grep -q "^cpus: *$HALF free of $HALF" ns.$c &&
		grep -q "^home: .*/.skiff/c/$c-" ns.$c || exit 1
	done &&
	test "$(sed -n "s/^supervisor: *running (pid \([0-9]*\).*/\1/p" ns.s1)" != \
		"$(sed -n "s/^supervisor: *running (pid \([0-9]*\).*/\1/p" ns.s2)"
'

test_expect_success 'a third that does not fit is refused by the host; on pool two it gets tn2' '
	expect_fail 1 skiff launch -c s3 --infra ssh/one --cpus $HALF "echo never" >o3 2>e3 &&
	cat e3 &&
	grep -q "this node has $NPROC CPUs, .*cluster .s1. of [^ ]* holds $HALF CPUs, .*which leaves 0 CPUs, .*cluster .s3. asks for $HALF CPUs" e3 &&
	grep -q "pool .one. has 1 node, other clusters hold $(nodes_ip 1); need 1" e3 &&
	! grep -q never o3 &&
	nodes_ssh 1 "ls ~/.skiff/c" >homes && test "$(grep -c . homes)" = 2 &&
	skiff launch -c s3 --infra ssh/two --cpus $HALF "echo s3 on \$(hostname)" >o3 2>e3 &&
	cat e3 o3 &&
	grep -qx "s3 on tn2" o3
'

test_expect_success 'a cluster that asks for nothing needs a host to itself: its launcher knows, so does the host' '
	expect_fail 1 skiff launch -c w1 --infra ssh/one "echo never" >ow 2>ew &&
	cat ew &&
	grep -q "pool .one. has 1 node, 1 is in use by clusters s1, s2; need 1" ew &&
	expect_fail 1 other launch -c w1 --infra ssh/one "echo never" >ow 2>ew &&
	cat ew &&
	grep -q "holds a share of this node since .*: a cluster that asks for no resources needs the node to itself" ew &&
	! grep -q never ow &&
	test "$(other status)" = "No existing clusters."
'

test_expect_success 'another launcher meets the same record: half a CPU does not fit; on the next host it does' '
	expect_fail 1 other launch -c o1 --infra ssh/one --cpus 0.5 "echo never" >oo 2>eo &&
	cat eo &&
	grep -q "which leaves 0 CPUs" eo &&
	skiff down s3 >/dev/null &&
	other launch -c o1 --infra ssh/two --cpus 0.5 --memory 1 "echo o1 on \$(hostname)" >oo 2>eo &&
	cat eo oo &&
	grep -qx "o1 on tn2" oo &&
	nodes_ssh 2 "cat ~/.skiff/holds" | grep -q " cluster=o1 .* cpus=0.5 memory=1$"
'

test_expect_success 'stop keeps the share (its hold, home and files); start brings it back there' '
	skiff stop s2 >/dev/null 2>&1 &&
	nodes_ssh 1 "cat ~/.skiff/holds; ls ~/.skiff/c/s2-*/sky_workdir" >h && cat h &&
	grep -q "cluster=s2 .* cpus=$HALF memory=0$" h && grep -qx mine h &&
	skiff status >st && grep -q "^s2 .*STOPPED" st &&
	skiff start s2 >/dev/null 2>&1 &&
	skiff exec s2 "cat mine" >o2 2>e2 &&
	cat e2 o2 && grep -qx "of s2" o2
'

test_expect_success 'down removes the share'"'"'s home and hold, and nothing of the other share' '
	skiff exec s2 -d "sleep 4000.$$" >/dev/null 2>&1 &&
	skiff down s1 >/dev/null &&
	nodes_ssh 1 "cat ~/.skiff/holds; ls ~/.skiff/c" >h && cat h &&
	! grep -q "cluster=s1 " h && grep -q "cluster=s2 " h &&
	! grep -q "^s1-" h && grep -q "^s2-" h &&
	skiff queue --json s2 >q2 &&
	test "$(json "[j[\"status\"] for j in d][-1]" q2)" = "\"RUNNING\"" &&
	skiff launch -c s4 --infra ssh/one --cpus $HALF "echo s4 fits" >o4 2>e4 &&
	cat e4 o4 && grep -qx "s4 fits" o4 &&
	skiff down s2 >/dev/null && skiff down s4 >/dev/null &&
	other down o1 >/dev/null &&
	nodes_ssh 1 "cat ~/.skiff/holds; ls ~/.skiff/c 2>/dev/null" >h && test ! -s h &&
	nodes_ssh 2 "cat ~/.skiff/holds; ls ~/.skiff/c 2>/dev/null" >h && test ! -s h
'

test_done
