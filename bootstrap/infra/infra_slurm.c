/*
 * Slurm infra: the provisioner (salloc, the allocation's nodes, scancel) and its ops; the
 * host steps that keep each node's supervisor inside the allocation are slurm_steps.c. The contract
 * is in bootstrap/infra/infra.h (pick, runner) and bootstrap/infra/infra_slurm.h; the design notes
 * are in docs/infra-slurm.md.
 *
 * Every Slurm command runs with an argv (lib/spawn.h); the only values in them are the
 * partition (checked by infra_parse()), the cluster name, numbers, node names that Slurm
 * gave us (checked again here) and the time limit (checked here).
 */
#include "bootstrap/infra/infra_slurm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/infra_internal.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

#define SLURM_KEY_PREFIX "slurm/"
#define JOB_NAME_PREFIX "skiff-"
#define OUT_MAX ((size_t)4 << 20)

/* ---- running Slurm's commands --------------------------------------------------------- */

/* Runs argv; 0 with its exit code in *code, or -errno (printed, naming argv[0]). */
static int slurm_cmd(char *const *argv, struct buf *out, struct buf *err, int *code)
{
	int status = 0, r = run_capture(argv, NULL, NULL, out, err, &status);

	if (r) {
		errno = -r;
		return error_errno("cannot run '%s'%s", argv[0],
		                   r == -ENOENT ? " (are Slurm's client tools installed?)" : "");
	}
	*code = status_to_code(status);
	return 0;
}

static int valid_node_name(const char *s)
{
	if (!*s || *s == '-' || strlen(s) > 255)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._-", *s)))
			return 0;
	return 1;
}

int infra_slurm_key_parse(const char *node_key, char **job, char **node)
{
	const char *p, *slash;

	*job = *node = NULL;
	if (!node_key || !starts_with(node_key, SLURM_KEY_PREFIX))
		return -EINVAL;
	p = node_key + strlen(SLURM_KEY_PREFIX);
	slash = strchr(p, '/');
	if (!slash || slash == p || strspn(p, "0123456789") != (size_t)(slash - p) ||
	    !valid_node_name(slash + 1))
		return -EINVAL;
	*job = xstrndup(p, (size_t)(slash - p));
	*node = xstrdup(slash + 1);
	return 0;
}

int infra_slurm_cancel(const char *job)
{
	struct buf err = BUF_INIT(1 << 16);
	char *argv[] = {"scancel", (char *)job, NULL};
	int code = 0, r = slurm_cmd(argv, NULL, &err, &code);

	if (!r && code && !strstr(err.p, "Invalid job id") && !strstr(err.p, "already complet"))
		r = error("scancel %s failed (exit %d): %s", job, code, buf_last_line(&err));
	buf_release(&err);
	return r;
}

int infra_slurm_state(const char *job, struct buf *state)
{
	struct buf out = BUF_INIT(1 << 16), err = BUF_INIT(1 << 16);
	char *argv[] = {"squeue", "-h", "-t", "all", "-j", (char *)job, "-o", "%T", NULL};
	int code = 0, r = slurm_cmd(argv, &out, &err, &code);

	if (r)
		goto out;
	buf_rtrim(&out);
	if (code && strstr(err.p, "Invalid job id")) {
		r = 0;
		if (state)
			buf_adds(state, "GONE");
		goto out;
	}
	if (code) {
		r = error("cannot ask Slurm about allocation %s (squeue exit %d): %s", job, code,
		          buf_last_line(&err));
		goto out;
	}
	if (state)
		buf_adds(state, out.len ? out.p : "GONE");
	r = !strcmp(out.p, "RUNNING") || !strcmp(out.p, "CONFIGURING") ||
	    !strcmp(out.p, "SUSPENDED") || !strcmp(out.p, "RESIZING");
out:
	buf_release(&out);
	buf_release(&err);
	return r;
}

int infra_slurm_cluster_state(struct st_db *ldb, const char *cluster, struct buf *job,
                              struct buf *state)
{
	struct cluster_node *nodes = NULL;
	char *j = NULL, *node = NULL;
	size_t n = 0;
	int r = st_cluster_nodes(ldb, cluster, &nodes, &n);

