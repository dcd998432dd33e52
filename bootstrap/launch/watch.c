/*
 * eng_watch_end(): waits until one of a cluster's jobs that have not ended does, by the
 * nodes' own `watch` (the supervisor answers when the job reaches a final state): no
 * node is polled. For the dashboard (cmd/dashboard.c), which tells its pages then.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/infra/fcall.h"
#include "bootstrap/launch/engine.h"
#include "bootstrap/launch/gang.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/* At most this many node jobs watched at once (the newest jobs' ranks first). */
#define WATCH_MAX 256

struct one {
	struct fcall call;
	int64_t job; /* the cluster job */
	int live;
	int watching; /* the node said it watches: the job had not ended then */
};

static int start(struct cnode *nd, int64_t node_job, struct one *w)
{
	if (cl_node_watch(nd, &w->call, node_job))
		return -1;
	w->live = 1;
	return 0;
}

/*
 * 1 when the watch said its job ended while watched, 0 while it waits, -1 when it is
 * over with nothing to tell: it ended before (the node answers a watch of an ended job at
 * once, and the launcher had just not recorded it), or the answer was no frame.
 */
static int ended(struct one *w)
{
	struct msg m;
	int r = 0, got;

	msg_init(&m);
	while (!r && (got = fcall_take(&w->call, &m)) > 0) {
		if (msg_get(&m, "watching"))
			w->watching = 1;
		else if (msg_get(&m, "ended"))
			r = w->watching ? 1 : -1;
		else if (msg_get(&m, "error"))
			r = -1;
	}
	msg_release(&m);
	return r ? r : got < 0 ? -1 : 0;
}

int eng_watch_end(struct st_db *ldb, const char *cluster, int timeout_ms, int64_t *job)
{
	struct cluster_job *jobs = NULL;
	struct one *w = NULL;
	struct pollfd *pf = NULL;
	struct cluster c;
	struct clive cl;
	size_t n = 0, nw = 0, i;
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	int r = 0, live = 0;

	*job = 0;
	if (eng_open(ldb, cluster, &c, &cl))
		return -ENOENT;
	if (st_cluster_job_list(ldb, cluster, &jobs, &n)) {
		r = -EIO;
		goto out;
	}
	w = xcalloc(WATCH_MAX, sizeof(*w));
	/* The newest first: those are the ones a page shows running. */
	for (i = n; i-- > 0 && nw < WATCH_MAX;) {
		int64_t *ids = NULL;
		int k, ranks;

		if (jobs[i].final_status >= 0)
			continue;
		ranks = gang_parse_ids(jobs[i].node_job_ids, &ids);
		for (k = 0; k < ranks && k < (int)cl.n && nw < WATCH_MAX; k++) {
			if (!ids[k] || start(&cl.nodes[k], ids[k], &w[nw]))
				continue;
			w[nw++].job = jobs[i].id;
			live++;
		}
		free(ids);
	}
	if (!live) {
		r = -ENOENT; /* nothing runs that could end */
		goto out;
	}
	pf = xcalloc(nw, sizeof(*pf));
	while (live && !*job) {
		int64_t left = deadline < 0 ? -1 : deadline - now_ms();

		if (deadline >= 0 && left <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		for (i = 0; i < nw; i++)
			pf[i] = (struct pollfd){w[i].live ? fcall_fd(&w[i].call) : -1, POLLIN, 0};
		if (poll(pf, (nfds_t)nw, left < 0 || left > 60000 ? 60000 : (int)left) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		for (i = 0; i < nw && !*job; i++) {
			int got, e;

			if (!w[i].live || !pf[i].revents)
				continue;
			got = fcall_read(&w[i].call);
			e = ended(&w[i]);
			if (e > 0) {
				*job = w[i].job;
			} else if (got <= 0 || e < 0) {
				/* Over before it began, or its node went away mid-watch (a change).
				 */
				int status;

				fcall_end(&w[i].call, &status);
				fcall_release(&w[i].call);
				w[i].live = 0;
				live--;
				if (got <= 0 && e == 0 && w[i].watching)
					*job = w[i].job;
			}
		}
	}
	if (!r && !*job)
		r = -ENOENT; /* every one had ended already */
out:
	for (i = 0; i < nw; i++)
		if (w[i].live) {
			int status;

			fcall_kill(&w[i].call);
			fcall_end(&w[i].call, &status);
			fcall_release(&w[i].call);
		}
	free(pf);
	free(w);
	cluster_jobs_free(jobs, n);
	cluster_free(&c);
	cl_close(&cl);
	return r;
}
