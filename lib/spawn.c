#include "lib/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/util.h"
#include "lib/banned.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define DEFAULT_PATH "/usr/local/bin:/bin:/usr/bin"
/* The fallback fd sweep (kernels before 5.11) stops here even with a huge RLIMIT_NOFILE. */
#define SWEEP_MAX_FD 65536

/*
 * Everything the child needs, prepared before vfork(): between vfork and exec the child
 * only reads this and makes system calls (no malloc, no stdio, no locks). It shares our
 * memory, and this thread waits until it has exec'd or exited: it writes nothing of
 * ours but its own stack, below spawn()'s frame, and this thread's errno (read after
 * vfork only when it failed, and then no child ran), and never returns from child().
 */
struct prep {
	char *const *argv;
	char *const *envp;
	char **cands;      /* paths to try with execve(), NULL-terminated */
	char **cands_else; /* argv_else's, or NULL */
	int *keep;         /* keep_fds, sorted, unique */
	size_t n_keep;
	int src[3]; /* what goes on 0, 1, 2 */
	int devnull;
	int rep[2]; /* the report pipe: the child writes a struct report on failure */
	int max_fd;
	pid_t parent;
};

struct report {
	int step;
	int err;
};

extern char **environ;

/* ---- child side: async-signal-safe calls only ---------------------------------------- */

static _Noreturn void child_fail(const struct prep *p, int step, int err)
{
	struct report rep = {step, err};
	ssize_t n;

	/* Smaller than PIPE_BUF: written whole or not at all. */
	do
		n = write(p->rep[1], &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	_exit(127);
}

static void child_reset_signals(void)
{
	/* The kernel's struct sigaction, all zero: SIG_DFL, no flags, an empty mask. */
	unsigned long dfl[4] = {0};
	int sig;

	/*
	 * All signals are blocked (spawn() blocked them before vfork), so no handler of the
	 * parent's can run here. Ignored signals stay ignored across exec, so reset those too.
	 * The system call itself, as libc's posix_spawn does: libc's sigaction may take a
	 * lock or note the handler in memory this child shares with its parent. SIGKILL and
	 * SIGSTOP fail with EINVAL, which is fine. 8: the kernel's sigset_t, 64 signals.
	 */
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, dfl, NULL, 8);
}

