#!/bin/sh
# A task's environment and its YAML's env semantics, as SkyPilot's, on local infra: the
# job's shell (profiles, conda, envs, cwd), a node environment independent of the
# launcher's, ${VAR} in file_mounts and workdir, job ids in SKYPILOT_* envs.
. "$(dirname "$0")/lib.sh"

test_cleanup_hook() {
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
	grep -q "^(rank 1, 127.0.0.1) SKYPILOT_NODE_RANK is set to 1\$" out &&
	grep -q "^(rank 0, 127.0.0.1) SKYPILOT_TASK_ID is set to sky-" out &&
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

test_done
