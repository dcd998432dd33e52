/*
 * The per-job shim: `skiff __shim ID`, started by the supervisor in its own session.
 *
 * Its life, as states and events:
 *
 *   state \ event   | child exited             | SIGTERM (cancel)         | grace over
 *   ----------------+--------------------------+--------------------------+-------------
 *   WAITING_GO      | -                        | exit, job stays PENDING  | -
 *   SETUP           | rc 0: RUN; else FAILED_SETUP | TERM tree, KILLING   | -
 *   RUN             | record SUCCEEDED/FAILED  | TERM tree, KILLING       | -
 *   KILLING         | record CANCELLED         | -                        | KILL tree
 *
 * A job's status stays PENDING until the shim is about to start its first step (the
 * runtime env's build, setup or run): a PENDING row whose shim is gone never ran anything,
 * and the supervisor queues it again (daemon.c).
 *
 * The shim is a subreaper, so a grandchild that left the job's process group (setsid,
 * double fork) is re-parented to it and can still be found and killed; every step also
 * carries the shim's tag in its environment, so that the supervisor finds what is left
 * of the job when the shim itself is killed (struct proc_scope, supervisor/node.h). Each
 * step's script is written to a file in the job's log dir (setup.sh, run.sh); bash is
 * given it as its -c argument when it is short (so that it execs the last command), a
 * plain command whose prelude is not asked for or would do nothing is exec'd with no shell
 * at all (the shell being the fallback: step_plain_words(), prelude_idle(), spawn's
 * argv_else), and
 * that text names the job's envs but holds none of their values (supervisor/script.h). The job's
 * stdout and stderr go straight to the log files (not through a pipe), so the job keeps writing its
 * logs even if the shim dies. The shim holds the node db open while it writes and for a
 * step's first SHIM_DB_IDLE_MS, not while it waits on a longer step; at its end the
 * process exit closes it (see out: in shim_main()).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/renv/renv.h"
#include "lib/env.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/node.h"
#include "supervisor/script.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

/* After the main process ends, leftovers get this long between SIGTERM and SIGKILL. */
#define LEFTOVER_GRACE_MS 2000
/* After that SIGKILL, what still lives this long is left behind (sweep()). */
#define SWEEP_GIVE_UP_MS 10000
/*
 * How often the sweep looks: a job's leftovers in its process group that are not our
 * children (in another session, or reparented elsewhere) give no event when they die.
 */
#define SWEEP_POLL_MS 10
/*
 * A step that still runs this long after its start has the node db closed under it
 * (db_idle()); one that ends sooner finds the connection open for its final word, so a
 * short job opens the database once, not twice.
 */
#define SHIM_DB_IDLE_MS 250

struct shim {
	int64_t id;
	struct job job;
	int sig_fd;
	int cancelled;    /* a cancel was requested and the tree was signalled */
	int64_t kill_at;  /* now_ms() when to SIGKILL; 0: not armed */
	pid_t main_pid;   /* the current step's process (setup or run) */
	int64_t deadline; /* now_ms() when the step times out (runtime env build); 0: none */
	int64_t idle_at;  /* now_ms() when to close the node db under the step; 0: none */
	int timed_out;
	int has_renv;
	struct renv_job renv;   /* the job's runtime env, once ready (holds its use lock) */
	char tag[PROC_TAG_MAX]; /* PROC_TAG_ENV=... in every step's environment (lib/proc.h) */
};

/*
 * Runs fn with the node db. The connection stays open while the shim is busy starting a
 * step (load, status, pid: three writes in a few milliseconds) and is closed once the
 * step has run for SHIM_DB_IDLE_MS, so that a thousand waiting shims hold no SQLite
 * memory (db_idle()).
 */
static struct st_db *shim_db;

static int with_db(int (*fn)(struct st_db *db, struct shim *sh, void *arg), struct shim *sh,
                   void *arg)
{
	const struct node_paths *p = node_paths();

	if (!shim_db && (!p || st_open(p->db, &st_node_schema, 0, &shim_db)))
		return -EIO;
	return fn(shim_db, sh, arg);
}

