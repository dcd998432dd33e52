/* lib/util.c and lib/sha256.c: numbers, suggestions, files and directories, processes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "lib/buf.h"
#include "lib/sha256.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

static char tmpdir[PATH_MAX];

static const char *in_tmp(const char *name)
{
	static char path[PATH_MAX];

	xsnprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

/* The names in dir, sorted, space-separated, into a static string. */
static const char *list_dir(const char *dir)
{
	static char out[1024];
	struct buf b = BUF_INIT(sizeof(out) - 1);
	char *argv[] = {"ls", "-A", (char *)dir, NULL};
	size_t i;

	run_capture(argv, NULL, NULL, &b, NULL, NULL);
	for (i = 0; i < b.len; i++)
		if (b.p[i] == '\n')
			b.p[i] = ' ';
	buf_rtrim(&b);
	xsnprintf(out, sizeof(out), "%s", b.p);
	buf_release(&b);
	return out;
}

static void test_parse_long(void)
{
	long v = 7;

	ok(!parse_long("42", 0, 100, &v) && v == 42, "42");
	ok(!parse_long("-42", -100, 100, &v) && v == -42, "-42");
	ok(!parse_long("+5", 0, 10, &v) && v == 5, "+5");
	ok(!parse_long("0", 0, 0, &v) && v == 0, "0 within [0, 0]");
	ok(!parse_long("9223372036854775807", LONG_MIN, LONG_MAX, &v) && v == LONG_MAX, "LONG_MAX");
	v = 7;
	is_int(parse_long("", 0, 10, &v), -EINVAL, "empty is -EINVAL");
	is_int(parse_long(NULL, 0, 10, &v), -EINVAL, "NULL is -EINVAL");
	is_int(parse_long(" 1", 0, 10, &v), -EINVAL, "leading space is -EINVAL");
	is_int(parse_long("1 ", 0, 10, &v), -EINVAL, "trailing space is -EINVAL");
	is_int(parse_long("1x", 0, 10, &v), -EINVAL, "trailing junk is -EINVAL");
	is_int(parse_long("0x10", 0, 100, &v), -EINVAL, "hex is -EINVAL");
	is_int(parse_long("-", 0, 10, &v), -EINVAL, "a lone sign is -EINVAL");
	is_int(parse_long("1.5", 0, 10, &v), -EINVAL, "a fraction is -EINVAL");
	is_int(parse_long("11", 0, 10, &v), -ERANGE, "above max is -ERANGE");
	is_int(parse_long("-1", 0, 10, &v), -ERANGE, "below min is -ERANGE");
	is_int(parse_long("9223372036854775808", LONG_MIN, LONG_MAX, &v), -ERANGE,
	       "past LONG_MAX is -ERANGE");
	is_int(parse_long("-9223372036854775809", LONG_MIN, LONG_MAX, &v), -ERANGE,
	       "past LONG_MIN is -ERANGE");
	is_int(v, 7, "errors leave *out alone");
}

static void test_parse_double(void)
{
	double d = 7;

	ok(!parse_double("0.5", &d) && d == 0.5, "0.5");
	ok(!parse_double("1e-7", &d) && d == 1e-7, "1e-7");
	ok(!parse_double("-3", &d) && d == -3, "-3");
	ok(!parse_double(".25", &d) && d == 0.25, ".25");
	d = 7;
	is_int(parse_double("", &d), -EINVAL, "empty is -EINVAL");
	is_int(parse_double(NULL, &d), -EINVAL, "NULL is -EINVAL");
	is_int(parse_double(" 1", &d), -EINVAL, "leading space is -EINVAL");
	is_int(parse_double("1.5x", &d), -EINVAL, "trailing junk is -EINVAL");
	is_int(parse_double("1.5 ", &d), -EINVAL, "trailing space is -EINVAL");
	is_int(parse_double("nan", &d), -EINVAL, "nan is -EINVAL");
	is_int(parse_double("inf", &d), -EINVAL, "inf is -EINVAL");
	is_int(parse_double("0x10", &d), -EINVAL, "a hex float is -EINVAL (decimal only)");
	ok(!str_control("a b/c\xc3\xa9") && !str_control(""),
	   "str_control(): none in printable text");
	{
		const char *s = "ab\ncd", *t = "x\x7f", *u = "\x1b[2J";

		ok(str_control(s) == s + 2 && str_control(t) == t + 1 && str_control(u) == u,
		   "  the first control byte: a newline, DEL, an escape");
	}
	is_int(parse_double("-0X1p3", &d), -EINVAL, "  in any case");
	is_int(parse_double("1e999", &d), -ERANGE, "overflow is -ERANGE");
	is_int(parse_double("-1e999", &d), -ERANGE, "negative overflow is -ERANGE");
	is_int(parse_double("1e-400", &d), -ERANGE, "underflow to zero is -ERANGE");
	ok(d == 7, "errors leave *out alone");
}

