/*
 * The config (lib/config.h): layering and merge rules, every error with its line and
 * column, did-you-mean, ignored keys, --config KEY=VALUE, JSON round trips, what the
 * infras read (run options, salloc options, the pod manifest) and the frozen layers of a
 * managed job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "lib/config.h"
#include "lib/proto.h"
#include "lib/task.h"
#include "lib/util.h"
#include "tests/unit/harness.h"

static char dir[] = "/tmp/skiff-unit-config.XXXXXX";

/* A config from YAML text; errors (and warnings) into *msgs as "L:C: message" lines. */
static struct cfg_node *load(const char *yaml, enum config_where where, char **msgs)
{
	struct yerrors errs = YERRORS_INIT;
	struct ystream s = YSTREAM_INIT;
	struct cfg_node *c = NULL;
	struct buf b = BUF_INIT(0);
	size_t i;

	if (!yaml_load(&s, "c.yaml", yaml, strlen(yaml), &errs) && s.ndocs)
		c = cfg_from_ynode(s.docs[0].root, "c.yaml");
	yaml_stream_release(&s);
	if (c && config_validate(c, where, &errs)) {
		cfg_free(c);
		c = NULL;
	}
	for (i = 0; i < errs.n; i++)
		buf_addf(&b, "%d:%d: %s\n", errs.v[i].line, errs.v[i].col, errs.v[i].msg);
	yerr_release(&errs);
	*msgs = buf_detach(&b, NULL);
	return c;
}

/* 1 if the YAML is refused with exactly msg (one error, "L:C: message"). */
static int refused(const char *yaml, enum config_where where, const char *msg)
{
	char *m;
	struct cfg_node *c = load(yaml, where, &m);
	int r = !c && !strcmp(m, msg);

	if (!r)
		printf("#   got: %s", m);
	cfg_free(c);
	free(m);
	return r;
}

static char *json_of(const struct cfg_node *c)
{
	return config_to_json(c);
}

