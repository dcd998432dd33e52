/*
 * Slurm's host steps: each node's supervisor in a job step of its own, started by the
 * launcher with `srun --overlap` and left running (bootstrap/infra/infra_slurm.h); the
 * check that a cluster's nodes are idle; and the release of an allocation (the steps
 * stopped, the nodes' homes removed, scancel). The provisioner is infra_slurm.c.
 */
#include "bootstrap/infra/infra_slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/fcall.h"
#include "bootstrap/infra/infra_internal.h"
#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

/* How long a new host step has to answer. */
#define HOST_WAIT_MS 30000

/* ---- host steps ------------------------------------------------------------------------ */

/* $SKIFF_HOME/slurm/CLUSTER (0700, created), or NULL (printed). */
static char *cluster_dir(const char *cluster)
{
	const char *home = skiff_home();
	char *slurm, *dir;
	int r;

	if (!home)
		return NULL;
	slurm = xasprintf("%s/slurm", home);
	dir = xasprintf("%s/%s", slurm, cluster);
	r = mkdir_p(home, 0700);
	if (!r)
		r = ensure_private_dir(slurm);
	if (!r)
		r = ensure_private_dir(dir);
	free(slurm);
	if (r) {
		errno = -r;
		error_errno("cannot create '%s'", dir);
		free(dir);
		return NULL;
	}
	return dir;
}

/* 1 if pid runs (not a zombie: a reaper may be slow) and started at st. */
static int proc_runs(pid_t pid, uint64_t st)
{
	char state;
	uint64_t start = proc_stat(pid, &state);

	return start && start == st && state && !strchr("ZXx", state);
}

/* The host step's srun (this machine's process) from its pid file, if it still runs. */
static pid_t host_pid(const char *pidfile)
{
	struct buf b = BUF_INIT(256);
	long long pid = 0;
	unsigned long long st = 0;
	pid_t r = 0;

	if (!buf_read_file(&b, pidfile) && sscanf(b.p, "%lld %llu", &pid, &st) == 2 && pid > 1 &&
	    proc_runs((pid_t)pid, (uint64_t)st))
		r = (pid_t)pid;
	buf_release(&b);
	return r;
}

static void host_stop(pid_t pid)
{
	uint64_t st = proc_start_time(pid);
	int i;

	/*
	 * The pid is the local wrapper sh, which leads its own session with srun (and the
	 * helper srun forks) in it. srun passes SIGTERM on to the step and ends it.
	 */
	kill(-pid, SIGTERM);
	for (i = 0; i < 500 && proc_runs(pid, st); i++)
		poll_ms(10);
}

/* The host step becomes `skiff init`. %1$s is the binary's shell word. */
static const char host_fmt[] = "exec %1$s init\n";

/* Starts `skiff init` in a step of its own on node nd; records its srun's pid. */
static int host_start(struct cnode *nd, const char *pidfile, const char *logfile)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct argv av;
	char *script = xasprintf(host_fmt, nd->exe);
	char line[64];
	pid_t pid;
	int fd, r, len;

	argv_init(&av);
	nd->r->diag_path = NULL; /* the wrapper's messages go to the log */
	r = nd->r->ops->build_argv(nd->r, script, 0, &av);
	free(script);
	if (r)
		goto out;
	fd = open(logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = error_errno("cannot open '%s'", logfile);
		goto out;
	}
	o.argv = av.v;
	o.fd_out = fd;
	o.err_to_out = 1;
	/* Its own session: it outlives this command, as the allocation does. */
	o.pgrp = SPAWN_SESSION_NEW;
	r = spawn(&o, &pid);
	close(fd);
	if (r) {
		errno = -r;
		r = error_errno("node %s: cannot start srun for its supervisor", nd->name);
		goto out;
	}
	len = snprintf(line, sizeof(line), "%ld %llu\n", (long)pid,
	               (unsigned long long)proc_start_time(pid));
	r = write_file_atomic(pidfile, line, (size_t)len, 0600);
	/* Not reaped: it runs until `down` or the end of the allocation. */
out:
	argv_release(&av);
	return r;
}

/* Waits until node nd's supervisor listens, or its host step is gone, or 30 s passed. */
static int host_wait(struct cnode *nd, const char *pidfile, const char *logfile)
{
	static const char wait_script[] = "i=0\n"
	                                  "while [ ! -S \"$HOME/.skiff/supervisor.sock\" ]; do\n"
	                                  "\ti=$((i + 1))\n"
	                                  "\t[ \"$i\" -le 40 ] || exit 3\n"
	                                  "\tsleep 0.05 2>/dev/null || sleep 1\n"
	                                  "done\n";
	int64_t end = now_ms() + HOST_WAIT_MS;
	int status = 0, r;

	for (;;) {
		r = runner_run(nd->r, wait_script, NULL, CL_NODE_CALL_MS, &status);
		if (r)
			return r;
		if (!status)
			return 0;
		if (!host_pid(pidfile)) {
			struct buf log = BUF_INIT(1 << 16);

			buf_read_file(&log, logfile);
			r = error("node %s: the job step holding its supervisor ended: %s",
			          nd->name, buf_last_line(&log));
			buf_release(&log);
			return r;
		}
		if (now_ms() > end)
			return error("node %s: its supervisor did not start within %d s (see '%s')",
			             nd->name, HOST_WAIT_MS / 1000, logfile);
	}
}

/*
 * Stops the node's supervisor, if one runs: SIGTERM to the pid in its lock file (when
 * that pid is a supervisor), then waits until it has exited. `skiff node down` does the
 * same but also waits until the process is reaped, which can take seconds where the
 * node's init reaps orphans slowly.
 */
