/* Unit tests for lib/task*.c: fields, resources, runtime_env, pipelines, overrides, JSON. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/json.h"
#include "lib/proto.h"
#include "lib/task.h"
#include "lib/util.h"
#include "tests/unit/harness.h"
#include "lib/banned.h"

static struct task_list L;
static struct yerrors E;
static char msg[1024];  /* "LINE:COL: message" of the first error */
static char warn[1024]; /* the same for the first warning */

static int parse(const char *text)
{
	size_t i;
	int r;

	task_list_release(&L);
	yerr_release(&E);
	r = task_parse_buf(&L, "t.yaml", text, strlen(text), &E);
	msg[0] = warn[0] = '\0';
	for (i = E.n; i-- > 0;) {
		char *dst = E.v[i].warning ? warn : msg;

		snprintf(dst, sizeof(msg), "%d:%d: %s", E.v[i].line, E.v[i].col, E.v[i].msg);
	}
	return r;
}

static struct task *T(void)
{
	return L.n ? L.tasks[0] : NULL;
}

static struct task_resources *R(size_t i)
{
	return T() && i < T()->nres ? &T()->res[i] : NULL;
}

/* Parses text and checks it fails with exactly `want` as its first error. */
static void fails(const char *text, const char *want)
{
	char shown[80];
	size_t i;

	/* TAP descriptions are one line. */
	for (i = 0; text[i] && i + 1 < sizeof(shown); i++)
		shown[i] = text[i] == '\n' ? '|' : text[i];
	shown[i] = '\0';
	ok(parse(text) == -EINVAL, "rejects: %s", shown);
	is_str(msg, want, "  with its message");
}

static void test_minimal(void)
{
	ok(!parse("run: echo hi\n"), "a task with only run");
	ok(L.n == 1 && T()->num_nodes == 1 && T()->nres == 1, "defaults: 1 node, 1 alternative");
	is_str(T()->run, "echo hi", "run");
	ok(T()->setup == NULL && T()->name == NULL, "no setup, no name");
	ok(R(0)->set == 0 && R(0)->accel.name == NULL, "resources unset");
	ok(!parse("resources:\n  cpus: 2\n"), "a task without run (a cluster only)");
	ok(T()->run == NULL, "run is NULL");
	ok(!parse("name: a\nresources:\n# all commented out\nrun: x\n"), "an empty field");
	is_int(T()->nres, 1, "is a field not given");
	ok(!parse("\xef\xbb\xbfrun: x\n"), "a UTF-8 byte order mark is fine");
}

static void test_top_level_fields(void)
{
	ok(!parse("name: train\n"
	          "workdir: ~/code\n"
	          "num_nodes: 4\n"
	          "envs:\n  A: x\n  B: 8\n  C: true\n  D:\n  E: ''\n"
	          "secrets:\n  TOKEN: s3cr3t\n  KEY: null\n"
	          "file_mounts:\n  /data: ~/data\n  /ckpt:\n    name: bucket\n    mode: mount\n"
	          "setup: pip install x\n"
	          "run: |\n  python train.py\n"
	          "config:\n  kubernetes:\n    pod_config: {spec: {}}\n"
	          "service:\n  readiness_probe: /\n"
	          "event_callback: echo done\n"
	          "inputs: {gs://x: 70}\n"
	          "volumes: {/mnt/data: pvc}\n"
	          "_metadata: {a: 1}\n"),
	   "every top-level field");
	is_str(T()->name, "train", "name");
	is_str(L.name, "train", "a single task names the pipeline");
	ok(T()->workdir.kind == TASK_WORKDIR_PATH, "workdir path");
	is_str(T()->workdir.path, "~/code", "workdir as written");
	is_int(T()->num_nodes, 4, "num_nodes");
	is_int(T()->envs.n, 5, "five envs");
	is_str(task_kvs_get(&T()->envs, "B")->value, "8", "a number env is its text");
	is_str(task_kvs_get(&T()->envs, "C")->value, "true", "a bool env is its text");
	ok(task_kvs_get(&T()->envs, "D")->value == NULL, "a null env is NULL");
	is_str(task_kvs_get(&T()->envs, "E")->value, "", "an empty string env is empty");
	is_int(task_kvs_get(&T()->envs, "D")->line, 8, "env line");
	is_int(T()->secrets.n, 2, "two secrets");
	is_int(T()->nmounts, 2, "two mounts");
	is_str(T()->mounts[0].src, "~/data", "a path mount");
	ok(T()->mounts[1].src == NULL && T()->mounts[1].storage != NULL, "a storage mount kept");
	is_str(T()->setup, "pip install x", "setup");
	is_str(T()->run, "python train.py\n", "run");
	ok(T()->config && T()->service && T()->inputs && T()->volumes && T()->metadata,
	   "free-form fields kept");
	is_str(T()->event_callback, "echo done", "event_callback");

	ok(!parse("workdir:\n  url: https://github.com/x/y\n  ref: v1\n"), "git workdir");
	ok(T()->workdir.kind == TASK_WORKDIR_GIT, "kind git");
	is_str(T()->workdir.url, "https://github.com/x/y", "url");
	is_str(T()->workdir.ref, "v1", "ref");
	fails("workdir: {ref: v1}\n",
	      "1:10: workdir needs 'url' (a git repository) in its mapping form");
	fails("workdir: {url: x, branch: y}\n", "1:19: unknown field 'branch' in workdir");
	fails("workdir: [a]\n", "1:10: workdir must be a path or a mapping {url, ref}, not a list");

	fails("num_nodes: two\n", "1:12: num_nodes must be an integer, not a string");
	fails("num_nodes: '2'\n", "1:12: num_nodes must be an integer, not a string");
	fails("num_nodes: 0\n", "1:12: num_nodes must be between 1 and 100000, not 0");
	fails("num_nodes: 1.5\n", "1:12: num_nodes must be an integer, not a number");
	fails("name: 12\n", "1:7: name must be a string, not an integer");
	fails("run: [a, b]\n", "1:6: run must be a string, not a list");
	fails("setup: {a: b}\n", "1:8: setup must be a string, not a mapping");
	fails("config: [1]\n", "1:9: config must be a mapping, not a list");
	fails("service: x\n", "1:10: service must be a mapping, not a string");
	fails("config: {[a]: 1}\n", "1:10: keys in config must be strings, not a list");
	fails("inputs: {a: 1, b: 2}\n",
	      "1:9: inputs must be a mapping of one path to its size in GB, not a mapping");
	fails("volume_mounts: {a: 1}\n", "1:16: volume_mounts must be a list, not a mapping");
	fails("api_server_access: maybe\n",
	      "1:20: api_server_access must be true or false, not a string");
}

static void test_unknown_keys(void)
{
	fails("ressources:\n  cpus: 2\nrun: x\n",
	      "1:1: unknown field 'ressources'; did you mean 'resources'?");
	fails("run: x\nenv:\n  A: b\n", "2:1: unknown field 'env'; did you mean 'envs'?");
	fails("run: x\nfoo_bar_baz: 1\n", "2:1: unknown field 'foo_bar_baz'");
	fails("run: x\nresources:\n  acelerators: H100\n",
	      "3:3: unknown field 'acelerators' in resources; did you mean 'accelerators'?");
	fails("resources:\n  any_of:\n    - infr: aws\n",
	      "3:7: unknown field 'infr' in resources.any_of[0]; did you mean 'infra'?");
	fails("resources:\n  any_of:\n    - ordered: []\n",
	      "3:7: unknown field 'ordered' in resources.any_of[0]");
	fails("runtime_env:\n  pips: [a]\n",
	      "2:3: unknown field 'pips' in runtime_env; did you mean 'pip'?");
	fails("resources:\n  autostop:\n    idle_minute: 5\n",
	      "3:5: unknown field 'idle_minute' in resources.autostop; did you mean 'idle_minutes'?");
	ok(parse("run: x\nrnu: y\nsetpu: z\n") && E.nerrors == 2, "every unknown key is reported");
}

static void test_envs(void)
{
	fails("envs:\n  1BAD: x\n",
	      "2:3: '1BAD' in envs is not a valid variable name (letters, digits and '_', not "
	      "starting with a digit)");
	fails("envs:\n  A-B: x\n",
	      "2:3: 'A-B' in envs is not a valid variable name (letters, digits and '_', not "
	      "starting with a digit)");
	fails("envs:\n  A: [1]\n", "2:6: envs.A must be a string, not a list");
	fails("envs: [A]\n", "1:7: envs must be a mapping of names to values, not a list");
	fails("secrets: [A]\n",
	      "1:10: secrets as a list (managed secret references) are not supported; use a "
	      "mapping of names to values");
	ok(!parse("envs:\n  _ok9: x\n"), "an underscore name is fine");
}

