/* bootstrap/launch/spec.c: a rank's submit message, every field a rank's role decides. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/resources.h"
#include "bootstrap/launch/spec.h"
#include "lib/env.h"
#include "lib/proto.h"
#include "lib/task.h"
#include "lib/yaml.h"
#include "tests/unit/harness.h"

static struct task_list L = TASK_LIST_INIT;
static struct yerrors E;

static const struct task *parse(const char *text)
{
	task_list_release(&L);
	yerr_release(&E);
	if (task_parse_buf(&L, "t.yaml", text, strlen(text), &E) || !L.n)
		return NULL;
	return L.tasks[0];
}

/* How many fields key has in m. */
static int count(const struct msg *m, const char *key)
{
	size_t i;
	int n = 0;

	for (i = 0; i < m->n; i++)
		n += !strcmp(m->keys[i], key);
	return n;
}

/* The value of env NAME in m ("NAME=VALUE" fields), or NULL. */
static const char *env(const struct msg *m, const char *name)
{
	size_t i, len = strlen(name);

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->keys[i], "env") && !strncmp(m->vals[i], name, len) &&
		    m->vals[i][len] == '=')
			return m->vals[i] + len + 1;
	return NULL;
}

static const char *const addrs[] = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};

static struct eng_spec spec(const struct task *t, int rank, int nranks, int nsetup)
{
	struct eng_spec s = {.task = t,
	                     .res = t && t->nres ? &t->res[0] : NULL,
	                     .cluster = "c1",
	                     .infra = "ssh/pool",
	                     .addrs = addrs,
	                     .rank = rank,
	                     .nranks = nranks,
	                     .nsetup = nsetup,
	                     .cluster_job = 7,
	                     .submit_key = "KEY",
	                     .task_id = "sky-x_c1_7",
	                     .with_setup = 1,
	                     .default_cpus = ENG_DEFAULT_CPUS};
	return s;
}

static void test_roles(void)
{
	const struct task *t = parse("setup: echo S\nrun: echo R\nnum_nodes: 2\n");
	struct eng_spec s;
	struct msg m;

	ok(t != NULL, "the task parses");
	/* Rank 1 of a 2-rank job on a 3-node cluster: setup and run. */
	s = spec(t, 1, 2, 3);
	msg_init(&m);
	eng_build_spec(&m, &s);
	is_str(msg_get(&m, "op"), "submit", "op");
	is_str(msg_get(&m, "submit_key"), "KEY/1", "the rank's key: KEY/RANK");
	is_str(msg_get(&m, "setup"), "echo S", "setup");
	is_str(msg_get(&m, "run"), "echo R", "run");
	is_str(msg_get(&m, "cpus"), "0.5", "no CPUs written: the default");
	is_str(env(&m, "SKYPILOT_NODE_RANK"), "1", "SKYPILOT_NODE_RANK");
	is_str(env(&m, "SKYPILOT_NUM_NODES"), "2", "SKYPILOT_NUM_NODES: the job's ranks");
	is_str(env(&m, "SKYPILOT_NODE_IPS"), "10.0.0.1\n10.0.0.2", "NODE_IPS: the job's ranks");
	is_str(env(&m, "SKYPILOT_SETUP_NODE_IPS"), "10.0.0.1\n10.0.0.2\n10.0.0.3",
	       "SETUP_NODE_IPS: every node that runs setup");
	is_str(env(&m, "SKIFF_NODE_RANK"), "1", "skiff's own names too");
	is_str(env(&m, "SKYPILOT_INTERNAL_JOB_ID"), "7", "the cluster job's id, not the node's");
	is_str(env(&m, "SKYPILOT_TASK_ID"), "sky-x_c1_7", "SKYPILOT_TASK_ID");
	is_str(env(&m, "SKYPILOT_CLUSTER_INFO"),
	       "{\"cluster_name\":\"c1\",\"cloud\":\"ssh\",\"region\":\"pool\",\"zone\":null}",
	       "SKYPILOT_CLUSTER_INFO: cloud and region from the infra spec");
	is_str(msg_get(&m, "cwd"), "~/sky_workdir", "the job starts in ~/sky_workdir");
	is_str(msg_get(&m, "cwd_optional"), "1", "no workdir: there only when it exists");
	is_str(msg_get(&m, "profile"), "1", "a task's job runs in SkyPilot's shell (the profile)");
	msg_release(&m);

	/* Rank 2: a node past the job's ranks runs the setup alone. */
	s = spec(t, 2, 2, 3);
	msg_init(&m);
	eng_build_spec(&m, &s);
	is_str(msg_get(&m, "setup"), "echo S", "setup-only rank: setup");
	ok(!msg_get(&m, "run"), "setup-only rank: no run");
	is_str(env(&m, "SKYPILOT_SETUP_NODE_RANK"), "2", "setup-only rank: its rank");
	msg_release(&m);

	/* The launcher joins the addresses once for every rank: the same message. */
	{
		struct msg m2;
		char *ips = eng_spec_join(addrs, 2), *setup_ips = eng_spec_join(addrs, 3);

		s = spec(t, 1, 2, 3);
		msg_init(&m);
		eng_build_spec(&m, &s);
		s.ips = ips;
		s.setup_ips = setup_ips;
		msg_init(&m2);
		eng_build_spec(&m2, &s);
		is_str(ips, "10.0.0.1\n10.0.0.2", "eng_spec_join(): the addresses, by newlines");
		ok(m.raw.len == m2.raw.len && !memcmp(m.raw.p, m2.raw.p, m.raw.len),
		   "given joined, the rank's message is the same");
		msg_release(&m);
		msg_release(&m2);
		free(ips);
		free(setup_ips);
		ips = eng_spec_join(addrs, 0);
		is_str(ips, "", "none joined: empty");
		free(ips);
	}

	/* exec (no setup): run alone. */
	s = spec(t, 0, 2, 2);
	s.with_setup = 0;
	msg_init(&m);
	eng_build_spec(&m, &s);
	ok(!msg_get(&m, "setup"), "without setup: none sent");
	is_str(msg_get(&m, "run"), "echo R", "without setup: the run");
	msg_release(&m);
}

