/*
 * A cluster's jobs: what the nodes say of their ranks (queue), their logs (followed or
 * printed), cancel, and the logs brought back to this machine. A job's state is on its
 * nodes; the launcher's row maps the id users see to each rank's node job, and keeps an
 * outcome once it is decided (a gang's lost rank may be stopped later).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/launch/engine_internal.h"
#include "bootstrap/launch/gang.h"
#include "bootstrap/sync/sync.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/proc.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "state/node.h"
#include "lib/banned.h"

/* How often `logs` of a job that another launcher is still submitting looks again. */
#define SUBMIT_WAIT_MS 200
/* A line longer than this goes out in pieces (never dropped). */
#define LOG_LINE_MAX ((size_t)1 << 20)

static void rank_release(struct eng_rank *r)
{
	free(r->log_dir);
	r->log_dir = NULL;
}

static void job_release(struct eng_job *j)
{
	int k;

	for (k = 0; k < j->nranks; k++)
		rank_release(&j->ranks[k]);
	free(j->ranks);
	free(j->name);
	free(j->entrypoint);
	free(j->reason);
	free(j->node_job_ids);
	free(j->git_commit);
	memset(j, 0, sizeof(*j));
}

void eng_jobs_free(struct eng_job *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		job_release(&v[i]);
	free(v);
}

/* ---- a submit cut short ---------------------------------------------------------------- */

int eng_ranks_known(const char *ids)
{
	int n = *ids ? 1 : 0;

	for (; *ids; ids++)
		n += *ids == ',';
	return n;
}

int eng_settle_submit(struct st_db *ldb, struct clive *cl, struct cluster_job *cj)
{
	struct buf ids = BUF_INIT(0);
	int64_t *found;
	int i, n = cj->num_nodes, nfound = 0, unknown = 0, r;
	const char *why;

	if (cj->final_status >= 0 || eng_ranks_known(cj->node_job_ids) >= n)
		return ENG_SUBMIT_DONE;
	if (proc_alive(cj->owner_pid, cj->owner_start) != 0)
		return ENG_SUBMITTING;
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
		return ENG_SUBMIT_UNKNOWN; /* named by the runner; asked again next time */
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
		return r ? ENG_SUBMIT_UNKNOWN : ENG_SUBMIT_DONE;
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
		return ENG_SUBMIT_UNKNOWN;
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
	return r ? ENG_SUBMIT_UNKNOWN : ENG_SUBMIT_DONE;
}

/* ---- what the nodes say of the ranks ------------------------------------------------------ */

/* One node's answer: its jobs by id. */
struct node_answer {
	int ok;
	int gone; /* not ok: the node is gone (runner_node_gone()) */
	struct eng_rank *v;
	size_t n, alloc;
};

static double field_double(const struct msg *m, const char *key)
{
	double d;

	return msg_get_double(m, key, &d) ? 0 : d;
}

static int take_record(const struct msg *job, void *arg)
{
	struct node_answer *a = arg;
	struct eng_rank *r;
	const char *codes = msg_get(job, "exit_codes"), *log_dir = msg_get(job, "log_dir");
	int64_t id, gpus = 0;

	if (msg_get_int(job, "job", &id))
		return 0;
	a->v = xgrow(a->v, a->n, &a->alloc, sizeof(*a->v));
	r = &a->v[a->n++];
	memset(r, 0, sizeof(*r));
	r->node_job = id;
	r->status = job_status_parse(msg_get(job, "status") ? msg_get(job, "status") : "");
	r->exit_code = codes && *codes ? (int)strtol(codes, NULL, 10) : -1;
	r->submitted_at = field_double(job, "submitted_at");
	r->started_at = field_double(job, "started_at");
	r->ended_at = field_double(job, "ended_at");
	r->cpus = field_double(job, "cpus");
	r->memory = field_double(job, "memory");
	msg_get_int(job, "gpus", &gpus);
	r->gpus = (int)gpus;
	r->log_dir = xstrdup(log_dir ? log_dir : "");
	return 0;
}