static void test_resources_values(void)
{
	ok(!parse("resources:\n  cpus: 4+\n  memory: 32+\n  accelerators: H100:8\n"
	          "  disk_size: 512\n  use_spot: yes\n  ports: [8080, '9000-9010']\n"
	          "  priority: -5\n  instance_type: p4d.24xlarge\n  disk_tier: Best\n"
	          "  network_tier: standard\n  labels: {team: ml}\n"),
	   "common resources");
	is_str(R(0)->cpus.text, "4+", "cpus text");
	ok(R(0)->cpus.mode == TASK_AT_LEAST && R(0)->cpus.value == 4, "cpus at least 4");
	is_str(R(0)->memory.text, "32+", "memory text");
	is_str(R(0)->accel.name, "H100", "accelerator name");
	ok(R(0)->accel.count == 8, "accelerator count");
	is_int(R(0)->disk_size, 512, "disk size");
	ok(R(0)->use_spot == 1 && (R(0)->set & TR_USE_SPOT), "use_spot yes");
	is_int(R(0)->nports, 2, "two port entries");
	ok(R(0)->ports[1].lo == 9000 && R(0)->ports[1].hi == 9010, "port range");
	is_int(R(0)->priority, -5, "priority");
	is_str(R(0)->disk_tier, "best", "disk tier lower-cased");
	is_str(task_kvs_get(&R(0)->labels, "team")->value, "ml", "labels");

	ok(!parse("resources:\n  cpus: 0.5\n  memory: 4x\n  accelerators: {A100: 0.5}\n"),
	   "fractions and per-cpu memory");
	ok(R(0)->cpus.mode == TASK_EXACT && R(0)->cpus.value == 0.5, "cpus 0.5");
	ok(R(0)->memory.mode == TASK_PER_CPU && R(0)->memory.value == 4, "memory 4x");
	ok(R(0)->accel.count == 0.5, "half a GPU");
	ok(!parse("resources:\n  memory: 512MB+\n  disk_size: 1TB\n"), "size units");
	is_str(R(0)->memory.text, "0.5+", "memory in GiB");
	is_int(R(0)->disk_size, 1024, "1TB is 1024 GiB");
	ok(!parse("resources:\n  disk_size: '256GB'\n  gpus: T4\n"),
	   "disk_size string, gpus alias");
	is_int(R(0)->disk_size, 256, "256GB");
	ok(R(0)->accel.count == 1, "no count means 1");

	fails("resources:\n  cpus: lots\n",
	      "2:9: resources.cpus must be a number like 4 or 4+, not 'lots'");
	fails("resources:\n  cpus: 0\n",
	      "2:9: resources.cpus must be more than 0, at most 1000000, not '0'");
	/* Past TASK_AMOUNT_MAX a product with the other (MiB for salloc) would not fit. */
	fails("resources:\n  cpus: 1e300\n",
	      "2:9: resources.cpus must be more than 0, at most 1000000, not '1e300'");
	fails("resources:\n  memory: 2000000+\n",
	      "2:11: resources.memory must be more than 0, at most 1000000 GiB, not '2000000+'");
	fails("resources:\n  memory: 9000000TB\n",
	      "2:11: resources.memory must be more than 0, at most 1000000 GiB, not '9000000TB'");
	fails("resources:\n  memory: .nan\n",
	      "2:11: resources.memory must be a number like 4 or 4+ (GiB; also 16GB, 512MB+ or "
	      "4x for 4 GiB per CPU), not '.nan'");
	fails("resources:\n  cpus: [4]\n",
	      "2:9: resources.cpus must be a number or a string like \"4+\", not a list");
	fails("resources:\n  memory: 4x+\n",
	      "2:11: resources.memory must be a number like 4 or 4+ (GiB; also 16GB, 512MB+ or "
	      "4x for 4 GiB per CPU), not '4x+'");
	fails("resources:\n  accelerators: H100:x\n",
	      "2:17: resources.accelerators: count in 'H100:x' must be a number more than 0, at "
	      "most 65536");
	/* (int)ceil() of the count is how nodes reserve it: past an int it would be UB. */
	fails("resources:\n  accelerators: H100:1e300\n",
	      "2:17: resources.accelerators: count in 'H100:1e300' must be a number more than 0, "
	      "at most 65536");
	fails("resources:\n  accelerators: H100:nan\n",
	      "2:17: resources.accelerators: count in 'H100:nan' must be a number more than 0, at "
	      "most 65536");
	fails("resources:\n  accelerators: 'H 100'\n",
	      "2:17: resources.accelerators: 'H 100' must be NAME or NAME:COUNT (like H100:8)");
	fails("resources:\n  accelerators: {H100: 0}\n",
	      "2:24: resources.accelerators: the count of 'H100' must be a number more than 0, at "
	      "most 65536, not 0");
	fails("resources:\n  accelerators: {H100: -2.5}\n",
	      "2:24: resources.accelerators: the count of 'H100' must be a number more than 0, at "
	      "most 65536, not -2.5");
	fails("resources:\n  accelerators: {H100: .inf}\n",
	      "2:24: resources.accelerators: the count of 'H100' must be a number more than 0, at "
	      "most 65536, not .inf");
	fails("resources:\n  accelerators: {H100: 65537}\n",
	      "2:24: resources.accelerators: the count of 'H100' must be a number more than 0, at "
	      "most 65536, not 65537");
	fails("resources:\n  accelerators: {H100: [1]}\n",
	      "2:24: resources.accelerators must be an accelerator count (a number more than 0), "
	      "not a list");
	fails("resources:\n  accelerators: 8\n",
	      "2:17: resources.accelerators must be a string like \"H100:8\", not an integer");
	fails("resources:\n  gpus: T4\n  accelerators: T4\n",
	      "2:3: resources: give 'accelerators' or its alias 'gpus', not both");
	fails("resources:\n  disk_size: 1.5\n",
	      "2:14: resources.disk_size must be a size in GiB (256 or \"256GB\"), not a number");
	fails("resources:\n  disk_size: 0.5GB\n",
	      "2:14: resources.disk_size must be a whole number of GiB (256 or \"256GB\"), not "
	      "'0.5GB'");
	fails("resources:\n  ports: 70000\n",
	      "2:10: resources.ports: '70000' is not a port (1-65535) or a range LO-HI");
	fails("resources:\n  ports: 9000-8000\n",
	      "2:10: resources.ports: '9000-8000' is not a port (1-65535) or a range LO-HI");
	fails("resources:\n  use_spot: sometimes\n",
	      "2:13: resources.use_spot must be true or false, not a string");
	fails("resources:\n  priority: 1001\n",
	      "2:13: resources.priority must be between -1000 and 1000, not 1001");
	fails("resources:\n  disk_tier: fast\n", "2:14: resources.disk_tier: unknown value 'fast'");
	fails("resources:\n  disk_tier: medum\n",
	      "2:14: resources.disk_tier: unknown value 'medum'; did you mean 'medium'?");
	fails("resources:\n  labels: {a: 1}\n",
	      "2:15: resources.labels.a must be a string, not an integer");
	fails("resources:\n  accelerator_args: {tpu_vm: 2}\n",
	      "2:30: resources.accelerator_args.tpu_vm must be true or false, not an integer");
	fails("resources: [cpus]\n", "1:12: resources must be a mapping, not a list");
	fails("resources:\n  image_id: 'docker:'\n",
	      "2:13: resources.image_id: the image name is empty");
}

static void test_infra(void)
{
	ok(!parse("resources:\n  infra: aws/us-east-1/us-east-1a\n"), "cloud/region/zone");
	is_str(R(0)->cloud, "aws", "cloud");
	is_str(R(0)->region, "us-east-1", "region");
	is_str(R(0)->zone, "us-east-1a", "zone");
	ok(!parse("resources:\n  infra: gcp/*/us-central1-a\n"), "wildcard region");
	ok(R(0)->region == NULL && !strcmp(R(0)->zone, "us-central1-a"), "zone only");
	ok(!parse("resources:\n  infra: k8s/arn:aws:eks:us-east-1:1:cluster/my\n"), "k8s context");
	is_str(R(0)->cloud, "kubernetes", "k8s is kubernetes");
	is_str(R(0)->region, "arn:aws:eks:us-east-1:1:cluster/my", "context keeps its slashes");
	ok(!parse("resources:\n  infra: ssh/my-pool\n"), "ssh pool");
	is_str(R(0)->region, "my-pool", "pool name");
	ok(!parse("resources:\n  infra: '*'\n"), "any infra");
	ok(R(0)->cloud == NULL, "no cloud");
	ok(!parse("resources:\n  cloud: GCP\n  region: us-east1\n"), "old cloud/region fields");
	is_str(R(0)->infra, "gcp/us-east1", "make an infra");
	ok(R(0)->set & TR_CLOUD, "cloud marked as set");
	fails("resources:\n  infra: aws\n  region: us-east-1\n",
	      "2:3: resources: give 'infra' or the older 'cloud'/'region'/'zone', not both");
	fails("resources:\n  infra: awz/us-east-1\n",
	      "2:10: resources.infra: unknown cloud 'awz'; did you mean 'aws'?");
	fails("resources:\n  infra: aws/a/b/c\n",
	      "2:10: resources.infra: 'aws/a/b/c' has too many parts: expected CLOUD[/REGION[/ZONE]]");
	fails("resources:\n  infra: aws//b\n", "2:10: resources.infra: 'aws//b' has an empty part");
	fails("resources:\n  infra: k8s/\n", "2:10: resources.infra: 'k8s/' ends with '/'");
	{
		/* At most TASK_INFRA_MAX characters: "k8s/" and a long context. */
		char text[TASK_INFRA_MAX + 64], want[160];
		int n = TASK_INFRA_MAX - 4;

		snprintf(text, sizeof(text), "resources:\n  infra: k8s/%0*d\n", n, 0);
		ok(!parse(text) && strlen(R(0)->region) == (size_t)n, "a %d-character infra",
		   TASK_INFRA_MAX);
		snprintf(text, sizeof(text), "resources:\n  infra: k8s/%0*d\n", n + 1, 0);
		snprintf(
		        want, sizeof(want),
		        "2:10: resources.infra: 'k8s/%.36s...' is %d characters long, more than %d",
		        text + strlen("resources:\n  infra: k8s/"), TASK_INFRA_MAX + 1,
		        TASK_INFRA_MAX);
		fails(text, want);
	}
}

