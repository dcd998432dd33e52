/*
 * spawn(), spawn_wait(), run_capture(), status_to_code().
 *
 * The children are real programs (sh, cat, echo) and this test binary itself, re-executed
 * in a helper mode (`test-spawn fds`, `test-spawn sigs`, ...), so that what the child sees
 * (its fds, signal dispositions and mask) is checked from inside it, with no shell in the
 * way. An alarm() watchdog turns a hang (a deadlock, a lost death signal) into a failure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "lib/buf.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

#define MB (1024 * 1024)

static char self[PATH_MAX];
static char tmpdir[PATH_MAX];

/* ---- helper modes, run in the child ------------------------------------------------ */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Prints our open fds, ascending, space-separated (not the one used to list them). */
static int helper_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fds[256], n = 0, i;

	if (!d)
		return 2;
	while ((e = readdir(d)) && n < 256) {
		long fd;

		if (parse_long(e->d_name, 0, INT_MAX, &fd) || fd == dirfd(d))
			continue;
		fds[n++] = (int)fd;
	}
	closedir(d);
	qsort(fds, (size_t)n, sizeof(int), cmp_int);
	for (i = 0; i < n; i++)
		printf("%s%d", i ? " " : "", fds[i]);
	printf("\n");
	return 0;
}

/* Prints the disposition of a few signals and every blocked signal. */
static int helper_sigs(void)
{
	static const struct {
		int sig;
		const char *name;
	} sigs[] = {{SIGHUP, "HUP"},   {SIGINT, "INT"},   {SIGPIPE, "PIPE"},
	            {SIGTERM, "TERM"}, {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"}};
	struct sigaction sa;
	sigset_t mask;
	size_t i;
	int sig;

	for (i = 0; i < ARRAY_SIZE(sigs); i++) {
		sigaction(sigs[i].sig, NULL, &sa);
		printf("%s:%s ", sigs[i].name,
		       sa.sa_handler == SIG_DFL   ? "dfl"
		       : sa.sa_handler == SIG_IGN ? "ign"
		                                  : "handler");
	}
	sigprocmask(SIG_SETMASK, NULL, &mask);
	printf("blocked:");
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(&mask, sig) == 1)
			printf(" %d", sig);
	printf("\n");
	return 0;
}

static int spew(int fd, char c, long n)
{
	char blk[4096];

	memset(blk, c, sizeof(blk));
	while (n > 0) {
		size_t k = n < (long)sizeof(blk) ? (size_t)n : sizeof(blk);

		if (write_all(fd, blk, k))
			return 1;
		n -= (long)k;
	}
	return 0;
}

static int helper(int argc, char **argv)
{
	long a = 0, b = 0;

	if (!strcmp(argv[1], "fds"))
		return helper_fds();
	if (!strcmp(argv[1], "sigs"))
		return helper_sigs();
	/* links FD: where our 0, 1 and 2 point, written to FD. */
	if (!strcmp(argv[1], "links") && argc == 3 && !parse_long(argv[2], 3, INT_MAX, &a)) {
		char l[PATH_MAX];
		int i;

		for (i = 0; i < 3; i++) {
			char p[64];
			ssize_t n;

			xsnprintf(p, sizeof(p), "/proc/self/fd/%d", i);
			n = readlink(p, l, sizeof(l) - 1);
			l[n > 0 ? n : 0] = '\0';
			dprintf((int)a, "%s\n", l);
		}
		return 0;
	}
	/* spew OUT ERR: ERR bytes of 'e' on stderr first, then OUT bytes of 'o' on stdout. */
	if (!strcmp(argv[1], "spew") && argc == 4 && !parse_long(argv[2], 0, LONG_MAX, &a) &&
	    !parse_long(argv[3], 0, LONG_MAX, &b))
		return spew(2, 'e', b) || spew(1, 'o', a);
	if (!strcmp(argv[1], "forever"))
		for (;;)
			if (spew(1, 'y', 4096))
				return 1;
	if (!strcmp(argv[1], "pause"))
		for (;;)
			pause();
	fprintf(stderr, "test-spawn: unknown helper mode '%s'\n", argv[1]);
	return 2;
}

/* ---- test utilities ------------------------------------------------------------------ */

static int no_children(void)
{
	return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static int make_file(const char *name, const char *text, mode_t mode, char *path, size_t size)
{
	xsnprintf(path, size, "%s/%s", tmpdir, name);
	return write_file_atomic(path, text, strlen(text), mode);
}

/* Spawns o and reads its stdout (o->fd_out is set here) until EOF; returns the status. */
static int spawn_read(struct spawn_opts *o, struct buf *out, int *status)
{
	int p[2], r;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	o->fd_out = p[1];
	r = spawn(o, &pid);
	close(p[1]);
	if (!r) {
		r = buf_read_fd(out, p[0]);
		spawn_wait(pid, status);
	}
	close(p[0]);
	return r;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* ---- tests ----------------------------------------------------------------------------- */

static void test_exec_errors(void)
{
	char *missing[] = {"skiff-no-such-program-x", NULL};
	char *missing_abs[] = {"/nonexistent-skiff/prog", NULL};
	char *empty[] = {"", NULL};
	char path[PATH_MAX], pathenv[PATH_MAX + 8];
	char *noexec[] = {path, NULL}, *by_name[] = {"plain", NULL}, *env[] = {pathenv, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	int step = -1;
	pid_t pid = 0;

	o.argv = missing;
	o.failed_step = &step;
	is_int(spawn(&o, &pid), -ENOENT, "a program not in PATH is -ENOENT, not exit 127");
	is_int(step, SPAWN_STEP_EXEC, "the failed step is exec");
	is_int(pid, 0, "no pid is returned");
	ok(no_children(), "the failed child was reaped");

	o.argv = missing_abs;
	is_int(spawn(&o, &pid), -ENOENT, "a missing absolute path is -ENOENT");
	o.argv = empty;
	is_int(spawn(&o, &pid), -ENOENT, "an empty program name is -ENOENT");

	make_file("plain", "#!/bin/sh\nexit 0\n", 0644, path, sizeof(path));
	o.argv = noexec;
	is_int(spawn(&o, &pid), -EACCES, "a file without x permission is -EACCES");
	/* EACCES wins over a later ENOENT, as with execvp. */
	xsnprintf(pathenv, sizeof(pathenv), "PATH=%s:/nonexistent-skiff", tmpdir);
	o.argv = by_name;
	o.envp = env;
	is_int(spawn(&o, &pid), -EACCES, "found in PATH but not executable is -EACCES");
	o.envp = NULL;

	make_file("garbage", "\x01\x02\x03 not a program\n", 0755, path, sizeof(path));
	o.argv = noexec;
	is_int(spawn(&o, &pid), -ENOEXEC, "an unknown format is -ENOEXEC (no sh fallback)");
	ok(no_children(), "no child is left behind");

	o.argv = NULL;
	is_int(spawn(&o, &pid), -EINVAL, "no argv is -EINVAL");
}

static void test_cwd(void)
{
	char *pwd[] = {"sh", "-c", "pwd -P", NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(4096);
	char want[PATH_MAX];
	int step = -1, st = -1;
	pid_t pid;

	o.argv = pwd;
	o.cwd = "/nonexistent-skiff-dir";
	o.failed_step = &step;
	is_int(spawn(&o, &pid), -ENOENT, "a cwd that does not exist is -ENOENT");
	is_str(spawn_step_name(step), "chdir", "and the failed step is chdir");

	o.cwd = tmpdir;
	ok(realpath(tmpdir, want) != NULL, "realpath");
	is_int(run_capture_opts(&o, NULL, 0, &out, NULL, &st), 0, "run in a given cwd");
	buf_rtrim(&out);
	is_str(out.p, want, "the child runs in cwd");
	buf_release(&out);
}

static void test_pgrp(void)
{
	char *cat[] = {"cat", NULL};
	static const struct {
		enum spawn_pgrp pgrp;
		const char *what;
	} cases[] = {{SPAWN_PGRP_NONE, "no new group"},
	             {SPAWN_PGRP_NEW, "new process group"},
	             {SPAWN_SESSION_NEW, "new session"}};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct spawn_opts o = SPAWN_OPTS_INIT;
		int p[2], st = -1;
		pid_t pid;

		/* cat blocks on the pipe until we close it: the child is alive while we look. */
		if (pipe2(p, O_CLOEXEC) < 0)
			break;
		o.argv = cat;
		o.fd_in = p[0];
		o.pgrp = cases[i].pgrp;
		is_int(spawn(&o, &pid), 0, "spawn cat (%s)", cases[i].what);
		close(p[0]);
		switch (cases[i].pgrp) {
		case SPAWN_PGRP_NONE:
			is_int(getpgid(pid), getpgrp(), "child is in our process group");
			is_int(getsid(pid), getsid(0), "child is in our session");
			break;
		case SPAWN_PGRP_NEW:
			is_int(getpgid(pid), pid, "child leads its own process group");
			is_int(getsid(pid), getsid(0), "child is still in our session");
			break;
		case SPAWN_SESSION_NEW:
			is_int(getsid(pid), pid, "child leads a new session (getsid == pid)");
			is_int(getpgid(pid), pid, "and its process group");
			break;
		}
		close(p[1]);
		is_int(spawn_wait(pid, &st), 0, "spawn_wait");
		ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "cat exits 0 at EOF");
	}
}

static void test_stdio(void)
{
	char fdnum[16];
	char *links[] = {self, "links", fdnum, NULL};
	char *cat[] = {"cat", NULL};
	char *echo[] = {"echo", "hello", NULL};
	char *both[] = {"sh", "-c", "echo out; echo err >&2", NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(4096), err = BUF_INIT(4096);
	int p[2], st = -1;
	pid_t pid;

	/* With every fd at -1, the helper reports where its 0, 1, 2 point (on a kept fd). */
	if (!ok(!pipe2(p, O_CLOEXEC), "pipe"))
		return;
	xsnprintf(fdnum, sizeof(fdnum), "%d", p[1]);
	o.argv = links;
	o.keep_fds = &p[1];
	o.n_keep_fds = 1;
	is_int(spawn(&o, &pid), 0, "spawn with default fds");
	close(p[1]);
	buf_read_fd(&out, p[0]);
	close(p[0]);
	spawn_wait(pid, &st);
	is_str(out.p, "/dev/null\n/dev/null\n/dev/null\n", "stdin, stdout, stderr are /dev/null");
	buf_reset(&out);

	o = (struct spawn_opts)SPAWN_OPTS_INIT;
	o.argv = cat;
	is_int(spawn_read(&o, &out, &st), 0, "cat with the default stdin");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && out.len == 0,
	   "returns at once with nothing read: stdin is /dev/null");

	o.argv = echo;
	is_int(spawn_read(&o, &out, &st), 0, "echo into a pipe");
	is_str(out.p, "hello\n", "fd_out is the pipe");
	buf_reset(&out);

	o.argv = both;
	o.err_to_out = 1;
	is_int(spawn_read(&o, &out, &st), 0, "err_to_out");
	is_str(out.p, "out\nerr\n", "stderr went where stdout goes");
	buf_reset(&out);

	o.err_to_out = 0;
	is_int(run_capture(both, NULL, NULL, &out, &err, &st), 0, "run_capture with two pipes");
	is_str(out.p, "out\n", "stdout captured");
	is_str(err.p, "err\n", "stderr captured apart");
	buf_reset(&out);
	buf_reset(&err);
	is_int(run_capture(both, NULL, NULL, &out, &out, &st), 0, "run_capture with err == out");
	is_str(out.p, "out\nerr\n", "both in one buffer");
	buf_release(&out);
	buf_release(&err);
}

/* The dup2 corner cases: a source already on its target, on another target, shared. */
static void test_dup2_corners(void)
{
	char *echo[] = {"echo", "hi", NULL};
	char *cat[] = {"cat", NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(4096);
	int p[2], s[2], save, r, st = -1;
	char got[16];
	ssize_t n;
	pid_t pid;

	/* fd_out == 1, and our fd 1 is CLOEXEC: the child must still get it. */
	fflush(stdout);
	save = fcntl(1, F_DUPFD_CLOEXEC, 10);
	if (!ok(save >= 0 && !pipe2(p, O_CLOEXEC), "set up fd 1"))
		return;
	dup3(p[1], 1, O_CLOEXEC);
	close(p[1]);
	o.argv = echo;
	o.fd_out = 1;
	r = spawn(&o, &pid);
	dup2(save, 1);
	close(save);
	if (!r)
		spawn_wait(pid, NULL);
	buf_read_fd(&out, p[0]);
	close(p[0]);
	is_int(r, 0, "spawn with fd_out == 1");
	is_str(out.p, "hi\n", "fd 1 is handed over even when it is CLOEXEC in the parent");
	buf_reset(&out);

	/* The pipe's write end sits on fd 0 while stdin must become /dev/null. */
	save = fcntl(0, F_DUPFD_CLOEXEC, 10);
	if (!ok(save >= 0 && !pipe2(p, O_CLOEXEC), "set up fd 0"))
		return;
	dup3(p[1], 0, O_CLOEXEC);
	close(p[1]);
	o.fd_in = -1;
	o.fd_out = 0;
	r = spawn(&o, &pid);
	dup2(save, 0);
	close(save);
	if (!r)
		spawn_wait(pid, NULL);
	buf_read_fd(&out, p[0]);
	close(p[0]);
	is_int(r, 0, "spawn with fd_out == 0 and fd_in = /dev/null");
	is_str(out.p, "hi\n", "a source on fd 0 is moved before fd 0 is replaced");
	buf_release(&out);

	/* fd_in == fd_out: cat echoes through one socket. */
	if (!ok(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), "socketpair"))
		return;
	o.argv = cat;
	o.fd_in = o.fd_out = s[1];
	is_int(spawn(&o, &pid), 0, "spawn with fd_in == fd_out");
	close(s[1]);
	ok(write(s[0], "ping", 4) == 4, "write to cat");
	shutdown(s[0], SHUT_WR);
	n = read(s[0], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	close(s[0]);
	spawn_wait(pid, &st);
	is_str(got, "ping", "the same fd serves as stdin and stdout");

	/*
	 * A parent running with 0 and 2 closed: the report pipe would be created as fds 0
	 * and 2, and the child's dup2 onto 2 would swallow the exec error.
	 */
	{
		char *missing[] = {"skiff-no-such-program-x", NULL};
		int save0 = fcntl(0, F_DUPFD_CLOEXEC, 10), save2 = fcntl(2, F_DUPFD_CLOEXEC, 10);
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

		close(0);
		close(2);
		o.argv = missing;
		o.fd_in = o.fd_out = o.fd_err = devnull;
		r = spawn(&o, &pid);
		dup2(save0, 0);
		dup2(save2, 2);
		close(save0);
		close(save2);
		close(devnull);
		is_int(r, -ENOENT, "exec errors are reported when the parent has 0 and 2 closed");
	}
}

static void test_keep_fds(void)
{
	char *fds[] = {self, "fds", NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(4096);
	int devnull, keep[2] = {22, 22}, bad, st = -1, before;
	pid_t pid;

	before = count_fds();
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	/* 20: leaked by someone without CLOEXEC; 21: CLOEXEC; 22: to be kept. */
	dup2(devnull, 20);
	dup3(devnull, 21, O_CLOEXEC);
	dup3(devnull, 22, O_CLOEXEC);
	o.argv = fds;
	o.keep_fds = keep;
	o.n_keep_fds = 2;
	is_int(spawn_read(&o, &out, &st), 0, "spawn with keep_fds");
	is_str(out.p, "0 1 2 22\n", "the child has 0, 1, 2 and the kept fd, nothing else");
	buf_reset(&out);

	o.n_keep_fds = 0;
	is_int(spawn_read(&o, &out, &st), 0, "spawn without keep_fds");
	is_str(out.p, "0 1 2\n", "a non-CLOEXEC fd of the parent is not inherited");
	buf_release(&out);

	bad = 1;
	o.keep_fds = &bad;
	o.n_keep_fds = 1;
	is_int(spawn(&o, &pid), -EINVAL, "keeping fd 1 is -EINVAL");
	bad = 23;
	is_int(spawn(&o, &pid), -EBADF, "keeping a closed fd is -EBADF");
	o.n_keep_fds = 0;
	o.fd_out = 23;
	is_int(spawn(&o, &pid), -EBADF, "a closed fd_out is -EBADF");

	close(20);
	close(21);
	close(22);
	close(devnull);
	is_int(count_fds(), before, "spawn leaves no fd open in the parent");
}

static void on_signal(int sig)
{
	(void)sig;
	abort();
}

static void test_signals(void)
{
	char *sigs[] = {self, "sigs", NULL};
	char *kill_int[] = {"sh", "-c", "kill -INT $$; exit 0", NULL};
	char *kill_pipe[] = {"sh", "-c", "kill -PIPE $$; exit 0", NULL};
	struct sigaction ign, handler, old_int, old_pipe, old_usr1, old_term;
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(4096);
	sigset_t block, old_mask, now;
	int st = -1;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	memset(&handler, 0, sizeof(handler));
	handler.sa_handler = on_signal;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigaction(SIGUSR1, &handler, &old_usr1);
	sigaction(SIGTERM, &handler, &old_term);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old_mask);

	o.argv = sigs;
	is_int(spawn_read(&o, &out, &st), 0, "spawn with SIGINT/SIGPIPE ignored, handlers set");
	is_str(out.p, "HUP:dfl INT:dfl PIPE:dfl TERM:dfl USR1:dfl USR2:dfl blocked:\n",
	       "the child starts with default dispositions and an empty mask");
	buf_release(&out);

	is_int(run_capture(kill_int, NULL, NULL, NULL, NULL, &st), 0, "sh that sends itself INT");
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "is killed by SIGINT");
	is_int(status_to_code(st), 130, "status_to_code is 128 + SIGINT");
	is_int(run_capture(kill_pipe, NULL, NULL, NULL, NULL, &st), 0, "sh that sends itself PIPE");
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE, "is killed by SIGPIPE");

	sigprocmask(SIG_SETMASK, NULL, &now);
	ok(sigismember(&now, SIGUSR2) && sigismember(&now, SIGHUP) && !sigismember(&now, SIGINT),
	   "the parent's signal mask is as it was");
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigaction(SIGUSR1, &old_usr1, NULL);
	sigaction(SIGTERM, &old_term, NULL);
}

static int all_bytes(const struct buf *b, char c)
{
	size_t i;

	for (i = 0; i < b->len; i++)
		if (b->p[i] != c)
			return 0;
	return 1;
}

static void test_capture_large(void)
{
	char *spew_both[] = {self, "spew", "1048576", "1048576", NULL};
	char *cat[] = {"cat", NULL};
	struct buf out = BUF_INIT(2 * MB), err = BUF_INIT(2 * MB);
	char *in = xmalloc(MB + 1);
	size_t i;
	int st = -1;

	is_int(run_capture(spew_both, NULL, NULL, &out, &err, &st), 0,
	       "1 MB on stderr, then 1 MB on stdout: no deadlock");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit 0");
	ok(out.len == MB && all_bytes(&out, 'o'), "all of stdout (%zu bytes)", out.len);
	ok(err.len == MB && all_bytes(&err, 'e'), "all of stderr (%zu bytes)", err.len);
	buf_reset(&out);

	for (i = 0; i < MB; i++)
		in[i] = (char)('a' + i % 26);
	in[MB] = '\0';
	is_int(run_capture(cat, NULL, in, &out, NULL, &st), 0, "1 MB through cat's stdin");
	ok(out.len == MB && !memcmp(out.p, in, MB), "comes back whole");
	free(in);
	buf_release(&out);
	buf_release(&err);
}

static void test_capture_limits(void)
{
	char *spew_out[] = {self, "spew", "1048576", "0", NULL};
	char *spew_err[] = {self, "spew", "0", "1048576", NULL};
	char *forever[] = {self, "forever", NULL};
	char *no_read[] = {"true", NULL};
	struct buf out = BUF_INIT(1000), err = BUF_INIT(1000);
	char *in = xmalloc(MB + 1);
	sigset_t pending;
	int st = -1, r;

	is_int(run_capture(spew_out, NULL, NULL, &out, &err, &st), -ENOBUFS,
	       "stdout past the limit is -ENOBUFS");
	ok(out.len == 1000 && all_bytes(&out, 'o'), "the buf keeps the first 1000 bytes");
	ok(WIFSIGNALED(st) || WIFEXITED(st), "and the status is reported");
	ok(no_children(), "the child was reaped");
	buf_reset(&out);

	st = -1;
	is_int(run_capture(spew_err, NULL, NULL, &out, &err, &st), -ENOBUFS,
	       "stderr past the limit is -ENOBUFS");
	ok(err.len == 1000 && out.len == 0, "stderr holds 1000 bytes");
	ok(no_children(), "the child was reaped");

	is_int(run_capture(forever, NULL, NULL, &out, NULL, &st), -ENOBUFS,
	       "a child with endless output is cut off");
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE, "by SIGPIPE");
	ok(no_children(), "and reaped");
	buf_release(&out);
	buf_release(&err);

	/* With our stderr closed, the out pipe lands on fd 2: the child must not get it. */
	{
		int save2 = fcntl(2, F_DUPFD_CLOEXEC, 10);

		close(2);
		st = -1;
		r = run_capture(forever, NULL, NULL, &out, NULL, &st);
		dup2(save2, 2);
		close(save2);
		is_int(r, -ENOBUFS, "endless output with our fd 2 closed");
		ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE, "still ends by SIGPIPE");
		buf_release(&out);
	}

	/* SIGPIPE is at its default here: writing to a child that never reads must not kill us. */
	memset(in, 'x', MB);
	in[MB] = '\0';
	is_int(run_capture(no_read, NULL, in, NULL, NULL, &st), 0,
	       "stdin for a child that does not read it");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "is not an error");
	sigpending(&pending);
	ok(!sigismember(&pending, SIGPIPE), "and leaves no SIGPIPE pending");
	free(in);
}