static void db_idle(void)
{
	st_close(shim_db);
	shim_db = NULL;
}

/*
 * with_db() for the writes a job's life depends on (its status, its final word): a write
 * that fails (a full disk) is tried again, every 2 s at most, for as long as the database
 * file exists. Meanwhile the shim lives on, so the job is neither stuck without a driver
 * nor recorded wrongly: its true result lands once space returns. Other results (0, or
 * -ESTALE when the row moved on) come back at once.
 */
static int with_db_retry(int (*fn)(struct st_db *db, struct shim *sh, void *arg), struct shim *sh,
                         void *arg)
{
	const struct node_paths *p = node_paths();
	enum log_level lvl = log_get_level();
	int r, delay = 50, warned = 0;

	while ((r = with_db(fn, sh, arg)) == -EIO && p && !access(p->db, F_OK)) {
		if (!warned++) {
			error("job %lld: cannot write to the node database (disk full?); trying "
			      "again until it can",
			      (long long)sh->id);
			/* The first failure said why; a line every 2 s would fill the disk more. */
			log_set_level(LOG_QUIET);
		}
		db_idle();
		poll(NULL, 0, delay);
		delay = delay < 1000 ? delay * 2 : 2000;
	}
	if (warned) {
		log_set_level(lvl);
		if (!r)
			info("job %lld: the node database takes writes again", (long long)sh->id);
	}
	return r;
}

static int db_load(struct st_db *db, struct shim *sh, void *arg)
{
	(void)arg;
	return st_job_get(db, sh->id, &sh->job);
}

struct status_arg {
	int status;
	const char *exit_codes;
	const char *reason;
};

static int db_set_status(struct st_db *db, struct shim *sh, void *arg)
{
	struct status_arg *a = arg;

	return st_job_set_status(db, sh->id,
	                         JOB_MASK(JOB_PENDING) | JOB_MASK(JOB_SETTING_UP) |
	                                 JOB_MASK(JOB_RUNNING),
	                         a->status, a->reason);
}

static int db_finish(struct st_db *db, struct shim *sh, void *arg)
{
	struct status_arg *a = arg;
	int r = st_job_finish(db, sh->id, a->status, a->exit_codes, a->reason);

	return r == -ESTALE ? 0 : r; /* already final (e.g. reconciled): first word wins */
}

static int db_set_proc(struct st_db *db, struct shim *sh, void *arg)
{
	(void)arg;
	return st_job_set_proc(db, sh->id, sh->main_pid, proc_start_time(sh->main_pid));
}

static int db_cancel_requested(struct st_db *db, struct shim *sh, void *arg)
{
	struct job j;
	int r = st_job_get(db, sh->id, &j);

	(void)arg;
	if (r)
		return 0;
	r = j.cancel_requested;
	job_free(&j);
	return r;
}

static const char *shell_path(void)
{
	/* Task scripts are written for bash; images without it still have a POSIX sh. */
	if (!access("/bin/bash", X_OK))
		return "/bin/bash";
	return "/bin/sh";
}

static int open_log(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		error_errno("job: cannot open log '%s'", path);
	free(path);
	return fd;
}

static void build_env(struct shim *sh, struct env *env, int with_gpus)
{
	char id[32];

	env_init(env, 1);
	/* The supervisor's own settings are not the job's business. */
	env_unset(env, "SKIFF_DEBUG");
	env_unset(env, "CUDA_VISIBLE_DEVICES");
	xsnprintf(id, sizeof(id), "%lld", (long long)sh->id);
	env_set(env, "SKIFF_JOB_ID", id);
	env_set(env, "SKYPILOT_INTERNAL_JOB_ID", id);
	env_set(env, "PYTHONUNBUFFERED", "1");
	env_blob_apply(env, sh->job.envs, sh->job.envs_len);
	if (with_gpus && sh->job.gpus > 0)
		env_set(env, "CUDA_VISIBLE_DEVICES", sh->job.gpu_ids);
	if (sh->has_renv)
		renv_job_apply(&sh->renv, env);
	/* Last, so that no job's env can take it: it is how the job's processes are found. */
	env_put(env, sh->tag);
}

