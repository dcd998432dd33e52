/*
 * Runners (bootstrap/runner*.c): the exact argv the ssh runner builds for several
 * targets, and that hostile script text reaches the node's sh byte for byte.
 *
 * No fake ssh: the ssh argv is checked word for word, and its remote command (the one
 * string sshd hands to the login shell as `SHELL -c STRING`) is run here the way sshd
 * runs it, by every POSIX shell on this machine (sh, dash, bash, busybox sh). The local
 * runner is run for real. The real ssh round trip is in tests/t/t0500-bootstrap.sh; a
 * real ssh client failing to connect (to a closed local port) is here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/infra/runner.h"
#include "lib/buf.h"
#include "lib/quote.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

static char tmp[64];

/* A local node made as the local infra's pick makes one: its directory, then its runner. */
static struct runner *local_node(const char *home)
{
	int rc = mkdir_p(home, 0700);

	ok(!rc, "node directory %s made", home);
	return runner_local_new("loc", home);
}

/* The argv joined with '|' (the expected values hold no '|'). */
static char *argv_str(const struct argv *a)
{
	struct buf b = BUF_INIT(0);
	size_t i;

	for (i = 0; i < a->n; i++) {
		if (i)
			buf_addch(&b, '|');
		buf_adds(&b, a->v[i]);
	}
	return buf_detach(&b, NULL);
}

static char *build(struct runner *r, const char *script, int interactive)
{
	struct argv a;
	char *s;
	int rc;

	argv_init(&a);
	rc = r->ops->build_argv(r, script, interactive, &a);
	s = rc ? xasprintf("error %d", rc) : argv_str(&a);
	argv_release(&a);
	return s;
}

/* The options every ssh call gets; r's ControlPath must be SOCK_DIR/<40 hex digits>. */
static char *common_opts(const char *known_dir, const char *sock_dir, const struct runner *r)
{
	const char *cp = runner_ssh_control(r);
	size_t n = strlen(sock_dir), i;
	int good = cp && !strncmp(cp, sock_dir, n) && cp[n] == '/' && strlen(cp + n + 1) == 40;

	for (i = 0; good && cp[n + 1 + i]; i++)
		good = strchr("0123456789abcdef", cp[n + 1 + i]) != NULL;
	ok(good, "the ControlPath is the socket dir and 40 hex digits: %s", cp ? cp : "(none)");
	return xasprintf(
	        "-o|StrictHostKeyChecking=accept-new|-o|UserKnownHostsFile=%s/known_hosts|"
	        "-o|ConnectTimeout=10|-o|ServerAliveInterval=3|-o|ServerAliveCountMax=3|"
	        "-o|ControlMaster=auto|-o|ControlPath=%s|-o|ControlPersist=300|"
	        "-o|KexAlgorithms=^curve25519-sha256|-o|Ciphers=^aes128-gcm@openssh.com|-o|LogLevel=INFO",
	        known_dir, cp ? cp : "");
}

static void test_argv_helpers(void)
{
	struct argv a;
	char *s;

	argv_init(&a);
	ok(a.n == 0, "an empty argv has no words");
	argv_push(&a, "one");
	argv_pushf(&a, "%s-%d", "two", 2);
	ok(a.n == 2 && a.v[2] == NULL, "push and pushf add words, NULL-terminated");
	s = argv_str(&a);
	is_str(s, "one|two-2", "the words");
	free(s);
	argv_release(&a);
	argv_release(&a);
	ok(a.n == 0 && a.v == NULL, "release leaves it empty, twice is fine");
}

