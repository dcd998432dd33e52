/*
 * Launch and exec: run a task on a cluster, creating the cluster first when a launch
 * names one that does not exist.
 *
 *   launch: pick nodes -> bootstrap (copy skiff, supervisor up) -> sync workdir and file
 *           mounts -> submit setup+run on every rank -> follow the logs
 *   exec:   sync workdir -> submit run only -> follow the logs
 *
 * The sync is task_sync.c's, a rank's submit message spec.c's, the resource
 * alternatives' helpers alternatives.c's.
 *
 * The cluster's lock is held from before the cluster is looked up until the job is
 * submitted; following the logs changes nothing and holds none.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/engine_internal.h"
#include "bootstrap/launch/progress.h"
#include "bootstrap/launch/resources.h"
#include "bootstrap/launch/spec.h"
#include "bootstrap/launch/ssh_config.h"
#include "bootstrap/launch/renv_ship.h"
#include "bootstrap/renv/renv.h"
#include "lib/env.h"
#include "lib/exit.h"
#include "lib/lock.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/launcher.h"
#include "state/node.h"
#include "lib/banned.h"

/* Random bytes in a cluster job's submit key (hex: twice as many characters). */
#define SUBMIT_KEY_BYTES 16

static int bootstrap_nodes(struct st_db *ldb, struct clive *cl);

/* One rank's submit, run in a thread of its own when there are several. */
struct rank_submit {
	struct cnode *nd;
	struct renv_launch *rl;
	struct msg m;
	struct cl_follower *f; /* NULL: submit only */
	int64_t id;
	int r;
	pthread_t th;
	int started;
};

static void rank_submit(struct rank_submit *s)
{
	/* The node's runner is this thread's alone (runner.h); errors are printed. */
	s->r = renv_launch_node(s->rl, s->nd, &s->m);
	if (!s->r)
		s->r = s->f ? cl_submit_follow(s->nd, &s->m, &s->id, s->f)
		            : cl_submit(s->nd, &s->m, &s->id);
}

static void *rank_submit_thread(void *arg)
{
	rank_submit(arg);
	return NULL;
}

/*
 * Submits the job on ranks 0..nranks-1 (and, with its setup, on the cluster's other
 * nodes as setup-only ranks), all at once (a thread per rank, as cl_bootstrap() does);
 * records it in the launcher db. f non-NULL (one per node): each rank is submitted and
 * followed in one round trip, f[i].pid > 0 then.
 */