/* Marks every fd >= 3 but keep[] close-on-exec. */
static void child_sweep_fds(const struct prep *p)
{
	unsigned int lo = 3, hi;
	size_t i;
	int fd;

	for (i = 0; i <= p->n_keep; i++) {
		hi = i < p->n_keep ? (unsigned int)p->keep[i] - 1 : ~0U;
		if (lo <= hi && syscall(SYS_close_range, lo, hi, CLOSE_RANGE_CLOEXEC) < 0)
			goto fallback;
		if (i < p->n_keep)
			lo = (unsigned int)p->keep[i] + 1;
	}
	return;
fallback:
	/* ENOSYS or EINVAL: older kernel. fcntl on a closed fd is a cheap EBADF. */
	for (fd = 3, i = 0; fd < p->max_fd; fd++) {
		while (i < p->n_keep && p->keep[i] < fd)
			i++;
		if (i < p->n_keep && p->keep[i] == fd)
			continue;
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
}

static void child_fds(const struct prep *p)
{
	int src[3], i, r;
	size_t k;

	/*
	 * A source that already sits on 0, 1 or 2 but belongs on another of them (a pipe
	 * end the kernel handed out as fd 0, fd_in == 1, ...) would be overwritten by an
	 * earlier dup2: move all of those above 2 first. Copies are CLOEXEC.
	 */
	memcpy(src, p->src, sizeof(src));
	for (i = 0; i < 3; i++) {
		if (src[i] >= 3 || src[i] == i)
			continue;
		src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
		if (src[i] < 0)
			child_fail(p, SPAWN_STEP_FDS, errno);
	}
	for (i = 0; i < 3; i++) {
		/* dup2 onto itself would leave FD_CLOEXEC set: clear it by hand. */
		r = src[i] == i ? fcntl(i, F_SETFD, 0) : dup2(src[i], i);
		if (r < 0)
			child_fail(p, SPAWN_STEP_FDS, errno);
	}
	for (k = 0; k < p->n_keep; k++)
		if (fcntl(p->keep[k], F_SETFD, 0) < 0)
			child_fail(p, SPAWN_STEP_FDS, errno);
	/* Fds someone opened without CLOEXEC (a library, our own parent) must not leak. */
	child_sweep_fds(p);
}

/*
 * Tries each candidate as execvp() would (async-signal-safe: the child's, and
 * spawn_replace()'s); returns the errno to report when none exec'd.
 */
static int exec_first(char **cands, char *const *argv, char *const *envp)
{
	char **c;
	int err = ENOENT, eacces = 0;

	/* execvp's rules: go on past ENOENT-like errors, report EACCES if any dir had it. */
	for (c = cands; *c; c++) {
		execve(*c, argv, envp);
		err = errno;
		if (err == EACCES)
			eacces = 1;
		else if (err != ENOENT && err != ENOTDIR && err != ELOOP && err != ENAMETOOLONG)
			return err;
	}
	return eacces ? EACCES : err;
}

static _Noreturn void child(const struct spawn_opts *o, const struct prep *p)
{
	sigset_t none;
	int err;

	child_reset_signals();
	if (o->pgrp == SPAWN_SESSION_NEW && setsid() < 0)
		child_fail(p, SPAWN_STEP_PGRP, errno);
	if (o->pgrp == SPAWN_PGRP_NEW && setpgid(0, 0) < 0)
		child_fail(p, SPAWN_STEP_PGRP, errno);
	if (o->death_sig) {
		if (prctl(PR_SET_PDEATHSIG, (unsigned long)o->death_sig, 0, 0, 0) < 0)
			child_fail(p, SPAWN_STEP_DEATHSIG, errno);
		/* The parent died before prctl: nobody is left to signal us. */
		if (getppid() != p->parent)
			_exit(127);
	}
	child_fds(p);
	if (o->cwd && chdir(o->cwd) < 0)
		child_fail(p, SPAWN_STEP_CHDIR, errno);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	err = exec_first(p->cands, p->argv, p->envp);
	if (p->cands_else)
		err = exec_first(p->cands_else, o->argv_else, p->envp);
	child_fail(p, SPAWN_STEP_EXEC, err);
}

/* ---- parent side --------------------------------------------------------------------- */

static const char *env_path(char *const *envp)
{
	for (; envp && *envp; envp++)
		if (starts_with(*envp, "PATH="))
			return *envp + 5;
	return DEFAULT_PATH;
}

/* The paths execve() will try, in order: argv[0] itself if it has a '/', else PATH's. */
static char **exec_candidates(const char *prog, char *const *envp)
{
	const char *path, *e, *colon;
	char **cands;
	size_t n = 1, k = 0;

	if (!*prog || strchr(prog, '/')) {
		cands = xcalloc(2, sizeof(*cands));
		cands[0] = xstrdup(prog);
		return cands;
	}
	path = env_path(envp);
	for (e = path; *e; e++)
		n += *e == ':';
	cands = xcalloc(n + 1, sizeof(*cands));
	for (e = path;; e = colon + 1) {
		colon = strchrnul(e, ':');
		/* An empty entry means the current directory. */
		if (colon == e)
			cands[k++] = xasprintf("./%s", prog);
		else
			cands[k++] = xasprintf("%.*s/%s", (int)(colon - e), e, prog);
		if (!*colon)
			break;
	}
	return cands;
}

int spawn_findable(const char *prog, char *const *envp)
{
	char **cands = exec_candidates(prog, envp ? envp : environ), **c;
	int found = 0;

	for (c = cands; *c; c++) {
		struct stat st;

		if (!found && !stat(*c, &st) && S_ISREG(st.st_mode) && !access(*c, X_OK))
			found = 1;
		free(*c);
	}
	free(cands);
	return found;
}

static void prep_free(struct prep *p)
{
	char **c;

	if (p->cands)
		for (c = p->cands; *c; c++)
			free(*c);
	free(p->cands);
	if (p->cands_else)
		for (c = p->cands_else; *c; c++)
			free(*c);
	free(p->cands_else);
	free(p->keep);
	if (p->devnull >= 0)
		close(p->devnull);
	if (p->rep[0] >= 0)
		close(p->rep[0]);
	if (p->rep[1] >= 0)
		close(p->rep[1]);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static int prep_keep_fds(const struct spawn_opts *o, struct prep *p)
{
	size_t i;

	p->keep = xcalloc(o->n_keep_fds ? o->n_keep_fds : 1, sizeof(*p->keep));
	for (i = 0; i < o->n_keep_fds; i++) {
		int fd = o->keep_fds[i];

		if (fd < 3)
			return -EINVAL;
		/* A closed number could be reused by our own report pipe: refuse it. */
		if (fcntl(fd, F_GETFD) < 0)
			return -EBADF;
		p->keep[i] = fd;
	}
	qsort(p->keep, o->n_keep_fds, sizeof(*p->keep), cmp_int);
	for (i = 0; i < o->n_keep_fds; i++)
		if (!p->n_keep || p->keep[p->n_keep - 1] != p->keep[i])
			p->keep[p->n_keep++] = p->keep[i];
	return 0;
}

static int prepare(const struct spawn_opts *o, struct prep *p)
{
	int want[3], i, fd, r;
	struct rlimit rl;

	memset(p, 0, sizeof(*p));
	p->devnull = p->rep[0] = p->rep[1] = -1;
	if (!o->argv || !o->argv[0] || o->fd_in < -1 || o->fd_out < -1 ||
	    (!o->err_to_out && o->fd_err < -1) || o->death_sig < 0 || o->death_sig >= NSIG ||
	    (o->n_keep_fds && !o->keep_fds) || (o->argv_else && !o->argv_else[0]))
		return -EINVAL;
	r = prep_keep_fds(o, p);
	if (r)
		return r;
	p->argv = o->argv;
	p->envp = o->envp ? o->envp : environ;
	p->cands = exec_candidates(o->argv[0], p->envp);
	if (o->argv_else)
		p->cands_else = exec_candidates(o->argv_else[0], p->envp);
	p->parent = getpid();
	p->max_fd = SWEEP_MAX_FD;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < SWEEP_MAX_FD)
		p->max_fd = (int)rl.rlim_cur;

	want[0] = o->fd_in;
	want[1] = o->fd_out;
	want[2] = o->err_to_out ? o->fd_out : o->fd_err;
	for (i = 0; i < 3; i++) {
		/* As with keep_fds: a closed number could become our report pipe. */
		if (want[i] >= 0 && fcntl(want[i], F_GETFD) < 0)
			return -EBADF;
		if (want[i] >= 0)
			continue;
		if (p->devnull < 0) {
			p->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
			if (p->devnull < 0)
				return -errno;
		}
		want[i] = p->devnull;
	}
	memcpy(p->src, want, sizeof(want));

	if (pipe2(p->rep, O_CLOEXEC) < 0)
		return -errno;
	/* The child dup2()s onto 0..2: its end of the report pipe must not sit there. */
	if (p->rep[1] < 3) {
		fd = fcntl(p->rep[1], F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return -errno;
		close(p->rep[1]);
		p->rep[1] = fd;
	}
	return 0;
}

/* > 0 and *rep filled if the child failed, 0 if it exec'd, -errno if we cannot tell. */
static int read_report(int fd, struct report *rep)
{
	ssize_t n;

	do
		n = read(fd, rep, sizeof(*rep));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	if ((size_t)n != sizeof(*rep) || rep->err <= 0) {
		rep->step = SPAWN_STEP_NONE;
		rep->err = EIO;
	}
	return 1;
}

int spawn(const struct spawn_opts *o, pid_t *pid_out)
{
	sigset_t all, old;
	struct report rep;
	struct prep p;
	pid_t pid;
	int r, e;

	if (o->failed_step)
		*o->failed_step = SPAWN_STEP_NONE;
	r = prepare(o, &p);
	if (r)
		goto out;

	/*
	 * Until the child has reset them, none of our handlers may run in it. vfork, not
	 * fork: a fork copies this process's page tables, which for a launcher with a
	 * thread per node (1,000 stacks) was most of the CPU a 1,000-node launch took.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = vfork();
	if (pid == 0)
		child(o, &p);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		r = -e;
		goto out;
	}

	close(p.rep[1]);
	p.rep[1] = -1;
	r = read_report(p.rep[0], &rep);
	if (r < 0) {
		/* Cannot happen with a pipe we own; do not leave a half-known child behind. */
		kill(pid, SIGKILL);
		spawn_wait(pid, NULL);
		goto out;
	}
	if (r > 0) {
		spawn_wait(pid, NULL);
		if (o->failed_step)
			*o->failed_step = rep.step;
		r = -rep.err;
		goto out;
	}
	*pid_out = pid;
out:
	prep_free(&p);
	return r;
}

int spawn_replace(char *const *argv)
{
	char **cands, **c;
	int err;

	if (!argv || !argv[0])
		return -EINVAL;
	cands = exec_candidates(argv[0], environ);
	err = exec_first(cands, argv, environ);
	for (c = cands; *c; c++)
		free(*c);
	free(cands);
	return -err;
}

int spawn_wait(pid_t pid, int *status)
{
	pid_t r;
	int st;

	do
		r = waitpid(pid, &st, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (status)
		*status = st;
	return 0;
}

int status_to_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	if (WIFSTOPPED(status))
		return 128 + WSTOPSIG(status);
	return 255;
}

const char *spawn_step_name(int step)
{
	switch (step) {
	case SPAWN_STEP_PGRP: return "setsid";
	case SPAWN_STEP_DEATHSIG: return "prctl";
	case SPAWN_STEP_FDS: return "dup2";
	case SPAWN_STEP_CHDIR: return "chdir";
	case SPAWN_STEP_EXEC: return "exec";
	default: return "spawn";
	}
}

/* ---- spawn_run, run_capture ------------------------------------------------------------ */

/* Without a pidfd (old kernels), look for the exit this often. */
#define NO_PIDFD_SLICE_MS 20

struct sink {
	int fd;
	struct buf *b;
};

struct pump {
	int in_fd;
	const char *in;
	size_t in_len, off;
	int epipe;
	struct sink snk[2];
	pid_t pid;
	int pidfd;
	int group;        /* the process leads its own group: kill the group */
	int64_t deadline; /* now_ms() value, or -1 */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* One read: 1 if it read something, 0 if nothing is there (or EOF: fd closed), or -errno. */
static int sink_read(struct sink *s)
{
	char tmp[32768];
	size_t lim, room;
	ssize_t n;
	int r;

	n = read(s->fd, tmp, sizeof(tmp));
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		r = -errno;
		close_fd(&s->fd);
		return r;
	}
	if (n == 0) {
		close_fd(&s->fd);
		return 0;
	}
	r = buf_add(s->b, tmp, (size_t)n);
	if (r == -ENOBUFS) {
		/* Over the limit: keep what fits, and close the pipe (the writer gets EPIPE). */
		lim = s->b->max ? s->b->max : BUF_DEFAULT_MAX;
		room = lim - s->b->len;
		if (room && buf_add(s->b, tmp, room))
			r = -ENOMEM;
	}
	if (r) {
		close_fd(&s->fd);
		return r;
	}
	return 1;
}

/* Writes the next chunk of stdin. EPIPE means the child stopped reading: not an error. */
static int feed(struct pump *p)
{
	size_t left = p->in_len - p->off;
	ssize_t n = write(p->in_fd, p->in + p->off, left < 65536 ? left : 65536);

	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		if (errno == EPIPE) {
			p->epipe = 1;
			close_fd(&p->in_fd);
			return 0;
		}
		n = -errno;
		close_fd(&p->in_fd);
		return (int)n;
	}
	p->off += (size_t)n;
	if (p->off == p->in_len)
		close_fd(&p->in_fd);
	return 0;
}