static void test_nothing_to_run(void)
{
	const struct task *t = parse("setup: echo S\n");
	struct eng_spec s;
	struct msg m;

	s = spec(t, 0, 1, 1);
	msg_init(&m);
	eng_build_spec(&m, &s);
	ok(!msg_get(&m, "run"), "setup alone: no run (the setup is the job)");
	msg_release(&m);
	s.with_setup = 0;
	msg_init(&m);
	eng_build_spec(&m, &s);
	is_str(msg_get(&m, "run"), "true", "neither sent: run is true (a job that does nothing)");
	msg_release(&m);
}

static void test_fields(void)
{
	const struct task *t = parse("name: n1\nworkdir: .\nrun: r\nenvs:\n  A: 1\n  B: \"x y\"\n"
	                             "secrets:\n  S: s3cret\nresources:\n  cpus: 2\n  memory: 4\n"
	                             "  accelerators: H100:1\n  priority: 5\n");
	struct eng_spec s;
	struct msg m;

	ok(t != NULL, "the task parses");
	s = spec(t, 0, 1, 1);
	s.default_cpus = 0;
	msg_init(&m);
	eng_build_spec(&m, &s);
	is_str(msg_get(&m, "name"), "n1", "the task's name");
	is_str(msg_get(&m, "cpus"), "2", "cpus");
	is_str(msg_get(&m, "memory"), "4", "memory");
	is_str(msg_get(&m, "gpus"), "1", "gpus");
	is_str(msg_get(&m, "priority"), "5", "priority");
	is_str(env(&m, "SKYPILOT_NUM_GPUS_PER_NODE"), "1", "NUM_GPUS_PER_NODE");
	is_str(env(&m, "A"), "1", "an env");
	is_str(env(&m, "B"), "x y", "an env with a space, verbatim");
	is_str(env(&m, "S"), "s3cret", "a secret reaches the job's env");
	ok(!msg_get(&m, "cwd_optional"), "a workdir: the job's cwd is not optional");
	is_int(count(&m, "env"), 2 + 1 + 2 * 9 + 3, "no env twice, none missing");
	msg_release(&m);
}

