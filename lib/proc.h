#ifndef SKIFF_PROC_H
#define SKIFF_PROC_H

/*
 * Processes: is a recorded process still the one that was started (pid plus start time,
 * never pid alone), its children, and which processes belong to a scope (a job, a node)
 * found through /proc. Used by the supervisor and the shim (a job's processes) and by the
 * local infra's teardown (a node's processes).
 */

#include <stdint.h>
#include <sys/types.h>

/*
 * 1 if pid is alive and still the process that started at `start` (pid-reuse guard); 0 if
 * it has exited (a zombie counts as exited) or the pid is another process now; a negative
 * errno when it cannot be told (no fd left to open /proc with): never read that as gone.
 */
int proc_alive(pid_t pid, uint64_t start);
/* proc_alive() == 1: for callers to whom "cannot tell" means "do not act". */
int proc_is(pid_t pid, uint64_t start);
/* Up to max pids whose parent is `parent`; returns how many (0 if none or on error). */
int proc_children(pid_t parent, pid_t *out, int max);

/*
 * Which processes belong to a scope: a process group and session, every process whose
 * environment holds an entry (exactly "NAME=VALUE"), the children of a reaper, and all
 * their descendants.
 *
 * A job: the shim puts PROC_TAG_ENV=TAG into the environment of every step it starts (TAG
 * names the shim: its pid and start time, unique on a boot) and starts each step as the
 * leader of its own session and process group; the shim itself, while it lives, is the
 * reaper (a subreaper, so everything that escaped the group lands there). That finds a
 * daemon a job made with setsid and a double fork, also once the shim is dead; it misses
 * only a process that scrubbed its environment and lost every ancestor of the job.
 *
 * A local node: every process whose environment says SKIFF_HOME=its state dir.
 *
 * When the reaper is the caller itself (a live shim), nothing of the job can be outside
 * its subtree (a subreaper adopts every orphan under it), so the subtree is walked
 * through /proc/PID/task/TID/children and nothing else is read: a cancel of a thousand
 * jobs at once costs each shim its own processes, not a thousand reads of all of /proc.
 */
#define PROC_TAG_ENV "SKIFF_JOB_TAG"
#define PROC_TAG_MAX 64 /* "SKIFF_JOB_TAG=PID.START" and its NUL */
/* An environment larger than this is not searched (the tag is in the shim's small one). */
#define PROC_ENVIRON_MAX ((size_t)8 << 20)
/* A subtree walk stops here (a fork bomb): the full /proc scan takes over. */
#define PROC_SUBTREE_MAX 65536

struct proc_scope {
	pid_t pgid;      /* a group and session (a step's leader); <= 1: none */
	const char *env; /* an environment entry "NAME=VALUE"; NULL or "": none */
	pid_t reaper;    /* whose children belong to the scope (the live shim); 0: none */
};

/* The environment entry that marks the processes of the job under this shim. */
void proc_job_tag(pid_t shim_pid, uint64_t shim_start, char out[PROC_TAG_MAX]);
/*
 * Sends sig to every process of the scope (never to the caller or its parent). Walks the
 * caller's subtree when the caller is the reaper; otherwise reads all of /proc (a few
 * milliseconds for a thousand processes). Returns how many were signalled.
 */
int proc_scope_signal(const struct proc_scope *s, int sig);
/* SIGKILL to the scope, again while a round still finds processes (at most 3 rounds). */
int proc_scope_kill(const struct proc_scope *s);

#endif