static int submit_job(struct st_db *ldb, struct clive *cl, const struct eng_launch *req,
                      const struct task_resources *res, int with_setup, const char *commit,
                      int64_t *cluster_job, struct cl_follower *f)
{
	const struct task *t = req->task;
	const char *entry = req->entrypoint ? req->entrypoint : "";
	struct cluster_job cj = {0};
	struct buf ids = BUF_INIT(0);
	struct rank_submit *rs;
	struct eng_spec spec;
	const char **addrs;
	struct step st;
	char *task_id = NULL, stamp[32], key[2 * SUBMIT_KEY_BYTES + 1], *ips, *setup_ips;
	int nranks = t->num_nodes > 0 ? (int)t->num_nodes : 1, nsub, i, r, e;
	time_t now = time(NULL);
	struct renv_launch rl;
	struct tm tm;

	if ((size_t)nranks > cl->n)
		return error("the task wants %d nodes, but cluster %s has %zu", nranks, cl->name,
		             cl->n);
	/* Setup runs on every node of the cluster; run on the first nranks. */
	nsub = with_setup && t->setup ? (int)cl->n : nranks;
	cj.name = t->name ? t->name : "";
	cj.num_nodes = nsub;
	cj.node_job_ids = "";
	cj.log_dir = "";
	cj.entrypoint = (char *)entry;
	cj.git_commit = (char *)commit;
	/* Until the ranks' ids are recorded, who submits and how to ask the nodes about it. */
	random_hex(key, SUBMIT_KEY_BYTES);
	cj.submit_key = key;
	cj.owner_pid = getpid();
	cj.owner_start = proc_start_time(getpid());
	r = renv_launch_prepare(&rl, t);
	if (r)
		return r;
	r = st_cluster_job_add(ldb, cl->name, &cj);
	if (r) {
		renv_launch_release(&rl);
		return r;
	}
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d-%H-%M-%S", &tm);
	/* A managed job's id holds its name, of any length the task allows. */
	task_id = req->task_id ? xstrdup(req->task_id)
	                       : xasprintf("sky-%s_%s_%lld", stamp, cl->name, (long long)cj.id);
	step_begin(&st, "submit");
	rs = xcalloc((size_t)nsub, sizeof(*rs));
	addrs = xcalloc((size_t)nsub, sizeof(*addrs));
	for (i = 0; i < nsub; i++)
		addrs[i] = cl->nodes[i].addr;
	ips = eng_spec_join(addrs, nranks);
	setup_ips = eng_spec_join(addrs, nsub);
	spec = (struct eng_spec){.task = t,
	                         .res = res,
	                         .cluster = cl->name,
	                         .infra = cl->infra,
	                         .addrs = addrs,
	                         .ips = ips,
	                         .setup_ips = setup_ips,
	                         .nranks = nranks,
	                         .nsetup = nsub,
	                         .cluster_job = cj.id,
	                         .submit_key = cj.submit_key,
	                         .task_id = task_id,
	                         .with_setup = with_setup,
	                         .default_cpus = req->no_default_cpus ? 0 : ENG_DEFAULT_CPUS};
	for (i = 0; i < nsub; i++) {
		rs[i].nd = &cl->nodes[i];
		rs[i].rl = &rl;
		rs[i].f = f ? &f[i] : NULL;
		msg_init(&rs[i].m);
		spec.rank = i;
		spec.env_copy = cl_node_ours(&cl->nodes[i]);
		eng_build_spec(&rs[i].m, &spec);
		if (f && nsub > 1) {
			/* The node prefixes the ranks' lines, as eng_follow()'s streams ask. */
			msg_add_int(&rs[i].m, "prefix_rank", i);
			msg_add(&rs[i].m, "prefix_ip", cl->nodes[i].ip ? cl->nodes[i].ip : "");
		}
	}
	if (nsub == 1) {
		rank_submit(&rs[0]);
	} else {
		for (i = 0; i < nsub; i++) {
			e = pthread_create(&rs[i].th, NULL, rank_submit_thread, &rs[i]);
			if (e) {
				rs[i].r = error("cannot start a thread to submit to node %s: %s",
				                rs[i].nd->name, strerror(e));
				continue;
			}
			rs[i].started = 1;
		}
		for (i = 0; i < nsub; i++)
			if (rs[i].started)
				pthread_join(rs[i].th, NULL);
	}
	for (i = 0, r = 0; i < nsub && !r; i++) {
		if (rs[i].r == -ENOEXEC) {
			/* Its skiff was removed behind our back: put it back, once. */
			r = bootstrap_nodes(ldb, cl);
			if (r)
				break;
			for (int k = i; k < nsub; k++)
				if (rs[k].r == -ENOEXEC) {
					rank_submit(&rs[k]);
					if (rs[k].r == -ENOEXEC)
						rs[k].r = error(
						        "node %s: skiff is missing there even "
						        "after a bootstrap",
						        rs[k].nd->name);
				}
		}
		r = rs[i].r;
	}
	/*
	 * Followed, each rank's install session (still open from the bootstrap) carried its
	 * submit and now follows it (cl_submit_follow()); the sessions of the nodes that got
	 * no rank end here, not with the follow.
	 */
	if (f)
		cl_spares_close(cl);
	for (i = 0; i < nsub; i++) {
		msg_release(&rs[i].m);
		buf_addf(&ids, "%s%lld", i ? "," : "", (long long)rs[i].id);
		/*
		 * A gang runs whole or not at all: take back the ranks that went in, by key, so
		 * that one whose answer was lost (a timeout) is stopped too, or never starts. A
		 * node that is gone runs nothing of it.
		 */
		if (r && !(rs[i].r && runner_node_gone(rs[i].nd->r, rs[i].r)) &&
		    cl_cancel_key(rs[i].nd, key, i))
			warning("node %s: cannot cancel rank %d of the failed submit: cancel it with "
			        "'skiff cancel %s'",
			        rs[i].nd->name, i, cl->name);
	}
	free(rs);
	free(addrs);
	free(ips);
	free(setup_ips);
	if (r) {
		/* Nothing of it runs: no row that `queue` would show as a job. */
		st_cluster_job_delete(ldb, cl->name, cj.id);
		step_fail(&st);
		goto out;
	}
	r = st_cluster_job_set_node_ids(ldb, cl->name, cj.id, ids.p);
	if (r) {
		/* The ranks run; a later command finds them by key (eng_settle_submit()). */
		error("job %lld is submitted, but its node job ids cannot be recorded",
		      (long long)cj.id);
		goto out;
	}
	if (nsub > nranks)
		step_done(&st, "job %lld on %d node(s), its setup on all %d", (long long)cj.id,
		          nranks, nsub);
	else
		step_done(&st, "job %lld on %d node(s)", (long long)cj.id, nranks);
	*cluster_job = cj.id;
	if (nsub > 1)
		eng_start_gang_watch(cl->name, cj.id, key);
out:
	renv_launch_release(&rl);
	buf_release(&ids);
	free(task_id);
	return r;
}