	if (r)
		return r;
	if (!n || infra_slurm_key_parse(nodes[0].node_key, &j, &node)) {
		r = error("cluster %s: its nodes name no Slurm allocation", cluster);
	} else {
		if (job)
			buf_adds(job, j);
		r = infra_slurm_state(j, state);
	}
	free(j);
	free(node);
	cluster_nodes_free(nodes, n);
	return r;
}

/* ---- provisioning ---------------------------------------------------------------------- */

/* The smallest integer >= x, for x >= 0 (no libm: the ASan build links without it). */
static long ceil_pos(double x)
{
	long n = (long)x;

	return (double)n < x ? n + 1 : n;
}

/* salloc's resource flags from a resource alternative: per node, one task. */
static void salloc_resources(const struct task_resources *res, struct argv *av)
{
	const char *limit = getenv("SKIFF_SLURM_TIME");
	double cpus = 1, mem = 0;

	if (res && res->cpus.text)
		cpus = res->cpus.value;
	if (res && res->memory.text)
		mem = res->memory.mode == TASK_PER_CPU ? res->memory.value * cpus
		                                       : res->memory.value;
	argv_push(av, "--ntasks-per-node=1");
	argv_pushf(av, "--cpus-per-task=%d", (int)ceil_pos(cpus > 0 ? cpus : 1));
	if (mem > 0)
		argv_pushf(av, "--mem=%ldM", ceil_pos(mem * 1024));
	if (res && res->accel.name)
		argv_pushf(av, "--gpus-per-node=%s:%d", res->accel.name,
		           (int)ceil_pos(res->accel.count));
	if (limit && *limit) {
		if (strspn(limit, "0123456789:-") == strlen(limit))
			argv_pushf(av, "--time=%s", limit);
		else
			warning("SKIFF_SLURM_TIME '%s' is not a Slurm time (MIN, H:M:S, D-H); "
			        "ignored",
			        limit);
	}
}

/* The number in "salloc: Granted job allocation 123" (or "Pending job allocation 123"). */
static int granted_job(const char *err, char *job, size_t size)
{
	static const char *const says[] = {"Granted job allocation ", "Pending job allocation ",
	                                   "job allocation "};
	size_t i, n;

	for (i = 0; i < ARRAY_SIZE(says); i++) {
		const char *p = strstr(err, says[i]);

		if (!p)
			continue;
		p += strlen(says[i]);
		n = strspn(p, "0123456789");
		if (n && n < size) {
			memcpy(job, p, n);
			job[n] = '\0';
			return 0;
		}
	}
	return -ENOENT;
}

/* The value of KEY= in a `scontrol -o show node` line (copied into out). */
static int field(const char *line, const char *key, char *out, size_t size)
{
	const char *p = line;
	size_t klen = strlen(key), n;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[klen] == '=') {
			p += klen + 1;
			n = strcspn(p, " \n");
			if (n >= size)
				return -ENAMETOOLONG;
			memcpy(out, p, n);
			out[n] = '\0';
			return 0;
		}
		p += klen;
	}
	return -ENOENT;
}