static void test_suggest(void)
{
	static const char *const cmds[] = {"launch", "status", "stop", "logs", "down"};
	size_t n = ARRAY_SIZE(cmds);

	is_int(edit_distance("kitten", "sitting"), 3, "kitten/sitting");
	is_int(edit_distance("", "abc"), 3, "from empty");
	is_int(edit_distance("abc", ""), 3, "to empty");
	is_int(edit_distance("flaw", "lawn"), 2, "flaw/lawn");
	is_int(edit_distance("same", "same"), 0, "equal");
	is_int(edit_distance("ABC", "abc"), 0, "case-insensitive");
	ok(edit_distance("a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") >
	           3,
	   "past 64 chars: far");
	is_str(nearest_word("statsu", cmds, n), "status", "statsu -> status");
	is_str(nearest_word("lauch", cmds, n), "launch", "lauch -> launch");
	is_str(nearest_word("LOGS", cmds, n), "logs", "LOGS -> logs");
	is_str(nearest_word("sta", cmds, n), "status", "a prefix: sta -> status");
	is_str(nearest_word("xyzzy", cmds, n), NULL, "nothing close: NULL");
	is_str(nearest_word("", cmds, n), NULL, "empty: NULL");
	is_str(nearest_word("x", cmds, 0), NULL, "no candidates: NULL");
}

static void test_write_file_atomic(void)
{
	const char *path = xstrdup(in_tmp("f"));
	struct buf b = BUF_INIT(0);
	char cwd[PATH_MAX];
	struct stat st;

	is_int(write_file_atomic(path, "one\n", 4, 0640), 0, "write_file_atomic");
	ok(!buf_read_file(&b, path) && !strcmp(b.p, "one\n"), "content");
	ok(!stat(path, &st) && (st.st_mode & 07777) == 0640, "mode 0640 (umask ignored)");
	buf_reset(&b);
	is_int(write_file_atomic(path, "two", 3, 0600), 0, "replace an existing file");
	ok(!buf_read_file(&b, path) && !strcmp(b.p, "two"), "new content");
	ok(!stat(path, &st) && (st.st_mode & 07777) == 0600, "new mode");
	is_str(list_dir(tmpdir), "f", "no temp file left behind");
	is_int(write_file_atomic(in_tmp("nodir/f"), "x", 1, 0600), -ENOENT,
	       "into a missing directory: -ENOENT");
	is_str(list_dir(tmpdir), "f", "still no temp file");
	unlink(path);

	/* A bare file name: written in the current directory. */
	if (!ok(getcwd(cwd, sizeof(cwd)) && !chdir(tmpdir), "chdir to the scratch dir"))
		return;
	is_int(write_file_atomic("rel", "r", 1, 0600), 0, "a path without a directory");
	buf_reset(&b);
	ok(!buf_read_file(&b, "rel") && !strcmp(b.p, "r"), "lands in the current directory");
	unlink("rel");
	if (!ok(!chdir(cwd), "chdir back"))
		return;
	is_str(list_dir(tmpdir), "", "nothing left behind");
	free((char *)path);
	buf_release(&b);
}

