/*
 * A managed job's logs (`skiff jobs logs`, supervisor/jobs/jobs.h): its task logs,
 * followed across its pipeline tasks and recoveries, or its transitions and its launch
 * and cleanup log; the copy the controller keeps of them (kept.c) as a tar stream.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/jobs/jobs.h"
#include "bootstrap/launch/engine.h"
#include "bootstrap/sync/sync.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/launcher.h"
#include "state/node.h"
#include "lib/banned.h"

/* SkyPilot's tree glyphs (U+2514 U+2500 U+2500) and finishing mark (U+2713), UTF-8. */
#define TREE_LAST "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 "
#define CHECK_MARK "\xe2\x9c\x93 "

static int mj_exit_code(int status)
{
	switch (status) {
	case MJ_SUCCEEDED: return EXIT_OK;
	case MJ_CANCELLED: return EXIT_JOB_CANCELLED;
	default: return mj_status_terminal(status) ? EXIT_JOB_FAILED : EXIT_JOB_NOT_FINISHED;
	}
}

static int print_event(const struct mj_event *e, void *arg)
{
	char when[32];
	time_t t = (time_t)e->at;
	struct tm tm;

	(void)arg;
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s  %-18s %-14s %s\n", when, mj_status_name(e->status), mj_sched_name(e->sched),
	       e->reason);
	return 0;
}

int jobs_controller_logs(int64_t id)
{
	struct buf b = BUF_INIT(64 << 20);
	struct st_db *db;
	char *path = jobs_job_log(id);
	struct mjob j;
	int r;

	if (st_launcher_open(0, &db))
		return EXIT_FAIL;
	r = mj_get(db, id, &j);
	if (r) {
		st_close(db);
		free(path);
		error("no managed job %lld", (long long)id);
		return EXIT_JOB_NOT_FOUND;
	}
	printf("--- transitions of managed job %lld ---\n", (long long)id);
	mj_events(db, id, print_event, NULL);
	if (path && !buf_read_file(&b, path)) {
		printf("--- launch and cleanup log (%s) ---\n", path);
		fflush(stdout);
		/* A closed stdout (a pager quit) is no error. */
		(void)write_all(1, b.p, b.len);
	}
	r = mj_exit_code(j.status);
	if (r == EXIT_JOB_NOT_FINISHED)
		r = EXIT_OK;
	mjob_free(&j);
	buf_release(&b);
	free(path);
	st_close(db);
	return r;
}

/* A run begins with its ALIVE event; the first later event of another state ends it. */
static int collect_run(const struct mj_event *e, void *arg)
{
	struct jobs_runs *r = arg;
	char name[128];
	long long id;

	if (e->sched == MJS_ALIVE && r->n < JOBS_RUNS_MAX &&
	    sscanf(e->reason, "running on %127[^ ] (cluster job %lld)", name, &id) == 2 &&
	    jobs_name_ok(name)) {
		xsnprintf(r->cluster[r->n], sizeof(r->cluster[0]), "%s", name);
		r->at[r->n] = e->at;
		r->end[r->n] = r->end_node[r->n] = -1;
		r->job[r->n++] = id;
	} else if (e->sched != MJS_ALIVE && r->n && r->end[r->n - 1] < 0) {
		r->end[r->n - 1] = e->status;
		r->end_node[r->n - 1] = e->node_status;
	}
	return 0;
}

/* The exit codes the event that ended run `want` kept. */
struct run_codes {
	struct jobs_runs runs;
	int want;
	struct buf *out;
};

static int find_codes(const struct mj_event *e, void *arg)
{
	struct run_codes *c = arg;
	int n = c->runs.n, open = n && c->runs.end[n - 1] < 0;

	collect_run(e, &c->runs);
	if (open && c->runs.n == n && c->runs.end[n - 1] >= 0 && n - 1 == c->want) {
		buf_adds(c->out, e->exit_codes);
		return 1;
	}
	return 0;
}