static void answers_free(struct node_answer *a, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < a[i].n; k++)
			rank_release(&a[i].v[k]);
		free(a[i].v);
	}
	free(a);
}

/*
 * Asks every node for the node jobs the given cluster jobs have on it (one request per
 * node, naming them all); nodes marked in skip are not asked (known unreachable). Returns
 * the answers (one per node) and, in *missing, how many nodes did not answer.
 */
static struct node_answer *ask_nodes(struct clive *cl, int64_t **ids, const int *nids, size_t njobs,
                                     const int *skip, int *missing)
{
	struct node_answer *a = xcalloc(cl->n ? cl->n : 1, sizeof(*a));
	size_t node, j;

	*missing = 0;
	for (node = 0; node < cl->n; node++) {
		int64_t *want = NULL;
		size_t nwant = 0, alloc = 0;

		for (j = 0; j < njobs; j++)
			if ((int)node < nids[j] && ids[j][node] > 0) {
				want = xgrow(want, nwant, &alloc, sizeof(*want));
				want[nwant++] = ids[j][node];
			}
		if (!nwant) {
			a[node].ok = 1;
			continue;
		}
		if (!skip || !skip[node]) {
			int r = cl_queue(&cl->nodes[node], want, nwant, NULL, take_record,
			                 &a[node]);

			a[node].ok = !r;
			a[node].gone = r && runner_node_gone(cl->nodes[node].r, r);
		}
		*missing += !a[node].ok;
		free(want);
	}
	return a;
}

/* The ranks of a job whose node job ids are ids[0..n), from the nodes' answers. */
static void fill_ranks(struct eng_job *job, const int64_t *ids, int n, const struct node_answer *a,
                       size_t nnodes)
{
	int k;

	job->ranks = xcalloc((size_t)(n ? n : 1), sizeof(*job->ranks));
	job->nranks = n;
	for (k = 0; k < n; k++) {
		struct eng_rank *r = &job->ranks[k];
		size_t i;

		r->node_job = ids[k];
		r->status = -1;
		r->exit_code = -1;
		r->log_dir = xstrdup("");
		if ((size_t)k >= nnodes || !a[k].ok) {
			r->gone = (size_t)k < nnodes && a[k].gone;
			continue;
		}
		/* Answered, but the node has no such job: it lost it. */
		r->status = JOB_FAILED_DRIVER;
		r->lost = 1;
		for (i = 0; i < a[k].n; i++)
			if (a[k].v[i].node_job == ids[k]) {
				free(r->log_dir);
				*r = a[k].v[i];
				r->log_dir = xstrdup(a[k].v[i].log_dir);
				break;
			}
	}
}

static void job_times(struct eng_job *job)
{
	int k;

	for (k = 0; k < job->nranks; k++) {
		const struct eng_rank *r = &job->ranks[k];

		if (r->started_at > 0 && (!job->started_at || r->started_at < job->started_at))
			job->started_at = r->started_at;
		if (r->ended_at > job->ended_at)
			job->ended_at = r->ended_at;
	}
	if (!job_status_terminal(job->status))
		job->ended_at = 0;
}

static int rank_statuses(const struct eng_job *job, int **out)
{
	int k, *s = xcalloc((size_t)(job->nranks ? job->nranks : 1), sizeof(*s));

	for (k = 0; k < job->nranks; k++)
		s[k] = job->ranks[k].status;
	*out = s;
	return job->nranks;
}

static int job_gang_status(const struct eng_job *job)
{
	int *s, n = rank_statuses(job, &s), st = gang_status(s, n);

	free(s);
	return st;
}

/* ---- queue ------------------------------------------------------------------------------ */

