/*
 * The launcher's cluster commands: status, queue, logs, cancel, down, stop, start,
 * autostop, ssh; and the hidden gang watcher. Each talks to the nodes through their
 * runners and to the launcher db; a node's own job states stay on the node.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/sync/sync.h"
#include "cmd/cmd.h"
#include "cmd/launcher.h"
#include "cmd/node.h"
#include "lib/json.h"
#include "lib/lock.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/node.h"
#include "lib/banned.h"

/* ---- shared ------------------------------------------------------------------------ */

int lc_open_cluster(struct st_db *ldb, const struct cluster *c, struct clive *cl)
{
	struct cluster_node *nodes = NULL;
	size_t n = 0;
	int r = st_cluster_nodes(ldb, c->name, &nodes, &n);

	if (r)
		return error("cluster %s has no nodes recorded", c->name);
	r = cl_open(cl, c, nodes, n);
	cluster_nodes_free(nodes, n);
	return r;
}

int lc_lock_cluster(const char *name, const char *what)
{
	const char *home = skiff_home();
	char *path, *subject;
	int fd;

	if (!home)
		return -ENOENT;
	if (infra_validate_cluster_name(name))
		return -EINVAL; /* printed; and never a path outside the locks dir */
	path = xasprintf("%s/locks/cluster-%s.lock", home, name);
	subject = xasprintf("cluster %s", name);
	fd = lock_take(path, subject, what, LOCK_TAKE_WAIT);
	free(path);
	free(subject);
	return fd;
}

int lc_load(struct st_db *ldb, const char *name, struct cluster *c, struct clive *cl)
{
	if (st_cluster_get(ldb, name, c))
		return error("cluster %s does not exist (see 'skiff status')", name);
	if (lc_open_cluster(ldb, c, cl)) {
		cluster_free(c);
		return -1;
	}
	return 0;
}

void lc_resources_text(const struct task *t, int nodes, char *out, size_t size)
{
	const struct task_resources *r = t->nres ? &t->res[0] : NULL;
	struct buf b = BUF_INIT(0);

	buf_addf(&b, "%dx[", nodes);
	buf_addf(&b, "cpus=%s", r && r->cpus.text ? r->cpus.text : "0.5");
	if (r && r->memory.text)
		buf_addf(&b, ", mem=%s", r->memory.text);
	if (r && r->accel.name)
		buf_addf(&b, ", %s:%g", r->accel.name, r->accel.count);
	buf_addch(&b, ']');
	xsnprintf(out, size, "%.*s", (int)(size - 1), b.p);
	buf_release(&b);
}

int lc_set_autostop(struct st_db *ldb, struct clive *cl, int minutes, int down)
{
	char args[96];
	size_t i;
	int status, r = 0;

	if (minutes >= 0)
		xsnprintf(args, sizeof(args), "node autostop %d%s >/dev/null", minutes,
		          down ? " --down" : "");
	else
		xsnprintf(args, sizeof(args), "node autostop --cancel >/dev/null");
	for (i = 0; i < cl->n && !r; i++) {
		r = cl_exec_skiff(&cl->nodes[i], args, CL_NODE_CALL_MS, &status);
		if (!r && status)
			r = error("node %s: cannot set autostop", cl->nodes[i].name);
	}
	if (!r)
		r = st_cluster_set_autostop(ldb, cl->name, minutes, minutes >= 0 && down);
	return r;
}

/* ---- a submit cut short ---------------------------------------------------------------- */

int lc_ranks_known(const char *ids)
{
	int n = *ids ? 1 : 0;

	for (; *ids; ids++)
		n += *ids == ',';
	return n;
}

