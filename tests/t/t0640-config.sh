#!/bin/sh
# SkyPilot's config (docs/config.md): the config file ($SKIFF_HOME/config.yaml, else
# ~/.sky/config.yaml, or $SKIFF_CONFIG), a task's config:, --config files and KEY=VALUE
# pairs, layered in that order; bad keys as FILE:LINE:COL with a did-you-mean, in check
# and launch; keys skiff ignores said once. Then on real rootful Podman (root only,
# skipped otherwise, a failure in CI): docker.run_options reach `podman run` (labels, an
# env, a volume), the layers win in order, and a managed job keeps the config it was
# submitted with.
. "$(dirname "$0")/lib.sh"
export SKIFF_JOBS_POLL_MS=200 SKIFF_JOBS_IDLE_S=3

CFG=$SKIFF_HOME/config.yaml
mkdir -p "$SKIFF_HOME" "$HOME/.sky"

test_expect_success 'no config at all: check of a task is as before' '
	printf "run: echo hi\n" >plain.yaml &&
	skiff check plain.yaml >out 2>err &&
	test "$(cat out)" = "plain.yaml: ok" && test ! -s err &&
	skiff check local >out 2>err &&
	grep -q "^local: enabled: " out &&
	test "$(wc -l <out)" = 1 && test ! -s err
'

test_expect_success 'a typo in the config file: FILE:LINE:COL and a did-you-mean' '
	printf "docker:\n  run_options: [-v]\nkubernetes:\n  pod_confg: {}\n" >"$CFG" &&
	expect_fail 3 skiff check plain.yaml 2>err &&
	grep -qxF "$CFG:4:3: unknown config key '"'"'kubernetes.pod_confg'"'"'; did you mean '"'"'pod_config'"'"'?" err &&
	expect_fail 3 skiff launch -c typo plain.yaml 2>err &&
	grep -qF "$CFG:4:3: unknown config key" err &&
	test "$(skiff status)" = "No existing clusters."
'

test_expect_success 'a typo in a task'"'"'s config: and a key a task may not set' '
	rm -f "$CFG" &&
	cat >bad.yaml <<-\EOF &&
	run: echo hi
	config:
	  docker:
	    run_option: [x]
	  jobs:
	    controller: {}
	EOF
	expect_fail 3 skiff check bad.yaml 2>err &&
	grep -qxF "bad.yaml:4:5: unknown config key '"'"'docker.run_option'"'"'; did you mean '"'"'run_options'"'"'?" err &&
	grep -qF "bad.yaml:5:3: config key '"'"'jobs'"'"' cannot be set in a task'"'"'s config:" err
'

# SkyPilot's OVERRIDEABLE_CONFIG_KEYS_IN_TASK: ssh.custom_metadata, ssh.provision_timeout,
# kubernetes.remote_identity, vast.* and active_workspace were refused.
test_expect_success 'a task'"'"'s config: takes every key SkyPilot lets a task set' '
	cat >every.yaml <<-\EOF &&
	run: echo hi
	config:
	  docker:
	    run_options: [--shm-size=1g]
	  nvidia_gpus:
	    disable_ecc: true
	  ssh:
	    custom_metadata: {labels: {a: b}}
	    pod_config: {spec: {}}
	    provision_timeout: 60
	  kubernetes:
	    custom_metadata: {labels: {a: b}}
	    pod_config: {spec: {}}
	    provision_timeout: 60
	    dws: {enabled: true}
	    kueue: {local_queue_name: q}
	    remote_identity: SERVICE_ACCOUNT
	  gcp:
	    managed_instance_group: {run_duration: 60}
	    enable_gvnic: true
	    enable_gpu_direct: true
	    placement_policy: compact
	  vast:
	    datacenter_only: true
	    create_instance_kwargs: {image_login: x}
	  active_workspace: team
	EOF
	skiff check every.yaml >out 2>err &&
	test "$(cat out)" = "every.yaml: ok" &&
	for k in nvidia_gpus.disable_ecc ssh.custom_metadata ssh.pod_config \
		ssh.provision_timeout kubernetes.dws kubernetes.kueue kubernetes.remote_identity \
		gcp vast active_workspace; do
		grep -q "^every.yaml:[0-9]*:[0-9]*: warning: config key '"'"'$k'"'"' is ignored: " err ||
			{ echo "no warning for $k"; cat err; exit 1; }
	done &&
	test "$(wc -l <err)" = 10 &&
	printf "run: x\nconfig:\n  ssh:\n    allowed_node_pools: [a]\n" >nopool.yaml &&
	expect_fail 3 skiff check nopool.yaml 2>err &&
	test "$(wc -l <err)" = 1 &&
	grep -qF "nopool.yaml:4:5: config key '"'"'ssh.allowed_node_pools'"'"' cannot be set in a task'"'"'s config:" err