static void test_ssh_argv(void)
{
	struct ssh_target t = {0};
	struct runner *r;
	char *got, *want, *opts, *cp1, *cd = xasprintf("%s/cm", tmp);

	t.host = "10.0.0.5";
	t.control_dir = cd;
	r = runner_ssh_new("n1", &t);
	ok(r != NULL, "a bare host");
	opts = common_opts(cd, cd, r);
	got = build(r, "echo hi", 0);
	want = xasprintf("ssh|-T|-o|BatchMode=yes|%s|--|10.0.0.5|exec sh -c 'echo hi'", opts);
	is_str(got, want, "bare host: -T, BatchMode, the common options, --, host, one command");
	free(got);
	free(want);
	ok(!strcmp(r->ip, "10.0.0.5") && !strcmp(r->name, "n1"), "name and ip");

	r->diag_path = "/d/diag.1";
	got = build(r, "true", 0);
	want = xasprintf("ssh|-T|-o|BatchMode=yes|%s|-E|/d/diag.1|--|10.0.0.5|exec sh -c true",
	                 opts);
	is_str(got, want, "with a diag file: -E FILE");
	free(got);
	free(want);
	r->diag_path = NULL;
	cp1 = xstrdup(runner_ssh_control(r));
	runner_free(r);

	t.user = "alice";
	t.port = 2222;
	t.identity_file = "/keys/id 50%";
	t.proxy_jump = "bob@bastion:22";
	t.ssh_config = "/etc/skiff/ssh config";
	r = runner_ssh_new("n2", &t);
	ok(r != NULL, "a full target");
	ok(strcmp(cp1, runner_ssh_control(r)) != 0, "another target, another ControlPath");
	free(opts);
	opts = common_opts(cd, cd, r);
	got = build(r, "a 'b' $c", 0);
	want = xasprintf("ssh|-T|-o|BatchMode=yes|%s|-F|/etc/skiff/ssh config|-p|2222|"
	                 "-i|/keys/id 50%%%%|-o|IdentitiesOnly=yes|-J|bob@bastion:22|-l|alice|--|"
	                 "10.0.0.5|exec sh -c 'a '\\''b'\\'' $c'",
	                 opts);
	is_str(got, want, "config, port, identity (%% escaped), jump, user; the script quoted");
	free(got);
	free(want);

	got = build(r, "top", 1);
	want = xasprintf("ssh|-tt|%s|-F|/etc/skiff/ssh config|-p|2222|-i|/keys/id 50%%%%|-o|"
	                 "IdentitiesOnly=yes|-J|bob@bastion:22|-l|alice|--|10.0.0.5|exec sh -c top",
	                 opts);
	is_str(got, want, "interactive: -tt, no BatchMode (a passphrase may be asked)");
	free(got);
	free(want);

	got = build(r, NULL, 1);
	want = xasprintf("ssh|-tt|%s|-F|/etc/skiff/ssh config|-p|2222|-i|/keys/id 50%%%%|-o|"
	                 "IdentitiesOnly=yes|-J|bob@bastion:22|-l|alice|--|10.0.0.5",
	                 opts);
	is_str(got, want, "interactive without a script: a login shell (no command)");
	free(got);
	free(want);
	got = build(r, NULL, 0);
	is_str(got, "error -22", "no script and not interactive: -EINVAL");
	free(got);

	/* A master listens at the ControlPath: skiff asks it itself, ssh as the fallback. */
	{
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", runner_ssh_control(r));
		ok(fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)), "a socket there");
		r->diag_path = "/d/diag.2";
		got = build(r, "true", 0);
		want = xasprintf("/proc/self/exe|__ssh-mux|-E|/d/diag.2|%s|exec sh -c true|--|"
		                 "ssh|-T|-o|BatchMode=yes|%s|-E|/d/diag.2|-F|/etc/skiff/ssh config|"
		                 "-p|2222|-i|/keys/id 50%%%%|-o|IdentitiesOnly=yes|-J|"
		                 "bob@bastion:22|-l|alice|--|10.0.0.5|exec sh -c true",
		                 runner_ssh_control(r), opts);
		is_str(got, want, "over a master: __ssh-mux SOCKET COMMAND -- the ssh command");
		free(got);
		free(want);
		r->diag_path = NULL;
		got = build(r, "top", 1);
		ok(!strncmp(got, "ssh|-tt|", 8), "interactive: ssh itself (a terminal)");
		free(got);
		if (fd >= 0)
			close(fd);
		unlink(runner_ssh_control(r));
	}
	runner_free(r);
	free(opts);
	free(cp1);
	free(cd);
}

