#!/bin/sh
# Slurm infra against a real Slurm: slurmctld, four slurmds and munged started here with
# a private munge key and socket and a private slurm.conf (nothing in /etc is used).
# Partition solo is node tn0, a slurmd in this machine's own network namespace; partition
# gang is tn1..tn3, slurmds in the network namespaces of tests/lib/nodes.sh (10.200.0.1N,
# hostname tnN). launch, exec, queue, logs, cancel, stop refused, down on one node; a
# 3-node gang with SKYPILOT_NODE_RANK and SKYPILOT_NODE_IPS; an allocation cancelled from
# outside mid-job (logs --follow fails, status says ENDED); down releases the allocation;
# a partition Slurm does not have; autostop releases the allocation (the head decides: an
# idle worker leaves a busy head alone); the config's slurm.sbatch_options reach salloc.
# Root only (skipped otherwise, a failure in CI); installs slurm-wlm and munge if missing.
. "$(dirname "$0")/lib.sh"
. "$SRC_DIR/tests/lib/nodes.sh"

nodes_require_root
nodes_install_deps || { echo "Bail out! cannot install the packages the test nodes need"; exit 1; }

. "$SRC_DIR/tests/lib/slurm.sh"
slurm_install_deps || { echo "Bail out! cannot install slurm-wlm and munge"; exit 1; }

# The nodes' homes (SKIFF_SLURM_NODE_ROOT, default /tmp/skiff-slurm-UID) stay in $TRASH.
export SKIFF_SLURM_NODE_ROOT="$TRASH/nodes"

# slurm_start runs in a test body (a subshell): what it exports is set here too.
export SLURM_DIR="$TRASH/slurm"
export SLURM_CONF="$SLURM_DIR/slurm.conf" SLURM_DAEMONS="$SLURM_DIR/daemons"

job_of() { squeue -h -n "skiff-$1" -o %i 2>/dev/null; }

test_cleanup_hook() {
	slurm_stop
	nodes_down
}

test_expect_success 'Slurm with four nodes is up' '
	nodes_up 3 &&
	mkdir -p "$TRASH/nodes" &&
	chmod 755 "$TRASH" &&
	slurm_start "$TRASH/slurm" 3 &&
	sinfo -h -o "%P %D %T" >sinfo &&
	grep -q "^solo\* 1 idle" sinfo && grep -q "^gang 3 idle" sinfo
'

test_expect_success 'check lists the partitions as sinfo has them' '
	skiff check --infra slurm >out && cat out &&
	grep -qx "slurm: enabled: Slurm answers; partitions: solo (default), gang" out &&
	grep -q "^    PARTITION *DEFAULT *AVAIL *NODES *CPUS *MEMORY_MB *GRES *TIMELIMIT$" out &&
	grep -q "^    solo *yes *up *0/1/0/1 " out &&
	grep -q "^    gang *- *up *0/3/0/3 " out &&
	skiff check --json --infra slurm/gang >ck.json &&
	python3 -c "import json; r = json.load(open(\"ck.json\"))[0][\"inventory\"][0][\"rows\"]; assert [(x[\"partition\"], x[\"nodes\"]) for x in r] == [(\"gang\", \"0/3/0/3\")], r"
'

test_expect_success 'a partition Slurm does not have: salloc says so, nothing is booked' '
	! skiff launch -c nope --infra slurm/nosuch true 2>err &&
	grep -q "salloc for cluster nope on slurm/nosuch failed" err &&
	grep -qi "invalid partition" err &&
	skiff status >st.out && ! grep -q "^nope " st.out &&
	test -z "$(squeue -h -t all -n skiff-nope -o %i)"
'

test_expect_success 'launch on a one-node allocation' '
	skiff launch -c solo --infra slurm/solo "echo hello-\$SKYPILOT_NODE_RANK on \$(hostname)" >out 2>err &&
	grep -q "^hello-0 on " out &&
	test "$(squeue -h -n skiff-solo -o "%T %P %N")" = "RUNNING solo tn0" &&
	skiff status >st && grep -q "^solo  *slurm/solo .* UP " st