'

test_expect_success '--config: a typo in a pair, a file, a value of the wrong type' '
	expect_fail 3 skiff check --config kubernetes.provision_timout=60 plain.yaml 2>err &&
	grep -qxF -- "--config:1:12: unknown config key '"'"'kubernetes.provision_timout'"'"'; did you mean '"'"'provision_timeout'"'"'?" err &&
	printf "slurm:\n  sbatch_options:\n    --time: 5\n" >layer.yaml &&
	expect_fail 3 skiff check --config layer.yaml plain.yaml 2>err &&
	grep -qF "layer.yaml:3:5: config slurm.sbatch_options: '"'"'--time'"'"' is not an option name" err &&
	expect_fail 3 skiff launch --config "docker.run_options={a: b}" plain.yaml 2>err &&
	grep -qF -- "--config:1:20: config docker.run_options must be a string or a list" err &&
	expect_fail 2 skiff check --config 2>err
'

test_expect_success 'keys skiff ignores: accepted, each said once with its path and why' '
	cat >"$CFG" <<-\EOF &&
	aws:
	  vpc_name: mine
	allowed_clouds: [aws]
	kubernetes:
	  autoscaler: gke
	EOF
	cat >two.yaml <<-\EOF &&
	run: echo one
	---
	run: echo two
	EOF
	skiff check two.yaml >out 2>err &&
	grep -qxF "$CFG:1:1: warning: config key '"'"'aws'"'"' is ignored: only a cloud reads it; skiff'"'"'s infras are local, ssh, podman, docker, k8s and slurm" err &&
	grep -qF "$CFG:3:1: warning: config key '"'"'allowed_clouds'"'"' is ignored" err &&
	grep -qF "$CFG:5:3: warning: config key '"'"'kubernetes.autoscaler'"'"' is ignored" err &&
	test "$(grep -c "is ignored" err)" = 3 &&
	skiff check local >out 2>err &&
	test "$(sed -n 2p out)" = "$CFG: ok"
'

test_expect_success 'SkyPilot'"'"'s ~/.sky/config.yaml when skiff has none; skiff'"'"'s own wins' '
	rm -f "$CFG" &&
	printf "gcp:\n  project_id: p\n" >"$HOME/.sky/config.yaml" &&
	skiff check plain.yaml 2>err &&
	grep -qF "$HOME/.sky/config.yaml:1:1: warning: config key '"'"'gcp'"'"' is ignored" err &&
	printf "azure: {}\n" >"$CFG" &&
	skiff check plain.yaml 2>err &&
	grep -qF "$CFG:1:1: warning: config key '"'"'azure'"'"' is ignored" err &&
	! grep -q gcp err &&
	printf "lambda: {}\n" >other.yaml &&
	(export SKIFF_CONFIG="$TRASH/other.yaml" && skiff check plain.yaml 2>err) &&
	grep -qF "other.yaml:1:1: warning: config key '"'"'lambda'"'"' is ignored" err &&
	! grep -q azure err &&
	(export SKIFF_CONFIG="$TRASH/missing.yaml" && expect_fail 3 skiff check plain.yaml 2>err) &&
	grep -qF "missing.yaml:1:1: cannot read the config file" err &&
	rm -f "$CFG" "$HOME/.sky/config.yaml"
'