static void test_validate(void)
{
	char *m;
	struct cfg_node *c;

	c = load("docker:\n  run_options: [--shm-size=2g]\nkubernetes:\n  pod_config: {}\n",
	         CONFIG_IN_FILE, &m);
	ok(c && !*m, "a valid config file");
	cfg_free(c);
	free(m);
	ok(refused("dockr:\n  run_options: x\n", CONFIG_IN_FILE,
	           "1:1: unknown config key 'dockr'; did you mean 'docker'?\n"),
	   "a top-level typo: did-you-mean, at its line and column");
	ok(refused("docker:\n  run_option: x\n", CONFIG_IN_FILE,
	           "2:3: unknown config key 'docker.run_option'; did you mean 'run_options'?\n"),
	   "a nested typo names the whole path");
	ok(refused("kubernetes:\n  zzzzzzzz: 1\n", CONFIG_IN_FILE,
	           "2:3: unknown config key 'kubernetes.zzzzzzzz'\n"),
	   "no suggestion when nothing is near");
	ok(refused("docker:\n  run_options: {a: b}\n", CONFIG_IN_FILE,
	           "2:16: config docker.run_options must be a string or a list of strings, not a "
	           "mapping\n"),
	   "run_options of the wrong type");
	ok(refused("docker:\n  run_options: [\"-v 'a\"]\n", CONFIG_IN_FILE,
	           "2:17: config docker.run_options: a ' is not closed\n"),
	   "run_options with an unclosed quote");
	ok(refused("kubernetes:\n  pod_config: [a]\n", CONFIG_IN_FILE,
	           "2:15: config kubernetes.pod_config must be a mapping, not a list\n"),
	   "pod_config must be a mapping");
	ok(refused("kubernetes:\n  provision_timeout: soon\n", CONFIG_IN_FILE,
	           "2:22: config kubernetes.provision_timeout must be seconds, 1..604800, not "
	           "soon\n"),
	   "provision_timeout must be seconds");
	ok(refused("slurm:\n  sbatch_options:\n    --time: 1\n", CONFIG_IN_FILE,
	           "3:5: config slurm.sbatch_options: '--time' is not an option name (letters, "
	           "digits, '-', '_'; written without the leading '--')\n"),
	   "sbatch option names without dashes");
	ok(refused("slurm:\n  sbatch_options:\n    time: [1]\n", CONFIG_IN_FILE,
	           "3:11: config slurm.sbatch_options.time must be a string, a number or a "
	           "boolean, not a list\n"),
	   "sbatch option values are scalars");
	ok(refused("slurm:\n  quota:\n    queue: -x\n", CONFIG_IN_FILE,
	           "3:12: config slurm.quota.queue must be a name (one line, no leading '-')\n"),
	   "a quota that would be an option");
	ok(refused("jobs:\n  controller:\n    resources:\n      cpu: 4\n", CONFIG_IN_FILE,
	           "4:7: unknown config key 'jobs.controller.resources.cpu'; did you mean "
	           "'cpus'?\n"),
	   "controller resources: a typo");
	ok(refused("jobs:\n  controller:\n    resources:\n      memory: lots\n", CONFIG_IN_FILE,
	           "4:15: config jobs.controller.resources.memory must be a number like 4 or 4+, "
	           "not 'lots'\n"),
	   "controller resources: a bad amount");
	ok(refused("jobs:\n  controller:\n    task_logs_gc_retention_hours: a week\n",
	           CONFIG_IN_FILE,
	           "3:35: config jobs.controller.task_logs_gc_retention_hours must be a number of "
	           "hours, not a week\n"),
	   "the logs' retention: hours, a number");
	ok(refused("docker: [1]\n", CONFIG_IN_FILE,
	           "1:9: config docker must be a mapping, not a list\n"),
	   "a section of the wrong type");
	ok(refused("[1]: x\n", CONFIG_IN_FILE, "1:1: keys in config must be strings, not a list\n"),
	   "a key that is not a string");
	ok(refused("jobs:\n  controller: {}\n", CONFIG_IN_TASK,
	           "1:1: config key 'jobs' cannot be set in a task's config: (as in SkyPilot: "
	           "only docker.run_options, kubernetes.pod_config, ... may be); set it in the "
	           "config file or with --config\n"),
	   "a task's config: may not set jobs");
	ok(refused("kubernetes:\n  namespace: x\n", CONFIG_IN_TASK,
	           "2:3: config key 'kubernetes.namespace' cannot be set in a task's config: (as "
	           "in SkyPilot: only docker.run_options, kubernetes.pod_config, ... may be); set "
	           "it in the config file or with --config\n"),
	   "nor kubernetes.namespace");
	ok(refused("gcp:\n  vpc_name: x\n", CONFIG_IN_TASK,
	           "2:3: unknown config key 'gcp.vpc_name'\n"),
	   "in a task, gcp takes only its overridable keys");
	c = load("gcp:\n  vpc_name: x\naws: {anything: 1}\n", CONFIG_IN_FILE, &m);
	ok(c && !*m, "in a file, a cloud's section is taken as it is");
	cfg_free(c);
	free(m);
	c = load("kubernetes:\n  pod_config: {spec: {x: 1}}\n  provision_timeout: 30\n"
	         "docker: {run_options: -v}\n",
	         CONFIG_IN_TASK, &m);
	ok(c && !*m, "a task's config: sets what SkyPilot lets it");
	cfg_free(c);
	free(m);
	c = load("docker:\n  run_options:\n", CONFIG_IN_FILE, &m);
	ok(c && !*m, "an empty key is a key not given");
	cfg_free(c);
	free(m);
}

