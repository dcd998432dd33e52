/*
 * What the managed-jobs commands and daemons share: paths, limits, the pool, waking the
 * controller. See supervisor/jobs/jobs.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "lib/buf.h"
#include "lib/config.h"
#include "lib/daemon.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "supervisor/jobs/jobs.h"
#include "lib/banned.h"

const struct jobs_paths *jobs_paths(void)
{
	static struct jobs_paths p;
	const char *home;

	if (p.dir)
		return &p;
	home = skiff_home();
	if (!home) {
		error("no state directory (set HOME or SKIFF_HOME)");
		return NULL;
	}
	p.dir = xasprintf("%s/jobs", home);
	p.lock = xasprintf("%s/controller.lock", p.dir);
	p.keeper = xasprintf("%s/keeper.lock", p.dir);
	p.log = xasprintf("%s/controller.log", p.dir);
	p.logs = xasprintf("%s/logs", p.dir);
	p.kept = xasprintf("%s/kept", p.dir);
	if (ensure_private_dir(home) || ensure_private_dir(p.dir) || ensure_private_dir(p.logs) ||
	    ensure_private_dir(p.kept))
		warning("cannot create '%s' and '%s'", p.logs, p.kept);
	return &p;
}

char *jobs_job_log(int64_t id)
{
	const struct jobs_paths *p = jobs_paths();

	return p ? xasprintf("%s/%lld.log", p->logs, (long long)id) : NULL;
}

char *jobs_kept_dir(int64_t id)
{
	const struct jobs_paths *p = jobs_paths();

	return p ? xasprintf("%s/%lld", p->kept, (long long)id) : NULL;
}

char *jobs_kept_run_dir(int64_t id, const char *cluster, int64_t job)
{
	const struct jobs_paths *p = jobs_paths();

	return p ? xasprintf("%s/%lld/%s/%lld", p->kept, (long long)id, cluster, (long long)job)
	         : NULL;
}

long jobs_env_long(const char *name, long def, long min, long max)
{
	const char *s = getenv(name);
	long v;

	if (!s || !*s)
		return def;
	if (parse_long(s, min, max, &v)) {
		warning("%s='%s' is not a number in %ld..%ld; using %ld", name, s, min, max, def);
		return def;
	}
	return v;
}

int jobs_use_pool(const char *infra)
{
	return (!infra || !*infra || !strcmp(infra, INFRA_DEFAULT)) &&
	       jobs_env_long("SKIFF_JOBS_LOCAL_POOL", 1, 0, 1);
}

int jobs_task_on_pool(const struct task *t, const char *infra)
{
	long nodes = t->num_nodes > 0 ? t->num_nodes : 1;

	return nodes == 1 && t->workdir.kind == TASK_WORKDIR_NONE && !t->nmounts &&
	       jobs_use_pool(infra);
}

char *jobs_task_id(double submitted_at, const char *name, int64_t id, int task)
{
	time_t at = (time_t)submitted_at;
	char stamp[32];
	struct tm tm;

	gmtime_r(&at, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d-%H-%M-%S", &tm);
	return xasprintf("sky-managed-%s_%s_%lld-%d", stamp, name && *name ? name : "job",
	                 (long long)id, task);
}

char *jobs_task_ids(double submitted_at, const char *name, int64_t id, int ntasks, int index,
                    const char *current)
{
	struct buf b = BUF_INIT(0);
	int i;

	for (i = 0; i < ntasks; i++) {
		char *t = jobs_task_id(submitted_at, name, id, i);

		buf_addf(&b, "%s%s", i ? "\n" : "", i == index && current ? current : t);
		free(t);
	}
	return buf_detach(&b, NULL);
}

void jobs_cluster_name(const struct mjob *j, int pool, char *out, size_t size)
{
	mj_cluster_name(j->id, j->task_index, j->recoveries, pool, out, size);
}

/*
 * The running limit: half the machine's memory over what one running job costs, measured
 * with tests/bench/jobs_bench.sh (docs/benchmarks.md): the controller's own RSS grows by
 * well under 1 KiB per running job; a job on the local pool costs its node about 180 KiB
 * (shim and task process). 256 KiB covers both with a margin.
 */