static void test_env_path(void)
{
	char *show[] = {"sh", "-c", "printf %s \"$FOO\"", NULL};
	char *sh7[] = {"sh", "-c", "exit 7", NULL};
	char *env[] = {"FOO=a b", "PATH=/nonexistent-skiff:/usr/bin:/bin", NULL};
	char *nopath[] = {"PATH=/nonexistent-skiff", NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(4096);
	int st = -1;
	pid_t pid;

	is_int(run_capture(show, env, NULL, &out, NULL, &st), 0, "run with envp");
	is_str(out.p, "a b", "the child sees envp");
	is_int(run_capture(sh7, env, NULL, NULL, NULL, &st), 0, "PATH from envp, second entry");
	is_int(status_to_code(st), 7, "exit code 7");
	o.argv = sh7;
	o.envp = nopath;
	is_int(spawn(&o, &pid), -ENOENT, "the PATH searched is the child's");
	is_int(spawn_findable("sh", env), 1, "findable: sh in the second PATH entry");
	is_int(spawn_findable("sh", nopath), 0, "findable: not in a PATH without it");
	is_int(spawn_findable("/bin/sh", nopath), 1, "findable: a path is itself");
	is_int(spawn_findable("/nonexistent-skiff/sh", env), 0, "findable: a path that is not");
	is_int(spawn_findable("/", env), 0, "findable: a directory is not a program");
	is_int(spawn_findable("bin", (char *[]){"PATH=/", NULL}), 0,
	       "findable: nor one in the PATH");
	is_int(spawn_findable("", env), 0, "findable: an empty name");
	buf_release(&out);
}

/* argv_else: what runs when argv cannot be exec'd, whatever the error; only then. */
static void test_argv_else(void)
{
	char *missing[] = {"skiff-no-such-program-x", "a", NULL};
	char *echo[] = {"echo", "direct", NULL};
	char *shell[] = {"sh", "-c", "echo else $0", "fb", NULL};
	char *also_missing[] = {"/nonexistent-skiff/sh", NULL};
	char path[PATH_MAX], *garbage[] = {path, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(4096);
	int st = -1, step = -1;
	pid_t pid = 0;

	o.argv = missing;
	o.argv_else = shell;
	is_int(run_capture_opts(&o, NULL, 0, &out, NULL, &st), 0, "not found: argv_else runs");
	is_str(out.p, "else fb\n", "  with its own argv");
	buf_reset(&out);
	o.argv = echo;
	is_int(run_capture_opts(&o, NULL, 0, &out, NULL, &st), 0, "found: argv runs");
	is_str(out.p, "direct\n", "  and argv_else does not");
	buf_reset(&out);
	make_file("garbage-else", "\x01\x02 not a program\n", 0755, path, sizeof(path));
	o.argv = garbage;
	is_int(run_capture_opts(&o, NULL, 0, &out, NULL, &st), 0,
	       "an unknown format (ENOEXEC): argv_else runs");
	is_str(out.p, "else fb\n", "  the same");
	o.argv = missing;
	o.argv_else = also_missing;
	o.failed_step = &step;
	is_int(spawn(&o, &pid), -ENOENT, "both fail: the error is argv_else's");
	is_int(step, SPAWN_STEP_EXEC, "  at exec");
	ok(no_children(), "  and the child was reaped");
	o.argv_else = (char *[]){NULL};
	is_int(spawn(&o, &pid), -EINVAL, "an empty argv_else is -EINVAL");
	buf_release(&out);
}

static void test_status_to_code(void)
{
	char *ex3[] = {"sh", "-c", "exit 3", NULL};
	char *term[] = {"sh", "-c", "kill -TERM $$", NULL};
	int st = -1;

	run_capture(ex3, NULL, NULL, NULL, NULL, &st);
	is_int(status_to_code(st), 3, "exit 3 is 3");
	run_capture(term, NULL, NULL, NULL, NULL, &st);
	is_int(status_to_code(st), 143, "SIGTERM is 143");
	is_int(status_to_code(0), 0, "status 0 is 0");
	is_int(spawn_wait(getpid(), &st), -ECHILD, "spawn_wait on a non-child is -ECHILD");
}

/* Run last: it makes this process a subreaper. */
static void test_death_sig(void)
{
	char *pause_argv[] = {self, "pause", NULL};
	int p[2], st = -1;
	pid_t mid, grandchild = 0;

	/*
	 * mid spawns the helper with death_sig and exits; the orphan is reparented to us
	 * (subreaper) and must die of SIGTERM. If it did not, the watchdog ends the test.
	 */
	if (!ok(!prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) && !pipe2(p, O_CLOEXEC),
	        "become a subreaper"))
		return;
	fflush(stdout);
	mid = fork();
	if (mid == 0) {
		struct spawn_opts o = SPAWN_OPTS_INIT;
		pid_t pid = 0;

		o.argv = pause_argv;
		o.death_sig = SIGTERM;
		if (spawn(&o, &pid))
			_exit(1);
		_exit(write(p[1], &pid, sizeof(pid)) == sizeof(pid) ? 0 : 1);
	}
	close(p[1]);
	is_int(spawn_wait(mid, &st), 0, "the parent of the job exits");
	ok(read(p[0], &grandchild, sizeof(grandchild)) == sizeof(grandchild), "got the job's pid");
	close(p[0]);
	is_int(spawn_wait(grandchild, &st), 0, "the orphan is reaped by us");
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "it was killed by its death signal");
}

