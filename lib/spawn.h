#ifndef SKIFF_SPAWN_H
#define SKIFF_SPAWN_H

/*
 * The one place where skiff starts a process. See docs/internals-spawn.md.
 *
 * spawn() vforks and execs; everything that can fail in the child (setsid, dup2, chdir,
 * exec) comes back as spawn()'s return value through a CLOEXEC pipe, so "command not
 * found" is -ENOENT here, never a child that exits 127. The child starts clean: every
 * signal at SIG_DFL (SIG_IGN included), nothing blocked, and no fds but 0, 1, 2 and
 * keep_fds, whatever the parent has open without CLOEXEC.
 *
 * Fds: spawn() never closes or takes ownership of the caller's fds. Every fd spawn()
 * and run_capture() create is CLOEXEC and closed before they return.
 *
 * Blocking: spawn() waits until the child has exec'd (or failed to); spawn_wait(),
 * spawn_run() and run_capture() wait for the child to exit. The process must not reap
 * children with waitpid(-1) concurrently with spawn_run() or run_capture().
 */

#include <stddef.h>
#include <sys/types.h>

#include "lib/buf.h"

enum spawn_pgrp {
	SPAWN_PGRP_NONE = 0, /* stay in the parent's process group */
	SPAWN_PGRP_NEW,      /* setpgid(0, 0): own group, same session */
	SPAWN_SESSION_NEW,   /* setsid(): own session and group, no controlling tty */
};

/* What the child was doing when it failed (for messages). */
enum spawn_step {
	SPAWN_STEP_NONE = 0,
	SPAWN_STEP_PGRP,
	SPAWN_STEP_DEATHSIG,
	SPAWN_STEP_FDS,
	SPAWN_STEP_CHDIR,
	SPAWN_STEP_EXEC,
};

struct spawn_opts {
	/*
	 * argv[0] is the program. Without a '/' it is searched in the PATH of the child's
	 * environment (as env(1) does), else in "/usr/local/bin:/bin:/usr/bin". No sh
	 * fallback for ENOEXEC.
	 */
	char *const *argv;
	/*
	 * NULL, or what the child execs (searched as argv is) when argv could not be exec'd,
	 * whatever the error: a shell that runs the same command and says what failed in its
	 * own words. spawn()'s error is then the one of argv_else.
	 */
	char *const *argv_else;
	char *const *envp; /* NULL: the parent's environ */
	/* NULL: the parent's. A relative argv[0] or PATH entry is resolved after the chdir. */
	const char *cwd;
	/* -1: /dev/null. Otherwise an open fd, dup'ed onto 0, 1, 2 (or kept if already there). */
	int fd_in, fd_out, fd_err;
	int err_to_out; /* stderr goes wherever stdout goes; fd_err is ignored */
	enum spawn_pgrp pgrp;
	/* Extra fds the child keeps under the same numbers (all >= 3, open). */
	const int *keep_fds;
	size_t n_keep_fds;
	/* Non-zero: PR_SET_PDEATHSIG, the signal the child gets when the parent thread dies. */
	int death_sig;
	/* Optional out: the enum spawn_step that failed when spawn() returns an error. */
	int *failed_step;
};

/* All fds /dev/null, inherit everything else. */
/* clang-format off */
#define SPAWN_OPTS_INIT {.fd_in = -1, .fd_out = -1, .fd_err = -1}
/* clang-format on */

/*
 * Vforks and execs o->argv. Returns 0 and the child's pid in *pid, or a negative errno:
 * -ENOENT / -EACCES / -ENOEXEC... from exec, or from setsid, dup2 or chdir in the child
 * (the failed child has been reaped), -EINVAL / -EBADF for bad options, or vfork's error.
 * The caller reaps the child with spawn_wait().
 */