static void test_ssh_control_dir(void)
{
	struct ssh_target t = {0};
	struct runner *r;
	char *got, *want, *opts, *fb = xasprintf("/tmp/skiff-ssh.%ld", (long)geteuid());
	char *longdir = xasprintf("%s/a-directory-name-that-is-long", tmp);
	char *spaced = xasprintf("%s/with space", tmp);
	struct stat st;

	t.host = "h";
	t.control_dir = longdir;
	r = runner_ssh_new("n", &t);
	opts = common_opts(longdir, fb, r);
	got = build(r, "x", 0);
	want = xasprintf("ssh|-T|-o|BatchMode=yes|%s|--|h|exec sh -c x", opts);
	is_str(got, want, "a long control dir: sockets under /tmp/skiff-ssh.UID, known_hosts not");
	ok(!stat(fb, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700 &&
	           st.st_uid == geteuid(),
	   "the fallback dir is ours, 0700");
	ok(!stat(longdir, &st) && (st.st_mode & 0777) == 0700, "the control dir is created 0700");
	ok(!strcmp(r->diag_dir, fb), "diag files go to the socket dir");
	free(got);
	free(want);
	free(opts);
	runner_free(r);

	t.control_dir = spaced;
	r = runner_ssh_new("n", &t);
	opts = common_opts(fb, fb, r);
	got = build(r, "x", 0);
	want = xasprintf("ssh|-T|-o|BatchMode=yes|%s|--|h|exec sh -c x", opts);
	is_str(got, want, "a control dir with a blank: both in the fallback (ssh would split it)");
	free(got);
	free(want);
	free(opts);
	runner_free(r);

	t.control_dir = NULL;
	r = runner_ssh_new("n", &t);
	ok(r && !strcmp(r->diag_dir, fb), "no control dir: the fallback");
	runner_free(r);
	free(fb);
	free(longdir);
	free(spaced);
}

static void test_ssh_bad_targets(void)
{
	static const char *const hosts[] = {"-oProxyCommand=touch /tmp/x", "", "a b", "a\nb",
	                                    "h\t"};
	struct ssh_target t = {0};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hosts); i++) {
		t.host = hosts[i];
		ok(runner_ssh_new("n", &t) == NULL, "bad host %zu is refused", i);
	}
	t.host = NULL;
	ok(runner_ssh_new("n", &t) == NULL, "no host is refused");
	t.host = "h";
	t.user = "-oProxyCommand=x";
	ok(runner_ssh_new("n", &t) == NULL, "a user starting with '-' is refused");
	t.user = NULL;
	t.proxy_jump = "-oProxyCommand=x";
	ok(runner_ssh_new("n", &t) == NULL, "a jump host starting with '-' is refused");
	t.proxy_jump = NULL;
	t.port = 70000;
	ok(runner_ssh_new("n", &t) == NULL, "port 70000 is refused");
}

/* Hostile script text: every value must come back byte for byte. */
static const char *const hostile[] = {
        "it's",
        "$(touch /tmp/skiff-test-runner-pwned)",
        "`touch /tmp/skiff-test-runner-pwned`",
        "line one\nline two\n",
        "\xff\xfe non-UTF-8 \x80\xc3",
        "'",
        "''\"\"",
        "back\\slash\\",
        "$HOME ${HOME} $0 $1 $@ $* $$",
        "* ? [a-z] ~ ~root",
        "-n",
        "  spaced  \t tab ",
        "!event ; | & && || > < >> << ( ) { }",
        "# not a comment",
        "",
};

/* All bytes 1..255, twice. */
static char *all_bytes(void)
{
	char *s = xmalloc(511);
	int i;

	for (i = 0; i < 510; i++)
		s[i] = (char)(i % 255 + 1);
	s[510] = '\0';
	return s;
}

/* `printf %s QUOTED`: prints the value back. */
static char *printf_script(const char *v)
{
	struct buf b = BUF_INIT(0);

	buf_adds(&b, "printf %s ");
	sh_quote(&b, v);
	return buf_detach(&b, NULL);
}

