/*
 * The gang watcher (`skiff __gang CLUSTER JOB KEY`): a detached daemon per multi-node job,
 * started by the launch (eng_start_gang_watch()). It watches every rank (a watch per node,
 * cl_node_watch(): the node's supervisor answers when the rank's job ends) and, when one
 * rank fails or its node is lost, cancels the others, as SkyPilot's gang semantics
 * require. A rank on a node that could not be reached is stopped when the node is back:
 * retries are timers in the one wait (supervisor/jobs/policy.h), until the cluster is
 * taken down or launched again.
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
};

/* Starts rank k's watch ({op: watch, id}); 0 or -1. */
static int watch_start(struct cnode *nd, int64_t id, struct rank_watch *w)
{
	if (cl_node_watch(nd, &w->call, id))
		return -1;
	w->live = 1;
	return 0;
}

/* Takes the frames read so far: the final status, once the node sends it. */
static void watch_frames(struct rank_watch *w)
{
	struct msg m;

	msg_init(&m);
	while (fcall_take(&w->call, &m) > 0)
		if (msg_get(&m, "ended") && msg_get(&m, "status"))
			xsnprintf(w->status, sizeof(w->status), "%.31s", msg_get(&m, "status"));
	msg_release(&m);
}

/* Cancels rank's node job if it is still ours; 0 when the node answered (whatever it said). */
static int stop_rank(struct cnode *nd, int64_t id, const char *key, int rank)
{
	return cl_cancel_rank(nd, id, key, rank) == -EHOSTUNREACH ? -1 : 0;
}

static int run(struct st_db *ldb, const char *cluster, int64_t job, const char *key)
{
	struct cluster c;
	struct clive cl;
	struct cluster_job cj;
	struct rank_watch *w;
	struct daemon_fd *fds;
	int64_t *ids = NULL, start, next = -1;
	int n, i, live = 0, failed = -1, npending = 0, tries = 0;

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
	n = gang_parse_ids(cj.node_job_ids, &ids);
	if (n > (int)cl.n)
		n = (int)cl.n;
	if (n < 0)
		n = 0;
	w = xcalloc((size_t)(n ? n : 1), sizeof(*w));
	fds = xcalloc((size_t)(n ? n : 1), sizeof(*fds));
	for (i = 0; i < n; i++) {
		if (ids[i] && !watch_start(&cl.nodes[i], ids[i], &w[i]))
			live++;
		else
			w[i].ended = 1;
	}
	info("job %lld of %s: watching %d of its %d rank(s)", (long long)job, cluster, live, n);
	while (live) {
		int np = 0, status;

		for (i = 0; i < n; i++)
			fds[np++].fd = w[i].live ? fcall_fd(&w[i].call) : -1;
		if (daemon_wait(fds, np, -1) < 0)
			break;
		for (i = 0; i < n; i++) {
			if (!w[i].live || !fds[i].revents)
				continue;
			if (fcall_read(&w[i].call) > 0) {
				watch_frames(&w[i]);
				continue;
			}
			watch_frames(&w[i]);
			fcall_end(&w[i].call, &status);
			fcall_release(&w[i].call);
			w[i].live = 0;
			w[i].ended = 1;
			live--;
			/* No status: the node was lost, and its rank may still run there. */
			if (!w[i].status[0])
				w[i].pending = 1;
			if (failed >= 0 || !gang_end_stops_others(w[i].status))
				continue;
			failed = i;
			info("job %lld: rank %d ended %s; stopping the other ranks", (long long)job,
			     i, w[i].status[0] ? w[i].status : "(node unreachable)");
			/* Once that rank is stopped (its node back), it would read CANCELLED. */
			if (!w[i].status[0])
				st_cluster_job_set_final(ldb, cluster, job, key, JOB_FAILED_DRIVER);
			for (int o = 0; o < n; o++)
				if (o != i && !w[o].ended &&
				    stop_rank(&cl.nodes[o], ids[o], key, o))
					w[o].pending = 1;
		}
	}
	for (i = 0; i < n; i++)
		npending += w[i].pending;
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
		for (i = 0; i < n; i++) {
			if (!w[i].pending || stop_rank(&cl.nodes[i], ids[i], key, i))
				continue;
			w[i].pending = 0;
			npending--;
			info("job %lld: rank %d stopped on %s, which is back", (long long)job, i,
			     cl.nodes[i].name);
		}
	}
	for (i = 0; i < n; i++)
		if (w[i].live) {
			int status;

			fcall_kill(&w[i].call);
			fcall_end(&w[i].call, &status);
			fcall_release(&w[i].call);
		}
	free(w);
	free(fds);
	free(ids);
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
