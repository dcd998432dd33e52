/* lib/proc.c: which /proc we see (proc_ns_judge()), and pids mapped through another's. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "lib/proc.h"
#include "lib/util.h"
#include "lib/banned.h"

/* The lines around NSpid as /proc/self/status has them (6.x). */
#define STATUS_HEAD "Name:\tskiff\nUmask:\t0022\nState:\tR (running)\nTgid:\t%s\nNgid:\t0\n"
#define STATUS_TAIL "NSpgid:\t1\nNSsid:\t1\nVmPeak:\t   1024 kB\n"

static void judge(pid_t pid, const char *link, const char *nspid, long fd_pid, struct proc_ns *ns)
{
	char text[1024];

	if (nspid)
		xsnprintf(text, sizeof(text), STATUS_HEAD "NStgid:\t%s\nNSpid:\t%s\n" STATUS_TAIL,
		          link ? link : "1", nspid, nspid);
	else
		xsnprintf(text, sizeof(text), STATUS_HEAD STATUS_TAIL, link ? link : "1");
	proc_ns_judge(pid, link, text, fd_pid, ns);
}

static void test_judge(void)
{
	struct proc_ns ns;

	judge(42, "42", "42", 42, &ns);
	ok(ns.kind == PROC_NS_OURS && ns.here == 42 && ns.pid == 42, "our own /proc: OURS");
	judge(42, "42", "42", -1, &ns);
	is_int(ns.kind, PROC_NS_OURS, "OURS needs no pidfd");

	/* unshare --pid --fork without --mount-proc: pid 3 here is 7817 in /proc. */
	judge(3, "7817", "7817\t3", 7817, &ns);
	ok(ns.kind == PROC_NS_ANCESTOR && ns.depth == 1 && ns.here == 7817 && ns.pid == 3,
	   "the parent namespace's /proc: ANCESTOR, one level down, 7817 there");
	judge(3, "900", "900\t50\t3", 900, &ns);
	ok(ns.kind == PROC_NS_ANCESTOR && ns.depth == 2, "two levels down: depth 2");
	judge(3, "7817", "7817\t3", -1, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "an ancestor's /proc without pidfds: cannot be mapped");
	judge(3, "7817", "7817\t3", 0, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "a pidfd that /proc does not number: UNUSABLE");
	judge(3, "7817", "7817\t3", 7818, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "a pidfd that names another process: UNUSABLE");

	proc_ns_judge(3, NULL, NULL, -1, &ns);
	ok(ns.kind == PROC_NS_UNUSABLE && ns.here == 0,
	   "/proc/self does not resolve (a child namespace's /proc, or none): UNUSABLE");
	judge(3, "7817", "7817\t4", 7817, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "NSpid's last entry is not getpid(): UNUSABLE");
	judge(3, "7817", "7816\t3", 7817, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "NSpid's first entry is not /proc/self: UNUSABLE");
	judge(3, "3", "7817\t3", 3, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "the same number by chance is not OURS");
	judge(3, "x", "3", 3, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "a /proc/self that is no number: UNUSABLE");
	judge(3, "3", "3\tjunk", 3, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "an NSpid line that is not numbers: UNUSABLE");

	/* Before Linux 4.1 there is no NSpid: only "the same number" can be told. */
	judge(42, "42", NULL, -1, &ns);
	is_int(ns.kind, PROC_NS_OURS, "no NSpid, /proc/self is getpid(): OURS");
	judge(3, "7817", NULL, 7817, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "no NSpid and another number: UNUSABLE");
	proc_ns_judge(42, "42", NULL, -1, &ns);
	is_int(ns.kind, PROC_NS_UNUSABLE, "a status that cannot be read: cannot tell");
}

static void test_here(void)
{
	struct proc_ns ns;
	char why[256] = "";

	proc_ns(&ns);
	ok(ns.kind == PROC_NS_OURS || ns.kind == PROC_NS_ANCESTOR, "this process can map its pids");
	is_int(ns.pid, getpid(), "and knows its own pid");
	is_int(proc_ns_check(why, sizeof(why)), 0, "proc_ns_check() lets it be (%s)", why);
}

/* A scope by an environment entry's start (a local cluster's nodes, by their HOME). */
static void test_scope_prefix(void)
{
	char env_in[] = "SKIFF_TEST_PREFIX=/x/local/c1/0";
	char env_out[] = "SKIFF_TEST_PREFIX=/x/local/c10";
	char *envs[] = {env_in, env_out};
	struct proc_scope s = {0};
	pid_t pid[2];
	int i, status;

	for (i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			char *argv[] = {"sleep", "60", NULL}, *envp[] = {envs[i], NULL};

			execve("/bin/sleep", argv, envp);
			_exit(127);
		}
	}
	s.env_prefix = "SKIFF_TEST_PREFIX=/x/local/c1/";
	for (i = 0; i < 500 && proc_scope_signal(&s, 0) < 1; i++)
		poll(NULL, 0, 2); /* until the exec */
	is_int(proc_scope_signal(&s, 0), 1, "the entry's start finds the one process under it");
	ok(proc_scope_kill(&s) >= 1 && waitpid(pid[0], &status, 0) == pid[0] && WIFSIGNALED(status),
	   "and kills it");
	ok(kill(pid[1], 0) == 0, "not the one whose entry only looks alike (c10)");
	kill(pid[1], SIGKILL);
	waitpid(pid[1], NULL, 0);
}