static void test_alternatives(void)
{
	ok(!parse("resources:\n  cpus: 4\n  labels: {a: x}\n  any_of:\n"
	          "    - infra: aws\n      labels: {b: y}\n    - infra: gcp\n      cpus: 8\n"),
	   "any_of");
	is_int(T()->nres, 2, "two alternatives");
	ok(!T()->res_ordered, "any order");
	is_str(R(0)->cloud, "aws", "first alternative");
	is_str(R(0)->cpus.text, "4", "shared field merged");
	is_str(R(1)->cpus.text, "8", "alternative's own field wins");
	is_int(R(0)->labels.n, 2, "labels merge");
	is_int(R(1)->labels.n, 1, "shared labels only");
	is_int(R(1)->line, 7, "alternative's line");

	ok(!parse("resources:\n  ordered:\n    - accelerators: A10g\n    - accelerators: L4\n"),
	   "ordered");
	ok(T()->res_ordered && T()->nres == 2, "in order");
	ok(!parse("resources:\n  accelerators: [A100, V100:2]\n"), "accelerator list");
	ok(T()->res_ordered && T()->nres == 2, "is ordered alternatives");
	ok(R(1)->accel.count == 2, "second choice count");
	ok(!parse("resources:\n  accelerators: {'A100:1', 'V100:1', T4}\n"), "accelerator set");
	ok(!T()->res_ordered && T()->nres == 3, "is any_of alternatives");
	is_str(R(2)->accel.name, "T4", "third");
	ok(!parse("resources:\n  accelerators: {T4: 1, L4: 1}\n  any_of:\n"
	          "    - use_spot: true\n    - use_spot: false\n"),
	   "a set of accelerators times any_of");
	is_int(T()->nres, 4, "gives the product");
	ok(R(1)->use_spot && !R(2)->use_spot && !strcmp(R(2)->accel.name, "T4"),
	   "alternative-major order");
	fails("resources:\n  accelerators: [T4, L4]\n  any_of:\n    - use_spot: true\n",
	      "2:3: resources: a list of accelerators cannot be combined with any_of");
	fails("resources:\n  accelerators: {T4, L4}\n  ordered:\n    - use_spot: true\n",
	      "2:3: resources: a set of accelerators cannot be combined with ordered");
	fails("resources:\n  any_of:\n    - accelerators: [T4, L4]\n",
	      "3:7: resources.any_of[0]: give one accelerator per alternative");
	fails("resources:\n  any_of: []\n",
	      "2:11: resources.any_of must be a non-empty list of resource mappings, not a list");
	fails("resources:\n  any_of: [{}]\n  ordered: [{}]\n",
	      "3:12: resources: give 'any_of' or 'ordered', not both");
	fails("resources:\n  any_of:\n    - cpus: x\n",
	      "3:13: resources.any_of[0].cpus must be a number like 4 or 4+, not 'x'");
}

static void test_recovery_autostop(void)
{
	ok(!parse("resources:\n  job_recovery: failover\n"), "job_recovery string");
	is_str(R(0)->job_recovery.strategy, "FAILOVER", "upper-cased");
	ok(!parse("resources:\n  job_recovery:\n    strategy: EAGER_NEXT_REGION\n"
	          "    max_restarts_on_errors: 3\n    recover_on_exit_codes: [33, 34]\n"),
	   "job_recovery mapping");
	is_int(R(0)->job_recovery.max_restarts_on_errors, 3, "max restarts");
	ok(R(0)->job_recovery.nexit_codes == 2 && R(0)->job_recovery.exit_codes[1] == 34,
	   "exit codes");
	ok(!parse("resources:\n  spot_recovery: FAILOVER\n"), "old spot_recovery");
	is_str(warn, "2:3: resources.spot_recovery is deprecated: use job_recovery", "warns");
	fails("resources:\n  job_recovery: failvoer\n",
	      "2:17: resources.job_recovery: unknown value 'failvoer'; did you mean 'FAILOVER'?");
	fails("resources:\n  job_recovery: {recover_on_exit_codes: [1, 1]}\n",
	      "2:45: resources.job_recovery.recover_on_exit_codes: exit code 1 is listed twice");
	fails("resources:\n  job_recovery: {recover_on_exit_codes: 256}\n",
	      "2:41: resources.job_recovery.recover_on_exit_codes must be between 0 and 255, not "
	      "256");

	ok(!parse("resources:\n  autostop: true\n"), "autostop true");
	ok(R(0)->autostop.enabled && R(0)->autostop.idle_minutes == 5, "default 5 minutes");
	ok(!parse("resources:\n  autostop: false\n"), "autostop false");
	ok(R(0)->autostop.set && !R(0)->autostop.enabled, "disabled");
	ok(!parse("resources:\n  autostop: 10\n"), "autostop minutes");
	is_int(R(0)->autostop.idle_minutes, 10, "10");
	ok(!parse("resources:\n  autostop: 1h\n"), "autostop 1h");
	is_int(R(0)->autostop.idle_minutes, 60, "60");
	ok(!parse("resources:\n  autostop: 90s\n"), "autostop 90s");
	is_int(R(0)->autostop.idle_minutes, 2, "rounded up to 2 minutes");
	ok(!parse("resources:\n  autostop:\n    idle_minutes: 3\n    down: true\n"
	          "    wait_for: JOBS\n    hook: echo bye\n    hook_timeout: 30\n"),
	   "autostop mapping");
	ok(R(0)->autostop.down && R(0)->autostop.idle_minutes == 3 &&
	           R(0)->autostop.hook_timeout == 30,
	   "mapping fields");
	is_str(R(0)->autostop.wait_for, "jobs", "wait_for canonical");
	fails("resources:\n  autostop: soon\n",
	      "2:13: resources.autostop must be minutes or a time like \"10m\" or \"1h\", at "
	      "most 5256000 minutes (ten years), not 'soon'");
	fails("resources:\n  autostop: -1\n",
	      "2:13: resources.autostop must be between 0 and 5256000, not -1");
	ok(!parse("resources:\n  autostop: 5256000\n"), "autostop: ten years");
	fails("resources:\n  autostop: 5256001\n",
	      "2:13: resources.autostop must be between 0 and 5256000, not 5256001");
	ok(!parse("resources:\n  autostop: 521w\n"), "autostop: 521 weeks");
	is_int(R(0)->autostop.idle_minutes, 521 * 10080, "in minutes");
	/* 1e8 weeks was 1.008e12 minutes, past the int the launcher keeps. */
	fails("resources:\n  autostop: 100000000w\n",
	      "2:13: resources.autostop must be minutes or a time like \"10m\" or \"1h\", at "
	      "most 5256000 minutes (ten years), not '100000000w'");
	fails("resources:\n  autostop: {idle_minutes: 99999999}\n",
	      "2:28: resources.autostop.idle_minutes must be between 0 and 5256000, not "
	      "99999999");
	ok(task_autostop_minutes_valid(0) && task_autostop_minutes_valid(0.02) &&
	           task_autostop_minutes_valid(5256000),
	   "autostop minutes: 0, a fraction, ten years");
	ok(!task_autostop_minutes_valid(5256000.5) && !task_autostop_minutes_valid(1e300) &&
	           !task_autostop_minutes_valid(-0.5) && !task_autostop_minutes_valid(NAN) &&
	           !task_autostop_minutes_valid(INFINITY) &&
	           !task_autostop_minutes_valid(-INFINITY),
	   "not past ten years, negative, NaN or infinite");
	fails("resources:\n  autostop: {hook_timeout: 0}\n",
	      "2:28: resources.autostop.hook_timeout must be between 1 and 100000000, not 0");
}

