#!/bin/sh
# skiff check: task YAML validation, hostile input, overrides, --json, and the SkyPilot corpus.
. "$(dirname "$0")/lib.sh"

# check_fails CODE FILE PATTERN: `skiff check FILE` exits CODE (never a crash) and prints
# exactly one line on stderr, "FILE:LINE:COL: message", whose message matches PATTERN.
check_fails() {
	want=$1 file=$2 pattern=$3
	timeout 5 "$SKIFF_BIN" check "$file" >out 2>err
	got=$?
	cat err
	if [ "$got" != "$want" ]; then
		echo "expected exit $want, got $got" >&2
		return 1
	fi
	[ "$(wc -l <err)" = 1 ] || { echo "expected one line on stderr" >&2; return 1; }
	grep -q "^$file:[0-9][0-9]*:[0-9][0-9]*: " err || { echo "not FILE:LINE:COL:" >&2; return 1; }
	grep -q -- "$pattern" err || { echo "no '$pattern' in the message" >&2; return 1; }
}

test_expect_success 'a valid task passes' '
	printf "name: hello\nresources:\n  cpus: 2+\nrun: echo hi\n" >task.yaml &&
	skiff check task.yaml >out 2>err &&
	grep -q "^task.yaml: ok$" out &&
	test ! -s err
'

test_expect_success 'help starts with the usage line and documents the exit codes' '
	skiff check --help >out &&
	head -1 out | grep -q "^usage: skiff check" &&
	grep -q "Exit status" out &&
	grep -q -- "--env-file" out
'

test_expect_success 'a misspelled key is an error with a did-you-mean at its line' '
	printf "name: x\nressources:\n  cpus: 2\nrun: x\n" >typo.yaml &&
	check_fails 3 typo.yaml "unknown field .ressources.; did you mean .resources.?" &&
	grep -q "^typo.yaml:2:1: " err
'

test_expect_success 'a misspelled resources key too' '
	printf "resources:\n  acelerators: H100:8\n" >typo2.yaml &&
	check_fails 3 typo2.yaml "did you mean .accelerators.?" &&
	grep -q "^typo2.yaml:2:3: " err
'

test_expect_success 'several errors are each one line' '
	printf "num_nodes: two\nrun: [a]\nresources:\n  cpus: lots\n" >many.yaml &&
	expect_fail 3 skiff check many.yaml 2>err &&
	test $(wc -l <err) = 3 &&
	grep -q "^many.yaml:1:12: num_nodes must be an integer, not a string$" err &&
	grep -q "^many.yaml:2:6: run must be a string, not a list$" err &&
	grep -q "^many.yaml:4:9: resources.cpus must be a number like 4 or 4+" err
'

# What launch reads from this machine is checked here, before any node is made.
test_expect_success 'a missing workdir, a loop, a missing file mount: one error, exit 3' '
	printf "workdir: ./nowd\nrun: x\n" >nowd.yaml &&
	check_fails 3 nowd.yaml "workdir .\./nowd.: No such file or directory" &&
	grep -q "^nowd.yaml:1:10: " err &&
	ln -s loopwd loopwd &&
	printf "workdir: loopwd\nrun: x\n" >loopwd.yaml &&
	check_fails 3 loopwd.yaml "workdir .loopwd.: " &&
	: >afile && printf "workdir: afile\nrun: x\n" >fwd.yaml &&
	check_fails 3 fwd.yaml "workdir .afile.: not a directory" &&
	printf "file_mounts:\n  /r: ~/nope\nrun: x\n" >nom.yaml &&
	check_fails 3 nom.yaml "file_mounts source .$HOME/nope. (for /r): No such file or directory" &&
	grep -q "^nom.yaml:2:3: " err &&
	printf "run: x\n" >nowd2.yaml &&
	expect_fail 3 skiff check --workdir ./nowd nowd2.yaml 2>err &&
	test "$(wc -l <err)" = 1 &&
	grep -qx -- "--workdir:1:1: workdir .\./nowd.: No such file or directory" err
