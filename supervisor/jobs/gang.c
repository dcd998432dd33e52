/*
 * The gang watcher (`skiff __gang CLUSTER JOB KEY`): a detached daemon per multi-node job,
 * started by the launch (eng_start_gang_watch()). It watches every rank (a watch per node,
 * cl_node_watch(): the node's supervisor answers when the rank's job ends) and, when one
 * rank fails or its node is lost, cancels the others, as SkyPilot's gang semantics
 * require. A watch that breaks without the rank's end is watched again until the node
 * answers, and the node counts as lost only after GANG_LOST_MS of silence or when its
 * transport says it is gone (gang_away_decide()). A rank on a node that could not be
 * reached is stopped when the node is back: retries are timers in the one wait
 * (supervisor/jobs/policy.h), until the cluster is taken down or launched again.
 *
 * The job is the one submitted with KEY (its cluster_jobs row's submit_key): a cluster
 * taken down and launched again under its name has a job of the same id, and its nodes
 * may give their jobs the same ids again. So the row is checked for KEY before the watch,
 * an outcome is recorded only on that row, and a rank is cancelled only while its node
 * job is the one of "KEY/RANK" (the node checks: cl_cancel_rank()).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/infra/fcall.h"
#include "bootstrap/launch/engine.h"
#include "bootstrap/launch/gang.h"
#include "lib/daemon.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/util.h"
#include "state/launcher.h"
#include "state/node.h"
#include "supervisor/jobs/jobs.h"
#include "supervisor/jobs/policy.h"
#include "lib/banned.h"

struct rank_watch {
	struct fcall call; /* the watch, while live */
	int live;
	char status[32]; /* the rank's final status once known; "" unknown */
	int ended;       /* its stream is over */
	int pending;     /* to be stopped once its node is back */
	int missing;     /* its node answered that it has no such job */
	int64_t away;    /* since when its node has not answered (0: it answers) */
	int64_t next;    /* while away and not watched: when to watch it again */
	int tries;       /* watches tried since it went away */
};

/* Starts rank k's watch ({op: watch, id}); 0 or -1. */
static int watch_start(struct cnode *nd, int64_t id, struct rank_watch *w)
{
	if (cl_node_watch(nd, &w->call, id))
		return -1;
	w->live = 1;
	return 0;
}

/*
 * Takes the frames read so far: the final status, once the node sends it. An answer of
 * the node's supervisor about the job is the node answering: it is no longer away. Its
 * "no_job" is its answer that the job is not there (its node db is not the one the job
 * went to); another error (`node call`'s: no supervisor could be reached) is none.
 */
static void watch_frames(struct rank_watch *w)
{
	struct msg m;

	msg_init(&m);
	while (fcall_take(&w->call, &m) > 0) {
		if (msg_get(&m, "error") && !msg_get(&m, "no_job"))
			continue;
		w->away = 0;
		w->tries = 0;
		if (msg_get(&m, "ended") && msg_get(&m, "status"))
			xsnprintf(w->status, sizeof(w->status), "%.31s", msg_get(&m, "status"));
		else if (msg_get(&m, "no_job"))
			w->missing = 1;
	}
	msg_release(&m);
}

/* Cancels rank's node job if it is still ours; 0 when the node answered (whatever it said). */
static int stop_rank(struct cnode *nd, int64_t id, const char *key, int rank)
{
	return cl_cancel_rank(nd, id, key, rank) == -EHOSTUNREACH ? -1 : 0;
}

/* Ends rank i's watch; whether its node is gone (runner_node_gone()). */
static int watch_end(struct cnode *nd, struct rank_watch *w)
{
	int status, rc;

	watch_frames(w);
	rc = fcall_end(&w->call, &status);
	fcall_release(&w->call);
	w->live = 0;
	return runner_node_gone(nd->r, rc);
}

struct gang {
	struct st_db *ldb;
	const char *cluster, *key;
	int64_t job, lost_ms;
	struct clive *cl;
	int64_t *ids;
	struct rank_watch *w;
	int n;
	int failed; /* the rank whose end stops the others; -1 */
};

