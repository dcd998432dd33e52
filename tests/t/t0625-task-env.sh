#!/bin/sh
# A task's environment and its YAML's env semantics, as SkyPilot's, on local infra: the
# job's shell (profiles, conda, envs, cwd), a node environment independent of the
# launcher's, ${VAR} in file_mounts and workdir, job ids in SKYPILOT_* envs.
. "$(dirname "$0")/lib.sh"

export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_IDLE_S=3

test_cleanup_hook() {
	f=$SKIFF_HOME/jobs/controller.lock
	if [ -f "$f" ] && ! flock -n "$f" true 2>/dev/null; then
		kill -KILL "$(head -1 "$f")" 2>/dev/null
	fi
	for c in $(skiff status --json 2>/dev/null | python3 -c "import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
		skiff down "$c" >/dev/null 2>&1
	done
	pkill -KILL -f "$TRASH" 2>/dev/null
}

node_home() {
	echo "$SKIFF_HOME/local/$1/${2:-0}"
}

test_expect_success "SkyPilot's examples/env_check.yaml passes on a 2-node cluster" '
	cp "$SRC_DIR/tests/corpus/skypilot-yaml/env_check.yaml" . &&
	skiff launch -c ec env_check.yaml >out 2>err &&
	grep -q "^(worker1, rank=1, pid=[0-9]*, ip=127.0.0.1) SKYPILOT_NODE_RANK is set to 1\$" out &&
	grep -q "^(head, rank=0, pid=[0-9]*) SKYPILOT_TASK_ID is set to sky-" out &&
	test "$(grep -c ") TEST_VAR is set to test\$" out)" = 2
'

test_expect_success 'a .bashrc that returns early for a non-interactive shell is sourced up to there' '
	h=$(node_home ec) &&
	printf "export BEFORE=yes\ncase \$- in *i*) ;; *) return ;; esac\nexport AFTER=yes\n" >"$h/.bashrc" &&
	skiff exec ec "echo \"before=\$BEFORE after=\${AFTER-unset}\"" >out 2>err &&
	grep -q "^before=yes after=unset\$" out
'

test_expect_success 'the task envs win over the .bashrc; the job runs in its workdir even if .bashrc cds' '
	h=$(node_home ec) &&
	printf "export MYVAR=from-bashrc\nexport PYTHONUNBUFFERED=0\ncd /\n" >"$h/.bashrc" &&
	mkdir -p wd && echo here >wd/marker &&
	cat >wd.yaml <<-\EOF &&
	workdir: ./wd
	envs:
	  MYVAR: from-yaml
	run: echo "myvar=$MYVAR unbuf=$PYTHONUNBUFFERED pwd=$(pwd) $(cat marker)"
	EOF
	skiff exec ec --env MYVAR=from-flag wd.yaml >out 2>err &&
	grep -q "^myvar=from-flag unbuf=1 pwd=$h/sky_workdir here\$" out &&
	skiff exec ec wd.yaml >out 2>err &&
	grep -q "^myvar=from-yaml " out
'

test_expect_success "conda's profile is sourced when conda is installed; its functions reach children" '
	h=$(node_home ec) &&
	mkdir -p "$h/fakeconda/bin" "$h/fakeconda/etc/profile.d" &&
	cat >"$h/fakeconda/bin/conda" <<-EOF &&
	#!/bin/sh
	test "\$1 \$2" = "info --base" && echo "$h/fakeconda"
	EOF
	chmod +x "$h/fakeconda/bin/conda" &&
	echo "conda_hello() { echo hello from conda; }" >"$h/fakeconda/etc/profile.d/conda.sh" &&
	echo "export PATH=\"$h/fakeconda/bin:\$PATH\"" >"$h/.bashrc" &&
	skiff exec ec "conda_hello; bash -c conda_hello" >out 2>err &&
	test "$(grep -c "^hello from conda\$" out)" = 2 &&
	rm -f "$h/.bashrc"
'

test_expect_success 'without conda or a .bashrc the job still runs (no stray output)' '
	skiff exec ec "echo plain" >out 2>err &&
	test "$(cat out)" = plain
'

test_expect_success 'a job does not see the launcher environment, only its --env (local infra)' '
	FOO_LEAK=1 TERM=xterm-leak skiff launch -c leak --env BAR_GIVEN=2 \
		"echo \"foo=\${FOO_LEAK-unset} bar=\$BAR_GIVEN term=\$(printenv TERM || echo unset) home=\$HOME path=\$PATH\"" \
		>out 2>err &&
	grep -q "^foo=unset bar=2 term=unset home=$(node_home leak) path=/usr/local/sbin:" out &&
	FOO_LEAK=2 skiff exec leak "echo \"foo=\${FOO_LEAK-unset} user=\$USER\"" >out 2>err &&
	grep -q "^foo=unset user=$(id -un)\$" out