/*
 * sshd runs the remote command as `LOGIN_SHELL -c STRING`: do exactly that with each
 * POSIX shell here, with the STRING our ssh argv ends with.
 */
static void test_ssh_remote_parse(void)
{
	static const char *const shells[][2] = {
	        {"/bin/sh", NULL},      {"/bin/dash", NULL}, {"/bin/bash", NULL},
	        {"/bin/busybox", "sh"}, {"/bin/zsh", NULL},
	};
	struct ssh_target t = {.host = "h"};
	char *cd = xasprintf("%s/cm", tmp);
	struct runner *r;
	char *bytes = all_bytes();
	size_t i, k;

	t.control_dir = cd;
	r = runner_ssh_new("n", &t);
	for (k = 0; k < ARRAY_SIZE(shells); k++) {
		int fails = 0, n = 0;

		if (access(shells[k][0], X_OK))
			continue;
		for (i = 0; i <= ARRAY_SIZE(hostile); i++) {
			const char *v = i < ARRAY_SIZE(hostile) ? hostile[i] : bytes;
			char *script = printf_script(v);
			struct argv a;
			struct buf out = BUF_INIT(0);
			char *av[5];
			int st = -1, j = 0, rc;

			argv_init(&a);
			r->ops->build_argv(r, script, 0, &a);
			av[j++] = (char *)shells[k][0];
			if (shells[k][1])
				av[j++] = (char *)shells[k][1];
			av[j++] = "-c";
			av[j++] = a.v[a.n - 1];
			av[j] = NULL;
			rc = run_capture(av, NULL, NULL, &out, NULL, &st);
			n++;
			if (rc || st || out.len != strlen(v) || memcmp(out.p, v, out.len)) {
				fails++;
				printf("# %s: value %zu came back as '%s' (rc %d, status %d)\n",
				       shells[k][0], i, out.p, rc, st);
			}
			buf_release(&out);
			argv_release(&a);
			free(script);
		}
		ok(!fails && n, "%s %s -c <ssh's remote command>: %d hostile values come back",
		   shells[k][0], shells[k][1] ? shells[k][1] : "", n);
	}
	ok(access("/tmp/skiff-test-runner-pwned", F_OK), "nothing was ever executed from a value");
	runner_free(r);
	free(bytes);
	free(cd);
}

static void test_local_round_trip(void)
{
	char *home = xasprintf("%s/node", tmp);
	struct runner *r = local_node(home);
	char *bytes = all_bytes();
	int fails = 0;
	size_t i;

	ok(r != NULL, "local runner");
	for (i = 0; i <= ARRAY_SIZE(hostile); i++) {
		const char *v = i < ARRAY_SIZE(hostile) ? hostile[i] : bytes;
		char *script = printf_script(v);
		struct buf out = BUF_INIT(0), err = BUF_INIT(0);
		int st = -1, rc;

		rc = runner_capture(r, script, NULL, 0, &out, &err, 10000, &st);
		if (rc || st || out.len != strlen(v) || memcmp(out.p, v, out.len)) {
			fails++;
			printf("# value %zu came back as '%s' (rc %d, status %d, err '%s')\n", i,
			       out.p, rc, st, err.p);
		}
		buf_release(&out);
		buf_release(&err);
		free(script);
	}
	ok(!fails, "runner_capture of printf %%s QUOTED returns the bytes of %zu hostile values",
	   ARRAY_SIZE(hostile) + 1);
	ok(access("/tmp/skiff-test-runner-pwned", F_OK), "nothing was ever executed from a value");
	runner_free(r);
	free(bytes);
	free(home);
}