static void test_merge(void)
{
	char *m, *j;
	struct cfg_node *a, *b;

	a = load("docker:\n  run_options: [a, b]\nkubernetes:\n  provision_timeout: 10\n"
	         "slurm:\n  sbatch_options: {time: 5, qos: low}\n",
	         CONFIG_IN_FILE, &m);
	free(m);
	b = load("docker:\n  run_options: [c]\nslurm:\n  sbatch_options: {time: 9}\n",
	         CONFIG_IN_FILE, &m);
	free(m);
	cfg_merge(&a, b);
	j = json_of(a);
	is_str(j,
	       "{\"docker\":{\"run_options\":[\"c\"]},\"kubernetes\":{\"provision_timeout\":10},"
	       "\"slurm\":{\"sbatch_options\":{\"time\":9,\"qos\":\"low\"}}}",
	       "mappings merge key by key, lists are replaced, scalars too");
	free(j);
	ok(cfg_get(a, "slurm.sbatch_options.time")->line == 4,
	   "a merged key keeps the position of the layer that set it");
	cfg_free(a);

	a = load("kubernetes:\n  pod_config:\n    spec:\n      containers:\n        - name: c\n"
	         "          env: [{name: A, value: '1'}, {name: B, value: '2'}]\n"
	         "      volumes: [{name: v1, emptyDir: {}}]\n      tolerations: [{key: t1}]\n",
	         CONFIG_IN_FILE, &m);
	free(m);
	b = load("kubernetes:\n  pod_config:\n    spec:\n      containers:\n"
	         "        - env: [{name: B, value: '3'}, {name: C, value: '4'}]\n"
	         "      volumes: [{name: v2, emptyDir: {}}]\n      tolerations: [{key: t2}]\n",
	         CONFIG_IN_TASK, &m);
	free(m);
	cfg_merge(&a, b);
	j = json_of(cfg_get(a, "kubernetes.pod_config"));
	is_str(j,
	       "{\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
	       "{\"name\":\"B\",\"value\":\"3\"},{\"name\":\"C\",\"value\":\"4\"}]}],"
	       "\"volumes\":[{\"name\":\"v1\",\"emptyDir\":{}},{\"name\":\"v2\",\"emptyDir\":{}}],"
	       "\"tolerations\":[{\"key\":\"t1\"},{\"key\":\"t2\"}]}}",
	       "pod_config layers merge as SkyPilot's merge_k8s_configs: by name, appended");
	free(j);
	cfg_free(a);

	a = NULL;
	b = load("docker: {run_options: x}\n", CONFIG_IN_FILE, &m);
	free(m);
	cfg_merge(&a, b);
	ok(a == b, "merging into nothing takes the layer");
	cfg_merge(&a, NULL);
	ok(a == b, "merging nothing changes nothing");
	cfg_free(a);
}

static char *cli(const char *const *args, size_t n, char **msgs)
{
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *c = NULL;
	struct buf b = BUF_INIT(0);
	char *j;
	size_t i;

	for (i = 0; i < n; i++)
		config_add_cli(&c, args[i], &errs);
	for (i = 0; i < errs.n; i++)
		buf_addf(&b, "%s:%d:%d: %s\n", errs.v[i].file, errs.v[i].line, errs.v[i].col,
		         errs.v[i].msg);
	yerr_release(&errs);
	*msgs = buf_detach(&b, NULL);
	j = json_of(c);
	cfg_free(c);
	return j;
}

