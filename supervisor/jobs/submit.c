/*
 * The managed-jobs API the commands call (supervisor/jobs/jobs.h): a job recorded from a
 * parsed task with how it recovers, cancels, and the controller woken. `skiff jobs ...`
 * (cmd/jobs.c) parses flags and renders; what a request means is decided here.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "bootstrap/launch/resources.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/task.h"
#include "lib/util.h"
#include "supervisor/jobs/jobs.h"
#include "lib/banned.h"

/* A rank killed because another failed ends 137: listing it would recover every gang. */
#define RESERVED_CODE 137

int jobs_parse_strategy(const char *s, int *strategy, int *max_restarts)
{
	if (!strcasecmp(s, "EAGER_NEXT_REGION"))
		*strategy = MJ_EAGER_NEXT_REGION;
	else if (!strcasecmp(s, "FAILOVER"))
		*strategy = MJ_FAILOVER;
	else if (!strcasecmp(s, "NONE"))
		*strategy = MJ_EAGER_NEXT_REGION, *max_restarts = 0;
	else
		return -EINVAL;
	return 0;
}

int jobs_submit(struct st_db *db, const struct jobs_submit_req *req, int64_t *id)
{
	const struct task_list *tl = req->tl;
	/* Recovery and priority come from the first task's first resources (SkyPilot's). */
	const struct task_resources *res =
	        tl->n && tl->tasks[0]->nres ? &tl->tasks[0]->res[0] : NULL;
	const char *infra = req->infra;
	struct buf codes = BUF_INIT(0);
	struct mjob j = {0};
	struct msg ovdata;
	char restext[128];
	size_t k;
	int r = -EINVAL;

	msg_init(&ovdata);
	if (!tl->n) {
		error("'%s' has no task", req->entry);
		goto out;
	}
	if (res && res->job_recovery.set) {
		if (res->job_recovery.strategy)
			jobs_parse_strategy(res->job_recovery.strategy, &j.strategy,
			                    &j.max_restarts);
		j.max_restarts = (int)res->job_recovery.max_restarts_on_errors;
		for (k = 0; k < res->job_recovery.nexit_codes; k++) {
			if (res->job_recovery.exit_codes[k] == RESERVED_CODE) {
				error("%s: recover_on_exit_codes may not list %d (reserved: the code "
				      "of a rank killed because another failed)",
				      req->entry, RESERVED_CODE);
				goto out;
			}
			buf_addf(&codes, "%s%d", k ? "," : "", res->job_recovery.exit_codes[k]);
		}
	}
	if (req->recovery && jobs_parse_strategy(req->recovery, &j.strategy, &j.max_restarts)) {
		error("--job-recovery: '%s' is not EAGER_NEXT_REGION, FAILOVER or NONE",
		      req->recovery);
		goto out;
	}
	j.priority = req->have_priority                ? req->priority
	             : res && (res->set & TR_PRIORITY) ? (int)res->priority
	                                               : 0;
	if (!infra && res && res->infra)
		infra = res->infra;
	j.name = req->ov && req->ov->name ? req->ov->name
	         : tl->name               ? tl->name
	         : tl->tasks[0]->name     ? tl->tasks[0]->name
	                                  : "";
	j.entry = (char *)req->entry;
	j.spec = (char *)(req->spec ? req->spec : "");
	j.cwd = (char *)req->cwd;
	j.ovargs = "";
	/* The overrides go to the worker as data: it applies them as the command did. */
	if (req->ov)
		task_overrides_encode(req->ov, &ovdata);
	j.overrides = ovdata.raw.p;
	j.overrides_len = ovdata.raw.len;
	j.infra = (char *)(infra ? infra : "");
	j.recover_codes = codes.p;
	j.ntasks = (int)tl->n;
	/* The first task's first alternative: what the job asks for first. */
	eng_resources_text(res, tl->tasks[0]->num_nodes > 0 ? (int)tl->tasks[0]->num_nodes : 1,
	                   restext, sizeof(restext));
	j.resources = restext;
	r = mj_submit(db, &j) ? -EIO : 0;
	if (!r) {
		*id = j.id;
		jobs_controller_kick();
	}
out:
	/* j's strings point into req and the buffers: nothing of j to free. */
	buf_release(&codes);
	msg_release(&ovdata);
	return r;
}

int jobs_submit_n(struct st_db *db, struct jobs_submit_req *req, struct task_list *tl,
                  struct task_overrides *ov, long n, int64_t *last)
{
	const char *name = ov->name             ? ov->name
	                   : tl->name           ? tl->name
	                   : tl->tasks[0]->name ? tl->tasks[0]->name
	                                        : "";
	long k;
	int r;

	req->tl = tl;
	req->ov = ov;
	for (k = 0; k < n; k++) {
		if (n > 1) {
			/* --num-jobs N: N copies, each told its rank among them. */
			char rank[24], count[24];
			size_t t;

			xsnprintf(rank, sizeof(rank), "%ld", k);
			xsnprintf(count, sizeof(count), "%ld", n);
			task_kvs_set(&ov->envs, "SKYPILOT_JOB_RANK", rank, 0, 0);
			task_kvs_set(&ov->envs, "SKYPILOT_NUM_JOBS", count, 0, 0);
			for (t = 0; t < tl->n; t++) {
				task_kvs_set(&tl->tasks[t]->envs, "SKYPILOT_JOB_RANK", rank, 0, 0);
				task_kvs_set(&tl->tasks[t]->envs, "SKYPILOT_NUM_JOBS", count, 0, 0);
			}
		}
		r = jobs_submit(db, req, last);
		if (r)
			return r;
		printf("%lld\n", (long long)*last);
		fflush(stdout);
		fprintf(stderr, "Managed job %lld submitted%s%s%s\n", (long long)*last,
		        *name ? " (" : "", name, *name ? ")" : "");
	}
	return 0;
}

int jobs_cancel(struct st_db *db, const int64_t *ids, size_t n, const char *name, int all,
                int *found, int *done)
{
	if (mj_cancel(db, ids, n, name, all, found, done))
		return -EIO;
	jobs_controller_kick();
	return 0;
}

int64_t jobs_unfinished(struct st_db *db)
{
	int counts[MJS_N];

	if (st_version(db) < 2)
		return 0;
	if (mj_sched_counts(db, counts))
		return -1;
	return (int64_t)counts[MJS_WAITING] + counts[MJS_INACTIVE] + counts[MJS_LAUNCHING] +
	       counts[MJS_ALIVE] + counts[MJS_ALIVE_WAITING] + counts[MJS_ALIVE_BACKOFF] +
	       mj_cleanup_count(db);
}

void jobs_ensure_controller(struct st_db *db)
{
	/* Active jobs or clusters to release, and no controller (it crashed): start one. */
	if (jobs_unfinished(db) > 0 && !jobs_controller_pid())
		jobs_controller_kick();
}