static void test_local_stdin_env_status(void)
{
	char *home = xasprintf("%s/node2", tmp), *want, real[PATH_MAX];
	struct runner *r;
	struct buf out = BUF_INIT(0), err = BUF_INIT(0);
	size_t n = 1 << 20, i;
	char *in = xmalloc(n);
	int st = -1, rc;

	setenv("SKIFF_HOME", "/launcher/home", 1);
	r = local_node(home);
	ok(r && realpath(home, real), "the runner takes the node's directory");
	for (i = 0; i < n; i++)
		in[i] = (char)(i * 7 + i / 256);
	rc = runner_capture(r, "cat", in, n, &out, &err, 10000, &st);
	ok(!rc && !st && out.len == n && !memcmp(out.p, in, n),
	   "1 MiB of every byte value (NUL too) goes through stdin and back");
	buf_reset(&out);
	rc = runner_capture(r,
	                    "printf '%s|%s|%s|' \"$HOME\" \"$PWD\" \"${SKIFF_HOME-unset}\"; pwd -P",
	                    NULL, 0, &out, &err, 10000, &st);
	want = xasprintf("%s|%s|unset|%s\n", real, real, real);
	ok(!rc && !st, "env script ran");
	is_str(out.p, want, "HOME and PWD are the node's home, SKIFF_HOME is not passed on");
	free(want);
	setenv("FOO_LEAK", "1", 1);
	setenv("TERM", "xterm", 1);
	setenv("SKIFF_PIP_INDEX_URL", "http://idx", 1);
	buf_reset(&out);
	rc = runner_capture(r,
	                    "printf '%s|%s|%s|%s|%s' \"${FOO_LEAK-unset}\" \"${TERM-unset}\" "
	                    "\"$PATH\" \"$SKIFF_PIP_INDEX_URL\" \"${LOGNAME:+set}\"",
	                    NULL, 0, &out, &err, 10000, &st);
	is_str(out.p, "unset|unset|" RUNNER_LOCAL_PATH "|http://idx|set",
	       "a login's environment: the launcher's own variables stay behind, SKIFF_* pass");
	unsetenv("FOO_LEAK");
	unsetenv("SKIFF_PIP_INDEX_URL");
	ok(runner_local_env_kept("LANG=C.UTF-8") && runner_local_env_kept("SKIFF_DEBUG=1") &&
	           !runner_local_env_kept("SKIFF_HOME=/x") && !runner_local_env_kept("TERM=x") &&
	           !runner_local_env_kept("LANGUAGE=x") && !runner_local_env_kept("SKIFFX=1"),
	   "kept: LANG and SKIFF_* but SKIFF_HOME");

	rc = runner_capture(r, "echo out; echo err >&2; exit 3", NULL, 0, &out, &err, 10000, &st);
	ok(!rc && st == 3, "exit status 3 comes back");
	ok(strstr(err.p, "err\n") && !strstr(out.p, "err"), "stderr is captured apart");
	rc = runner_capture(r, "exit 255", NULL, 0, NULL, NULL, 10000, &st);
	ok(!rc && st == 255, "a local 255 is the script's, not a transport failure");
	rc = runner_capture(r, "kill -TERM $$", NULL, 0, NULL, NULL, 10000, &st);
	ok(!rc && st == 128 + SIGTERM, "killed by a signal: 128 + signal");
	rc = runner_run(r, "exit 4", NULL, 10000, &st);
	ok(!rc && st == 4, "runner_run: exit status");
	{
		struct buf small = BUF_INIT(1000);

		rc = runner_capture(r, "head -c 100000 /dev/zero; exit 0", NULL, 0, &small, NULL,
		                    10000, &st);
		ok(rc == -ENOBUFS && small.len == 1000,
		   "output over the buf's max: -ENOBUFS, what fit is kept (%zu bytes)", small.len);
		buf_release(&small);
	}
	{
		pid_t pid;
		int raw = 0;
		struct runner_io io = {RUNNER_NULL, RUNNER_NULL, RUNNER_NULL};

		rc = runner_spawn(r, "exit 7", 0, &io, &pid);
		ok(!rc && !spawn_wait(pid, &raw) && status_to_code(raw) == 7,
		   "runner_spawn: the caller reaps the exit status");
		setenv("TERM", "xterm-test", 1);
		rc = runner_spawn(r, "test \"$TERM\" = xterm-test", 1, &io, &pid);
		ok(!rc && !spawn_wait(pid, &raw) && status_to_code(raw) == 0,
		   "a terminal session keeps the terminal's TERM");
		rc = runner_spawn(r, "test -z \"${TERM+set}\"", 0, &io, &pid);
		ok(!rc && !spawn_wait(pid, &raw) && status_to_code(raw) == 0,
		   "other calls have no TERM");
		unsetenv("TERM");
	}
	unsetenv("SKIFF_HOME");
	runner_free(r);
	buf_release(&out);
	buf_release(&err);
	free(in);
	free(home);
}

