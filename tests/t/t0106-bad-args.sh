#!/bin/sh
# Bad input met where it enters, on local infra: flags, cluster arguments, task and pool
# files, config layers and the environment. Each gets its error at once, with the exit
# code of docs/exit-codes.md, and nothing is made or left waiting: no cluster, no file on
# a node, no job retried for ever.
. "$(dirname "$0")/lib.sh"

export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_IDLE_S=2
printf 'p:\n  hosts: []\n' >"$TRASH/pool.yaml"
export SKIFF_SSH_NODE_POOLS=$TRASH/pool.yaml

test_cleanup_hook() {
	"$SKIFF_BIN" jobs cancel -a >/dev/null 2>&1
	"$SKIFF_BIN" down -a >/dev/null 2>&1
	# The managed jobs' pool, which down -a leaves to them: by its name.
	"$SKIFF_BIN" down skiff-jobs >/dev/null 2>&1
}

# no_cluster NAME: nothing was made of it.
no_cluster() {
	skiff status >st && ! grep -q "^$1 " st && test ! -e "$SKIFF_HOME/local/$1"
}

test_expect_success 'launch --infra: checked as it is read, before a cluster is named or made' '
	expect_fail 2 skiff launch -c a1 --infra bogus "echo" >out 2>err &&
	grep -q "unknown infra .bogus." err && ! grep -q Launching err &&
	expect_fail 2 skiff launch -c a1 --infra "$(printf "a%.0s" $(seq 300))" "echo" 2>err &&
	grep -q "is 300 characters long, more than 256" err &&
	expect_fail 3 skiff launch -c a1 --infra ssh/p "echo" 2>err &&
	grep -q "pool.yaml:2:10: pool .p. has no hosts" err && ! grep -q Launching err &&
	no_cluster a1 &&
	skiff launch -c a1 --infra=local "echo eq-form" >out 2>err &&
	grep -qx eq-form out &&
	skiff down a1 >/dev/null
'

test_expect_success 'jobs launch and check --infra: an invalid pool file is said there (3)' '
	expect_fail 3 skiff jobs launch -d --infra=ssh/p "echo" 2>err &&
	grep -q "pool .p. has no hosts" err &&
	skiff jobs queue >q && ! grep -q "^1 " q &&
	echo "run: echo" >t.yaml &&
	expect_fail 3 skiff check --infra ssh/p t.yaml 2>err &&
	grep -q "pool .p. has no hosts" err
'

test_expect_success 'a managed job whose launch fails: its DETAILS say why, not where to look' '
	printf "resources:\n  infra: ssh/p\nrun: echo\n" >onp.yaml &&
	id=$(skiff jobs launch -d onp.yaml) &&
	wait_for "skiff jobs queue | grep -q \"launch attempt 1 failed\"" 20 &&
	skiff jobs queue >q && cat q &&
	grep "^$id " q | grep -q "launch attempt 1 failed: .*pool.yaml:2:10: pool .p. has no hosts" &&
	skiff jobs logs --controller $id >ctl && grep -q "pool .p. has no hosts" ctl &&
	skiff jobs cancel $id >/dev/null
'

test_expect_success 'jobs cancel of a job that has ended says so; ids and -a together are refused' '
	id=$(skiff jobs launch -d "echo done") &&
	wait_for "test \"\$(skiff jobs queue --json | python3 -c \"import json,sys; print([j[\\\"status\\\"] for j in json.load(sys.stdin) if j[\\\"id\\\"] == $id][0])\")\" = SUCCEEDED" 60 &&
	skiff jobs cancel $id >out &&
	grep -qx "0 job(s) cancelled, 0 being cancelled (cleaning up their clusters); 1 had ended already" out &&
	expect_fail 2 skiff jobs cancel $id -a 2>err &&
	grep -q "expected one of: job ids, -n NAME, -a" err
'