#define JOBS_COST_PER_RUNNING_JOB (256LL << 10)
#define JOBS_MAX_RUNNING_CAP 100000
#define JOBS_LAUNCHES_PER_CORE 4
/*
 * Pool jobs one launch worker launches, one after the other (tests/bench/jobs_bench.sh):
 * each saves the worker's process, its database and config loads; a batch's jobs wait
 * for the ones before them, about 10 ms each on the pool.
 */
#define JOBS_LAUNCH_BATCH 32

/*
 * SkyPilot sizes its controller's VM with jobs.controller.resources and derives its limits
 * from it; here the controller is this machine, and the same key sizes the limits as if
 * the machine had those CPUs and that memory (docs/config.md).
 */
static void controller_resources(struct jobs_limits *l)
{
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *cfg = NULL;
	char *path = config_file_path();
	double cpus, mem;

	if (path && !config_load_file(path, &cfg, &errs)) {
		config_controller_resources(cfg, &cpus, &mem);
		if (cpus > 0)
			l->cores = (int)ceil(cpus < 100000 ? cpus : 100000);
		if (mem > 0)
			l->mem_bytes = (long long)(mem < (1 << 24) ? mem * (1 << 30) : 1LL << 54);
	}
	yerr_print(&errs, stderr);
	yerr_release(&errs);
	cfg_free(cfg);
	free(path);
}

void jobs_limits_compute(struct jobs_limits *l)
{
	cpu_set_t set;
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	long long run;

	memset(l, 0, sizeof(*l));
	l->cores = sched_getaffinity(0, sizeof(set), &set) ? 1 : CPU_COUNT(&set);
	if (l->cores < 1)
		l->cores = 1;
	l->mem_bytes = pages > 0 && psize > 0 ? (long long)pages * psize : 1LL << 30;
	l->job_cost_bytes = JOBS_COST_PER_RUNNING_JOB;
	controller_resources(l);
	run = l->mem_bytes / 2 / l->job_cost_bytes;
	if (run > JOBS_MAX_RUNNING_CAP)
		run = JOBS_MAX_RUNNING_CAP;
	l->max_launching = (int)jobs_env_long("SKIFF_JOBS_MAX_LAUNCHING",
	                                      JOBS_LAUNCHES_PER_CORE * l->cores, 1, 100000);
	l->max_running = (int)jobs_env_long("SKIFF_JOBS_MAX_RUNNING", run > 0 ? run : 1, 1,
	                                    JOBS_MAX_RUNNING_CAP);
	l->launch_batch = (int)jobs_env_long("SKIFF_JOBS_LAUNCH_BATCH", JOBS_LAUNCH_BATCH, 1, 1000);
}

int jobs_lock_holder(const char *path)
{
	char buf[32] = "";
	int fd, pid = 0;
	ssize_t n;

	/* A lock we can take means nobody holds it: no controller. */
	if (!daemon_lock_held(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		long v;

		buf[n] = 0;
		buf[strcspn(buf, "\n")] = 0;
		if (!parse_long(buf, 1, INT_MAX, &v))
			pid = (int)v;
	}
	return pid;
}

int jobs_controller_pid(void)
{
	const struct jobs_paths *p = jobs_paths();

	return p ? jobs_lock_holder(p->lock) : 0;
}

int jobs_controller_kick(void)
{
	const struct jobs_paths *p = jobs_paths();
	char *argv[] = {"skiff", "__jobs-controller", NULL};
	int pid = jobs_controller_pid();
	pid_t child;

	if (pid > 0 && !kill(pid, SIGUSR1))
		return 0;
	if (!p)
		return error("cannot start the jobs controller: no state directory");
	/* It is detached (own session): never reaped by us, adopted by init. */
	return daemon_spawn(argv, p->log, -1, &child);
}
