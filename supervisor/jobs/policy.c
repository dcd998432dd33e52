#include "supervisor/jobs/policy.h"

#include <stdlib.h>
#include <string.h>

#include "lib/exit.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/node.h"
#include "lib/banned.h"

int gang_end_stops_others(const char *status)
{
	return !status || !*status || (strcmp(status, "SUCCEEDED") && strcmp(status, "CANCELLED"));
}

/* first, doubled after each of tries, at most cap: the watcher's waits. */
static int64_t doubling(int64_t first, int tries, int64_t cap)
{
	int64_t d = first;

	while (tries-- > 0 && d < cap)
		d *= 2;
	return d > cap ? cap : d;
}

int64_t gang_retry_delay_ms(int tries)
{
	return doubling(5000, tries, 30000);
}

enum gang_away gang_away_decide(int64_t away_since, int64_t now, int tries, int gone, int stopping,
                                int64_t lost_ms, int64_t *at)
{
	int64_t lost = gang_lost_at(away_since, lost_ms);
	int64_t next = now + doubling(GANG_REWATCH_FIRST_MS, tries, GANG_REWATCH_MAX_MS);

	*at = -1;
	if (gone || stopping || now >= lost)
		return GANG_AWAY_LOST;
	*at = next < lost ? next : lost;
	return GANG_AWAY_RETRY;
}

int64_t gang_lost_at(int64_t away_since, int64_t lost_ms)
{
	return away_since > INT64_MAX - lost_ms ? INT64_MAX : away_since + lost_ms;
}

int64_t gang_lost_ms(const char *env)
{
	long v;

	if (!env)
		return GANG_LOST_MS;
	if (parse_long(env, GANG_LOST_MIN_MS, GANG_RETRY_MAX_MS, &v))
		return -1;
	return v;
}

double jobs_backoff_s(int base_s, int attempts, double jitter)
{
	double b = (double)base_s;
	int i;

	for (i = 1; i < attempts && b < JOBS_BACKOFF_CAP_S; i++)
		b *= JOBS_BACKOFF_GROWTH;
	if (b > JOBS_BACKOFF_CAP_S && base_s <= JOBS_BACKOFF_CAP_S)
		b = JOBS_BACKOFF_CAP_S;
	if (jitter < -1)
		jitter = -1;
	if (jitter > 1)
		jitter = 1;
	return b * (1.0 + jitter * JOBS_BACKOFF_JITTER);
}

int jobs_code_listed(const char *codes, const char *list)
{
	const char *p = codes;

	while (p && *p) {
		char *end;
		long c = strtol(p, &end, 10), l;
		const char *q = list;

		if (end == p)
			break;
		while (q && *q) {
			char *qe;

			l = strtol(q, &qe, 10);
			if (qe == q)
				break;
			if (l == c)
				return (int)c;
			q = *qe == ',' ? qe + 1 : qe;
		}
		p = *end == ',' ? end + 1 : end;
	}
	return -1;
}

struct code_count {
	long code;
	size_t n;
};