int spawn(const struct spawn_opts *o, pid_t *pid);
/*
 * 1 when spawn() of prog with envp (NULL: ours) would find something to exec: prog
 * itself if it has a '/', else an executable file in PATH as spawn() searches it;
 * 0 otherwise. For a program whose absence is the common case, so that no child is
 * started only to fail.
 */
int spawn_findable(const char *prog, char *const *envp);
/* waitpid() restarting on EINTR; 0 and the raw wait status, or -errno. */
int spawn_wait(pid_t pid, int *status);
/*
 * Replaces this process with argv (argv[0] searched in $PATH, as spawn() does). Returns
 * only on failure: -errno.
 */
int spawn_replace(char *const *argv);
/* The exit status as a shell reports it: the exit code, or 128 + the signal. */
int status_to_code(int status);
const char *spawn_step_name(int step);

/* What spawn_run() feeds, captures and waits for. */
struct spawn_io {
	const char *in; /* stdin from memory (in_len bytes); NULL: o->fd_in */
	size_t in_len;
	struct buf *out; /* captured stdout; NULL: o->fd_out */
	struct buf *err; /* captured stderr (== out: the same pipe); NULL: o->fd_err */
	int timeout_ms;  /* < 0: no limit */
	/*
	 * Set (atomically) to the child's pid while it runs, and back to 0 once it is reaped:
	 * for another thread that may have to kill it. NULL: not wanted.
	 */
	pid_t *pid_out;
};

/*
 * Starts o, feeds io->in, captures into io->out / io->err, and waits until the process
 * exits, at most io->timeout_ms: then it (its group, unless o->pgrp is SPAWN_PGRP_NONE)
 * is killed with SIGKILL, reaped, and the result is -ETIMEDOUT. It returns when the
 * process exits, even if something it started still holds its stdout or stderr: what
 * was in the pipes by then is captured, later writes are not. A child that exits without
 * reading all of its stdin is not an error. Past out->max (err->max) the buf keeps what
 * fit, that pipe is closed and the result is -ENOBUFS. Whenever the process started, it
 * has been reaped and *status (may be NULL) holds its raw wait status. Returns 0,
 * spawn()'s error, -ETIMEDOUT, or -ENOBUFS / -errno from the pipes.
 */
int spawn_run(const struct spawn_opts *o, const struct spawn_io *io, int *status);

/*
 * Runs argv to completion and captures its output (spawn_run() without a time limit).
 *
 * stdin is /dev/null, or `in` if it is not NULL (written concurrently with the reading,
 * so any size works; a child that exits without reading it all is not an error).
 * stdout is appended to `out` (NULL: /dev/null). stderr is appended to `err`; with
 * err == out it shares stdout's pipe (interleaved as written); with err == NULL it is the
 * parent's stderr (/dev/null if fd 2 is closed). Both pipes are drained together, so a
 * child filling one cannot block.
 *
 * Past out->max (or err->max), the buf keeps what fit, our end of that pipe is closed (the
 * child gets SIGPIPE / EPIPE) and the result is -ENOBUFS. It returns when the child
 * exits (see spawn_run()). In every case where the child started it has been reaped and
 * *status holds its raw wait status when this returns. Returns 0, spawn()'s error, or
 * -ENOBUFS / -errno from the capture.
 */
int run_capture(char *const *argv, char *const *envp, const char *in, struct buf *out,
                struct buf *err, int *status);
/*
 * run_capture() with spawn options (cwd, pgrp, keep_fds, ...) and a stdin of in_len bytes
 * (in may be NULL). o's fd_in, fd_out, fd_err and err_to_out are ignored.
 */
int run_capture_opts(const struct spawn_opts *o, const char *in, size_t in_len, struct buf *out,
                     struct buf *err, int *status);

/*
 * Hands the last references to fds to a detached child that closes them and exits, so
 * that what freeing them costs (the pages of large deleted files) is not the caller's
 * to wait for. The caller still closes its own copies. Best effort: without a child
 * (fork failed) the caller's close frees them.
 */
void spawn_close_later(const int *fds, size_t n);

#endif