/* 1 if id is in want[0..n) (n 0: every id is). */
static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The cluster's jobs of want[0..nwant) (nwant 0: every one), in id order, each once; a
 * job the cluster does not have is left out. Each wanted one is looked up by its key: a
 * pool cluster has thousands of jobs, and a batch of some (a cancel's, a probe's) must
 * not read them all, nor compare each with each. 0 or -EIO.
 */
static int load_jobs(struct st_db *ldb, const char *cluster, const int64_t *want, size_t nwant,
                     struct cluster_job **out, size_t *n)
{
	struct cluster_job *v;
	int64_t *ids;
	size_t i, k = 0;
	int r = 0;

	if (!nwant)
		return st_cluster_job_list(ldb, cluster, out, n) ? -EIO : 0;
	ids = xcalloc(nwant, sizeof(*ids));
	memcpy(ids, want, nwant * sizeof(*ids));
	qsort(ids, nwant, sizeof(*ids), cmp_id);
	v = xcalloc(nwant, sizeof(*v));
	for (i = 0; i < nwant && !r; i++) {
		if (i && ids[i] == ids[i - 1])
			continue;
		r = st_cluster_job_get(ldb, cluster, ids[i], &v[k]);
		if (!r)
			k++;
		else if (r == -ENOENT)
			r = 0;
	}
	free(ids);
	if (r) {
		cluster_jobs_free(v, k);
		return -EIO;
	}
	*out = v;
	*n = k;
	return 0;
}