/*
 * Writes script to LOG_DIR/NAME (0600). The shell reads it from the file: as an argument,
 * a script of 128 KiB or more would not pass exec. Returns the path (the caller frees it)
 * or NULL, printed.
 */
static char *write_script(struct shim *sh, const char *name, const char *script)
{
	char *path = xasprintf("%s/%s", sh->job.log_dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || write_all(fd, script, strlen(script))) {
		error_errno("job %lld: cannot write its script '%s'", (long long)sh->id, path);
		if (fd >= 0)
			close(fd);
		free(path);
		return NULL;
	}
	if (close(fd) < 0) {
		error_errno("job %lld: cannot write its script '%s'", (long long)sh->id, path);
		free(path);
		return NULL;
	}
	return path;
}

/*
 * Writes a step's script to LOG_DIR/NAME (0600): the task's script inside the prelude
 * that SkyPilot's task script has (supervisor/script.h), which puts back what skiff gives
 * the job (what env holds that the supervisor's own does not) once the profiles ran.
 * Returns the path (the caller frees it) or NULL, printed; *textp: the text (freed by the
 * caller, also on failure).
 */
static char *write_step(struct shim *sh, const char *log_name, const char *script,
                        const struct env *env, const char *cwd, char **textp)
{
	struct step_script ss = {script, 0, cwd, NULL, NULL, sh->job.profile};
	struct env base, pins;
	char name[64], *prefix = NULL, *text, *path;

	/* "run.log" -> "run.sh" */
	xsnprintf(name, sizeof(name), "%.*s.sh", (int)(strchr(log_name, '.') - log_name), log_name);
	env_init(&base, ss.profile);
	env_init(&pins, 0);
	if (ss.profile) /* without a profile, nothing can take the environment back */
		step_env_pins(&base, env, &pins, &prefix);
	ss.bash = !strcmp(shell_path(), "/bin/bash");
	ss.pins = &pins;
	ss.path_prefix = prefix;
	text = step_script_text(&ss);
	path = write_script(sh, name, text);
	*textp = text;
	free(prefix);
	env_release(&pins);
	env_release(&base);
	return path;
}

/*
 * 1 when the task shell's prelude (supervisor/script.h) would change nothing for a step
 * with env under this shell: no profile file for `[ -f ~/.bashrc ]` (~/.profile under a
 * plain sh) and nothing for `command -v conda` to find (a file of that name in a PATH
 * entry, executable or not, as bash takes one that is not when nothing else is found).
 * Its other lines put back what env already holds. A relative HOME or PATH entry would
 * be read from the job's directory: not idle then.
 */
static int prelude_idle(const struct env *env, int bash)
{
	const char *home = env_get(env, "HOME"), *path = env_get(env, "PATH"), *e, *colon;
	struct stat st;
	char *f;
	int idle;

	if (!home)
		home = own_account()->home;
	if (*home != '/' || !path)
		return 0;
	f = xasprintf("%s/%s", home, bash ? ".bashrc" : ".profile");
	idle = stat(f, &st) < 0 || !S_ISREG(st.st_mode);
	free(f);
	for (e = path; idle; e = colon + 1) {
		colon = strchrnul(e, ':');
		if (*e != '/')
			return 0;
		f = xasprintf("%.*s/conda", (int)(colon - e), e);
		idle = stat(f, &st) < 0 || S_ISDIR(st.st_mode);
		free(f);
		if (!*colon)
			break;
	}
	return idle;
}