int jobs_runs(struct st_db *db, int64_t id, struct jobs_runs *out)
{
	memset(out, 0, sizeof(*out));
	return mj_events(db, id, collect_run, out) ? -EIO : 0;
}

int jobs_runs_with_row(struct st_db *db, int64_t id, struct jobs_runs *out, struct mjob *j)
{
	int r = jobs_runs(db, id, out);

	return r ? r : mj_get(db, id, j);
}

int jobs_name_ok(const char *name)
{
	return *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

/* Every rank's setup.log then run.log under dir (dir/rank-N/...); 1 if any was there. */
static int print_ranks(const char *dir)
{
	static const char *const files[] = {"setup.log", "run.log"};
	int rank, shown = 0;
	size_t k;

	for (rank = 0; rank < 4096; rank++) {
		int any = 0;

		for (k = 0; k < ARRAY_SIZE(files); k++) {
			struct buf b = BUF_INIT((size_t)256 << 20);
			char *path = xasprintf("%s/rank-%d/%s", dir, rank, files[k]);

			if (!buf_read_file(&b, path)) {
				any = 1;
				fflush(stdout);
				/* A closed stdout (a pager quit) is no error. */
				(void)write_all(1, b.p, b.len);
			}
			buf_release(&b);
			free(path);
		}
		if (!any)
			break;
		shown++;
	}
	return shown > 0;
}

/*
 * Why the kept logs of job id are gone, when the retention removed them (the line kept in
 * kept/ID/REMOVED, caller frees); NULL otherwise.
 */
static char *removed_why(int64_t id)
{
	char *dir = jobs_kept_dir(id), *path, *why = NULL;
	struct buf b = BUF_INIT(4096);

	if (!dir)
		return NULL;
	path = xasprintf("%s/%s", dir, JOBS_KEPT_REMOVED);
	if (!buf_read_file(&b, path) && b.len) {
		b.p[strcspn(b.p, "\n")] = '\0';
		why = xstrdup(b.p);
	}
	buf_release(&b);
	free(path);
	free(dir);
	return why;
}

/* 1 if the controller keeps (or kept) logs of job id: else it ended before skiff kept any. */
static int kept_any(int64_t id)
{
	char *dir = jobs_kept_dir(id);
	int r = dir && !access(dir, F_OK);

	free(dir);
	return r;
}

/* Says once (*said) that the logs of job id are gone, and why. */
static void say_gone(int64_t id, const char *cluster, int *said)
{
	char *why;

	if (*said)
		return;
	*said = 1;
	why = removed_why(id);
	if (why)
		fprintf(stderr, "logs of managed job %lld were removed %s\n", (long long)id, why);
	else
		fprintf(stderr, "(cluster %s of managed job %lld is gone, and its logs with it)\n",
		        cluster, (long long)id);
	free(why);
}

/* What fd holds, from its start, to fd to; a closed stdout (a pager quit) is no error. */
static void replay(int fd, int to)
{
	char buf[65536];
	ssize_t n;

	if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write_all(to, buf, (size_t)n))
			break;
}

/*
 * An unnamed file for a job's printed logs, which may be as large as the job made them:
 * on disk beside the kept copies ($SKIFF_HOME), else in memory.
 */
