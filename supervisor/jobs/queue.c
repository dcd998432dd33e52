/*
 * What `jobs queue` shows, as data: a controller's jobs at one moment (struct jobs_snap,
 * supervisor/jobs/jobs.h), read from its db here or sent as frames by a controller's host
 * (supervisor/jobs/serve.c to supervisor/jobs/remote.c). cmd/jobs.c formats it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto.h"
#include "lib/util.h"
#include "supervisor/jobs/jobs.h"
#include "lib/banned.h"

/* Appends every member of group gid (mj_group()) to s->members. */
static int add_members(struct st_db *db, int64_t gid, struct jobs_snap *s, size_t *alloc)
{
	struct mjob *m = NULL;
	size_t n = 0, k;

	if (mj_group(db, gid, &m, &n))
		return -EIO;
	for (k = 0; k < n; k++) {
		s->members = xgrow(s->members, s->nmembers, alloc, sizeof(*s->members));
		s->members[s->nmembers++] = m[k];
	}
	free(m);
	return 0;
}

int jobs_snap_load(struct st_db *db, int skip_finished, struct jobs_snap *s)
{
	char v[32];
	size_t i, alloc = 0;
	int64_t last = 0;
	int r;

	memset(s, 0, sizeof(*s));
	s->now = now_wall();
	mj_sched_counts(db, s->counts);
	mj_meta_get(db, "max_launching", v, sizeof(v));
	s->max_launching = (int)strtol(v, NULL, 10);
	mj_meta_get(db, "max_running", v, sizeof(v));
	s->max_running = (int)strtol(v, NULL, 10);
	if (!s->max_launching) {
		struct jobs_limits l;

		jobs_limits_compute(&l);
		s->max_launching = l.max_launching;
		s->max_running = l.max_running;
	}
	r = mj_list(db, skip_finished, MJ_ANY, &s->jobs, &s->njobs);
	/* A job group's members are listed together: each group's, once. */
	for (i = 0; !r && i < s->njobs; i++)
		if (s->jobs[i].group_id && s->jobs[i].group_id != last) {
			last = s->jobs[i].group_id;
			r = add_members(db, last, s, &alloc);
		}
	if (!r)
		r = mj_tasks(db, 0, &s->tasks, &s->ntasks);
	if (r) {
		jobs_snap_free(s);
		return -EIO;
	}
	return 0;
}

void jobs_snap_free(struct jobs_snap *s)
{
	size_t i;

	for (i = 0; i < s->njobs; i++)
		mjob_free(&s->jobs[i]);
	for (i = 0; i < s->nmembers; i++)
		mjob_free(&s->members[i]);
	free(s->jobs);
	free(s->members);
	mj_tasks_free(s->tasks, s->ntasks);
	memset(s, 0, sizeof(*s));
}

int jobs_snap_send(const struct jobs_snap *s, int (*fn)(const struct msg *m, void *arg), void *arg)
{
	struct msg m;
	size_t i;
	int k, r;

	msg_init(&m);
	msg_add(&m, "row", "meta");
	msg_addf(&m, "now", "%.17g", s->now);
	for (k = 0; k < MJS_N; k++)
		msg_addf(&m, "count", "%d=%d", k, s->counts[k]);
	msg_add_int(&m, "max_launching", s->max_launching);
	msg_add_int(&m, "max_running", s->max_running);
	r = fn(&m, arg);
	for (i = 0; !r && i < s->njobs + s->nmembers; i++) {
		int member = i >= s->njobs;

		msg_reset(&m);
		msg_add(&m, "row", member ? "member" : "job");
		mj_encode(member ? &s->members[i - s->njobs] : &s->jobs[i], &m);
		r = fn(&m, arg);
	}
	for (i = 0; !r && i < s->ntasks; i++) {
		msg_reset(&m);
		msg_add(&m, "row", "task");
		mj_task_encode(&s->tasks[i], &m);
		r = fn(&m, arg);
	}
	msg_release(&m);
	return r;
}

int jobs_snap_take(struct jobs_snap *s, const struct msg *m, size_t alloc[3])
{
	const char *row = msg_get(m, "row");
	size_t i;

	if (!row)
		return 0;
	if (!strcmp(row, "meta")) {
		msg_get_double(m, "now", &s->now);
		for (i = 0; i < m->n; i++) {
			int k, v;

			if (!strcmp(m->keys[i], "count") &&
			    sscanf(m->vals[i], "%d=%d", &k, &v) == 2 && k >= 0 && k < MJS_N)
				s->counts[k] = v;
		}
		{
			int64_t v;

			if (!msg_get_int(m, "max_launching", &v))
				s->max_launching = (int)v;
			if (!msg_get_int(m, "max_running", &v))
				s->max_running = (int)v;
		}
	} else if (!strcmp(row, "job")) {
		s->jobs = xgrow(s->jobs, s->njobs, &alloc[0], sizeof(*s->jobs));
		mj_decode(m, &s->jobs[s->njobs++]);
	} else if (!strcmp(row, "member")) {
		s->members = xgrow(s->members, s->nmembers, &alloc[1], sizeof(*s->members));
		mj_decode(m, &s->members[s->nmembers++]);
	} else if (!strcmp(row, "task")) {
		s->tasks = xgrow(s->tasks, s->ntasks, &alloc[2], sizeof(*s->tasks));
		mj_task_decode(m, &s->tasks[s->ntasks++]);
	}
	/* A row of a kind this build does not know (a newer host's) is passed over. */
	return 0;
}