/*
 * Autostop as asked: the flags (-i, --down) win over the task's resources.autostop. 1 if
 * set (or turned off) here, 0 if neither asks, -1 on failure (printed).
 */
static int set_task_autostop(struct st_db *ldb, struct clive *cl, const struct eng_launch *req,
                             const struct task_resources *res)
{
	const struct task_autostop *as = &res->autostop;
	int minutes;

	if (req->idle_minutes >= 0 || req->down) {
		minutes = req->idle_minutes >= 0 ? req->idle_minutes : 1;
		return eng_set_autostop(ldb, cl, minutes, req->down, req->wait_for) ? -1 : 1;
	}
	if (!as->set)
		return 0;
	if (as->hook)
		warning("resources.autostop.hook is not run: a node stops by its infra's hook "
		        "(docs/node.md); the rest of autostop is set");
	if (!as->enabled)
		return eng_set_autostop(ldb, cl, -1, 0, NULL) ? -1 : 1;
	minutes = as->idle_minutes >= 0 ? (int)as->idle_minutes : TASK_AUTOSTOP_DEFAULT_MINUTES;
	return eng_set_autostop(ldb, cl, minutes, as->down,
	                        req->wait_for ? req->wait_for : as->wait_for)
	               ? -1
	               : 1;
}

/*
 * A launch's autostop: as the task asks, else a stopped cluster that was started again
 * gets its own setting back (it fired once: that supervisor is gone). 0, or -EIO (printed).
 */
static int launch_autostop(struct st_db *ldb, struct clive *cl, const struct eng_launch *req,
                           const struct task_resources *res, const struct cluster *c, int stopped)
{
	int r = set_task_autostop(ldb, cl, req, res);

	if (!r && stopped && c->autostop_minutes >= 0)
		r = eng_set_autostop(ldb, cl, c->autostop_minutes, c->autostop_down,
		                     c->autostop_wait_for)
		            ? -1
		            : 1;
	return r < 0 ? -EIO : 0;
}

/* The task's ports join those the cluster opened (status --endpoints shows them). */
static void record_ports(struct st_db *ldb, struct clive *cl, const struct task_resources *res)
{
	struct cluster c;
	char *ports;

	if (!res->nports || !(cl->ops->honours & TR_PORTS) || st_cluster_get(ldb, cl->name, &c))
		return;
	ports = task_ports_union(c.ports, res->ports, res->nports);
	if (strcmp(ports, c.ports ? c.ports : ""))
		st_cluster_set_ports(ldb, cl->name, ports);
	free(ports);
	cluster_free(&c);
}

/* What the cluster's infra ignores of t (as `skiff check FILE` says it too). */
static void warn_ignored_fields(const struct task *t, const struct clive *cl)
{
	struct buf msg[INFRA_IGNORED_N] = {BUF_INIT(0), BUF_INIT(0)};
	size_t k;

	infra_ignored_fields(t, cl->ops, cl->infra, msg);
	for (k = 0; k < INFRA_IGNORED_N; k++) {
		if (msg[k].len)
			warning("%s", msg[k].p);
		buf_release(&msg[k]);
	}
}

/* Creates the cluster for resource alternative res: pick and book nodes (status INIT). */
/* Node keys of hosts that another launcher's cluster holds: the next pick skips them. */
struct held_hosts {
	char **keys;
	size_t n, alloc;
};

static int create_cluster(struct st_db *ldb, const char *name, const char *spec,
                          const struct task *t, const struct task_resources *res, const char *entry,
                          const struct cfg_node *config, const struct held_hosts *held)
{
	struct infra inf;
	struct cluster c = {0};
	struct cluster_node *nodes = NULL;
	struct step st;
	int n = t->num_nodes > 0 ? (int)t->num_nodes : 1, r;
	char text[128];

	if (infra_parse(spec, &inf))
		return -EINVAL; /* printed; no retry makes it an infra */
	r = infra_resolve(&inf);
	if (r)
		goto out;
	/* Container and pod infras start new nodes from the task's image (docker:IMAGE). */
	if ((inf.ops->flags & INFRA_IMAGE) && res && task_image_is_docker(res->image_id))
		inf.image = xstrdup(res->image_id + strlen("docker:"));
	inf.res = res; /* slurm: salloc asks for these resources */
	inf.config = config;
	inf.held = held->keys;
	inf.nheld = held->n;
	step_begin(&st, "nodes");
	r = infra_pick_nodes(&inf, ldb, name, n, &nodes);
	if (r) {
		step_fail(&st);
		goto out;
	}
	eng_resources_text(res, n, text, sizeof(text));
	c.name = (char *)name;
	c.infra = inf.spec;
	c.status = CLUSTER_INIT;
	c.resources = text;
	c.autostop_minutes = -1;
	c.last_task = (char *)entry;
	c.head_ip = nodes[0].ip;
	r = st_cluster_create(ldb, &c, nodes, (size_t)n);
	if (r) {
		step_fail(&st);
		/*
		 * What the pick made (containers, pods, an allocation) is given back, unless the
		 * cluster exists already (-EEXIST: they are another launch's).
		 */
		if (r != -EEXIST && inf.ops->unpick)
			inf.ops->unpick(&inf, name, nodes, n);
		goto out;
	}
	step_done(&st, "%d node(s) on %s: %s%s", n, inf.spec, nodes[0].ip, n > 1 ? ", ..." : "");
out:
	if (nodes)
		cluster_nodes_free(nodes, (size_t)n);
	infra_release(&inf);
	return r;
}