static int scratch_fd(void)
{
	const char *home = skiff_home();
	int fd = home ? open(home, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;

	return fd >= 0 ? fd : memfd_create("skiff-jobs-logs", MFD_CLOEXEC);
}

/*
 * A live cluster's logs of job, followed or printed. An ended job's cluster is kept and
 * then taken down by the controller's cleanup while we ask (its logs kept first, then
 * the down: worker.c): printed logs are read whole, what the nodes say on stderr too,
 * before any is shown, and when the controller kept its copy meanwhile, that copy is
 * shown instead, so that no line comes twice and none is lost to the down.
 */
static void show_live(struct st_db *db, int64_t id, const char *cluster, int64_t job, int follow)
{
	int out = -1, err = -1, saved = -1, shown;
	char *kept;

	fflush(stdout);
	if (follow) {
		eng_logs(db, cluster, job, ENG_LOGS_FOLLOW, -1, 1, NULL);
		return;
	}
	out = scratch_fd();
	err = scratch_fd();
	if (err >= 0)
		saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (out < 0 || saved < 0 || dup2(err, 2) < 0) {
		/* No room to hold them: printed as they come, as before. */
		if (out >= 0)
			close(out);
		if (err >= 0)
			close(err);
		if (saved >= 0)
			close(saved);
		eng_logs(db, cluster, job, ENG_LOGS_PRINT, -1, 1, NULL);
		return;
	}
	eng_logs(db, cluster, job, ENG_LOGS_PRINT, -1, out, NULL);
	dup2(saved, 2);
	close(saved);
	/* Kept meanwhile: that copy is whole (its exit code says nothing of a lost stream). */
	kept = jobs_kept_run_dir(id, cluster, job);
	shown = kept && print_ranks(kept);
	free(kept);
	if (!shown) {
		replay(err, 2);
		replay(out, 1);
	}
	close(out);
	close(err);
}

/*
 * A cluster job's logs: the copy the controller kept (once it ended), else the live
 * cluster's, else (a job that ended before skiff kept logs) what an older skiff saved in
 * ~/sky_logs/CLUSTER/JOB.
 */
static void show_run(struct st_db *db, int64_t id, const char *cluster, int64_t job, double at,
                     int follow, int *said)
{
	char *kept = jobs_kept_run_dir(id, cluster, job);
	const char *home = user_home();
	int shown = kept && print_ranks(kept);

	free(kept);
	if (shown)
		return;
	if (jobs_run_live(db, cluster, job, at)) {
		show_live(db, id, cluster, job, follow);
		return;
	}
	if (home && !kept_any(id)) {
		char *old = xasprintf("%s/sky_logs/%s/%lld", home, cluster, (long long)job);

		shown = print_ranks(old);
		free(old);
	}
	if (!shown)
		say_gone(id, cluster, said);
}

/*
 * SkyPilot's job driver prints this into run.log once the task has its resources
 * (sky/backends/task_codegen.py, _get_job_started_msg()); its smoke tests grep for it.
 */
static void say_started(void)
{
	printf(TREE_LAST "Job started. Streaming logs... (Ctrl-C to exit log streaming; job "
	                 "will not be killed)\n");
	fflush(stdout);
}

/* The status of the cluster job run k was, by what ended it; -1: its node lost it. */
static int run_status(const struct jobs_runs *r, int k)
{
	int node = r->end_node[k];

	if (node >= 0 && job_status_terminal(node) && node != JOB_FAILED_DRIVER)
		return node;
	switch (r->end[k]) {
	case MJ_STARTING: /* the next task: this one succeeded */
	case MJ_SUCCEEDED: return JOB_SUCCEEDED;
	case MJ_FAILED: return JOB_FAILED;
	case MJ_FAILED_SETUP: return JOB_FAILED_SETUP;
	case MJ_CANCELLING:
	case MJ_CANCELLED: return JOB_CANCELLED;
	default: return -1;
	}
}

/*
 * How run k failed, in the words of SkyPilot's job driver (task_codegen.py: add_epilogue()
 * and add_setup()): "ERROR: Job 1 failed with return code list: [1]", or "ERROR: Job 1's
 * setup failed. Failed workers: ...", with the ranks' exit codes its end kept.
 */
static void say_failed(struct st_db *db, int64_t id, const struct jobs_runs *r, int k, int status)
{
	struct run_codes *c = xcalloc(1, sizeof(*c));
	struct buf codes = BUF_INIT(0);
	const char *p;
	int rank, first = 1, c137 = 0, c139 = 0;
	long other = 0;

	c->want = k;
	c->out = &codes;
	mj_events(db, id, find_codes, c);
	free(c);
	if (status == JOB_FAILED_SETUP)
		printf("ERROR: Job %lld's setup failed.", (long long)r->job[k]);
	else
		printf("ERROR: Job %lld failed with return code list: [", (long long)r->job[k]);
	for (p = codes.p ? codes.p : "", rank = 0; *p; rank++) {
		size_t len = strcspn(p, ",");
		char *end;
		long v = strtol(p, &end, 10);
		int known = end != p;

		if (status == JOB_FAILED_SETUP) {
			/* SkyPilot lists the failed workers, not those it stopped (137). */
			if (known && v != 0 && v != 137)
				printf("%s(rank=%d, returncode=%ld)",
				       first ? " Failed workers: " : ", ", rank, v);
			first = first && !(known && v != 0 && v != 137);
		} else {
			printf("%s%.*s", rank ? ", " : "", (int)len, p);
			c137 |= known && v == 137;
			c139 |= known && v == 139;
			if (known && v != 137 && v != 0 && !other)
				other = v;
		}
		p += len;
		if (*p)
			p++;
	}
	if (status == JOB_FAILED_SETUP)
		printf("%s See error logs above for more details.\n", first ? "" : ".");
	else if (c137 && other)
		printf("] (A Worker failed with return code %ld, skiff cleaned up the processes on "
		       "other nodes with return code 137)\n",
		       other);
	else if (c139)
		printf("] (likely due to Segmentation Fault)\n");
	else
		printf("]\n");
	buf_release(&codes);
}

/*
 * Run k has ended: a failed one says so (as its run.log does in SkyPilot); a followed one
 * then ends as SkyPilot's log tail does, "Job finished (status: S)." (sky/skylet/log_lib.py),
 * or, when its node lost it, with what SkyPilot's `jobs logs` says then (sky/jobs/utils.py).
 */
static void say_ended(struct st_db *db, int64_t id, const struct jobs_runs *r, int k, int live)
{
	int status = run_status(r, k);

	if (status == JOB_FAILED || status == JOB_FAILED_SETUP)
		say_failed(db, id, r, k, status);
	if (live && status < 0)
		printf("The job cluster is preempted or failed.\n");
	else if (live)
		printf(CHECK_MARK "Job finished (status: %s).\n", job_status_name(status));
	fflush(stdout);
}

/*
 * Shows the job's task logs: each cluster job it ran as (pipeline tasks, recoveries) in
 * order, each begun and ended with SkyPilot's lines, following the current one until the
 * managed job ends. A job that has not ended is followed as SkyPilot streams it; one that
 * has (or with !follow) is shown as SkyPilot replays its logs. Returns the `logs` exit code.
 */
int jobs_follow_logs(int64_t id, int follow)
{
	struct st_db *db;
	int shown = 0, rc = EXIT_JOB_NOT_FINISHED, waited = 0, said = 0, live = -1, ending = -1;

	if (st_launcher_open(0, &db))
		return EXIT_FAIL;
	for (;;) {
		struct jobs_runs *runs = xcalloc(1, sizeof(*runs));
		struct mjob j;

		if (mj_get(db, id, &j)) {
			error("no managed job %lld", (long long)id);
			free(runs);
			rc = EXIT_JOB_NOT_FOUND;
			break;
		}
		if (live < 0)
			live = follow && !mj_status_terminal(j.status);
		jobs_runs(db, id, runs);
		if (ending >= 0 && ending < runs->n && runs->end[ending] >= 0) {
			say_ended(db, id, runs, ending, live);
			ending = -1;
		}
		if (shown < runs->n) {
			int last = shown == runs->n - 1;

			say_started();
			show_run(db, id, runs->cluster[shown], runs->job[shown], runs->at[shown],
			         follow && last && !mj_status_terminal(j.status), &said);
			ending = shown++;
			mjob_free(&j);
			free(runs);
			continue;
		}
		free(runs);
		if (mj_status_terminal(j.status) || !follow) {
			rc = mj_exit_code(j.status);
			if (!mj_status_terminal(j.status)) {
				if (rc == EXIT_JOB_NOT_FINISHED)
					rc = EXIT_OK;
			} else if (live) {
				/* SkyPilot's stream_logs_by_id() (sky/jobs/utils.py) ends so. */
				printf(CHECK_MARK "Managed job finished: %lld (status: %s).\n",
				       (long long)id, mj_status_name(j.status));
			} else if (shown) {
				printf(CHECK_MARK "Job finished (status: %s).\n",
				       mj_status_name(j.status));
			} else {
				printf("Job %lld is already in terminal state %s. For more details, "
				       "run: skiff jobs logs --controller %lld\n",
				       (long long)id, mj_status_name(j.status), (long long)id);
				if (j.status != MJ_SUCCEEDED && j.status != MJ_CANCELLED)
					printf("Failure reason: %s\n", j.reason);
			}
			mjob_free(&j);
			break;
		}
		if (waited % 40 == 39 && !jobs_controller_pid())
			jobs_controller_kick();
		if (!waited++ || (waited % 40) == 0)
			fprintf(stderr, "Waiting for managed job %lld (status: %s)\n",
			        (long long)id, mj_status_name(j.status));
		mjob_free(&j);
		poll_ms(250);
	}
	st_close(db);
	return rc;
}

struct latest {
	const char *name;
	int64_t id;
};

static int latest_row(const struct mjob *j, void *arg)
{
	struct latest *l = arg;

	if ((!l->name || !strcmp(j->name, l->name)) && j->id > l->id)
		l->id = j->id;
	return 0;
}

int64_t jobs_latest(struct st_db *db, const char *name)
{
	struct latest l = {name, 0};

	mj_each(db, 0, MJ_ANY, latest_row, &l);
	return l.id;
}

/* Copies the tree src (directories and regular files) to dst, created 0700. 0 or -errno. */
static int copy_tree(const char *src, const char *dst)
{
	DIR *d = opendir(src);
	struct dirent *de;
	int r;

	if (!d)
		return -errno;
	r = mkdir_p(dst, 0700);
	while (!r && (de = readdir(d))) {
		char *from, *to;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		from = xasprintf("%s/%s", src, de->d_name);
		to = xasprintf("%s/%s", dst, de->d_name);
		if (lstat(from, &st) < 0) {
			r = -errno;
		} else if (S_ISDIR(st.st_mode)) {
			r = copy_tree(from, to);
		} else if (S_ISREG(st.st_mode)) {
			struct buf b = BUF_INIT(0);

			r = buf_read_file(&b, from);
			if (!r)
				r = write_file_atomic(to, b.p ? b.p : "", b.len, 0600);
			buf_release(&b);
		}
		if (r)
			error("cannot copy '%s' to '%s': %s", from, to, strerror(-r));
		free(from);
		free(to);
	}
	closedir(d);
	return r;
}

int jobs_sync_down(int64_t id)
{
	return jobs_sync_down_to(id, NULL);
}

int jobs_sync_down_to(int64_t id, const char *root)
{
	struct jobs_runs *runs = xcalloc(1, sizeof(*runs));
	const char *home = root ? root : user_home();
	struct st_db *db;
	struct mjob j;
	int i, rc = EXIT_OK, said = 0;

	if (st_launcher_open(0, &db)) {
		free(runs);
		return EXIT_FAIL;
	}
	if (mj_get(db, id, &j)) {
		error("no managed job %lld", (long long)id);
		rc = EXIT_JOB_NOT_FOUND;
		goto out;
	}
	mjob_free(&j);
	jobs_runs(db, id, runs);
	if (!runs->n)
		info("managed job %lld has not run yet: no logs", (long long)id);
	for (i = 0; i < runs->n; i++) {
		struct buf where = BUF_INIT(0);
		char *kept = jobs_kept_run_dir(id, runs->cluster[i], runs->job[i]);
		char *dst = xasprintf("%s%s/%s/%lld", home ? home : "~", root ? "" : "/sky_logs",
		                      runs->cluster[i], (long long)runs->job[i]);
		struct stat st;

		if (kept && !stat(kept, &st) && S_ISDIR(st.st_mode)) {
			/* The controller's copy: the cluster may be gone, the node may have none.
			 */
			if (!home) {
				error("no home directory to put ~/sky_logs in");
				rc = EXIT_FAIL;
			} else if (copy_tree(kept, dst))
				rc = EXIT_FAIL;
			else if (!root)
				printf("logs synced to %s\n", dst);
		} else if (jobs_run_live(db, runs->cluster[i], runs->job[i], runs->at[i])) {
			if (root ? eng_sync_down_to(db, runs->cluster[i], runs->job[i], dst, &where)
			         : eng_sync_down(db, runs->cluster[i], runs->job[i], &where))
				rc = EXIT_FAIL;
			else if (!root)
				printf("logs synced to %s\n", where.p);
		} else if (!root && !kept_any(id) && !access(dst, F_OK)) {
			/* What an older skiff saved there when the cluster went. */
			printf("logs synced to %s\n", dst);
		} else {
			say_gone(id, runs->cluster[i], &said);
		}
		free(kept);
		free(dst);
		buf_release(&where);
	}
out:
	free(runs);
	st_close(db);
	return rc;
}

/* ---- the kept copy as a tar stream ------------------------------------------------------ */

/* Adds dir/rel (a directory of the kept tree) and everything below it to the archive. */
static int tar_add(struct archive *a, const char *dir, const char *rel)
{
	char *path = *rel ? xasprintf("%s/%s", dir, rel) : xstrdup(dir);
	DIR *d = opendir(path);
	struct dirent *de;
	int r = 0;

	if (!d) {
		r = error_errno("cannot open '%s'", path);
		free(path);
		return r;
	}
	while (!r && (de = readdir(d))) {
		char *sub, *full;
		struct stat st;
		struct archive_entry *e;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = *rel ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
		full = xasprintf("%s/%s", dir, sub);
		if (lstat(full, &st) < 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
			/* Gone meanwhile, or nothing the controller writes there: left out. */
			free(sub);
			free(full);
			continue;
		}
		e = archive_entry_new();
		archive_entry_set_pathname(e, sub);
		archive_entry_set_filetype(e, S_ISDIR(st.st_mode) ? AE_IFDIR : AE_IFREG);
		archive_entry_set_perm(e, S_ISDIR(st.st_mode) ? 0700 : 0600);
		archive_entry_set_mtime(e, st.st_mtime, 0);
		if (S_ISREG(st.st_mode)) {
			struct buf b = BUF_INIT(0);

			/* Read first: the size in the header is what is written. */
			r = buf_read_file(&b, full);
			if (r) {
				errno = -r;
				r = error_errno("cannot read '%s'", full);
			} else {
				archive_entry_set_size(e, (la_int64_t)b.len);
				if (archive_write_header(a, e) != ARCHIVE_OK ||
				    (b.len &&
				     archive_write_data(a, b.p, b.len) != (la_ssize_t)b.len))
					r = error("cannot write the tar stream: %s",
					          archive_error_string(a));
			}
			buf_release(&b);
		} else if (archive_write_header(a, e) != ARCHIVE_OK) {
			r = error("cannot write the tar stream: %s", archive_error_string(a));
		} else {
			r = tar_add(a, dir, sub);
		}
		archive_entry_free(e);
		free(sub);
		free(full);
	}
	closedir(d);
	free(path);
	return r;
}

int jobs_kept_tar(int64_t id, int fd)
{
	char *dir = jobs_kept_dir(id);
	struct stat st;
	int r;

	if (!dir || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		error("no logs are kept of managed job %lld", (long long)id);
		free(dir);
		return -ENOENT;
	}
	r = jobs_tar_dir(dir, fd);
	free(dir);
	return r;
}

int jobs_tar_dir(const char *dir, int fd)
{
	struct archive *a;
	int r;

	a = archive_write_new();
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_fd(a, fd) != ARCHIVE_OK) {
		r = error("cannot write the tar stream: %s", archive_error_string(a));
		archive_write_free(a);
		return r < 0 ? -EIO : r;
	}
	r = tar_add(a, dir, "");
	if (archive_write_close(a) != ARCHIVE_OK && !r)
		r = error("cannot write the tar stream: %s", archive_error_string(a));
	archive_write_free(a);
	return r ? -EIO : 0;
}