int lc_settle_submit(struct st_db *ldb, struct clive *cl, struct cluster_job *cj)
{
	struct buf ids = BUF_INIT(0);
	int64_t *found;
	int i, n = cj->num_nodes, nfound = 0, unknown = 0, r;
	const char *why;

	if (cj->final_status >= 0 || lc_ranks_known(cj->node_job_ids) >= n)
		return LC_SUBMIT_DONE;
	if (proc_alive(cj->owner_pid, cj->owner_start) != 0)
		return LC_SUBMITTING;
	if (n > (int)cl->n)
		n = (int)cl->n;
	found = xcalloc((size_t)(n ? n : 1), sizeof(*found));
	for (i = 0; i < n && *cj->submit_key; i++) {
		r = cl_find_key(&cl->nodes[i], cj->submit_key, i, &found[i]);
		if (!r)
			nfound++;
		else if (r != -ENOENT)
			unknown++;
	}
	if (unknown) {
		free(found);
		return LC_SUBMIT_UNKNOWN; /* named by the runner; asked again next time */
	}
	for (i = 0; i < n; i++) {
		if (found[i])
			buf_addf(&ids, "%s%lld", i ? "," : "", (long long)found[i]);
		else
			buf_adds(&ids, i ? "," : "");
	}
	if (nfound == cj->num_nodes) {
		/* Every rank arrived: the job is as if its launcher had recorded them. */
		r = st_cluster_job_set_node_ids(ldb, cl->name, cj->id, ids.p);
		free(cj->node_job_ids);
		cj->node_job_ids = buf_detach(&ids, NULL);
		free(found);
		return r ? LC_SUBMIT_UNKNOWN : LC_SUBMIT_DONE;
	}
	/*
	 * A rank never arrived: the gang can never run whole. Every rank is cancelled by its
	 * key, which also keeps one still on its way from starting.
	 */
	for (i = 0; i < n && *cj->submit_key; i++)
		if (cl_cancel_key(&cl->nodes[i], cj->submit_key, i))
			unknown++;
	free(found);
	if (unknown) {
		buf_release(&ids);
		return LC_SUBMIT_UNKNOWN;
	}
	why = nfound ? "the launch that submitted it ended before every rank was submitted; "
	               "the ranks that were are cancelled"
	             : "never submitted: the launch that was submitting it ended first";
	r = st_cluster_job_settle(ldb, cl->name, cj->id, JOB_FAILED_DRIVER, ids.p, why);
	if (!r) {
		cj->final_status = JOB_FAILED_DRIVER;
		free(cj->node_job_ids);
		cj->node_job_ids = buf_detach(&ids, NULL);
		free(cj->reason);
		cj->reason = xstrdup(why);
	}
	buf_release(&ids);
	return r ? LC_SUBMIT_UNKNOWN : LC_SUBMIT_DONE;
}

/* ---- job states across ranks --------------------------------------------------------- */

struct rank_job {
	int status; /* enum job_status, -1 unknown */
	double submitted_at, started_at, ended_at;
	int exit_code; /* -1 none */
	double cpus, memory;
	int gpus;
	char log_dir[512];
};