static void test_file_mounts(void)
{
	fails("file_mounts:\n  /x:\n    name: b\n    mode: MOUNTED\n",
	      "4:11: file_mounts./x.mode must be MOUNT, COPY or MOUNT_CACHED, not 'MOUNTED'");
	fails("file_mounts:\n  /x:\n    nme: b\n",
	      "3:5: unknown field 'nme' in file_mounts./x; did you mean 'name'?");
	fails("file_mounts:\n  /x: 12\n",
	      "2:7: file_mounts./x must be a local path, a bucket URL or a storage mapping, not "
	      "an integer");
	fails("file_mounts:\n  /x:\n    persistent: maybe\n",
	      "3:17: file_mounts./x.persistent must be true or false, not a string");
	ok(!parse("file_mounts:\n  /x:\n    name: $B\n    store: $STORE\n    mode: $MODE\n"
	          "    source: [a, b]\n"),
	   "env references are left for the launcher");
}

static void test_runtime_env(void)
{
	struct task_runtime_env *rt;

	ok(!parse("runtime_env:\n  python: 3.12\n  pip: [torch, numpy==2.0]\n  working_dir: .\n"
	          "  py_modules: [lib]\n  env_vars: {A: b}\n"
	          "  config: {setup_timeout_seconds: -1, eager_install: false}\nrun: x\n"),
	   "runtime_env");
	rt = &T()->runtime_env;
	ok(rt->set && rt->pip.set && rt->pip.npackages == 2, "pip list");
	is_str(rt->pip.packages[1], "numpy==2.0", "package spec");
	is_str(rt->python, "3.12", "python version (a YAML float) as text");
	is_str(rt->working_dir, ".", "working_dir");
	ok(rt->npy_modules == 1 && rt->env_vars.n == 1, "py_modules, env_vars");
	ok(rt->setup_timeout_seconds == -1 && rt->eager_install == 0, "config");
	ok(!parse("runtime_env:\n  uv:\n    packages: requirements.txt\n    uv_version: '>=0.5'\n"
	          "    uv_check: true\n    uv_pip_install_options: [--no-build-isolation]\n"),
	   "uv mapping");
	rt = &T()->runtime_env;
	ok(rt->uv.set && !rt->pip.set, "uv set");
	is_str(rt->uv.requirements, "requirements.txt", "requirements file");
	ok(rt->uv.check == 1 && rt->uv.ninstall_options == 1, "uv fields");
	ok(!parse("runtime_env:\n  pip: requirements.txt\n"), "pip requirements string");
	is_str(T()->runtime_env.pip.requirements, "requirements.txt", "kept");
	ok(T()->runtime_env.setup_timeout_seconds == 600 && T()->runtime_env.eager_install == 1,
	   "config defaults");
	fails("runtime_env:\n  pip: [a]\n  uv: [b]\n",
	      "3:7: runtime_env: give 'pip' or 'uv', not both");
	fails("runtime_env:\n  conda: env.yaml\n",
	      "2:3: runtime_env.conda is not supported by skiff; use pip or uv (and `python` to "
	      "choose the interpreter)");
	fails("runtime_env:\n  pip: {pip_check: true}\n",
	      "2:8: runtime_env.pip needs 'packages' (a list, or a requirements file)");
	fails("runtime_env:\n  pip: {packages: [a], uv_check: true}\n",
	      "2:24: unknown field 'uv_check' in runtime_env.pip");
	fails("runtime_env:\n  config: {setup_timeout_seconds: 0}\n",
	      "2:35: runtime_env.config.setup_timeout_seconds must be more than 0, or -1 for no "
	      "timeout");
	fails("runtime_env:\n  env_vars: {A: 1}\n",
	      "2:17: runtime_env.env_vars.A must be a string, not an integer");
	fails("runtime_env: [pip]\n", "1:14: runtime_env must be a mapping, not a list");
}

static void test_pipelines(void)
{
	ok(!parse("name: pipe\n---\nname: a\nrun: x\n---\nname: b\nrun: y\n"), "a pipeline");
	is_str(L.name, "pipe", "pipeline name");
	ok(L.n == 2 && !strcmp(L.tasks[1]->name, "b"), "two tasks");
	is_int(L.tasks[1]->line, 6, "second task's document line");
	ok(!parse("name: only\n"), "only a name");
	ok(L.n == 1 && !strcmp(L.name, "only") && !strcmp(T()->name, "only"), "is one task");
	ok(!parse("run: a\n---\nrun: b\n"), "documents without a name document");
	ok(L.n == 2 && L.name == NULL, "two unnamed tasks");
	ok(!parse("run: a\n---\n"), "a trailing empty document");
	is_int(L.n, 1, "is skipped");
	fails("name: p\n---\nrun: a\n---\nrunn: b\n",
	      "5:1: unknown field 'runn'; did you mean 'run'?");
	fails("rnu: b\n", "1:1: unknown field 'rnu'");
}

static void test_job_groups(void)
{
	long d;

	ok(!parse("name: grp\nexecution: parallel\n---\nname: a\nrun: echo a\n---\n"
	          "name: b\nrun: echo b\n"),
	   "a job group");
	ok(L.parallel && !strcmp(L.name, "grp") && L.n == 2, "  is parallel, named, two tasks");
	ok(L.tasks[0]->primary && L.tasks[1]->primary, "  every task primary without the list");
	is_int(L.tasks[1]->termination_delay_s, 0, "  no delay");
	ok(!parse("name: g\nexecution: parallel\nprimary_tasks: [trainer]\n"
	          "termination_delay: {default: 30s, buffer: 1m}\n---\nname: trainer\nrun: x\n"
	          "---\nname: buffer\nrun: y\n---\nname: evaluator\nrun: z\n"),
	   "primary_tasks and per-task delays");
	ok(L.tasks[0]->primary && !L.tasks[1]->primary && !L.tasks[2]->primary,
	   "  only trainer is primary");
	ok(L.tasks[1]->termination_delay_s == 60 && L.tasks[2]->termination_delay_s == 30 &&
	           L.tasks[0]->termination_delay_s == 30,
	   "  a task's delay, else the default");
	ok(!parse("name: g\nexecution: parallel\ntermination_delay: 5m\n---\nname: a\nrun: x\n"),
	   "one delay for all");
	is_int(T()->termination_delay_s, 300, "  in seconds");
	ok(!parse("name: pipe\nexecution: serial\n---\nname: a\nrun: x\n---\nrun: y\n"),
	   "execution: serial is a pipeline");
	ok(!L.parallel && L.n == 2 && !strcmp(L.name, "pipe"), "  named, not parallel");
	ok(!task_delay_parse("90", &d) && d == 90, "a bare number is seconds");
	ok(!task_delay_parse("2h", &d) && d == 7200, "hours");
	ok(task_delay_parse("2d", &d) && task_delay_parse("", &d) && task_delay_parse("s", &d) &&
	           task_delay_parse("-1s", &d) && task_delay_parse("25h", &d),
	   "no days, no empty, no negative, nothing over a day");
	ok(!parse("name: g\nexecution: parallel\n---\nname: a\nrun: x\n---\nname: b\n"
	          "run: y\n") &&
	           !task_list_keep(&L, 1) && L.n == 1 && !strcmp(T()->name, "b") && L.parallel,
	   "task_list_keep keeps one member");
	ok(task_list_keep(&L, 1) == -EINVAL, "  and refuses an index out of range");

	fails("name: g\nexecution: parallel\n---\nname: a\nrun: x\n---\nname: a\nrun: y\n",
	      "7:7: task name 'a' is used twice in job group 'g' (first at line 4)");
	fails("name: g\nexecution: parallel\n---\nname: a\nrun: x\n---\nrun: y\n",
	      "7:1: every task of a job group needs a 'name'");
	fails("name: g\nexecution: parallel\nprimary_tasks: [a, nope]\n---\nname: a\nrun: x\n",
	      "3:20: primary_tasks names 'nope', which is no task of job group 'g'");
	fails("name: g\nexecution: parallel\nprimary_tasks: []\n---\nname: a\nrun: x\n",
	      "3:16: primary_tasks must be a non-empty list of task names, not a list");
	fails("name: g\nexecution: parallel\ntermination_delay: soon\n---\nname: a\nrun: x\n",
	      "3:20: termination_delay must be a duration such as 30s, 5m or 1h (at most 86400 s), "
	      "not 'soon'");
	fails("name: g\nexecution: parallel\ntermination_delay: {b: 1s}\n---\nname: a\n"
	      "run: x\n",
	      "3:21: termination_delay names 'b', which is no task of job group 'g'");
	fails("name: g\nexecution: parallel\ntermination_delay: {default: 2d}\n---\nname: a\n"
	      "run: x\n",
	      "3:30: termination_delay.default must be a duration such as 30s, 5m or 1h (at most "
	      "86400 s), not '2d'");
	fails("name: g\nexecution: parallel\nprimary: [a]\n---\nname: a\nrun: x\n",
	      "3:1: unknown field 'primary'; did you mean 'primary_tasks'?");
	fails("name: g\nexecution: sideways\n---\nname: a\nrun: x\n",
	      "2:12: execution must be parallel (a job group) or serial, not a string");
	fails("name: g\nexecution: parallel\n", "1:1: job group 'g' has no tasks: its header is "
	                                        "followed by one YAML document per task");
	fails("name: p\nexecution: serial\n", "1:1: pipeline 'p' has no tasks: its header is "
	                                      "followed by one YAML document per task");
	fails("execution: parallel\n---\nname: a\nrun: x\n",
	      "1:1: a job group's header needs its 'name'");
	fails("name: p\nexecution: serial\nprimary_tasks: [a]\n---\nname: a\nrun: x\n",
	      "3:16: a pipeline (execution: serial) runs its tasks one after the other: only a "
	      "job group (execution: parallel) has this");
	fails("name: g\nexecution: parallel\n---\nname: a\nexecution: parallel\nrun: x\n",
	      "5:1: unknown field 'execution'");
}