int jobs_kept_untar(int fd, const char *dir)
{
	struct archive *a = archive_read_new(), *w = archive_write_disk_new();
	struct archive_entry *e;
	uint64_t total = 0;
	int r = 0, rc;

	r = mkdir_p(dir, 0700);
	if (r) {
		errno = -r;
		r = error_errno("cannot create '%s'", dir);
		goto out;
	}
	archive_read_support_format_tar(a);
	/* Paths are made absolute under dir here, after the member's own was checked. */
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                                          ARCHIVE_EXTRACT_SECURE_SYMLINKS |
	                                          ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME);
	if (archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK) {
		r = error("cannot read the tar stream: %s", archive_error_string(a));
		goto out;
	}
	while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *why = NULL;
		char *name = xstrdup(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
		int type = archive_entry_filetype(e);
		const void *blk;
		size_t len;
		la_int64_t off;
		char *full;

		/* A directory's name may end in '/'; past that, a plain relative path. */
		while (len = strlen(name), len > 1 && name[len - 1] == '/')
			name[len - 1] = '\0';
		if (sync_path_check(name, &why)) {
			r = error("tar member '%.200s' refused: %s", name, why);
			free(name);
			break;
		}
		total += (uint64_t)(archive_entry_size(e) > 0 ? archive_entry_size(e) : 0);
		if ((type != AE_IFREG && type != AE_IFDIR) || archive_entry_hardlink(e))
			r = error("tar member '%.200s' refused: not a file or a directory", name);
		else if (total > JOBS_KEPT_TAR_MAX_BYTES)
			r = error("the tar stream holds more than %llu bytes",
			          (unsigned long long)JOBS_KEPT_TAR_MAX_BYTES);
		if (r) {
			free(name);
			break;
		}
		full = xasprintf("%s/%s", dir, name);
		archive_entry_set_pathname(e, full);
		archive_entry_set_perm(e, type == AE_IFDIR ? 0700 : 0600);
		free(full);
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			r = error("cannot extract '%.200s': %s", name, archive_error_string(w));
		} else {
			while ((rc = archive_read_data_block(a, &blk, &len, &off)) == ARCHIVE_OK)
				if (archive_write_data_block(w, blk, len, off) != ARCHIVE_OK)
					break;
			archive_write_finish_entry(w);
			if (rc != ARCHIVE_EOF)
				r = error("cannot extract '%.200s': %s", name,
				          archive_error_string(a));
		}
		free(name);
		if (r)
			break;
	}
	if (!r && rc != ARCHIVE_EOF)
		r = error("corrupt tar stream: %s", archive_error_string(a));
