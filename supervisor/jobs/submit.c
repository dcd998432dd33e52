/*
 * The managed-jobs API the commands call (supervisor/jobs/jobs.h): a job recorded from a
 * parsed task with how it recovers, cancels, and the controller woken. `skiff jobs ...`
 * (cmd/jobs.c) parses flags and renders; what a request means is decided here.
 */
#include <errno.h>
#include <stdlib.h>
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

void jobs_requested_text(const struct task *t, struct buf *out)
{
	const struct task_resources *first = t->nres ? &t->res[0] : NULL;
	size_t k, before;

	buf_addf(out, "%ldx[", t->num_nodes > 0 ? t->num_nodes : 1);
	before = out->len;
	/* SkyPilot's get_task_resources_str(): the accelerators asked for, else the CPUs. */
	for (k = 0; k < t->nres; k++) {
		const struct task_accel *a = &t->res[k].accel;
		size_t j;

		if (!a->name)
			continue;
		for (j = 0; j < k; j++)
			if (t->res[j].accel.name && !strcmp(t->res[j].accel.name, a->name) &&
			    t->res[j].accel.count == a->count)
				break;
		if (j < k)
			continue;
		buf_addf(out, "%s%s:%g", out->len > before ? ", " : "", a->name, a->count);
	}
	if (out->len == before)
		buf_addf(out, "CPU:%s", first && first->cpus.text ? first->cpus.text : "1+");
	buf_addch(out, ']');
	if (first && first->use_spot)
		buf_adds(out, "[Spot]");
}

/* What one job's row holds apart from req's strings: kept until the row is written. */
struct job_row {
	struct mjob j;
	struct mj_task task0; /* the first task's row (a group member's only one) */
	struct buf codes;
	char restext[128];
};

static void job_row_release(struct job_row *row)
{
	buf_release(&row->codes);
}

/*
 * The row of a job running tl's tasks: its recovery, priority and infra from the request
 * over the first task's resources. j's strings point into req, tl and row. 0, or
 * -EINVAL (printed).
 */
static int job_row_fill(const struct jobs_submit_req *req, const struct task_list *tl,
                        const struct msg *ovdata, struct job_row *row)
{
	/* Recovery and priority come from the first task's first resources (SkyPilot's). */
	const struct task_resources *res = tl->tasks[0]->nres ? &tl->tasks[0]->res[0] : NULL;
	const char *infra = req->infra;
	struct mjob *j = &row->j;
	size_t k;

	buf_init(&row->codes, 0);
	if (res && res->job_recovery.set) {
		if (res->job_recovery.strategy)
			jobs_parse_strategy(res->job_recovery.strategy, &j->strategy,
			                    &j->max_restarts);
		j->max_restarts = (int)res->job_recovery.max_restarts_on_errors;
		for (k = 0; k < res->job_recovery.nexit_codes; k++) {
			if (res->job_recovery.exit_codes[k] == RESERVED_CODE)
				return error("%s: recover_on_exit_codes may not list %d (reserved: "
				             "the code of a rank killed because another failed)",
				             req->entry, RESERVED_CODE),
				       -EINVAL;
			buf_addf(&row->codes, "%s%d", k ? "," : "",
			         res->job_recovery.exit_codes[k]);
		}
	}
	if (req->recovery && jobs_parse_strategy(req->recovery, &j->strategy, &j->max_restarts))
		return error("--job-recovery: '%s' is not EAGER_NEXT_REGION, FAILOVER or NONE",
		             req->recovery),
		       -EINVAL;
	j->priority = req->have_priority                ? req->priority
	              : res && (res->set & TR_PRIORITY) ? (int)res->priority
	                                                : 0;
	if (!infra && res && res->infra)
		infra = res->infra;
	j->name = req->ov && req->ov->name ? req->ov->name
	          : tl->name               ? tl->name
	          : tl->tasks[0]->name     ? tl->tasks[0]->name
	                                   : "";
	j->entry = (char *)req->entry;
	j->spec = (char *)(req->spec ? req->spec : "");
	j->cwd = (char *)req->cwd;
	j->ovargs = "";
	j->overrides = ovdata->raw.p;
	j->overrides_len = ovdata->raw.len;
	j->infra = (char *)(infra ? infra : "");
	/* Where its first task runs, known now: the controller launches pool jobs in batches. */
	j->pool = jobs_task_on_pool(tl->tasks[0], infra);
	j->recover_codes = row->codes.p;
	j->ntasks = (int)tl->n;
	/* The first task's first alternative: what the job asks for first. */
	eng_resources_text(res, tl->tasks[0]->num_nodes > 0 ? (int)tl->tasks[0]->num_nodes : 1,
	                   row->restext, sizeof(row->restext));
	j->resources = row->restext;
	return 0;
}

/* Each task's row: `jobs queue` shows a pipeline's tasks one by one. */
static void task_rows_fill(const struct task_list *tl, struct mj_task *tasks, struct buf *requested)
{
	size_t k;

	for (k = 0; k < tl->n; k++) {
		buf_init(&requested[k], 0);
		jobs_requested_text(tl->tasks[k], &requested[k]);
		tasks[k].name = tl->tasks[k]->name ? tl->tasks[k]->name : "";
		tasks[k].requested = requested[k].p;
	}
}