static void test_not_tasks(void)
{
	fails("", "1:1: empty file: expected a task (a YAML mapping)");
	fails("# nothing\n\n", "1:1: empty file: expected a task (a YAML mapping)");
	fails("---\n...\n", "1:1: empty file: expected a task (a YAML mapping)");
	fails("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n",
	      "1:1: this looks like a Kubernetes manifest (apiVersion/kind), not a skiff task");
	fails("kubernetes:\n  networking: nodeport\n",
	      "1:1: this looks like a SkyPilot config file (~/.sky/config.yaml: it has "
	      "'kubernetes'), not a skiff task");
	fails("jobs:\n  controller: {}\nallowed_clouds: [aws]\n",
	      "1:1: this looks like a SkyPilot config file (~/.sky/config.yaml: it has 'jobs'), "
	      "not a skiff task");
	fails("my-pool:\n  hosts: [1.2.3.4]\n  user: ubuntu\n",
	      "1:1: this looks like an SSH node pool file (~/.sky/ssh_node_pools.yaml: POOL: "
	      "{hosts: [...]}), not a skiff task");
	fails("version: '3'\nservices:\n  web: {image: x}\n",
	      "1:1: this looks like a docker-compose file (services:), not a skiff task");
	fails("name: CI\non: [push]\njobs:\n  build: {runs-on: x}\n",
	      "1:1: this looks like a GitHub Actions workflow (on:/jobs:), not a skiff task");
	fails("- hosts: all\n  tasks: []\n",
	      "1:1: this looks like an Ansible playbook (a list of plays), not a skiff task");
	fails("- a\n- b\n", "1:1: this looks like a YAML list, not a skiff task");
	fails("echo hello\n",
	      "1:1: this looks like plain text (one YAML scalar), not a skiff task");
	fails("server: {a: 1}\nalertmanager: {enabled: false}\n",
	      "1:1: this looks like some other kind of YAML file (no top-level key, such as "
	      "'server', is a task field), not a skiff task");
	fails("nme: x\nrnu: y\n", "1:1: unknown field 'nme'; did you mean 'name'?");
	fails("run: x\n---\n- a\n", "3:1: this looks like a YAML list, not a skiff task");
}

static void test_json(void)
{
	struct buf b = BUF_INIT(0);
	struct json j;

	ok(!parse("name: t\nenvs: {A: visible}\nsecrets: {TOKEN: hunter2, NONE: null}\n"
	          "resources:\n  accelerators: H100:8\n  ports: 80\n"
	          "config: {kubernetes: {pod_config: {a: [1, 2.5, true, null, x]}}}\nrun: x\n"),
	   "parse for JSON");
	json_init(&j, &b, 0);
	json_obj_begin(&j);
	task_list_json(&L, &j);
	json_obj_end(&j);
	ok(!json_finish(&j), "JSON written");
	ok(strstr(b.p, "hunter2") == NULL, "secret value not printed");
	ok(strstr(b.p, "\"TOKEN\":\"<redacted>\"") != NULL, "secret redacted");
	ok(strstr(b.p, "\"NONE\":null") != NULL, "a null secret stays null");
	ok(strstr(b.p, "\"A\":\"visible\"") != NULL, "env shown");
	ok(strstr(b.p, "\"accelerators\":{\"name\":\"H100\",\"count\":8}") != NULL, "accelerators");
	ok(strstr(b.p, "\"ports\":[\"80\"]") != NULL, "ports as strings");
	ok(strstr(b.p, "\"config\":{\"kubernetes\":{\"pod_config\":{\"a\":[1,2.5,true,null,"
	               "\"x\"]}}}") != NULL,
	   "config typed");
	ok(strstr(b.p, "\"num_nodes\":1") != NULL, "num_nodes an int");
	ok(strstr(b.p, "{\"name\":\"t\",\"tasks\":[{") == b.p, "pipeline members first");
	buf_release(&b);
}

static char **argv_of(const char *a, const char *b, const char *c)
{
	static char *v[4];

	v[0] = (char *)a;
	v[1] = (char *)b;
	v[2] = (char *)c;
	v[3] = NULL;
	return v;
}