static void test_cli(void)
{
	const char *a1[] = {"kubernetes.provision_timeout=600,docker.run_options=[-v, \"a,b\"]",
	                    "docker.run_options=--shm-size=1g"};
	const char *a2[] = {"kubernetes.provision_timout=6"};
	const char *a3[] = {"no-such-file-or-pair"};
	const char *a4[] = {"a..b=1"};
	const char *a5[] = {"docker.run_options=[x", "kubernetes={pod_config: {spec: {}}}"};
	char path[256], *m, *j;
	const char *a6[] = {path, "slurm.quota.queue=gold"};
	FILE *f;

	j = cli(a1, 2, &m);
	is_str(j,
	       "{\"kubernetes\":{\"provision_timeout\":600},\"docker\":{\"run_options\":\"--shm-"
	       "size=1g\"}}",
	       "KEY=VALUE pairs: values are YAML, commas in brackets do not split, later wins");
	is_str(m, "", "no errors");
	free(j);
	free(m);
	j = cli(a2, 1, &m);
	is_str(m,
	       "--config:1:12: unknown config key 'kubernetes.provision_timout'; did you mean "
	       "'provision_timeout'?\n",
	       "a typo in a pair: its column, a did-you-mean");
	free(j);
	free(m);
	j = cli(a3, 1, &m);
	ok(strstr(m, "no-such-file-or-pair:1:1: cannot read the config file") == m,
	   "neither a file nor a pair: the file cannot be read");
	free(j);
	free(m);
	j = cli(a4, 1, &m);
	is_str(m,
	       "--config:1:3: 'a..b' is not a dotted key (names of letters, digits, '_' and '-' "
	       "joined by '.')\n",
	       "an empty key segment");
	free(j);
	free(m);
	j = cli(a5, 2, &m);
	ok(strncmp(m, "--config:1:", 11) == 0 && strstr(m, "\n") == m + strlen(m) - 1,
	   "a bad YAML value: one error at its column");
	is_str(j, "{\"kubernetes\":{\"pod_config\":{\"spec\":{}}}}", "a mapping value");
	free(j);
	free(m);
	snprintf(path, sizeof(path), "%s/layer.yaml", dir);
	f = fopen(path, "w");
	fputs("slurm:\n  quota: {queue: silver, account: acct}\n", f);
	fclose(f);
	j = cli(a6, 2, &m);
	is_str(j, "{\"slurm\":{\"quota\":{\"queue\":\"gold\",\"account\":\"acct\"}}}",
	       "a file, then a pair over it");
	is_str(m, "", "no errors");
	free(j);
	free(m);
}

/*
 * SkyPilot's OVERRIDEABLE_CONFIG_KEYS_IN_TASK, written out again (not read from the
 * schema), each with a value: a task may set every one; skiff honours four, and says of
 * each other one that it is ignored.
 */
static void test_task_keys(void)
{
	static const struct {
		const char *yaml, *path;
		int honoured;
	} keys[] = {
	        {"docker:\n  run_options: [-v]\n", "docker.run_options", 1},
	        {"nvidia_gpus:\n  disable_ecc: true\n", "nvidia_gpus.disable_ecc", 0},
	        {"ssh:\n  custom_metadata: {labels: {a: b}}\n", "ssh.custom_metadata", 0},
	        {"ssh:\n  pod_config: {spec: {}}\n", "ssh.pod_config", 0},
	        {"ssh:\n  provision_timeout: 60\n", "ssh.provision_timeout", 0},
	        {"kubernetes:\n  custom_metadata: {labels: {a: b}}\n", "kubernetes.custom_metadata",
	         1},
	        {"kubernetes:\n  pod_config: {spec: {}}\n", "kubernetes.pod_config", 1},
	        {"kubernetes:\n  provision_timeout: 60\n", "kubernetes.provision_timeout", 1},
	        {"kubernetes:\n  dws: {enabled: true}\n", "kubernetes.dws", 0},
	        {"kubernetes:\n  kueue: {local_queue_name: q}\n", "kubernetes.kueue", 0},
	        {"kubernetes:\n  remote_identity: SERVICE_ACCOUNT\n", "kubernetes.remote_identity",
	         0},
	        {"gcp:\n  managed_instance_group: {run_duration: 60}\n", "gcp", 0},
	        {"gcp:\n  enable_gvnic: true\n", "gcp", 0},
	        {"gcp:\n  enable_gpu_direct: true\n", "gcp", 0},
	        {"gcp:\n  placement_policy: compact\n", "gcp", 0},
	        {"vast:\n  datacenter_only: true\n", "vast", 0},
	        {"vast:\n  create_instance_kwargs: {image_login: x}\n", "vast", 0},
	        {"active_workspace: team\n", "active_workspace", 0},
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct yerrors errs = YERRORS_INIT;
		char want[160], *m;
		struct cfg_node *c = load(keys[i].yaml, CONFIG_IN_TASK, &m);

		ok(c && !*m, "a task's config: may set %s", keys[i].yaml);
		if (*m)
			printf("#   got: %s", m);
		config_warn_ignored(c, NULL, &errs);
		snprintf(want, sizeof(want), "config key '%s' is ignored: ", keys[i].path);
		if (keys[i].honoured)
			is_int(errs.n, 0, "honoured: %s", keys[i].path);
		else
			ok(errs.n == 1 && errs.v[0].warning &&
			           !strncmp(errs.v[0].msg, want, strlen(want)),
			   "ignored, with why: %s", keys[i].path);
		yerr_release(&errs);
		cfg_free(c);
		free(m);
	}
	ok(refused("ssh:\n  allowed_node_pools: [a]\n", CONFIG_IN_TASK,
	           "2:3: config key 'ssh.allowed_node_pools' cannot be set in a task's config: (as "
	           "in SkyPilot: only docker.run_options, kubernetes.pod_config, ... may be); set "
	           "it in the config file or with --config\n"),
	   "a key outside SkyPilot's list, in a section that has some: refused at its place");
	ok(refused("active_workspac: team\n", CONFIG_IN_TASK,
	           "1:1: unknown config key 'active_workspac'; did you mean 'active_workspace'?\n"),
	   "a typo of one: did-you-mean");
	ok(refused("vast:\n  secure_only: true\n", CONFIG_IN_TASK,
	           "2:3: unknown config key 'vast.secure_only'\n"),
	   "in a task, vast takes only its overridable keys");
	ok(refused("workspace: team\n", CONFIG_IN_TASK,
	           "1:1: config key 'workspace' cannot be set in a task's config: (as in SkyPilot: "
	           "only docker.run_options, kubernetes.pod_config, ... may be); set it in the "
	           "config file or with --config\n"),
	   "workspace is not active_workspace");
}