'

test_expect_success 'no file of skiff lies in a synced tree on the node' '
	h=$(node_home ec) &&
	test -f "$h/sky_workdir/marker" &&
	test -z "$(cd "$h/sky_workdir" && ls -A | grep -v "^marker\$")"
'

test_expect_success 'SKYPILOT_INTERNAL_JOB_ID is the id queue shows on every rank, not the node one' '
	# rank 1 ran fewer jobs than rank 0 so far: its node ids lag the cluster ids
	skiff exec ec --num-nodes 2 "echo id=\$SKYPILOT_INTERNAL_JOB_ID node=\$SKIFF_JOB_ID" >out 2>err &&
	id=$(skiff queue ec --json | python3 -c "import json,sys; print(json.load(sys.stdin)[-1][\"id\"])") &&
	test "$(grep -c ") id=$id node=" out)" = 2 &&
	grep "^(worker1, rank=1," out | grep -qv "node=$id\$"
'

test_expect_success 'a pipeline: every task sees SKYPILOT_TASK_IDS, one id per task, its own among them' '
	cat >pipe.yaml <<-\EOF &&
	name: pipe
	---
	name: one
	run: echo "one $SKYPILOT_TASK_ID ids=$(printf %s "$SKYPILOT_TASK_IDS" | tr "\n" ,)"
	---
	name: two
	run: echo "two $SKYPILOT_TASK_ID ids=$(printf %s "$SKYPILOT_TASK_IDS" | tr "\n" ,)"
	EOF
	skiff jobs launch pipe.yaml >out 2>err &&
	id=$(head -1 out) &&
	one=$(sed -n "s/^one \([^ ]*\) .*/\1/p" out) && two=$(sed -n "s/^two \([^ ]*\) .*/\1/p" out) &&
	case "$one" in sky-managed-*_pipe_$id-0) ;; *) false ;; esac &&
	case "$two" in sky-managed-*_pipe_$id-1) ;; *) false ;; esac &&
	grep -qx "one $one ids=$one,$two" out &&
	grep -qx "two $two ids=$one,$two" out
'

test_expect_success '${VAR} and $VAR in file_mounts (both sides) and workdir, --env winning; relative mounts land in the workdir' '
	mkdir -p src-13b src-70b wd-70b && echo "13b weights" >src-13b/w && echo "70b weights" >src-70b/w &&
	echo code >wd-70b/main.py && echo notes >notes-70b.txt &&
	cat >fm.yaml <<-EOF &&
	envs:
	  SIZE: 13b
	  HERE: $TRASH
	workdir: \${HERE}/wd-\$SIZE
	file_mounts:
	  /tmp/skiff-t0625-$$/ckpt-\${SIZE}: \$HERE/src-\${SIZE}
	  rel/notes.txt: \$HERE/notes-\$SIZE.txt
	run: |
	  cat /tmp/skiff-t0625-$$/ckpt-70b/w ~/sky_workdir/rel/notes.txt main.py
	EOF
	skiff launch -c ec --env SIZE=70b fm.yaml >out 2>err &&
	grep -q "^70b weights\$" out && grep -q "^notes\$" out && grep -q "^code\$" out &&
	test -f "$(node_home ec)/sky_workdir/rel/notes.txt" &&
	skiff check --json --env SIZE=70b fm.yaml >c.json &&
	python3 -c "import json; t = json.load(open(\"c.json\"))[0][\"tasks\"][0]; assert \"~/sky_workdir/rel/notes.txt\" in t[\"file_mounts\"], t" &&
	rm -rf /tmp/skiff-t0625-$$
'

test_expect_success 'a one-command job leaves no shell behind: bash execs the command' '
	skiff exec ec -d "sleep 77$$" >/dev/null 2>&1 &&
	wait_for "pgrep -f \"^sleep 77$$\" >/dev/null" &&
	pid=$(pgrep -f "^sleep 77$$") &&
	ppid=$(ps -o ppid= -p "$pid" | tr -d " ") &&
	tr "\000" " " <"/proc/$ppid/cmdline" | grep -q " __shim " &&
	skiff cancel ec >/dev/null &&
	wait_for "! pgrep -f \"^sleep 77$$\" >/dev/null"
'

test_done