static void test_overrides(void)
{
	struct task_overrides o = TASK_OVERRIDES_INIT;
	char envfile[] = "/tmp/skiff-test-envXXXXXX";
	const char *names[16];
	int i, fd;

	i = 0;
	is_int(task_overrides_arg(&o, 3, argv_of("--env", "A=1", NULL), &i), 1, "--env K=V");
	is_int(i, 2, "past the flag and its value");
	i = 0;
	is_int(task_overrides_arg(&o, 1, argv_of("--env=B=2=3", NULL, NULL), &i), 1, "--env=K=V");
	is_int(i, 1, "past the one word");
	is_str(task_kvs_get(&o.envs, "B")->value, "2=3", "the value keeps its '='");
	setenv("SKIFF_TEST_FROM_ENV", "fromenv", 1);
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env", "SKIFF_TEST_FROM_ENV", NULL), &i), 1,
	       "--env K from the environment");
	unsetenv("SKIFF_TEST_UNSET_X");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env", "SKIFF_TEST_UNSET_X", NULL), &i), -1,
	       "--env K unset is an error");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env", "1X=2", NULL), &i), -1, "bad env name");
	i = 0;
	is_int(task_overrides_arg(&o, 1, argv_of("--env", NULL, NULL), &i), -1, "missing value");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--secret", "TOKEN=s", NULL), &i), 1, "--secret");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--num-nodes", "0", NULL), &i), -1, "0 nodes");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--num-nodes", "3", NULL), &i), 1, "--num-nodes");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--cpus", "x", NULL), &i), -1, "bad --cpus");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--cpus", "8+", NULL), &i), 1, "--cpus");
	i = 0;
	is_int(task_overrides_arg(&o, 1, argv_of("--memory=64", NULL, NULL), &i), 1, "--memory");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--gpus", "H100:", NULL), &i), -1, "bad --gpus");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--gpus", "H100:2", NULL), &i), 1, "--gpus");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("-n", "renamed", NULL), &i), 1, "-n");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--workdir", "/src", NULL), &i), 1, "--workdir");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--json", "x", NULL), &i), 0, "not an override");
	is_int(i, 0, "i unchanged");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--environment", "x", NULL), &i), 0,
	       "a longer flag is not --env");

	fd = mkstemp(envfile);
	ok(fd >= 0, "temp env file");
	dprintf(fd, "# comment\n\nexport C=plain # trailing comment\nD = 'single # kept'\n"
	            "E=\"double\\nline\"\nF=\n");
	close(fd);
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env-file", envfile, NULL), &i), 1,
	       "--env-file");
	is_str(task_kvs_get(&o.envs, "C")->value, "plain", "unquoted, comment stripped");
	is_str(task_kvs_get(&o.envs, "D")->value, "single # kept", "single quotes literal");
	is_str(task_kvs_get(&o.envs, "E")->value, "double\nline", "double quotes escape");
	is_str(task_kvs_get(&o.envs, "F")->value, "", "empty value");
	fd = open(envfile, O_WRONLY | O_TRUNC);
	dprintf(fd, "OK=1\nnot a line\n");
	close(fd);
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env-file", envfile, NULL), &i), -1,
	       "a bad env file line");
	fd = open(envfile, O_WRONLY | O_TRUNC);
	dprintf(fd, "Q=\"open\n");
	close(fd);
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env-file", envfile, NULL), &i), -1,
	       "an unterminated quote");
	unlink(envfile);
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env-file", envfile, NULL), &i), -1,
	       "a missing env file");

	/* --env and --secret win over a file's value, in either order. */
	memcpy(envfile, "/tmp/skiff-test-envXXXXXX", sizeof(envfile));
	fd = mkstemp(envfile);
	ok(fd >= 0, "temp env file again");
	dprintf(fd, "A=fromfile\nG=file\n");
	close(fd);
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env-file", envfile, NULL), &i), 1,
	       "--env-file after --env A=1");
	is_str(task_kvs_get(&o.envs, "A")->value, "1", "--env before the file wins");
	is_str(task_kvs_get(&o.envs, "G")->value, "file", "the file adds the others");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env", "G=flag", NULL), &i), 1, "--env G");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--env-file", envfile, NULL), &i), 1,
	       "the file again");
	is_str(task_kvs_get(&o.envs, "G")->value, "flag", "--env before a later file wins");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--secret-file", envfile, NULL), &i), 1,
	       "--secret-file");
	is_str(task_kvs_get(&o.secrets, "G")->value, "file", "--secret-file sets secrets");
	is_str(task_kvs_get(&o.secrets, "TOKEN")->value, "s", "--secret TOKEN kept");
	unlink(envfile);
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--secret-file", envfile, NULL), &i), -1,
	       "a missing secret file");

	/* Resource flags are checked as the YAML field is. */
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--disk-size", "big", NULL), &i), -1,
	       "a bad --disk-size");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--disk-tier", "fastest", NULL), &i), -1,
	       "a bad --disk-tier");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("-p", "8080", NULL), &i), 1, "-p 8080");
	i = 0;
	is_int(task_overrides_arg(&o, 1, argv_of("--ports=9000-9002", NULL, NULL), &i), 1,
	       "--ports=RANGE");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("-p", "70000", NULL), &i), -1, "a bad port");
	i = 0;
	is_int(task_overrides_arg(&o, 1, argv_of("--use-spot", NULL, NULL), &i), 1, "--use-spot");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--region", "us-west-2", NULL), &i), 1,
	       "--region");
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--disk-size", "256", NULL), &i), 1,
	       "--disk-size");

	ok(!parse("name: t\nenvs:\n  A: yaml\n  NEED:\nsecrets:\n  S2:\n"
	          "resources:\n  accelerators: [T4, L4]\n  cpus: 2\nworkdir: {url: x}\nrun: x\n"),
	   "task to override");
	is_int(task_list_check_required(&L, &E, 0), 2, "two values missing");
	is_str(E.v[E.n - 2].msg, "env 'NEED' has no value: pass --env NEED=VALUE", "env message");
	is_int(E.v[E.n - 2].line, 4, "at the env's line");
	is_str(E.v[E.n - 1].msg, "secret 'S2' has no value: pass --secret S2=VALUE",
	       "secret message");
	ok(!task_list_apply_overrides(&L, &o, &E), "apply");
	is_str(task_kvs_get(&T()->envs, "A")->value, "1", "--env replaces");
	is_str(task_kvs_get(&T()->envs, "SKIFF_TEST_FROM_ENV")->value, "fromenv", "--env adds");
	is_str(task_kvs_get(&T()->secrets, "TOKEN")->value, "s", "--secret adds");
	is_int(T()->num_nodes, 3, "--num-nodes");
	ok(R(0)->use_spot && R(1)->use_spot, "--use-spot on every alternative");
	ok(R(0)->nports == 2 && R(0)->ports[0].lo == 8080 && R(0)->ports[1].hi == 9002,
	   "-p twice: both ports");
	ok(R(1)->disk_size == 256 && !strcmp(R(1)->region, "us-west-2"), "--disk-size, --region");
	ok(R(0)->cpus.mode == TASK_AT_LEAST && R(0)->cpus.value == 8 && R(1)->cpus.value == 8,
	   "--cpus on every alternative");
	is_str(R(1)->memory.text, "64", "--memory");
	ok(!strcmp(R(0)->accel.name, "H100") && R(0)->accel.count == 2, "--gpus");
	ok(!strcmp(T()->name, "renamed") && !strcmp(L.name, "renamed"), "--name");
	ok(T()->workdir.kind == TASK_WORKDIR_PATH && !strcmp(T()->workdir.path, "/src"),
	   "--workdir replaces a git workdir");
	yerr_release(&E);
	is_int(task_list_check_required(&L, &E, 1), 2, "still two (NEED, S2)");
	ok(E.n == 2 && E.v[0].warning && E.nerrors == 0, "as warnings");

	ok(!parse("name: p\n---\nrun: a\n---\nrun: b\n"), "a pipeline to override");
	ok(task_list_apply_overrides(&L, &o, &E) == -EINVAL, "resource flags on a pipeline fail");
	ok(strstr(E.v[0].msg, "pipeline of 2 tasks") != NULL, "say why: %s", E.v[0].msg);
	task_overrides_release(&o);
	i = 0;
	task_overrides_arg(&o, 2, argv_of("--env", "Z=9", NULL), &i);
	ok(!task_list_apply_overrides(&L, &o, &E), "--env on a pipeline is fine");
	ok(!strcmp(task_kvs_get(&L.tasks[1]->envs, "Z")->value, "9"), "every task gets it");
	task_overrides_release(&o);

	ok(!parse("resources:\n  instance_type: m5.large\n  use_spot: true\n  cpus: 2\n"
	          "  image_id: docker:ubuntu\n  labels: {a: b}\n  disk_size: 100\n"
	          "  max_hourly_cost: 3.5\n"),
	   "cloud fields");
	is_int(task_cloud_only_fields(T(), 0, names, 16), 6, "six ignored locally");
	is_str(names[0], "instance_type", "instance_type");
	is_str(names[2], "disk_size", "disk_size");
	is_str(names[3], "image_id", "a container image, where no container runs");
	is_str(names[5], "max_hourly_cost", "kept extras count too");
	is_int(task_cloud_only_fields(T(), TR_IMAGE_ID, names, 16), 5,
	       "a container infra honours the image");
	is_int(task_cloud_only_fields(T(), TR_IMAGE_ID | TR_LABELS | TR_DISK_SIZE, names, 16), 3,
	       "k8s ignores fewer");
	is_int(task_cloud_only_fields(T(), TASK_HONOURS_ALL, names, 16), 0, "a cloud none");
	is_int(task_cloud_only_fields(T(), 0, names, 2), 6, "count beyond max");
	{
		/* Ports a cluster opened: the union, merged, in order. */
		static const struct {
			const char *have;
			struct task_port_range add[3];
			size_t nadd;
			const char *want;
		} cases[] = {
		        {NULL, {{0, 0}}, 0, ""},
		        {"", {{8080, 8080}}, 1, "8080"},
		        {"8080", {{8080, 8080}}, 1, "8080"},
		        {"8080", {{8081, 8085}}, 1, "8080-8085"},
		        {"9000-9002,22", {{8080, 8080}, {9001, 9010}}, 2, "22,8080,9000-9010"},
		        {"1-3,x,5", {{4, 4}}, 1, "1-5"},
		        {"70000,65535", {{0, 0}}, 0, "65535"},
		        {"10-20", {{1, 65535}}, 1, "1-65535"},
		};
		size_t c;

		for (c = 0; c < ARRAY_SIZE(cases); c++) {
			char *got = task_ports_union(cases[c].have, cases[c].add, cases[c].nadd);

			is_str(got, cases[c].want, "ports union %zu", c);
			free(got);
		}
	}
	{
		/* The one reader of a port list: what `status --endpoint` asks. */
		struct task_port_range v[2];

		ok(task_ports_has("8080,9000-9002", 9001), "a port in a range");
		ok(task_ports_has("8080,9000-9002", 8080), "a single port");
		ok(!task_ports_has("8080,9000-9002", 9003), "past the range");
		ok(!task_ports_has("", 22) && !task_ports_has(NULL, 22), "no ports");
		ok(!task_ports_has("x,70000", 70000), "malformed parts are no ports");
		is_int((long)task_ports_parse("1,2-3,4", v, 2), 3, "counts past cap");
		ok(v[1].lo == 2 && v[1].hi == 3, "stores up to cap");
	}
	ok(!parse("service:\n  replicas: 2\nvolumes:\n  /mnt/d: vol\nrun: x\n"),
	   "service, volumes");
	is_int(task_unhonoured_fields(T(), TASK_HONOURS_ALL, names, 16), 2, "nothing runs them");
	ok(!strncmp(names[0], "service (", 9) && !strncmp(names[1], "volumes (", 9), "named");
	ok(!parse("run: x\n"), "a plain task");
	is_int(task_unhonoured_fields(T(), 0, names, 16), 0, "nothing to say");
	ok(!parse("resources:\n  ports: [8080]\n"), "ports");
	is_int(task_cloud_only_fields(T(), 0, names, 16), 1,
	       "ports: not on an infra that "
	       "cannot reach them");
	is_int(task_cloud_only_fields(T(), TR_PORTS, names, 16), 0, "ports: honoured");
	ok(!parse("resources:\n  image_id: ami-123\n"), "a cloud image");
	is_int(task_cloud_only_fields(T(), TR_IMAGE_ID, names, 16), 1,
	       "is ignored where containers run");
	ok(task_image_is_docker("docker:x") && !task_image_is_docker("ami-1"), "docker images");
}

/* "NAME:COUNT,NAME:COUNT..." of the parsed alternatives. */
static const char *accels(void)
{
	static char out[1024];
	size_t i, n = 0;

	out[0] = '\0';
	for (i = 0; T() && i < T()->nres && n < sizeof(out) - 64; i++)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s:%g", i ? "," : "",
		                      R(i)->accel.name, R(i)->accel.count);
	return out;
}