int eng_queue(struct st_db *ldb, const char *cluster, int skip_finished, const int64_t *want,
              size_t nwant, struct eng_job **out, size_t *nout)
{
	struct cluster_job *v = NULL;
	struct node_answer *a;
	struct eng_job *jobs;
	struct cluster c;
	struct clive cl;
	int64_t **ids;
	int *nids, *submitting, missing;
	size_t n = 0, i, kept = 0;

	*out = NULL;
	*nout = 0;
	if (eng_open(ldb, cluster, &c, &cl))
		return -ENOENT;
	/* Only the jobs asked for: the others are not even read. */
	if (load_jobs(ldb, cluster, want, nwant, &v, &n)) {
		cluster_free(&c);
		cl_close(&cl);
		return -EIO;
	}
	/* Before the nodes are asked: a job cut short mid-submit is settled first. */
	submitting = xcalloc(n ? n : 1, sizeof(*submitting));
	ids = xcalloc(n ? n : 1, sizeof(*ids));
	nids = xcalloc(n ? n : 1, sizeof(*nids));
	for (i = 0; i < n; i++) {
		submitting[i] = eng_settle_submit(ldb, &cl, &v[i]);
		nids[i] = gang_parse_ids(v[i].node_job_ids, &ids[i]);
		if (nids[i] < 0)
			nids[i] = 0;
		/* A job with a final word is not asked again when only the unfinished count. */
		if (skip_finished && v[i].final_status >= 0)
			nids[i] = 0;
	}
	a = ask_nodes(&cl, ids, nids, n, NULL, &missing);
	jobs = xcalloc(n ? n : 1, sizeof(*jobs));
	for (i = 0; i < n; i++) {
		struct eng_job *job = &jobs[kept];
		int decided = 0;

		memset(job, 0, sizeof(*job));
		job->id = v[i].id;
		fill_ranks(job, ids[i], nids[i], a, cl.n);
		job->status = job_gang_status(job);
		/* A gang's outcome, once decided, stands (its lost rank may be stopped later). */
		if (v[i].final_status >= 0)
			job->status = v[i].final_status;
		else if (submitting[i] == ENG_SUBMITTING)
			job->status = JOB_INIT; /* its launcher is submitting it */
		else if (submitting[i] == ENG_SUBMIT_UNKNOWN)
			job->status = -1;
		else if (job_status_terminal(job->status))
			decided = 1;
		if (decided)
			st_cluster_job_set_final(ldb, cluster, v[i].id, NULL, job->status);
		if (skip_finished && job_status_terminal(job->status)) {
			job_release(job);
			continue;
		}
		job->name = xstrdup(v[i].name);
		job->entrypoint = xstrdup(v[i].entrypoint);
		job->reason = xstrdup(v[i].reason);
		job->node_job_ids = xstrdup(v[i].node_job_ids);
		job->git_commit = xstrdup(v[i].git_commit ? v[i].git_commit : "");
		job->num_nodes = v[i].num_nodes;
		job->submitted_at = v[i].submitted_at;
		job_times(job);
		kept++;
	}
	for (i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	free(nids);
	free(submitting);
	answers_free(a, cl.n);
	cluster_jobs_free(v, n);
	cluster_free(&c);
	cl_close(&cl);
	*out = jobs;
	*nout = kept;
	return missing ? 1 : 0;
}

/* ---- logs ------------------------------------------------------------------------------ */

struct stream {
	struct cl_follower f; /* its fd is the stream's; rest unused */
	int code;             /* exit status of the remote `node logs`, -1 unknown */
	struct buf line;
};

static void flush_line(int out, struct stream *s, int final)
{
	char *nl;

	while ((nl = memchr(s->line.p, '\n', s->line.len)) || (final && s->line.len)) {
		size_t n = nl ? (size_t)(nl - s->line.p) + 1 : s->line.len;

		write_all(out, s->line.p, n);
		if (!nl)
			write_all(out, "\n", 1);
		memmove(s->line.p, s->line.p + n, s->line.len - n);
		buf_setlen(&s->line, s->line.len - n);
	}
}

/*
 * The streams run in process groups of their own (runner_spawn, or the install session's),
 * so Ctrl-C on `logs` does not reach them: the handler stops them, then the signal kills
 * us as before. A stream's follower is emptied once ended (its pid may be reused).
 */
static struct stream *follow_streams;
static volatile sig_atomic_t follow_nstreams;

static void follow_stop(int sig)
{
	int i;

	for (i = 0; i < follow_nstreams; i++)
		cl_follower_signal(&follow_streams[i].f, SIGTERM);
	raise(sig); /* SA_RESETHAND: the default action, once this handler returns */
}

/*
 * Starts rank i's `node logs` stream; 0, or -1 (it stays off). With several ranks the
 * node prefixes each line as SkyPilot does, with the pid of the rank's process there.
 *
 * A follower's stdin is a pipe we hold, and it is told so (--stdin-held): over ssh its
 * stdout's hang-up comes only with its next write, so a killed `skiff logs` would leave
 * the follower of a silent job on its node until the job ends; our end's close (our
 * death included) is its EOF. Only a node running this very binary is told (an older
 * one does not know the option): the others get stdin /dev/null, as before.
 */
static int start_stream(struct clive *cl, int i, int n, int64_t id, int follow, const char *tailarg,
                        struct stream *s)
{
	struct runner_io io = {RUNNER_NULL, -1, RUNNER_INHERIT};
	struct buf script = BUF_INIT(0);
	int held = follow && cl_node_ours(&cl->nodes[i]);
	int pfd[2], in[2] = {-1, -1}, r;

	if (!cl->nodes[i].exe || pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	if (held && pipe2(in, O_CLOEXEC) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	io.in_fd = held ? in[0] : RUNNER_NULL;
	io.out_fd = pfd[1];
	/* -q: one "finished" line for the gang, printed by the caller, not one per rank. */
	buf_addf(&script, "exec %s -q node logs %s%s%s", cl->nodes[i].exe,
	         follow ? "--follow" : "--no-follow", held ? " --stdin-held" : "", tailarg);
	if (n > 1) {
		buf_addf(&script, " --prefix-rank %d --prefix-ip ", i);
		sh_quote(&script, cl->nodes[i].ip ? cl->nodes[i].ip : "");
	}
	buf_addf(&script, " %lld", (long long)id);
	r = runner_spawn(cl->nodes[i].r, script.p, 0, &io, &s->f.pid);
	close(pfd[1]);
	if (held)
		close(in[0]);
	buf_release(&script);
	if (r) {
		close(pfd[0]);
		if (held)
			close(in[1]);
		return -1;
	}
	s->f.fd = pfd[0];
	s->f.in = in[1];
	return 0;
}

/*
 * Every rank's stream is `node logs -q` on its node, its lines prefixed there with the
 * rank (SkyPilot's "(head, rank=0, pid=N) ") when there are several; the status at the end is the
 * gang's (so a one-rank job reports the cluster job, not the node's). A stream that ends with ssh's
 * 255 lost its node (`node logs` never exits 255): that node is not asked again, and its rank is
 * unknown.
 */
int eng_follow(struct st_db *ldb, struct clive *cl, int64_t job, int mode, long tail, int out,
               struct cl_follower *pre, int *status_out)
{
	static const int stop_sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa, old_sa[3];
	struct cluster_job cj;
	struct stream *ss;
	struct pollfd *pf;
	char tailarg[32] = "";
	int64_t *ids = NULL;
	int *lost, *map, n, i, live = 0, rc, status, follow = mode > 0;

	if (status_out)
		*status_out = -1;
	if (!out)
		out = 1;
	if (st_cluster_job_get(ldb, cl->name, job, &cj)) {
		error("cluster %s has no job %lld", cl->name, (long long)job);
		return EXIT_JOB_NOT_FOUND;
	}
	/* Being submitted by another launcher: its ranks are known once it is done. */
	while ((rc = eng_settle_submit(ldb, cl, &cj)) == ENG_SUBMITTING && follow) {
		poll_ms(SUBMIT_WAIT_MS);
		cluster_job_free(&cj);
		if (st_cluster_job_get(ldb, cl->name, job, &cj)) {
			error("cluster %s has no job %lld any more", cl->name, (long long)job);
			return EXIT_JOB_NOT_FOUND;
		}
	}
	if (rc == ENG_SUBMITTING) {
		cluster_job_free(&cj);
		if (status_out)
			*status_out = JOB_INIT;
		return mode ? EXIT_JOB_NOT_FINISHED : EXIT_OK;
	}
	if (rc == ENG_SUBMIT_UNKNOWN) {
		cluster_job_free(&cj);
		return EXIT_UNAVAILABLE;
	}
	if (*cj.reason)
		warning("job %lld: %s", (long long)job, cj.reason);
	if (tail >= 0)
		xsnprintf(tailarg, sizeof(tailarg), " --tail %ld", tail);
	n = gang_parse_ids(cj.node_job_ids, &ids);
	if (n < 0)
		n = 0;
	if (n > (int)cl->n)
		n = (int)cl->n;
	ss = xcalloc((size_t)(n ? n : 1), sizeof(*ss));
	pf = xcalloc((size_t)(n ? n : 1), sizeof(*pf));
	map = xcalloc((size_t)(n ? n : 1), sizeof(*map));
	lost = xcalloc(cl->n ? cl->n : 1, sizeof(*lost));
	/* Zeroed, a stream's follower is none: the handler may look at each from here. */
	follow_streams = ss;
	follow_nstreams = n;
	sa.sa_handler = follow_stop;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 3; i++)
		if (!sigaction(stop_sigs[i], NULL, &old_sa[i]) && old_sa[i].sa_handler != SIG_IGN)
			sigaction(stop_sigs[i], &sa, NULL); /* an ignored signal stays ignored */
	for (i = 0; i < n; i++) {
		cl_follower_none(&ss[i].f);
		ss[i].code = -1;
		buf_init(&ss[i].line, LOG_LINE_MAX);
		if (pre && cl_follower_live(&pre[i])) {
			/* The rank's follower is its submit itself (cl_submit_follow()). */
			ss[i].f = pre[i];
			buf_init(&ss[i].f.rest, 0);
			buf_add(&ss[i].line, pre[i].rest.p, pre[i].rest.len);
			buf_release(&pre[i].rest);
			cl_follower_none(&pre[i]);
			live++;
			flush_line(out, &ss[i], 0);
			continue;
		}
		if (mode < 0 || !ids[i] || start_stream(cl, i, n, ids[i], follow, tailarg, &ss[i]))
			continue;
		live++;
	}
	while (live) {
		int np = 0;

		for (i = 0; i < n; i++)
			if (ss[i].f.fd >= 0) {
				pf[np].fd = ss[i].f.fd;
				pf[np].events = POLLIN;
				pf[np].revents = 0;
				map[np++] = i;
			}
		if (poll(pf, (nfds_t)np, -1) < 0)
			continue;
		for (i = 0; i < np; i++) {
			struct stream *s = &ss[map[i]];
			char blk[8192];
			ssize_t got;
			int gone;

			if (!pf[i].revents)
				continue;
			got = read(s->f.fd, blk, sizeof(blk));
			if (got > 0) {
				/* A line past the buffer's bound goes out in pieces, never lost. */
				if (buf_add(&s->line, blk, (size_t)got)) {
					flush_line(out, s, 1);
					buf_add(&s->line, blk, (size_t)got);
				}
				flush_line(out, s, 0);
				continue;
			}
			if (got < 0 && errno == EINTR)
				continue;
			flush_line(out, s, 1);
			s->code = cl_follower_end(&s->f, &cl->nodes[map[i]], &gone);
			if (gone) {
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
	follow_nstreams = 0;
	/*
	 * Ranks that followed to the end told their results by their exit statuses: when
	 * each is SUCCEEDED or CANCELLED (unambiguous) the gang's is known without a round
	 * trip (CANCELLED if any was). Otherwise it is the gang's, from the nodes.
	 */
	for (i = 0, status = n > 0 && follow ? JOB_SUCCEEDED : -1; i < n && status >= 0; i++)
		if (lost[i] || (ss[i].code != 0 && ss[i].code != 103))
			status = -1;
		else if (ss[i].code == 103)
			status = JOB_CANCELLED;
	if (status < 0 && cj.final_status >= 0) {
		status = cj.final_status;
	} else if (status < 0) {
		struct eng_job one = {0};
		struct node_answer *a;
		int missing;

		a = ask_nodes(cl, &ids, &n, 1, lost, &missing);
		fill_ranks(&one, ids, n, a, cl->n);
		status = job_gang_status(&one);
		answers_free(a, cl->n);
		job_release(&one);
	}
	if (cj.final_status < 0 && job_status_terminal(status))
		st_cluster_job_set_final(ldb, cl->name, job, NULL, status);
	for (i = 0; i < n; i++)
		buf_release(&ss[i].line);
	free(ss);
	free(pf);
	free(map);
	free(lost);
	free(ids);
	follow_streams = NULL;
	cluster_job_free(&cj);
	if (status_out)
		*status_out = status;
	if (follow && log_get_level() >= LOG_INFO)
		fprintf(stderr, "skiff: job %lld %s (status: %s)\n", (long long)job,
		        job_status_terminal(status) ? "finished"
		        : status < 0                ? "is in an unknown state"
		                                    : "is still running",
		        job_status_name(status));
	if (status < 0)
		return EXIT_UNAVAILABLE;
	rc = job_exit_code(status);
	return !mode && rc == EXIT_JOB_NOT_FINISHED ? EXIT_OK : rc;
}

int64_t eng_latest_job(struct st_db *ldb, const char *cluster)
{
	struct cluster_job *v = NULL;
	size_t n = 0;
	int64_t id = 0;

	if (!st_cluster_job_list(ldb, cluster, &v, &n) && n)
		id = v[n - 1].id;
	cluster_jobs_free(v, n);
	return id;
}

int eng_logs(struct st_db *ldb, const char *cluster, int64_t job, int mode, long tail, int fd,
             int *status)
{
	struct cluster c;
	struct clive cl;
	int rc;

	if (status)
		*status = -1;
	if (eng_open(ldb, cluster, &c, &cl))
		return EXIT_FAIL;
	if (!job)
		job = eng_latest_job(ldb, cluster);
	if (!job) {
		error("cluster %s has no jobs", cluster);
		rc = EXIT_JOB_NOT_FOUND;
	} else {
		rc = eng_follow(ldb, &cl, job, mode, tail, fd, NULL, status);
	}
	cluster_free(&c);
	cl_close(&cl);
	return rc;
}

/* ---- sync-down ---------------------------------------------------------------------- */

int eng_sync_down(struct st_db *ldb, const char *cluster, int64_t job, struct buf *where)
{
	return eng_sync_down_to(ldb, cluster, job, NULL, where);
}

int eng_sync_down_to(struct st_db *ldb, const char *cluster, int64_t job, const char *dir,
                     struct buf *where)
{
	struct cluster_job cj;
	struct node_answer *a;
	struct eng_job one = {0};
	struct cluster c;
	struct clive cl;
	const char *home = user_home();
	int64_t *ids = NULL;
	int n, i, r = 0, missing;

	if (!dir && !home)
		return error("no home directory to put ~/sky_logs in");
	if (eng_open(ldb, cluster, &c, &cl))
		return -ENOENT;
	if (!job)
		job = eng_latest_job(ldb, cluster);
	if (st_cluster_job_get(ldb, cluster, job, &cj)) {
		error("cluster %s has no job %lld", cluster, (long long)job);
		cluster_free(&c);
		cl_close(&cl);
		return -ENOENT;
	}
	n = gang_parse_ids(cj.node_job_ids, &ids);
	if (n < 0)
		n = 0;
	a = ask_nodes(&cl, &ids, &n, 1, NULL, &missing);
	fill_ranks(&one, ids, n, a, cl.n);
	if (dir)
		buf_addf(where, "%s", dir);
	else
		buf_addf(where, "%s/sky_logs/%s/%lld", home, cluster, (long long)job);
	for (i = 0; i < n && !r; i++) {
		struct runner_io io = {RUNNER_NULL, -1, RUNNER_INHERIT};
		struct buf q1 = BUF_INIT(0);
		struct sync_stats st = {0};
		char *dst = xasprintf("%s/rank-%d", where->p, i);
		char *script;
		int pfd[2], status = 0;
		pid_t pid;

		if (!*one.ranks[i].log_dir) {
			r = error("node %s: job %lld has no log directory", cl.nodes[i].name,
			          (long long)job);
			free(dst);
			break;
		}
		sh_quote(&q1, one.ranks[i].log_dir);
		/* The node packs its log dir; we unpack it with the same safe extractor. */
		script = xasprintf("exec %s __sync-send --no-ignore %s", cl.nodes[i].exe, q1.p);
		if (mkdir_p(dst, 0700) || pipe2(pfd, O_CLOEXEC)) {
			r = error_errno("cannot create '%s'", dst);
		} else {
			io.out_fd = pfd[1];
			r = runner_spawn(cl.nodes[i].r, script, 0, &io, &pid);
			close(pfd[1]);
			if (!r) {
				r = sync_unpack(pfd[0], dst, dir ? SYNC_NO_STATE : 0, 0, &st);
				close(pfd[0]);
				waitpid(pid, &status, 0);
				if (!r && (!WIFEXITED(status) || WEXITSTATUS(status)))
					r = error("node %s: could not send the logs of job %lld",
					          cl.nodes[i].name, (long long)job);
			} else {
				close(pfd[0]);
			}
		}
		free(script);
		free(dst);
		buf_release(&q1);
	}
	job_release(&one);
	answers_free(a, cl.n);
	free(ids);
	cluster_job_free(&cj);
	cluster_free(&c);
	cl_close(&cl);
	return r;
}

/* ---- cancel ---------------------------------------------------------------------------- */

void eng_cancelled_release(struct eng_cancelled *c)
{
	free(c->jobs);
	memset(c, 0, sizeof(*c));
}

/*
 * A job whose ranks are not all recorded (its launcher is submitting it, or was cut short)
 * is cancelled by key on every rank: a rank that arrives later finds its key cancelled
 * and never runs. 0, or -1 when a node could not be reached (printed).
 */
static int cancel_unsubmitted(struct clive *cl, const struct cluster_job *cj)
{
	int i, r = 0;

	if (cj->final_status >= 0 || eng_ranks_known(cj->node_job_ids) >= cj->num_nodes ||
	    !*cj->submit_key)
		return 0;
	for (i = 0; i < cj->num_nodes && i < (int)cl->n; i++)
		if (cl_cancel_key(&cl->nodes[i], cj->submit_key, i))
			r = -1;
	return r;
}

/* Per node, the node job ids to cancel there. */
struct per_node {
	int64_t *ids;
	size_t n, alloc;
};

int eng_cancel(struct st_db *ldb, const char *cluster, const int64_t *want, size_t nwant, int all,
               struct eng_cancelled *out)
{
	struct cluster_job *v = NULL;
	struct per_node *pn;
	struct cluster c;
	struct clive cl;
	size_t n = 0, i, k, alloc = 0;
	int64_t latest = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!nwant && !all) {
		/* Neither: the latest job that has not ended, as the nodes say. */
		struct eng_job *active = NULL;
		size_t na = 0;

		r = eng_queue(ldb, cluster, 1, NULL, 0, &active, &na);
		if (r < 0)
			return r;
		for (i = 0; i < na; i++)
			if (active[i].id > latest)
				latest = active[i].id;
		eng_jobs_free(active, na);
		if (!latest) {
			info("cluster %s has no job that has not ended: nothing to cancel",
			     cluster);
			return 0;
		}
		want = &latest;
		nwant = 1;
	}
	if (eng_open(ldb, cluster, &c, &cl))
		return -ENOENT;
	/* Every job (all), or the ones asked for, each read by its key. */
	if (load_jobs(ldb, cluster, all ? NULL : want, all ? 0 : nwant, &v, &n)) {
		r = -EIO;
		goto out;
	}
	pn = xcalloc(cl.n ? cl.n : 1, sizeof(*pn));
	for (i = 0; i < n; i++) {
		int64_t *ids = NULL;
		int nids;

		out->jobs = xgrow(out->jobs, out->n, &alloc, sizeof(*out->jobs));
		out->jobs[out->n++] = v[i].id;
		if (cancel_unsubmitted(&cl, &v[i]))
			r = -EHOSTUNREACH;
		nids = gang_parse_ids(v[i].node_job_ids, &ids);
		for (int rank = 0; rank < nids && rank < (int)cl.n; rank++) {
			struct per_node *p = &pn[rank];

			if (!ids[rank])
				continue;
			p->ids = xgrow(p->ids, p->n, &p->alloc, sizeof(*p->ids));
			p->ids[p->n++] = ids[rank];
		}
		free(ids);
	}
	/* out->jobs is in id order (load_jobs()): each wanted one is looked up in it. */
	for (k = 0; k < nwant; k++) {
		if (!bsearch(&want[k], out->jobs, out->n, sizeof(*out->jobs), cmp_id)) {
			error("cluster %s has no job %lld", cluster, (long long)want[k]);
			out->missing++;
		}
	}
	/* One request per node, naming all of that node's rank jobs at once. */
	for (i = 0; i < cl.n; i++) {
		if ((all && cl.nodes[i].exe) || pn[i].n)
			if (cl_cancel_jobs(&cl.nodes[i], pn[i].ids, pn[i].n, all))
				r = -EHOSTUNREACH;
		free(pn[i].ids);
	}
	free(pn);
	if (!r && out->missing)
		r = -ENOENT;
out:
	cluster_jobs_free(v, n);
	cluster_free(&c);
	cl_close(&cl);
	return r;
}