static void test_ignored(void)
{
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *c;
	char **seen = NULL, *m;

	c = load("aws:\n  vpc_name: x\nkubernetes:\n  autoscaler: gke\n  pod_config: {}\n"
	         "jobs:\n  controller:\n    resources: {cpus: 2, disk_size: 9}\n"
	         "    task_logs_gc_retention_hours: -1\n"
	         "docker: {run_options: -v}\n",
	         CONFIG_IN_FILE, &m);
	free(m);
	config_warn_ignored(c, &seen, &errs);
	is_int(errs.n, 3, "three keys are ignored");
	ok(errs.n == 3 && errs.v[0].warning && errs.v[0].line == 1 && errs.v[0].col == 1 &&
	           !strcmp(errs.v[0].msg, "config key 'aws' is ignored: only a cloud reads it; "
	                                  "skiff's infras are local, ssh, podman, docker, k8s and "
	                                  "slurm"),
	   "a cloud's section: a warning with why, at its place");
	ok(errs.n == 3 &&
	           !strncmp(errs.v[1].msg, "config key 'kubernetes.autoscaler' is ignored", 45),
	   "a kubernetes key skiff does not use");
	ok(errs.n == 3 &&
	           !strncmp(errs.v[2].msg,
	                    "config key 'jobs.controller.resources.disk_size' is ignored", 59),
	   "a controller resource other than cpus and memory");
	config_warn_ignored(c, &seen, &errs);
	is_int(errs.n, 3, "each is reported once");
	yerr_release(&errs);
	config_seen_free(seen);
	cfg_free(c);
}