/*
 * A job group: a job per task, each running only its task (the worker keeps task
 * group_task of the spec: task_list_keep()) with its own recovery, in one transaction.
 */
static int submit_group(struct st_db *db, const struct jobs_submit_req *req,
                        const struct msg *ovdata, int64_t *id)
{
	const struct task_list *tl = req->tl;
	struct job_row *rows = xcalloc(tl->n, sizeof(*rows));
	struct mj_task *tasks = xcalloc(tl->n, sizeof(*tasks));
	struct buf *requested = xcalloc(tl->n, sizeof(*requested));
	struct mjob *v = xcalloc(tl->n, sizeof(*v));
	size_t k;
	int r = 0;

	task_rows_fill(tl, tasks, requested);
	for (k = 0; !r && k < tl->n; k++) {
		struct task_list one = *tl;

		one.tasks = &tl->tasks[k];
		one.n = 1;
		r = job_row_fill(req, &one, ovdata, &rows[k]);
		v[k] = rows[k].j;
		/* The group's name (--name renames it), as SkyPilot's queue shows the group. */
		v[k].group_name = v[k].name;
		v[k].group_task = (int)k;
		v[k].group_primary = tl->tasks[k]->primary;
		v[k].group_delay_s = tl->tasks[k]->termination_delay_s;
	}
	if (!r)
		r = mj_submit_group(db, v, tl->n, tasks) ? -EIO : 0;
	if (!r)
		*id = v[0].id;
	for (k = 0; k < tl->n; k++) {
		job_row_release(&rows[k]);
		buf_release(&requested[k]);
	}
	free(rows);
	free(tasks);
	free(requested);
	free(v);
	return r;
}

int jobs_submit(struct st_db *db, const struct jobs_submit_req *req, int64_t *id)
{
	const struct task_list *tl = req->tl;
	struct job_row row = {0};
	struct buf *requested = NULL;
	struct mj_task *tasks = NULL;
	struct msg ovdata;
	size_t k;
	int r = -EINVAL;

	msg_init(&ovdata);
	if (!tl->n) {
		error("'%s' has no task", req->entry);
		goto out;
	}
	/* The overrides go to the worker as data: it applies them as the command did. */
	if (req->ov)
		task_overrides_encode(req->ov, &ovdata);
	if (tl->parallel) {
		r = submit_group(db, req, &ovdata, id);
		goto done;
	}
	r = job_row_fill(req, tl, &ovdata, &row);
	if (r)
		goto out;
	tasks = xcalloc(tl->n, sizeof(*tasks));
	requested = xcalloc(tl->n, sizeof(*requested));
	task_rows_fill(tl, tasks, requested);
	r = mj_submit(db, &row.j, tasks) ? -EIO : 0;
	if (!r)
		*id = row.j.id;
done:
	if (!r)
		jobs_controller_kick();
out:
	/* j's and tasks' strings point into req and the buffers: nothing of them to free. */
	for (k = 0; requested && k < tl->n; k++)
		buf_release(&requested[k]);
	free(requested);
	free(tasks);
	job_row_release(&row);
	msg_release(&ovdata);
	return r;
}

int jobs_submit_n(struct st_db *db, struct jobs_submit_req *req, struct task_list *tl,
                  struct task_overrides *ov, long n, void (*on_id)(int64_t id, void *arg),
                  void *arg, int64_t *last)
{
	const char *name = ov->name             ? ov->name
	                   : tl->name           ? tl->name
	                   : tl->tasks[0]->name ? tl->tasks[0]->name
	                                        : "";
	long k;
	int r;

	req->tl = tl;
	req->ov = ov;
	if (tl->parallel && n > 1)
		return error("--num-jobs: '%s' is a job group, which runs as one managed job; "
		             "launch the group once (or --num-jobs with each of its tasks)",
		             req->entry),
		       -EINVAL;
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
		if (on_id) {
			on_id(*last, arg);
		} else {
			printf("%lld\n", (long long)*last);
			fflush(stdout);
		}
		/* The name as tables show it: it may hold any byte. */
		char shown[TASK_NAME_MAX + 1];

		buf_cell(shown, sizeof(shown), name);
		if (tl->parallel)
			fprintf(stderr,
			        "Managed job %lld submitted: job group %s of %zu tasks "
			        "(jobs %lld to %lld)\n",
			        (long long)*last, shown, tl->n, (long long)*last,
			        (long long)*last + (long long)tl->n - 1);
		else
			fprintf(stderr, "Managed job %lld submitted%s%s%s\n", (long long)*last,
			        *name ? " (" : "", shown, *name ? ")" : "");
	}
	return 0;
}

int jobs_cancel(struct st_db *db, const int64_t *ids, size_t n, const char *name, int all,
                int *found, int *done, int *ended)
{
	if (mj_cancel(db, ids, n, name, all, found, done, ended))
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