static void test_dirs(void)
{
	const char *d = xstrdup(in_tmp("a/b/c")), *file = xstrdup(in_tmp("file"));
	char sub[PATH_MAX];
	struct stat st;

	is_int(mkdir_p(d, 0755), 0, "mkdir_p a/b/c");
	ok(!stat(d, &st) && S_ISDIR(st.st_mode), "creates every component");
	is_int(mkdir_p(d, 0755), 0, "again: existing dirs are fine");
	xsnprintf(sub, sizeof(sub), "%s/", d);
	is_int(mkdir_p(sub, 0755), 0, "a trailing slash");
	write_file_atomic(file, "x", 1, 0600);
	is_int(mkdir_p(file, 0755), -ENOTDIR, "an existing file is not a directory");
	xsnprintf(sub, sizeof(sub), "%s/sub", file);
	is_int(mkdir_p(sub, 0755), -ENOTDIR, "a file in the middle: -ENOTDIR");
	is_int(mkdir_p("", 0755), -ENOENT, "an empty path is -ENOENT");
	xsnprintf(sub, sizeof(sub), "%s", in_tmp("m//n///o/"));
	is_int(mkdir_p(sub, 0700), 0, "doubled slashes, every component new");
	ok(!stat(in_tmp("m/n/o"), &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
	   "the deepest is made, with the mode");
	ok(!stat(in_tmp("m/n"), &st) && (st.st_mode & 0777) == 0700, "so is a missing parent");
	ok(!symlink("nowhere", in_tmp("dangling")), "a dangling link");
	is_int(mkdir_p(in_tmp("dangling"), 0700), -ENOENT, "is not a directory made");
	xsnprintf(sub, sizeof(sub), "%s", in_tmp("dangling/x"));
	ok(mkdir_p(sub, 0700) < 0, "nor is a path under it");
	unlink(in_tmp("dangling"));
	rmdir(in_tmp("m/n/o"));
	rmdir(in_tmp("m/n"));
	rmdir(in_tmp("m"));

	is_int(ensure_private_dir(in_tmp("priv/x")), 0, "ensure_private_dir of a new path");
	ok(!stat(in_tmp("priv/x"), &st) && (st.st_mode & 07777) == 0700, "is mode 0700");
	chmod(in_tmp("priv/x"), 0755);
	is_int(ensure_private_dir(in_tmp("priv/x")), 0, "an existing 0755 dir");
	ok(!stat(in_tmp("priv/x"), &st) && (st.st_mode & 07777) == 0700, "is made 0700");
	xsnprintf(sub, sizeof(sub), "%s", in_tmp("priv/x"));
	ok(!symlink(sub, in_tmp("link")), "a symlink to a directory");
	is_int(ensure_private_dir(in_tmp("link")), -ENOTDIR, "is refused");
	is_int(ensure_private_dir(file), -ENOTDIR, "so is a file");

	unlink(in_tmp("link"));
	unlink(file);
	rmdir(in_tmp("priv/x"));
	rmdir(in_tmp("priv"));
	rmdir(d);
	rmdir(in_tmp("a/b"));
	rmdir(in_tmp("a"));
	free((char *)d);
	free((char *)file);
}

static void test_proc_start_time(void)
{
	char *argv[] = {"true", NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	pid_t pid;

	ok(proc_start_time(getpid()) > 0, "our own start time is known");
	ok(proc_start_time(getpid()) == proc_start_time(getpid()), "and stable");
	{
		char state = 0;
		uint64_t st = proc_stat(getpid(), &state);

		ok(st == proc_start_time(getpid()) && state == 'R',
		   "proc_stat: the same start time, and we are running ('%c')",
		   state ? state : '0');
	}
	o.argv = argv;
	if (!ok(!spawn(&o, &pid), "start a child"))
		return;
	{
		char state = 0;
		int i;

		/* Not reaped yet: a zombie once it has exited. */
		for (i = 0; i < 500 && (proc_stat(pid, &state), state != 'Z'); i++)
			poll(NULL, 0, 2);
		ok(state == 'Z' && proc_stat(pid, NULL) > 0, "an exited, unreaped child: 'Z'");
	}
	if (!ok(!spawn_wait(pid, NULL), "reap it"))
		return;
	is_int(proc_start_time(pid), 0, "a reaped child has none");
	is_int(proc_start_time(0x7ffffff0), 0, "nor a pid that never existed");
}

static void test_sha256(void)
{
	char hex[SHA256_HEX_LEN + 1];
	char *mb = xmalloc(1000000);
	const char *path = xstrdup(in_tmp("million"));

	sha256_hex("", 0, hex);
	is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	       "sha256 of \"\"");
	sha256_hex("abc", 3, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	       "sha256 of \"abc\"");
	memset(mb, 'a', 1000000);
	write_file_atomic(path, mb, 1000000, 0600);
	is_int(sha256_file(path, hex), 0, "sha256_file of a million 'a'");
	is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
	       "matches the FIPS 180-2 vector (many read blocks)");
	is_int(sha256_file(in_tmp("missing"), hex), -ENOENT, "a missing file is -ENOENT");
	unlink(path);
	free((char *)path);
	free(mb);
}