test_expect_success 'cluster arguments: control bytes and 10 KB refused, nothing echoed raw' '
	for c in status queue down stop start logs ssh; do
		{ skiff $c "$(printf "a\nb\033[2J")" >out 2>err; rc=$?; } &&
		test $rc != 0 &&
		grep -q "a cluster name has no control or non-ASCII byte: 0x0a at offset 1" err &&
		! grep -q "$(printf "\033")" err out || { echo "$c (rc $rc)"; cat err; exit 1; }
	done &&
	long=$(printf "c%.0s" $(seq 10240)) &&
	for c in status logs cancel; do
		{ skiff $c "$long" >out 2>err; rc=$?; } &&
		test $rc != 0 &&
		grep -q "cluster name .c*\.\.\.. is 10240 characters long, more than 256" err &&
		test "$(wc -c <err)" -lt 400 || { echo "$c (rc $rc)"; cat err; exit 1; }
	done
'

test_expect_success 'names may hold any byte: tables show control bytes as ?, one line a row' '
	odd=$(printf "a\nb\033[31mred") &&
	skiff launch -c nm -n "$odd" "echo x" >/dev/null 2>&1 &&
	skiff queue nm >q &&
	test "$(wc -l <q)" = 2 && ! grep -q "$(printf "\033")" q &&
	grep -q "^1 *a?b?\[31mred " q &&
	id=$(skiff jobs launch -d -n "$odd" "echo y" 2>err) &&
	grep -qx "Managed job $id submitted (a?b?\[31mred)" err &&
	skiff jobs queue >jq &&
	! grep -q "$(printf "\033")" jq &&
	grep -q "^$id .*a?b?\[31mred" jq &&
	skiff jobs queue --json | python3 -c "
import json, sys
assert any(j[\"name\"] == sys.argv[1] for j in json.load(sys.stdin))" "$odd" &&
	skiff down nm >/dev/null
'

test_expect_success 'file_mounts: an empty remote path or a control character, before any node' '
	printf "file_mounts:\n  \"\": /etc/hostname\nrun: echo\n" >e.yaml &&
	expect_fail 3 skiff check e.yaml 2>err &&
	grep -q "e.yaml:2:3: a remote path in file_mounts cannot be empty" err &&
	printf "file_mounts:\n  \"/x\\\\ny\": /etc/hostname\nrun: echo\n" >n.yaml &&
	expect_fail 3 skiff check n.yaml 2>err &&
	grep -q "n.yaml:2:3: remote path in file_mounts has a control character (0x0a)" err &&
	printf "envs:\n  D: \"\"\nfile_mounts:\n  \"\${D}\": /etc/hostname\nrun: echo\n" >v.yaml &&
	expect_fail 3 skiff launch -c fm v.yaml 2>err &&
	grep -q "v.yaml:4:3: file_mounts: its remote path is empty once its variables are filled in" err &&
	no_cluster fm
'

test_expect_success 'runtime_env paths and an empty git workdir: at their line, before any node' '
	printf "runtime_env:\n  pip: nonexistent-req.txt\n  working_dir: ./nodir\nrun: echo\n" >re.yaml &&
	expect_fail 3 skiff launch -c re re.yaml 2>err &&
	grep -q "re.yaml:2:8: runtime_env.pip requirements file .nonexistent-req.txt.: No such file or directory" err &&
	grep -q "runtime_env.working_dir .\./nodir.: No such file or directory" err &&
	no_cluster re &&
	printf "workdir:\n  url: \"\"\n  ref: \"\"\nrun: echo\n" >wd.yaml &&
	expect_fail 3 skiff check wd.yaml 2>err &&
	grep -q "wd.yaml:2:8: workdir.url cannot be empty" err
'

test_expect_success 'numbers are decimal: a hex cpus is refused' '
	printf "resources:\n  cpus: \"0x10\"\nrun: echo\n" >h.yaml &&
	expect_fail 3 skiff check h.yaml 2>err &&
	grep -q "h.yaml:2:9: resources.cpus must be a number like 4 or 4+, not .0x10." err
'

test_expect_success 'config: a bad layer gets its FILE:LINE:COL and exit 3, no "this is a bug"' '
	printf "kubernetes:\n  pod_confg: {}\n" >c.yaml &&
	{ SKIFF_CONFIG=$TRASH/c.yaml skiff config >out 2>err; rc=$?; } &&
	cat err && test $rc = 3 &&
	grep -q "c.yaml:2:3: unknown config key .kubernetes.pod_confg." err &&
	! grep -q "this is a bug" err &&
	printf "jobs:\n  controller:\n    resources:\n      infra: bogus/x\n" >j.yaml &&
	{ SKIFF_CONFIG=$TRASH/j.yaml skiff config >out 2>err; rc=$?; } &&
	test $rc = 3 &&
	grep -q "j.yaml:4:14: config jobs.controller.resources.infra: unknown infra .bogus/x." err
'

test_expect_success 'a submit the node refuses is said once; getopt prints nothing of its own' '
	skiff launch -c big "echo" >/dev/null 2>&1 &&
	expect_fail 3 skiff exec big --cpus 9999 "echo" 2>err &&
	test "$(grep -c "asks for 9999 CPUs" err)" = 1 &&
	grep -q "^skiff: error: node big-0: submit failed: the job asks for 9999 CPUs" err &&
	skiff down big >/dev/null &&
	expect_fail 2 env SKIFF_HOME="$TRASH/nodeh" "$SKIFF_BIN" node autostop -1 2>err &&
	test "$(wc -l <err)" = 1 && grep -q "unknown option .-1." err
'

test_expect_success 'SKIFF_EXE that is no executable: said, and the job runs all the same' '
	SKIFF_EXE=/nonexistent timeout 60 "$SKIFF_BIN" launch -c ex "echo ran" >out 2>err &&
	grep -qx ran out &&
	grep -q "SKIFF_EXE ./nonexistent. is not an executable file" \
		"$SKIFF_HOME/local/ex/0/.skiff/supervisor.log" &&
	skiff down ex >/dev/null
'

test_done
