/*
 * Autostop, as SkyPilot defines it: after IDLE_MINUTES without activity the supervisor
 * runs the hook the infra installed (hooks/stop, or hooks/down with --down). Activity is
 * any job start, and at each check: a non-terminal job, or (wait_for jobs_and_ssh) a
 * login session on a pty. The setting is tied to the boot it was made in: a rebooted node
 * forgets it, and the launcher sends it again on start.
 *
 * Without a hook the node stops by itself: its jobs are cancelled and the supervisor
 * exits (what `skiff stop` does to a node). Either way the node db keeps which one fired
 * (kv autostop_fired: stop or down; autostop_fired_at), for the launcher's next look
 * (`node call` op autostop_state); a new setting clears it. Where no hook ran, the
 * setting itself stays until a new one or `node down --all` (sup_autostop_forget()): a
 * supervisor started again after it fired is armed again.
 *
 * The launcher may send the hooks with the setting ("hooks", then "hook_stop" and
 * "hook_down": a script each, "" for none): a container's kills its PID 1.
 *
 * No polling: the event loop sleeps until the deadline, checks once, and either fires or
 * moves the deadline to a full idle period after the last activity.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/env.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/db.h"
#include "state/node.h"
#include "supervisor/daemon.h"
#include "supervisor/supervisor.h"
#include "lib/proto.h"
#include "lib/banned.h"

#define HOOK_TIMEOUT_MS (3600 * 1000)
/* The most a hook sent by the launcher may hold: a script, not a payload. */
#define HOOK_BODY_MAX (64 << 10)

/* What a node does when autostop fires and no hook is installed ($0: this skiff). */
static const char default_action[] =
        "\"$0\" node cancel --all >/dev/null 2>&1; exec \"$0\" node down >/dev/null 2>&1";

static void set_deadline(struct sup *s)
{
	/* Every setting is checked where it enters; an out of range one here is off. */
	if (s->idle_minutes < 0 || !task_autostop_minutes_valid(s->idle_minutes)) {
		s->autostop_deadline = 0;
		return;
	}
	/* At most TASK_AUTOSTOP_MINUTES_MAX * 60000 (3.2e11) ms after now: no overflow. */
	s->autostop_deadline = s->last_active + (int64_t)(s->idle_minutes * 60000.0);
	if (s->autostop_deadline <= 0)
		s->autostop_deadline = 1;
}

static int parse_wait_for(const char *s)
{
	if (!strcmp(s, "jobs_and_ssh"))
		return WAIT_JOBS_AND_SSH;
	if (!strcmp(s, "jobs"))
		return WAIT_JOBS;
	if (!strcmp(s, "none"))
		return WAIT_NONE;
	return -1;
}

void sup_autostop_load(struct sup *s)
{
	char *boot = st_kv_get(s->db, NODE_KV_AUTOSTOP_BOOT);
	char *wf = st_kv_get(s->db, NODE_KV_AUTOSTOP_WAIT_FOR);

	s->idle_minutes = st_kv_get_double(s->db, NODE_KV_AUTOSTOP_IDLE, -1);
	s->autostop_down = (int)st_kv_get_double(s->db, NODE_KV_AUTOSTOP_DOWN, 0);
	s->wait_for = wf && parse_wait_for(wf) >= 0 ? parse_wait_for(wf) : WAIT_JOBS_AND_SSH;
	if (s->idle_minutes >= 0 && (!boot || strcmp(boot, s->boot))) {
		info("autostop: the setting was made before the last reboot; it is off until set "
		     "again");
		s->idle_minutes = -1;
		st_kv_set(s->db, NODE_KV_AUTOSTOP_IDLE, NULL);
	} else if (s->idle_minutes >= 0 && !task_autostop_minutes_valid(s->idle_minutes)) {
		warning("autostop: the stored idle time (%g minutes) is over %d; it is off until "
		        "set again",
		        s->idle_minutes, TASK_AUTOSTOP_MINUTES_MAX);
		s->idle_minutes = -1;
		st_kv_set(s->db, NODE_KV_AUTOSTOP_IDLE, NULL);
	}
	free(boot);
	free(wf);
	s->last_active = now_ms();
	set_deadline(s);
}

void sup_autostop_activity(struct sup *s)
{
	s->last_active = now_ms();
	set_deadline(s);
}

/* Login sessions: entries of /dev/pts other than ptmx. */
static int ssh_sessions(void)
{
	DIR *d = opendir("/dev/pts");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, "ptmx"))
			n++;
	closedir(d);
	return n;
}

