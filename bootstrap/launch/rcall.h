#ifndef SKIFF_RCALL_H
#define SKIFF_RCALL_H

/*
 * A runner call that talks both ways while it runs: runner_run() in a thread of its own,
 * with the script's stdin and stdout on pipes whose other ends the caller gets. For the
 * sync sessions (bootstrap/launch/cl_sync.c), which write to a node and read its answers
 * at the same time, within the runner's timeout. Transport failures and the timeout
 * are runner_run()'s (bootstrap/infra/runner.h).
 *
 *   struct rcall c;
 *   rcall_start(&c, r, script, timeout_ms, 0, &to, &from);
 *   ... write to `to` (close it for EOF), read `from` until EOF ...
 *   rc = rcall_wait(&c, &status);
 *
 * The caller owns `to` and `from` and closes them. EOF on `from` comes once the
 * process has exited (the thread then closes its ends of the pipes). The stderr of the
 * script is ours, or with RCALL_MERGE_ERR on `from` as well.
 */

#include <pthread.h>

#include "bootstrap/infra/runner.h"

enum rcall_flags {
	RCALL_MERGE_ERR = 1 << 0, /* the script's stderr goes to `from` too (else it is ours) */
};

struct rcall {
	struct runner *r;
	char *script;
	int timeout_ms;
	unsigned flags;
	int child_in, child_out; /* the script's ends, closed once the call returned */
	int rc, status;
	pid_t pid; /* the local process, while it runs (0 before and after) */
	pthread_t th;
	int started;
};

/* 0, or -errno (printed); on failure no fd is left open and nothing runs. */
int rcall_start(struct rcall *c, struct runner *r, const char *script, int timeout_ms,
                unsigned flags, int *to, int *from);
/* Waits for the call; runner_run()'s result, and the script's exit status in *status. */
int rcall_wait(struct rcall *c, int *status);
/* Kills the call's local process (its group) if it still runs; rcall_wait() then returns. */
void rcall_kill(struct rcall *c);

#endif