/* A process is gone (or a zombie nobody reaped yet), polling up to 5 s. */
static int gone(pid_t pid)
{
	char path[64], data[512], *p;
	int i;

	for (i = 0; i < 500; i++) {
		FILE *f;

		xsnprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
		f = fopen(path, "r");
		if (!f)
			return 1;
		p = fgets(data, sizeof(data), f) ? strrchr(data, ')') : NULL;
		fclose(f);
		if (p && (p[2] == 'Z' || p[2] == 'X'))
			return 1;
		poll_ms(10);
	}
	return 0;
}

static void test_local_timeout_and_leftovers(void)
{
	char *home = xasprintf("%s/node3", tmp);
	struct runner *r = local_node(home);
	struct buf out = BUF_INIT(0);
	long bg = 0;
	int st = -1, rc;

	rc = runner_capture(r, "sleep 60 & echo $!; wait", NULL, 0, &out, NULL, 300, &st);
	ok(rc == -ETIMEDOUT, "a script past its timeout: -ETIMEDOUT");
	buf_rtrim(&out);
	rc = parse_long(out.p, 1, INT_MAX, &bg);
	ok(!rc && gone((pid_t)bg), "its whole process group was killed (the background sleep too)");
	buf_reset(&out);
	rc = runner_run(r, "sleep 60", NULL, 200, &st);
	ok(rc == -ETIMEDOUT, "runner_run times out too");

	rc = runner_capture(r, "sleep 60 & echo $!", NULL, 0, &out, NULL, 20000, &st);
	buf_rtrim(&out);
	ok(!rc && !st && !parse_long(out.p, 1, INT_MAX, &bg),
	   "a background process that keeps stdout open does not hold the call");
	if (bg > 0)
		kill((pid_t)bg, SIGKILL);
	runner_free(r);
	buf_release(&out);
	free(home);
}

/*
 * runner_close_within(): a session that exits once its stdin ends gives its status at
 * once; one that closes its output and hangs on is killed when its time is up, group and
 * all, and the call returns then.
 */
static void test_local_close_within(void)
{
	char *home = xasprintf("%s/node4", tmp);
	struct runner *r = local_node(home);
	struct runner_proc p;
	int64_t t0;
	int st = -1, rc;
	char c;

	rc = runner_open(r, "cat >/dev/null; exit 7", 0, &p);
	ok(!rc, "a session that reads its stdin to the end");
	t0 = now_ms();
	rc = runner_close_within(r, &p, 10000, &st);
	ok(!rc && st == 7 && now_ms() - t0 < 5000,
	   "closed within 10 s: its stdin ends, it exits 7, and the call returns then");
	rc = runner_open(r, "exec >&-; sleep 60", 0, &p);
	ok(!rc && read(p.from, &c, 1) == 0, "a session that closes its output and hangs on");
	t0 = now_ms();
	rc = runner_close_within(r, &p, 300, &st);
	ok(!rc && st == 128 + SIGKILL && now_ms() - t0 < 5000,
	   "closed within 300 ms: killed when they pass (status %d)", st);
	ok(p.pid == -1, "and reaped");
	runner_free(r);
	free(home);
}