/* spawn_run(): a time limit, and no waiting on what the child left behind. */
static void test_spawn_run(void)
{
	char *bg[] = {"/bin/sh", "-c", "echo before; (sleep 2; echo late) & exit 3", NULL};
	char *slow[] = {"/bin/sh", "-c", "echo started; sleep 30", NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(0);
	struct spawn_io io = {.out = &out, .timeout_ms = -1};
	int st = -1;

	o.argv = bg;
	o.pgrp = SPAWN_PGRP_NEW;
	is_int(spawn_run(&o, &io, &st), 0, "a child that leaves a writer behind");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 3, "its exit status");
	/* Had it waited for the pipe to close, "late" would be there too. */
	is_str(out.p, "before\n", "what it wrote before it exited, not what came later");
	buf_reset(&out);

	o.argv = slow;
	io.timeout_ms = 300;
	is_int(spawn_run(&o, &io, &st), -ETIMEDOUT, "past the limit: -ETIMEDOUT");
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the child was killed and reaped");
	is_str(out.p, "started\n", "its output so far is kept");
	buf_release(&out);
}

int main(int argc, char **argv)
{
	ssize_t n;

	if (argc > 1)
		return helper(argc, argv);
	/* Started with 0, 1 or 2 closed, the fd tests would have nothing to save and restore. */
	for (n = open("/dev/null", O_RDWR); n >= 0 && n < 3; n = open("/dev/null", O_RDWR))
		;
	if (n >= 0)
		close((int)n);
	/* Watchdog: a hang (deadlock, lost signal) fails the test instead of stalling it. */
	alarm(60);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	/*
	 * Scratch files go beside this binary, not in $TMPDIR: /tmp is often noexec, which
	 * would turn the ENOEXEC case into EACCES.
	 */
	xsnprintf(tmpdir, sizeof(tmpdir), "%.*s/.test-spawn.XXXXXX",
	          (int)(strrchr(self, '/') - self), self);
	if (!mkdtemp(tmpdir))
		return 1;

	plan_run(test_exec_errors);
	plan_run(test_cwd);
	plan_run(test_pgrp);
	plan_run(test_stdio);
	plan_run(test_dup2_corners);
	plan_run(test_keep_fds);
	plan_run(test_signals);
	plan_run(test_capture_large);
	plan_run(test_spawn_run);
	plan_run(test_capture_limits);
	plan_run(test_env_path);
	plan_run(test_argv_else);
	plan_run(test_status_to_code);
	plan_run(test_death_sig);

	{
		char path[PATH_MAX];

		xsnprintf(path, sizeof(path), "%s/plain", tmpdir);
		unlink(path);
		xsnprintf(path, sizeof(path), "%s/garbage", tmpdir);
		unlink(path);
		rmdir(tmpdir);
	}
	return done_testing();
}
