#!/bin/sh
# Cluster names as SkyPilot's ([a-zA-Z]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?, at most 63) on local
# infra, under a HOME of over 100 characters (state in ~/.skiff): every node's supervisor
# socket is then far longer than a Unix socket address holds (107 bytes), and launch,
# exec, logs, queue, stop, start and down work all the same. The ssh infra's side is in
# t0612.
. "$(dirname "$0")/lib.sh"

LONG_HOME=$TRASH/$(printf 'h%.0s' $(seq 1 $((100 - ${#TRASH} - 1))))
mkdir -p "$LONG_HOME"
export HOME="$LONG_HOME"
unset SKIFF_HOME
NAME=Eval_Set.v2.1-$(printf 'MiXeD_c.%.0s' 1 2 3 4 5 6)0
SOCK=$HOME/.skiff/local/$NAME/1/.skiff/supervisor.sock

test_cleanup_hook() {
	for _c in "$NAME" Dev dev "${NAME}x" 1abc abc_; do
		timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
	done
}

test_expect_success "a ${#NAME}-character name under a ${#HOME}-character HOME" '
	test ${#HOME} -ge 100 &&
	test ${#NAME} = 63 &&
	{ skiff launch -c "$NAME" --num-nodes 2 \
		"echo rank \$SKYPILOT_NODE_RANK of \$SKYPILOT_NUM_NODES" >out 2>err; rc=$?; } &&
	cat err out &&
	test $rc = 0 &&
	grep -qx "(head, rank=0, pid=[0-9]*) rank 0 of 2" out &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=127.0.0.1) rank 1 of 2" out
'

test_expect_success 'its nodes listen on sockets longer than sun_path holds' '
	test ${#SOCK} -gt 107 &&
	test -S "$SOCK" &&
	test -S "${SOCK%/1/.skiff/supervisor.sock}/0/.skiff/supervisor.sock"
'

test_expect_success 'exec, logs, queue and status on it' '
	skiff exec "$NAME" "echo exec ok" >out 2>&1 &&
	grep -qx "exec ok" out &&
	skiff logs "$NAME" 1 >logs 2>&1 &&
	grep -qx "(worker1, rank=1, pid=[0-9]*, ip=127.0.0.1) rank 1 of 2" logs &&
	skiff queue "$NAME" >q 2>&1 &&
	test "$(grep -c SUCCEEDED q)" = 2 &&
	skiff status >st 2>&1 &&
	grep -q "^$NAME  *local .* UP " st
'

test_expect_success 'stop and start: the supervisors bind those sockets again' '
	skiff stop "$NAME" >/dev/null 2>&1 &&
	test ! -S "$SOCK" &&
	skiff start "$NAME" >/dev/null 2>&1 &&
	skiff exec "$NAME" "echo again" >out 2>&1 &&
	grep -qx "again" out &&
	test -S "$SOCK"
'

test_expect_success 'down removes it' '
	skiff down "$NAME" >/dev/null 2>&1 &&
	test ! -e "$HOME/.skiff/local/$NAME" &&
	skiff status >st 2>&1 &&
	! grep -q "^$NAME " st
'

test_expect_success 'names are case-sensitive: Dev and dev are two clusters' '
	skiff launch -c Dev "echo big" >big 2>&1 &&
	skiff launch -c dev "echo small" >small 2>&1 &&
	grep -q "big" big && grep -q "small" small &&
	skiff status >st 2>&1 &&
	grep -q "^Dev " st && grep -q "^dev " st &&
	skiff down Dev >/dev/null 2>&1 &&
	skiff status >st 2>&1 &&
	! grep -q "^Dev " st && grep -q "^dev " st &&
	skiff down dev >/dev/null 2>&1
'

test_expect_success 'names outside the rule are refused, saying why' '
	! skiff launch -c 1abc true 2>err && grep -q "must start with a letter" err &&
	! skiff launch -c abc_ true 2>err && grep -q "must end with a letter or a digit" err &&
	! skiff launch -c "a b" true 2>err && grep -q "has '"' '"'" err &&
	! skiff launch -c "a/b" true 2>err && grep -q "has '"'/'"'" err &&
	! skiff launch -c "${NAME}x" true 2>err && grep -q "is 64 characters long, more than 63" err &&
	test ! -e "$HOME/.skiff/local/1abc"
'

test_done