/* name: and -n/--name, at most TASK_NAME_MAX characters. */
static void test_name_limit(void)
{
	struct task_overrides o = TASK_OVERRIDES_INIT;
	char name[TASK_NAME_MAX + 2], text[2 * TASK_NAME_MAX + 64], want[160];
	int i;

	memset(name, 'n', TASK_NAME_MAX);
	name[TASK_NAME_MAX] = '\0';
	snprintf(text, sizeof(text), "name: %s\nrun: x\n", name);
	ok(!parse(text) && !strcmp(T()->name, name), "a %d-character name", TASK_NAME_MAX);
	snprintf(text, sizeof(text), "name: %s\n---\nrun: x\n", name);
	ok(!parse(text) && !strcmp(L.name, name), "and as a pipeline's");
	name[TASK_NAME_MAX] = 'n';
	name[TASK_NAME_MAX + 1] = '\0';
	snprintf(want, sizeof(want), "1:7: name '%.40s...' is %d characters long, more than %d",
	         name, TASK_NAME_MAX + 1, TASK_NAME_MAX);
	snprintf(text, sizeof(text), "name: %s\nrun: x\n", name);
	fails(text, want);
	snprintf(text, sizeof(text), "name: %s\n---\nrun: x\n---\nrun: y\n", name);
	fails(text, want);
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("-n", name, NULL), &i), -1,
	       "-n with %d characters is refused", TASK_NAME_MAX + 1);
	name[TASK_NAME_MAX] = '\0';
	i = 0;
	is_int(task_overrides_arg(&o, 2, argv_of("--name", name, NULL), &i), 1,
	       "--name with %d is taken", TASK_NAME_MAX);
	is_str(o.name, name, "  whole");
	task_overrides_release(&o);
}

static void test_accel_by_memory(void)
{
	ok(!parse("resources:\n  accelerators: 80GB+\n"), "80GB+");
	is_str(accels(),
	       "A100-80GB:1,A100-80GB-SXM:1,B200:1,GH200:1,H100:1,H100-MEGA:1,H100-NVL:1,"
	       "H100-NVLINK:1,H100-SXM:1,H200:1,H200-SXM:1,MI300X:1",
	       "  every device of at least 80 GB, in the catalog's order");
	ok(!T()->res_ordered, "  any of them");
	ok(!parse("resources:\n  accelerators: nvidia:80GB:8\n"), "nvidia:80GB:8");
	ok(T()->nres == 11 && R(10)->accel.count == 8 && !strcmp(R(10)->accel.name, "H200-SXM"),
	   "  exactly 80 GB, NVIDIA's only, 8 each: %s", accels());
	ok(!parse("resources:\n  accelerators: {80GB+: 8}\n"), "{80GB+: 8}");
	ok(T()->nres == 12 && R(11)->accel.count == 8, "  the mapping's count: %s", accels());
	ok(!parse("resources:\n  accelerators: 24GB:2\n"), "24GB:2");
	is_str(accels(), "A10:2,A10G:2,L4:2,RTX3090:2,RTX4090:2,RTX6000:2,RTXA5000:2",
	       "  24 GB exactly, a count: not a GPU named 24GB");
	ok(!parse("resources:\n  accelerators: AMD:100gb+\n"), "AMD:100gb+ (any case)");
	is_str(accels(), "MI300X:1", "  the manufacturer in any case");
	ok(parse("resources:\n  accelerators: 1tb+\n") == -EINVAL, "1tb+: none");
	is_str(msg,
	       "2:17: resources.accelerators: no accelerator has at least 1024 GB of memory "
	       "('1tb+')",
	       "  says so");
	ok(!parse("resources:\n  accelerators: [L4, 24GB, T4]\n"),
	   "a list mixing names and memory");
	is_str(accels(), "L4:1,A10:1,A10G:1,RTX3090:1,RTX4090:1,RTX6000:1,RTXA5000:1,T4:1",
	       "  in order, L4 once");
	ok(T()->res_ordered, "  a list keeps its order");
	fails("resources:\n  accelerators: 80GB:0.5\n",
	      "2:17: resources.accelerators: count in '80GB:0.5' must be a whole number more than "
	      "0, at most 65536");
	fails("resources:\n  accelerators: 80GB:65537\n",
	      "2:17: resources.accelerators: count in '80GB:65537' must be a whole number more "
	      "than 0, at most 65536");
	fails("resources:\n  accelerators: {40GB: 0.5}\n",
	      "2:24: resources.accelerators: count in '40GB:0.5' must be a whole number more than "
	      "0, at most 65536");
	fails("resources:\n  accelerators: nvidia:x:8\n",
	      "2:17: resources.accelerators: 'nvidia:x:8': with a manufacturer, give the memory "
	      "and a count (NVIDIA:80GB:8)");
	fails("resources:\n  accelerators: 1536MB\n",
	      "2:17: resources.accelerators: memory in '1536MB' must be a whole number of GB");
	fails("resources:\n  accelerators: intel:80GB\n",
	      "2:17: resources.accelerators: no intel accelerator has exactly 80 GB of memory "
	      "('intel:80GB')");
	ok(!parse("resources:\n  accelerators: 32768MB\n"), "32768MB is 32 GB");
	is_str(accels(), "V100-32GB:1,Gaudi HL-205:1", "  exactly 32");
	ok(!parse("resources:\n  accelerators: GB80:2\n"), "a name that is not a size");
	is_str(accels(), "GB80:2", "  is a name");
	{
		struct task_overrides o = TASK_OVERRIDES_INIT;
		int i = 0;

		is_int(task_overrides_arg(&o, 2, argv_of("--gpus", "80GB+", NULL), &i), -1,
		       "--gpus 80GB+ is refused, saying where it goes");
		task_overrides_release(&o);
	}
}

static void test_env_subst(void)
{
	struct task_overrides o = TASK_OVERRIDES_INIT;
	struct task_kvs envs = {NULL, 0}, secrets = {NULL, 0};
	static const char *const cases[][2] = {
	        {"/m/${A}/x", "/m/1/x"},
	        {"/m/$A/x", "/m/1/x"},
	        {"$A$B", "1two"},
	        {"${AB}", "long"},
	        {"$AB_", "$AB_"}, /* the name is AB_, unknown */
	        {"${UNKNOWN}-$NOPE", "${UNKNOWN}-$NOPE"},
	        {"$$A", "$1"},
	        {"$1 ${1} $ {A}", "$1 ${1} $ {A}"},
	        {"${A", "1"}, /* SkyPilot's pattern: braces optional on either side */
	        {"$A}", "1"},
	        {"$A\xc3\xa9", "1\xc3\xa9"}, /* non-ASCII ends a name (JSON's \u escape) */
	        {"$S", "secret"},
	        {"$E", ""},
	        {"$NULL", "$NULL"}, /* a null value is not a value */
	        {"$R", "$A"},       /* one pass: a value is not substituted again */
	};
	size_t k;
	int i = 0;

	task_kvs_set(&envs, "A", "1", 0, 0);
	task_kvs_set(&envs, "B", "two", 0, 0);
	task_kvs_set(&envs, "AB", "long", 0, 0);
	task_kvs_set(&envs, "S", "env", 0, 0);
	task_kvs_set(&envs, "E", "", 0, 0);
	task_kvs_set(&envs, "NULL", NULL, 0, 0);
	task_kvs_set(&envs, "R", "$A", 0, 0);
	task_kvs_set(&secrets, "S", "secret", 0, 0);
	for (k = 0; k < ARRAY_SIZE(cases); k++) {
		char *got = task_subst_vars(cases[k][0], &envs, &secrets);

		is_str(got, cases[k][1], "subst '%s'", cases[k][0]);
		free(got);
	}
	task_kvs_release(&envs);
	task_kvs_release(&secrets);

	ok(!parse("envs:\n  SIZE: 13b\n  DIR: data\n  PORT: 8080\nsecrets:\n  TOK:\n"
	          "workdir: ./w-$SIZE\n"
	          "file_mounts:\n  /ckpt/${SIZE}: ~/${DIR}\n  rel/$SIZE: ./x\n  ~/h: ./y\n"
	          "  /keep/$UNKNOWN: $TOK\n"
	          "  /st:\n    name: b-${SIZE}\n    source: [\"~/$DIR\"]\n    mode: MOUNT\n"
	          "volumes:\n  v-$SIZE: /mnt/$DIR\n"
	          "service:\n  readiness_probe: /health/$SIZE\n  port: $PORT\n"
	          "run: echo $SIZE\n"),
	   "a task with $VARS");
	task_overrides_arg(&o, 2, argv_of("--env", "SIZE=70b", NULL), &i);
	i = 0;
	task_overrides_arg(&o, 2, argv_of("--secret", "TOK=t0k", NULL), &i);
	ok(!task_list_apply_overrides(&L, &o, &E), "apply --env SIZE=70b --secret TOK=t0k");
	is_str(T()->workdir.path, "./w-70b", "workdir: the --env value");
	is_str(T()->mounts[0].dst, "/ckpt/70b", "a mount's destination");
	is_str(T()->mounts[0].src, "~/data", "its source");
	is_str(T()->mounts[1].dst, "~/sky_workdir/rel/70b",
	       "a relative destination: under the workdir");
	is_str(T()->mounts[2].dst, "~/h", "~/ stays in the home");
	is_str(T()->mounts[3].dst, "/keep/$UNKNOWN", "an unknown name is left");
	is_str(T()->mounts[3].src, "t0k", "a secret is filled in too");
	is_str(ymap_get(T()->mounts[4].storage, "name")->value, "b-70b", "a storage mount's name");
	is_str(ymap_get(T()->mounts[4].storage, "source")->items[0]->value, "~/data",
	       "and its source");
	is_str(ymap_key(T()->volumes, 0)->value, "v-70b", "volumes: keys");
	is_str(ymap_val(T()->volumes, 0)->value, "/mnt/data", "volumes: values");
	is_str(ymap_get(T()->service, "readiness_probe")->value, "/health/70b", "service");
	ok(yscalar_type(ymap_get(T()->service, "port")) == YS_STR &&
	           !strcmp(ymap_get(T()->service, "port")->value, "8080"),
	   "a filled-in value is a string, as SkyPilot's JSON round trip makes it");
	is_str(T()->run, "echo $SIZE", "run is the shell's business");
	task_overrides_release(&o);
}