/*
 * Feeds stdin and drains the sinks until the process exits or the deadline passes.
 * Returns 0 (raw wait status in *raw), -ETIMEDOUT (the process, or its group, was
 * killed and reaped), or the first I/O error (-ENOBUFS...) after the process exited.
 */
static int pump_wait(struct pump *p, int *raw)
{
	struct timespec zero = {0, 0};
	sigset_t pipeset, old, pending;
	struct pollfd pf[4];
	int r = 0, rr, i, exited = 0, timed_out = 0, was_pending;

	/*
	 * A child that exits without reading stdin makes our write raise SIGPIPE. Block it
	 * for the loop and swallow the one we caused, rather than touch the process-wide
	 * disposition.
	 */
	sigemptyset(&pipeset);
	sigaddset(&pipeset, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipeset, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);

	p->pidfd = pidfd_open_pid(p->pid);
	while (!exited) {
		int wait_ms = -1;

		if (p->deadline >= 0) {
			int64_t left = p->deadline - now_ms();

			if (left <= 0) {
				timed_out = 1;
				break;
			}
			wait_ms = left > 3600000 ? 3600000 : (int)left;
		}
		if (p->pidfd < 0 && (wait_ms < 0 || wait_ms > NO_PIDFD_SLICE_MS))
			wait_ms = NO_PIDFD_SLICE_MS;
		pf[0].fd = p->in_fd;
		pf[0].events = POLLOUT;
		for (i = 0; i < 2; i++) {
			pf[i + 1].fd = p->snk[i].fd;
			pf[i + 1].events = POLLIN;
		}
		pf[3].fd = p->pidfd;
		pf[3].events = POLLIN;
		if (poll(pf, 4, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			rr = -errno;
			if (!r)
				r = rr;
			/* Cannot wait any more cleverly: kill it rather than hang. */
			timed_out = 1;
			break;
		}
		if (p->in_fd >= 0 && pf[0].revents) {
			rr = feed(p);
			if (rr && !r)
				r = rr;
		}
		for (i = 0; i < 2; i++) {
			if (p->snk[i].fd < 0 || !pf[i + 1].revents)
				continue;
			rr = sink_read(&p->snk[i]);
			if (rr < 0 && !r)
				r = rr;
		}
		if (p->pidfd < 0 || pf[3].revents) {
			pid_t w = waitpid(p->pid, raw, WNOHANG);

			if (w == p->pid)
				exited = 1;
			else if (w < 0 && errno != EINTR) {
				rr = -errno;
				if (!r)
					r = rr;
				exited = 1;
			}
		}
	}
	if (timed_out) {
		kill(p->group ? -p->pid : p->pid, SIGKILL);
		spawn_wait(p->pid, raw);
		if (!r)
			r = -ETIMEDOUT;
	} else {
		/* What it wrote before it exited is in the pipes; later writers are not ours. */
		for (i = 0; i < 2; i++)
			while (p->snk[i].fd >= 0 && (rr = sink_read(&p->snk[i])) > 0)
				;
	}
	close_fd(&p->in_fd);
	close_fd(&p->snk[0].fd);
	close_fd(&p->snk[1].fd);
	close_fd(&p->pidfd);
	if (p->epipe && !was_pending)
		sigtimedwait(&pipeset, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* A pipe whose parent end is non-blocking; both ends CLOEXEC. */
static int capture_pipe(int fds[2], int parent_end)
{
	int r;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	r = set_nonblock(fds[parent_end]);
	if (r) {
		close_fd(&fds[0]);
		close_fd(&fds[1]);
	}
	return r;
}

int spawn_run(const struct spawn_opts *o, const struct spawn_io *io, int *status)
{
	struct pump p = {.in_fd = -1, .snk = {{-1, io->out}, {-1, io->err}}, .pidfd = -1};
	int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1};
	struct spawn_opts so = *o;
	int64_t t0 = now_ms();
	int r = 0, raw = 0;

	if (io->in && io->in_len && (r = capture_pipe(inp, 1)))
		goto out;
	if (io->out && (r = capture_pipe(outp, 0)))
		goto out;
	if (io->err && io->err != io->out && (r = capture_pipe(errp, 0)))
		goto out;
	if (io->in)
		so.fd_in = inp[0]; /* -1 (/dev/null) for an empty stdin */
	if (io->out)
		so.fd_out = outp[1];
	if (io->err && io->err == io->out)
		so.err_to_out = 1;
	else if (io->err)
		so.fd_err = errp[1];
	r = spawn(&so, &p.pid);
	close_fd(&inp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[1]);
	if (r)
		goto out;
	p.in_fd = inp[1];
	p.in = io->in;
	p.in_len = inp[1] >= 0 ? io->in_len : 0;
	p.snk[0].fd = outp[0];
	p.snk[1].fd = errp[0];
	inp[1] = outp[0] = errp[0] = -1;
	p.group = so.pgrp != SPAWN_PGRP_NONE;
	p.deadline = io->timeout_ms >= 0 ? t0 + io->timeout_ms : -1;
	if (io->pid_out)
		__atomic_store_n(io->pid_out, p.pid, __ATOMIC_RELEASE);
	r = pump_wait(&p, &raw);
	if (io->pid_out)
		__atomic_store_n(io->pid_out, 0, __ATOMIC_RELEASE);
	if (status)
		*status = raw;
out:
	close_fd(&inp[0]);
	close_fd(&inp[1]);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	return r;
}

int run_capture_opts(const struct spawn_opts *o, const char *in, size_t in_len, struct buf *out,
                     struct buf *err, int *status)
{
	struct spawn_io io = {.in = in ? in : "",
	                      .in_len = in ? in_len : 0,
	                      .out = out,
	                      .err = err,
	                      .timeout_ms = -1};
	struct spawn_opts so = *o;

	so.fd_in = so.fd_out = -1;
	so.err_to_out = 0;
	/*
	 * Look before making pipes: with our fd 2 closed, one of them would land there and
	 * the child would get it as its stderr.
	 */
	so.fd_err = fcntl(2, F_GETFD) < 0 ? -1 : 2;
	return spawn_run(&so, &io, status);
}

int run_capture(char *const *argv, char *const *envp, const char *in, struct buf *out,
                struct buf *err, int *status)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;

	o.argv = argv;
	o.envp = envp;
	return run_capture_opts(&o, in, in ? strlen(in) : 0, out, err, status);
}

void spawn_close_later(const int *fds, size_t n)
{
	pid_t pid = fork();
	size_t i;
	int fd;

	if (pid != 0)
		return; /* the parent, or no child: the caller's close is then the last */
	/* Off the caller's stdio at once: whatever waits for its end must not wait for us. */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	setsid();
	for (i = 0; i < n; i++)
		close(fds[i]);
	_exit(0);
}
