#ifndef SKIFF_DAEMON_H
#define SKIFF_DAEMON_H

/*
 * The skeleton every skiff daemon stands on (the node supervisor, the managed-jobs
 * controller, the gang watcher): a detached self-spawn, a lock that says one daemon per
 * state dir, signals as an fd, and one wait with a deadline. No daemon sleeps in a loop
 * while it waits for work: each waits in daemon_wait() for an fd or its next deadline.
 * The one loop that looks by time is a job shim's sweep of the job's leftovers once it
 * has ended (supervisor/shim.c, SWEEP_POLL_MS, bounded by its grace and give-up times):
 * a process of the job's group that is not the shim's child gives no event when it dies.
 */

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Starts this binary as argv (argv[0] is replaced by our own path) in a session of its
 * own, stdin /dev/null, stdout and stderr appended to log (NULL: /dev/null; a log that
 * cannot be opened is an error, nothing started), not reaped by us unless the caller
 * waits for it (once we exit, init adopts it). keep_fd (>= 3; -1: none) stays open in it
 * under its number: the daemon's readiness pipe, named in argv. 0 with *pid, or -errno
 * (printed).
 */
int daemon_spawn(char *const *argv, const char *log, int keep_fd, pid_t *pid);

/*
 * Takes path's lock (flock, exclusive, not waiting) and writes our pid into it. The fd
 * (CLOEXEC; closing it lets go), -EEXIST when another process holds it, or another -errno
 * (printed).
 */
int daemon_lock(const char *path);

/*
 * 1 when a process holds path's lock (daemon_lock()): its daemon runs, or one is still
 * ending. The lock, not /proc, says a daemon is gone: an ending process's /proc/PID/exe
 * is unreadable once the kernel is tearing down its memory, before it closes its
 * descriptors (the lock among them), and it may linger as a zombie after. 0 when none
 * holds it or there is no lock file; -errno when it cannot be told. Takes a shared lock
 * for a moment: never in a starting daemon's way for long.
 */
int daemon_lock_held(const char *path);

/*
 * Blocks the signals in set and returns a signalfd for them (CLOEXEC, non-blocking), with
 * SIGPIPE ignored; -errno (printed).
 */
int daemon_signals(const sigset_t *set);

/* One fd to wait on and what came. */
struct daemon_fd {
	int fd; /* < 0: ignored */
	short revents;
};

/*
 * Waits until one of fds is readable (or hung up) or now_ms() reaches deadline (< 0: no
 * deadline). Returns how many are ready (0: the deadline), or -errno other than EINTR
 * (which returns 0).
 */
int daemon_wait(struct daemon_fd *fds, int n, int64_t deadline);

#endif
