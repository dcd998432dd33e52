#!/bin/sh
# The node supervisor: lifecycle, job states, logs, cancel, scheduling.
. "$(dirname "$0")/lib.sh"

test_cleanup_hook() {
	skiff node down >/dev/null 2>&1
	# Anything a failed test left behind in this scratch dir.
	pkill -KILL -f "$TRASH" 2>/dev/null
}

# job_field ID FIELD: one field of a job from `node queue --json`.
job_field() {
	skiff node queue --json "$1" |
		python3 -c "import json,sys; j=json.load(sys.stdin)[0]; v=j['$2']; print(json.dumps(v) if isinstance(v,(list,dict)) else v)"
}
job_status() { job_field "$1" status; }

test_expect_success 'node up starts the supervisor; a second up says so' '
	skiff node up >out &&
	grep -q "^supervisor started (pid [0-9]*)" out && grep -qx "active 0" out &&
	skiff node up >out2 &&
	grep -q "^supervisor already running (pid [0-9]*)" out2 &&
	test "$(stat -c %a "$SKIFF_HOME")" = 700 &&
	test "$(stat -c %a "$SKIFF_HOME/supervisor.sock")" = 600 &&
	test "$(stat -c %a "$SKIFF_HOME/node.db")" = 600
'

test_expect_success 'node status --json has version, pid, uptime, resources, counts' '
	skiff node status --json >st.json &&
	python3 - <<-\EOF
	import json, os
	d = json.load(open("st.json"))
	for k in ("version", "pid", "uptime", "cpus", "memory", "gpus", "cpus_free",
	          "running", "pending"):
	    assert k in d, k
	assert d["cpus"] == os.cpu_count(), d
	assert d["memory"] > 0
	EOF
'

# Without the driver's directory, nvidia-smi counts the GPUs; the supervisor looks for it
# in its PATH before it starts one (spawn_findable()).
test_expect_success 'GPUs: nvidia-smi in the PATH lists them when the driver does not' '
	mkdir -p fakebin gpuhome &&
	printf "#!/bin/sh\nprintf \"0\\n1\\n\"\n" >fakebin/nvidia-smi &&
	chmod +x fakebin/nvidia-smi && test "$(fakebin/nvidia-smi | wc -l)" = 2 &&
	SKIFF_HOME=$PWD/gpuhome PATH=$PWD/fakebin:$PATH skiff node up >/dev/null &&
	SKIFF_HOME=$PWD/gpuhome skiff node status --json >gpu.json &&
	SKIFF_HOME=$PWD/gpuhome skiff node down >/dev/null &&
	python3 -c "import json,os; d = json.load(open(\"gpu.json\")); assert d[\"gpus\"] == 2 or os.path.isdir(\"/proc/driver/nvidia/gpus\"), d"
'

test_expect_success 'a command job succeeds; logs exit 0; queue shows exit code 0' '
	id=$(skiff node submit -n hello "echo hello from \$SKIFF_JOB_ID") &&
	skiff node logs "$id" >log &&
	grep -q "^hello from $id\$" log &&
	test "$(job_status $id)" = SUCCEEDED &&
	test "$(job_field $id exit_codes)" = "[0]"
'

test_expect_success 'a failing job is FAILED with its exit code; logs exits 100' '
	id=$(skiff node submit "echo out; echo err >&2; exit 3") &&
	expect_fail 100 skiff node logs "$id" >log &&
	grep -q "^out\$" log && grep -q "^err\$" log &&
	test "$(job_status $id)" = FAILED &&
	test "$(job_field $id exit_codes)" = "[3]"
'

test_expect_success 'a failing setup gives FAILED_SETUP, and run never starts' '
	cat >task.yaml <<-\EOF &&
	name: badsetup
	setup: echo setting up; exit 2
	run: touch ran-anyway
	EOF
	id=$(skiff node submit task.yaml) &&
	expect_fail 100 skiff node logs "$id" >log &&
	grep -q "setting up" log &&
	test "$(job_status $id)" = FAILED_SETUP &&
	test ! -e ran-anyway &&
	test -f "$(job_field $id log_dir)/setup.log"