/*
 * Many scopes in one reading of /proc (a down of many local nodes): each process counted
 * in its own scope, the untagged child of a tagged one too, the group once more, and the
 * signal of each scope to its processes alone.
 */
#define MANY 24
/* Some odd ones lead a group (a killed group's zombies may wait for an init to reap). */
#define GROUPED(i) ((i) % 4 == 1)
static void test_scopes_many(void)
{
	struct proc_scope s[MANY] = {{0}};
	char tags[MANY][32];
	int sig[MANY] = {0}, hit[MANY], i, want, got, alive, total = 0;
	pid_t pid[MANY];

	for (i = 0; i < MANY; i++) {
		xsnprintf(tags[i], sizeof(tags[i]), "SKIFF_TEST_TAG=many.%d", i);
		s[i].env = tags[i];
		pid[i] = fork();
		if (pid[i] == 0) {
			/* The child's child scrubs its environment: found as a child. */
			char *argv[] = {"sh", "-c", "env -i /bin/sleep 60 & exec /bin/sleep 61",
			                NULL};
			char *envp[] = {tags[i], "PATH=/usr/bin:/bin", NULL};

			if (GROUPED(i))
				setpgid(0, 0);
			execve("/bin/sh", argv, envp);
			_exit(127);
		}
		if (GROUPED(i)) {
			setpgid(pid[i], pid[i]);
			s[i].pgid = pid[i];
		}
	}
	want = 2 * MANY + MANY / 4; /* two processes each, and each group once */
	for (i = 0; i < 1000; i++) {
		memset(hit, 0, sizeof(hit));
		if ((total = proc_scopes_signal(s, MANY, sig, hit)) >= want)
			break;
		poll(NULL, 0, 5); /* until both have started */
	}
	is_int(total, want, "one reading of /proc counts every scope's processes");
	for (got = 0, i = 0; i < MANY; i++)
		got += hit[i] == 2 + (GROUPED(i));
	is_int(got, MANY, "each in its own scope, the scrubbed child with its parent's");
	for (i = 0; i < MANY; i++)
		sig[i] = i % 2 ? 0 : SIGKILL;
	memset(hit, 0, sizeof(hit));
	proc_scopes_signal(s, MANY, sig, hit);
	for (i = 0; i < MANY; i += 2)
		waitpid(pid[i], NULL, 0);
	for (alive = 0, i = 0; i < MANY; i++)
		alive += (kill(pid[i], 0) == 0) == (i % 2 == 1);
	is_int(alive, MANY, "a scope's signal reaches its processes, no other scope's");
	memset(sig, 0, sizeof(sig));
	for (i = 0; i < 200; i++) {
		memset(hit, 0, sizeof(hit));
		/* The odd ones' two each and their groups: the killed ones' children gone too. */
		if (proc_scopes_signal(s, MANY, sig, hit) == MANY + MANY / 4)
			break;
		poll(NULL, 0, 5);
	}
	for (got = 0, i = 0; i < MANY; i++)
		got += i % 2 ? hit[i] == 2 + (GROUPED(i)) : hit[i] == 0;
	is_int(got, MANY, "and its children's too");
	for (i = 0; i < MANY; i++)
		sig[i] = SIGKILL;
	proc_scopes_signal(s, MANY, sig, hit);
	for (i = 1; i < MANY; i += 2)
		waitpid(pid[i], NULL, 0);
	is_int(proc_scopes_signal(s, 0, sig, hit), 0, "no scope: nothing read, none counted");
}

/* Field 22 of /proc/NR/stat as it is, without any mapping. */
static unsigned long long raw_start(long nr)
{
	char path[64], data[1024], *p;
	unsigned long long v = 0;
	int fd, field;
	ssize_t n;

	xsnprintf(path, sizeof(path), "/proc/%ld/stat", nr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, data, sizeof(data) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	data[n] = '\0';
	p = strrchr(data, ')');
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &v) != 1)
		return 0;
	return v;
}

/* What the child in a new pid namespace found, for the parent to judge. */
struct in_ns {
	int kind, depth;
	long here;
	unsigned long long self_start, self_raw;
	pid_t gc;                            /* a grandchild: its pid there */
	unsigned long long gc_start, gc_raw; /* proc_start_time(), and /proc/ITS-NR/stat */
	int gc_alive, gc_dead_alive, gc_dead_start, scope_hit, scope_gone;
};