static int by_code(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* The most common first, then the lowest code. */
static int by_count(const void *a, const void *b)
{
	const struct code_count *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->code < y->code ? -1 : x->code > y->code;
}

/* Room kept for ", ... N more codes (M ranks)" with N and M of up to 20 digits each. */
#define CODES_TAIL_MAX 72

int jobs_codes_summary(struct buf *out, const char *codes, size_t max)
{
	struct code_count *cc = NULL;
	long *v = NULL;
	size_t n = 0, cap = 0, ncc = 0, i, start = out->len, ranks = 0;
	const char *p = codes;
	int r = 0;

	if (!codes || !*codes)
		return buf_addch(out, '-');
	if (strlen(codes) <= max)
		return buf_adds(out, codes);
	while (*p) {
		char *end;
		long c = strtol(p, &end, 10);

		if (end == p)
			break;
		v = xgrow(v, n, &cap, sizeof(*v));
		v[n++] = c;
		p = *end == ',' ? end + 1 : end;
	}
	qsort(v, n, sizeof(*v), by_code);
	cc = xcalloc(n ? n : 1, sizeof(*cc));
	for (i = 0; i < n; i++) {
		if (!ncc || cc[ncc - 1].code != v[i])
			cc[ncc++].code = v[i];
		cc[ncc - 1].n++;
	}
	qsort(cc, ncc, sizeof(*cc), by_count);
	if (!ncc)
		r = buf_addch(out, '-');
	for (i = 0; i < ncc && !r; i++) {
		char item[64];

		xsnprintf(item, sizeof(item), "%s%ld x %zu", i ? ", " : "", cc[i].code, cc[i].n);
		/* The last one needs no room for the tail. */
		if (out->len - start + strlen(item) + (i + 1 < ncc ? CODES_TAIL_MAX : 0) > max)
			break;
		r = buf_adds(out, item);
		ranks += cc[i].n;
	}
	if (!r && i < ncc)
		r = buf_addf(out, "%s... %zu more codes (%zu ranks)", i ? ", " : "", ncc - i,
		             n - ranks);
	free(cc);
	free(v);
	return r;
}

enum jobs_launch_act jobs_launch_decide(const struct mjob *j, int launching, int code,
                                        int attempts_max)
{
	if (!launching)
		return JL_NONE;
	if (j->cancel_requested)
		return JL_CANCEL;
	if (code == EXIT_INVALID || code == EXIT_USAGE)
		return JL_FAIL_PRECHECKS;
	if (code == EXIT_UNAVAILABLE)
		return JL_OFFLINE;
	if (j->attempts + 1 >= attempts_max)
		return JL_FAIL_NO_RESOURCE;
	return JL_BACKOFF;
}

int jobs_host_cut_off(const char *routes, const char *(*state)(const char *iface, void *arg),
                      void *arg)
{
	const char *line = routes, *nl;
	int links = 0;

	/* The first line names the columns; each next one starts with its interface. */
	for (nl = strchr(line, '\n'); nl; nl = strchr(line, '\n')) {
		char iface[32];
		size_t n;

		line = nl + 1;
		n = strcspn(line, "\t \n");
		if (!n || n >= sizeof(iface))
			continue;
		memcpy(iface, line, n);
		iface[n] = '\0';
		if (!strcmp(iface, "lo"))
			continue;
		links++;
		{
			const char *st = state(iface, arg);

			if (!st || !strcmp(st, "up") || !strcmp(st, "unknown"))
				return 0;
		}
	}
	return links > 0;
}

struct jobs_probe_decision jobs_probe_decide(const struct mjob *j, int probe_max, long lost_ms,
                                             double now)
{
	struct jobs_probe_decision d = {JP_NONE, -1, -1, 0};
	int failed = j->node_status == JOB_FAILED || j->node_status == JOB_FAILED_SETUP;

	if (j->status == MJ_CANCELLING)
		return d;
	if (failed)
		d.status = j->node_status == JOB_FAILED ? MJ_FAILED : MJ_FAILED_SETUP;
	if (j->cancel_requested) {
		/* An end the task reached before the cancel stands; anything else is cancelled. */
		d.before_cancel = 1;
		if (j->node_status == JOB_SUCCEEDED && j->task_index + 1 >= j->ntasks)
			d.act = JP_SUCCEED;
		else if (failed)
			d.act = JP_FAIL;
		return d;
	}
	switch (j->node_status) {
	case JOB_SUCCEEDED:
		d.act = j->task_index + 1 < j->ntasks ? JP_NEXT_TASK : JP_SUCCEED;
		return d;
	case JOB_FAILED:
	case JOB_FAILED_SETUP:
		d.code = jobs_code_listed(j->exit_codes, j->recover_codes);
		d.act = d.code >= 0                     ? JP_RECOVER
		        : j->restarts < j->max_restarts ? JP_RESTART
		                                        : JP_FAIL;
		return d;
	case JOB_CANCELLED: d.act = JP_CANCELLED; return d;
	case JOB_FAILED_DRIVER: d.act = JP_RECOVER; return d;
	default:
		if (j->probe_error && *j->probe_error &&
		    (j->probe_gone || (j->probe_failures >= probe_max &&
		                       now - j->probe_since >= (double)lost_ms / 1000)))
			d.act = JP_RECOVER;
		return d;
	}
}

int jobs_old_copy_gone(const struct mjob *j)
{
	return j->node_status >= 0 && job_status_terminal(j->node_status) &&
	       !(j->probe_error && *j->probe_error);
}

int jobs_backoff_over(const struct mjob *j, const struct mj_cleanup *cu, size_t n, double now)
{
	size_t i;

	if (j->next_try_at > now)
		return 0;
	for (i = 0; i < n; i++)
		if (cu[i].job_id == j->id && cu[i].cluster_job >= 0)
			return 0;
	return 1;
}

int jobs_run_ended(const struct mjob *j, int index, int nruns, int64_t run_job)
{
	if (index < nruns - 1 || mj_status_terminal(j->status))
		return 1;
	if (j->cluster_job != run_job)
		return 1;
	return j->node_status >= 0 && job_status_terminal(j->node_status);
}

/* Oldest end first, then lowest id. */
static int by_end(const void *a, const void *b)
{
	const struct jobs_kept *x = *(const struct jobs_kept *const *)a;
	const struct jobs_kept *y = *(const struct jobs_kept *const *)b;

	if (x->ended_at != y->ended_at)
		return x->ended_at < y->ended_at ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

size_t jobs_kept_gc_decide(struct jobs_kept *v, size_t n, double now, double retention_s,
                           uint64_t max_bytes)
{
	struct jobs_kept **order;
	uint64_t total = 0;
	size_t i, k = 0, gone = 0;

	for (i = 0; i < n; i++) {
		v[i].gc = JOBS_GC_KEEP;
		if (v[i].ended && retention_s >= 0 && now - v[i].ended_at >= retention_s) {
			v[i].gc = JOBS_GC_AGE;
			gone++;
		} else {
			total += v[i].bytes;
		}
	}
	if (!max_bytes || total <= max_bytes)
		return gone;
	order = xcalloc(n, sizeof(*order));
	for (i = 0; i < n; i++)
		if (v[i].ended && v[i].gc == JOBS_GC_KEEP)
			order[k++] = &v[i];
	qsort(order, k, sizeof(*order), by_end);
	for (i = 0; i < k && total > max_bytes; i++) {
		order[i]->gc = JOBS_GC_SIZE;
		total -= order[i]->bytes;
		gone++;
	}
	free(order);
	return gone;
}

int jobs_files_gc_decide(const struct jobs_files *f, double now, double grace_s)
{
	return !f->live && (f->jobs || now - f->mtime >= grace_s);
}

enum jobs_stop_action jobs_host_stop_action(int64_t holder)
{
	return holder == MJ_HOLDER_WATCH || holder == MJ_HOLDER_KEEP ? JOBS_STOP_SIGNAL
	                                                             : JOBS_STOP_WAIT;
}

double jobs_group_decide(struct jobs_group_member *v, size_t n, double now)
{
	double end = 0, next = 0;
	size_t k;
	int primaries = 0;

	for (k = 0; k < n; k++) {
		v[k].cancel = 0;
		if (!v[k].primary)
			continue;
		if (!v[k].ended)
			return 0;
		primaries++;
		if (v[k].ended_at > end)
			end = v[k].ended_at;
	}
	if (!primaries)
		return 0;
	for (k = 0; k < n; k++) {
		double due = end + (v[k].delay_s > 0 ? v[k].delay_s : 0);

		if (v[k].primary || v[k].ended || v[k].cancel_asked)
			continue;
		if (due <= now)
			v[k].cancel = 1;
		else if (!next || due < next)
			next = due;
	}
	return next;
}