/* Finds job `id` in a node's `queue --porcelain` text. */
static int porcelain_find(const char *text, int64_t id, struct rank_job *out)
{
	const char *line = text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		char status[32], codes[256], logdir[512];
		long long jid;
		double sub, st, en, cpus, mem;
		int gpus;

		if (sscanf(line,
		           "%lld\t%31[^\t]\t%lf\t%lf\t%lf\t%255[^\t]\t%lf\t%lf\t%d\t%511[^\t]",
		           &jid, status, &sub, &st, &en, codes, &cpus, &mem, &gpus, logdir) >= 9 &&
		    jid == id) {
			out->status = job_status_parse(status);
			out->submitted_at = sub;
			out->started_at = st;
			out->ended_at = en;
			out->exit_code = strcmp(codes, "-") ? (int)strtol(codes, NULL, 10) : -1;
			out->cpus = cpus;
			out->memory = mem;
			out->gpus = gpus;
			xsnprintf(out->log_dir, sizeof(out->log_dir), "%s", logdir);
			return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

/*
 * One status for a gang: the first failure wins, then cancel, then the least advanced.
 * A rank whose node cannot be reached (status -1) is unknown. While a reachable rank
 * still runs, the gang runs. Once every reachable rank has ended and one of them did not
 * succeed, the gang is FAILED_DRIVER: it cannot finish without the lost rank (the gang
 * watcher stops the others when a node is lost, as when a rank fails). Otherwise, with a
 * rank unknown, so is the gang's status (-1); and so it is for a job with no known rank.
 */
static int aggregate(const struct rank_job *r, int n)
{
	static const int order[] = {JOB_FAILED_SETUP, JOB_FAILED, JOB_FAILED_DRIVER, JOB_CANCELLED};
	int i, k, lowest = -1, unknown = 0;

	if (n <= 0)
		return -1; /* no rank is known: nothing to judge */
	for (i = 0; i < n; i++) {
		if (r[i].status < 0)
			unknown++;
		else if (!job_status_terminal(r[i].status) && (lowest < 0 || r[i].status < lowest))
			lowest = r[i].status;
	}
	for (k = 0; k < (int)ARRAY_SIZE(order); k++)
		for (i = 0; i < n; i++)
			if (r[i].status == order[k]) {
				if (order[k] != JOB_CANCELLED)
					return order[k];
				return lowest >= 0 ? lowest
				       : unknown   ? JOB_FAILED_DRIVER
				                   : order[k];
			}
	if (lowest >= 0)
		return lowest;
	return unknown ? -1 : JOB_SUCCEEDED;
}

struct node_queues {
	struct buf *text; /* per node: `node queue --porcelain` */
	int *ok;
};

/*
 * Every node's queue, one node after the other; a node that cannot be reached is named
 * on stderr (by the runner) and its ranks are unknown. Nodes marked in skip (may be NULL)
 * are not asked: they are known to be unreachable. Returns the number of nodes that did
 * not answer.
 */
static int fetch_queues(struct clive *cl, struct node_queues *q, const int *skip)
{
	size_t i;
	int missing = 0;

	q->text = xcalloc(cl->n, sizeof(*q->text));
	q->ok = xcalloc(cl->n, sizeof(*q->ok));
	for (i = 0; i < cl->n; i++) {
		int status = 0;

		buf_init(&q->text[i], (size_t)64 << 20);
		q->ok[i] = (!skip || !skip[i]) &&
		           !cl_capture_skiff(&cl->nodes[i], "node queue --porcelain", &q->text[i],
		                             CL_NODE_CALL_MS, &status) &&
		           !status;
		missing += !q->ok[i];
	}
	return missing;
}

static void free_queues(struct clive *cl, struct node_queues *q)
{
	size_t i;

	for (i = 0; i < cl->n; i++)
		buf_release(&q->text[i]);
	free(q->text);
	free(q->ok);
}

/* The rank jobs of cluster job cj; returns the number of ranks. */
static int rank_jobs(const struct cluster_job *cj, struct clive *cl, struct node_queues *q,
                     struct rank_job *out, int max)
{
	const char *p = cj->node_job_ids;
	int n = 0;

	while (*p && n < max && n < (int)cl->n) {
		char *end;
		long long id = strtoll(p, &end, 10);

		memset(&out[n], 0, sizeof(out[n]));
		out[n].status = -1;
		out[n].exit_code = -1;
		if (!q->ok[n] || porcelain_find(q->text[n].p, id, &out[n]))
			out[n].status = q->ok[n] ? JOB_FAILED_DRIVER : -1;
		n++;
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

/* ---- queue --------------------------------------------------------------------------- */

/* A job whose outcome a `queue` decided, to be recorded after it. */
struct decided {
	int64_t id;
	int status;
};

int lc_queue(struct st_db *ldb, struct clive *cl, int as_json, int skip, struct buf *out)
{
	struct decided *decided;
	struct cluster_job *v = NULL;
	struct node_queues q;
	struct json j;
	size_t n = 0, i, ndecided = 0;
	int *submitting;
	double now = now_wall();
	int missing;

	if (st_cluster_job_list(ldb, cl->name, &v, &n))
		return -1;
	/* Before the queues are read: a job cut short mid-submit is settled first. */
	submitting = xcalloc(n ? n : 1, sizeof(*submitting));
	for (i = 0; i < n; i++)
		submitting[i] = lc_settle_submit(ldb, cl, &v[i]);
	missing = fetch_queues(cl, &q, NULL);
	decided = xcalloc(n ? n : 1, sizeof(*decided));
	if (as_json) {
		json_init(&j, out, 1);
		json_arr_begin(&j);
	} else {
		buf_addf(out, "%-5s %-20s %-11s %-13s %-12s %s\n", "ID", "NAME", "SUBMITTED",
		         "STATUS", "EXIT CODES", "LOG");
	}
	for (i = 0; i < n; i++) {
		struct rank_job rj[64];
		int nr = rank_jobs(&v[i], cl, &q, rj, 64), k, status = aggregate(rj, nr), failed;
		double started = 0, ended = 0;

		/* A gang's outcome, once decided, stands (its lost rank may be stopped later). */
		if (v[i].final_status >= 0)
			status = v[i].final_status;
		else if (submitting[i] == LC_SUBMITTING)
			status = JOB_INIT; /* its launcher is submitting it */
		else if (submitting[i] == LC_SUBMIT_UNKNOWN)
			status = -1;
		else if (job_status_terminal(status))
			decided[ndecided++] = (struct decided){v[i].id, status};

		if (skip && job_status_terminal(status))
			continue;
		failed = status == JOB_FAILED || status == JOB_FAILED_SETUP ||
		         status == JOB_FAILED_DRIVER;
		for (k = 0; k < nr; k++) {
			if (rj[k].started_at > 0 && (!started || rj[k].started_at < started))
				started = rj[k].started_at;
			if (rj[k].ended_at > ended)
				ended = rj[k].ended_at;
		}
		if (as_json) {
			json_obj_begin(&j);
			json_key(&j, "id");
			json_int(&j, v[i].id);
			json_key(&j, "name");
			json_str(&j, v[i].name);
			json_key(&j, "status");
			json_str(&j, job_status_name(status));
			json_key(&j, "submitted_at");
			json_double(&j, v[i].submitted_at);
			json_key(&j, "started_at");
			if (started > 0)
				json_double(&j, started);
			else
				json_null(&j);
			json_key(&j, "ended_at");
			if (job_status_terminal(status) && ended > 0)
				json_double(&j, ended);
			else
				json_null(&j);
			json_key(&j, "exit_codes");
			json_arr_begin(&j);
			for (k = 0; k < nr; k++) {
				if (rj[k].exit_code >= 0 &&
				    !(failed && rj[k].status == JOB_CANCELLED))
					json_int(&j, rj[k].exit_code);
				else if (failed && rj[k].status == JOB_CANCELLED)
					json_int(&j, 137); /* stopped because another rank failed */
				else
					json_null(&j);
			}
			json_arr_end(&j);
			json_key(&j, "resources");
			json_obj_begin(&j);
			json_key(&j, "cpus");
			json_double(&j, nr ? rj[0].cpus : 0);
			json_key(&j, "memory");
			json_double(&j, nr ? rj[0].memory : 0);
			json_key(&j, "gpus");
			json_int(&j, nr ? rj[0].gpus : 0);
			json_key(&j, "num_nodes");
			json_int(&j, v[i].num_nodes);
			json_obj_end(&j);
			json_key(&j, "log_dir");
			json_str(&j, nr ? rj[0].log_dir : "");
			json_key(&j, "node_job_ids");
			json_str(&j, v[i].node_job_ids);
			json_key(&j, "reason");
			json_str(&j, v[i].reason);
			json_obj_end(&j);
		} else {
			struct buf codes = BUF_INIT(0);
			char sub[32];
			long ago = (long)(now - v[i].submitted_at);

			for (k = 0; k < nr; k++) {
				int code = failed && rj[k].status == JOB_CANCELLED
				                   ? 137
				                   : rj[k].exit_code;

				if (code >= 0)
					buf_addf(&codes, "%s%d", codes.len ? "," : "", code);
				else if (rj[k].status < 0) /* its node could not be reached */
					buf_addf(&codes, "%s?", codes.len ? "," : "");
			}
			if (ago < 60)
				xsnprintf(sub, sizeof(sub), "%lds ago", ago);
			else if (ago < 3600)
				xsnprintf(sub, sizeof(sub), "%ldm ago", ago / 60);
			else
				xsnprintf(sub, sizeof(sub), "%ldh ago", ago / 3600);
			buf_addf(out, "%-5lld %-20.20s %-11s %-13s %-12s %s\n", (long long)v[i].id,
			         *v[i].name ? v[i].name : "-", sub, job_status_name(status),
			         codes.len ? codes.p : "-", nr ? rj[0].log_dir : "");
			buf_release(&codes);
		}
	}
	if (as_json) {
		json_arr_end(&j);
		json_finish(&j);
	}
	/* Outcomes decided now: one transaction; a queue that decided none writes nothing. */
	if (ndecided && !st_begin(ldb)) {
		for (i = 0; i < ndecided; i++)
			st_cluster_job_set_final(ldb, cl->name, decided[i].id, decided[i].status);
		st_commit(ldb);
	}
	free(decided);
	free(submitting);
	free_queues(cl, &q);
	cluster_jobs_free(v, n);
	return missing ? 1 : 0; /* 1: printed, but some node could not be reached */
}

/* ---- logs ---------------------------------------------------------------------------- */

struct stream {
	pid_t pid;
	int fd;
	int code; /* exit status of the remote `node logs`, -1 unknown */
	struct buf line;
	char prefix[96];
};

static void flush_line(struct stream *s, int final)
{
	char *nl;

	while ((nl = memchr(s->line.p, '\n', s->line.len)) || (final && s->line.len)) {
		size_t n = nl ? (size_t)(nl - s->line.p) + 1 : s->line.len;

		write_all(1, s->prefix, strlen(s->prefix));
		write_all(1, s->line.p, n);
		if (!nl)
			write_all(1, "\n", 1);
		memmove(s->line.p, s->line.p + n, s->line.len - n);
		buf_setlen(&s->line, s->line.len - n);
	}
}

/* How often `logs` of a job that another launcher is still submitting looks again. */
#define SUBMIT_WAIT_MS 200

/*
 * The streams run in process groups of their own (runner_spawn), so Ctrl-C on `logs`
 * does not reach them: the handler stops them, then the signal kills us as before.
 */
static pid_t follow_pids[64];
static volatile sig_atomic_t follow_npids;

static void follow_stop(int sig)
{
	int i;

	for (i = 0; i < follow_npids; i++)
		if (follow_pids[i] > 0)
			kill(-follow_pids[i], SIGTERM);
	raise(sig); /* SA_RESETHAND: the default action, once this handler returns */
}

/*
 * follow: 1 streams until the job ends, 0 prints what there is, -1 prints only the
 * gang's status (`logs --status`). Every rank's stream is `node logs -q` on its node,
 * prefixed with the rank when there are several; the status at the end is the
 * aggregate of the ranks' (so a one-rank job reports the cluster's job id, not the
 * node's). A stream that ends with ssh's 255 lost its node (`node logs` never exits
 * 255): that node is not asked again, and its rank is unknown.
 */
static int follow_logs(struct st_db *ldb, struct clive *cl, int64_t job, int follow, long tail,
                       struct cl_follower *pre)
{
	struct cluster_job cj;
	struct node_queues q;
	struct rank_job rj[64];
	struct stream *ss;
	static const int stop_sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa, old_sa[3];
	char tailarg[32] = "";
	int *lost;
	int n, i, live = 0, rc, status;

	if (st_cluster_job_get(ldb, cl->name, job, &cj)) {
		error("cluster %s has no job %lld", cl->name, (long long)job);
		return EXIT_JOB_NOT_FOUND;
	}
	/* Being submitted by another launcher: its ranks are known once it is done. */
	while ((rc = lc_settle_submit(ldb, cl, &cj)) == LC_SUBMITTING && follow > 0) {
		poll_ms(SUBMIT_WAIT_MS);
		cluster_job_free(&cj);
		if (st_cluster_job_get(ldb, cl->name, job, &cj)) {
			error("cluster %s has no job %lld any more", cl->name, (long long)job);
			return EXIT_JOB_NOT_FOUND;
		}
	}
	if (rc == LC_SUBMITTING) {
		if (follow < 0)
			printf("%s\n", job_status_name(JOB_INIT));
		cluster_job_free(&cj);
		return follow ? EXIT_JOB_NOT_FINISHED : EXIT_OK;
	}
	if (rc == LC_SUBMIT_UNKNOWN) {
		cluster_job_free(&cj);
		return EXIT_UNAVAILABLE;
	}
	if (*cj.reason)
		warning("job %lld: %s", (long long)job, cj.reason);
	if (tail >= 0)
		xsnprintf(tailarg, sizeof(tailarg), " --tail %ld", tail);
	n = 0;
	for (const char *p = cj.node_job_ids; *p; p++)
		n += *p == ',';
	n = *cj.node_job_ids ? n + 1 : 0;
	if (n > (int)cl->n)
		n = (int)cl->n;
	if (n > 64)
		n = 64;
	ss = xcalloc((size_t)(n ? n : 1), sizeof(*ss));
	lost = xcalloc(cl->n ? cl->n : 1, sizeof(*lost));
	follow_npids = 0;
	sa.sa_handler = follow_stop;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 3; i++)
		if (!sigaction(stop_sigs[i], NULL, &old_sa[i]) && old_sa[i].sa_handler != SIG_IGN)
			sigaction(stop_sigs[i], &sa, NULL); /* an ignored signal stays ignored */
	{
		const char *p = cj.node_job_ids;

		for (i = 0; i < n; i++) {
			struct runner_io io = {RUNNER_NULL, -1, RUNNER_INHERIT};
			int pfd[2];
			char *script, *end;
			long long id = strtoll(p, &end, 10);

			p = *end == ',' ? end + 1 : end;
			ss[i].fd = -1;
			ss[i].pid = -1;
			ss[i].code = -1;
			buf_init(&ss[i].line, 1 << 20);
			if (n > 1)
				xsnprintf(ss[i].prefix, sizeof(ss[i].prefix), "(rank %d, %s) ", i,
				          cl->nodes[i].ip);
			if (pre && pre[i].pid > 0) {
				/* The rank's follower is its submit itself (cl_submit_follow()). */
				ss[i].fd = pre[i].fd;
				ss[i].pid = pre[i].pid;
				buf_add(&ss[i].line, pre[i].rest.p, pre[i].rest.len);
				buf_release(&pre[i].rest);
				pre[i].fd = -1;
				pre[i].pid = -1;
				follow_pids[follow_npids++] = ss[i].pid;
				live++;
				flush_line(&ss[i], 0);
				continue;
			}
			if (follow < 0 || !cl->nodes[i].exe || pipe2(pfd, O_CLOEXEC) < 0)
				continue;
			io.out_fd = pfd[1];
			/* -q: one "finished" line for the gang, printed below, not one per rank. */
			script = xasprintf("exec %s -q node logs %s%s %lld", cl->nodes[i].exe,
			                   follow ? "--follow" : "--no-follow", tailarg, id);
			if (!runner_spawn(cl->nodes[i].r, script, 0, &io, &ss[i].pid)) {
				ss[i].fd = pfd[0];
				follow_pids[follow_npids++] = ss[i].pid;
				live++;
			} else {
				close(pfd[0]);
			}
			close(pfd[1]);
			free(script);
		}
	}
	while (live) {
		struct pollfd pf[64];
		int np = 0, map[64];

		for (i = 0; i < n && np < 64; i++)
			if (ss[i].fd >= 0) {
				pf[np].fd = ss[i].fd;
				pf[np].events = POLLIN;
				map[np++] = i;
			}
		if (poll(pf, (nfds_t)np, -1) < 0)
			continue;
		for (i = 0; i < np; i++) {
			struct stream *s = &ss[map[i]];
			char blk[8192];
			ssize_t got;
			int wst = 0;

			if (!pf[i].revents)
				continue;
			got = read(s->fd, blk, sizeof(blk));
			if (got > 0) {
				/* A line past the buffer's bound goes out in pieces, never lost. */
				if (buf_add(&s->line, blk, (size_t)got)) {
					flush_line(s, 1);
					buf_add(&s->line, blk, (size_t)got);
				}
				flush_line(s, 0);
				continue;
			}
			if (got < 0 && errno == EINTR)
				continue;
			flush_line(s, 1);
			close(s->fd);
			s->fd = -1;
			while (waitpid(s->pid, &wst, 0) < 0 && errno == EINTR)
				;
			for (int k = 0; k < follow_npids; k++)
				if (follow_pids[k] == s->pid)
					follow_pids[k] = 0; /* reaped: its pid may be reused */
			s->code = WIFEXITED(wst) ? WEXITSTATUS(wst) : -1;
			/* ssh's 255, or that of the exec runners' wrapper: the node is gone. */
			if (WIFEXITED(wst) && WEXITSTATUS(wst) == 255 &&
			    cl->nodes[map[i]].r->ops->transport_status == 255) {
				lost[map[i]] = 1;
				error("node %s (rank %d): lost the connection while following the job's "
				      "logs",
				      cl->nodes[map[i]].name, map[i]);
			}
			live--;
		}
	}
	for (i = 0; i < 3; i++)
		sigaction(stop_sigs[i], &old_sa[i], NULL);
	follow_npids = 0;
	/*
	 * Ranks that followed to the end told their results by their exit statuses: when
	 * each is SUCCEEDED or CANCELLED (unambiguous) the gang's is known without a round
	 * trip (aggregate(): CANCELLED if any was). Otherwise the gang's status is the
	 * aggregate of its ranks', read from the nodes.
	 */
	for (i = 0, status = n > 0 && follow > 0 ? JOB_SUCCEEDED : -1; i < n && status >= 0; i++)
		if (lost[i] || (ss[i].code != 0 && ss[i].code != 103))
			status = -1;
		else if (ss[i].code == 103)
			status = JOB_CANCELLED;
	if (status < 0 && cj.final_status >= 0) {
		status = cj.final_status;
	} else if (status < 0) {
		fetch_queues(cl, &q, lost);
		n = rank_jobs(&cj, cl, &q, rj, n);
		status = aggregate(rj, n);
		free_queues(cl, &q);
	}
	if (cj.final_status < 0 && job_status_terminal(status))
		st_cluster_job_set_final(ldb, cl->name, job, status);
	for (i = 0; i < n; i++)
		buf_release(&ss[i].line);
	free(ss);
	free(lost);
	cluster_job_free(&cj);
	if (follow < 0)
		printf("%s\n", job_status_name(status));
	else if (follow && log_get_level() >= LOG_INFO)
		fprintf(stderr, "skiff: job %lld %s (status: %s)\n", (long long)job,
		        job_status_terminal(status) ? "finished"
		        : status < 0                ? "is in an unknown state"
		                                    : "is still running",
		        job_status_name(status));
	if (status < 0)
		return EXIT_UNAVAILABLE;
	rc = job_exit_code(status);
	return !follow && rc == EXIT_JOB_NOT_FINISHED ? EXIT_OK : rc;
}

int lc_follow_logs(struct st_db *ldb, struct clive *cl, int64_t job, int follow, long tail)
{
	return follow_logs(ldb, cl, job, follow, tail, NULL);
}

int lc_follow_submitted(struct st_db *ldb, struct clive *cl, int64_t job, struct cl_follower *f)
{
	return follow_logs(ldb, cl, job, 1, -1, f);
}

/* ---- sync-down ---------------------------------------------------------------------- */

int lc_sync_down(struct st_db *ldb, struct clive *cl, int64_t job, struct buf *where)
{
	struct cluster_job cj;
	struct node_queues q;
	struct rank_job rj[64];
	const char *home = user_home();
	int n, i, r = 0;

	if (!home)
		return error("no home directory to put ~/sky_logs in");
	if (st_cluster_job_get(ldb, cl->name, job, &cj)) {
		error("cluster %s has no job %lld", cl->name, (long long)job);
		return -ENOENT;
	}
	fetch_queues(cl, &q, NULL);
	n = rank_jobs(&cj, cl, &q, rj, 64);
	buf_addf(where, "%s/sky_logs/%s/%lld", home, cl->name, (long long)job);
	for (i = 0; i < n && !r; i++) {
		struct runner_io io = {RUNNER_NULL, -1, RUNNER_INHERIT};
		struct buf q1 = BUF_INIT(0);
		struct sync_stats st = {0};
		char *dst = xasprintf("%s/rank-%d", where->p, i);
		char *script;
		int pfd[2], status = 0;
		pid_t pid;

		if (!*rj[i].log_dir) {
			r = error("node %s: job %lld has no log directory", cl->nodes[i].name,
			          (long long)job);
			free(dst);
			break;
		}
		sh_quote(&q1, rj[i].log_dir);
		/* The node packs its log dir; we unpack it with the same safe extractor. */
		script = xasprintf("exec %s __sync-send --no-ignore %s", cl->nodes[i].exe, q1.p);
		if (mkdir_p(dst, 0700) || pipe2(pfd, O_CLOEXEC)) {
			r = error_errno("cannot create '%s'", dst);
		} else {
			io.out_fd = pfd[1];
			r = runner_spawn(cl->nodes[i].r, script, 0, &io, &pid);
			close(pfd[1]);
			if (!r) {
				r = sync_unpack(pfd[0], dst, 0, 0, &st);
				close(pfd[0]);
				waitpid(pid, &status, 0);
				if (!r && (!WIFEXITED(status) || WEXITSTATUS(status)))
					r = error("node %s: could not send the logs of job %lld",
					          cl->nodes[i].name, (long long)job);
			} else {
				close(pfd[0]);
			}
		}
		free(script);
		free(dst);
		buf_release(&q1);
	}
	free_queues(cl, &q);
	cluster_job_free(&cj);
	return r;
}

/* ---- the gang watcher ------------------------------------------------------------------ */

void lc_start_gang_watch(const char *cluster, int64_t job)
{
	char idbuf[32];
	char *argv[] = {(char *)self_path(NULL), "__gang", (char *)cluster, idbuf, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	char *logp = xasprintf("%s/gang.log", skiff_home());
	int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	pid_t pid;

	xsnprintf(idbuf, sizeof(idbuf), "%lld", (long long)job);
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
	free(logp);
	/* Not reaped: it outlives us by design (re-parented to init). */
}

const char cmd___gang_usage[] =
        "usage: skiff __gang CLUSTER JOB\n"
        "\n"
        "Internal: watches a multi-node job; when one rank fails (or its node becomes\n"
        "unreachable), cancels the others, as SkyPilot's gang semantics require.\n";

/* Cancels node job `id` on nd; 0 when the node answered (whatever it said). */
static int gang_cancel(struct cnode *nd, long long id)
{
	char args[64];
	int st = 0;

	xsnprintf(args, sizeof(args), "node cancel %lld >/dev/null 2>&1", id);
	return cl_exec_skiff(nd, args, CL_NODE_CALL_MS, &st) ? -1 : 0;
}

/* How long the gang watcher lets the job start before it looks. */
#define GANG_START_DELAY_MS 100
/* The gang watcher gives up on a lost node after this long (the cluster's down ends it). */
#define GANG_RETRY_MAX_MS ((int64_t)24 * 3600 * 1000)

int cmd___gang(int argc, char **argv)
{
	struct st_db *ldb = NULL;
	struct cluster c;
	struct clive cl = {0};
	struct cluster_job cj;
	pid_t pids[64];
	int fds[64], pending[64] = {0}, failed = -1, n = 0, i, live = 0, npending = 0, moved;
	int64_t start, delay;
	long long ids[64];
	long job;

	log_set_prog("skiff-gang");
	if (argc != 3 || parse_long(argv[2], 1, INT64_MAX, &job))
		return usage_error("__gang", "expected CLUSTER JOB");
	/*
	 * Not at once: the job's ranks are starting, and the launcher that started us is
	 * following them. Our start (a launcher db, a session per rank) would compete with
	 * both on a small machine; a rank that fails meanwhile is stopped a moment later.
	 */
	poll_ms(GANG_START_DELAY_MS);
	if (st_launcher_open(0, &ldb) || lc_load(ldb, argv[1], &c, &cl))
		return EXIT_FAIL;
	if (st_cluster_job_get(ldb, argv[1], job, &cj))
		return error("no job %ld on %s", job, argv[1]), EXIT_FAIL;
	for (const char *p = cj.node_job_ids; *p && n < 64 && n < (int)cl.n; n++) {
		char *end;

		ids[n] = strtoll(p, &end, 10);
		p = *end == ',' ? end + 1 : end;
	}
	for (i = 0; i < n; i++) {
		struct runner_io io = {RUNNER_NULL, -1, RUNNER_NULL};
		int pfd[2];
		char *script = xasprintf("exec %s node logs --status --wait %lld", cl.nodes[i].exe,
		                         ids[i]);

		fds[i] = -1;
		if (!pipe2(pfd, O_CLOEXEC)) {
			io.out_fd = pfd[1];
			if (!runner_spawn(cl.nodes[i].r, script, 0, &io, &pids[i])) {
				fds[i] = pfd[0];
				live++;
			} else {
				close(pfd[0]);
			}
			close(pfd[1]);
		}
		free(script);
	}
	while (live) {
		struct pollfd pf[64];
		int np = 0, map[64];

		for (i = 0; i < n; i++)
			if (fds[i] >= 0) {
				pf[np].fd = fds[i];
				pf[np].events = POLLIN;
				map[np++] = i;
			}
		if (poll(pf, (nfds_t)np, -1) < 0)
			continue;
		for (i = 0; i < np; i++) {
			int k = map[i], st = 0, bad;
			struct buf b = BUF_INIT(4096);

			if (!pf[i].revents)
				continue;
			buf_read_fd(&b, fds[k]);
			close(fds[k]);
			fds[k] = -1;
			live--;
			waitpid(pids[k], &st, 0);
			buf_rtrim(&b);
			bad = strcmp(b.p, "SUCCEEDED") && strcmp(b.p, "CANCELLED");
			/* No status: the node was lost, and its rank may still run there. */
			if (!b.len)
				pending[k] = 1;
			if (bad && failed < 0) {
				failed = k;
				info("job %ld: rank %d ended %s; stopping the other ranks", job, k,
				     b.len ? b.p : "(node unreachable)");
				/* Once that rank is stopped (its node back), it would read
				 * CANCELLED. */
				if (!b.len)
					st_cluster_job_set_final(ldb, argv[1], job,
					                         JOB_FAILED_DRIVER);
				for (int o = 0; o < n; o++) {
					if (o == k || fds[o] < 0)
						continue;
					if (gang_cancel(&cl.nodes[o], ids[o]))
						pending[o] = 1;
				}
			}
			buf_release(&b);
		}
	}
	/*
	 * Ranks on nodes that could not be reached may run on there: stop them when their
	 * node is back: until the cluster is taken down, trying after 5 s, then every 10,
	 * 20 and at most 30 s (a try on a node that is still away fails within ssh's 10 s
	 * ConnectTimeout).
	 */
	for (i = 0; i < n; i++)
		npending += pending[i];
	if (npending)
		info("job %ld: %d rank(s) on unreachable nodes; stopping them when they are back",
		     job, npending);
	start = now_ms();
	for (delay = 5000; npending && now_ms() - start < GANG_RETRY_MAX_MS;
	     delay = delay < 15000 ? delay * 2 : 30000) {
		struct cluster_job again;

		poll_ms((int)delay);
		if (st_cluster_job_get(ldb, argv[1], job, &again))
			break; /* the cluster was taken down */
		moved = strcmp(again.node_job_ids, cj.node_job_ids);
		cluster_job_free(&again);
		if (moved)
			break; /* ... and launched again: that job is another one */
		for (i = 0; i < n; i++) {
			if (!pending[i] || gang_cancel(&cl.nodes[i], ids[i]))
				continue;
			pending[i] = 0;
			npending--;
			info("job %ld: rank %d stopped on %s, which is back", job, i,
			     cl.nodes[i].name);
		}
	}
	cluster_job_free(&cj);
	cluster_free(&c);
	cl_close(&cl);
	st_close(ldb);
	return EXIT_OK;
}