static void test_words(void)
{
	char **w = NULL;
	size_t n = 0;
	const char *why = NULL;

	is_int(config_split_words("--env 'A=b c' \"D=\\\"e\\\"\" x\\ y --label=z", &w, &n, &why), 5,
	       "words split as a shell would");
	ok(n == 5 && !strcmp(w[1], "A=b c") && !strcmp(w[2], "D=\"e\"") && !strcmp(w[3], "x y") &&
	           !strcmp(w[4], "--label=z") && !w[5],
	   "quotes and backslashes, no expansion");
	config_words_free(w);
	w = NULL;
	n = 0;
	is_int(config_split_words("$(touch x) `y` $HOME", &w, &n, &why), 4, "nothing is expanded");
	ok(n == 4 && !strcmp(w[0], "$(touch") && !strcmp(w[3], "$HOME"), "a $( stays text");
	config_words_free(w);
	w = NULL;
	n = 0;
	ok(config_split_words("a \"b", &w, &n, &why) < 0 && !strcmp(why, "a \" is not closed"),
	   "an open quote is refused");
	config_words_free(w);
}

static void test_readers(void)
{
	struct cfg_node *c;
	char **w, *m;
	double cpus, mem;

	c = load("docker:\n  run_options:\n    - --label skiff.test=1\n    - \"--env FOO='a b'\"\n"
	         "slurm:\n  sbatch_options: {time: '10:00', exclusive: true, requeue: null, "
	         "hold: false, nice: 5}\n  quota: {queue: gold, account: acct}\n"
	         "kubernetes:\n  provision_timeout: 42\n"
	         "jobs:\n  controller:\n    resources: {cpus: 4+, memory: 8GB}\n"
	         "    task_logs_gc_retention_hours: 0.5\n",
	         CONFIG_IN_FILE, &m);
	free(m);
	w = config_run_options(c);
	ok(w && !strcmp(w[0], "--label") && !strcmp(w[1], "skiff.test=1") &&
	           !strcmp(w[2], "--env") && !strcmp(w[3], "FOO=a b") && !w[4],
	   "docker.run_options: the words of each entry");
	config_words_free(w);
	w = config_slurm_options(c);
	ok(w && !strcmp(w[0], "--time=10:00") && !strcmp(w[1], "--exclusive") &&
	           !strcmp(w[2], "--requeue") && !strcmp(w[3], "--nice=5") &&
	           !strcmp(w[4], "--qos=gold") && !strcmp(w[5], "--account=acct") && !w[6],
	   "salloc options: --K=V, --K for true and null, none for false; quota");
	config_words_free(w);
	is_int(config_k8s_provision_timeout(c, 600), 42, "kubernetes.provision_timeout");
	is_int(config_k8s_provision_timeout(NULL, 600), 600, "its default");
	config_controller_resources(c, &cpus, &mem);
	ok(cpus == 4 && mem == 8, "jobs.controller.resources: 4+ CPUs, 8 GB");
	ok(config_task_logs_retention_hours(c, 168) == 0.5,
	   "jobs.controller.task_logs_gc_retention_hours: fractions of hours");
	ok(config_task_logs_retention_hours(NULL, 168) == 168, "its default");
	ok(!config_run_options(NULL) && !config_slurm_options(NULL), "no config: nothing to add");
	cfg_free(c);
}

static void test_pod(void)
{
	struct infra inf = {0};
	struct cfg_node *c;
	char *m, *pod;

	inf.image = "busybox:1";
	pod = infra_k8s_pod_manifest(&inf, "skiff-c-0", "c", "L1");
	ok(strstr(pod, "\"name\":\"skiff-c-0\"") && strstr(pod, "\"image\":\"busybox:1\"") &&
	           !strstr(pod, "nodeSelector"),
	   "the pod without a config");
	free(pod);
	c = load("kubernetes:\n  pod_config:\n    metadata:\n      labels: {team: ml}\n"
	         "    spec:\n      nodeSelector: {pool: gpu}\n      containers:\n"
	         "        - env: [{name: FOO, value: bar}]\n          resources:\n"
	         "            limits: {memory: 1Gi}\n"
	         "  custom_metadata:\n    annotations: {a: b}\n",
	         CONFIG_IN_FILE, &m);
	free(m);
	inf.config = c;
	pod = infra_k8s_pod_manifest(&inf, "skiff-c-0", "c", "L1");
	ok(strstr(pod, "\"metadata\":{\"name\":\"skiff-c-0\",\"labels\":{\"skiff.managed\":\"1\","
	               "\"skiff.cluster\":\"c\",\"skiff.launcher\":\"L1\",\"team\":\"ml\"},"
	               "\"annotations\":{\"a\":\"b\"}}") &&
	           strstr(pod, "\"containers\":[{\"name\":\"skiff\",\"image\":\"busybox:1\","
	                       "\"command\":[\"/bin/sh\",\"-c\",") &&
	           strstr(pod, "],\"env\":[{\"name\":\"FOO\",\"value\":\"bar\"}],\"resources\":{"
	                       "\"limits\":{\"memory\":\"1Gi\"}}}],\"nodeSelector\":{\"pool\":"
	                       "\"gpu\"}}}"),
	   "pod_config and custom_metadata merged into the pod skiff creates (%s)", pod);
	free(pod);
	cfg_free(c);
}