out:
	archive_read_free(a);
	archive_write_close(w);
	archive_write_free(w);
	return r ? -EIO : 0;
}

/* The member of a group that task names (its name, else its index), or NULL. */
static const struct mjob *member_named(const struct mjob *m, size_t n, const char *task)
{
	size_t k;
	long idx;

	for (k = 0; k < n; k++)
		if (!strcmp(m[k].task_name, task))
			return &m[k];
	if (parse_long(task, 0, INT_MAX, &idx))
		return NULL;
	for (k = 0; k < n; k++)
		if (m[k].group_task == idx)
			return &m[k];
	return NULL;
}

int jobs_logs_task(int64_t id, const char *task, int follow)
{
	struct st_db *db;
	struct mjob j, *m = NULL;
	const struct mjob *pick;
	size_t n = 0, k;
	int rc = EXIT_FAIL, *status = NULL, *primary = NULL;

	if (st_launcher_open(0, &db))
		return EXIT_FAIL;
	if (mj_get(db, id, &j)) {
		st_close(db);
		error("no managed job %lld", (long long)id);
		return EXIT_JOB_NOT_FOUND;
	}
	/* A member's own id (not the group's) is a job of one task, as any other. */
	if (!j.group_id || j.group_id != id) {
		int single = !task;

		if (task)
			error("job %lld is not a job group: it has no task '%s' to pick (its logs: "
			      "'skiff jobs logs %lld')",
			      (long long)id, task, (long long)id);
		mjob_free(&j);
		st_close(db);
		return single ? jobs_follow_logs(id, follow) : EXIT_USAGE;
	}
	mjob_free(&j);
	if (mj_group(db, id, &m, &n) || !n)
		goto out;
	if (task) {
		pick = member_named(m, n, task);
		if (!pick) {
			error("job group %s (job %lld) has no task '%s': give a task's name or its "
			      "index (0 to %zu)",
			      m[0].group_name, (long long)id, task, n - 1);
			rc = EXIT_JOB_NOT_FOUND;
			goto out;
		}
		id = pick->id;
		st_close(db);
		db = NULL;
		rc = jobs_follow_logs(id, follow);
		goto out;
	}
	if (n > 1)
		fprintf(stderr,
		        "Hint: This job has %zu tasks. Use 'skiff jobs logs %lld TASK' to view logs "
		        "for a specific task (TASK can be task ID or name).\n",
		        n, (long long)id);
	/* Each member in turn: one that follows ends before the next is shown. */
	for (k = 0; k < n; k++) {
		printf("==> task %d (%s), job %lld <==\n", m[k].group_task, m[k].task_name,
		       (long long)m[k].id);
		fflush(stdout);
		jobs_follow_logs(m[k].id, follow);
	}
	/* The group's end, from its members' as they are now. */
	for (k = 0; k < n; k++)
		mjob_free(&m[k]);
	free(m);
	m = NULL;
	if (mj_group(db, id, &m, &n) || !n)
		goto out;
	status = xcalloc(n, sizeof(*status));
	primary = xcalloc(n, sizeof(*primary));
	for (k = 0; k < n; k++) {
		status[k] = m[k].status;
		primary[k] = m[k].group_primary;
	}
	rc = mj_exit_code(mj_group_status(status, primary, n));
	if (!follow && rc == EXIT_JOB_NOT_FINISHED)
		rc = EXIT_OK;
out:
	for (k = 0; k < n; k++)
		mjob_free(&m[k]);
	free(m);
	free(status);
	free(primary);
	st_close(db);
	return rc;
}

int jobs_logs_resolve(const struct jobs_logs_req *req, int64_t *id)
{
	struct st_db *db;
	struct mjob j;

	*id = req->id;
	if (*id)
		return EXIT_OK;
	/* SkyPilot's default: the newest job (of that name, with -n). */
	if (st_launcher_open(0, &db))
		return EXIT_FAIL;
	*id = jobs_latest(db, req->name);
	/* The newest of a job group's members stands for its group. */
	if (*id && !mj_get(db, *id, &j)) {
		if (j.group_id)
			*id = j.group_id;
		mjob_free(&j);
	}
	st_close(db);
	if (*id)
		return EXIT_OK;
	if (req->name)
		error("no managed job named %s", req->name);
	else
		error("no managed jobs");
	return EXIT_JOB_NOT_FOUND;
}

int jobs_logs_run(const struct jobs_logs_req *req, int64_t id, int to_tar)
{
	if (req->sync_down)
		return to_tar ? jobs_host_sync_down(id) : jobs_sync_down(id);
	if (req->controller)
		return jobs_controller_logs(id);
	return jobs_logs_task(id, req->task, req->follow);
}
