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
	expect_fail 2 skiff check 2>err
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