static int bootstrap_nodes(struct st_db *ldb, struct clive *cl)
{
	struct step st;
	size_t i, copied = 0, linked = 0, started = 0;
	char how[48] = "";
	int r;

	step_begin(&st, "bootstrap");
	/* Then what the infra does once the supervisors are up (slurm: its job steps). */
	r = cl_bootstrap(cl); /* -EADDRINUSE: held by another launcher's cluster, said */
	/*
	 * Each node that came up is recorded, even when another did not: the down that
	 * undoes a failed launch then stops it and lets go of its host (a node that refused,
	 * held by another launcher's cluster, has no skiff recorded and is never touched).
	 */
	for (i = 0; i < cl->n; i++) {
		if (!cl->nodes[i].exe)
			continue;
		st_cluster_node_set_exe(ldb, cl->name, cl->nodes[i].rank, cl->nodes[i].exe);
		st_cluster_node_set_addr(ldb, cl->name, cl->nodes[i].rank, cl->nodes[i].addr);
	}
	if (r || (cl->ops->nodes_up && cl->ops->nodes_up(cl))) {
		step_fail(&st);
		return r == -EADDRINUSE ? r : -1;
	}
	for (i = 0; i < cl->n; i++) {
		copied += cl->nodes[i].copied;
		linked += cl->nodes[i].linked;
		started += cl->nodes[i].sup_started;
	}
	if (linked)
		xsnprintf(how, sizeof(how), " (%zu as hard links)", linked);
	step_done(&st, "skiff copied to %zu%s, already on %zu; %zu supervisor(s) started", copied,
	          how, cl->n - copied, started);
	return 0;
}

/*
 * The nodes of a new cluster that outlive clusters (cnode.stays: ssh hosts, a pool's
 * containers or pods) were booked by no cluster, so whatever jobs their supervisors still
 * have were left by one taken down while the node could not be reached (`down` releases
 * the bookings anyway): they are cancelled, and said so.
 */
static void cancel_leftovers(struct clive *cl)
{
	size_t i, k;

	for (i = 0; i < cl->n; i++) {
		struct buf ids = BUF_INIT(0);
		struct msg req, rep;
		size_t nids = 0;

		/* A node of its own, or its `node up` said: nothing there. */
		if (!cl->nodes[i].stays || !cl->nodes[i].active)
			continue;
		msg_init(&req);
		msg_add(&req, "op", "cancel");
		msg_add(&req, "all", "1");
		if (!cl_call(&cl->nodes[i], &req, &rep, CL_NODE_CALL_MS))
			for (k = 0; k < rep.n; k++)
				if (!strcmp(rep.keys[k], "cancelled")) {
					buf_addf(&ids, "%s%s", ids.len ? " " : "", rep.vals[k]);
					nids++;
				}
		if (ids.len)
			warning("node %s: cancelled %zu job(s): %s, left by a cluster taken down while "
			        "the node could not be reached",
			        cl->nodes[i].name, nids, ids.p);
		msg_release(&req);
		msg_release(&rep);
		buf_release(&ids);
	}
}

/* A node whose skiff is not this launcher's binary gets it (upgrade in place). */
static int outdated(const struct clive *cl)
{
	const char *sha = self_sha256_cached();
	size_t i;

	for (i = 0; i < cl->n; i++)
		if (!cl->nodes[i].exe || !sha || !strstr(cl->nodes[i].exe, sha))
			return 1;
	return 0;
}