/* Rank order: `scontrol show hostnames` of the allocation's node list; addresses. */
static int alloc_nodes(const char *job, int num_nodes, char ***names, char ***addrs)
{
	struct buf out = BUF_INIT(OUT_MAX), err = BUF_INIT(1 << 16), list = BUF_INIT(1 << 16);
	char *sq[] = {"squeue", "-h", "-j", (char *)job, "-o", "%N", NULL};
	char *hn[] = {"scontrol", "show", "hostnames", NULL, NULL};
	char *sn[] = {"scontrol", "-o", "show", "node", NULL, NULL};
	char **nv = xcalloc((size_t)num_nodes + 1, sizeof(*nv));
	char **av = xcalloc((size_t)num_nodes + 1, sizeof(*av));
	char *line, *next;
	int code = 0, n = 0, i, r;

	r = slurm_cmd(sq, &list, &err, &code);
	if (!r && code)
		r = error("squeue -j %s failed (exit %d): %s", job, code, buf_last_line(&err));
	if (r)
		goto out;
	buf_rtrim(&list);
	hn[3] = list.p;
	r = slurm_cmd(hn, &out, &err, &code);
	if (!r && code)
		r = error("scontrol show hostnames '%s' failed: %s", list.p, buf_last_line(&err));
	if (r)
		goto out;
	for (line = out.p; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!*line)
			continue;
		if (n >= num_nodes || !valid_node_name(line)) {
			r = error("allocation %s: unexpected node list '%s'", job, list.p);
			goto out;
		}
		nv[n++] = xstrdup(line);
	}
	if (n != num_nodes) {
		r = error("allocation %s has %d node(s) (%s), not %d", job, n, list.p, num_nodes);
		goto out;
	}
	/* Addresses: NodeAddr of each node, the name itself when Slurm says none. */
	buf_reset(&out);
	buf_reset(&err);
	sn[4] = list.p;
	r = slurm_cmd(sn, &out, &err, &code);
	if (!r && code)
		r = error("scontrol show node '%s' failed: %s", list.p, buf_last_line(&err));
	if (r)
		goto out;
	for (line = out.p; line && *line; line = next) {
		char name[256], addr[256];

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (field(line, "NodeName", name, sizeof(name)) ||
		    field(line, "NodeAddr", addr, sizeof(addr)))
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(nv[i], name) && !av[i] && valid_node_name(addr))
				av[i] = xstrdup(addr);
	}
	for (i = 0; i < n; i++)
		if (!av[i])
			av[i] = xstrdup(nv[i]);
	r = 0;
out:
	if (r) {
		for (i = 0; i < num_nodes; i++) {
			free(nv[i]);
			free(av[i]);
		}
		free(nv);
		free(av);
		nv = av = NULL;
	}
	*names = nv;
	*addrs = av;
	buf_release(&out);
	buf_release(&err);
	buf_release(&list);
	return r;
}

/* Where the nodes' homes live: $SKIFF_SLURM_NODE_ROOT, else /tmp/skiff-slurm-UID. */
static char *node_root(void)
{
	const char *env = getenv("SKIFF_SLURM_NODE_ROOT");

	if (env && *env == '/' && !strpbrk(env, "\n\r"))
		return xstrdup(env);
	if (env && *env)
		warning("SKIFF_SLURM_NODE_ROOT '%s' is not an absolute path; ignored", env);
	return xasprintf("/tmp/skiff-slurm-%ld", (long)geteuid());
}

static int slurm_pick(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                      struct cluster_node *v)
{
	struct buf err = BUF_INIT(1 << 20);
	struct argv av;
	char job[32] = "", **names = NULL, **addrs = NULL, *root = NULL, **opts;
	int code = 0, i, r;

	(void)ldb;
	argv_init(&av);
	argv_push(&av, "salloc");
	argv_push(&av, "--no-shell");
	/* slurm.sbatch_options and slurm.quota first: salloc takes an option's last value,
	 * so skiff's own (the name, the nodes, the resources) win over them. */
	opts = config_slurm_options(inf->config);
	for (i = 0; opts && opts[i]; i++)
		argv_push(&av, opts[i]);
	config_words_free(opts);
	argv_pushf(&av, "--job-name=" JOB_NAME_PREFIX "%s", cluster);
	if (inf->pool)
		argv_pushf(&av, "--partition=%s", inf->pool);
	argv_pushf(&av, "--nodes=%d", num_nodes);
	salloc_resources(inf->res, &av);
	debug("cluster %s: salloc for %d node(s) on %s", cluster, num_nodes, inf->spec);
	/* salloc waits until Slurm grants the allocation; Ctrl-C withdraws the request. */
	r = slurm_cmd(av.v, NULL, &err, &code);
	if (r)
		goto out;
	granted_job(err.p, job, sizeof(job));
	if (code || !strstr(err.p, "Granted job allocation")) {
		r = error("salloc for cluster %s on %s failed (exit %d): %s", cluster, inf->spec,
		          code, buf_last_line(&err));
		goto out;
	}
	if (!*job) {
		r = error("salloc for cluster %s said no job id: %s", cluster, buf_last_line(&err));
		goto out;
	}
	r = alloc_nodes(job, num_nodes, &names, &addrs);
	if (r)
		goto out;
	root = node_root();
	for (i = 0; i < num_nodes; i++) {
		struct cluster_node *n = &v[i];

		memset(n, 0, sizeof(*n));
		n->cluster = xstrdup(cluster);
		n->rank = i;
		n->node_key = xasprintf(SLURM_KEY_PREFIX "%s/%s", job, names[i]);
		n->ip = xstrdup(addrs[i]);
		n->user = xstrdup("");
		n->identity_file = xstrdup("");
		n->proxy_jump = xstrdup("");
		n->home = xasprintf("%s/%s/%s", root, job, names[i]);
		n->skiff_exe = xstrdup("");
	}
	info("cluster %s: Slurm allocation %s on %s", cluster, job, names[0]);
out:
	/* An allocation we got but cannot use is given back at once. */
	if (r && *job)
		infra_slurm_cancel(job);
	for (i = 0; names && i < num_nodes; i++) {
		free(names[i]);
		free(addrs[i]);
	}
	free(names);
	free(addrs);
	free(root);
	argv_release(&av);
	buf_release(&err);
	return r;
}

