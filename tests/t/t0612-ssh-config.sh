#!/bin/sh
# `ssh CLUSTER` on an SSH node pool (tests/lib/nodes.sh: two namespace nodes with a real
# sshd): launch writes $SKIFF_HOME/generated/ssh/CLUSTER and one Include line at the top
# of ~/.ssh/config; ssh, scp and rsync reach the head and the worker by name, over skiff's
# own master connection; down (and a launch that fails and takes its cluster down) removes
# the file; SKIFF_NO_SSH_CONFIG=1 leaves ~/.ssh/config alone; local infra writes nothing.
# A 63-character name of both cases with '_' and '.', and a launcher under a 100-character
# HOME, launch, exec, log and go down. Root only (skipped otherwise, a failure in CI).
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v rsync >/dev/null || test_skip_all "needs rsync"

# A short SKIFF_HOME keeps the ControlMasters in $SKIFF_HOME/ssh (t0610 says why).
_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk612.$$
rm -rf "$SKIFF_HOME"
mkdir -m 700 "$SKIFF_HOME" || { echo "Bail out! cannot create $SKIFF_HOME"; exit 1; }
export SKIFF_SSH_NODE_POOLS=$NODES_POOL_FILE
unset SKIFF_NO_SSH_CONFIG
INFRA=ssh/$NODES_POOL
# SkyPilot's rule, at skiff's limit of 63: both cases, digits, '-', '_' and '.'.
NAME=Train_Run.2026a-$(printf 'aBcD_eF.g%.0s' 1 2 3 4 5)x9
GEN=$SKIFF_HOME/generated/ssh
# HOME is $TRASH/userhome, not root's home: ssh reads ~/.ssh/config only with -F then,
# and the Include line names the directory by its path (docs/infra-ssh.md).
CFG=$HOME/.ssh/config
INCLUDE="Include $GEN/*"

down_all() {
	for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
		"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
	done
}

test_cleanup_hook() {
	down_all
	[ -z "${LONG_HOME:-}" ] || (export HOME="$LONG_HOME" && unset SKIFF_HOME && down_all)
	nodes_down
	cp -a "$SKIFF_HOME" "$TRASH/home" 2>/dev/null
	rm -rf "$SKIFF_HOME"
}

# cssh ARGS...: ssh as a user would type it, through ~/.ssh/config.
cssh() { ssh -F "$CFG" -o BatchMode=yes "$@" </dev/null; }

mode_of() { stat -c %a "$1"; }

# A user's own config, whose every byte must survive: Host blocks, comments, no final
# newline, a byte that is not UTF-8.
mkdir -m 700 "$HOME/.ssh"
printf 'Host *\n    ServerAliveInterval 60\n# caf\351\n\nHost elsewhere\n  HostName 192.0.2.1' \
	>"$TRASH/user_config"
cp "$TRASH/user_config" "$CFG"
chmod 640 "$CFG"

test_expect_success 'nodes up: tn1, tn2' '
	nodes_up 2
'

test_expect_success "launch a 2-node cluster named $NAME" '
	test ${#NAME} = 63 &&
	{ skiff launch -c "$NAME" --infra "$INFRA" --num-nodes 2 \
		"echo rank \$SKYPILOT_NODE_RANK on \$(hostname)" >out 2>err; rc=$?; } &&
	cat err out &&
	test $rc = 0 &&
	grep -qx "(head, rank=0, pid=[0-9]*) rank 0 on tn1" out &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=10.200.0.12) rank 1 on tn2" out
'

test_expect_success 'its ssh config: Host NAME and NAME-worker1, 0600, what skiff connects with' '
	test "$(mode_of "$GEN")" = 700 &&
	test "$(mode_of "$GEN/$NAME")" = 600 &&
	grep -qx "Host $NAME" "$GEN/$NAME" &&
	grep -qx "Host $NAME-worker1" "$GEN/$NAME" &&
	! grep -q "worker2" "$GEN/$NAME" &&
	grep -qx "    HostName 10.200.0.11" "$GEN/$NAME" &&
	grep -qx "    HostName 10.200.0.12" "$GEN/$NAME" &&
	grep -qx "    User $NODES_USER" "$GEN/$NAME" &&
	grep -qx "    IdentityFile $NODES_KEY" "$GEN/$NAME" &&
	grep -qx "    IdentitiesOnly yes" "$GEN/$NAME" &&
	grep -qx "    UserKnownHostsFile $SKIFF_HOME/ssh/known_hosts" "$GEN/$NAME" &&
	test "$(grep -c "^    ControlPath $SKIFF_HOME/ssh/[0-9a-f]\{40\}\$" "$GEN/$NAME")" = 2
'

test_expect_success '~/.ssh/config: the Include line first, the rest byte for byte, mode kept' '
	test "$(head -n 1 "$CFG")" = "$INCLUDE" &&
	tail -n +2 "$CFG" >rest &&
	cmp rest "$TRASH/user_config" &&
	test "$(mode_of "$CFG")" = 640
