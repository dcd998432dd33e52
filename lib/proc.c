/* Processes: see lib/proc.h for the contracts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/proc.h"

#include "lib/buf.h"
#include "lib/util.h"
#include "lib/banned.h"

int proc_alive(pid_t pid, uint64_t start)
{
	struct proc_info pi;
	int r;

	if (pid <= 0 || !start)
		return 0;
	r = proc_read(pid, &pi);
	if (r == -ESRCH)
		return 0;
	if (r)
		return r;
	/* A zombie has exited; its pid stays reserved until it is reaped, so no reuse. */
	return pi.start == start && pi.state != 'Z';
}

int proc_is(pid_t pid, uint64_t start)
{
	return proc_alive(pid, start) == 1;
}

/* Children from /proc/PID/task/TID/children (one line of pids per thread). */
static int children_fast(pid_t parent, pid_t *out, int max)
{
	char path[64];
	struct buf b = BUF_INIT(1 << 20);
	int n = 0;
	char *p, *end;

	xsnprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)parent, (long)parent);
	if (buf_read_file(&b, path)) {
		buf_release(&b);
		return -1;
	}
	for (p = b.p; *p && n < max; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		out[n++] = (pid_t)v;
	}
	buf_release(&b);
	return n;
}

int proc_children(pid_t parent, pid_t *out, int max)
{
	DIR *d;
	struct dirent *e;
	int n = children_fast(parent, out, max);

	if (n >= 0)
		return n;
	/* Kernels without CONFIG_PROC_CHILDREN: scan /proc for the ppid field. */
	n = 0;
	d = opendir("/proc");
	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		struct proc_info pi;
		long pid;

		if (parse_long(e->d_name, 1, 1L << 30, &pid) || proc_read((pid_t)pid, &pi))
			continue;
		if (pi.ppid == parent)
			out[n++] = (pid_t)pid;
	}
	closedir(d);
	return n;
}

void proc_job_tag(pid_t shim_pid, uint64_t shim_start, char out[PROC_TAG_MAX])
{
	xsnprintf(out, PROC_TAG_MAX, "%s=%ld.%llu", PROC_TAG_ENV, (long)shim_pid,
	          (unsigned long long)shim_start);
}

/* 1 if the environment of pid holds exactly this entry ("NAME=VALUE"). */
static int environ_has(pid_t pid, const char *entry)
{
	char path[64];
	struct buf b = BUF_INIT(PROC_ENVIRON_MAX);
	const char *p, *end;
	int found = 0;

	xsnprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	/* Too large to read whole: then it is not ours (the tag comes early, from the shim). */
	if (buf_read_file(&b, path) == 0)
		for (p = b.p, end = b.p + b.len; p < end && !found; p += strlen(p) + 1)
			found = !strcmp(p, entry);
	buf_release(&b);
	return found;
}

struct scope_proc {
	pid_t pid, ppid;
	int mark;
};

/* Whether this kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN). */
static int have_children_files(void)
{
	static int have = -1;
	char path[64];

	if (have < 0) {
		xsnprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)getpid(),
		          (long)getpid());
		have = access(path, R_OK) == 0;
	}
	return have;
}

/* Appends the children of every thread of pid (none when it is gone meanwhile). */
static void thread_children(pid_t pid, pid_t **v, size_t *n, size_t *alloc)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	xsnprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct buf b = BUF_INIT(1 << 20);
		char *p, *end;
		long tid;

		if (parse_long(e->d_name, 1, 1L << 30, &tid))
			continue;
		xsnprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid, tid);
		if (!buf_read_file(&b, path))
			for (p = b.p; *p; p = end) {
				long c = strtol(p, &end, 10);

				if (end == p)
					break;
				*v = xgrow(*v, *n, alloc, sizeof(**v));
				(*v)[(*n)++] = (pid_t)c;
			}
		buf_release(&b);
	}
	closedir(d);
}

/*
 * Every descendant of root (not root) into *out, breadth first; -1 when the kernel has no
 * children files or the tree is past PROC_SUBTREE_MAX (then the full scan decides).
 */
static int subtree(pid_t root, pid_t **out, size_t *nout)
{
	pid_t *v = NULL;
	size_t n = 0, alloc = 0, i;

	if (!have_children_files())
		return -1;
	thread_children(root, &v, &n, &alloc);
	for (i = 0; i < n; i++) {
		if (n > PROC_SUBTREE_MAX) {
			free(v);
			return -1;
		}
		thread_children(v[i], &v, &n, &alloc);
	}
	*out = v;
	*nout = n;
	return 0;
}

/* The caller is the reaper: its subtree and the group are the whole scope. -1: scan. */
static int signal_subtree(const struct proc_scope *s, int sig)
{
	pid_t *v = NULL;
	size_t n = 0, i;
	int hit = 0;

	if (subtree(getpid(), &v, &n))
		return -1;
	if (s->pgid > 1 && !kill(-s->pgid, sig))
		hit++;
	for (i = 0; i < n; i++)
		if (!kill(v[i], sig))
			hit++;
	free(v);
	return hit;
}

int proc_scope_signal(const struct proc_scope *s, int sig)
{
	struct scope_proc *v = NULL;
	size_t n = 0, alloc = 0, i, k;
	pid_t self = getpid(), parent = getppid();
	struct dirent *e;
	int hit = 0, changed;
	DIR *d;

	if (s->reaper > 0 && s->reaper == self && (hit = signal_subtree(s, sig)) >= 0)
		return hit;
	hit = 0;
	if (s->pgid > 1 && !kill(-s->pgid, sig))
		hit++;
	d = opendir("/proc");
	if (!d)
		return hit;
	while ((e = readdir(d))) {
		struct proc_info pi;
		long pid;

		if (parse_long(e->d_name, 2, 1L << 30, &pid) || pid == self || pid == parent ||
		    proc_read((pid_t)pid, &pi) || pi.state == 'Z')
			continue;
		v = xgrow(v, n, &alloc, sizeof(*v));
		v[n].pid = (pid_t)pid;
		v[n].ppid = pi.ppid;
		v[n].mark = (s->pgid > 1 && (pi.pgrp == s->pgid || pi.sid == s->pgid)) ||
		            (s->reaper > 0 && pi.ppid == s->reaper) ||
		            (s->env && *s->env && environ_has((pid_t)pid, s->env));
		n++;
	}
	closedir(d);
	/* Whatever a marked process started belongs to the job too, however deep. */
	do {
		changed = 0;
		for (i = 0; i < n; i++) {
			if (v[i].mark)
				continue;
			for (k = 0; k < n; k++)
				if (v[k].mark && v[k].pid == v[i].ppid) {
					v[i].mark = changed = 1;
					break;
				}
		}
	} while (changed);
	for (i = 0; i < n; i++)
		if (v[i].mark && !kill(v[i].pid, sig))
			hit++;
	free(v);
	return hit;
}

int proc_scope_kill(const struct proc_scope *s)
{
	int rounds, hit = 0;

	/* A process forking while we look is caught by the next round: it has the tag. */
	for (rounds = 0; rounds < 3; rounds++) {
		int n = proc_scope_signal(s, SIGKILL);

		hit += n;
		if (!n)
			break;
	}
	return hit;
}