'

test_expect_success 'remote sources are not looked at here; local ones that exist pass' '
	mkdir -p wd && : >wd/f &&
	cat >remote.yaml <<-\EOF &&
	workdir: wd
	file_mounts:
	  /a: s3://bucket/x
	  /b: https://example.com/f
	  /c: wd/f
	  /d: {source: gs://b, mode: MOUNT}
	  ~/e: "~"
	run: x
	EOF
	skiff check remote.yaml >out 2>err && test ! -s err &&
	printf "workdir:\n  url: https://example.com/r.git\nrun: x\n" >git.yaml &&
	skiff check git.yaml >out 2>err && test ! -s err
'

test_expect_success 'billion laughs fails fast' '
	{
		echo "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"
		prev=a
		for n in b c d e f g h i j; do
			echo "$n: &$n [*$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev]"
			prev=$n
		done
	} >lol.yaml &&
	check_fails 3 lol.yaml "too many nodes"
'

test_expect_success '10,000-deep nesting fails' '
	python3 -c "print(\"[\" * 10000 + \"]\" * 10000)" >deep.yaml &&
	check_fails 3 deep.yaml "nesting deeper than 64 levels" &&
	python3 -c "print(\"- \" * 10000 + \"x\")" >deep2.yaml &&
	check_fails 3 deep2.yaml "nesting deeper than 64 levels"
'

test_expect_success 'a 100 MB file is refused with its size' '
	dd if=/dev/zero of=big.yaml bs=1 count=0 seek=100M 2>/dev/null &&
	check_fails 3 big.yaml "file is 104857600 bytes, over the limit of 4194304 bytes"
'

test_expect_success 'an endless stream on stdin is cut at the limit' '
	{ yes "name: x" | timeout 5 "$SKIFF_BIN" check - >out 2>err; test $? = 3; } &&
	grep -q "^-:1:1: more than 4194304 bytes" err
'

test_expect_success 'non-UTF-8 text fails at the bad byte' '
	printf "name: ok\nrun: caf\351\n" >latin1.yaml &&
	check_fails 3 latin1.yaml "invalid UTF-8 (byte 0xE9)" &&
	grep -q "^latin1.yaml:2:9: " err
'

test_expect_success 'random binary fails' '
	head -c 4096 /dev/urandom >random.bin &&
	printf "\000" >>random.bin &&
	check_fails 3 random.bin "binary\\|UTF-8"
'

test_expect_success 'a NUL byte says binary' '
	printf "run: a\000b\n" >nul.yaml &&
	check_fails 3 nul.yaml "this looks like a binary file"
'

test_expect_success 'an empty file and a comment-only file fail' '
	: >empty.yaml &&
	check_fails 3 empty.yaml "empty file: expected a task (a YAML mapping)" &&
	printf "# nothing here\n\n  \n" >comments.yaml &&
	check_fails 3 comments.yaml "empty file"
'

test_expect_success 'a directory fails with 3' '
	mkdir -p adir &&
	check_fails 3 adir "is a directory"
'

test_expect_success 'a missing file fails with 1' '
	check_fails 1 missing.yaml "cannot open: No such file or directory"
'

test_expect_success 'an invalid file wins over a missing one' '
	expect_fail 3 skiff check missing.yaml typo.yaml task.yaml 2>err &&
	test $(wc -l <err) = 2
'

test_expect_success 'YAML syntax errors, duplicates and bad aliases are one line each' '
	printf "run: [x\n" >syntax.yaml &&
	check_fails 3 syntax.yaml "did not find expected" &&
	printf "run: a\nrun: b\n" >dup.yaml &&
	check_fails 3 dup.yaml "duplicate key .run. (first defined at line 1)" &&
	printf "a: &a [*a]\n" >rec.yaml &&
	check_fails 3 rec.yaml "refers to a node that contains it"
'

test_expect_success 'files that are not tasks say what they look like' '
	printf "apiVersion: v1\nkind: Pod\n" >pod.yaml &&
	check_fails 3 pod.yaml "this looks like a Kubernetes manifest" &&
	printf "kubernetes:\n  remote_identity: SERVICE_ACCOUNT\n" >config.yaml &&
	check_fails 3 config.yaml "this looks like a SkyPilot config file" &&
	printf "pool1:\n  hosts: [10.0.0.1]\n" >pools.yaml &&
	check_fails 3 pools.yaml "this looks like an SSH node pool file" &&
	printf "services:\n  web: {image: nginx}\n" >compose.yaml &&
	check_fails 3 compose.yaml "this looks like a docker-compose file" &&
	printf "on: push\njobs: {}\n" >gha.yaml &&
	check_fails 3 gha.yaml "this looks like a GitHub Actions workflow" &&
	printf -- "- a\n- b\n" >list.yaml &&
	check_fails 3 list.yaml "this looks like a YAML list" &&
	printf "just words\n" >scalar.yaml &&
	check_fails 3 scalar.yaml "this looks like plain text"
'

test_expect_success 'a null env is a warning for check, filled by --env' '
	printf "envs:\n  TOKEN:\nrun: echo \$TOKEN\n" >need.yaml &&
	skiff check need.yaml >out 2>err &&
	grep -q "^need.yaml:2:3: warning: env .TOKEN. has no value: pass --env TOKEN=VALUE$" err &&
	skiff check --env TOKEN=abc need.yaml >out 2>err &&
	test ! -s err &&
	TOKEN=fromenv skiff check --env TOKEN need.yaml 2>err &&
	test ! -s err
'

test_expect_success 'overrides: --env-file, --gpus and bad values' '
	printf "# env\nTOKEN=\"x y\"\n" >my.env &&
	skiff check --env-file my.env need.yaml 2>err &&
	test ! -s err &&
	skiff check --json --gpus H100:2 --cpus 8+ --num-nodes 2 -n renamed task.yaml >out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
t = d[0][\"tasks\"][0]
assert t[\"name\"] == \"renamed\" and t[\"num_nodes\"] == 2, t
r = t[\"resources\"][0]
assert r[\"accelerators\"] == {\"name\": \"H100\", \"count\": 2}, r
assert r[\"cpus\"] == \"8+\", r
" &&
	expect_fail 2 skiff check --cpus lots task.yaml 2>err &&
	grep -q "cpus lots" err &&
	expect_fail 2 skiff check --bogus task.yaml 2>err &&
	expect_fail 2 skiff check --infra 2>err &&
	grep -q -- "--infra needs a value" err
'

test_expect_success '--json is valid JSON with secrets redacted' '
	printf "name: s\nenvs: {A: visible}\nsecrets:\n  API_KEY: hunter2\n  EMPTY:\nrun: x\n" >sec.yaml &&
	skiff check --json sec.yaml task.yaml >out.json 2>err &&
	! grep -q hunter2 out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
assert len(d) == 2 and all(f[\"valid\"] for f in d)
t = d[0][\"tasks\"][0]
assert t[\"secrets\"] == {\"API_KEY\": \"<redacted>\", \"EMPTY\": None}, t[\"secrets\"]
assert t[\"envs\"] == {\"A\": \"visible\"}
assert d[0][\"warnings\"][0][\"line\"] == 5
assert isinstance(t[\"resources\"], list) and t[\"num_nodes\"] == 1
"
'

test_expect_success '--json reports an invalid file in the array too' '
	expect_fail 3 skiff check --json task.yaml typo.yaml >out.json 2>err &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
assert d[0][\"valid\"] and not d[1][\"valid\"]
assert d[1][\"errors\"][0][\"line\"] == 2 and \"ressources\" in d[1][\"errors\"][0][\"message\"]
assert d[1][\"tasks\"] == []
"
'

test_expect_success 'a pipeline and standard input' '
	printf "name: pipe\n---\nname: a\nrun: x\n---\nname: b\nrun: y\n" >pipe.yaml &&
	skiff check pipe.yaml >out &&
	grep -q "pipe.yaml: ok (a pipeline of 2 tasks)" out &&
	skiff check - <task.yaml >out &&
	grep -q "^-: ok$" out
'

# What launch would warn about on the task's infra is a warning here, in launch's words.
test_expect_success 'FILE: fields its infra cannot honour are warnings, as launch says them' '
	printf "resources:\n  use_spot: true\n  disk_size: 100\nservice:\n  readiness_probe: /\nrun: x\n" >spot.yaml &&
	skiff check spot.yaml >out 2>err &&
	grep -qx "spot.yaml: ok" out &&
	grep -qx "spot.yaml:2:3: warning: ignored on local infra (only a cloud can honour them): use_spot, disk_size" err &&
	grep -qx "spot.yaml:1:1: warning: ignored on local infra: service (skiff has no serving layer)" err &&
	test "$(wc -l <err)" = 2 &&
	skiff check --infra k8s spot.yaml >out 2>err &&
	grep -qx "spot.yaml:2:3: warning: ignored on k8s infra (only a cloud can honour them): use_spot, disk_size" err &&
	! grep -q "local infra" err &&
	printf "resources:\n  infra: podman\n  image_id: docker:alpine\n  ports: 8080\nrun: x\n" >img.yaml &&
	skiff check img.yaml >out 2>err &&
	test ! -s err &&
	skiff check --infra=ssh/p img.yaml >out 2>err &&
	grep -qx "img.yaml:2:3: warning: ignored on ssh/p infra (only a cloud can honour them): image_id" err &&
	skiff check --infra aws img.yaml >out 2>err &&
	grep -qx "img.yaml:2:3: warning: infra .aws.: skiff does not provision cloud VMs; .*" err &&
	expect_fail 2 skiff check --infra bogus img.yaml 2>err &&
	grep -q "unknown infra .bogus." err &&
	skiff check --json spot.yaml >out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
w = [x[\"message\"] for x in d[0][\"warnings\"]]
assert d[0][\"valid\"] and len(w) == 2 and w[0].startswith(\"ignored on local infra (only\"), w
"
'

test_expect_success 'FILE: check warns in the very words launch does' '
	printf "resources:\n  use_spot: true\n  instance_type: m5.large\nrun: echo hi\n" >w.yaml &&
	skiff check w.yaml >out 2>cerr &&
	sed -n "s/^w.yaml:[0-9]*:[0-9]*: warning: //p" cerr >check-said &&
	test -s check-said &&
	skiff launch -c chkw -d w.yaml >out 2>lerr &&
	skiff down chkw >/dev/null 2>&1 &&
	sed -n "s/^skiff: warning: \(ignored on \)/\1/p" lerr >launch-said &&
	test_cmp check-said launch-said
'

# skiff check without FILE: which infras can be used from here, as `sky check [INFRA...]`.
unset SKIFF_SSH_NODE_POOLS SKIFF_CONFIG

test_expect_success 'no FILE: every infra enabled or disabled with why; local enabled; exit 0' '
	skiff check >out 2>err &&
	cat out &&
	grep -qx "local: enabled: nodes run on this machine, under $SKIFF_HOME/local" out &&
	test "$(grep -c "^[a-z0-9]*: [a-z]*abled: ." out)" = 6 &&
	test "$(grep -vc "^  " out)" = 6 &&
	grep -q "^ssh: disabled: no file .$SKIFF_HOME/ssh_node_pools.yaml.; write one" out &&
	grep -q "^podman: " out && grep -q "^docker: " out && grep -q "^k8s: " out &&
	grep -q "^slurm: " out &&
	skiff check --json local aws >out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
assert [x[\"infra\"] for x in d] == [\"local\", \"aws\"], d
assert d[0][\"enabled\"] and not d[1][\"enabled\"], d
assert \"does not provision cloud VMs\" in d[1][\"reason\"], d
"
'

test_expect_success 'no FILE: infras named as sky check takes them; a file is still a file' '
	skiff check local Kubernetes/ctx aws >out 2>err &&
	test "$(wc -l <out)" = 3 &&
	grep -q "^local: enabled: " out &&
	grep -q "^k8s/ctx: [a-z]*abled: " out &&
	grep -qx "aws: disabled: infra .aws.: skiff does not provision cloud VMs; .*" out &&
	expect_fail 2 skiff check k8s/-bad 2>err &&
	grep -q "infra .k8s/-bad.: expected k8s" err &&
	expect_fail 2 skiff check --infra 2>err &&
	mkdir -p named && cd named && : >local &&
	expect_fail 3 skiff check local 2>err &&
	grep -q "^local:1:1: empty file" err
'

test_expect_success 'no FILE, a pool file: ssh enabled with its pools and host counts' '
	export SKIFF_SSH_NODE_POOLS="$TRASH/pools.yaml" &&
	printf "gpu:\n  hosts: [10.0.0.1, 10.0.0.2]\nlab:\n  user: alice\n  hosts:\n    - 10.0.0.3\n" >pools.yaml &&
	skiff check ssh ssh/lab ssh/nope >out 2>err &&
	cat out &&
	grep -qx "ssh: enabled: .$TRASH/pools.yaml.: 2 pools: gpu (2 hosts), lab (1 host)" out &&
	grep -qx "ssh/lab: enabled: pool .lab. of .$TRASH/pools.yaml.: 1 host" out &&
	grep -qx "ssh/nope: disabled: no pool .nope. in .$TRASH/pools.yaml., which has gpu (2 hosts), lab (1 host)" out &&
	test ! -s err
'

test_expect_success 'no FILE, a broken pool file: ssh disabled, each error at FILE:LINE:COL' '
	export SKIFF_SSH_NODE_POOLS="$TRASH/broken.yaml" &&
	printf "gpu:\n  user: 3\n  hots: [a]\n" >broken.yaml &&
	skiff check ssh >out 2>err &&
	cat out err &&
	grep -qx "ssh: disabled: .$TRASH/broken.yaml. is not valid (3 errors)" out &&
	grep -qx "$TRASH/broken.yaml:3:3: unknown field .hots. in gpu; did you mean .hosts.?" err &&
	grep -q "^$TRASH/broken.yaml:2:9: gpu.user must be a string" err &&
	printf "gpu:\n  hosts: [10.0.0.1\n" >broken.yaml &&
	skiff check ssh >out 2>err &&
	grep -q "^ssh: disabled: .$TRASH/broken.yaml. is not valid (1 error)" out &&
	grep -q "^$TRASH/broken.yaml:3:1: did not find expected" err
'

test_expect_success 'no FILE, commands not in PATH: the infras that need them are disabled' '
	mkdir -p onlysh && ln -sf "$(command -v sh)" onlysh/sh &&
	printf "gpu:\n  hosts: [10.0.0.1]\n" >onepool.yaml &&
	export SKIFF_SSH_NODE_POOLS="$TRASH/onepool.yaml" &&
	(PATH="$TRASH/onlysh" && export PATH && "$SKIFF_BIN" check) >out 2>err &&
	cat out &&
	grep -q "^local: enabled: " out &&
	grep -qx "ssh: disabled: .ssh. is not in PATH" out &&
	grep -qx "podman: disabled: .podman. is not in PATH" out &&
	grep -qx "docker: disabled: .docker. is not in PATH" out &&
	grep -qx "k8s: disabled: .kubectl. is not in PATH" out &&
	grep -qx "slurm: disabled: .sinfo. is not in PATH" out
'

# Stand-ins for the engines and clients: one answers, one fails, two hang (a dead API
# server, a Slurm controller away). The hangs cost one timeout together, not one each.
test_expect_success 'no FILE, commands that answer, fail or hang: bounded, probed at once' '
	mkdir -p fakebin && sleep_bin=$(command -v sleep) &&
	printf "#!/bin/sh\necho 9.8.7\n" >fakebin/podman &&
	printf "#!/bin/sh\necho \"Cannot connect to the Docker daemon\" >&2\nexit 1\n" >fakebin/docker &&
	printf "#!/bin/sh\ncase \"\$*\" in *current-context*) echo ctx-a ;; *) exec $sleep_bin 60 ;; esac\n" >fakebin/kubectl &&
	printf "#!/bin/sh\nexec $sleep_bin 60\n" >fakebin/sinfo &&
	chmod +x fakebin/* &&
	start=$(date +%s) &&
	(PATH="$TRASH/fakebin" && export PATH && "$SKIFF_BIN" check) >out 2>err &&
	took=$(($(date +%s) - start)) &&
	cat out && echo "took ${took}s" &&
	grep -qx "podman: enabled: podman 9.8.7 answers" out &&
	grep -qx "docker: disabled: .docker info. failed (exit 1): Cannot connect to the Docker daemon" out &&
	grep -qx "k8s: disabled: .kubectl version. did not answer within 5 s" out &&
	grep -qx "slurm: disabled: .sinfo. did not answer within 5 s" out &&
	test "$took" -lt 9
'

test_expect_success 'no FILE, kubectl and sinfo that answer: the context, RBAC, partitions' '
	mkdir -p okbin &&
	cat >okbin/kubectl <<-\END_OF_FAKE_KUBECTL &&
	#!/bin/sh
	case "$*" in
	*current-context*) echo ctx-a ;;
	*"--context deny"*"auth can-i"*) echo no; exit 1 ;;
	*"auth can-i"*) echo yes ;;
	*"config view"*) printf "ctx-a\tkind-a\tml\nctx-b\tkind-b\t\n" ;;
	*"get pods"*) printf "nb-1\t10.1.2.4\tPending\nnb-0\t10.1.2.3\tRunning\n" ;;
	*) echo "Server Version: v1.30.0" ;;
	esac
	END_OF_FAKE_KUBECTL
	printf "#!/bin/sh\nprintf \"debug*|up|1/1/0/2|4|8000|(null)|infinite\\\\ngpu|up|0/2/0/2|8|64000|gpu:h100:8|1-00:00:00\\\\ngpu|down|0/0/1/1|8|32000|gpu:h100:8|1-00:00:00\\\\n\"\n" >okbin/sinfo &&
	chmod +x okbin/* &&
	(PATH="$TRASH/okbin" && export PATH &&
		"$SKIFF_BIN" check k8s k8s/deny/team slurm slurm/gpu slurm/cpu) >out 2>err &&
	cat out &&
	grep -qx "k8s: enabled: context ctx-a: the API server answers; pods/exec allowed in the context.s namespace" out &&
	grep -qx "k8s/deny/team: disabled: context deny: RBAC does not let this user create pods/exec in namespace team (kubectl auth can-i says no); skiff reaches every pod with kubectl exec" out &&
	grep -qx "slurm: enabled: Slurm answers; partitions: debug (default), gpu" out &&
	grep -qx "slurm/gpu: enabled: Slurm answers; partition gpu is there" out &&
	grep -qx "slurm/cpu: disabled: no partition .cpu.; sinfo lists debug (default), gpu" out &&
	(PATH="$TRASH/okbin" && export PATH && "$SKIFF_BIN" check slurm/gpu k8s) >out 2>err &&
	cat out &&
	test "$(sed -n "/^slurm/,/^k8s/p" out | grep -c "^    gpu  *- *\(up\|down\) ")" = 2 &&
	grep -q "^    gpu  *- *up *0/2/0/2 *8 *64000 *gpu:h100:8 *1-00:00:00$" out &&
	! grep -q "^    debug" out &&
	grep -qx "  contexts:" out &&
	grep -q "^    CONTEXT *USED *KUBE_CLUSTER *NAMESPACE$" out &&
	grep -q "^    ctx-a *yes *kind-a *ml$" out &&
	grep -q "^    ctx-b *- *kind-b *-$" out &&
	grep -q "^    POD *PHASE *IP *CLUSTER$" out &&
	grep -q "^    nb-0 *Running *10.1.2.3 *free$" out &&
	grep -q "^    nb-1 *Pending *10.1.2.4 *free$" out
'

test_expect_success 'no FILE: the config is checked after the infras, when there is one' '
	export SKIFF_CONFIG="$TRASH/cfg.yaml" &&
	printf "azure: {}\n" >cfg.yaml &&
	skiff check local >out 2>err &&
	test "$(sed -n 2p out)" = "$TRASH/cfg.yaml: ok" &&
	grep -q "^$TRASH/cfg.yaml:1:1: warning: config key .azure. is ignored" err &&
	printf "dockr: {}\n" >cfg.yaml &&
	expect_fail 3 skiff check local >out 2>err &&
	grep -q "^local: enabled: " out &&
	grep -q "^$TRASH/cfg.yaml:1:1: unknown config key .dockr." err
'

# The SkyPilot corpus: the full one in ../shared when it is there, else the subset
# vendored in tests/corpus/skypilot-yaml (a fresh clone, CI). Never a skip.
if [ -d "$SHARED_DIR/corpus/skypilot-yaml" ]; then
	CORPUS=$SHARED_DIR/corpus/skypilot-yaml CORPUS_FULL=1 CORPUS_MIN=100
	CORPUS_NAME="the SkyPilot corpus in ../shared"
else
	CORPUS=$SRC_DIR/tests/corpus/skypilot-yaml CORPUS_FULL=0 CORPUS_MIN=30
	CORPUS_NAME="the SkyPilot subset in tests/corpus"
fi
echo "# corpus: $CORPUS"

# The corpus files that are not task YAMLs, and what check must say they look like. The
# vendored subset holds some of them; the full corpus, all.
cat >"$TRASH/not-tasks" <<'EOF'
admin_policy/add_labels.yaml|SkyPilot config file
admin_policy/add_labels_conditional.yaml|SkyPilot config file
admin_policy/add_volumes.yaml|SkyPilot config file
admin_policy/disable_public_ip.yaml|SkyPilot config file
admin_policy/dynamic_kubernetes_contexts_update.yaml|SkyPilot config file
admin_policy/enforce_autostop.yaml|SkyPilot config file
admin_policy/gpu_static_quota.yaml|SkyPilot config file
admin_policy/rate_limit_launch.yaml|SkyPilot config file
admin_policy/reject_all.yaml|SkyPilot config file
admin_policy/restful_policy.yaml|SkyPilot config file
admin_policy/set_max_autostop_idle_minutes.yaml|SkyPilot config file
admin_policy/use_local_gcp_credentials.yaml|SkyPilot config file
admin_policy/use_spot_for_gpu.yaml|SkyPilot config file
cog/cog.yaml|Cog config
docker/compose/docker-compose.yml|docker-compose file
github_actions/sample_repo/.github/actions/launch-skypilot-job/action.yaml|GitHub Actions action
github_actions/sample_repo/.github/actions/setup-environment/action.yaml|GitHub Actions action
github_actions/sample_repo/.github/workflows/sky-job.yaml|GitHub Actions workflow
metrics/dcgm_service.yaml|Kubernetes manifest
metrics/node_exporter_service.yaml|Kubernetes manifest
metrics/prometheus-values.yaml|some other kind of YAML file
oci/config.yaml|SkyPilot config file
plugin/plugins.yaml|SkyPilot plugins file
redisvl-vector-search/config/redis_schema_papers.yaml|RedisVL index schema
stable_diffusion/docker-compose.yml|docker-compose file
training_network_storage_benchmarks/e2e/fsdp2.yaml|Hugging Face Accelerate config
EOF

# corpus_files: the corpus's YAML files, by path under $CORPUS, sorted; and not-tasks.here,
# the lines of not-tasks whose file is there (in the full corpus, every one must be).
corpus_files() {
	(cd "$CORPUS" && find . \( -name "*.yaml" -o -name "*.yml" \) -type f | sed "s|^\./||" |
		sort) >files || return 1
	while IFS="|" read -r _f _kind; do
		if [ -f "$CORPUS/$_f" ]; then
			echo "$_f|$_kind"
		elif [ "$CORPUS_FULL" = 1 ]; then
			echo "listed but missing: $_f" >&2
			return 1
		fi
	done <"$TRASH/not-tasks" >not-tasks.here || return 1
	test "$(wc -l <files)" -ge "$CORPUS_MIN" &&
		test "$(wc -l <not-tasks.here)" -ge 10
}

# only_missing_paths ERR: every error in ERR is a local path this machine lacks (a workdir,
# a file_mounts source: check reads them as launch would); the rest of the task is accepted.
only_missing_paths() {
	grep -v ": warning: " "$1" >errors-only &&
		! grep -v -e ": workdir '.*': No such file or directory\$" \
			-e ": file_mounts source '.*' (for .*): No such file or directory\$" errors-only
}

test_expect_success "corpus ($CORPUS_NAME): every task is accepted, every other file says what it is" '
	corpus_files &&
	tasks=0 others=0 bad=0 paths=0 &&
	while read -r f; do
		kind=$(grep "^$f|" not-tasks.here | cut -d"|" -f2)
		"$SKIFF_BIN" check "$CORPUS/$f" >out 2>err </dev/null
		rc=$?
		if [ $rc -ge 128 ]; then
			echo "CRASH ($rc): $f"; bad=$((bad + 1))
		elif [ -z "$kind" ] && [ $rc = 3 ] && only_missing_paths err; then
			paths=$((paths + 1))
		elif [ -z "$kind" ] && [ $rc != 0 ]; then
			echo "task rejected: $f"; cat err; bad=$((bad + 1))
		elif [ -z "$kind" ]; then
			tasks=$((tasks + 1))
		elif [ $rc != 3 ] || [ $(wc -l <err) != 1 ] || ! grep -q "this looks like .*$kind" err; then
			echo "not-task $f: exit $rc, wanted \"looks like $kind\":"; cat err; bad=$((bad + 1))
		else
			others=$((others + 1))
		fi
	done <files &&
	echo "corpus: $tasks tasks accepted, $paths more but for local paths not here," \
		"$others other files rejected, $bad wrong" &&
	test $bad = 0 &&
	test $others = $(wc -l <not-tasks.here) &&
	test $((tasks + paths)) -ge 20
'

test_expect_success "corpus ($CORPUS_NAME): --json over every task is valid JSON" '
	corpus_files &&
	cut -d"|" -f1 not-tasks.here | sort >skip &&
	comm -23 files skip | sed "s|^|$CORPUS/|" >taskfiles &&
	{ xargs "$SKIFF_BIN" check --json <taskfiles >all.json 2>/dev/null || test $? = 123; } &&
	python3 -c "
import json, re, sys
d = json.load(open(\"all.json\"))
# Invalid only for local paths this machine lacks (as in the test above).
path = re.compile(r\"^(workdir .*|file_mounts source .* \(for .*\)): No such file or directory$\")
assert len(d) == int(sys.argv[1])
for f in d:
    assert f[\"valid\"] or (f[\"errors\"] and
                           all(path.match(e[\"message\"]) for e in f[\"errors\"])), f[\"file\"]
for f in d:
    for t in f[\"tasks\"]:
        for v in t[\"secrets\"].values():
            assert v in (None, \"<redacted>\"), f[\"file\"]
" $(($(wc -l <files) - $(wc -l <skip)))
'

test_done