/* The task's resources and labels in the pod, as SkyPilot's pod template puts them. */
static void test_pod_resources(void)
{
	struct task_kv labels[] = {{"project", "p1", 0, 0},
	                           {"skiff.cluster", "not-ours", 0, 0},
	                           {"empty", NULL, 0, 0}};
	struct task_resources res = {0};
	struct infra inf = {0};
	char *pod;

	inf.image = "busybox:1";
	inf.res = &res;
	pod = infra_k8s_pod_manifest(&inf, "skiff-c-0", "c", "L1");
	ok(!strstr(pod, "\"resources\""), "no resources asked: none in the pod (%s)", pod);
	free(pod);
	res.cpus.text = "0.5";
	res.cpus.value = 0.5;
	res.memory.text = "2x";
	res.memory.value = 2;
	res.memory.mode = TASK_PER_CPU;
	res.labels.v = labels;
	res.labels.n = ARRAY_SIZE(labels);
	pod = infra_k8s_pod_manifest(&inf, "skiff-c-0", "c", "L1");
	ok(strstr(pod, "\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1024Mi\"}}") &&
	           !strstr(pod, "limits"),
	   "cpus 0.5, memory 2x: requests of 500m and 1 GiB (%s)", pod);
	ok(strstr(pod, "\"labels\":{\"project\":\"p1\",\"skiff.managed\":\"1\",\"skiff.cluster\":"
	               "\"c\",\"skiff.launcher\":\"L1\"}"),
	   "the task's labels, but never one of skiff's own (%s)", pod);
	free(pod);
	res.cpus.text = NULL;
	res.memory.text = "1.5+";
	res.memory.value = 1.5;
	res.memory.mode = TASK_AT_LEAST;
	res.accel.name = "H100";
	res.accel.count = 2;
	pod = infra_k8s_pod_manifest(&inf, "skiff-c-0", "c", "L1");
	ok(strstr(pod, "\"resources\":{\"requests\":{\"memory\":\"1536Mi\",\"nvidia.com/gpu\":2},"
	               "\"limits\":{\"nvidia.com/gpu\":2}}"),
	   "GPUs: requests and limits alike (%s)", pod);
	free(pod);
}