'

test_expect_success 'ssh NAME joins skiff'"'"'s master; ssh NAME-worker1 reaches rank 1' '
	cssh -O check "$NAME" 2>check.err &&
	grep -q "Master running" check.err &&
	cssh "$NAME" true &&
	test "$(cssh "$NAME" hostname)" = tn1 &&
	test "$(cssh "$NAME-worker1" hostname)" = tn2 &&
	test "$(cssh "$NAME" "echo \$SSH_CONNECTION" | cut -d" " -f3)" = 10.200.0.11
'

test_expect_success 'scp f NAME: and rsync -a x NAME: land on the head' '
	echo "scp payload" >f &&
	scp -F "$CFG" -o BatchMode=yes -q f "$NAME:" </dev/null &&
	test "$(cssh "$NAME" cat f)" = "scp payload" &&
	mkdir -p x/sub && echo one >x/a && echo two >x/sub/b &&
	rsync -a -e "ssh -F $CFG -o BatchMode=yes" x "$NAME:" </dev/null &&
	test "$(cssh "$NAME" cat x/a x/sub/b)" = "one
two" &&
	rsync -a -e "ssh -F $CFG -o BatchMode=yes" x "$NAME-worker1:" </dev/null &&
	test "$(cssh "$NAME-worker1" cat x/sub/b)" = two
'

test_expect_success 'exec and logs on the long name; a second launch keeps one Include line' '
	skiff exec "$NAME" "echo exec on \$(hostname)" >out 2>&1 &&
	grep -qx "exec on tn1" out &&
	skiff logs "$NAME" 2 >logs 2>&1 &&
	grep -q "exec on tn1" logs &&
	skiff launch -c "$NAME" --infra "$INFRA" true >/dev/null 2>&1 &&
	test "$(grep -c "^Include " "$CFG")" = 1 &&
	test "$(head -n 1 "$CFG")" = "$INCLUDE"
'

test_expect_success 'down removes the file and leaves ~/.ssh/config as it is' '
	cp "$CFG" before &&
	skiff down "$NAME" >/dev/null 2>&1 &&
	test ! -e "$GEN/$NAME" &&
	cmp before "$CFG" &&
	! cssh -o ConnectTimeout=2 "$NAME" true 2>/dev/null
'

# The submit fails (no node has 4096 CPUs) after the file was written: the Include line
# the launch added to a config it found missing shows that it was.
test_expect_success 'a launch that fails and takes its new cluster down removes the file' '
	mv "$CFG" saved_config &&
	! skiff launch -c failed --infra "$INFRA" --cpus 4096 true >out 2>&1 &&
	grep -q "taking the new cluster down" out &&
	test "$(cat "$CFG")" = "$INCLUDE" &&
	test ! -e "$GEN/failed" &&
	mv saved_config "$CFG" &&
	skiff status >st 2>&1 &&
	! grep -q "^failed " st
'

test_expect_success 'SKIFF_NO_SSH_CONFIG=1: the file is written, ~/.ssh/config is not touched' '
	rm -rf "$HOME/.ssh" &&
	SKIFF_NO_SSH_CONFIG=1 skiff launch -c opt.Out --infra "$INFRA" true >/dev/null 2>&1 &&
	test -s "$GEN/opt.Out" &&
	test ! -e "$HOME/.ssh" &&
	ssh -F "$GEN/opt.Out" -o BatchMode=yes opt.Out hostname </dev/null >h &&
	test "$(cat h)" = tn1 &&
	skiff down opt.Out >/dev/null 2>&1 &&
	test ! -e "$GEN/opt.Out"
'

test_expect_success 'no ~/.ssh: created 0700, config 0600 with the line alone' '
	rm -rf "$HOME/.ssh" &&
	skiff launch -c fresh --infra "$INFRA" true >/dev/null 2>&1 &&
	test "$(mode_of "$HOME/.ssh")" = 700 &&
	test "$(mode_of "$CFG")" = 600 &&
	printf "%s\n" "$INCLUDE" >want &&
	cmp want "$CFG" &&
	test "$(cssh fresh hostname)" = tn1 &&
	skiff down fresh >/dev/null 2>&1
'

test_expect_success 'a ~/.ssh/config that is a link stays one; its target gets the line' '
	mkdir -p dotfiles &&
	cp "$TRASH/user_config" dotfiles/ssh_config &&
	rm -f "$CFG" &&
	ln -s "$TRASH/dotfiles/ssh_config" "$CFG" &&
	skiff launch -c linked --infra "$INFRA" true >/dev/null 2>&1 &&
	test -L "$CFG" &&
	test "$(head -n 1 dotfiles/ssh_config)" = "$INCLUDE" &&
	tail -n +2 dotfiles/ssh_config >rest &&
	cmp rest "$TRASH/user_config" &&
	test "$(cssh linked hostname)" = tn1 &&
	skiff down linked >/dev/null 2>&1