static void test_command(void)
{
	struct task_list l;

	task_from_command(&l, "python train.py --epochs 3");
	ok(l.n == 1 && !strcmp(l.tasks[0]->run, "python train.py --epochs 3"), "a command task");
	ok(l.tasks[0]->nres == 1 && l.tasks[0]->num_nodes == 1, "with defaults");
	task_list_release(&l);
	ok(task_entrypoint_is_yaml("task.yaml") && task_entrypoint_is_yaml("a/b.YML"),
	   "YAML entry points");
	ok(!task_entrypoint_is_yaml("echo hi") && !task_entrypoint_is_yaml(".yaml"), "commands");
}

static void test_files(void)
{
	struct task_list l;
	struct yerrors e = YERRORS_INIT;
	char path[] = "/tmp/skiff-test-taskXXXXXX";
	int fd = mkstemp(path);

	ok(fd >= 0, "temp task file");
	dprintf(fd, "run: echo from a file\n");
	close(fd);
	ok(!task_parse_file(&l, path, &e), "task_parse_file");
	is_str(l.tasks[0]->run, "echo from a file", "read");
	task_list_release(&l);
	unlink(path);
	is_int(task_parse_file(&l, path, &e), -ENOENT, "a missing file");
	ok(strstr(e.v[0].msg, "cannot open: No such file") == e.v[0].msg, "says so");
	is_int(task_parse_file(&l, "/", &e), -EINVAL, "a directory is invalid");
	is_str(e.v[1].msg, "is a directory, not a task file", "says so");
	yerr_release(&e);
	task_list_release(&l);
}

/* The local sources, as launch reads them: one error each, where the YAML set it. */
static void test_local_paths(void)
{
	struct task_overrides o = TASK_OVERRIDES_INIT;
	char dir[] = "/tmp/skiff-test-pathsXXXXXX", text[512], want[256];

	ok(mkdtemp(dir) != NULL, "temp dir");
	snprintf(text, sizeof(text),
	         "workdir: %s\nfile_mounts:\n  /a: %s\n  /b: s3://bucket/x\n  /c: %s/nope\n"
	         "  /d: {source: ./nope, store: s3}\nrun: x\n",
	         dir, dir, dir);
	ok(!parse(text) && !task_list_apply_overrides(&L, &o, &E), "a task");
	is_int((long)task_list_check_paths(&L, &E), 1, "one missing source; a URL, a storage no");
	snprintf(want, sizeof(want),
	         "file_mounts source '%s/nope' (for /c): No such file or directory", dir);
	ok(E.n == 1 && E.v[0].line == 5 && E.v[0].col == 3 && !strcmp(E.v[0].msg, want),
	   "at the mount's line, naming the path and why");
	snprintf(text, sizeof(text), "workdir: %s/nope\nrun: x\n", dir);
	ok(!parse(text) && !task_list_apply_overrides(&L, &o, &E), "a missing workdir");
	is_int((long)task_list_check_paths(&L, &E), 1, "found");
	ok(E.n == 1 && E.v[0].line == 1 && E.v[0].col == 10 && !strcmp(E.v[0].file, "t.yaml"),
	   "at t.yaml:1:10");
	snprintf(text, sizeof(text), "workdir: %s/nope/$MISSING\nenvs: {MISSING: }\nrun: x\n", dir);
	ok(!parse(text) && !task_list_apply_overrides(&L, &o, &E), "an env without a value");
	is_int((long)task_list_check_paths(&L, &E), 0, "its path is not known yet: not looked at");
	o.workdir = xstrdup("/nonexistent-skiff-dir");
	ok(!parse("workdir: .\nrun: x\n") && !task_list_apply_overrides(&L, &o, &E),
	   "--workdir over the YAML's");
	is_int((long)task_list_check_paths(&L, &E), 1, "found");
	ok(E.n == 1 && !strcmp(E.v[0].file, TASK_PATHS_FLAG_FILE) && E.v[0].line == 1,
	   "said of the flag, not of the YAML's line");
	task_overrides_release(&o);
	rmdir(dir);
}

/* The two-hop of a remote controller: the launcher's paths replaced, through the data. */
static void test_path_map(void)
{
	struct task_overrides o = TASK_OVERRIDES_INIT, back = TASK_OVERRIDES_INIT;
	struct msg m;

	msg_init(&m);
	task_overrides_map_path(&o, "~/code/${P}", "~/.ctl/files/x/0");
	task_overrides_map_path(&o, "./data=1", "~/.ctl/files/x/1");
	task_overrides_map_path(&o, "git:https://h/r.git@v1", "~/.ctl/files/x/2");
	task_overrides_encode(&o, &m);
	ok(!task_overrides_decode(&back, m.raw.p, m.raw.len), "the path map decodes");
	is_int((long)back.npaths, 3, "three pairs");
	ok(back.npaths == 3 && !strcmp(back.path_from[1], "./data=1") &&
	           !strcmp(back.path_to[2], "~/.ctl/files/x/2"),
	   "in order, '=' and all");
	ok(!parse("workdir: ~/code/${P}\nenvs: {P: proj}\nfile_mounts:\n  /d: ./data=1\n"
	          "  /e: ./other\nrun: x\n"),
	   "a task with a workdir and two mounts");
	/* The map's keys are the paths once envs are filled in: ~/code/proj is not mapped. */
	ok(!task_list_apply_overrides(&L, &back, &E), "applied");
	is_str(T()->workdir.path, "~/code/proj", "a key is matched after substitution only");
	is_str(T()->mounts[0].src, "~/.ctl/files/x/1", "a mount source is replaced");
	is_str(T()->mounts[1].src, "./other", "one not in the map stays");
	task_overrides_release(&back);
	task_overrides_map_path(&back, "~/code/proj", "/c/0");
	task_overrides_map_path(&back, "git:https://h/r.git@v1", "/c/2");
	ok(!parse("workdir: ~/code/${P}\nenvs: {P: proj}\nrun: x\n") &&
	           !task_list_apply_overrides(&L, &back, &E),
	   "parsed and applied");
	is_str(T()->workdir.path, "/c/0", "the workdir is replaced");
	ok(!parse("workdir: {url: 'https://h/r.git', ref: v1}\nrun: x\n") &&
	           !task_list_apply_overrides(&L, &back, &E),
	   "a git workdir");
	ok(T()->workdir.kind == TASK_WORKDIR_PATH, "becomes the tree the controller holds");
	is_str(T()->workdir.path, "/c/2", "at its path");
	msg_release(&m);
	task_overrides_release(&o);
	task_overrides_release(&back);
}

int main(void)
{
	plan_run(test_minimal);
	plan_run(test_top_level_fields);
	plan_run(test_unknown_keys);
	plan_run(test_envs);
	plan_run(test_resources_values);
	plan_run(test_infra);
	plan_run(test_alternatives);
	plan_run(test_recovery_autostop);
	plan_run(test_file_mounts);
	plan_run(test_runtime_env);
	plan_run(test_pipelines);
	plan_run(test_name_limit);
	plan_run(test_not_tasks);
	plan_run(test_job_groups);
	plan_run(test_json);
	plan_run(test_overrides);
	plan_run(test_accel_by_memory);
	plan_run(test_env_subst);
	plan_run(test_command);
	plan_run(test_files);
	plan_run(test_local_paths);
	plan_run(test_path_map);
	task_list_release(&L);
	yerr_release(&E);
	return done_testing();
}