static const char stop_script[] =
        "l=\"$HOME/.skiff/supervisor.lock\"\n"
        "p=$(head -n 1 \"$l\" 2>/dev/null)\n"
        "case $p in\n"
        "'' | *[!0-9]*) ;;\n"
        "*)\n"
        "\tif tr '\\000' ' ' <\"/proc/$p/cmdline\" 2>/dev/null | grep -q ' __supervisor'; then\n"
        "\t\tkill -TERM \"$p\" 2>/dev/null\n"
        "\t\ti=0\n"
        "\t\twhile [ \"$i\" -lt 1000 ] && [ -r \"/proc/$p/status\" ] &&\n"
        "\t\t\t! grep -q '^State:[[:space:]]*[ZX]' \"/proc/$p/status\" 2>/dev/null; do\n"
        "\t\t\ti=$((i + 1))\n"
        "\t\t\tsleep 0.01 2>/dev/null || sleep 1\n"
        "\t\tdone\n"
        "\tfi\n"
        "\t;;\n"
        "esac\n"
        "rm -f \"$HOME/.skiff/supervisor.sock\"\n";

int infra_slurm_hosts_up(struct clive *cl)
{
	char *dir = cluster_dir(cl->name);
	char **pidf, **logf;
	int *todo, r = 0, status = 0;
	size_t i;

	if (!dir)
		return -EIO;
	pidf = xcalloc(cl->n, sizeof(*pidf));
	logf = xcalloc(cl->n, sizeof(*logf));
	todo = xcalloc(cl->n, sizeof(*todo));
	for (i = 0; i < cl->n && !r; i++) {
		struct cnode *nd = &cl->nodes[i];
		pid_t pid;

		pidf[i] = xasprintf("%s/%d.pid", dir, nd->rank);
		logf[i] = xasprintf("%s/%d.log", dir, nd->rank);
		if (!nd->exe || !*nd->exe) {
			r = error("node %s: skiff is not installed there", nd->name);
			break;
		}
		pid = host_pid(pidf[i]);
		if (pid && !nd->sup_started)
			continue;
		if (pid)
			host_stop(pid);
		/*
		 * The bootstrap's `node up` started a supervisor outside any step that lasts:
		 * stop it (jobs keep running), so that the host step starts its own.
		 */
		r = runner_run(nd->r, stop_script, NULL, CL_NODE_CALL_MS, &status);
		if (!r && status)
			r = error("node %s: cannot stop the supervisor the bootstrap started",
			          nd->name);
		if (!r)
			r = host_start(nd, pidf[i], logf[i]);
		todo[i] = !r;
	}
	for (i = 0; i < cl->n && !r; i++)
		if (todo[i])
			r = host_wait(&cl->nodes[i], pidf[i], logf[i]);
	for (i = 0; i < cl->n; i++) {
		free(pidf[i]);
		free(logf[i]);
	}
	free(pidf);
	free(logf);
	free(todo);
	free(dir);
	return r;
}

int infra_slurm_busy(struct clive *cl)
{
	static const char *const keys[] = {"running", "setting_up", "pending"};
	size_t i, k;
	int busy = 0;

	/* The supervisor's status, as its frame says it: a count not said is not known 0. */
	for (i = 0; i < cl->n; i++) {
		struct cnode *nd = &cl->nodes[i];
		struct msg req, *v = NULL;
		char who[256], *script = nd->exe ? live_node_call_script(nd) : NULL;
		int n = -1, active = 1;

		msg_init(&req);
		msg_add(&req, "op", "status");
		xsnprintf(who, sizeof(who), "node %.200s", nd->name);
		if (script)
			n = fcall_many(nd->r, who, script, &req, &v, CL_NODE_CALL_MS);
		if (n > 0 && !msg_get(&v[n - 1], "error")) {
			active = 0;
			for (k = 0; k < ARRAY_SIZE(keys); k++) {
				int64_t c;

				active |= msg_get_int(&v[n - 1], keys[k], &c) || c != 0;
			}
		}
		busy += active;
		fcall_replies_free(v, n);
		msg_release(&req);
		free(script);
	}
	return busy;
}

/* ---- down ------------------------------------------------------------------------------ */

static int rm_dir_files(const char *dir)
{
	size_t i;
	int r = 0;

	/* Only what host steps leave: RANK.pid, RANK.log and their temp files. */
	for (i = 0; i < 100000; i++) {
		char *p = xasprintf("%s/%zu.pid", dir, i), *l = xasprintf("%s/%zu.log", dir, i);
		int gone = access(p, F_OK) && access(l, F_OK);

		unlink(p);
		unlink(l);
		free(p);
		free(l);
		if (gone)
			break;
	}
	if (rmdir(dir) < 0 && errno != ENOENT)
		r = error_errno("cannot remove '%s'", dir);
	return r;
}

int infra_slurm_release(struct clive *cl, const char *job)
{
	char *dir = cluster_dir(cl->name);
	int alive = infra_slurm_state(job, NULL), status = 0, r;
	size_t i;

	for (i = 0; dir && i < cl->n; i++) {
		char *pidfile = xasprintf("%s/%d.pid", dir, cl->nodes[i].rank);
		pid_t pid = host_pid(pidfile);

		/* The node's home goes while its host step, which runs in it, still runs. */
		if (alive > 0)
			runner_run(cl->nodes[i].r,
			           "cd / && rm -rf \"$HOME\"; rmdir \"${HOME%/*}\" 2>/dev/null; :",
			           NULL, CL_NODE_CALL_MS, &status);
		if (pid)
			host_stop(pid);
		free(pidfile);
	}
	r = alive != 0 ? infra_slurm_cancel(job) : 0;
	if (dir)
		rm_dir_files(dir);
	free(dir);
	return r;
}