static struct runner *slurm_runner(const struct infra *inf, const struct cluster_node *n)
{
	struct runner *r;
	char *job, *node;

	(void)inf;
	if (infra_slurm_key_parse(n->node_key, &job, &node)) {
		error("cluster '%s': node %d ('%s') is not a Slurm node", n->cluster, n->rank,
		      n->node_key);
		return NULL;
	}
	r = runner_slurm_new(node, n->ip, job, node, n->home);
	free(job);
	free(node);
	return r;
}

static int slurm_parse(const char *rest, const char *spec, struct infra *out)
{
	/* A partition name is one argv word of salloc: no '/', no option. */
	if (rest && (!*rest || *rest == '-' || strchr(rest, '/') || strlen(rest) > 64))
		return error("infra '%s': expected slurm/PARTITION, a Slurm partition name", spec);
	out->pool = rest ? xstrdup(rest) : NULL;
	out->spec = rest ? xasprintf("slurm/%s", rest) : xstrdup("slurm");
	return 0;
}

/* The allocation just granted is nobody's: give it back. */
static void slurm_unpick(struct infra *inf, const char *cluster, const struct cluster_node *v,
                         int n)
{
	char *job, *node;

	(void)inf;
	(void)cluster;
	if (n > 0 && !infra_slurm_key_parse(v[0].node_key, &job, &node)) {
		infra_slurm_cancel(job);
		free(job);
		free(node);
	}
}

static int slurm_alive(struct st_db *ldb, const char *cluster, struct buf *what, struct buf *state)
{
	return infra_slurm_cluster_state(ldb, cluster, what, state);
}

static int slurm_teardown(const struct infra *inf, struct st_db *ldb, struct clive *cl,
                          const char *cluster)
{
	struct buf job = BUF_INIT(0), state = BUF_INIT(0);
	int r = 0;

	(void)inf;
	infra_slurm_cluster_state(ldb, cluster, &job, &state);
	if (cl && job.len && (r = infra_slurm_release(cl, job.p)))
		error("cluster %s: its Slurm allocation %s could not be released", cluster, job.p);
	buf_release(&job);
	buf_release(&state);
	return r;
}

/* The head's autostop releases the allocation, stop or down: it cannot be paused. */
static char *slurm_idle_hook(const struct clive *cl, int down)
{
	const char *job = cl->n ? runner_slurm_job(cl->nodes[0].r) : NULL;

	(void)down;
	if (!job)
		return NULL;
	return xasprintf("#!/bin/sh\n# skiff, slurm infra: autostop releases the allocation\n"
	                 "exec scancel %s\n",
	                 job);
}