/* A free local port, closed again: connecting there is refused. */
static int closed_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void test_ssh_transport_failure(void)
{
	struct ssh_target t = {.host = "127.0.0.1"};
	char *cd = xasprintf("%s/cm2", tmp);
	struct runner *r;
	struct buf out = BUF_INIT(0), err = BUF_INIT(0);
	int st = -1, rc;

	if (run_capture((char *[]){"ssh", "-V", NULL}, NULL, NULL, NULL, &err, &st) == -ENOENT) {
		printf("# no ssh client here: the real ssh failure is left to t0500\n");
		free(cd);
		return;
	}
	buf_reset(&err);
	t.port = closed_port();
	t.control_dir = cd;
	r = runner_ssh_new("lo", &t);
	rc = runner_run(r, "true", NULL, 20000, &st);
	ok(rc == -EHOSTUNREACH, "ssh to a closed port: -EHOSTUNREACH (got %d)", rc);
	ok(strstr(r->last_error.p, "Connection refused") && strstr(r->last_error.p, "127.0.0.1"),
	   "ssh's own message is in last_error: '%s'", r->last_error.p);
	rc = runner_capture(r, "true", "x", 1, &out, &err, 20000, &st);
	ok(rc == -EHOSTUNREACH && !strstr(err.p, "Connection refused"),
	   "runner_capture too, and ssh's message is not mixed into the script's stderr");
	ok(runner_ssh_close_master(r) == 0, "closing a master that does not exist is fine");
	runner_free(r);
	buf_release(&out);
	buf_release(&err);
	free(cd);
}

/*
 * A local node whose directory is removed is gone: the runner is made all the same, its
 * calls fail, runner_node_gone() says so, and nothing makes the directory again.
 */
static void test_local_gone(void)
{
	char *home = xasprintf("%s/node5", tmp), *rel = "node-relative";
	struct runner *r = runner_local_new("loc", home);
	int st = -1, rc;

	ok(r != NULL, "a runner on a directory that is not there is made");
	rc = runner_capture(r, "echo hi", NULL, 0, NULL, NULL, 10000, &st);
	ok(rc == -EHOSTUNREACH && r->last_gone, "its call fails as a node gone (rc %d)", rc);
	ok(strstr(r->last_error.p, "is gone") != NULL, "and says so: %s", r->last_error.p);
	ok(runner_node_gone(r, rc), "its node is gone");
	ok(access(home, F_OK) < 0 && errno == ENOENT, "and its directory was not made again");
	runner_free(r);
	ok(runner_local_new("loc", rel) == NULL, "a relative path that is not there: refused");
	ok(!mkdir_p(home, 0700) && (r = runner_local_new("loc", home)) != NULL,
	   "the directory made: a runner on it");
	rc = runner_capture(r, "exit 0", NULL, 0, NULL, NULL, 10000, &st);
	ok(!rc && !st && !runner_node_gone(r, rc), "it answers, and is not gone");
	ok(!rmdir(home), "the directory removed under the runner");
	rc = runner_capture(r, "exit 0", NULL, 0, NULL, NULL, 10000, &st);
	ok(rc == -EHOSTUNREACH && runner_node_gone(r, rc),
	   "its next call fails, and its node is gone");
	{
		pid_t pid = -1;
		struct runner_io io = {RUNNER_NULL, RUNNER_NULL, RUNNER_NULL};

		rc = runner_spawn(r, "exit 0", 0, &io, &pid);
		ok(rc == -EHOSTUNREACH && pid == -1 && r->last_gone, "runner_spawn too");
	}
	ok(access(home, F_OK) < 0, "the directory is still not there");
	runner_free(r);
	free(home);
}

int main(void)
{
	alarm(120);
	signal(SIGPIPE, SIG_DFL);
	xsnprintf(tmp, sizeof(tmp), "/tmp/skr.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	unlink("/tmp/skiff-test-runner-pwned");
	plan_run(test_argv_helpers);
	plan_run(test_ssh_argv);
	plan_run(test_ssh_control_dir);
	plan_run(test_ssh_bad_targets);
	plan_run(test_ssh_remote_parse);
	plan_run(test_local_round_trip);
	plan_run(test_local_stdin_env_status);
	plan_run(test_local_timeout_and_leftovers);
	plan_run(test_local_close_within);
	plan_run(test_local_gone);
	plan_run(test_ssh_transport_failure);
	{
		char *rm[] = {"rm", "-rf", tmp, NULL};
		int st = -1;

		if (run_capture(rm, NULL, NULL, NULL, NULL, &st) || st)
			printf("# could not remove %s\n", tmp);
	}
	return done_testing();
}