static void test_frozen(void)
{
	struct task_overrides o = TASK_OVERRIDES_INIT, back = TASK_OVERRIDES_INIT;
	struct config_layers L = CONFIG_LAYERS_INIT, L2 = CONFIG_LAYERS_INIT;
	struct yerrors errs = YERRORS_INIT;
	struct task_list tl;
	struct cfg_node *c = NULL;
	struct msg msg;
	const char *task = "run: x\nconfig:\n  docker:\n    run_options: [--from-task]\n";
	char path[256], *j;
	FILE *f;

	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	f = fopen(path, "w");
	fputs("docker:\n  run_options: [--from-file]\nkubernetes:\n  provision_timeout: 5\n", f);
	fclose(f);
	setenv(CONFIG_ENV, path, 1);
	o.config = xcalloc(1, sizeof(*o.config));
	o.config[o.nconfig++] = xstrdup("kubernetes.provision_timeout=7");
	ok(!task_parse_buf(&tl, "t.yaml", task, strlen(task), &errs), "a task with a config:");
	ok(!config_layers_load(&L, &o, &errs), "the layers load");
	ok(!config_for_task(&L, tl.tasks[0], tl.file, &c, &errs), "merged for the task");
	j = json_of(c);
	is_str(j,
	       "{\"docker\":{\"run_options\":[\"--from-task\"]},\"kubernetes\":{"
	       "\"provision_timeout\":7}}",
	       "file, then the task's config:, then --config");
	free(j);
	cfg_free(c);
	ok(cfg_get(c = NULL, "x") == NULL, "no config, no key");
	config_layers_freeze(&L, &o);
	msg_init(&msg);
	task_overrides_encode(&o, &msg);
	ok(!task_overrides_decode(&back, msg.raw.p, msg.raw.len), "the frozen layers decode");
	msg_release(&msg);
	/* The file changes after submit: the job keeps what it was submitted with. */
	f = fopen(path, "w");
	fputs("docker:\n  run_options: [--changed]\n", f);
	fclose(f);
	ok(!config_layers_load(&L2, &back, &errs), "the frozen layers load");
	ok(!config_for_task(&L2, tl.tasks[0], tl.file, &c, &errs), "merged again");
	j = json_of(c);
	is_str(j,
	       "{\"docker\":{\"run_options\":[\"--from-task\"]},\"kubernetes\":{"
	       "\"provision_timeout\":7}}",
	       "a managed job runs with the config of its submit");
	free(j);
	cfg_free(c);
	is_int(errs.n, 0, "no errors or warnings");
	unsetenv(CONFIG_ENV);
	config_layers_release(&L);
	config_layers_release(&L2);
	task_overrides_release(&o);
	task_overrides_release(&back);
	task_list_release(&tl);
	yerr_release(&errs);
}

static void test_task_config(void)
{
	struct yerrors errs = YERRORS_INIT;
	struct task_list tl;
	const char *y = "run: x\nconfig:\n  kubernetes:\n    pod_confg: {}\n";

	ok(task_parse_buf(&tl, "t.yaml", y, strlen(y), &errs) && errs.n == 1 &&
	           errs.v[0].line == 4 && errs.v[0].col == 5 &&
	           !strcmp(errs.v[0].msg, "unknown config key 'kubernetes.pod_confg'; did you "
	                                  "mean 'pod_config'?"),
	   "the task parser refuses a typo in config: at its line and column");
	yerr_release(&errs);
}

static void test_json(void)
{
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *c = NULL, *d = NULL;
	char *m, *j, *k;

	c = load("aws: {a: yes, b: '1', c: 1.5, d: ~, e: 0x1F, f: \"x\\u00e9\", g: [1, {h: i}]}\n",
	         CONFIG_IN_FILE, &m);
	free(m);
	j = json_of(c);
	is_str(j,
	       "{\"aws\":{\"a\":true,\"b\":\"1\",\"c\":1.5,\"d\":null,\"e\":\"0x1F\",\"f\":"
	       "\"x\xc3\xa9\",\"g\":[1,{\"h\":\"i\"}]}}",
	       "JSON keeps the types YAML gave");
	ok(!config_from_json(j, "j", &d, &errs), "and reads back");
	k = json_of(d);
	is_str(k, j, "the same tree");
	free(j);
	free(k);
	cfg_free(c);
	cfg_free(d);
	j = json_of(NULL);
	is_str(j, "null", "no config is null");
	ok(!config_from_json(j, "j", &d, &errs) && !d, "and null is no config");
	free(j);
	yerr_release(&errs);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	plan_run(test_validate);
	plan_run(test_merge);
	plan_run(test_cli);
	plan_run(test_task_keys);
	plan_run(test_ignored);
	plan_run(test_words);
	plan_run(test_readers);
	plan_run(test_pod);
	plan_run(test_pod_resources);
	plan_run(test_frozen);
	plan_run(test_task_config);
	plan_run(test_json);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			return 1;
	}
	return done_testing();
}