test_expect_success 'check --json reports config errors and warnings with the task' '
	printf "rbac: {}\ndockr: {}\n" >"$CFG" &&
	expect_fail 3 skiff check --json plain.yaml >out.json 2>/dev/null &&
	grep -q "unknown config key '"'"'dockr'"'"'; did you mean '"'"'docker'"'"'?" out.json &&
	rm -f "$CFG"
'

test_expect_success 'skiff config: each key with where it was written, --config over the file, the ignored ones with why' '
	printf "kubernetes:\n  provision_timeout: 60\njobs:\n  controller:\n    resources:\n      disk_size: 50\n" >"$CFG" &&
	skiff config >out &&
	grep -qx "config file: $CFG" out &&
	grep -qx "kubernetes.provision_timeout = 60    ($CFG:2:22)" out &&
	grep -q "^ignored: $CFG:6:7: config key .jobs.controller.resources.disk_size. is ignored: " out &&
	skiff config --json --config kubernetes.provision_timeout=120 >c.json &&
	python3 - "$CFG" <<-\EOF &&
	import json, sys
	c = json.load(open("c.json"))
	assert c["file"] == sys.argv[1], c
	k = {x["key"]: x for x in c["keys"]}
	assert k["kubernetes.provision_timeout"]["value"] == "120", k
	assert k["kubernetes.provision_timeout"]["file"] == "--config", k
	assert k["jobs.controller.resources.disk_size"]["line"] == 6, k
	assert [i["line"] for i in c["ignored"]] == [6] and c["errors"] == [], c
	EOF
	printf "kubernetes:\n  provison_timeout: 1\n" >"$CFG" &&
	expect_fail 3 skiff config --json >bad.json 2>err &&
	python3 -c "import json; e=json.load(open(\"bad.json\"))[\"errors\"]; assert e and e[0][\"line\"] == 2, e" &&
	rm -f "$CFG" &&
	skiff config >out && grep -qx "(no key set)" out
'

test_expect_success 'jobs.controller.resources size the managed-jobs controller'"'"'s limits' '
	printf "jobs:\n  controller:\n    resources: {cpus: 3, memory: 2, disk_size: 50}\n" \
		>"$CFG" &&
	(unset SKIFF_JOBS_MAX_LAUNCHING SKIFF_JOBS_MAX_RUNNING &&
		skiff jobs launch -d "echo managed" >id 2>err) && cat err &&
	grep -qF "$CFG:3:37: warning: config key '"'"'jobs.controller.resources.disk_size'"'"' is ignored" err &&
	{ skiff jobs logs "$(cat id)" >log 2>&1; rc=$?; } &&
	cat log && test $rc = 0 && grep -qx "managed" log &&
	grep -q "up: 12 launching, 4096 running (3 cores, 2048 MiB," "$SKIFF_HOME/jobs/controller.log" &&
	wait_for "skiff down skiff-jobs >/dev/null 2>&1" 60 &&
	rm -f "$CFG"
'

# ---- on real Podman -------------------------------------------------------------------

# As t0700: a fresh machine gets podman, runc and busybox-static first (root only).
# shellcheck source=tests/lib/container.sh
. "$SRC_DIR/tests/lib/container.sh"
if [ "$(id -u)" = 0 ]; then
	ctr_install podman runc busybox-static || { echo "Bail out! cannot install podman"; exit 1; }
fi

test_lazy_prereq PODMAN 'test "$(id -u)" = 0 && test -n "$SKIFF_STATIC_BIN" &&
	command -v podman && test -x /bin/busybox && command -v python3'

if test_have_prereq PODMAN; then
	PM=$TRASH/pm
	# shellcheck source=tests/lib/podman.sh
	. "$SRC_DIR/tests/lib/podman.sh"
	podman_private "$PM" || { echo "Bail out! cannot write the podman configs"; exit 1; }
	SKIFF_BIN=$SKIFF_STATIC_BIN
	BB_IMG=localhost/sk-busybox:latest
	test_cleanup_hook() {
		for _c in $("$SKIFF_BIN" status --json 2>/dev/null | python3 -c \
			"import json,sys; [print(c['name']) for c in json.load(sys.stdin)]" 2>/dev/null); do
			timeout 60 "$SKIFF_BIN" down "$_c" >/dev/null 2>&1
		done
		podman_private_down "$PM"
	}
	trap 'test_cleanup_hook; exit 1' INT TERM