static int active_jobs(struct sup *s)
{
	sqlite3_stmt *st = st_prepare(s->db, "SELECT count(*) FROM jobs WHERE status < 4");
	int n = 1; /* on error, count as busy: never stop a node by mistake */

	if (st && st_step(s->db, st) == 1)
		n = sqlite3_column_int(st, 0);
	if (st)
		sqlite3_reset(st);
	return n + (int)s->nrun;
}

static void fire(struct sup *s)
{
	const char *which = s->autostop_down ? "down" : "stop";
	char *hook = xasprintf("%s/%s", node_paths()->hooks, which);
	char *argv[] = {hook, NULL};
	char *dflt[] = {"/bin/sh", "-c", (char *)default_action, NULL, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct env env;
	char stamp[32];
	double idle = s->idle_minutes;
	pid_t pid;
	int r, has_hook;

	xsnprintf(stamp, sizeof(stamp), "%.3f", now_wall());
	/*
	 * This supervisor fires once: it is on its way out. A hook ends the node itself (a
	 * container's PID 1, an allocation): the launcher sets autostop again when it starts
	 * the node. Without one only the supervisor stops and the node stays, so the setting
	 * stays in the node db: a supervisor that a node command starts again afterwards (a
	 * submit that came just after it stopped) is armed again, never left running without.
	 */
	has_hook = !access(hook, X_OK);
	s->idle_minutes = -1;
	s->autostop_deadline = 0;
	if (st_begin(s->db) == 0) {
		st_kv_set(s->db, NODE_KV_AUTOSTOP_FIRED_AT, stamp);
		st_kv_set(s->db, NODE_KV_AUTOSTOP_FIRED, which);
		if (has_hook)
			st_kv_set(s->db, NODE_KV_AUTOSTOP_IDLE, NULL);
		if (st_commit(s->db))
			st_rollback(s->db);
	}
	if (has_hook) {
		info("autostop: idle for %g minute(s); running the %s hook", idle, which);
		o.argv = argv;
	} else {
		/* A path the shell can run ($0 would be the shell's own /proc/self/exe). */
		dflt[3] = getenv("SKIFF_EXE") ? getenv("SKIFF_EXE") : (char *)self_path(NULL);
		if (!dflt[3]) {
			error("autostop: cannot find skiff's own executable to stop the node");
			goto out;
		}
		info("autostop: idle for %g minute(s); no %s hook: cancelling the jobs and "
		     "stopping the supervisor",
		     idle, which);
		o.argv = dflt;
	}
	env_init(&env, 1);
	env_set(&env, "SKIFF_AUTOSTOP", which);
	o.envp = env.v;
	o.fd_out = s->log_fd;
	o.err_to_out = 1;
	o.pgrp = SPAWN_SESSION_NEW;
	r = spawn(&o, &pid);
	env_release(&env);
	if (r) {
		errno = -r;
		error_errno("autostop: cannot run '%s'", o.argv[0]);
		goto out;
	}
	s->hook_pid = pid;
	s->hook_deadline = now_ms() + HOOK_TIMEOUT_MS;
out:
	free(hook);
}

void sup_autostop_check(struct sup *s)
{
	int64_t now = now_ms();

	if (s->hook_pid && now >= s->hook_deadline) {
		warning("autostop: hook (pid %ld) ran past its timeout; killing it",
		        (long)s->hook_pid);
		kill(-s->hook_pid, SIGKILL);
		s->hook_deadline = now + 1000;
	}
	if (!s->autostop_deadline || now < s->autostop_deadline)
		return;
	if (s->wait_for != WAIT_NONE &&
	    (active_jobs(s) || (s->wait_for == WAIT_JOBS_AND_SSH && ssh_sessions()))) {
		sup_autostop_activity(s);
		return;
	}
	fire(s);
}

void sup_hook_reaped(struct sup *s, pid_t pid, int status)
{
	if (!pid || pid != s->hook_pid)
		return;
	s->hook_pid = 0;
	s->hook_deadline = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		info("autostop: hook finished");
	else
		warning("autostop: hook failed (%s %d)",
		        WIFEXITED(status) ? "exit status" : "signal",
		        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* A hook the launcher sent: a script ("#!..."), or "" for none. NULL if fine, else why not. */
static const char *bad_hook(const char *body)
{
	if (!*body)
		return NULL;
	if (strlen(body) > HOOK_BODY_MAX)
		return "too long for a script";
	if (!starts_with(body, "#!"))
		return "not a script (no #! line)";
	return NULL;
}

/* hooks/NAME holds body (0700), or is removed for "". */
static int put_hook(const char *name, const char *body)
{
	char *path = xasprintf("%s/%s", node_paths()->hooks, name);
	int r = 0;

	if (*body)
		r = write_file_atomic(path, body, strlen(body), 0700);
	else if (unlink(path) < 0 && errno != ENOENT)
		r = -errno;
	if (r) {
		errno = -r;
		error_errno("autostop: cannot write '%s'", path);
	}
	free(path);
	return r;
}

void sup_op_autostop(struct conn *c, const struct msg *req)
{
	static const char *const hooks[] = {"stop", "down"};
	struct sup *s = sup_conn_sup(c);
	const char *v;
	struct msg m;
	double idle = -1;
	int wait_for = s->wait_for, down = 0;
	char num[32];

	if (!msg_get(req, "cancel")) {
		if (msg_get_double(req, "idle_minutes", &idle) ||
		    !task_autostop_minutes_valid(idle))
			return sup_reply_error(
			        c, "bad idle minutes '%.40s': expected a number of minutes, 0..%d",
			        msg_get(req, "idle_minutes") ? msg_get(req, "idle_minutes") : "",
			        TASK_AUTOSTOP_MINUTES_MAX);
		v = msg_get(req, "wait_for");
		if (v && (wait_for = parse_wait_for(v)) < 0)
			return sup_reply_error(c,
			                       "bad wait_for '%s': expected jobs, jobs_and_ssh "
			                       "or none",
			                       v);
		if (!v)
			wait_for = WAIT_JOBS_AND_SSH;
		down = msg_get(req, "down") && strcmp(msg_get(req, "down"), "0");
	}
	for (size_t i = 0; msg_get(req, "hooks") && i < ARRAY_SIZE(hooks); i++) {
		char key[16];
		const char *why;

		xsnprintf(key, sizeof(key), "hook_%s", hooks[i]);
		v = msg_get(req, key) ? msg_get(req, key) : "";
		if ((why = bad_hook(v)))
			return sup_reply_error(c, "bad %s hook: %s", hooks[i], why);
		if (put_hook(hooks[i], v))
			return sup_reply_error(c, "cannot install the %s hook (see supervisor.log)",
			                       hooks[i]);
	}
	if (st_begin(s->db))
		return sup_reply_error(c, "node database error");
	st_kv_set(s->db, NODE_KV_AUTOSTOP_FIRED, NULL);
	if (idle < 0) {
		st_kv_set(s->db, NODE_KV_AUTOSTOP_IDLE, NULL);
	} else {
		xsnprintf(num, sizeof(num), "%.15g", idle);
		st_kv_set(s->db, NODE_KV_AUTOSTOP_IDLE, num);
		st_kv_set(s->db, NODE_KV_AUTOSTOP_DOWN, down ? "1" : "0");
		st_kv_set(s->db, NODE_KV_AUTOSTOP_WAIT_FOR,
		          wait_for == WAIT_JOBS   ? "jobs"
		          : wait_for == WAIT_NONE ? "none"
		                                  : "jobs_and_ssh");
		st_kv_set(s->db, NODE_KV_AUTOSTOP_BOOT, s->boot);
	}
	if (st_commit(s->db))
		return sup_reply_error(c, "node database error");
	s->idle_minutes = idle;
	s->autostop_down = down;
	s->wait_for = wait_for;
	sup_autostop_activity(s);
	msg_init(&m);
	msg_add(&m, "ok", "1");
	sup_reply(c, &m);
	msg_release(&m);
}

int sup_autostop_forget_in(struct st_db *db)
{
	static const char *const keys[] = {NODE_KV_AUTOSTOP_IDLE, NODE_KV_AUTOSTOP_FIRED,
	                                   NODE_KV_AUTOSTOP_FIRED_AT};
	size_t i, set = 0;
	int r;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		char *v = st_kv_get(db, keys[i]);

		set += v != NULL;
		free(v);
	}
	/* Nothing to forget: nothing written (a thousand nodes' down, each a WAL less). */
	if (!set)
		return 0;
	r = st_begin(db);
	if (!r) {
		for (i = 0; i < ARRAY_SIZE(keys); i++)
			st_kv_set(db, keys[i], NULL);
		r = st_commit(db);
		if (r)
			st_rollback(db);
	}
	return r;
}

int sup_autostop_forget(const char *db_path)
{
	struct st_db *db;
	int r;

	if (access(db_path, F_OK))
		return 0; /* never started: nothing was set */
	r = st_open(db_path, &st_node_schema, 0, &db);
	if (r)
		return r;
	r = sup_autostop_forget_in(db);
	st_close(db);
	return r;
}
