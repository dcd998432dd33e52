/*
 * One rank's submit message (spec.h): pure, no I/O.
 */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/resources.h"
#include "bootstrap/launch/spec.h"
#include "lib/buf.h"
#include "lib/json.h"
#include "lib/util.h"
#include "lib/banned.h"

char *eng_cluster_info(const char *cluster, const char *infra)
{
	struct buf b = BUF_INIT(0);
	struct json j;
	const char *slash = strchr(infra, '/');
	char *cloud = slash ? xstrndup(infra, (size_t)(slash - infra)) : xstrdup(infra);

	json_init(&j, &b, 0);
	json_obj_begin(&j);
	json_key(&j, "cluster_name");
	json_str(&j, cluster);
	json_key(&j, "cloud");
	json_str(&j, cloud);
	json_key(&j, "region");
	json_str(&j, slash ? slash + 1 : NULL);
	json_key(&j, "zone");
	json_null(&j);
	json_obj_end(&j);
	free(cloud);
	return buf_detach(&b, NULL);
}

static void add_env(struct msg *m, const char *k, const char *v)
{
	msg_addf(m, "env", "%s=%s", k, v);
}

/*
 * One of a rank's gang envs: SUFFIX under prefix p, set to v; or, with "env_copy" (a node
 * of the launcher's own build), a copy of the same one under prefix from, or of the one
 * under p named same, when from is NULL and same is not: the node stores and passes the
 * value once (lib/env.h).
 */
static void add_gang(struct msg *m, const struct eng_spec *s, const char *p, const char *from,
                     const char *suffix, const char *same, const char *v)
{
	if (s->env_copy && (from || same))
		msg_addf(m, "env_copy", "%s%s=%s%s", p, suffix, from ? from : p,
		         from ? suffix : same);
	else
		msg_addf(m, "env", "%s%s=%s", p, suffix, v);
}

/*
 * The rank's gang envs under prefix p (SKYPILOT_, and SKIFF_ for skiff's own names:
 * from, the prefix they are copies of, or NULL).
 */
static void add_gang_envs(struct msg *m, const struct eng_spec *s, const char *p, const char *from,
                          const char *ips, const char *setup_ips, int gpus, const char *info)
{
	char rank[32], nranks[32], ngpus[32];

	xsnprintf(rank, sizeof(rank), "%d", s->rank);
	xsnprintf(nranks, sizeof(nranks), "%d", s->nranks);
	xsnprintf(ngpus, sizeof(ngpus), "%d", gpus);
	add_gang(m, s, p, from, "NODE_RANK", NULL, rank);
	add_gang(m, s, p, from, "SETUP_NODE_RANK", NULL, rank);
	add_gang(m, s, p, from, "NODE_IPS", NULL, ips);
	/* Every node runs the job as it runs the setup (the common case): the list once. */
	add_gang(m, s, p, from, "SETUP_NODE_IPS", strcmp(ips, setup_ips) ? NULL : "NODE_IPS",
	         setup_ips);
	add_gang(m, s, p, from, "NUM_NODES", NULL, nranks);
	add_gang(m, s, p, from, "NUM_GPUS_PER_NODE", NULL, ngpus);
	add_gang(m, s, p, from, "SETUP_NUM_GPUS_PER_NODE", NULL, ngpus);
	add_gang(m, s, p, from, "TASK_ID", NULL, s->task_id);
	add_gang(m, s, p, from, "CLUSTER_INFO", NULL, info);
}

char *eng_spec_join(const char *const *addrs, int n)
{
	struct buf b = BUF_INIT(0);
	int i;

	for (i = 0; i < n; i++) {
		if (i)
			buf_addch(&b, '\n');
		buf_adds(&b, addrs[i]);
	}
	return buf_detach(&b, NULL);
}

void eng_build_spec(struct msg *m, const struct eng_spec *s)
{
	const struct task *t = s->task;
	char *own_ips = NULL, *own_setup_ips = NULL;
	const char *ips = s->ips ? s->ips : (own_ips = eng_spec_join(s->addrs, s->nranks));
	const char *setup_ips =
	        s->setup_ips ? s->setup_ips : (own_setup_ips = eng_spec_join(s->addrs, s->nsetup));
	char num[32];
	char *info = eng_cluster_info(s->cluster, s->infra);
	struct eng_res ask = eng_job_ask(s->res, s->default_cpus);
	size_t k;

	msg_add(m, "op", "submit");
	/* The node keeps one job per key: a retried or settled submit never runs twice. */
	msg_addf(m, "submit_key", "%s/%d", s->submit_key, s->rank);
	msg_add(m, "name", t->name ? t->name : "");
	msg_addf(m, "cpus", "%g", ask.cpus);
	msg_addf(m, "memory", "%g", ask.memory);
	msg_add_int(m, "gpus", ask.gpus);
	if (s->res && (s->res->set & TR_PRIORITY))
		msg_add_int(m, "priority", s->res->priority);
	if (s->with_setup && t->setup)
		msg_add(m, "setup", t->setup);
	if (s->rank >= s->nranks)
		; /* setup only */
	else if (t->run)
		msg_add(m, "run", t->run);
	else if (!s->with_setup || !t->setup)
		msg_add(m, "run", "true");
	/* As SkyPilot's job script: in ~/sky_workdir, also where this task brought none. */
	msg_add(m, "cwd", "~/sky_workdir");
	if (t->workdir.kind == TASK_WORKDIR_NONE)
		msg_add(m, "cwd_optional", "1");
	/* And in SkyPilot's shell: the login profile and conda's first (supervisor/script.h). */
	msg_add(m, "profile", "1");
	for (k = 0; k < t->envs.n; k++)
		if (t->envs.v[k].value)
			add_env(m, t->envs.v[k].key, t->envs.v[k].value);
	for (k = 0; k < t->secrets.n; k++)
		if (t->secrets.v[k].value)
			add_env(m, t->secrets.v[k].key, t->secrets.v[k].value);
	add_gang_envs(m, s, "SKYPILOT_", NULL, ips, setup_ips, ask.gpus, info);
	add_gang_envs(m, s, "SKIFF_", "SKYPILOT_", ips, setup_ips, ask.gpus, info);
	xsnprintf(num, sizeof(num), "%lld", (long long)s->cluster_job);
	add_env(m, "SKIFF_CLUSTER_JOB_ID", num);
	add_env(m, "SKYPILOT_INTERNAL_JOB_ID", num); /* the id `queue` shows, not the node's */
	add_env(m, "SKIFF_CLUSTER", s->cluster);
	free(own_ips);
	free(own_setup_ips);
	free(info);
}