'

test_expect_success 'setup then run: SETTING_UP is recorded, logs are separate files' '
	cat >task2.yaml <<-\EOF &&
	setup: echo in-setup
	run: echo in-run
	envs:
	  GREETING: null
	EOF
	expect_fail 3 skiff node submit task2.yaml 2>err &&
	grep -q GREETING err &&
	id=$(skiff node submit --env GREETING=hi task2.yaml) &&
	skiff node logs "$id" >/dev/null &&
	d=$(job_field $id log_dir) &&
	grep -q in-setup "$d/setup.log" && ! grep -q in-run "$d/setup.log" &&
	grep -q in-run "$d/run.log"
'

test_expect_success 'env values arrive verbatim (quotes, $(), newlines, spaces)' '
	v=$(printf "a b\"c'"'"'d \$(touch pwned) \`x\`\nline2") &&
	id=$(skiff node submit --env "V=$v" "printf %s \"\$V\" >envout") &&
	skiff node logs "$id" >/dev/null &&
	test ! -e pwned &&
	printf %s "$v" >want &&
	cmp want "$HOME/envout"
'

test_expect_success 'node submit runs the command alone; --profile runs it in the task shell' '
	# The task shell is SkyPilot make_task_bash_script prelude (sky/skylet/log_lib.py):
	# source ~/.bashrc, then the script. node submit is skiff primitive: no prelude.
	printf "export FROM_RC=yes ALSO=rc\ncd /\n" >"$HOME/.bashrc" &&
	cmd="echo \"rc=\${FROM_RC-unset} also=\${ALSO-unset} pwd=\$(pwd)\"" &&
	id=$(skiff node submit "$cmd") &&
	skiff node logs "$id" >plain &&
	id=$(skiff node submit --profile --env FROM_RC=env "$cmd") &&
	skiff node logs "$id" >profiled &&
	rm -f "$HOME/.bashrc" &&
	cat plain profiled &&
	grep -qx "rc=unset also=unset pwd=$HOME" plain &&
	grep -qx "rc=env also=rc pwd=$HOME" profiled &&
	grep -q "bashrc" "$SKIFF_HOME/logs/$id/run.sh" &&
	! grep -q "bashrc" "$SKIFF_HOME/logs/$((id - 1))/run.sh"
'

test_expect_success 'a plain command runs without a shell; what is not plain, or cannot be exec'"'"'d, in the shell' '
	# No bash in between: bash exports _ as the path of the program it runs, an exec
	# leaves the supervisor _.
	id=$(skiff node submit env) && skiff node logs "$id" >direct &&
	id=$(skiff node submit "env; true") && skiff node logs "$id" >shell &&
	grep -q "^_=/.*/env\$" shell &&
	! grep -q "^_=/.*/env\$" direct &&
	id=$(skiff node submit --cwd "$TRASH" printenv PWD) &&
	test "$(skiff node logs "$id")" = "$TRASH" &&
	id=$(skiff node submit --cwd "$TRASH" nosuch-skiff-program a) &&
	expect_fail 100 skiff node logs "$id" >log &&
	grep -q "nosuch-skiff-program: command not found" log &&
	test "$(job_field $id exit_codes)" = "[127]" &&
	printf "echo ran without a shebang\n" >"$TRASH/nsb" && chmod +x "$TRASH/nsb" &&
	id=$(skiff node submit --cwd "$TRASH" ./nsb) &&
	test "$(skiff node logs "$id")" = "ran without a shebang" &&
	id=$(skiff node submit exit 3) && expect_fail 100 skiff node logs "$id" &&
	test "$(job_field $id exit_codes)" = "[3]" &&
	id=$(skiff node submit cd /) && skiff node logs "$id" &&
	id=$(skiff node submit true) && skiff node logs "$id" &&
	id=$(skiff node submit false) && expect_fail 100 skiff node logs "$id" &&
	test "$(job_field $id exit_codes)" = "[1]" &&
	id=$(skiff node submit echo a "  " b) &&
	test "$(skiff node logs "$id")" = "a b"
'

test_expect_success 'the task shell of a plain command: none where its prelude would do nothing' '
	# HOME has no .bashrc (the test before removed it) and PATH no conda: --profile
	# (a task job) execs env as node submit does.
	test ! -e "$HOME/.bashrc" &&
	id=$(skiff node submit --profile env) && skiff node logs "$id" >direct &&
	! grep -q "^_=/.*/env\$" direct &&
	# A .bashrc to source: the prelude runs it.
	echo "export FROM_RC=yes" >"$HOME/.bashrc" &&
	id=$(skiff node submit --profile env) && skiff node logs "$id" >rc &&
	rm -f "$HOME/.bashrc" &&
	grep -qx FROM_RC=yes rc &&
	# conda in PATH, executable or not: the prelude looks for its profile.
	mkdir -p "$TRASH/condabin" && : >"$TRASH/condabin/conda" &&
	id=$(skiff node submit --profile --env PATH="$TRASH/condabin:$PATH" env) &&
	skiff node logs "$id" >conda &&
	grep -q "^_=/.*/env\$" conda &&
	# What bash reads from its environment before a script: the shell runs it, with or
	# without the prelude.
	echo "echo bash_env ran" >"$TRASH/benv" &&
	id=$(skiff node submit --env BASH_ENV="$TRASH/benv" env) &&
	skiff node logs "$id" >benv.out &&
	grep -qx "bash_env ran" benv.out &&
	id=$(skiff node submit --env SHELLOPTS=xtrace env) &&
	skiff node logs "$id" >xtrace.out &&
	grep -qx "+ env" xtrace.out
'

test_expect_success 'logs: unknown job is 102; --status; --no-follow; --tail' '
	expect_fail 102 skiff node logs 99999 &&
	id=$(skiff node submit "for i in 1 2 3 4 5; do echo line\$i; done") &&
	skiff node logs "$id" >/dev/null &&
	skiff node logs --status "$id" >s && test "$(cat s)" = SUCCEEDED &&
	skiff node logs --no-follow --tail 2 "$id" >t &&
	printf "line4\nline5\n" >want && test_cmp want t
'

test_expect_success 'submit --follow: the id line, then the logs; the exit code of logs' '
	skiff node submit --follow "echo one; sleep 0.3; echo two" >out 2>err &&
	id=$(head -n1 out) && test "$id" -gt 0 &&
	printf "one\ntwo\n" >want && tail -n +2 out >got && test_cmp want got &&
	grep -q "^skiff: job $id finished (status: SUCCEEDED)" err &&
	test "$(job_status "$id")" = SUCCEEDED &&
	expect_fail 100 skiff -q node submit --follow "echo bad; exit 7" >out 2>err &&
	id=$(head -n1 out) && test "$(sed -n 2p out)" = bad && test ! -s err &&
	test "$(job_field "$id" exit_codes)" = "[7]" &&
	printf "run: echo spec\n" >s.yaml &&
	skiff node submit --json --follow s.yaml >out &&
	head -n1 out | grep -q "^{\"id\":[0-9]*,\"log_dir\":\"" &&
	test "$(sed -n 2p out)" = spec
'

test_expect_success 'followers hear of the end from the supervisor, else from the db' '
	skiff node up --cpus 1 >/dev/null &&
	a=$(skiff node submit --cpus 1 \
		"echo a-started; while [ ! -e gate7 ]; do $(nap 0.1); done; echo a-done") &&
	wait_for "test \"\$(job_status $a)\" = RUNNING" &&
	# A follower of a job that never starts: its cancel ends the follow (103).
	{ { skiff node submit --follow --cpus 1 "echo never" >b.out 2>b.err; echo $? >b.rc; } & } &&
	wait_for "test -s b.out" &&
	b=$(head -n1 b.out) && test "$(job_status $b)" = PENDING &&
	skiff node cancel "$b" >/dev/null &&
	wait_for "test -s b.rc" && test "$(cat b.rc)" = 103 &&
	grep -q "job $b finished (status: CANCELLED)" b.err &&
	{ skiff node logs --status --wait "$a" >c.out 2>&1 & } &&
	# The supervisor goes away while they follow: they finish from the db.
	{ { skiff node logs "$a" >a.out 2>a.err; echo $? >a.rc; } & } &&
	wait_for "grep -q a-started a.out" &&
	skiff node down >/dev/null &&
	touch "$HOME/gate7" &&
	wait_for "test -s a.rc" 10 && test "$(cat a.rc)" = 0 &&
	printf "a-started\na-done\n" >want && test_cmp want a.out &&
	grep -q "job $a finished (status: SUCCEEDED)" a.err &&
	wait_for "grep -q SUCCEEDED c.out" 10
'

test_expect_success 'a follower whose reader went ends at once, not at the job'"'"'s next line or end' '
	skiff node up >/dev/null &&
	id=$(skiff node submit "echo quiet-start; sleep 1000") &&
	wait_for "test \"\$(job_status $id)\" = RUNNING" &&
	mkfifo lf &&
	{ skiff node logs "$id" >lf 2>/dev/null & } && fpid=$! &&
	head -n 1 lf >first &&
	# head has read its line and gone: the pipe has no reader, the log writes nothing.
	grep -qx quiet-start first &&
	wait_for "! kill -0 $fpid 2>/dev/null" 20 &&
	test "$(job_status $id)" = RUNNING &&
	skiff node cancel "$id" >/dev/null
'

test_expect_success 'cancel a running job: CANCELLED, exit 103, grandchildren killed' '
	skiff node up --cancel-grace 2 >/dev/null &&
	# The escaped process leaves the session and process group of the job.
	id=$(skiff node submit "setsid sleep 7$$ & sh -c \"sleep 8$$\" & wait") &&
	wait_for "test \"\$(job_status $id)\" = RUNNING" &&
	wait_for "pgrep -f \"^sleep 7$$\" >/dev/null && pgrep -f \"^sleep 8$$\" >/dev/null" &&
	esc=$(pgrep -f "^sleep 7$$") &&
	test "$(ps -o sid= -p $esc)" != "$(ps -o sid= -p $(pgrep -f "^sleep 8$$"))" &&
	skiff node cancel "$id" >out &&
	grep -q "cancelled 1 job(s): $id" out &&
	wait_for "test \"\$(job_status $id)\" = CANCELLED" &&
	expect_fail 103 skiff node logs --status "$id" &&
	wait_for "! pgrep -f \"^sleep 7$$\" >/dev/null" 5 &&
	! pgrep -f "^sleep 8$$"
'

test_expect_success 'a job that ignores SIGTERM is SIGKILLed after the grace period' '
	id=$(skiff node submit "trap \"\" TERM; sleep 6$$; true") &&
	wait_for "pgrep -f \"^sleep 6$$\" >/dev/null" &&
	skiff node cancel "$id" >/dev/null &&
	# 2 s of grace, then SIGKILL: 30 s leaves room for a loaded machine (10 s did not once).
	wait_for "test \"\$(job_status $id)\" = CANCELLED" 30 &&
	test "$(job_field $id exit_codes)" = "[137]" &&
	wait_for "! pgrep -f \"^sleep 6$$\" >/dev/null" 5
'

test_expect_success 'cancel --all, and cancelling an ended job says so' '
	a=$(skiff node submit "sleep 1000") && b=$(skiff node submit "sleep 1000") &&
	skiff node cancel --all >out &&
	grep -q "cancelled 2 job(s)" out &&
	wait_for "test \"\$(job_status $a)\" = CANCELLED" &&
	wait_for "test \"\$(job_status $b)\" = CANCELLED" &&
	skiff node cancel "$a" >out2 &&
	grep -q "already ended" out2 &&
	expect_fail 102 skiff node cancel 424242
'

test_expect_success 'cancel of an id with of_key: only while that id is the job of the key' '
	id=$(skiff node submit --cpus 0 --key k-ours-$$ "sleep 9$$") &&
	wait_for "test \"\$(job_status $id)\" = RUNNING" &&
	sock_req "$SKIFF_HOME/supervisor.sock" "op|cancel|id|$id|of_key|k-other-$$|" >r1 &&
	grep -q "missing $id ok 1" r1 &&
	test "$(job_status $id)" = RUNNING &&
	sock_req "$SKIFF_HOME/supervisor.sock" "op|cancel|id|$id|of_key||" >r2 &&
	grep -q "bad of_key" r2 &&
	sock_req "$SKIFF_HOME/supervisor.sock" "op|cancel|id|$id|of_key|k-ours-$$|" >r3 &&
	grep -q "cancelled $id" r3 &&
	wait_for "test \"\$(job_status $id)\" = CANCELLED"
'

test_expect_success 'backfill: a small job runs while a large one waits' '
	skiff node up --cpus 2 --max-bypass 20 >/dev/null &&
	big1=$(skiff node submit --cpus 1.5 "while [ ! -e gate1 ]; do $(nap 0.1); done") &&
	wait_for "test \"\$(job_status $big1)\" = RUNNING" &&
	big2=$(skiff node submit --cpus 2 "true") &&
	small=$(skiff node submit --cpus 0.5 "true") &&
	wait_for "test \"\$(job_status $small)\" = SUCCEEDED" &&
	test "$(job_status $big2)" = PENDING &&
	touch "$HOME/gate1" &&
	wait_for "test \"\$(job_status $big2)\" = SUCCEEDED"
'

test_expect_success 'a starving job blocks further backfill (max-bypass)' '
	skiff node up --cpus 4 --max-bypass 1 >/dev/null &&
	a=$(skiff node submit --cpus 3 "while [ ! -e gate2 ]; do $(nap 0.1); done") &&
	wait_for "test \"\$(job_status $a)\" = RUNNING" &&
	b=$(skiff node submit --cpus 4 "true") &&
	c=$(skiff node submit --cpus 0.5 "while [ ! -e gate2 ]; do $(nap 0.1); done") &&
	wait_for "test \"\$(job_status $c)\" = RUNNING" &&
	d=$(skiff node submit --cpus 0.5 "true") &&
	skiff node status --json >st && grep -q "\"cpus_free\": 0.5" st &&
	test "$(job_status $d)" = PENDING &&
	touch "$HOME/gate2" &&
	wait_for "test \"\$(job_status $d)\" = SUCCEEDED" &&
	test "$(job_status $b)" = SUCCEEDED &&
	b_start=$(job_field $b started_at) && d_start=$(job_field $d started_at) &&
	python3 -c "import sys; sys.exit(0 if $b_start <= $d_start else 1)"
'

test_expect_success 'priority: a higher-priority job starts first' '
	skiff node up --cpus 1 --max-bypass 0 >/dev/null &&
	a=$(skiff node submit --cpus 1 "while [ ! -e gate3 ]; do $(nap 0.1); done") &&
	wait_for "test \"\$(job_status $a)\" = RUNNING" &&
	lo=$(skiff node submit --cpus 1 --priority -5 "sleep 0.2") &&
	hi=$(skiff node submit --cpus 1 --priority 7 "sleep 0.2") &&
	touch "$HOME/gate3" &&
	wait_for "test \"\$(job_status $lo)\" = SUCCEEDED" &&
	python3 -c "import sys; sys.exit(0 if $(job_field $hi started_at) < $(job_field $lo started_at) else 1)"
'

test_expect_success 'GPUs are packed and given as CUDA_VISIBLE_DEVICES' '
	skiff node up --cpus 8 --gpus 2 --max-bypass 20 >/dev/null &&
	a=$(skiff node submit --gpus 1 --cpus 0 "echo gpu=\$CUDA_VISIBLE_DEVICES; while [ ! -e gate4 ]; do $(nap 0.1); done") &&
	b=$(skiff node submit --gpus 1 --cpus 0 "echo gpu=\$CUDA_VISIBLE_DEVICES; while [ ! -e gate4 ]; do $(nap 0.1); done") &&
	c=$(skiff node submit --gpus 1 --cpus 0 "echo gpu=\$CUDA_VISIBLE_DEVICES") &&
	wait_for "test \"\$(job_status $b)\" = RUNNING" &&
	test "$(job_status $c)" = PENDING &&
	touch "$HOME/gate4" &&
	skiff node logs $a >la && skiff node logs $b >lb && skiff node logs $c >lc &&
	sort la lb | tr "\n" " " >both && test "$(cat both)" = "gpu=0 gpu=1 " &&
	grep -q "^gpu=[01]\$" lc &&
	expect_fail 1 skiff node submit --gpus 3 true 2>err && grep -q "has 8 CPUs" err
'

test_expect_success 'a job asking for more than the node has is refused' '
	expect_fail 1 skiff node submit --cpus 64 true 2>err &&
	grep -q "asks for 64 CPUs" err
'

test_expect_success 'node down leaves jobs running; node up re-adopts them' '
	skiff node up --cpus 8 >/dev/null &&
	id=$(skiff node submit "while [ ! -e gate5 ]; do $(nap 0.1); done; exit 4") &&
	wait_for "test \"\$(job_status $id)\" = RUNNING" &&
	skiff node down >out && grep -q "1 job(s) keep running" out &&
	touch "$HOME/gate5" &&
	wait_for "test \"\$(job_status $id)\" = FAILED" &&
	test "$(job_field $id exit_codes)" = "[4]"
'

test_expect_success 'kill -9 of a shim: FAILED_DRIVER, and the job is killed' '
	id=$(skiff node submit "sleep 5$$; true") &&
	wait_for "pgrep -f \"^sleep 5$$\" >/dev/null" &&
	# Ours alone: a script beside this one has a job of the same id.
	shim=$(own_pids $(pgrep -f "__shim $id\$")) &&
	test -n "$shim" &&
	kill -9 $shim &&
	wait_for "test \"\$(job_status $id)\" = FAILED_DRIVER" &&
	job_field $id reason | grep -q "killed by signal 9" &&
	wait_for "! pgrep -f \"^sleep 5$$\" >/dev/null" 5
'

# shellcheck source=tests/lib/frames.sh
. "$SRC_DIR/tests/lib/frames.sh"

# The launcher asks a node for some jobs by id (a cancel's batch, a queue of a cluster's
# jobs): each is looked up, in id order, once; an id the node lacks or a word names none.
test_expect_success 'node call queue of some ids: those jobs, by id, once; active: only the live ones' '
	a=$(skiff node submit true) &&
	b=$(skiff node submit "sleep 7$$") &&
	wait_for "test \"\$(job_status $a)\" = SUCCEEDED" &&
	wait_for "test \"\$(job_status $b)\" = RUNNING" &&
	python3 -c "$frame_py" op queue id $b id $a id $b id 99999 id x >req &&
	skiff node call <req >ans &&
	python3 -c "$frames_py" ans | sed "s/ .*status=\([A-Z_]*\) .*/ \1/" >got &&
	printf "job=%s SUCCEEDED\njob=%s RUNNING\nok=1 end=1 count=2\n" $a $b >want &&
	test_cmp want got &&
	python3 -c "$frame_py" op queue active 1 id $a id $b >req &&
	skiff node call <req >ans &&
	python3 -c "$frames_py" ans | sed "s/ .*status=\([A-Z_]*\) .*/ \1/" >got &&
	printf "job=%s RUNNING\nok=1 end=1 count=1\n" $b >want &&
	test_cmp want got &&
	skiff node cancel $b >/dev/null
'

# A launcher on the supervisor's socket (a local node's, or an ssh master's forward of it)
# asks for a followed submit's logs on the same connection ("stream"): the supervisor
# answers and holds it; a job that ends within 100 ms gets its logs from the supervisor,
# one that runs on from a `node stream` it starts then, which ends when the launcher goes.
# stream.py LOGS [KEY VALUE]...: sends one submit frame of those fields, with follow and
# stream; prints the answer's fields and writes the raw bytes after it to the file LOGS
# (-N: closes N seconds after the answer came instead; "twice": sends the frame twice on
# the one connection and writes all that came back to the file twice.out).
cat >"$TRASH/stream.py" <<\EOF
import os, socket, struct, sys, time
logs, args = sys.argv[1], sys.argv[2:]
f = [("op", "submit"), ("follow", "1"), ("stream", "1")] + list(zip(args[::2], args[1::2]))
body = b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in f)
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["SKIFF_HOME"] + "/supervisor.sock")
s.sendall((struct.pack(">I", len(body)) + body) * (2 if logs == "twice" else 1))
data = b""
while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0] or logs[0] != "-":
    x = s.recv(65536)
    if not x:
        break
    data += x
n = struct.unpack(">I", data[:4])[0]
v = data[4:4 + n].split(b"\0")[:-1]
print(" ".join(k.decode() + "=" + x.decode() for k, x in zip(v[::2], v[1::2])), flush=True)
if logs[0] == "-":
    time.sleep(float(logs[1:]))
elif logs == "twice":
    open("twice.out", "wb").write(data)
else:
    open(logs, "wb").write(data[4 + n:])
EOF
test_expect_success 'a followed submit with stream: its logs on the same connection' '
	python3 "$TRASH/stream.py" logs run "echo a; echo b" submit_key s0.$$ cpus 0 >got &&
	id=$(sed -n "s/.* id=\([0-9]*\) .*/\1/p" got) && test -n "$id" &&
	grep -q "^ok=1 id=$id log_dir=.* follow=1 stream=1$" got &&
	printf "a\nb\n" >want && test_cmp want logs &&
	test "$(job_status $id)" = SUCCEEDED &&
	python3 "$TRASH/stream.py" logs run "echo a; sleep 0.4; echo b" submit_key s1.$$ cpus 0 >got &&
	id=$(sed -n "s/.* id=\([0-9]*\) .*/\1/p" got) &&
	test_cmp want logs && test "$(job_status $id)" = SUCCEEDED &&
	python3 "$TRASH/stream.py" logs run "echo other" submit_key s1.$$ cpus 0 >got &&
	grep -q "^ok=1 id=$id log_dir=.* existing=1 follow=1 stream=1$" got &&
	test_cmp want logs &&
	{ python3 "$TRASH/stream.py" -2 run "sleep 71$$" submit_key s2.$$ cpus 0 >got & } &&
	wait_for "pgrep -f \"node stream [0-9]* $SKIFF_HOME/logs/[0-9]* a \" >/dev/null" 10 &&
	wait_for "grep -q stream=1 got" &&
	id=$(sed -n "s/.* id=\([0-9]*\) .*/\1/p" got) &&
	wait_for "! pgrep -f \"node stream $id $SKIFF_HOME/\" >/dev/null" 20 &&
	test "$(job_status $id)" = RUNNING &&
	skiff node cancel $id >/dev/null &&
	# More than the supervisor sends itself (1 MiB): a node stream sends it, whole.
	python3 "$TRASH/stream.py" logs run "head -c 1200000 /dev/zero | tr \"\\\\0\" x" \
		submit_key s4.$$ cpus 0 >got &&
	test "$(wc -c <logs)" = 1200000 && test "$(tr -d x <logs | wc -c)" = 0 &&
	# Two on one connection: the second takes the first one'"'"'s place; nothing is lost.
	python3 "$TRASH/stream.py" twice run "echo twice" submit_key s3.$$ cpus 0 >got &&
	grep -q "^ok=1 id=[0-9]* log_dir=.* follow=1 stream=1$" got &&
	grep -q "twice" twice.out &&
	skiff node status >/dev/null
'

test_expect_success 'bad input to node commands: clear errors' '
	expect_fail 2 skiff node submit 2>/dev/null &&
	expect_fail 1 skiff node submit --priority 5000 true 2>err &&
	grep -q "bad priority" err &&
	expect_fail 2 skiff node logs notanumber 2>/dev/null &&
	expect_fail 2 skiff node cancel 2>/dev/null &&
	expect_fail 2 skiff node queu 2>err && grep -q "did you mean .queue." err
'

test_done
