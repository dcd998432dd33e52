#!/bin/sh
# Managed jobs through a controller on a cluster of its own (jobs.controller.resources.infra,
# docs/managed-jobs.md "Placement"): the controller on namespace sshd node tn1, the jobs on
# tn2 and tn3. The jobs go on with every launcher process killed and its SKIFF_HOME gone,
# a job whose node lost its supervisor and shim is recovered with no launcher alive, a new
# launcher reads the queue and the logs, a partitioned controller is said unreachable and
# catches up after the heal, kill -9 of the controller and a newer launcher (an upgrade in
# place) restart no job.
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }
command -v python3 >/dev/null || test_skip_all "needs python3 to read the --json outputs"

_t=${TMPDIR:-/tmp}
[ "${#_t}" -le 12 ] || _t=/tmp
export SKIFF_HOME=$_t/sk760.$$
HOME2=$_t/sk760b.$$
rm -rf "$SKIFF_HOME" "$HOME2"
# The controller's knobs travel with each request (docs/managed-jobs.md).
export SKIFF_JOBS_POLL_MS=300 SKIFF_JOBS_BACKOFF_S=1 SKIFF_JOBS_PROBE_FAILURES=3

# shellcheck source=tests/lib/jobs_ctl.sh
. "$SRC_DIR/tests/lib/jobs_ctl.sh"
# jf JSON ID FIELD: one field of a job in a `jobs queue --json` output.
jf() {
	python3 -c "
import json,sys
for j in json.load(open('$1')):
    if j['id'] == $2: print(j['$3'])"
}

# Every process of this launcher (in our PID namespace, not the nodes'): the skiff commands
# and the ssh masters under its SKIFF_HOME.
kill_launcher() {
	_ns=$(readlink /proc/self/ns/pid)
	for _p in /proc/[0-9]*; do
		[ "$(readlink "$_p/ns/pid" 2>/dev/null)" = "$_ns" ] || continue
		tr '\0' ' ' <"$_p/cmdline" 2>/dev/null | grep -qF "$1" || continue
		kill -KILL "${_p#/proc/}" 2>/dev/null
	done
}

test_cleanup_hook() {
	nodes_heal 1 2>/dev/null
	for _h in "$SKIFF_HOME" "$HOME2"; do
		[ -d "$_h" ] || continue
		SKIFF_HOME=$_h timeout 30 "$SKIFF_BIN" jobs cancel -a >/dev/null 2>&1
	done
	ctl jobs queue >"$TRASH/ctl-queue.txt" 2>&1
	nodes_ssh 1 "cat $CTL_HOME/jobs/controller.log" >"$TRASH/controller.log" 2>&1
	for _h in "$SKIFF_HOME" "$HOME2"; do
		kill_launcher "$_h"
		rm -rf "$_h"
	done
	nodes_down
}

write_launcher_files() {
	mkdir -m 700 -p "$1" &&
	cat >"$1/ssh_node_pools.yaml" <<-EOF &&
	ctl:
	  hosts:
	    - ip: $(nodes_ip 1)
	      user: $NODES_USER
	      identity_file: $NODES_KEY
	work:
	  user: $NODES_USER
	  identity_file: $NODES_KEY
	  hosts:
	    - $(nodes_ip 2)
	    - $(nodes_ip 3)
	EOF
	printf 'jobs:\n  controller:\n    resources:\n      infra: ssh/ctl\n' >"$1/config.yaml"
}

test_expect_success 'three nodes: the controller host and two for the jobs' '
	nodes_up 3 &&
	write_launcher_files "$SKIFF_HOME" &&
	mkdir wd && echo "sent through the controller" >wd/hello.txt &&
	echo "a mounted file" >mounted.txt
'

test_expect_success 'jobs launch brings the controller up, sends the files, runs the job' '
	cat >a.yaml <<-EOF &&
	name: a
	workdir: wd
	file_mounts:
	  /tmp/m.txt: $PWD/mounted.txt
	resources: {infra: ssh/work}
	run: cat hello.txt /tmp/m.txt
	EOF
	skiff jobs launch a.yaml >out 2>err &&
	grep -q "^Starting the jobs controller skiff-jobs-controller-" err &&
	grep -q "now holds ssh pool(s) work and 1 key file" err &&
	grep -q "sent through the controller" out &&
	grep -q "a mounted file" out &&
	# SkyPilot'"'"'s last line: its stream'"'"'s, or its replay'"'"'s when the job ended first.
	tail -n 1 out | grep -q " \(Managed job finished: [0-9]*\|Job finished\) (status: SUCCEEDED)\.\$" &&
	skiff status --json >st.json &&
	python3 -c "
