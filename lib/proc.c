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

/* Pid namespaces nest at most 32 deep (the kernel's MAX_PID_NS_LEVEL). */
#define PROC_NS_LEVELS_MAX 33
/* /proc/PID/status is about 1.5 KiB; fdinfo a few lines. */
#define PROC_SMALL_MAX 8192

/* ---- which /proc, and the mapping of pids ------------------------------------------- */

/* Reads a small /proc file whole into out (NUL-terminated). Its length, or -errno. */
static ssize_t read_small(const char *path, char *out, size_t size)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0)
		return -errno;
	while (len < size - 1) {
		ssize_t n = read(fd, out + len, size - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			close(fd);
			return -e;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	close(fd);
	out[len] = '\0';
	return (ssize_t)len;
}

/* The numbers on the line "KEY:\t1\t2..." of a /proc status text, up to max; how many. */
static int status_numbers(const char *text, const char *key, long *v, int max)
{
	size_t klen = strlen(key);
	const char *p = text;
	int n = 0;

	while (p && strncmp(p, key, klen)) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p)
		return 0;
	for (p += klen; n < max;) {
		char *end;
		long x;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || !*p)
			break;
		x = strtol(p, &end, 10);
		if (end == p)
			return -1;
		v[n++] = x;
		p = end;
	}
	return n;
}

void proc_ns_judge(pid_t pid, const char *self_link, const char *status, long fd_pid,
                   struct proc_ns *out)
{
	long here = 0, v[PROC_NS_LEVELS_MAX];
	int n = status ? status_numbers(status, "NSpid:", v, PROC_NS_LEVELS_MAX) : -1;

	memset(out, 0, sizeof(*out));
	out->kind = PROC_NS_UNUSABLE;
	out->pid = pid;
	if (!self_link || parse_long(self_link, 1, 1L << 30, &here))
		return; /* we are not in /proc's namespace at all, or there is no /proc */
	out->here = here;
	if (n == 0 && status) {
		/* A kernel before NSpid (4.1): only "the same number" can be told. */
		if (here == pid)
			out->kind = PROC_NS_OURS;
		return;
	}
	if (n <= 0 || v[0] != here || v[n - 1] != pid)
		return;
	if (n == 1) {
		out->kind = PROC_NS_OURS;
		return;
	}
	/* Mapping needs a pidfd whose fdinfo names its process as /proc does (5.3+). */
	if (fd_pid != here)
		return;
	out->kind = PROC_NS_ANCESTOR;
	out->depth = n - 1;
}

/* What a pidfd's fdinfo says its process is in /proc's numbers ("Pid:"); -1 reaped. */
static long pidfd_nr(int pidfd)
{
	char path[64], text[PROC_SMALL_MAX];
	long v;

	xsnprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	if (read_small(path, text, sizeof(text)) < 0)
		return -EIO;
	if (status_numbers(text, "Pid:", &v, 1) != 1)
		return -ENOTSUP; /* a kernel whose pidfds do not say */
	return v;
}

/*
 * The kind and depth once known, with the pid they were found for: they never change for
 * a process, but a fork's child may be in another namespace (its parent unshared one), so
 * a child looks again. (pid << 32 | depth << 2 | kind); 0: not known.
 */
static uint64_t ns_cache;

void proc_ns(struct proc_ns *out)
{
	uint64_t cached = __atomic_load_n(&ns_cache, __ATOMIC_RELAXED);
	int c = cached && (pid_t)(cached >> 32) == getpid() ? (int)(cached & 0xffffffff) : -1;
	char link[32], status[PROC_SMALL_MAX];
	ssize_t n;
	long fd_pid = -1;
	int fd;

	if (c == PROC_NS_OURS) {
		memset(out, 0, sizeof(*out));
		out->kind = PROC_NS_OURS;
		out->pid = out->here = getpid();
		return;
	}
	n = readlink("/proc/self", link, sizeof(link) - 1);
	if (n > 0)
		link[n] = '\0';
	if (c > 0) {
		/* After a fork our number there is new; the rest stays. */
		memset(out, 0, sizeof(*out));
		out->kind = PROC_NS_ANCESTOR;
		out->depth = c >> 2;
		out->pid = getpid();
		if (n <= 0 || parse_long(link, 1, 1L << 30, &out->here))
			out->kind = PROC_NS_UNUSABLE;
		return;
	}
	fd = pidfd_open_pid(getpid());
	if (fd >= 0) {
		fd_pid = pidfd_nr(fd);
		close(fd);
	}
	proc_ns_judge(getpid(), n > 0 ? link : NULL,
	              read_small("/proc/self/status", status, sizeof(status)) > 0 ? status : NULL,
	              fd_pid, out);
	/* UNUSABLE may be for now only (no fd left for the pidfd): looked at again. */
	if (out->kind != PROC_NS_UNUSABLE)
		__atomic_store_n(&ns_cache,
		                 (uint64_t)getpid() << 32 | (uint64_t)(out->depth << 2 | out->kind),
		                 __ATOMIC_RELAXED);
}