static int slurm_hook_fired(struct st_db *ldb, const struct clive *cl)
{
	struct buf job = BUF_INIT(0), state = BUF_INIT(0);
	int r = infra_slurm_cluster_state(ldb, cl->name, &job, &state);

	buf_release(&job);
	buf_release(&state);
	return r < 0 ? r : !r;
}

static int slurm_busy(struct clive *cl)
{
	return infra_slurm_busy(cl);
}

/*
 * Usable when sinfo answers with the partitions (the one named among them): salloc, srun
 * and squeue speak to the same controller. What sinfo says of each partition is the
 * inventory: a row per partition and kind of node (sinfo splits a partition whose nodes
 * differ in CPUs, memory or GRES).
 */
static void slurm_probe(const struct infra *inf, int64_t deadline, struct infra_probe *out)
{
	static const char *const cols[] = {"partition", "default",   "avail", "nodes",
	                                   "cpus",      "memory_mb", "gres",  "timelimit"};
	/* %F: nodes allocated/idle/other/total. The fields are sinfo's, cols' order. */
	char *argv[] = {"sinfo", "--noheader", "--format=%P|%a|%F|%c|%m|%G|%l", NULL};
	struct buf text = BUF_INIT(1 << 20), list = BUF_INIT(4096);
	struct infra_inv *inv;
	char *line, *next, *last = "";
	size_t n = 0;
	int found = 0;

	if (infra_probe_run(out, "sinfo", argv, deadline, &text))
		goto out;
	inv = infra_inv_table(out, "partitions", cols, ARRAY_SIZE(cols));
	for (line = text.p; line && *line; line = next) {
		char *f[7];
		const char *cells[8];
		size_t len;
		int dflt;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		infra_inv_fields(line, '|', f, ARRAY_SIZE(f));
		len = strlen(f[0]);
		if (!len)
			continue;
		dflt = f[0][len - 1] == '*'; /* sinfo marks the default partition */
		f[0][len - dflt] = '\0';
		if (!f[0][0])
			continue;
		/* The same partition again is another kind of its nodes. */
		if (strcmp(f[0], last)) {
			if (n < 8)
				buf_addf(&list, "%s%s%s", n ? ", " : "", f[0],
				         dflt ? " (default)" : "");
			n++;
		}
		last = f[0];
		if (inf->pool && strcmp(f[0], inf->pool))
			continue;
		found = 1;
		cells[0] = f[0];
		cells[1] = dflt ? "yes" : "";
		memcpy(cells + 2, f + 1, sizeof(*f) * 6);
		infra_inv_add(inv, NULL, NULL, 0, cells);
	}
	if (n > 8)
		buf_adds(&list, ", ...");
	if (!found) {
		infra_probe_set(out, INFRA_PROBE_UNUSABLE, "sinfo");
		if (!n)
			infra_probe_say(out, "sinfo lists no partitions");
		else
			infra_probe_say(out, "no partition '%s'; sinfo lists %s", inf->pool,
			                list.p);
		goto out;
	}
	if (inf->pool)
		infra_probe_say(out, "Slurm answers; partition %s is there", inf->pool);
	else
		infra_probe_say(out, "Slurm answers; partitions: %s", list.p);
out:
	buf_release(&text);
	buf_release(&list);
}

/* salloc --nodes: what one allocation can give, bounded as the others are. */
#define SLURM_MAX_NODES 1024

const struct infra_ops infra_slurm_ops = {
        .name = "slurm",
        .honours = TR_PORTS, /* endpoints are the head's address and the port */
        .kind = INFRA_SLURM,
        .flags = INFRA_NO_STOP,
        .max_nodes = SLURM_MAX_NODES,
        .holder = "Slurm allocation",
        .parse = slurm_parse,
        .pick = slurm_pick,
        .unpick = slurm_unpick,
        .runner = slurm_runner,
        .nodes_up = infra_slurm_hosts_up,
        .busy = slurm_busy,
        .alive = slurm_alive,
        .teardown = slurm_teardown,
        .idle_hook = slurm_idle_hook,
        .hook_fired = slurm_hook_fired,
        .probe = slurm_probe,
};