static int start_step(struct shim *sh, const char *script, const char *log_name, int gpus,
                      char *const *cmd)
{
	char *argv[] = {(char *)shell_path(), NULL, NULL, NULL, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	const char *home = user_home();
	char *cwd = NULL, *file = NULL, *text = NULL, **words = NULL;
	struct env env;
	int fd, r;

	fd = open_log(sh->job.log_dir, log_name);
	if (fd < 0)
		return -EIO;
	build_env(sh, &env, gpus);
	if (cmd) /* the runtime env's build: the node's settings, not the job's */
		renv_conf_env_copy(&env);
	/* "~/x" is the node's own home (a cluster home's own workdir): the launcher cannot know it.
	 */
	if (sh->job.cwd && home && (!strcmp(sh->job.cwd, "~") || starts_with(sh->job.cwd, "~/")))
		cwd = node_tilde_path(sh->job.cwd + 1);
	o.cwd = cwd ? cwd : sh->job.cwd && *sh->job.cwd ? sh->job.cwd : home ? home : "/";
	/* SkyPilot's `cd ~/sky_workdir` of a task without a workdir: there when it exists. */
	if (sh->job.cwd_optional && access(o.cwd, X_OK))
		o.cwd = home ? home : "/";
	if (sh->has_renv && sh->renv.working_dir) /* Ray's rule: the job runs in working_dir */
		o.cwd = sh->renv.working_dir;
	if (!cmd) {
		file = write_step(sh, log_name, script, &env, o.cwd, &text);
		if (!file) {
			r = -EIO;
			goto out;
		}
		argv[1] = file;
		if (!strcmp(argv[0], "/bin/bash") && strlen(text) <= STEP_ARGV_TEXT_MAX) {
			argv[1] = "-c"; /* bash execs the last command: one process fewer */
			argv[2] = text;
			argv[3] = file; /* $0, and what bash names in its messages */
		}
		/*
		 * A plain command, where the prelude is not asked for or would do nothing: its
		 * program is exec'd, no shell first; the shell runs it as before if that exec
		 * fails (not found, no #! line...), and says why. PWD as the shell sets it.
		 */
		if (o.cwd[0] == '/' && step_env_shell_free(&env) &&
		    (!sh->job.profile || prelude_idle(&env, !strcmp(argv[0], "/bin/bash"))) &&
		    (words = step_plain_words(script))) {
			env_set(&env, "PWD", o.cwd);
			o.argv_else = argv;
		}
	}
	o.argv = cmd ? cmd : words ? words : argv;
	o.envp = env.v;
	o.fd_out = fd;
	o.err_to_out = 1;
	o.pgrp = SPAWN_SESSION_NEW;
	r = spawn(&o, &sh->main_pid);
	if (r) {
		char msg[512];
		int n;

		n = snprintf(msg, sizeof(msg), "skiff: error: cannot start the job in '%s': %s\n",
		             o.cwd, strerror(-r));
		if (n > 0)
			write_all(fd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	}
out:
	env_release(&env);
	close(fd);
	free(cwd);
	free(file);
	free(text);
	step_words_free(words);
	if (!r)
		with_db(db_set_proc, sh, NULL);
	sh->idle_at = now_ms() + SHIM_DB_IDLE_MS;
	return r;
}

/* Every process of the job (supervisor/node.h): the same sweep as the supervisor's. */
static void signal_job(struct shim *sh, int sig)
{
	struct proc_scope scope = {sh->main_pid, sh->tag, getpid()};

	proc_scope_signal(&scope, sig);
}

/* Signals every process of the job; arms SIGKILL after grace_ms. */
static void terminate(struct shim *sh, int64_t grace_ms)
{
	signal_job(sh, SIGTERM);
	if (!sh->kill_at)
		sh->kill_at = now_ms() + grace_ms;
}

/* Waits for the step's main process; returns its wait status. Handles cancel. */
static int wait_step(struct shim *sh)
{
	for (;;) {
		struct pollfd pfd = {sh->sig_fd, POLLIN, 0};
		int timeout = -1, status;
		struct signalfd_siginfo si;
		pid_t pid;

		if (sh->kill_at) {
			int64_t left = sh->kill_at - now_ms();

			timeout = left > 0 ? (int)left : 0;
		}
		if (sh->idle_at) {
			int64_t left = sh->idle_at - now_ms();

			if (left <= 0) {
				db_idle();
				sh->idle_at = 0;
				continue;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		if (sh->deadline && !sh->timed_out) {
			int64_t left = sh->deadline - now_ms();

			if (left <= 0) {
				sh->timed_out = 1;
				terminate(sh, LEFTOVER_GRACE_MS);
				continue;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
			return error_errno("shim: poll"), -1;
		if (sh->kill_at && now_ms() >= sh->kill_at) {
			signal_job(sh, SIGKILL);
			sh->kill_at = now_ms() + 1000; /* again, for anything that appeared since */
		}
		while (read(sh->sig_fd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT ||
			    si.ssi_signo == SIGHUP) {
				sh->cancelled = 1;
				terminate(sh, (int64_t)(sh->job.cancel_grace * 1000));
			}
		}
		/* Reap everything: our step and any re-parented orphan. */
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			if (pid == sh->main_pid)
				return status;
	}
}

/*
 * 1 while the shim has a child, running or not yet reaped. A subreaper's whole job is
 * below it (every orphan of it is re-parented here), so none left means none of the job
 * left outside its group; this needs no /proc, whose numbers may be another namespace's.
 */
static int have_children(void)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

/* 1 while a process of the step's group lives (its leader is main_pid). */
static int group_lives(const struct shim *sh)
{
	return sh->main_pid > 0 && (kill(-sh->main_pid, 0) == 0 || errno == EPERM);
}

/*
 * Kills and reaps whatever of the job is left once its main process is gone: SIGTERM,
 * SIGKILL after LEFTOVER_GRACE_MS, and after SWEEP_GIVE_UP_MS more the shim lets go of
 * what still will not die (a process in the D state, one of another user's): the job
 * has ended, and its end is not held up for ever.
 */
static void sweep(struct shim *sh)
{
	int64_t deadline = now_ms() + LEFTOVER_GRACE_MS, give_up = 0;
	int status;

	while (waitpid(-1, &status, WNOHANG) > 0)
		;
	if (!have_children() && !group_lives(sh))
		return;
	signal_job(sh, SIGTERM);
	for (;;) {
		while (waitpid(-1, &status, WNOHANG) > 0)
			;
		if (!have_children() && !group_lives(sh))
			return;
		if (!give_up && now_ms() >= deadline) {
			signal_job(sh, SIGKILL);
			give_up = now_ms() + SWEEP_GIVE_UP_MS;
		} else if (give_up && now_ms() >= give_up) {
			error("job %lld: some of its processes would not die in %d s after "
			      "SIGKILL; left behind",
			      (long long)sh->id, SWEEP_GIVE_UP_MS / 1000);
			return;
		}
		poll(NULL, 0, SWEEP_POLL_MS);
	}
}

static int setup_signals(struct shim *sh)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return error_errno("shim: sigprocmask");
	sh->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sh->sig_fd < 0)
		return error_errno("shim: signalfd");
	return 0;
}

static int finish(struct shim *sh, int status, const char *codes, const char *reason)
{
	struct status_arg a = {status, codes, reason};

	char *path;
	int fd;

	if (with_db_retry(db_finish, sh, &a))
		return error("job %lld: cannot record its final status %s", (long long)sh->id,
		             job_status_name(status));
	/*
	 * A follower (`node logs`) wakes on writes to the db's WAL, but a commit's WAL write
	 * comes a moment before the commit is visible. Closing a log file after the commit
	 * is an event (IN_CLOSE_WRITE on the log dir) that comes after it: the follower sees
	 * the final status at once instead of on its next re-check.
	 */
	if (sh->job.log_dir && *sh->job.log_dir) {
		path = xasprintf("%s/run.log", sh->job.log_dir);
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0)
			close(fd);
		free(path);
	}
	return 0;
}

/* Appends one line to the job's setup log. */
static void setup_log_line(struct shim *sh, const char *line)
{
	int fd = open_log(sh->job.log_dir, "setup.log");

	if (fd >= 0) {
		write_all(fd, line, strlen(line));
		write_all(fd, "\n", 1);
		close(fd);
	}
}

/*
 * The runtime env, before the setup script: ready at once on a cache hit (no process),
 * else built by `skiff __renv-build ID` as a step of its own, killed when
 * setup_timeout_seconds pass. Returns 0 when the job may go on; otherwise its final
 * status has been recorded (or it was cancelled meanwhile).
 */
static int renv_setup(struct shim *sh)
{
	const struct node_paths *p = node_paths();
	struct status_arg a = {JOB_SETTING_UP, NULL, NULL};
	struct buf err = BUF_INIT(1 << 16), reason = BUF_INIT(1024);
	char id[32], stepname[128], *log = xasprintf("%s/setup.log", sh->job.log_dir);
	char *argv[] = {(char *)self_path(NULL), "__renv-build", id, NULL};
	struct env env;
	char *path;
	int r = -1, tries, status, code, final = JOB_FAILED_SETUP;

	xsnprintf(id, sizeof(id), "%lld", (long long)sh->id);
	if (!p || renv_spec_from_blob(&sh->renv.spec, sh->job.renv, sh->job.renv_len)) {
		buf_adds(&reason, "runtime_env: the job's spec cannot be read");
		goto fail;
	}
	if (with_db(db_set_status, sh, &a))
		goto out; /* cancelled or finished meanwhile */
	/* The interpreter is searched in the job's own PATH. */
	build_env(sh, &env, 0);
	path = xstrdup(env_get(&env, "PATH") ? env_get(&env, "PATH") : "/usr/bin:/bin");
	env_release(&env);
	if (sh->renv.spec.timeout > 0)
		sh->deadline = now_ms() + (int64_t)sh->renv.spec.timeout * 1000;
	for (tries = 0; tries < 3; tries++) {
		r = renv_job_ready(&sh->renv, p->home, path, &err);
		if (r)
			break;
		if (!argv[0] || start_step(sh, NULL, "setup.log", 0, argv)) {
			buf_adds(&reason, "runtime_env: cannot start its build");
			free(path);
			goto fail;
		}
		status = wait_step(sh);
		sweep(sh);
		code = status_to_code(status);
		renv_step_get(sh->job.log_dir, stepname, sizeof(stepname));
		if (sh->cancelled || with_db(db_cancel_requested, sh, NULL)) {
			final = JOB_CANCELLED;
			buf_adds(&reason, "cancelled by the user during runtime_env setup");
			free(path);
			goto fail;
		}
		if (sh->timed_out) {
			buf_addf(&reason,
			         "runtime_env setup timed out after %ld s in step '%s' (raise "
			         "runtime_env.config.setup_timeout_seconds; see %s)",
			         sh->renv.spec.timeout, stepname, log);
			free(path);
			goto fail;
		}
		if (code) {
			buf_addf(&reason, "runtime_env setup failed in step '%s' (see %s)",
			         stepname, log);
			free(path);
			goto fail;
		}
	}
	free(path);
	sh->deadline = 0;
	if (r > 0 && !tries && sh->renv.key[0]) {
		char line[160];

		xsnprintf(line, sizeof(line), "skiff: runtime_env: env %.12s is built: reused",
		          sh->renv.key);
		setup_log_line(sh, line);
	}
	if (r < 0) {
		buf_addf(&reason, "skiff: error: %s", err.len ? err.p : "runtime_env setup failed");
		setup_log_line(sh, reason.p);
		buf_reset(&reason);
		buf_addf(&reason, "%.900s (see %s)", err.len ? err.p : "runtime_env setup failed",
		         log);
		goto fail;
	}
	if (r == 0) {
		buf_addf(&reason, "runtime_env: not ready after its build (see %s)", log);
		goto fail;
	}
	sh->has_renv = 1;
	r = 0;
	goto out;
fail:
	finish(sh, final, "", reason.p);
	r = -1;
out:
	buf_release(&err);
	buf_release(&reason);
	free(log);
	return r;
}

int shim_main(int64_t job_id)
{
	static struct shim sh; /* held to the end, and reachable for leak checkers: see out: */
	struct status_arg a = {0};
	char go, codes[32], reason[128];
	int status, code, r, nul;
	ssize_t n;

	sh = (struct shim){.id = job_id, .sig_fd = -1};
	renv_job_init(&sh.renv);
	st_config_brief();
	log_set_prog("skiff-shim");
	/* Its stderr is the supervisor's log: its lines carry the time and pid as those do. */
	log_set_fd(2, 1);
	/* Block the signals first: a cancel that arrives early is handled, not fatal. */
	if (setup_signals(&sh))
		return 1;
	/* Wait for the supervisor to commit our pid; EOF means it never did: do nothing. */
	do
		n = read(0, &go, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		return 0;
	nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul >= 0) {
		dup2(nul, 0);
		close(nul);
	}
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* The supervisor recorded the same pid and start time: it can find the job too. */
	proc_job_tag(getpid(), proc_start_time(getpid()), sh.tag);
	if (with_db(db_load, &sh, NULL))
		return error("job %lld: cannot load it from the node database", (long long)job_id),
		       1;
	if (sh.job.shim_pid != getpid())
		return error("job %lld belongs to shim %ld, not to us", (long long)job_id,
		             (long)sh.job.shim_pid),
		       1;
	if (sh.job.cancel_requested) {
		finish(&sh, JOB_CANCELLED, "", "cancelled by the user before it started");
		goto out;
	}
	if (mkdir_p(sh.job.log_dir, 0700)) {
		error_errno("job %lld: cannot create log dir '%s'", (long long)job_id,
		            sh.job.log_dir);
		finish(&sh, JOB_FAILED_DRIVER, "", "cannot create the log directory");
		goto out;
	}

	if (sh.job.renv_len && renv_setup(&sh))
		goto out; /* its final status is recorded */
	if (sh.job.setup && *sh.job.setup) {
		a.status = JOB_SETTING_UP;
		if (with_db_retry(db_set_status, &sh, &a))
			goto out; /* cancelled or finished meanwhile */
		r = start_step(&sh, sh.job.setup, "setup.log", 0, NULL);
		if (r) {
			finish(&sh, JOB_FAILED_SETUP, "", "cannot start the setup script");
			goto out;
		}
		status = wait_step(&sh);
		sweep(&sh);
		code = status_to_code(status);
		if (sh.cancelled || with_db(db_cancel_requested, &sh, NULL)) {
			finish(&sh, JOB_CANCELLED, "", "cancelled by the user during setup");
			goto out;
		}
		if (code) {
			xsnprintf(codes, sizeof(codes), "%d", code);
			xsnprintf(reason, sizeof(reason), "setup exited with status %d", code);
			finish(&sh, JOB_FAILED_SETUP, codes, reason);
			goto out;
		}
	}
	if (!sh.job.run || !*sh.job.run) {
		finish(&sh, JOB_SUCCEEDED, "0", NULL);
		goto out;
	}
	a.status = JOB_RUNNING;
	if (with_db_retry(db_set_status, &sh, &a))
		goto out;
	r = start_step(&sh, sh.job.run, "run.log", 1, NULL);
	if (r) {
		finish(&sh, JOB_FAILED, "127", "cannot start the run script");
		goto out;
	}
	status = wait_step(&sh);
	code = status_to_code(status);
	xsnprintf(codes, sizeof(codes), "%d", code);
	if (sh.cancelled && with_db(db_cancel_requested, &sh, NULL))
		finish(&sh, JOB_CANCELLED, codes, "cancelled by the user");
	else if (sh.cancelled)
		finish(&sh, JOB_FAILED_DRIVER, codes, "the job's shim was told to stop");
	else
		finish(&sh, code ? JOB_FAILED : JOB_SUCCEEDED, codes, NULL);
	sweep(&sh);
out:
	/*
	 * The process ends here with its connection, descriptors and memory held: the kernel
	 * takes them all at once, and the connection's locks with them (everything it wrote
	 * is committed; a close would not checkpoint either: NO_CKPT_ON_CLOSE). Freeing them
	 * one by one unmapped each emptied allocator group, and after the job's vfork each
	 * unmap is a TLB shootdown on every CPU the job ran on: 24 of a `true` job's 29.
	 */
	return 0;
}