/* Rank i has ended (status known, or lost): stops the others when its end says so. */
static void rank_ended(struct gang *g, int i)
{
	struct rank_watch *w = &g->w[i];

	w->ended = 1;
	w->away = 0;
	/* No status: the node was lost, and its rank may still run there. */
	if (!w->status[0])
		w->pending = 1;
	if (g->failed >= 0 || !gang_end_stops_others(w->status))
		return;
	g->failed = i;
	info("job %lld: rank %d ended %s; stopping the other ranks", (long long)g->job, i,
	     w->status[0] ? w->status : "(node unreachable)");
	/* Once that rank is stopped (its node back), it would read CANCELLED. */
	if (!w->status[0])
		st_cluster_job_set_final(g->ldb, g->cluster, g->job, g->key, JOB_FAILED_DRIVER);
	for (int o = 0; o < g->n; o++) {
		if (o == i || g->w[o].ended)
			continue;
		if (g->w[o].live) {
			fcall_kill(&g->w[o].call);
			watch_end(&g->cl->nodes[o], &g->w[o]);
		}
		/* Stopped, or to stop once its node is back; either way no longer watched. */
		if (stop_rank(&g->cl->nodes[o], g->ids[o], g->key, o))
			g->w[o].pending = 1;
		g->w[o].ended = 1;
		g->w[o].away = 0;
	}
}

/* Rank i's watch ended at now without its status (gone: the transport says so). */
static void rank_away(struct gang *g, int i, int gone, int64_t now)
{
	struct rank_watch *w = &g->w[i];

	if (w->missing) {
		info("job %lld: node %s has no job %lld of rank %d any more", (long long)g->job,
		     g->cl->nodes[i].name, (long long)g->ids[i], i);
		gone = 1;
	}
	if (!w->away) {
		w->away = now;
		w->tries = 0;
		if (!gone && g->failed < 0)
			info("job %lld: rank %d's node %s does not answer; watching it again for up "
			     "to %lld s",
			     (long long)g->job, i, g->cl->nodes[i].name,
			     (long long)(g->lost_ms / 1000));
	}
	if (gang_away_decide(w->away, now, w->tries, gone, g->failed >= 0, g->lost_ms, &w->next) ==
	    GANG_AWAY_LOST)
		rank_ended(g, i);
}

/* Watches the ranks until each has ended or is lost. */
static void watch_ranks(struct gang *g)
{
	struct daemon_fd *fds = xcalloc((size_t)(g->n ? g->n : 1), sizeof(*fds));
	int i;

	for (;;) {
		int64_t deadline = -1, now;
		int open = 0;

		for (i = 0; i < g->n; i++) {
			struct rank_watch *w = &g->w[i];
			int64_t at = w->live ? gang_lost_at(w->away, g->lost_ms) : w->next;

			fds[i].fd = w->live ? fcall_fd(&w->call) : -1;
			fds[i].revents = 0;
			if (w->ended)
				continue;
			open++;
			if (w->away && (deadline < 0 || at < deadline))
				deadline = at;
		}
		if (!open || daemon_wait(fds, g->n, deadline) < 0)
			break;
		now = now_ms();
		for (i = 0; i < g->n; i++) {
			struct rank_watch *w = &g->w[i];

			if (w->ended)
				continue;
			if (w->live && fds[i].revents) {
				int64_t was_away = w->away;
				int gone;

				if (fcall_read(&w->call) > 0) {
					watch_frames(w);
					if (was_away && !w->away)
						info("job %lld: rank %d's node %s answers again",
						     (long long)g->job, i, g->cl->nodes[i].name);
					continue;
				}
				gone = watch_end(&g->cl->nodes[i], w);
				if (w->status[0])
					rank_ended(g, i);
				else
					rank_away(g, i, gone, now);
			} else if (w->live && w->away && now >= gang_lost_at(w->away, g->lost_ms)) {
				/* Still no answer to the watch tried again: its node is lost. */
				fcall_kill(&w->call);
				watch_end(&g->cl->nodes[i], w);
				rank_ended(g, i);
			} else if (!w->live && w->away && now >= w->next) {
				w->tries++;
				if (now >= gang_lost_at(w->away, g->lost_ms))
					rank_ended(g, i);
				else if (watch_start(&g->cl->nodes[i], g->ids[i], w))
					rank_away(g, i, runner_node_gone(g->cl->nodes[i].r, 0),
					          now);
			}
		}
	}
	free(fds);
}