'

test_expect_success 'exec: a node home of its own, the allocation in the environment' '
	J=$(job_of solo) &&
	skiff exec solo "echo home=\$HOME job=\$SLURM_JOB_ID; pwd" >out &&
	grep -qx "home=$TRASH/nodes/$J/tn0 job=$J" out &&
	test -S "$TRASH/nodes/$J/tn0/.skiff/supervisor.sock"
'

test_expect_success 'the supervisor runs inside the allocation (a step of its own)' '
	J=$(job_of solo) &&
	squeue -h -s -j "$J" -o "%i %j" >steps &&
	grep -q "^$J\.[0-9]* sh$" steps
'

test_expect_success 'queue and logs' '
	skiff queue solo >q &&
	test "$(grep -c SUCCEEDED q)" = 2 &&
	skiff logs solo 1 >log &&
	grep -q "^hello-0 on " log &&
	skiff logs --status solo 2 >st && grep -qx "Job 2: SUCCEEDED" st
'

test_expect_success 'cancel a running job' '
	skiff exec -d solo "echo started; sleep 300" 2>err &&
	wait_for "skiff queue solo | grep -q \"^3 .*RUNNING\"" 20 &&
	skiff cancel solo 3 &&
	expect_fail 103 skiff logs --status solo 3 >st &&
	grep -qx "Job 3: CANCELLED" st
'

test_expect_success 'a lost supervisor step (its srun stopped) is started again by exec' '
	read -r pid st <"$SKIFF_HOME/slurm/solo/0.pid" &&
	kill -TERM "-$pid" &&
	wait_for "test -z \"\$(squeue -h -s -j $(job_of solo) -o %i)\"" 20 &&
	skiff exec solo "echo again" >out &&
	grep -qx again out &&
	read -r pid2 st2 <"$SKIFF_HOME/slurm/solo/0.pid" &&
	test "$pid2" != "$pid" &&
	test "$(squeue -h -s -j $(job_of solo) -o %j)" = sh
'

test_expect_success 'runtime_env on Slurm: working_dir and py_modules shipped over srun' '
	mkdir -p rwd rmod/skiffmod &&
	echo "print(\"wd ok\")" >rwd/main.py &&
	echo "X = 42" >rmod/skiffmod/__init__.py &&
	cat >renv.yaml <<-\EOF &&
	runtime_env:
	  working_dir: rwd
	  py_modules: [rmod/skiffmod]
	  env_vars: {RENV_VAR: from-renv}
	run: python3 main.py && python3 -c "import skiffmod; print(skiffmod.X)" && echo "$RENV_VAR"
	EOF
	{ skiff exec solo renv.yaml >out 2>err || { cat err out; exit 1; }; } &&
	grep -qx "wd ok" out && grep -qx 42 out && grep -qx from-renv out
'

test_expect_success 'a newer skiff leaves a busy cluster on its build; upgrades it when idle' '
	# Another build: the same program with other bytes, so another sha256.
	cp "$SKIFF_BIN" newskiff && printf "\n# another build\n" >>newskiff &&
	skiff exec -d solo "echo long; sleep 300" 2>err &&
	wait_for "skiff queue solo | grep -q RUNNING" 20 &&
	"$TRASH/newskiff" exec solo "echo from-new" >out 2>err &&
	grep -q "keeps that build until they have" err && grep -qx from-new out &&
	! grep -q "copied to" err &&
	skiff queue solo >q && grep -q RUNNING q &&
	skiff cancel solo -a >/dev/null &&
	wait_for "skiff queue solo >st.out && ! grep -q RUNNING st.out" 20 &&
	"$TRASH/newskiff" exec solo "echo upgraded" >out 2>err &&
	grep -qx upgraded out && grep -q "copied to 1" err &&
	skiff exec solo "echo back" >out 2>err && grep -qx back out
