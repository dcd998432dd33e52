#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/util.h"
#include "supervisor/node.h"
#include "lib/banned.h"

int proc_is(pid_t pid, uint64_t start)
{
	uint64_t now;

	if (pid <= 0 || !start)
		return 0;
	now = proc_start_time(pid);
	return now && now == start;
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
		char path[300], data[512], *rp;
		long pid, ppid;
		FILE *f;

		if (parse_long(e->d_name, 1, 1L << 30, &pid))
			continue;
		xsnprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (!fgets(data, sizeof(data), f)) {
			fclose(f);
			continue;
		}
		fclose(f);
		rp = strrchr(data, ')');
		if (rp && sscanf(rp + 1, " %*c %ld", &ppid) == 1 && ppid == parent)
			out[n++] = (pid_t)pid;
	}
	closedir(d);
	return n;
}

int proc_signal_tree(pid_t pgid, int sig)
{
	pid_t kids[4096];
	int n, i, hit = 0;

	if (pgid > 0 && !kill(-pgid, sig))
		hit++;
	n = proc_children(getpid(), kids, (int)ARRAY_SIZE(kids));
	for (i = 0; i < n; i++) {
		pid_t g = getpgid(kids[i]);

		/* A child that made its own group may have taken others along. */
		if (g > 0 && g != getpgrp() && g != pgid)
			kill(-g, sig);
		if (!kill(kids[i], sig))
			hit++;
	}
	return hit;
}
