#ifndef SKIFF_PROC_H
#define SKIFF_PROC_H

/*
 * Processes: is a recorded process still the one that was started (pid plus start time,
 * never pid alone), its children, and which processes belong to a scope (a job, a node)
 * found through /proc. Used by the supervisor and the shim (a job's processes) and by the
 * local infra's teardown (a node's processes).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * /proc and our pid namespace. getpid(), and every pid skiff records, is a number in the
 * caller's own pid namespace; the numbers under /proc are those of the namespace whose
 * process mounted it. A pid namespace made without a /proc of its own (`unshare --pid
 * --fork` without --mount-proc, some sandboxes and hand-made containers) sees an
 * ancestor's, where /proc/PID is another process or none. So every look at /proc/PID
 * here goes through a mapping: our pid -> /proc's number through a pidfd (its fdinfo
 * names the process as that /proc numbers it), /proc's number -> ours through
 * /proc/N/status NSpid, checked back through a pidfd. A /proc that cannot be mapped
 * (it belongs to no ancestor of ours, or the kernel has no pidfds) answers "cannot
 * tell", never "gone", and nothing is signalled by a number read from it; the node
 * supervisor refuses to start there (proc_ns_check()).
 */
enum proc_ns_kind {
	PROC_NS_OURS,     /* /proc numbers processes as we do */
	PROC_NS_ANCESTOR, /* an ancestor namespace's: numbers are mapped */
	PROC_NS_UNUSABLE, /* we cannot map (not in it, no NSpid, no pidfd fdinfo, no /proc) */
};

struct proc_ns {
	int kind;  /* enum proc_ns_kind */
	int depth; /* PROC_NS_ANCESTOR: how many levels below /proc's our namespace is */
	long here; /* our pid as /proc numbers it (readlink /proc/self); 0 unknown */
	long pid;  /* our own getpid() */
};

/*
 * The decision, pure: a process whose getpid() is pid, for which readlink("/proc/self")
 * gave self_link (NULL: it failed), /proc/self/status holds status (NULL: unreadable),
 * and a pidfd of itself has fdinfo "Pid:" fd_pid (0: none, -1: no pidfd). OURS when
 * NSpid has one entry (or, without NSpid, an old kernel, /proc/self is pid); ANCESTOR
 * when NSpid's first entry is /proc/self, its last is pid and the pidfd names us as
 * /proc does; else UNUSABLE.
 */
void proc_ns_judge(pid_t pid, const char *self_link, const char *status, long fd_pid,
                   struct proc_ns *out);
/* proc_ns_judge() of this process, looked at once (its kind never changes; here may). */
void proc_ns(struct proc_ns *out);
/*
 * 0 where this process can tell processes apart through /proc (PROC_NS_OURS or
 * PROC_NS_ANCESTOR); else -ENOTSUP, and why (one line, for an error) in why[n].
 */
int proc_ns_check(char *why, size_t n);

/*
 * The other way, for a caller that walks /proc itself: our pid for the process /proc
 * numbers nr, or 0 when it is not of our namespace (nor below it), or is gone.
 */
pid_t proc_ours(long nr);
/*
 * "/proc/NR/NAME" for our pid (NR: its number in /proc) into out[n]: 0; -ESRCH when it is
 * gone; another -errno when it cannot be told. For reads of a file of one process.
 */
int proc_pid_path(pid_t pid, const char *name, char *out, size_t n);

/* What /proc/PID/stat says of a process (pids in our own numbering; 0: not ours). */
struct proc_info {
	uint64_t start; /* start time in clock ticks since boot (field 22) */
	pid_t ppid, pgrp, sid;
	char state; /* 'R', 'S', 'Z', ... */
};
/*
 * Reads /proc/PID/stat of our pid (mapped, above). 0; -ESRCH when no such process exists;
 * another -errno when it cannot be told (no fd left: -EMFILE, no /proc, a /proc that
 * cannot be mapped: -ENOTSUP): a caller must never read that as "the process is gone".
 */
int proc_read(pid_t pid, struct proc_info *out);
/*
 * Process start time in clock ticks since boot (field 22 of /proc/PID/stat), or 0 if the
 * process does not exist or cannot be read (see proc_read() to tell those apart). Together
 * with the pid it identifies a process across pid reuse.
 */
uint64_t proc_start_time(pid_t pid);
/* proc_start_time(), and the process's state letter in *state ('R', 'S', 'Z'...; '\0'). */
uint64_t proc_stat(pid_t pid, char *state);

/*
 * 1 if pid is alive and still the process that started at `start` (pid-reuse guard); 0 if
 * it has exited (a zombie counts as exited) or the pid is another process now; a negative
 * errno when it cannot be told (no fd left to open /proc with): never read that as gone.
 */
int proc_alive(pid_t pid, uint64_t start);
/* proc_alive() == 1: for callers to whom "cannot tell" means "do not act". */
int proc_is(pid_t pid, uint64_t start);

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
 * A local cluster: every process whose HOME is one of its nodes' directories (env_prefix
 * "HOME=DIR/"), also once the directories are gone.
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
	/* An entry that starts so ("HOME=/x/local/c1/": a local cluster's nodes); NULL: none */
	const char *env_prefix;
};

/* The environment entry that marks the processes of the job under this shim. */
void proc_job_tag(pid_t shim_pid, uint64_t shim_start, char out[PROC_TAG_MAX]);
/*
 * Sends sig to every process of the scope (never to the caller or its parent). Walks the
 * caller's subtree when the caller is the reaper; otherwise reads all of /proc (a few
 * milliseconds for a thousand processes). Returns how many were signalled.
 */
int proc_scope_signal(const struct proc_scope *s, int sig);
/*
 * proc_scope_signal() of n scopes in one reading of /proc (a down of many nodes of this
 * machine at once): sig[i] to the processes of v[i] (0: none, they are counted), and
 * their number added to hit[i]; a process of two scopes is the first's. No subtree walk:
 * /proc is read once whatever n is. Returns how many processes in all.
 */
int proc_scopes_signal(const struct proc_scope *v, size_t n, const int *sig, int *hit);
/* SIGKILL to the scope, again while a round still finds processes (at most 3 rounds). */
int proc_scope_kill(const struct proc_scope *s);

#endif