/* A socket path far longer than sun_path's 107 bytes: bound and reached all the same. */
static void test_unix_long_path(void)
{
	struct buf dir = BUF_INIT(0);
	char *sock, *tail;
	int lfd, cfd, afd;
	size_t i;

	buf_adds(&dir, tmpdir);
	for (i = 0; i < 3; i++) {
		buf_addf(&dir, "/%060zu", i);
		ok(!mkdir(dir.p, 0700), "mkdir a 60-character level");
	}
	sock = xasprintf("%s/supervisor.sock", dir.p);
	ok(strlen(sock) > 200, "a %zu-byte socket path", strlen(sock));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	is_int(unix_bind(lfd, sock), 0, "unix_bind() binds it");
	ok(!listen(lfd, 4), "listen");
	cfd = unix_connect(sock);
	ok(cfd >= 0, "unix_connect() reaches it");
	afd = accept(lfd, NULL, NULL);
	ok(afd >= 0 && write(cfd, "x", 1) == 1, "and the two speak");
	if (afd >= 0) {
		char c = 0;

		ok(read(afd, &c, 1) == 1 && c == 'x', "... one byte through");
		close(afd);
	}
	if (cfd >= 0)
		close(cfd);
	close(lfd);
	is_int(unix_connect(sock), -ECONNREFUSED, "no listener: -ECONNREFUSED");
	unlink(sock);
	is_int(unix_connect(sock), -ENOENT, "... once gone: -ENOENT, not -ENAMETOOLONG");
	tail = xasprintf("%s/%0120d", tmpdir, 0);
	is_int(unix_connect(tail), -ENAMETOOLONG, "a 120-byte socket name itself: -ENAMETOOLONG");
	free(tail);
	free(sock);
	for (i = 3; i > 0; i--) {
		rmdir(dir.p);
		*strrchr(dir.p, '/') = '\0';
	}
	buf_release(&dir);
}

#define ACCOUNT_THREADS 8

static pthread_barrier_t account_go;

static void *account_main(void *arg)
{
	pthread_barrier_wait(&account_go);
	*(const struct account **)arg = own_account();
	return NULL;
}

/* Many threads asking at once (the launcher's per-node threads do) get one sound entry. */
static void test_own_account(void)
{
	const struct account *got[ACCOUNT_THREADS];
	pthread_t th[ACCOUNT_THREADS];
	struct passwd pw, *res = NULL;
	char b[16384];
	int i, same = 1;

	pthread_barrier_init(&account_go, NULL, ACCOUNT_THREADS);
	for (i = 0; i < ACCOUNT_THREADS; i++)
		pthread_create(&th[i], NULL, account_main, &got[i]);
	for (i = 0; i < ACCOUNT_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&account_go);
	for (i = 1; i < ACCOUNT_THREADS; i++)
		same &= got[i] == got[0];
	ok(same, "own_account: %d threads at once get the one entry", ACCOUNT_THREADS);
	if (getpwuid_r(getuid(), &pw, b, sizeof(b), &res) || !res) {
		is_str(got[0]->name, "", "own_account: no passwd entry, no name");
		return;
	}
	is_str(got[0]->name, pw.pw_name, "own_account: the real uid's name");
	is_str(got[0]->home, pw.pw_dir, "own_account: its home");
	is_str(got[0]->shell, pw.pw_shell, "own_account: its shell");
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	xsnprintf(tmpdir, sizeof(tmpdir), "%s/skiff-test-util.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir))
		return 1;
	plan_run(test_parse_long);
	plan_run(test_parse_double);
	plan_run(test_suggest);
	plan_run(test_write_file_atomic);
	plan_run(test_dirs);
	plan_run(test_proc_start_time);
	plan_run(test_sha256);
	plan_run(test_unix_long_path);
	plan_run(test_own_account);
	rmdir(tmpdir);
	return done_testing();
}