elif [ "$(id -u)" != 0 ] && [ "${CI:-}" != true ]; then
	echo "# the Podman tests need root, podman, busybox-static and python3: skipped"
fi

# label CONTAINER KEY: a label of a container.
label() {
	podman inspect --format "{{index .Config.Labels \"$2\"}}" "$1"
}

test_expect_success PODMAN 'busybox image for the containers' '
	busybox_image "$TRASH/bbroot" "$BB_IMG"
'

mkdir -p "$TRASH/gate"
cat >"$TRASH/task.yaml" <<EOF
resources:
  infra: podman
  image_id: docker:$BB_IMG
run: |
  echo "FOO=\$FOO"
  cat /gate/note 2>/dev/null
EOF
cat >"$TRASH/task-cfg.yaml" <<EOF
resources:
  infra: podman
  image_id: docker:$BB_IMG
config:
  docker:
    run_options:
      - --label skiff.from=task
      - "--env FOO='from task'"
run: echo "FOO=\$FOO"
EOF

test_expect_success PODMAN 'docker.run_options of the config file reach podman run' '
	cat >"$CFG" <<-EOF &&
	docker:
	  run_options:
	    - --label skiff.from=file --label skiff.test=1
	    - "--env FOO=bar"
	    - -v $TRASH/gate:/gate:ro
	EOF
	echo "a note on the host" >gate/note &&
	skiff launch -c cf task.yaml >out 2>err && cat err out &&
	grep -qx "FOO=bar" out && grep -qx "a note on the host" out &&
	test "$(label skiff-cf-0 skiff.from)" = file &&
	test "$(label skiff-cf-0 skiff.test)" = 1 &&
	test "$(label skiff-cf-0 skiff.cluster)" = cf &&
	podman inspect --format "{{range .Config.Env}}{{println .}}{{end}}" skiff-cf-0 |
		grep -qx FOO=bar &&
	skiff down cf >/dev/null
'

test_expect_success PODMAN 'the task'"'"'s config: replaces the file'"'"'s list; --config wins over both' '
	skiff launch -c ct task-cfg.yaml >out 2>err && cat err out &&
	grep -qx "FOO=from task" out &&
	test "$(label skiff-ct-0 skiff.from)" = task &&
	test -z "$(label skiff-ct-0 skiff.test)" &&
	skiff down ct >/dev/null &&
	skiff launch -c cc --config "docker.run_options=[--label skiff.from=cli]" task-cfg.yaml \
		>out 2>err && cat err out &&
	test "$(label skiff-cc-0 skiff.from)" = cli &&
	grep -qx "FOO=" out &&
	skiff down cc >/dev/null
'

test_expect_success PODMAN 'a managed job keeps the config of its submit' '
	rm -f gate/go &&
	cat >job.yaml <<-EOF &&
	resources:
	  infra: podman
	  image_id: docker:$BB_IMG
	run: |
	  echo "FOO=\$FOO"
	  while [ ! -e /gate/go ]; do sleep 0.1; done
	EOF
	skiff jobs launch -d job.yaml >id 2>err && cat err &&
	printf "docker:\n  run_options: [--label skiff.from=changed]\n" >"$CFG" &&
	wait_for "podman ps --filter label=skiff.test=1 --format {{.Names}} | grep -q ." 120 &&
	c=$(podman ps --filter label=skiff.test=1 --format "{{.Names}}") &&
	test "$(label "$c" skiff.from)" = file &&
	touch gate/go &&
	{ skiff jobs logs "$(cat id)" >log 2>&1; rc=$?; } &&
	cat log && test $rc = 0 &&
	grep -qx "FOO=bar" log
'

test_expect_success PODMAN 'nothing of skiff is left' '
	wait_for "test \"\$(skiff status)\" = \"No existing clusters.\"" 120 &&
	test -z "$(podman ps -a --filter label=skiff.managed=1 --format {{.Names}})"
'

test_expect_success PODMAN 'cleanup' '
	rm -f "$CFG" &&
	podman_private_down "$PM"
'

test_done