'

test_expect_success 'stop and start are refused on Slurm' '
	expect_fail 1 skiff stop solo 2>err &&
	grep -q "is a Slurm allocation" err &&
	expect_fail 1 skiff start solo 2>err &&
	grep -q "is a Slurm allocation" err
'

test_expect_success 'down releases the allocation and the node homes' '
	J=$(job_of solo) && test -n "$J" &&
	skiff down solo >out 2>err &&
	grep -q "cluster solo terminated" out &&
	test ! -e "$TRASH/nodes/$J/tn0" &&
	wait_for "test -z \"\$(squeue -h -n skiff-solo -o %i)\"" 20 &&
	skiff status >st.out && ! grep -q "^solo " st.out
'

test_expect_success 'the config'"'"'s slurm.sbatch_options reach salloc; --config wins over the file' '
	printf "slurm:\n  sbatch_options: {comment: from-file, time: \"25:00\"}\n" >cfg.yaml &&
	SKIFF_CONFIG=$TRASH/cfg.yaml &&
	export SKIFF_CONFIG &&
	skiff launch -c cfg --infra slurm/solo --config slurm.sbatch_options.comment=from-cli \
		"echo configured" >out 2>err &&
	grep -qx configured out &&
	test "$(squeue -h -n skiff-cfg -o "%k %l")" = "from-cli 25:00" &&
	skiff down cfg >/dev/null &&
	wait_for "test -z \"\$(squeue -h -n skiff-cfg -o %i)\"" 20
'

test_expect_success 'a 3-node gang: ranks, hostnames and SKYPILOT_NODE_IPS' '
	cat >gang.yaml <<-\EOF &&
	num_nodes: 3
	run: |
	  echo "rank=$SKYPILOT_NODE_RANK host=$(hostname) n=$SKYPILOT_NUM_NODES ips=$(echo $SKYPILOT_NODE_IPS)"
	EOF
	skiff launch -c gang --infra slurm/gang gang.yaml >out 2>err &&
	IPS="10.200.0.11 10.200.0.12 10.200.0.13" &&
	grep -q "rank=0 host=tn1 n=3 ips=$IPS" out &&
	grep -q "rank=1 host=tn2 n=3 ips=$IPS" out &&
	grep -q "rank=2 host=tn3 n=3 ips=$IPS" out &&
	test "$(squeue -h -n skiff-gang -o "%D %N")" = "3 tn[1-3]"
'

test_expect_success 'an allocation cancelled from outside mid-job is reported' '
	J=$(job_of gang) && test -n "$J" &&
	skiff exec -d gang --num-nodes 3 "echo up; sleep 300" 2>err &&
	wait_for "skiff queue gang | grep -q \"^2 .*RUNNING\"" 20 &&
	{ { skiff logs gang 2 --follow >follow.out 2>follow.err; echo $? >follow.rc; } & } &&
	wait_for "grep -q up follow.out" 20 &&
	scancel "$J" &&
	wait_for "test -s follow.rc" 15 &&
	cat follow.err &&
	test "$(cat follow.rc)" != 0 &&
	grep -q "Slurm allocation $J has ended" follow.err &&
	skiff status >st 2>st.err &&
	cat st st.err &&
	grep -q "^gang .* ENDED " st &&
	grep -q "allocation $J has ended" st.err
'

test_expect_success 'down after the allocation ended, and nothing is left in Slurm' '
	skiff down gang >out 2>err &&
	grep -q "cluster gang terminated" out &&
	grep -q "had already ended" err &&
	skiff status >st.out && ! grep -q "^gang " st.out &&
	wait_for "test -z \"\$(squeue -h -o %i)\"" 20
'