int proc_ns_check(char *why, size_t n)
{
	struct proc_ns ns;

	proc_ns(&ns);
	if (ns.kind != PROC_NS_UNUSABLE)
		return 0;
	if (!ns.here)
		xsnprintf(why, n,
		          "/proc shows no process of this pid namespace (pid %ld here): it "
		          "belongs to another one, or is not mounted; mount a /proc of this "
		          "namespace (unshare --pid --fork --mount-proc)",
		          ns.pid);
	else
		xsnprintf(why, n,
		          "/proc belongs to another pid namespace (this process is pid %ld here, "
		          "%ld there) and this kernel cannot map its pids (no pidfd fdinfo): "
		          "mount a /proc of this namespace (unshare --pid --fork --mount-proc)",
		          ns.pid, ns.here);
	return -ENOTSUP;
}

/*
 * Our pid as /proc numbers it: > 0; -ESRCH gone (reaped); another -errno when it cannot
 * be told. With fdp, the pidfd stays open there (else -1): a caller that reads /proc/N
 * checks afterwards that the process still has that number (it was not reaped and its
 * number taken meanwhile).
 */
static long nr_of(const struct proc_ns *ns, pid_t pid, int *fdp)
{
	long nr;
	int fd;

	if (fdp)
		*fdp = -1;
	if (pid <= 0)
		return -ESRCH;
	if (ns->kind == PROC_NS_OURS)
		return pid;
	if (ns->kind != PROC_NS_ANCESTOR)
		return -ENOTSUP;
	if (pid == ns->pid)
		return ns->here;
	fd = pidfd_open_pid(pid);
	if (fd < 0)
		return fd;
	nr = pidfd_nr(fd);
	if (nr == -1)
		nr = -ESRCH;
	else if (nr == 0)
		nr = -ENOTSUP; /* not in /proc's namespace: cannot be */
	if (fdp && nr > 0)
		*fdp = fd;
	else
		close(fd);
	return nr;
}

/* /proc's number nr as ours: > 0; 0 when that process is not of our namespace, or gone. */
static pid_t ours_of(const struct proc_ns *ns, long nr)
{
	char path[64], text[PROC_SMALL_MAX];
	long v[PROC_NS_LEVELS_MAX];
	pid_t cand = 0;
	int n, fd;

	if (nr <= 0)
		return 0;
	if (ns->kind == PROC_NS_OURS)
		return (pid_t)nr;
	if (ns->kind != PROC_NS_ANCESTOR)
		return 0;
	if (nr == ns->here)
		return (pid_t)ns->pid;
	xsnprintf(path, sizeof(path), "/proc/%ld/status", nr);
	if (read_small(path, text, sizeof(text)) <= 0)
		return 0;
	/* Its numbers from /proc's level down to its own: ours is depth levels down. */
	n = status_numbers(text, "NSpid:", v, PROC_NS_LEVELS_MAX);
	if (n > ns->depth && v[0] == nr)
		cand = (pid_t)v[ns->depth];
	if (cand <= 0)
		return 0;
	/* At that depth it may be in a sibling namespace: ours only if the pidfd agrees. */
	fd = pidfd_open_pid(cand);
	if (fd < 0)
		return 0;
	if (pidfd_nr(fd) != nr)
		cand = 0;
	close(fd);
	return cand;
}

/* ---- one process ------------------------------------------------------------------------ */

pid_t proc_ours(long nr)
{
	struct proc_ns ns;

	proc_ns(&ns);
	return ours_of(&ns, nr);
}

int proc_pid_path(pid_t pid, const char *name, char *out, size_t n)
{
	struct proc_ns ns;
	long nr;

	proc_ns(&ns);
	nr = nr_of(&ns, pid, NULL);
	if (nr < 0)
		return (int)nr;
	xsnprintf(out, n, "/proc/%ld/%s", nr, name);
	return 0;
}