'

test_expect_success 'local infra writes no ssh config (skiff ssh is the way there)' '
	skiff launch -c loc true >/dev/null 2>&1 &&
	test ! -e "$GEN/loc" &&
	test ! -e "$SKIFF_HOME/local/loc/0/.skiff/generated" &&
	test "$(skiff ssh loc "echo ok")" = ok &&
	skiff down loc >/dev/null 2>&1
'

# SkyPilot's ssh_node_pools.yaml as its docs write it: a sudo `password:` and an
# identity_file relative to the file's directory. The password is dropped as the file is
# read: nothing of skiff's keeps it, logs it or puts it in a command line.
test_expect_success "SkyPilot's pool file as it is: password and a relative identity_file" '
	mkdir -p sky/keys &&
	cp "$NODES_KEY" sky/keys/id && chmod 600 sky/keys/id &&
	pw=hunter2-$$-secret &&
	cat >sky/ssh_node_pools.yaml <<-EOF &&
	skypool:
	  user: $NODES_USER
	  identity_file: keys/id
	  password: $pw
	  hosts:
	    - $(nodes_ip 1)
	EOF
	(cd / && SKIFF_SSH_NODE_POOLS=$TRASH/sky/ssh_node_pools.yaml \
		skiff launch -c pw --infra ssh/skypool "echo ran on \$(hostname)") >out 2>err &&
	grep -qx "ran on tn1" out &&
	! grep -rIl "$pw" "$SKIFF_HOME" "$HOME" err out &&
	SKIFF_SSH_NODE_POOLS=$TRASH/sky/ssh_node_pools.yaml skiff down pw >/dev/null 2>&1
'

# A host outlives its cluster: down takes away what the cluster put there (the workdir,
# its job queue and logs), so the next cluster on that host starts clean. The user's own
# files in the home are theirs and stay.
test_expect_success 'down of an ssh cluster leaves the host clean for the next one' '
	mkdir -p wd1 && echo from-x1 >wd1/w.txt &&
	skiff launch -c x1 --infra $INFRA --workdir wd1 \
		"echo out >output.txt; echo mine >~/x1-own.txt" >/dev/null 2>&1 &&
	skiff down x1 >/dev/null 2>&1 &&
	skiff launch -c x2 --infra $INFRA \
		"ls ~/sky_workdir 2>&1 | head -1; ls ~/.skiff/logs; cat ~/x1-own.txt; pwd" >out 2>err &&
	cat out &&
	grep -q "No such file or directory" out &&
	test "$(sed -n 2p out)" = 1 &&
	test "$(sed -n 3p out)" = mine &&
	test "$(skiff queue --json x2 | python3 -c "import json,sys; print([j[\"id\"] for j in json.load(sys.stdin)])")" = "[1]" &&
	skiff down x2 >/dev/null 2>&1
'

# A launcher whose home is 100 characters long and whose state is ~/.skiff in it: the
# ssh sockets go to /tmp/skiff-ssh.UID, the cluster's file to ~/.skiff/generated/ssh.
LONG_HOME=$TRASH/$(printf 'h%.0s' $(seq 1 $((100 - ${#TRASH} - 1))))

test_expect_success "under a ${#LONG_HOME}-character HOME: launch, ssh, exec, logs, down" '
	test ${#LONG_HOME} -ge 100 &&
	mkdir -p "$LONG_HOME" &&
	(
		export HOME=$LONG_HOME &&
		unset SKIFF_HOME &&
		{ skiff launch -c "$NAME" --infra "$INFRA" --num-nodes 2 \
			"echo long \$SKYPILOT_NODE_RANK" >out 2>err; rc=$?; } &&
		cat err out &&
		test $rc = 0 &&
		grep -qx "(worker1, rank=1, pid=[0-9]*, ip=10.200.0.12) long 1" out &&
		lgen=$HOME/.skiff/generated/ssh &&
		test -s "$lgen/$NAME" &&
		grep -q "^    ControlPath /tmp/skiff-ssh\.$(id -u)/[0-9a-f]\{40\}\$" "$lgen/$NAME" &&
		test "$(head -n 1 "$HOME/.ssh/config")" = "Include $lgen/*" &&
		test "$(ssh -F "$HOME/.ssh/config" -o BatchMode=yes "$NAME-worker1" hostname \
			</dev/null)" = tn2 &&
		skiff exec "$NAME" "echo exec long" >out 2>&1 &&
		grep -q "exec long" out &&
		skiff logs "$NAME" 1 >logs 2>&1 &&
		grep -qx "(head, rank=0, pid=[0-9]*) long 0" logs &&
		skiff down "$NAME" >/dev/null 2>&1 &&
		test ! -e "$lgen/$NAME"
	)
'

test_done