void eng_start_gang_watch(const char *cluster, int64_t job, const char *key)
{
	char idbuf[32];
	char *argv[] = {
	        (char *)self_path(NULL), "__gang", (char *)cluster, idbuf, (char *)key, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	char *logp = xasprintf("%s/gang.log", skiff_home()), *mark = eng_gang_env(cluster);
	int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	struct env env;
	pid_t pid;

	xsnprintf(idbuf, sizeof(idbuf), "%lld", (long long)job);
	/* What `down` finds it by (and what it starts): eng_gang_env(). */
	env_init(&env, 1);
	env_put(&env, mark);
	o.envp = env.v;
	o.argv = argv;
	o.fd_out = fd >= 0 ? fd : -1;
	o.err_to_out = 1;
	o.pgrp = SPAWN_SESSION_NEW;
	if (!argv[0] || spawn(&o, &pid))
		warning("cannot start the gang watcher: if a rank fails, cancel the others with "
		        "'skiff cancel %s %lld'",
		        cluster, (long long)job);
	if (fd >= 0)
		close(fd);
	env_release(&env);
	free(mark);
	free(logp);
	/* Not reaped: it outlives us by design (re-parented to init). */
}

/*
 * The cluster a launch makes is not left behind when the launch fails before its job is
 * submitted: its nodes are released as `down` would.
 */
/* again: another try follows (the caller says so), not a failed launch. */
static void undo_new_cluster(struct st_db *ldb, const char *name, int again)
{
	struct cluster c;

	if (st_cluster_get(ldb, name, &c))
		return;
	cluster_free(&c);
	if (!again)
		info("cluster %s: the launch failed; taking the new cluster down", name);
	if (eng_down_locked(ldb, name, 0) < 0)
		warning("cluster %s could not be taken down: run 'skiff down %s'", name, name);
}

/*
 * The hosts of cl that said another launcher's cluster holds them go to held (by node
 * key); how many were new there. Each try of a launch excludes at least one more host,
 * so the tries end.
 */
static size_t note_held(struct st_db *ldb, const struct clive *cl, struct held_hosts *held)
{
	struct cluster_node *nodes = NULL;
	size_t n = 0, i, k, added = 0;

	if (st_cluster_nodes(ldb, cl->name, &nodes, &n))
		return 0;
	for (i = 0; i < n; i++) {
		int rank = nodes[i].rank;

		if (rank < 0 || (size_t)rank >= cl->n || !cl->nodes[rank].held)
			continue;
		/* A share's key is its host's and "#CLUSTER": the host is what the pick skips. */
		char *host = infra_host_of_key(nodes[i].node_key);

		for (k = 0; k < held->n && strcmp(held->keys[k], host); k++)
			;
		if (k < held->n) {
			free(host);
			continue;
		}
		held->keys = xgrow(held->keys, held->n, &held->alloc, sizeof(*held->keys));
		held->keys[held->n++] = host;
		added++;
	}
	cluster_nodes_free(nodes, n);
	return added;
}

/* ---- resource alternatives (their helpers: alternatives.c) --------------------------- */

/*
 * A new cluster for the first alternative that its infra can give nodes for and whose
 * nodes fit it, bootstrapped and UP; each one that fails is taken down before the next
 * is tried. *chosen is its index, and *out the cluster, open (its nodes' install sessions
 * waiting for their next call: cluster.h). 0, or -errno (printed; no cluster is left).
 */
static int launch_new(struct st_db *ldb, const char *name, const struct eng_launch *req,
                      const char *entry, size_t *chosen, struct clive *out)
{
	const struct task *t = req->task;
	size_t n = eng_n_alternatives(t), k, i, again = 0;
	struct buf *why = eng_whys_new(n);
	struct held_hosts held = {0};
	char text[128];
	int r = -EIO;

	for (k = 0; k < n; k += !again) {
		const struct task_resources *res = eng_alternative(t, k);
		const char *spec = eng_alternative_infra(req, res);
		struct cluster c;
		struct clive cl = {0};

		again = 0;
		if (n > 1 && !req->quiet) {
			eng_resources_text(res, t->num_nodes > 0 ? (int)t->num_nodes : 1, text,
			                   sizeof(text));
			fprintf(stderr, "Trying resources %zu of %zu: %s on %s\n", k + 1, n, text,
			        spec);
		}
		r = create_cluster(ldb, name, spec, t, res, entry, req->config, &held);
		if (r == -EEXIST)
			break; /* another's: nothing of it is ours to undo */
		if (!r && !st_cluster_get(ldb, name, &c)) {
			r = eng_open_cluster(ldb, &c, &cl) ? -EIO : bootstrap_nodes(ldb, &cl);
			/* Hosts another launcher's cluster holds: the same resources elsewhere. */
			if (r == -EADDRINUSE && note_held(ldb, &cl, &held))
				again = 1;
			if (!r)
				cancel_leftovers(&cl);
			if (!r && n > 1)
				r = eng_check_fit(&cl, req, res, &why[k]);
			if (!r)
				r = st_cluster_set_status(ldb, name, CLUSTER_MASK_ALL, CLUSTER_UP);
			cluster_free(&c);
			if (r)
				cl_close(&cl);
		}
		if (!r) {
			*chosen = k;
			*out = cl;
			break;
		}
		if (again) {
			undo_new_cluster(ldb, name, 1);
			if (!req->quiet)
				info("cluster %s: trying the other hosts of %s", name, spec);
			continue;
		}
		if (!why[k].len)
			eng_why_last_error(&why[k]);
		if (n > 1 && r == -ENOSPC && !req->quiet)
			fprintf(stderr, "  %s\n", why[k].p);
		undo_new_cluster(ldb, name, 0);
	}
	if (r && r != -EEXIST && n > 1)
		r = eng_none_taken(req, why);
	eng_whys_free(why, n);
	for (i = 0; i < held.n; i++)
		free(held.keys[i]);
	free(held.keys);
	return r;
}

/*
 * The first alternative an existing cluster can run: one that names another infra is
 * not (the cluster stays where it is), nor one its nodes cannot hold. 0, or -ENOSPC
 * (printed, each alternative and why).
 */
static int pick_existing(struct clive *cl, const struct eng_launch *req, size_t *chosen)
{
	const struct task *t = req->task;
	size_t n = eng_n_alternatives(t), k;
	struct buf *why;
	int r = 0;

	*chosen = 0;
	why = eng_whys_new(n);
	for (k = 0; k < n; k++) {
		const struct task_resources *res = eng_alternative(t, k);
		struct infra inf;

		/* An infra of "*" (and "*" with a region) asks for no infra in particular. */
		if (!req->infra && res && res->infra && res->infra[0] != '*') {
			int same;

			if (infra_parse(res->infra, &inf)) {
				eng_why_last_error(&why[k]);
				continue;
			}
			same = inf.ops == cl->ops && !strcmp(inf.spec, cl->infra);
			infra_release(&inf);
			if (!same) {
				buf_addf(&why[k],
				         "cluster %s is on %s (a new cluster can be on another)",
				         cl->name, cl->infra);
				continue;
			}
		}
		/* One alternative alone: its nodes say whether it fits, at the submit. */
		r = n > 1 ? eng_check_fit(cl, req, res, &why[k]) : 0;
		if (!r) {
			*chosen = k;
			break;
		}
	}
	if (k == n)
		r = eng_none_taken(req, why);
	eng_whys_free(why, n);
	return r;
}

int eng_launch(struct st_db *ldb, const struct eng_launch *req, struct eng_launched *out)
{
	const struct task *t = req->task;
	const char *entry = req->entrypoint ? req->entrypoint : "";
	struct clive cl = {0};
	struct cluster c = {0};
	struct cl_follower *fl = NULL;
	char *name = NULL, *commit = NULL;
	int64_t job = 0;
	int r = -EIO, existed, have_c = 0, upgrade, lock_fd = -1, created = 0, stopped = 0, fast;
	int as_due = 0, remade = 0;
	size_t k, chosen = 0;

	memset(out, 0, sizeof(*out));
	name = req->cluster ? xstrdup(req->cluster) : infra_cluster_name_new(ldb);
	if (infra_validate_cluster_name(name)) {
		r = -EINVAL;
		goto out;
	}
	xsnprintf(out->cluster, sizeof(out->cluster), "%s", name);
	/* From here to the submit, no other command changes this cluster. */
	lock_fd = eng_lock_cluster(name, req->exec ? "skiff exec" : "skiff launch");
	if (lock_fd < 0) {
		r = lock_fd;
		goto out;
	}
	/* Its autostop may have fired: then it is stopped, or gone, before anything else. */
	if (!st_cluster_get(ldb, name, &c)) {
		cluster_free(&c);
		eng_autostop_look_locked(ldb, name);
	}
	existed = !st_cluster_get(ldb, name, &c);
	if (existed)
		cluster_free(&c);
	if (req->exec && !existed) {
		r = error("cluster %s does not exist (launch it first with 'skiff launch -c %s')",
		          name, name);
		r = -ENOENT;
		goto out;
	}
	if (!existed) {
		if (!req->quiet)
			fprintf(stderr, "Launching cluster %s\n", name);
		/* Bootstrapped and UP when it returns: the rest is as for an existing one. */
		r = launch_new(ldb, name, req, entry, &chosen, &cl);
		for (k = 1; r && r != -EEXIST && r != -EINVAL && req->retry_until_up; k++) {
			int wait = eng_retry_wait_s((int)k);

			fprintf(stderr,
			        "Launch attempt %zu failed; trying again in %d s "
			        "(--retry-until-up; Ctrl-C stops)\n",
			        k, wait);
			poll_ms(wait * 1000);
			r = launch_new(ldb, name, req, entry, &chosen, &cl);
		}
		if (r)
			goto out;
		created = 1;
	} else if (!req->quiet) {
		fprintf(stderr, "%s on cluster %s\n", req->exec ? "Submitting job" : "Launching",
		        name);
	}
	r = -EIO;
	if (st_cluster_get(ldb, name, &c)) {
		error("cluster %s is gone from the launcher's database", name);
		goto out;
	}
	have_c = 1;
	if (req->infra && existed && strcmp(req->infra, c.infra))
		warning("cluster %s is on %s; --infra %s is ignored", name, c.infra, req->infra);
	/* A new cluster is open already (launch_new()). */
	if (!created && eng_open_cluster(ldb, &c, &cl))
		goto out;
	/* A launch makes again a node that is gone (infra.h: remake): bootstrapped, set up. */
	if (existed && !req->exec && cl.ops->remake) {
		int made = cl.ops->remake(&cl);

		if (made < 0)
			goto out;
		remade = made > 0;
	}
	stopped = c.status == CLUSTER_STOPPED;
	if (stopped && req->exec) {
		r = error("cluster %s is stopped: 'skiff start %s' starts it again (or 'skiff "
		          "launch -c %s' does, and runs the task)",
		          name, name, name);
		r = -EAGAIN;
		goto out;
	}
	/* A stopped cluster's containers first; the bootstrap below starts its supervisors. */
	if (stopped && eng_start_nodes(ldb, &c, &cl))
		goto out;
	warn_ignored_fields(t, &cl);
	/*
	 * An UP cluster whose nodes run this very binary needs no bootstrap round trip: a
	 * submit starts a supervisor that is down, and a node that lost its binary is
	 * bootstrapped again when the submit finds it missing.
	 */
	upgrade = c.status != CLUSTER_UP || remade || outdated(&cl);
	if (upgrade && c.status == CLUSTER_UP && cl.ops->busy && cl.ops->busy(&cl) > 0) {
		/* A restart of the supervisors would end those jobs (slurm: their steps). */
		info("cluster %s runs another skiff build, with jobs that have not ended: it "
		     "keeps that build until they have (upgrading restarts what holds the "
		     "supervisors on %s, which would end them)",
		     name, c.infra);
		upgrade = 0;
	}
	if (upgrade) {
		if (bootstrap_nodes(ldb, &cl))
			goto out;
		st_cluster_set_status(ldb, name, CLUSTER_MASK_ALL, CLUSTER_UP);
	} else if (existed && cl.ops->nodes_up && cl.ops->nodes_up(&cl)) {
		goto out;
	}
	/* A new cluster was made for its alternative; an existing one takes the first it can. */
	if (existed && (r = pick_existing(&cl, req, &chosen)))
		goto out;
	/* ssh infra: `ssh NAME` (ssh_config.h); without it the cluster works all the same. */
	if (!req->exec)
		eng_ssh_config_write(&cl);
	r = -EIO;
	/* Set once the job is in (idle counts from there), or on the way out if it is not. */
	as_due = !req->exec;
	st_cluster_set_last_task(ldb, name, entry);
	/* exec, and --fast on a cluster that was UP, run no setup and sync only the workdir. */
	fast = req->exec || (req->fast && existed && !stopped && !remade && c.status == CLUSTER_UP);
	if (eng_sync_task(&cl, t, !fast, &commit))
		goto out;
	if (!t->run && !(t->setup && !fast && !req->no_setup) && !req->always_submit) {
		/* As SkyPilot: nothing to run makes no job; the cluster is there to work on. */
		created = 0;
		if (!req->exec)
			record_ports(ldb, &cl, eng_alternative(t, chosen));
		if (!req->quiet)
			fprintf(stderr,
			        "Cluster %s is up; the task has nothing to run, so no job was "
			        "submitted ('skiff ssh %s' logs in, 'skiff exec %s CMD' runs a "
			        "command)\n",
			        name, name, name);
		r = 0;
		goto out;
	}
	fl = xcalloc(cl.n ? cl.n : 1, sizeof(*fl));
	for (k = 0; k < cl.n; k++)
		cl_follower_none(&fl[k]);
	r = submit_job(ldb, &cl, req, eng_alternative(t, chosen), !fast && !req->no_setup, commit,
	               &job, req->detach ? NULL : fl);
	if (r)
		goto out;
	created = 0; /* it has a job now: it stays, whatever comes */
	if (!req->exec)
		record_ports(ldb, &cl, eng_alternative(t, chosen));
	if (as_due) {
		as_due = 0;
		if (launch_autostop(ldb, &cl, req, eng_alternative(t, chosen), &c, stopped)) {
			error("cluster %s: job %lld was submitted, but autostop could not be set "
			      "(above); 'skiff autostop %s' sets it",
			      name, (long long)job, name);
			r = -EIO;
			goto out;
		}
	}
	/* Following the logs changes nothing: another command may have the cluster now. */
	lock_release(lock_fd);
	lock_fd = -1;
	out->job = job;
	if (req->detach) {
		if (!req->quiet)
			fprintf(stderr, "Job %lld submitted; follow it with 'skiff logs %s %lld'\n",
			        (long long)job, name, (long long)job);
		r = 0;
		goto out;
	}
	out->rc = eng_follow(ldb, &cl, job, ENG_LOGS_FOLLOW, -1, req->log_fd,
	                     cl_follower_live(&fl[0]) ? fl : NULL, NULL);
	r = 0;
out:
	for (k = 0; fl && k < cl.n; k++) {
		if (cl_follower_live(&fl[k])) {
			/* Failed between the submit and following it: the job runs on, unwatched.
			 */
			int lost;

			cl_follower_signal(&fl[k], SIGTERM);
			cl_follower_end(&fl[k], &cl.nodes[k], &lost);
		}
		buf_release(&fl[k].rest);
	}
	free(fl);
	/* Failed after its nodes were up: a cluster that stays still stops when idle. */
	if (as_due && !created)
		launch_autostop(ldb, &cl, req, eng_alternative(t, chosen), &c, stopped);
	if (have_c)
		cluster_free(&c);
	cl_close(&cl);
	if (r && created)
		undo_new_cluster(ldb, name, 0);
	lock_release(lock_fd);
	free(name);
	free(commit);
	return r;
}

int eng_launch_plan(struct st_db *ldb, const struct eng_launch *req)
{
	const struct task *t = req->task;
	struct cluster c;
	char text[128];
	int existed, nodes = t->num_nodes > 0 ? (int)t->num_nodes : 1, setup;
	size_t k, n = eng_n_alternatives(t);

	if (req->cluster && infra_validate_cluster_name(req->cluster))
		return -EINVAL;
	existed = req->cluster && !st_cluster_get(ldb, req->cluster, &c);
	if (req->exec && !existed)
		return error("cluster %s does not exist (launch it first with 'skiff launch -c %s')",
		             req->cluster ? req->cluster : "?", req->cluster ? req->cluster : "?"),
		       -ENOENT;
	printf("Dry run: nothing is launched, synced or run.\n");
	if (existed) {
		printf("Cluster:   %s (exists: %s on %s, %s)\n", c.name,
		       cluster_status_name(c.status), c.infra, c.resources);
		if (req->infra && strcmp(req->infra, c.infra))
			printf("           --infra %s is ignored: the cluster stays on %s\n",
			       req->infra, c.infra);
	} else {
		printf("Cluster:   %s (new)\n", req->cluster ? req->cluster : "a new name");
	}
	printf("Task:      %s, %d node(s)\n", t->name ? t->name : "(no name)", nodes);
	printf("Resources: %s%s\n", n > 1 ? (t->res_ordered ? "in order: " : "any of: ") : "",
	       existed ? "the first the cluster can run" : "the first that launches and fits");
	for (k = 0; k < n; k++) {
		eng_resources_text(eng_alternative(t, k), nodes, text, sizeof(text));
		printf("  %zu. %s on %s\n", k + 1, text,
		       existed ? c.infra : eng_alternative_infra(req, eng_alternative(t, k)));
	}
	setup = !req->exec && !req->no_setup && t->setup &&
	        !(req->fast && existed && c.status == CLUSTER_UP);
	printf("Sync:      %s%s\n",
	       t->workdir.kind == TASK_WORKDIR_PATH  ? "the workdir"
	       : t->workdir.kind == TASK_WORKDIR_GIT ? "the workdir (git)"
	                                             : "no workdir",
	       t->nmounts && !(req->exec || (req->fast && existed && c.status == CLUSTER_UP))
	               ? ", the file mounts"
	               : "");
	if (!setup && !t->run && !req->always_submit)
		printf("Runs:      nothing: no job is made (the cluster is brought up and synced)\n");
	else
		printf("Runs:      %s%s\n", setup ? "setup on every node, then " : "",
		       t->run ? "run" : "nothing (no run)");
	if (req->idle_minutes >= 0 || req->down)
		printf("Autostop:  %s after %d idle minute(s)\n", req->down ? "down" : "stop",
		       req->idle_minutes >= 0 ? req->idle_minutes : 1);
	if (existed)
		cluster_free(&c);
	return 0;
}