/* /proc/NR/stat as it is (NR and the pids in it are /proc's numbers). */
static int stat_read(long nr, struct proc_info *out)
{
	char path[64], data[1024], *p;
	unsigned long long v = 0;
	long ppid, pgrp, sid;
	int fd, field;
	ssize_t n;

	memset(out, 0, sizeof(*out));
	if (nr <= 0)
		return -ESRCH;
	xsnprintf(path, sizeof(path), "/proc/%ld/stat", nr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	n = read(fd, data, sizeof(data) - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return e == ESRCH ? -ESRCH : -e;
	}
	close(fd);
	/* An empty read: the process went away between the open and the read. */
	if (n == 0)
		return -ESRCH;
	data[n] = '\0';
	/* comm may contain spaces and ')': fields start after the last ')'. */
	p = strrchr(data, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EIO;
	/* After ") " come field 3 (state), 4 (ppid), 5 (pgrp), 6 (session); 22 is the start. */
	out->state = p[2];
	if (sscanf(p + 3, " %ld %ld %ld", &ppid, &pgrp, &sid) != 3)
		return -EIO;
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &v) != 1 || !v)
		return -EIO;
	out->ppid = (pid_t)ppid;
	out->pgrp = (pid_t)pgrp;
	out->sid = (pid_t)sid;
	out->start = v;
	return 0;
}

int proc_read(pid_t pid, struct proc_info *out)
{
	struct proc_ns ns;
	long nr;
	int r, fd;

	memset(out, 0, sizeof(*out));
	if (pid <= 0)
		return -ESRCH;
	proc_ns(&ns);
	if (ns.kind == PROC_NS_OURS)
		return stat_read(pid, out);
	nr = nr_of(&ns, pid, &fd);
	if (nr < 0)
		return (int)nr;
	r = stat_read(nr, out);
	/* Reaped meanwhile: what was read may be another process that took its number. */
	if (fd >= 0 && pidfd_nr(fd) != nr)
		r = -ESRCH;
	if (fd >= 0)
		close(fd);
	if (!r) {
		pid_t sid = ours_of(&ns, out->sid);

		out->pgrp = out->pgrp == out->sid ? sid : ours_of(&ns, out->pgrp);
		out->sid = sid;
		out->ppid = ours_of(&ns, out->ppid);
	}
	return r;
}

uint64_t proc_stat(pid_t pid, char *state)
{
	struct proc_info pi;

	if (state)
		*state = '\0';
	if (proc_read(pid, &pi))
		return 0;
	if (state)
		*state = pi.state;
	return pi.start;
}

uint64_t proc_start_time(pid_t pid)
{
	return proc_stat(pid, NULL);
}

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

/* ---- a scope's processes -------------------------------------------------------------- */

void proc_job_tag(pid_t shim_pid, uint64_t shim_start, char out[PROC_TAG_MAX])
{
	xsnprintf(out, PROC_TAG_MAX, "%s=%ld.%llu", PROC_TAG_ENV, (long)shim_pid,
	          (unsigned long long)shim_start);
}

/* In /proc's numbers, as everything read from /proc is until it is signalled. */
struct scope_proc {
	long nr, ppid;
	int mark;
};

/* Signals /proc's process nr by our own number for it; 1 if it was signalled. */
static int signal_nr(const struct proc_ns *ns, long nr, int sig)
{
	pid_t pid = ours_of(ns, nr);

	/* Not of our namespace (or gone): never a number of ours that means another. */
	return pid > 0 && !kill(pid, sig);
}

/* Whether this kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN). */
static int have_children_files(const struct proc_ns *ns)
{
	static int have = -1;
	char path[64];
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);

	if (h < 0) {
		xsnprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", ns->here, ns->here);
		h = access(path, R_OK) == 0;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h;
}

/* Appends the children of every thread of nr (none when it is gone meanwhile). */
static void thread_children(long nr, long **v, size_t *n, size_t *alloc)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	xsnprintf(path, sizeof(path), "/proc/%ld/task", nr);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct buf b = BUF_INIT(1 << 20);
		char *p, *end;
		long tid;

		if (parse_long(e->d_name, 1, 1L << 30, &tid))
			continue;
		xsnprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", nr, tid);
		if (!buf_read_file(&b, path))
			for (p = b.p; *p; p = end) {
				long c = strtol(p, &end, 10);

				if (end == p)
					break;
				*v = xgrow(*v, *n, alloc, sizeof(**v));
				(*v)[(*n)++] = c;
			}
		buf_release(&b);
	}
	closedir(d);
}

/*
 * Every descendant of root (not root) into *out, breadth first, in /proc's numbers; -1
 * when the kernel has no children files or the tree is past PROC_SUBTREE_MAX (then the
 * full scan decides).
 */