import json; cs = json.load(open(\"st.json\"))
assert [c[\"name\"][:22] for c in cs] == [\"skiff-jobs-controller-\"], cs" &&
	test "$(ctl_field 1 status)" = SUCCEEDED
'

test_expect_success 'the controller host holds the pool and key it was sent, 0600, and nothing else' '
	nodes_ssh 1 "stat -c \"%a %n\" $CTL_HOME/ssh_node_pools.yaml $CTL_HOME/keys/* $CTL_HOME/pools.d/* $CTL_HOME/config.yaml" >modes &&
	! grep -v "^600 " modes &&
	test "$(wc -l <modes)" = 4 &&
	nodes_ssh 1 "stat -c %a $CTL_HOME $CTL_HOME/files $CTL_HOME/keys" >dmodes &&
	! grep -v "^700$" dmodes &&
	nodes_ssh 1 "cat $CTL_HOME/ssh_node_pools.yaml" >pools &&
	grep -q "^\"work\":" pools && ! grep -q ctl pools &&
	! nodes_ssh 1 "grep -rl \"$NODES_KEY\" $CTL_HOME/ssh_node_pools.yaml" &&
	skiff jobs launch -d --infra ssh/work "echo again" >out2 2>err2 &&
	! grep -q "now holds" err2 &&
	expect_fail 1 skiff jobs launch -d --infra ssh/nosuch "echo no" 2>err3 &&
	grep -q "no ssh node pool .nosuch." err3 &&
	printf "jobs:\n  controller:\n    resources:\n      infra: shh/ctl\n" >cfg-typo.yaml &&
	expect_fail 3 env SKIFF_CONFIG=$PWD/cfg-typo.yaml "$SKIFF_BIN" jobs queue 2>err4 &&
	grep -q "jobs.controller.resources.infra: unknown infra .shh/ctl.; did you mean .ssh.?" err4
'

test_expect_success 'a job group through the controller host: both tasks run; queue and the logs of one task from here' '
	cat >grp.yaml <<-\EOF &&
	name: pair
	execution: parallel
	---
	name: left
	resources: {infra: ssh/work}
	run: echo "left ran in $SKYPILOT_JOBGROUP_NAME"
	---
	name: right
	resources: {infra: ssh/work}
	run: echo "right ran in $SKYPILOT_JOBGROUP_NAME"
	EOF
	skiff jobs launch -d grp.yaml >id_g 2>err_g &&
	G=$(head -n 1 id_g) &&
	grep -q "^Managed job $G submitted: job group pair of 2 tasks" err_g &&
	wait_for "test \"\$(ctl_field $G status)\" = SUCCEEDED" 90 &&
	wait_for "test \"\$(ctl_field $((G + 1)) status)\" = SUCCEEDED" 90 &&
	test "$(ctl_field $((G + 1)) group_id)" = "$G" &&
	skiff jobs queue >gq &&
	grep -q "^$G .*pair" gq &&
	skiff jobs logs "$G" right >gl 2>&1 &&
	grep -q "^right ran in pair\$" gl &&
	! grep -q "left ran" gl
'

# The uploads under files/ on the controller host, one name per line, sorted.
ctl_files() { nodes_ssh 1 "ls $CTL_HOME/files" | sort; }
# Waits (up to $2 s) until ctl_files prints what file $1 holds.
wait_files() {
	_end=$(($(date +%s) + $2))
	until ctl_files >files.now && cmp -s files.now "$1"; do
		[ "$(date +%s)" -lt "$_end" ] || { diff "$1" files.now; return 1; }
		sleep 0.3
	done
}

test_expect_success 'the files of ended jobs leave the controller host; a live job keeps its own; an orphan goes after the grace' '
	: >none && wait_files none 60 &&
	old=0123456789abcdef0123456789abcdef new=fedcba9876543210fedcba9876543210 &&
	nodes_ssh 1 "cd $CTL_HOME/files && mkdir $old $new not-an-upload &&
		echo x >$old/f && echo y >$new/f && echo z >not-an-upload/f &&
		touch -d \"2 hours ago\" $old not-an-upload" &&
	cat >live.yaml <<-EOF &&
	name: live
	workdir: wd
	resources: {infra: ssh/work}
	run: cat hello.txt; sleep 1000
	EOF
	skiff jobs launch -d live.yaml >id_live 2>err &&
	L=$(tail -n 1 id_live) &&
	wait_for "test \"\$(ctl_field $L status)\" = RUNNING" 60 &&
	ctl_files | grep -v -x -e $old -e $new -e not-an-upload >live.token &&
	test "$(wc -l <live.token)" = 1 &&
	skiff jobs launch -d --infra ssh/work true >id_t &&
	{ echo $new; echo not-an-upload; cat live.token; } | sort >want &&
	wait_files want 60 &&
	skiff jobs cancel "$L" &&
	{ echo $new; echo not-an-upload; } | sort >want2 &&
	wait_files want2 60 &&
	nodes_ssh 1 "cat $CTL_HOME/jobs/controller.log" >ctl.log &&
	grep -q "removing .*/$old: no job named these files within the grace period" ctl.log &&
	grep -q "removing .*/$(cat live.token): every job that used these files has ended" ctl.log &&
	nodes_ssh 1 "rm -rf $CTL_HOME/files/$new $CTL_HOME/files/not-an-upload"
'

test_expect_success 'jobs run on with every launcher process killed and its home deleted' '
	skiff jobs launch -d -n b --infra ssh/work "echo b-start; sleep 6; echo b-done" >id_b &&
	skiff jobs launch -d -n c --job-recovery FAILOVER --infra ssh/work \
		"echo c-start; sleep 1000" >id_c &&
	B=$(tail -n 1 id_b) && C=$(tail -n 1 id_c) &&
	echo "$B $C" >ids &&
	wait_for "test \"\$(ctl_field $C status)\" = RUNNING" 60 &&
	kill_launcher "$SKIFF_HOME" && rm -rf "$SKIFF_HOME" &&
	wait_for "test \"\$(ctl_field $B status)\" = SUCCEEDED" 60
'

test_expect_success 'a job whose node lost its supervisor and shim is recovered, no launcher alive' '
	read -r B C <ids &&
	n=$(for i in 2 3; do
		if nodes_ssh $i "pgrep -f \"slee[p] 1000\"" >/dev/null; then echo $i; fi
	done) &&
	test -n "$n" &&
	nodes_ssh $n "pkill -KILL -f -- __superviso[r]; pkill -KILL -f -- __shi[m]; pkill -KILL -f \"slee[p] 1000\"; true" &&
	wait_for "test \"\$(ctl_field $C recoveries)\" = 1" 90 &&
	wait_for "test \"\$(ctl_field $C status)\" = RUNNING" 90
'

test_expect_success 'a new launcher with the same config and keys sees the queue and the logs' '
	read -r B C <ids &&
	write_launcher_files "$HOME2" &&
	SKIFF_HOME=$HOME2 skiff jobs queue --json >q.json &&
	test "$(jf q.json "$B" status)" = SUCCEEDED &&
	test "$(jf q.json "$C" status)" = RUNNING &&
	test "$(jf q.json 1 status)" = SUCCEEDED &&
	SKIFF_HOME=$HOME2 skiff jobs logs "$B" >blog &&
	grep -q b-start blog && grep -q b-done blog &&
	SKIFF_HOME=$HOME2 skiff jobs logs --controller "$C" >clog &&
	grep -q RECOVERING clog &&
	SKIFF_HOME=$HOME2 skiff jobs logs --sync-down "$B" >sd &&
	dir=$(sed -n "s/^logs synced to //p" sd) && test -n "$dir" &&
	case $dir in "$HOME"/sky_logs/skiff-job-$B/*) ;; *) false ;; esac &&
	grep -q b-done "$dir"/rank-0/run.log
'

test_expect_success 'kill -9 of the controller: the keeper starts it again, the job goes on' '
	read -r B C <ids &&
	old=$(ctl_pid) && test -n "$old" &&
	nodes_ssh 1 "kill -KILL $old" &&
	wait_for "p=\$(ctl_pid); test -n \"\$p\" && test \"\$p\" != $old" 30 &&
	SKIFF_HOME=$HOME2 skiff jobs launch -d -n d --infra ssh/work "echo d-ran" >id_d &&
	D=$(tail -n 1 id_d) &&
	wait_for "test \"\$(ctl_field $D status)\" = SUCCEEDED" 60 &&
	test "$(ctl_field "$C" status)" = RUNNING &&
	test "$(ctl_field "$C" recoveries)" = 1
'

test_expect_success 'the controller partitioned: unreachable within seconds; after the heal it catches up' '
	read -r B C <ids &&
	job=$(ctl_field "$C" cluster_job) &&
	nodes_partition 1 &&
	expect_fail 4 env SKIFF_HOME=$HOME2 timeout 60 "$SKIFF_BIN" jobs queue >pq 2>perr &&
	grep -q "cannot be reached" perr &&
	sleep 20 &&
	nodes_heal 1 &&
	wait_for "SKIFF_HOME=$HOME2 skiff jobs queue >/dev/null 2>q.err" 60 &&
	sleep 2 &&
	test "$(ctl_field "$C" status)" = RUNNING &&
	test "$(ctl_field "$C" recoveries)" = 1 &&
	test "$(ctl_field "$C" cluster_job)" = "$job"
'

test_expect_success 'a newer launcher upgrades the controller in place; no job restarts; down waits for the jobs, then removes the keys' '
	read -r B C <ids &&
	job=$(ctl_field "$C" cluster_job) &&
	cp "$SKIFF_BIN" skiff-newer && printf "newer" >>skiff-newer &&
	new=$(sha256sum skiff-newer | cut -c1-64) &&
	old_keeper=$(keeper_pid) &&
	SKIFF_HOME=$HOME2 ./skiff-newer jobs queue >nq 2>nerr &&
	grep -q "^Updating the jobs controller" nerr &&
	wait_for "p=\$(ctl_pid); test -n \"\$p\" && nodes_ssh 1 \"readlink /proc/\$p/exe\" | grep -q $new" 30 &&
	k=$(keeper_pid) && test "$k" != "$old_keeper" &&
	nodes_ssh 1 "readlink /proc/$k/exe" | grep -q "$new" &&
	test "$(ctl_field "$C" status)" = RUNNING &&
	test "$(ctl_field "$C" recoveries)" = 1 &&
	test "$(ctl_field "$C" cluster_job)" = "$job" &&
	ctl_cluster=$(SKIFF_HOME=$HOME2 ./skiff-newer status --json | python3 -c "
import json,sys; print(json.load(sys.stdin)[0][\"name\"])") &&
	expect_fail 1 env SKIFF_HOME=$HOME2 ./skiff-newer down "$ctl_cluster" 2>derr &&
	grep -q "managed job(s) that have not ended" derr &&
	SKIFF_HOME=$HOME2 ./skiff-newer jobs cancel "$C" &&
	wait_for "test \"\$(ctl_field $C status)\" = CANCELLED" 60 &&
	wait_for "test \"\$(ctl jobs queue --json | grep -c CANCELLING)\" = 0" 60 &&
	# A cleanup worker still running (a real process, recorded as the controller records
	# one): the host stops nothing it would remove under it, and down is refused.
	nodes_ssh 1 "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo \$!" >wpid &&
	w=$(cat wpid) && test -n "$w" &&
	cat >holder.py <<-\EOF &&
	import sqlite3, sys, time
	db, pid = sys.argv[1], int(sys.argv[2])
	start = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19])
	d = sqlite3.connect(db)
	d.execute("INSERT OR REPLACE INTO job_holders (job_id, kind, pid, pid_start, since) "
	          "VALUES (-2, ?, ?, ?, ?)", ("cleanup", pid, start, time.time()))
	d.commit()
	EOF
	nodes_ssh 1 "python3 - $CTL_HOME/launcher.db $w" <holder.py &&
	expect_fail 1 env SKIFF_HOME=$HOME2 SKIFF_JOBS_HOST_STOP_WAIT_S=2 \
		./skiff-newer down "$ctl_cluster" >dout 2>derr &&
	grep -q "cleanup worker (pid $w) still runs" derr dout &&
	nodes_ssh 1 "test -e $CTL_HOME/launcher.db" &&
	wait_for "test -n \"\$(keeper_pid)\"" 30 &&
	nodes_ssh 1 "kill $w" &&
	SKIFF_HOME=$HOME2 ./skiff-newer down "$ctl_cluster" &&
	! nodes_ssh 1 "pgrep -f __jobs-keepe[r]" &&
	! nodes_ssh 1 "test -e $CTL_HOME"
'

# The host answers in frames only (supervisor/jobs/serve.c): an op it does not know (a
# launcher of another build) gets an error frame, never text a parser could misread.
# shellcheck source=tests/lib/frames.sh
. "$SRC_DIR/tests/lib/frames.sh"
test_expect_success 'a controller host answers an op it does not know, or a stop, in frames only' '
	mkdir -p fh &&
	python3 -c "$frame_py" op nosuch >req &&
	expect_fail 2 env HOME=$PWD/fh "$SKIFF_BIN" __jobs-remote <req >ans 2>err &&
	python3 -c "$frames_py" ans >f &&
	test "$(wc -l <f)" = 1 &&
	grep "^error=unknown op .nosuch. .* code=2 unknown_op=1$" f &&
	python3 -c "$frame_py" op stop >req &&
	HOME=$PWD/fh "$SKIFF_BIN" __jobs-remote <req >ans 2>err &&
	python3 -c "$frames_py" ans >f &&
	echo "end=1 code=0" >want &&
	test_cmp want f &&
	grep "jobs controller stopped" err
'

test_done