static void test_cluster_info(void)
{
	char *s = eng_cluster_info("c", "local");

	is_str(s, "{\"cluster_name\":\"c\",\"cloud\":\"local\",\"region\":null,\"zone\":null}",
	       "no region: null");
	free(s);
	s = eng_cluster_info("c\"q", "k8s/ctx/ns");
	is_str(s,
	       "{\"cluster_name\":\"c\\\"q\",\"cloud\":\"k8s\",\"region\":\"ctx/ns\",\"zone\":null}",
	       "a quote in the name is escaped; the region is all after the first /");
	free(s);
}

/* The env a node gives the job for m: its "env" and "env_copy" fields, as a node takes them. */
static int node_env(const struct msg *m, struct env *e)
{
	struct buf blob = BUF_INIT(0), why = BUF_INIT(0);
	size_t i;
	int r = 0;

	for (i = 0; i < m->n && !r; i++)
		if (!strcmp(m->keys[i], "env") || !strcmp(m->keys[i], "env_copy"))
			r = env_blob_add(&blob, m->vals[i], !strcmp(m->keys[i], "env_copy"),
			                 TASK_ENV_ENTRY_MAX, &why);
	env_init(e, 0);
	env_blob_apply(e, blob.p, blob.len);
	buf_release(&blob);
	buf_release(&why);
	return r;
}

/* How many times s occurs in m's encoded form. */
static int occurs(const struct msg *m, const char *s)
{
	const char *p = m->raw.p, *end = m->raw.p + m->raw.len;
	int n = 0;

	while ((p = memmem(p, (size_t)(end - p), s, strlen(s)))) {
		n++;
		p++;
	}
	return n;
}

static void test_env_copy(void)
{
	const struct task *t = parse("setup: echo S\nrun: echo R\nenvs:\n  A: x\n");
	int shapes[2][2] = {{2, 3}, {3, 3}}, k;

	ok(t != NULL, "the task parses");
	for (k = 0; k < 2; k++) {
		struct eng_spec s = spec(t, 1, shapes[k][0], shapes[k][1]);
		struct msg full, copies;
		struct env a, b;
		size_t i;
		int same = 1;

		msg_init(&full);
		eng_build_spec(&full, &s);
		s.env_copy = 1;
		msg_init(&copies);
		eng_build_spec(&copies, &s);
		ok(!count(&full, "env_copy"), "%d of %d: a node of another build gets no copy",
		   shapes[k][0], shapes[k][1]);
		is_int(count(&copies, "env_copy"), 9 + (shapes[k][0] == shapes[k][1]),
		       "%d of %d: skiff's names are copies, and the setup's list when it is the "
		       "run's",
		       shapes[k][0], shapes[k][1]);
		ok(!node_env(&full, &a) && !node_env(&copies, &b), "%d of %d: a node takes both",
		   shapes[k][0], shapes[k][1]);
		is_int(a.n, b.n, "%d of %d: the same names", shapes[k][0], shapes[k][1]);
		for (i = 0; i < a.n; i++) {
			const char *name = a.v[i], *eq = strchr(name, '=');
			char *key = strndup(name, (size_t)(eq - name));

			same &= env_get(&b, key) && !strcmp(env_get(&b, key), eq + 1);
			free(key);
		}
		ok(same, "%d of %d: and the same values", shapes[k][0], shapes[k][1]);
		is_int(occurs(&full, "10.0.0.1\n10.0.0.2"), 4,
		       "%d of %d: the address list four times without copies", shapes[k][0],
		       shapes[k][1]);
		is_int(occurs(&copies, "10.0.0.1\n10.0.0.2"), shapes[k][0] == shapes[k][1] ? 1 : 2,
		       "%d of %d: with copies, once (twice when the setup's differs)", shapes[k][0],
		       shapes[k][1]);
		env_release(&a);
		env_release(&b);
		msg_release(&full);
		msg_release(&copies);
	}
}

int main(void)
{
	plan_run(test_roles);
	plan_run(test_nothing_to_run);
	plan_run(test_fields);
	plan_run(test_cluster_info);
	plan_run(test_env_copy);
	task_list_release(&L);
	yerr_release(&E);
	return done_testing();
}