static int subtree(const struct proc_ns *ns, long root, long **out, size_t *nout)
{
	long *v = NULL;
	size_t n = 0, alloc = 0, i;

	if (!have_children_files(ns))
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
static int signal_subtree(const struct proc_ns *ns, const struct proc_scope *s, int sig)
{
	long *v = NULL;
	size_t n = 0, i;
	int hit = 0;

	if (subtree(ns, ns->here, &v, &n))
		return -1;
	if (s->pgid > 1 && !kill(-s->pgid, sig))
		hit++;
	for (i = 0; i < n; i++)
		hit += signal_nr(ns, v[i], sig);
	free(v);
	return hit;
}

/* Our pid as /proc numbers it, or 0 (gone, or it cannot be told). */
static long nr_or_0(const struct proc_ns *ns, pid_t pid)
{
	long nr = pid > 0 ? nr_of(ns, pid, NULL) : 0;

	return nr > 0 ? nr : 0;
}

/* A key of a scope (a group, a reaper, an environment entry) and which scope it is. */
struct scope_key {
	long nr;
	const char *env;
	size_t scope;
};

static int key_nr_cmp(const void *a, const void *b)
{
	long x = ((const struct scope_key *)a)->nr, y = ((const struct scope_key *)b)->nr;

	return (x > y) - (x < y);
}

static int key_env_cmp(const void *a, const void *b)
{
	return strcmp(((const struct scope_key *)a)->env, ((const struct scope_key *)b)->env);
}

static int proc_nr_cmp(const void *a, const void *b)
{
	long x = ((const struct scope_proc *)a)->nr, y = ((const struct scope_proc *)b)->nr;

	return (x > y) - (x < y);
}

/* The scope (1-based: 0 is none) of the first key equal to nr, or 0. */
static int key_nr_find(const struct scope_key *v, size_t n, long nr)
{
	struct scope_key k = {.nr = nr}, *hit;

	if (!n || nr <= 0)
		return 0;
	hit = bsearch(&k, v, n, sizeof(*v), key_nr_cmp);
	while (hit && hit > v && hit[-1].nr == nr)
		hit--;
	return hit ? (int)hit->scope + 1 : 0;
}

/*
 * Which scope (1-based, 0: none) the environment of /proc's process nr puts it in: an
 * entry equal to one of envs (sorted), or one that starts with a prefix of prefixes. The
 * environment is read once, whatever the number of scopes.
 */
static int environ_scope(long nr, const struct scope_key *envs, size_t nenv,
                         const struct scope_key *prefixes, size_t npre)
{
	char path[64];
	struct buf b = BUF_INIT(PROC_ENVIRON_MAX);
	const char *p, *end;
	size_t i;
	int found = 0;

	xsnprintf(path, sizeof(path), "/proc/%ld/environ", nr);
	/* Too large to read whole: then it is not ours (the tag comes early, from the shim). */
	if (buf_read_file(&b, path) == 0)
		for (p = b.p, end = b.p + b.len; p < end && !found; p += strlen(p) + 1) {
			struct scope_key k = {.env = p},
			                 *hit = nenv ? bsearch(&k, envs, nenv, sizeof(*envs),
			                                       key_env_cmp)
			                             : NULL;

			while (hit && hit > envs && !strcmp(hit[-1].env, p))
				hit--;
			if (hit)
				found = (int)hit->scope + 1;
			for (i = 0; i < npre && !found; i++)
				if (starts_with(p, prefixes[i].env))
					found = (int)prefixes[i].scope + 1;
		}
	buf_release(&b);
	return found;
}

/* The keys of the scopes, each list sorted for the lookups above. */
struct scope_keys {
	struct scope_key *groups, *reapers, *envs, *prefixes;
	size_t ngroups, nreapers, nenvs, nprefixes;
};

static void keys_add(struct scope_key **v, size_t *n, long nr, const char *env, size_t scope)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].nr = nr;
	(*v)[*n].env = env;
	(*v)[(*n)++].scope = scope;
}

static void keys_of(const struct proc_ns *ns, const struct proc_scope *v, size_t n,
                    struct scope_keys *k)
{
	size_t i;