test_expect_success 'failover: a partition Slurm does not have, then one it has' '
	cat >fo.yaml <<-\EOF &&
	resources:
	  ordered:
	    - infra: slurm/nosuch
	    - infra: slurm/solo
	run: echo "on $(hostname)"
	EOF
	skiff launch -c fo fo.yaml >out 2>err &&
	cat err &&
	grep -q "salloc for cluster fo on slurm/nosuch failed" err &&
	grep -q "^on " out &&
	skiff status >st && grep -q "^fo  *slurm/solo .* UP " st &&
	skiff down fo >/dev/null &&
	wait_for "test -z \"\$(squeue -h -t running,pending -n skiff-fo -o %i)\"" 20
'

test_expect_success 'setup on every node of a 3-node allocation; run on one' '
	skiff launch -c st3 --infra slurm/gang --num-nodes 3 true >/dev/null 2>&1 &&
	J=$(job_of st3) && test -n "$J" &&
	cat >setup.yaml <<-\EOF &&
	setup: echo "setup $SKYPILOT_SETUP_NODE_RANK on $(hostname)" >"$HOME/setup.out"
	run: echo "run on $(hostname)"
	EOF
	skiff launch -c st3 setup.yaml >out 2>err &&
	grep -q "its setup on all 3" err &&
	grep -q ") run on tn1$" out &&
	for i in 1 2 3; do
		test "$(cat "$TRASH/nodes/$J/tn$i/setup.out")" = "setup $((i - 1)) on tn$i" || exit 1
	done &&
	skiff down st3 >/dev/null
'

# An autostop minute lasts one second here (SKIFF_TEST_MINUTE_MS, docs/testing.md).

test_expect_success 'autostop --down: the head releases the allocation; status forgets it' '
	SKIFF_TEST_MINUTE_MS=1000 skiff launch -c auto --infra slurm/solo -i 1 --down \
		--wait-for jobs true >out 2>err &&
	J=$(job_of auto) && test -n "$J" &&
	test -x "$TRASH/nodes/$J/tn0/.skiff/hooks/down" &&
	# The allocation ends by itself, before any skiff command looks.
	wait_for "test -z \"\$(squeue -h -t running -j $J -o %i 2>/dev/null)\"" 30 &&
	skiff status >st 2>err &&
	grep -q "cluster auto was torn down by autodown" err &&
	! grep -q "^auto " st
'

test_expect_success 'autostop without --down is a down on Slurm (an allocation cannot pause)' '
	SKIFF_TEST_MINUTE_MS=1000 skiff launch -c auto2 --infra slurm/solo -i 1 \
		--wait-for jobs true >out 2>err &&
	J=$(job_of auto2) && test -n "$J" &&
	wait_for "test -z \"\$(squeue -h -t running -j $J -o %i 2>/dev/null)\"" 30 &&
	skiff status >st 2>err &&
	grep -q "cluster auto2 was torn down by autodown" err &&
	! grep -q "^auto2 " st
'

test_expect_success 'on 2 nodes, an idle worker does not end the allocation of a busy head' '
	skiff launch -c two --infra slurm/gang --num-nodes 2 true >out 2>err &&
	J=$(job_of two) && test -n "$J" &&
	skiff exec -d two "sleep 4; echo done >\$HOME/head-done" 2>/dev/null &&
	wait_for "skiff queue two | grep -q \"^2 .*RUNNING\"" 20 &&
	SKIFF_TEST_MINUTE_MS=1000 skiff autostop two -i 1 --wait-for jobs >/dev/null &&
	# Only the head has hooks: a worker that fires stops its own supervisor, nothing more.
	test -x "$TRASH/nodes/$J/tn1/.skiff/hooks/stop" &&
	test ! -e "$TRASH/nodes/$J/tn2/.skiff/hooks/stop" &&
	wait_for "test -z \"\$(squeue -h -t running -j $J -o %i 2>/dev/null)\"" 60 &&
	# The head job ran to its end before the allocation was released.
	test "$(cat "$TRASH/nodes/$J/tn1/head-done")" = done &&
	skiff status >st 2>err &&
	grep -q "cluster two was torn down by autodown" err
'

test_done