/* In the new namespace (pid 1 there): the mapping, checked against /proc's own numbers. */
static void child_in_ns(int out)
{
	struct in_ns r;
	struct proc_ns ns;
	int p[2];
	char link[32];
	pid_t gc;
	ssize_t n;

	memset(&r, 0, sizeof(r));
	proc_ns(&ns);
	r.kind = ns.kind;
	r.depth = ns.depth;
	r.here = ns.here;
	r.self_start = proc_start_time(getpid());
	r.self_raw = raw_start(ns.here);
	if (pipe(p) < 0)
		_exit(2);
	gc = fork();
	if (gc == 0) {
		/* Tells its number in /proc, then waits to be killed (by its tag, below). */
		n = readlink("/proc/self", link, sizeof(link) - 1);
		if (n > 0)
			write_all(p[1], link, (size_t)n);
		close(p[1]);
		setenv("SKIFF_TEST_TAG", "x", 1);
		execl("/bin/sh", "sh", "-c", "sleep 60", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	n = read(p[0], link, sizeof(link) - 1);
	close(p[0]);
	link[n > 0 ? n : 0] = '\0';
	r.gc = gc;
	r.gc_start = proc_start_time(gc);
	r.gc_raw = raw_start(strtol(link, NULL, 10));
	r.gc_alive = proc_alive(gc, r.gc_start);
	{
		struct proc_scope s = {0, "SKIFF_TEST_TAG=x", 0};
		int i;

		/* The exec may not have happened yet: the tag is in the new environment. */
		for (i = 0; i < 500 && !r.scope_hit; i++) {
			r.scope_hit = proc_scope_kill(&s);
			if (!r.scope_hit)
				poll(NULL, 0, 2);
		}
	}
	r.scope_gone = waitpid(gc, NULL, 0) == gc;
	r.gc_dead_alive = proc_alive(gc, r.gc_start);
	r.gc_dead_start = proc_start_time(gc) != 0;
	write_all(out, &r, sizeof(r));
	_exit(0);
}

/* What the process that made the namespace saw of its first child there. */
struct from_ns {
	int made; /* 1: a new pid namespace; 0: none can be made here (errno in err) */
	int err;
	long pid;                 /* the child, by the number its parent knows it by */
	unsigned long long start; /* /proc/PID/stat's start time, read before it is reaped */
	int exited_ok;
	int read_ok;
	struct in_ns r;
};

/*
 * The namespace is made by a child of the test, never by the test itself: a process that
 * unshared its pid namespace cannot start another process once that namespace's init has
 * gone, and LeakSanitizer's check at exit starts one.
 */
static void make_ns(int out)
{
	struct from_ns f;
	int p[2], status;
	pid_t pid;

	memset(&f, 0, sizeof(f));
	if (unshare(CLONE_NEWPID) < 0 && unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0) {
		f.err = errno;
		write_all(out, &f, sizeof(f));
		_exit(0);
	}
	f.made = 1;
	if (pipe(p) < 0)
		_exit(2);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child_in_ns(p[1]);
	}
	close(p[1]);
	f.read_ok = read(p[0], &f.r, sizeof(f.r)) == (ssize_t)sizeof(f.r);
	close(p[0]);
	f.pid = pid;
	f.start = raw_start(pid); /* before it is reaped */
	f.exited_ok = waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status);
	write_all(out, &f, sizeof(f));
	_exit(0);
}

static void test_other_namespace(void)
{
	struct from_ns f;
	struct in_ns *r = &f.r;
	int p[2], status;
	pid_t pid;

	if (!ok(pipe(p) == 0, "a pipe"))
		return;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		make_ns(p[1]);
	}
	close(p[1]);
	memset(&f, 0, sizeof(f));
	ok(read(p[0], &f, sizeof(f)) == (ssize_t)sizeof(f) && waitpid(pid, &status, 0) == pid,
	   "the maker of the namespace reports");
	close(p[0]);
	if (!f.made) {
		ok(1, "# skip no new pid namespace here (%s)", strerror(f.err));
		return;
	}
	ok(f.read_ok, "the child in a new pid namespace reports");
	ok(f.exited_ok, "and exits 0");
	is_int(r->kind, PROC_NS_ANCESTOR, "there, /proc is an ancestor namespace's");
	is_int(r->here, f.pid, "its number in /proc is the one its parent knows it by");
	ok(r->self_start && r->self_start == f.start && r->self_start == r->self_raw,
	   "its own start time is its own (%llu), not that of /proc/1", r->self_start);
	ok(r->gc > 1 && r->gc_start && r->gc_start == r->gc_raw,
	   "a child's start time (pid %ld there) is that child's (%llu = %llu)", (long)r->gc,
	   r->gc_start, r->gc_raw);
	is_int(r->gc_alive, 1, "proc_alive(): the live child is alive");
	ok(r->scope_hit > 0 && r->scope_gone, "proc_scope_kill() finds it by its tag and kills it");
	is_int(r->gc_dead_alive, 0, "once reaped, it is dead");
	is_int(r->gc_dead_start, 0, "and has no start time");
}

int main(void)
{
	plan_run(test_judge);
	plan_run(test_here);
	plan_run(test_scope_prefix);
	plan_run(test_scopes_many);
	plan_run(test_other_namespace);
	return done_testing();
}