	memset(k, 0, sizeof(*k));
	for (i = 0; i < n; i++) {
		/* A group whose leader left is found by its tag. */
		long pgid = v[i].pgid > 1 ? nr_or_0(ns, v[i].pgid) : 0;
		long reaper = nr_or_0(ns, v[i].reaper);

		if (pgid > 1)
			keys_add(&k->groups, &k->ngroups, pgid, NULL, i);
		if (reaper > 0)
			keys_add(&k->reapers, &k->nreapers, reaper, NULL, i);
		if (v[i].env && *v[i].env)
			keys_add(&k->envs, &k->nenvs, 0, v[i].env, i);
		if (v[i].env_prefix && *v[i].env_prefix)
			keys_add(&k->prefixes, &k->nprefixes, 0, v[i].env_prefix, i);
	}
	/* Stable enough: of equal keys, the lookups take the first, the lowest scope. */
	if (k->ngroups)
		qsort(k->groups, k->ngroups, sizeof(*k->groups), key_nr_cmp);
	if (k->nreapers)
		qsort(k->reapers, k->nreapers, sizeof(*k->reapers), key_nr_cmp);
	if (k->nenvs)
		qsort(k->envs, k->nenvs, sizeof(*k->envs), key_env_cmp);
}

static void keys_release(struct scope_keys *k)
{
	free(k->groups);
	free(k->reapers);
	free(k->envs);
	free(k->prefixes);
}

/* The scope of a process by what /proc says of it (1-based, 0: none). */
static int scope_of(long nr, const struct proc_info *pi, const struct scope_keys *k)
{
	int s = key_nr_find(k->groups, k->ngroups, pi->pgrp);

	if (!s)
		s = key_nr_find(k->groups, k->ngroups, pi->sid);
	if (!s)
		s = key_nr_find(k->reapers, k->nreapers, pi->ppid);
	if (!s && (k->nenvs || k->nprefixes))
		s = environ_scope(nr, k->envs, k->nenvs, k->prefixes, k->nprefixes);
	return s;
}

/* The scan of proc_scopes_signal(): hit[i] is added to, not set. */
static int scan_scopes(const struct proc_ns *ns, const struct proc_scope *sc, size_t nsc,
                       const int *sig, int *hit)
{
	struct scope_proc *v = NULL;
	struct scope_keys keys;
	size_t n = 0, alloc = 0, i;
	long self, parent;
	int total = 0, changed;
	struct dirent *e;
	DIR *d;

	for (i = 0; i < nsc; i++)
		if (sc[i].pgid > 1 && !kill(-sc[i].pgid, sig[i]))
			hit[i]++, total++;
	/* No number read from such a /proc may be signalled: the group is all we can do. */
	if (ns->kind == PROC_NS_UNUSABLE)
		return total;
	self = ns->here;
	parent = nr_or_0(ns, getppid());
	d = opendir("/proc");
	if (!d)
		return total;
	keys_of(ns, sc, nsc, &keys);
	while ((e = readdir(d))) {
		struct proc_info pi;
		long nr;

		if (parse_long(e->d_name, 2, 1L << 30, &nr) || nr == self || nr == parent ||
		    stat_read(nr, &pi) || pi.state == 'Z')
			continue;
		v = xgrow(v, n, &alloc, sizeof(*v));
		v[n].nr = nr;
		v[n].ppid = pi.ppid;
		v[n].mark = scope_of(nr, &pi, &keys);
		n++;
	}
	closedir(d);
	keys_release(&keys);
	/* Whatever a marked process started belongs to its scope too, however deep. */
	qsort(v, n, sizeof(*v), proc_nr_cmp);
	do {
		changed = 0;
		for (i = 0; i < n; i++) {
			struct scope_proc k = {.nr = v[i].ppid}, *p;

			if (v[i].mark)
				continue;
			p = bsearch(&k, v, n, sizeof(*v), proc_nr_cmp);
			if (p && p->mark)
				v[i].mark = p->mark, changed = 1;
		}
	} while (changed);
	for (i = 0; i < n; i++)
		if (v[i].mark && signal_nr(ns, v[i].nr, sig[v[i].mark - 1])) {
			hit[v[i].mark - 1]++;
			total++;
		}
	free(v);
	return total;
}

int proc_scope_signal(const struct proc_scope *s, int sig)
{
	struct proc_ns ns;
	int hit = 0;

	proc_ns(&ns);
	if (ns.kind != PROC_NS_UNUSABLE && s->reaper > 0 && s->reaper == ns.pid &&
	    (hit = signal_subtree(&ns, s, sig)) >= 0)
		return hit;
	hit = 0;
	return scan_scopes(&ns, s, 1, &sig, &hit);
}

int proc_scopes_signal(const struct proc_scope *v, size_t n, const int *sig, int *hit)
{
	struct proc_ns ns;

	proc_ns(&ns);
	return n ? scan_scopes(&ns, v, n, sig, hit) : 0;
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