static int run(struct st_db *ldb, const char *cluster, int64_t job, const char *key)
{
	struct cluster c;
	struct clive cl;
	struct cluster_job cj;
	struct gang g = {.ldb = ldb, .cluster = cluster, .key = key, .job = job, .failed = -1};
	int64_t start, next = -1;
	int i, live = 0, npending = 0, tries = 0;

	g.lost_ms = gang_lost_ms(getenv("SKIFF_GANG_LOST_MS"));
	if (g.lost_ms < 0) {
		warning("SKIFF_GANG_LOST_MS: expected milliseconds from %lld to %lld; using %lld",
		        (long long)GANG_LOST_MIN_MS, (long long)GANG_RETRY_MAX_MS,
		        (long long)GANG_LOST_MS);
		g.lost_ms = GANG_LOST_MS;
	}
	if (eng_open(ldb, cluster, &c, &cl))
		return EXIT_FAIL;
	if (st_cluster_job_get(ldb, cluster, job, &cj)) {
		cluster_free(&c);
		cl_close(&cl);
		return error("no job %lld on %s", (long long)job, cluster), EXIT_FAIL;
	}
	if (strcmp(cj.submit_key, key)) {
		info("job %lld of %s is another job now (the cluster was launched again): not "
		     "watched",
		     (long long)job, cluster);
		cluster_job_free(&cj);
		cluster_free(&c);
		cl_close(&cl);
		return EXIT_OK;
	}
	g.cl = &cl;
	g.n = gang_parse_ids(cj.node_job_ids, &g.ids);
	if (g.n > (int)cl.n)
		g.n = (int)cl.n;
	if (g.n < 0)
		g.n = 0;
	g.w = xcalloc((size_t)(g.n ? g.n : 1), sizeof(*g.w));
	/* A rank whose watch cannot be started at all (cl_node_watch()'s message) is not watched.
	 */
	for (i = 0; i < g.n; i++) {
		if (g.ids[i] && !watch_start(&cl.nodes[i], g.ids[i], &g.w[i]))
			live++;
		else
			g.w[i].ended = 1;
	}
	info("job %lld of %s: watching %d of its %d rank(s)", (long long)job, cluster, live, g.n);
	watch_ranks(&g);
	for (i = 0; i < g.n; i++)
		npending += g.w[i].pending;
	if (npending)
		info("job %lld: %d rank(s) on unreachable nodes; stopping them when they are back",
		     (long long)job, npending);
	start = now_ms();
	while (npending && now_ms() - start < GANG_RETRY_MAX_MS) {
		struct cluster_job again;
		int moved;

		next = now_ms() + gang_retry_delay_ms(tries++);
		while (now_ms() < next)
			daemon_wait(NULL, 0, next);
		if (st_cluster_job_get(ldb, cluster, job, &again)) {
			info("job %lld: cluster %s was taken down; not stopping its ranks",
			     (long long)job, cluster);
			break;
		}
		moved = strcmp(again.submit_key, key);
		cluster_job_free(&again);
		if (moved) {
			info("job %lld: cluster %s was launched again, and its job %lld is another "
			     "one; not stopping its ranks",
			     (long long)job, cluster, (long long)job);
			break;
		}
		for (i = 0; i < g.n; i++) {
			if (!g.w[i].pending || stop_rank(&cl.nodes[i], g.ids[i], key, i))
				continue;
			g.w[i].pending = 0;
			npending--;
			info("job %lld: rank %d stopped on %s, which is back", (long long)job, i,
			     cl.nodes[i].name);
		}
	}
	for (i = 0; i < g.n; i++)
		if (g.w[i].live) {
			fcall_kill(&g.w[i].call);
			watch_end(&cl.nodes[i], &g.w[i]);
		}
	free(g.w);
	free(g.ids);
	cluster_job_free(&cj);
	cluster_free(&c);
	cl_close(&cl);
	return EXIT_OK;
}

int gang_main(int argc, char **argv)
{
	struct st_db *ldb = NULL;
	long job;
	int rc;

	log_set_prog("skiff-gang");
	if (argc != 4 || parse_long(argv[2], 1, INT64_MAX, &job) || !*argv[3])
		return error("usage: skiff __gang CLUSTER JOB KEY"), EXIT_USAGE;
	/*
	 * Not at once: the job's ranks are starting, and the launcher that started us is
	 * following them. Our start (a launcher db, a session per rank) would compete with
	 * both on a small machine; a rank that fails meanwhile is stopped a moment later.
	 */
	daemon_wait(NULL, 0, now_ms() + GANG_START_DELAY_MS);
	if (st_launcher_open(0, &ldb))
		return EXIT_FAIL;
	rc = run(ldb, argv[1], job, argv[3]);
	st_close(ldb);
	return rc;
}
