/* Infra specs, the SSH node pool file (valid, malformed, hostile), node picking, names. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/cluster.h"
#include "lib/task.h"
#include "lib/log.h"
#include "lib/util.h"
#include "state/launcher.h"
#include "tests/unit/harness.h"

static char dir[] = "/tmp/skiff-unit-infra.XXXXXX";
static char *pools_file, *log_file;
static int log_fd = -1, stderr_fd = -1;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	chmod(path, 0700);
	return remove(path);
}

/* Messages printed with error() go to log_file; this returns them and starts afresh. */
static char *take_log(void)
{
	struct buf b = BUF_INIT(1 << 20);

	buf_read_file(&b, log_file);
	if (ftruncate(log_fd, 0) < 0 || lseek(log_fd, 0, SEEK_SET) < 0)
		perror("truncate log");
	return buf_detach(&b, NULL);
}

static int log_has(const char *needle)
{
	char *s = take_log();
	int r = strstr(s, needle) != NULL;

	if (!r)
		printf("# log was: %s", s);
	free(s);
	return r;
}

static void write_pools(const char *text)
{
	ok(!write_file_atomic(pools_file, text, strlen(text), 0600), "write pool file");
}

/* Parses text; returns the number of errors and the first one's position and message. */
struct res {
	int r;
	size_t nerr;
	int line, col;
	char msg[512];
	struct infra_pools p;
};

static struct res parse(const char *text)
{
	struct yerrors errs = YERRORS_INIT;
	struct res s;

	memset(&s, 0, sizeof(s));
	s.r = infra_pools_parse_buf(&s.p, "pools.yaml", text, strlen(text), &errs);
	s.nerr = errs.nerrors;
	if (errs.n) {
		s.line = errs.v[0].line;
		s.col = errs.v[0].col;
		xsnprintf(s.msg, sizeof(s.msg), "%.500s", errs.v[0].msg);
	}
	yerr_release(&errs);
	return s;
}

/* Expects text to fail with a first error at line:col whose message holds `want`. */
static void bad(const char *text, int line, int col, const char *want, const char *what)
{
	struct res s = parse(text);
	int pass = s.r == -EINVAL && s.nerr >= 1 && s.line == line && s.col == col &&
	           strstr(s.msg, want) && s.p.n == 0 && !s.p.v;

	ok(pass, "%s", what);
	if (!pass)
		printf("#   got r=%d nerr=%zu %d:%d '%s'\n", s.r, s.nerr, s.line, s.col, s.msg);
	infra_pools_release(&s.p);
}

/* ---- infra specs ----------------------------------------------------------------------- */

static void test_parse_spec(void)
{
	struct infra inf;

	ok(!infra_parse(NULL, &inf) && inf.kind == INFRA_LOCAL, "no spec: local");
	is_str(inf.spec, "local", "canonical local");
	infra_release(&inf);
	ok(!infra_parse("", &inf) && inf.kind == INFRA_LOCAL, "empty: local");
	infra_release(&inf);
	ok(!infra_parse("*", &inf) && inf.kind == INFRA_LOCAL, "'*' (any): local");
	infra_release(&inf);
	ok(!infra_parse("LOCAL", &inf) && inf.kind == INFRA_LOCAL, "LOCAL: case-insensitive");
	infra_release(&inf);
	ok(!infra_parse("ssh/my-pool", &inf) && inf.kind == INFRA_SSH, "ssh/my-pool");
	is_str(inf.pool, "my-pool", "pool name");
	is_str(inf.spec, "ssh/my-pool", "spec");
	infra_release(&inf);
	ok(!infra_parse("SSH/Pool", &inf) && inf.kind == INFRA_SSH, "SSH/Pool");
	is_str(inf.pool, "Pool", "the pool name keeps its case");
	is_str(inf.spec, "ssh/Pool", "spec lower-cases the infra name only");
	infra_release(&inf);
	ok(!infra_parse("ssh", &inf) && inf.kind == INFRA_SSH && !inf.pool, "bare ssh");
	infra_release(&inf);

	ok(infra_parse("local/x", &inf) == -1, "local/x refused");
	ok(infra_parse("ssh/", &inf) == -1, "ssh/ refused");
	ok(infra_parse("ssh/a/b", &inf) == -1, "ssh/a/b refused");
	ok(infra_parse("ssh/a b", &inf) == -1, "a space refused");
	ok(infra_parse("ssh/a\nb", &inf) == -1, "a newline refused");
	free(take_log());
	ok(!infra_parse("k8s/my-ctx", &inf) && inf.kind == INFRA_K8S, "k8s/ctx");
	ok(!strcmp(inf.spec, "k8s/my-ctx") && !strcmp(inf.context, "my-ctx") && !inf.ns,
	   "... context, no namespace");
	infra_release(&inf);
	ok(!infra_parse("Kubernetes/ctx/ml", &inf) && inf.kind == INFRA_K8S, "kubernetes/ctx/ns");
	ok(!strcmp(inf.spec, "k8s/ctx/ml") && !strcmp(inf.ns, "ml"), "... spec k8s/ctx/ml");
	infra_release(&inf);
	ok(!infra_parse("k8s", &inf) && !inf.context && !inf.ns, "bare k8s: kubectl's defaults");
	infra_release(&inf);
	ok(infra_parse("k8s/ctx/-n", &inf) == -1, "k8s: a namespace like an option is refused");
	free(take_log());
	ok(!infra_parse("slurm/cluster", &inf) && inf.kind == INFRA_SLURM, "slurm/PARTITION");
	ok(!strcmp(inf.spec, "slurm/cluster") && !strcmp(inf.pool, "cluster"), "... partition");
	infra_release(&inf);
	ok(infra_parse("slurm/a/b", &inf) == -1, "slurm/a/b refused");
	free(take_log());
	ok(!infra_parse("podman", &inf) && inf.kind == INFRA_PODMAN && !inf.pool, "podman");
	infra_release(&inf);
	ok(!infra_parse("docker/gpu-box", &inf) && inf.kind == INFRA_DOCKER, "docker/POOL");
	ok(!strcmp(inf.spec, "docker/gpu-box") && !strcmp(inf.pool, "gpu-box"), "... its pool");
	infra_release(&inf);
	ok(infra_parse("podman/a b", &inf) == -1 && infra_parse("podman/-x", &inf) == -1 &&
	           infra_parse("podman/a/b", &inf) == -1,
	   "podman/POOL: blanks, a leading '-' and '/' are refused");
	free(take_log());
	is_int(infra_parse("aws", &inf), -ENOTSUP, "aws");
	ok(log_has("skiff does not provision cloud VMs"), "... says to use ssh/POOL");
	is_int(infra_parse("gcp/us-central1/us-central1-a", &inf), -ENOTSUP, "gcp/region/zone");
	ok(infra_parse("sssh/p", &inf) == -1, "unknown infra");
	ok(log_has("did you mean 'ssh'?"), "... with a did-you-mean");
	ok(infra_parse("wat", &inf) == -1 &&
	           log_has("expected one of local, ssh/POOL, podman[/POOL]"),
	   "unknown infra, nothing close");
	free(take_log());
	{
		char spec[INFRA_SPEC_MAX + 2];

		memset(spec, 'c', sizeof(spec) - 1);
		memcpy(spec, "k8s/", 4);
		spec[INFRA_SPEC_MAX] = '\0';
		ok(!infra_parse(spec, &inf) && strlen(inf.context) == INFRA_SPEC_MAX - 4,
		   "a %d-character spec, whole", INFRA_SPEC_MAX);
		infra_release(&inf);
		spec[INFRA_SPEC_MAX] = 'c';
		spec[INFRA_SPEC_MAX + 1] = '\0';
		ok(infra_parse(spec, &inf) == -1 &&
		           log_has("is 257 characters long, more than 256"),
		   "one more is refused, saying the limit");
		free(take_log());
	}
}

/* ---- the pool file ------------------------------------------------------------------- */

static void test_pools_valid(void)
{
	const char *text = "# pools\n"
	                   "gpus:\n"
	                   "  user: alice\n"
	                   "  identity_file: ~/.ssh/id_pool\n"
	                   "  port: 2222\n"
	                   "  proxy_jump: bastion.example.com\n"
	                   "  hosts:\n"
	                   "    - 10.0.0.1\n"
	                   "    - ip: 10.0.0.2\n"
	                   "      user: bob\n"
	                   "      identity_file: /keys/bob\n"
	                   "      port: 22\n"
	                   "    - ip: 10.0.0.1\n"
	                   "      port: 22\n"
	                   "    - ip: fe80::1%eth0\n"
	                   "      proxy_jump: ~\n"
	                   "    - my_box.internal\n"
	                   "cpu:\n"
	                   "  hosts: [10.1.0.1, {ip: 10.1.0.2, user: carol}]\n";
	struct res s;
	const struct infra_pool *pl;
	char *key;

	setenv("HOME", "/home/tester", 1);
	s = parse(text);
	ok(!s.r && !s.nerr, "a valid file parses");
	if (s.r)
		printf("#   %d:%d %s\n", s.line, s.col, s.msg);
	is_int(s.p.n, 2, "two pools");
	pl = infra_pools_find(&s.p, "gpus");
	ok(pl && pl->nhosts == 5, "gpus has 5 hosts");
	if (!pl || pl->nhosts != 5)
		goto out;
	is_str(pl->hosts[0].ip, "10.0.0.1", "host 0");
	is_str(pl->hosts[0].user, "alice", "pool user");
	is_int(pl->hosts[0].port, 2222, "pool port");
	is_str(pl->hosts[0].identity_file, "/home/tester/.ssh/id_pool", "~/ expanded");
	is_str(pl->hosts[0].proxy_jump, "bastion.example.com", "pool proxy jump");
	is_int(pl->hosts[0].line, 8, "host line");
	is_str(pl->hosts[1].user, "bob", "host user overrides");
	is_str(pl->hosts[1].identity_file, "/keys/bob", "host identity overrides");
	is_int(pl->hosts[1].port, 22, "host port overrides");
	is_str(pl->hosts[2].ip, "10.0.0.1", "same address, other port: another host");
	is_int(pl->hosts[2].port, 22, "its port");
	is_str(pl->hosts[3].ip, "fe80::1%eth0", "IPv6 with a zone");
	is_str(pl->hosts[3].proxy_jump, "bastion.example.com", "a null value keeps the default");
	is_str(pl->hosts[4].ip, "my_box.internal", "a host name (ssh config alias)");
	key = infra_host_key("gpus", &pl->hosts[0]);
	is_str(key, "gpus/10.0.0.1:2222", "node key");
	free(key);
	key = infra_host_key("gpus", &pl->hosts[3]);
	is_str(key, "gpus/[fe80::1%eth0]:2222", "IPv6 node key in brackets");
	free(key);
	pl = infra_pools_find(&s.p, "cpu");
	ok(pl && pl->nhosts == 2, "cpu pool, flow style");
	if (pl && pl->nhosts == 2) {
		ok(!pl->hosts[0].user && !pl->hosts[0].identity_file && !pl->hosts[0].proxy_jump,
		   "no defaults: NULLs (ssh's own defaults)");
		is_int(pl->hosts[0].port, 22, "port defaults to 22");
		is_str(pl->hosts[1].user, "carol", "flow mapping host");
	}
	ok(!infra_pools_find(&s.p, "nope"), "find: missing pool");
out:
	infra_pools_release(&s.p);

	/* What tests/lib/nodes.sh writes. */
	s = parse("# Test nodes, written by tests/lib/nodes.sh (SkyPilot ssh_node_pools.yaml "
	          "format).\n"
	          "testnodes:\n"
	          "  user: skiffuser\n"
	          "  identity_file: /tmp/x/key\n"
	          "  hosts:\n"
	          "    - ip: 10.77.0.11\n"
	          "      user: skiffuser\n"
	          "      identity_file: /tmp/x/key\n"
	          "      port: 22\n"
	          "    - ip: 10.77.0.12\n"
	          "      user: skiffbb\n"
	          "      identity_file: /tmp/x/key\n"
	          "      port: 22\n");
	ok(!s.r && s.p.n == 1 && s.p.v[0].nhosts == 2, "the test library's pool file parses");
	if (!s.r && s.p.n == 1)
		is_str(s.p.v[0].hosts[1].user, "skiffbb", "per-host user");
	infra_pools_release(&s.p);

	s = parse("");
	ok(!s.r && s.p.n == 0, "an empty file: no pools, no error");
	infra_pools_release(&s.p);
	s = parse("# only a comment\n");
	ok(!s.r && s.p.n == 0, "a file of comments: no pools");
	infra_pools_release(&s.p);
}

/* SkyPilot's pool files as they are: a sudo password, a key beside the file. */
static void test_pools_skypilot(void)
{
	static const char text[] = "lab:\n"
	                           "  user: alice\n"
	                           "  identity_file: keys/id\n"
	                           "  password: hunter2\n"
	                           "  hosts:\n"
	                           "    - 10.0.0.1\n"
	                           "    - ip: 10.0.0.2\n"
	                           "      password: 12345\n"
	                           "      identity_file: ../k2\n";
	struct yerrors errs = YERRORS_INIT;
	struct infra_pools p;
	char cwd[4096], *want;
	int r;

	r = infra_pools_parse_buf(&p, "/etc/sky/pools.yaml", text, strlen(text), &errs);
	ok(!r && p.n == 1 && p.v[0].nhosts == 2, "a pool with password: parses");
	if (!r && p.n == 1 && p.v[0].nhosts == 2) {
		is_str(p.v[0].hosts[0].identity_file, "/etc/sky/keys/id",
		       "relative identity_file: beside the pool file");
		is_str(p.v[0].hosts[1].identity_file, "/etc/sky/../k2", "per host, the same");
	}
	infra_pools_release(&p);
	yerr_release(&errs);
	r = infra_pools_parse_buf(&p, "sky/pools.yaml", text, strlen(text), &errs);
	ok(!r && getcwd(cwd, sizeof(cwd)), "a relative pool file path parses");
	want = xasprintf("%s/sky/keys/id", cwd);
	if (!r && p.n == 1)
		is_str(p.v[0].hosts[0].identity_file, want, "from the working directory");
	free(want);
	infra_pools_release(&p);
	r = infra_pools_parse_buf(&p, "pools.yaml", text, strlen(text), &errs);
	want = xasprintf("%s/keys/id", cwd);
	if (!r && p.n == 1)
		is_str(p.v[0].hosts[0].identity_file, want, "a file with no directory: the cwd");
	free(want);
	infra_pools_release(&p);
	yerr_release(&errs);
}

static void test_pools_errors(void)
{
	bad("p:\n  hostss: [a]\n", 2, 3, "unknown field 'hostss' in p; did you mean 'hosts'?",
	    "unknown pool key, with a did-you-mean");
	bad("p:\n  hosts:\n    - ip: a\n      usr: x\n", 4, 7, "did you mean 'user'?",
	    "unknown host key, with a did-you-mean");
	bad("p:\n  hosts: [a]\n  colour: red\n", 3, 3, "unknown field 'colour' in p",
	    "unknown key, nothing close");
	bad("p:\n  password: [hunter2]\n  hosts: [a]\n", 2, 13, "p.password must be a string",
	    "a password that is a list");
	bad("p:\n  hosts:\n    - user: x\n", 3, 7, "has no 'ip'", "host without ip");
	bad("p:\n  hosts:\n    - ip: [a]\n", 3, 11, "p.hosts[0].ip must be a string, not a list",
	    "ip of the wrong type");
	bad("p:\n  hosts:\n    - ip:\n", 3, 10, "must be a string", "null ip");
	bad("p:\n  hosts:\n    - 10\n", 3, 7, "must be an address (a string)", "a number as host");
	bad("p:\n  hosts:\n    - [a]\n", 3, 7, "must be an address", "a list as host");
	bad("p:\n  hosts: a\n", 2, 10, "p.hosts must be a list, not a string", "hosts: a string");
	bad("p:\n  hosts: []\n", 2, 10, "pool 'p' has no hosts", "empty hosts");
	bad("p:\n  hosts:\n", 2, 9, "pool 'p' has no hosts", "null hosts");
	bad("p:\n  user: x\n", 1, 1, "pool 'p' has no hosts", "no hosts key");
	bad("p:\n  port: ssh\n  hosts: [a]\n", 2, 9, "p.port must be a port number, not a string",
	    "port: a string");
	bad("p:\n  port: 70000\n  hosts: [a]\n", 2, 9, "in 1..65535", "port out of range");
	bad("p:\n  port: 0\n  hosts: [a]\n", 2, 9, "in 1..65535", "port 0");
	bad("p:\n  hosts:\n    - ip: a\n      port: \"22\"\n", 4, 13, "must be a port number",
	    "a quoted port is a string");
	bad("p:\n  user: [x]\n  hosts: [a]\n", 2, 9, "p.user must be a string, not a list",
	    "user: a list");
	bad("p:\n  user: a b\n  hosts: [a]\n", 2, 9, "is not a user name", "user with a space");
	bad("p:\n  user: -oProxyCommand=x\n  hosts: [a]\n", 2, 9, "is not a user name",
	    "user that ssh would take as an option");
	bad("p:\n  hosts: [-oProxyCommand=touch /tmp/x]\n", 2, 11, "is not a host address",
	    "host that ssh would take as an option");
	bad("p:\n  hosts: [\"a;b\"]\n", 2, 11, "is not a host address", "host with ';'");
	bad("p:\n  hosts: [\"a\\nb\"]\n", 2, 11, "is not a host address", "host with a newline");
	bad("p:\n  hosts: [\"$(reboot)\"]\n", 2, 11, "is not a host address", "host with $()");
	bad("p:\n  proxy_jump: \"-J x\"\n  hosts: [a]\n", 2, 15, "is not a jump host list",
	    "proxy_jump with a leading '-'");
	bad("p:\n  identity_file: ~bob/id\n  hosts: [a]\n", 2, 18, "not ~user/",
	    "~user in identity_file");
	bad("p:\n  identity_file: \"/a\\tb\"\n  hosts: [a]\n", 2, 18, "control character",
	    "identity_file with a tab");
	bad("p:\n  hosts:\n    - 10.0.0.1\n    - ip: 10.0.0.1\n", 4, 11,
	    "duplicate host 10.0.0.1 port 22 (first at line 3)", "duplicate host");
	bad("p:\n  port: 2200\n  hosts:\n    - a\n    - ip: a\n      port: 2200\n", 5, 11,
	    "duplicate host a port 2200", "duplicate host after defaults apply");
	bad("- a\n- b\n", 1, 1, "maps pool names to pools", "a list at the top");
	bad("hello\n", 1, 1, "maps pool names to pools", "a scalar at the top");
	bad("p: [a, b]\n", 1, 4, "pool 'p' must be a mapping with 'hosts', not a list",
	    "a pool that is a list");
	bad("a/b:\n  hosts: [x]\n", 1, 1, "pool names must be", "a pool name with '/'");
	bad("-x:\n  hosts: [x]\n", 1, 1, "pool names must be", "a pool name with a leading '-'");
	bad("? [a]\n: {hosts: [x]}\n", 1, 3, "pool names must be", "a list as pool name");
	bad("p:\n  hosts: [a]\n---\nq:\n  hosts: [b]\n", 4, 1, "one YAML document expected",
	    "two documents");
	bad("p:\n  hosts: [a]\np:\n  hosts: [b]\n", 3, 1, "duplicate key 'p'", "duplicate pool");
	bad("p:\n  hosts: [a\n", 3, 1, "", "unterminated flow sequence (bad YAML)");
	{
		struct res s = parse("p:\n  hostss: [a]\n  password: [x]\nq:\n  hosts: [\"-x\"]\n");

		/* hostss, password, "-x", and so p has no hosts */
		ok(s.r == -EINVAL && s.nerr == 4, "every problem is reported in one run (%zu)",
		   s.nerr);
		infra_pools_release(&s.p);
	}
}

/* Mangled, huge and hostile inputs: an error or a result, never a crash or a leak. */
static void test_pools_hostile(void)
{
	static const char base[] = "gpus:\n"
	                           "  user: alice\n"
	                           "  identity_file: ~/.ssh/id\n"
	                           "  port: 2222\n"
	                           "  hosts:\n"
	                           "    - 10.0.0.1\n"
	                           "    - {ip: 10.0.0.2, user: bob, proxy_jump: j}\n"
	                           "    - ip: &a 10.0.0.3\n"
	                           "      identity_file: /k\n"
	                           "cpu:\n"
	                           "  hosts: [*a, x]\n";
	struct buf big = BUF_INIT(64 << 20);
	char *mut;
	unsigned seed = 12345;
	int i, ok_runs = 0, bad_runs = 0, consistent = 1;
	struct res s;

	for (i = 0; i < 3000; i++) {
		size_t len = sizeof(base) - 1, k, flips = 1 + (size_t)(i % 4);
		struct yerrors errs = YERRORS_INIT;
		struct infra_pools p;
		int r;

		mut = xmalloc(len + 1);
		memcpy(mut, base, len + 1);
		for (k = 0; k < flips; k++) {
			seed = seed * 1103515245u + 12345u;
			mut[(seed >> 8) % len] = (char)((seed >> 16) & 0xff);
		}
		seed = seed * 1103515245u + 12345u;
		if (i % 5 == 0)
			len = (seed >> 8) % len; /* truncated */
		r = infra_pools_parse_buf(&p, "m.yaml", mut, len, &errs);
		if (r == 0)
			ok_runs++;
		else
			bad_runs++;
		if ((r == 0) != (errs.nerrors == 0) || (r && (p.n || p.v)))
			consistent = 0;
		infra_pools_release(&p);
		yerr_release(&errs);
		free(mut);
	}
	ok(consistent,
	   "3000 mangled files: errors iff failure, nothing kept on failure "
	   "(%d parsed, %d refused)",
	   ok_runs, bad_runs);

	bad("p:\n  hosts: [\"a\\0b\"]\n", 2, 11, "", "a NUL in a host (yaml refuses it)");
	bad("p:\n  hosts: [\"\xff\xfe\"]\n", 2, 12, "invalid UTF-8", "invalid UTF-8");
	/* A billion laughs: refused by the YAML loader's expansion budget. */
	buf_adds(&big, "a: &a [x, x, x, x, x, x, x, x, x, x]\n");
	for (i = 0; i < 9; i++)
		buf_addf(&big, "%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n",
		         'b' + i, 'b' + i, 'a' + i, 'a' + i, 'a' + i, 'a' + i, 'a' + i, 'a' + i,
		         'a' + i, 'a' + i, 'a' + i, 'a' + i);
	s = parse(big.p);
	ok(s.r == -EINVAL && s.nerr >= 1, "billion laughs refused");
	infra_pools_release(&s.p);
	buf_reset(&big);
	for (i = 0; i < 200; i++)
		buf_adds(&big, "[");
	s = parse(big.p);
	ok(s.r == -EINVAL && s.nerr >= 1, "nesting 200 deep refused");
	infra_pools_release(&s.p);
	/* Many hosts: fine up to the limit, refused past it. */
	buf_reset(&big);
	buf_adds(&big, "p:\n  hosts:\n");
	for (i = 0; i < INFRA_MAX_HOSTS; i++)
		buf_addf(&big, "    - 10.%d.%d.%d\n", i >> 16, (i >> 8) & 255, i & 255);
	s = parse(big.p);
	ok(!s.r && s.p.n == 1 && s.p.v[0].nhosts == INFRA_MAX_HOSTS, "%d hosts parse",
	   INFRA_MAX_HOSTS);
	infra_pools_release(&s.p);
	buf_adds(&big, "    - 11.0.0.1\n");
	s = parse(big.p);
	ok(s.r == -EINVAL && strstr(s.msg, "more than"), "one host more is refused");
	infra_pools_release(&s.p);
	/* Many errors: collected up to the cap, counted past it, no crash. */
	buf_reset(&big);
	buf_adds(&big, "p:\n  hosts:\n");
	for (i = 0; i < 500; i++)
		buf_addf(&big, "    - {ip: h%d, bogus%d: 1}\n", i, i);
	s = parse(big.p);
	ok(s.r == -EINVAL && s.nerr == 500, "500 errors counted (%zu)", s.nerr);
	infra_pools_release(&s.p);
	buf_release(&big);
}

static void test_pools_load(void)
{
	struct yerrors errs = YERRORS_INIT;
	struct infra_pools p;
	char *d = xasprintf("%s/adir", dir);

	is_int(infra_pools_load(&p, "/nonexistent/pools.yaml", &errs), -ENOENT, "missing file");
	ok(errs.n == 1 && strstr(errs.v[0].msg, "cannot open"), "... an error says so");
	yerr_release(&errs);
	mkdir(d, 0700);
	is_int(infra_pools_load(&p, d, &errs), -EINVAL, "a directory is refused");
	ok(errs.n == 1 && strstr(errs.v[0].msg, "not a regular file"), "... an error says so");
	yerr_release(&errs);
	write_pools("p:\n  hosts: [a]\n");
	ok(!infra_pools_load(&p, pools_file, &errs) && p.n == 1, "load a file");
	is_str(p.file, pools_file, "file name kept");
	infra_pools_release(&p);
	yerr_release(&errs);
	free(d);
}

/* ---- resolve and pick ---------------------------------------------------------------- */

static void test_resolve(void)
{
	struct infra inf;

	setenv(INFRA_POOLS_ENV, pools_file, 1);
	write_pools("only:\n  hosts: [a, b]\n");
	ok(!infra_parse("ssh", &inf) && !infra_resolve(&inf), "bare ssh resolves");
	is_str(inf.spec, "ssh/only", "to the only pool");
	ok(inf.p && !strcmp(inf.p->name, "only"), "pool found");
	ok(!infra_resolve(&inf), "resolve is idempotent");
	infra_release(&inf);
	ok(!infra_parse("local", &inf) && !infra_resolve(&inf), "local: nothing to resolve");
	infra_release(&inf);

	write_pools("one:\n  hosts: [a]\ntwo:\n  hosts: [b]\n");
	free(take_log());
	ok(!infra_parse("ssh", &inf) && infra_resolve(&inf) == -EINVAL, "bare ssh, two pools");
	ok(log_has("one, two; use ssh/POOL"), "... lists them");
	infra_release(&inf);
	ok(!infra_parse("ssh/tow", &inf) && infra_resolve(&inf) == -ENOENT, "a missing pool");
	ok(log_has("no ssh node pool 'tow'"), "... says so");
	infra_release(&inf);
	ok(!infra_parse("ssh/zzzzzz", &inf) && infra_resolve(&inf) == -ENOENT, "missing, far");
	ok(log_has("(it has one, two)"), "... lists the pools");
	infra_release(&inf);

	write_pools("one:\n  hosts: [a]\n  pasword: x\n");
	ok(!infra_parse("ssh/one", &inf) && infra_resolve(&inf) == -EINVAL, "an invalid file");
	ok(log_has(":3:3: unknown field 'pasword' in one; did you mean 'password'?"),
	   "... printed as FILE:LINE:COL");
	infra_release(&inf);
	write_pools("# nothing yet\n");
	ok(!infra_parse("ssh", &inf) && infra_resolve(&inf) == -ENOENT, "a file with no pools");
	ok(log_has("defines no pools"), "... says so");
	infra_release(&inf);
	setenv(INFRA_POOLS_ENV, "/nonexistent/pools.yaml", 1);
	ok(!infra_parse("ssh/x", &inf) && infra_resolve(&inf) == -ENOENT, "no pool file");
	ok(log_has("no ssh node pool file '/nonexistent/pools.yaml'"), "... says so");
	infra_release(&inf);
	setenv(INFRA_POOLS_ENV, pools_file, 1);
}

static int book(struct st_db *db, struct infra *inf, const char *name, int n)
{
	struct cluster_node *nodes;
	struct cluster c = {0};
	int r = infra_pick_nodes(inf, db, name, n, &nodes);

	if (r)
		return r;
	c.name = (char *)name;
	c.infra = inf->spec;
	c.autostop_minutes = -1;
	r = st_cluster_create(db, &c, nodes, (size_t)n);
	cluster_nodes_free(nodes, (size_t)n);
	return r;
}

static void test_pick_ssh(void)
{
	char *db_path = xasprintf("%s/launcher.db", dir);
	char *key = xasprintf("%s/key", dir);
	char *text;
	struct st_db *db;
	struct infra inf;
	struct cluster_node *nodes;

	ok(!write_file_atomic(key, "k", 1, 0600), "a key file");
	text = xasprintf("p:\n"
	                 "  user: alice\n"
	                 "  identity_file: %s\n"
	                 "  hosts:\n"
	                 "    - 10.0.0.1\n"
	                 "    - {ip: 10.0.0.2, port: 2222, proxy_jump: jump}\n"
	                 "    - 10.0.0.3\n"
	                 "q:\n"
	                 "  hosts: [10.0.0.1, 10.0.0.9]\n"
	                 "nokey:\n"
	                 "  identity_file: /nonexistent/key\n"
	                 "  hosts: [10.0.0.20]\n",
	                 key);
	write_pools(text);
	free(text);
	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "launcher db");
	ok(!infra_parse("ssh/p", &inf), "ssh/p");
	ok(!infra_pick_nodes(&inf, db, "a", 2, &nodes), "pick 2 for a (resolves on its own)");
	is_str(nodes[0].node_key, "p/10.0.0.1:22", "rank 0: first host");
	is_str(nodes[1].node_key, "p/10.0.0.2:2222", "rank 1: second host");
	is_str(nodes[1].cluster, "a", "cluster set");
	is_int(nodes[1].rank, 1, "rank set");
	is_str(nodes[1].user, "alice", "user");
	is_str(nodes[1].identity_file, key, "identity");
	is_str(nodes[1].proxy_jump, "jump", "proxy jump");
	is_str(nodes[0].proxy_jump, "", "no proxy jump: \"\"");
	is_str(nodes[0].home, "", "no home for ssh");
	cluster_nodes_free(nodes, 2);
	ok(!book(db, &inf, "a", 2), "book 2 for a");
	free(take_log());
	is_int(book(db, &inf, "b", 2), -EBUSY, "2 more for b: only 1 free");
	ok(log_has("pool 'p' has 3 nodes, 2 are in use by cluster a; need 2"),
	   "... message names the holder");
	ok(!book(db, &inf, "b", 1), "1 for b");
	free(take_log());
	is_int(book(db, &inf, "c", 1), -EBUSY, "pool full");
	ok(log_has("pool 'p' has 3 nodes, 3 are in use by clusters a, b; need 1"),
	   "... names both clusters");
	is_int(book(db, &inf, "c", 4), -ENOSPC, "more than the pool has");
	ok(log_has("pool 'p' has 3 nodes; need 4"), "... says so");
	is_int(infra_pick_nodes(&inf, db, "Bad_Name-", 1, &nodes), -EINVAL, "bad cluster name");
	is_int(infra_pick_nodes(&inf, db, "c", 0, &nodes), -EINVAL, "0 nodes");
	ok(!infra_pick_nodes(&inf, db, "a", 2, &nodes), "a's own nodes count as free for a");
	cluster_nodes_free(nodes, 2);
	infra_release(&inf);

	/* The same machine in pool q: held by a through pool p. */
	ok(!infra_parse("ssh/q", &inf), "ssh/q");
	ok(!infra_pick_nodes(&inf, db, "d", 1, &nodes), "pick 1 in q");
	is_str(nodes[0].ip, "10.0.0.9", "10.0.0.1 is skipped: a holds it through pool p");
	cluster_nodes_free(nodes, 1);
	free(take_log());
	is_int(infra_pick_nodes(&inf, db, "d", 2, &nodes), -EBUSY, "2 in q: one held via p");
	ok(log_has("in use by cluster a"), "... by a");
	infra_release(&inf);

	ok(!infra_parse("ssh/nokey", &inf), "ssh/nokey");
	ok(infra_pick_nodes(&inf, db, "e", 1, &nodes) < 0, "an unreadable identity file");
	ok(log_has("cannot read identity_file '/nonexistent/key'"), "... is named");
	infra_release(&inf);

	ok(!infra_parse("ssh/p", &inf), "ssh/p");
	ok(!st_cluster_delete(db, "a"), "down a");
	ok(!infra_pick_nodes(&inf, db, "c", 2, &nodes), "now 2 are free again");
	is_str(nodes[0].ip, "10.0.0.1", "in pool order");
	cluster_nodes_free(nodes, 2);
	infra_release(&inf);
	st_close(db);
	free(db_path);
	free(key);
}

static int mode_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) < 0 ? -1 : (int)(st.st_mode & 07777);
}

static void test_pick_local(void)
{
	char *home = xasprintf("%s/home", dir);
	char *outside = xasprintf("%s/outside", dir);
	char *p, longname[INFRA_CLUSTER_NAME_MAX + 1];
	struct infra inf;
	struct cluster_node *nodes;
	struct runner *r;

	setenv("SKIFF_HOME", home, 1);
	ok(!infra_parse("local", &inf), "local");
	ok(!infra_pick_nodes(&inf, NULL, "loc", 3, &nodes), "pick 3 local nodes (no db needed)");
	p = xasprintf("%s/local/loc/2", home);
	is_str(nodes[2].home, p, "rank 2's directory");
	is_int(mode_of(p), 0700, "created 0700");
	free(p);
	p = xasprintf("%s/local/loc", home);
	is_int(mode_of(p), 0700, "the cluster's directory is 0700");
	free(p);
	is_str(nodes[1].node_key, "local/loc/1", "node key");
	is_str(nodes[1].ip, "127.0.0.1", "ip");
	is_int(nodes[1].port, 0, "no port");
	r = infra_runner(&inf, &nodes[0]);
	ok(r && !strcmp(r->ops->kind, "local"), "a local runner");
	runner_free(r);
	{
		struct cluster_node bad = nodes[0];

		bad.home = "";
		ok(!infra_runner(&inf, &bad), "a local node without a directory: no runner");
	}
	cluster_nodes_free(nodes, 3);
	ok(!infra_pick_nodes(&inf, NULL, "loc", 2, &nodes), "picking again reuses the dirs");
	cluster_nodes_free(nodes, 2);

	/* Leftovers a job may make: read-only dirs, and a symlink out of the tree. */
	p = xasprintf("%s/local/loc/0/ro", home);
	mkdir(p, 0700);
	free(p);
	p = xasprintf("%s/local/loc/0/ro/f", home);
	write_file_atomic(p, "x", 1, 0400);
	free(p);
	p = xasprintf("%s/local/loc/0/ro", home);
	chmod(p, 0500);
	free(p);
	mkdir(outside, 0700);
	p = xasprintf("%s/keep", outside);
	write_file_atomic(p, "x", 1, 0600);
	free(p);
	p = xasprintf("%s/local/loc/1/link", home);
	ok(!symlink(outside, p), "a symlink to a dir outside");
	free(p);
	ok(!infra_local_remove("loc"), "remove the local cluster's dirs");
	p = xasprintf("%s/local/loc", home);
	is_int(mode_of(p), -1, "gone");
	free(p);
	p = xasprintf("%s/keep", outside);
	is_int(mode_of(p), 0600, "the symlink's target is untouched");
	free(p);
	ok(!infra_local_remove("loc"), "removing again is fine");
	ok(infra_local_remove("../x") < 0, "a path as cluster name is refused");
	infra_release(&inf);

	/*
	 * The longest name: its nodes' socket paths are longer than sun_path holds, which
	 * unix_bind() and unix_connect() reach (test-util).
	 */
	ok(!infra_parse("local", &inf), "local");
	memset(longname, 'a', INFRA_CLUSTER_NAME_MAX);
	longname[0] = 'L';
	longname[10] = '_';
	longname[20] = '.';
	longname[INFRA_CLUSTER_NAME_MAX] = '\0';
	ok(!infra_pick_nodes(&inf, NULL, longname, 2, &nodes), "a %d-character name is picked",
	   INFRA_CLUSTER_NAME_MAX);
	if (nodes) {
		p = xasprintf("%s/local/%s/1", home, longname);
		is_str(nodes[1].home, p, "its node 1 lives in local/NAME/1");
		is_int(mode_of(p), 0700, "... created 0700");
		free(p);
		cluster_nodes_free(nodes, 2);
	}
	ok(!infra_local_remove(longname), "and removed");
	infra_release(&inf);
	free(home);
	free(outside);
}

static void test_runner_ssh(void)
{
	struct infra inf;
	struct cluster_node n = {0};
	struct runner *r;
	char *ctl;

	n.cluster = "s";
	n.node_key = "p/10.0.0.1:2222";
	n.ip = "10.0.0.1";
	n.user = "alice";
	n.port = 2222;
	n.identity_file = "";
	n.proxy_jump = "";
	n.home = "";
	n.skiff_exe = "";
	ok(!infra_parse("ssh/gone-pool", &inf), "ssh/gone-pool (not in the file)");
	r = infra_runner(&inf, &n);
	ok(r && !strcmp(r->ops->kind, "ssh"), "an ssh runner, without reading the pool file");
	if (r)
		is_str(r->name, "10.0.0.1:2222", "named by address:port");
	runner_free(r);
	ctl = xasprintf("%s/home/ssh", dir);
	is_int(mode_of(ctl), 0700, "control dir $SKIFF_HOME/ssh, 0700");
	free(ctl);
	n.ip = "";
	ok(!infra_runner(&inf, &n), "a node without an address: no runner");
	infra_release(&inf);
}

/* ---- names --------------------------------------------------------------------------- */

static void test_names(void)
{
	/* Every class SkyPilot's [a-zA-Z]([-_.a-zA-Z0-9]*[a-zA-Z0-9])? allows, where. */
	static const char *const good[] = {"a",        "Z",  "skiff-1a2b", "my-cluster-2",
	                                   "x0",       "My", "a_b",        "a.b",
	                                   "A-b_C.d9", "aB", "a--_.9"};
	static const char *const badn[] = {"",    "-a",   "_a",  ".a",          "a-",   "a_",
	                                   "a.",  "1abc", "9",   "a b",         "a/b",  "../x",
	                                   "a:b", "a@b",  "a*b", "caf\xc3\xa9", "a\nb", "a\x7f"};
	char longmax[INFRA_CLUSTER_NAME_MAX + 1], longer[INFRA_CLUSTER_NAME_MAX + 2];
	size_t i;
	char *name, *again;
	char *db_path = xasprintf("%s/names.db", dir);
	struct st_db *db;

	for (i = 0; i < ARRAY_SIZE(good); i++)
		ok(!infra_validate_cluster_name(good[i]), "good name '%s'", good[i]);
	for (i = 0; i < ARRAY_SIZE(badn); i++)
		ok(infra_validate_cluster_name(badn[i]) == -1, "bad name #%zu", i);
	free(take_log());
	infra_validate_cluster_name("a b");
	ok(log_has("has ' ': use letters, digits, '-', '_' and '.'"),
	   "a blank: says what is allowed");
	infra_validate_cluster_name("1a");
	ok(log_has("must start with a letter"), "a digit first: says so");
	infra_validate_cluster_name("a.");
	ok(log_has("must end with a letter or a digit"), "'.' last: says so");
	infra_validate_cluster_name("a\tb");
	ok(log_has("control or non-ASCII byte (0x09) at offset 1"), "a tab: names the byte");
	memset(longmax, 'A', sizeof(longmax) - 1);
	longmax[sizeof(longmax) - 1] = '\0';
	memset(longer, 'b', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	ok(!infra_validate_cluster_name(longmax), "%d characters", INFRA_CLUSTER_NAME_MAX);
	ok(infra_validate_cluster_name(longer) == -1, "%d characters refused",
	   INFRA_CLUSTER_NAME_MAX + 1);
	ok(log_has("more than 63"), "... says so");
	longer[INFRA_CLUSTER_NAME_MAX - 1] = '_';
	longer[INFRA_CLUSTER_NAME_MAX] = '\0';
	ok(infra_validate_cluster_name(longer) == -1, "'_' last, at the limit, refused");

	name = infra_cluster_name_new(NULL);
	ok(strlen(name) == 10 && starts_with(name, "skiff-"), "default name %s", name);
	ok(!infra_validate_cluster_name(name), "... is a valid name");
	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "db");
	again = infra_cluster_name_new(db);
	ok(again && !infra_validate_cluster_name(again), "with a db: %s", again);
	free(name);
	free(again);
	st_close(db);
	free(db_path);
}

/* Every ops table is whole enough for the engine, which never asks an infra's name. */
static void test_ops_tables(void)
{
	static const char *const names[] = {"local", "ssh", "podman", "docker", "k8s", "slurm"};
	const struct infra_ops *o;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		o = infra_ops_find(names[i]);
		ok(o && !strcmp(o->name, names[i]), "%s: found by its name", names[i]);
		if (!o)
			continue;
		ok(o->runner && o->pick && o->max_nodes > 0, "%s: picks nodes and runs on them",
		   names[i]);
		ok(!((o->flags & INFRA_NO_STOP) || o->alive) || o->holder,
		   "%s: what can end or refuse stop has a name for messages", names[i]);
	}
	ok(infra_ops_find("kubernetes") == infra_ops_find("k8s"), "kubernetes is k8s");
	ok(!infra_ops_find("aws") && !infra_ops_find(""), "a cloud or nothing is no infra");
}

/* A DNS label is [a-z0-9-], starts and ends with a letter or digit, at most 63. */
static int dns_label_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n > INFRA_DNS_LABEL_MAX || s[0] == '-' || s[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

/* Each state of a pod watch's line, and lines that are not a pod's. */
static void test_pod_judge(void)
{
	static const struct {
		const char *line;
		enum k8s_pod_state want;
		const char *why, *detail;
	} cases[] = {
	        {"p-0\037Pending\037\037\037False\0370/2 nodes are available\037\037",
	         K8S_POD_WAITING, "not scheduled", "0/2 nodes are available"},
	        {"p-0\037Pending\037False\037\037True\037\037ContainerCreating\037",
	         K8S_POD_WAITING, "ContainerCreating", ""},
	        {"p-0\037Pending\037\037\037\037\037\037", K8S_POD_WAITING, "Pending", ""},
	        {"p-0\037Running\037False\03710.0.0.5\037True\037\037\037", K8S_POD_WAITING,
	         "Running", ""},
	        {"p-0\037Running\037True\037\037True\037\037\037", K8S_POD_WAITING, "Running", ""},
	        {"p-0\037Running\037True\03710.0.0.5\037True\037\037\037", K8S_POD_READY, NULL,
	         NULL},
	        {"p-0\037Pending\037False\037\037True\037\037ErrImagePull\037no such host",
	         K8S_POD_CANNOT_START, "ErrImagePull", "no such host"},
	        {"p-0\037Pending\037False\037\037True\037\037ImagePullBackOff\037back-off",
	         K8S_POD_CANNOT_START, "ImagePullBackOff", "back-off"},
	        {"p-0\037Pending\037False\037\037True\037\037CreateContainerConfigError\037x",
	         K8S_POD_CANNOT_START, "CreateContainerConfigError", "x"},
	        {"p-0\037Succeeded\037False\03710.0.0.5\037True\037\037\037", K8S_POD_ENDED,
	         "Succeeded", ""},
	        {"p-0\037Failed\037False\037\037True\037evicted\037\037", K8S_POD_ENDED, "Failed",
	         "evicted"},
	        {"", K8S_POD_NOISE, NULL, NULL},
	        {"error: You must be logged in to the server (Unauthorized)", K8S_POD_NOISE, NULL,
	         NULL},
	        {"p-0\037Running\037True\03710.0.0.5", K8S_POD_NOISE, NULL, NULL},
	        {"p-0\037Running\037True\03710.0.0.5\037True\037\037\037\037extra", K8S_POD_NOISE,
	         NULL, NULL},
	        {"\037Running\037True\03710.0.0.5\037True\037\037\037", K8S_POD_NOISE, NULL, NULL},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char *line = xstrdup(cases[i].line);
		struct k8s_pod_event ev;
		enum k8s_pod_state got = infra_k8s_pod_judge(line, &ev);

		ok(got == cases[i].want &&
		           (!cases[i].why || (ev.why && !strcmp(ev.why, cases[i].why))) &&
		           (!cases[i].detail ||
		            (ev.detail && !strcmp(ev.detail, cases[i].detail))) &&
		           (got != K8S_POD_READY || !strcmp(ev.ip, "10.0.0.5")),
		   "pod watch line %zu: state %d (want %d), why '%s', detail '%s'", i, (int)got,
		   (int)cases[i].want, ev.why ? ev.why : "", ev.detail ? ev.detail : "");
		free(line);
	}
}

static void test_dns_label(void)
{
	char longmax[INFRA_CLUSTER_NAME_MAX + 1];
	char *a, *b;

	a = infra_dns_label("skiff-", "my-c", 0);
	is_str(a, "skiff-my-c-0", "a name that is a label already is kept as it is");
	free(a);
	a = infra_dns_label("skiff-", "My_c", 3);
	b = infra_dns_label("skiff-", "my-c", 3);
	ok(dns_label_ok(a) && starts_with(a, "skiff-my-c-") && ends_with(a, "-3"),
	   "upper case and '_' mapped: %s", a);
	is_int((int)strlen(a), (int)strlen("skiff-my-c-") + INFRA_DNS_HASH_LEN + 2,
	       "... with a hash before the rank");
	ok(strcmp(a, b) != 0, "... unlike the name it maps to (%s)", b);
	free(a);
	a = infra_dns_label("skiff-", "a.b", 0);
	ok(dns_label_ok(a) && starts_with(a, "skiff-a-b-"), "'.' mapped: %s", a);
	free(a);
	free(b);
	memset(longmax, 'x', sizeof(longmax) - 1);
	longmax[sizeof(longmax) - 1] = '\0';
	a = infra_dns_label("skiff-", longmax, 1023);
	ok(dns_label_ok(a), "the longest name, rank 1023: a label (%s)", a);
	is_int((int)strlen(a), INFRA_DNS_LABEL_MAX, "... of %d characters", INFRA_DNS_LABEL_MAX);
	longmax[50] = 'y';
	b = infra_dns_label("skiff-", longmax, 1023);
	ok(strcmp(a, b) != 0, "names cut alike keep apart");
	free(a);
	free(b);
	/* The cut falls on a '-' (name[42]: 63 - 6 - 14 characters kept): it goes too. */
	longmax[42] = '_';
	a = infra_dns_label("skiff-", longmax, 1023);
	ok(dns_label_ok(a) && strlen(a) == INFRA_DNS_LABEL_MAX - 1, "no '-' before the hash: %s",
	   a);
	free(a);
	a = infra_dns_label("skiff-", "Q_.-x", 7);
	ok(dns_label_ok(a), "'_', '.' and '-' in a row: %s", a);
	free(a);
}

/* A share of a host: what a resource alternative asks for; the host under a share's key. */
static void test_shares(void)
{
	struct task_resources r;
	char *s;

	memset(&r, 0, sizeof(r));
	ok(!infra_share_of(NULL) && !infra_share_of(&r), "no resources asked: the host whole");
	r.cpus.text = "2";
	r.cpus.value = 2;
	s = infra_share_of(&r);
	is_str(s, "cpus=2 memory=0 gpus=0", "2 CPUs");
	free(s);
	r.memory.text = "4x";
	r.memory.value = 4;
	r.memory.mode = TASK_PER_CPU;
	r.accel.name = "H100";
	r.accel.count = 1.5;
	s = infra_share_of(&r);
	is_str(s, "cpus=2 memory=8 gpus=2", "memory per CPU multiplied out, a GPU and a half: 2");
	free(s);
	memset(&r, 0, sizeof(r));
	r.accel.name = "H100";
	r.accel.count = 1;
	s = infra_share_of(&r);
	is_str(s, "cpus=0.5 memory=0 gpus=1", "a GPU alone: the CPUs its jobs ask by default");
	free(s);
	s = infra_host_of_key("sktest/10.0.0.1:22#dev");
	is_str(s, "sktest/10.0.0.1:22", "a share's key: its host's");
	free(s);
	s = infra_host_of_key("sktest/10.0.0.1:22");
	is_str(s, "sktest/10.0.0.1:22", "a host's key: itself");
	free(s);
}

/*
 * A node whose runner cannot be set up (a local node without its directory: a keeper
 * opened a pool cluster that was being taken down) fails cl_open(), which leaves nothing
 * open: the ASan build's leak check at exit is this test's other half.
 */
static void test_cl_open_fails(void)
{
	char *home0 = xasprintf("%s/c/0", dir);
	struct cluster c = {.name = "c", .infra = "local", .num_nodes = 2};
	struct cluster_node nodes[2] = {
	        {.cluster = "c", .rank = 0, .ip = "", .home = home0, .skiff_exe = "", .addr = ""},
	        {.cluster = "c", .rank = 1, .ip = "", .home = "", .skiff_exe = "", .addr = ""}};
	struct clive cl;

	ok(cl_open(&cl, &c, nodes, 1) == 0 && cl.n == 1 && cl.nodes[0].r,
	   "a local node with its directory opens");
	cl_close(&cl);
	ok(cl_open(&cl, &c, nodes, 2) < 0, "a node without one fails the open");
	ok(!cl.nodes && !cl.n && !cl.name && !cl.infra, "... and nothing of it is left open");
	free(home0);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	pools_file = xasprintf("%s/ssh_node_pools.yaml", dir);
	log_file = xasprintf("%s/log", dir);
	log_fd = open(log_file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		perror("open log");
		return 1;
	}
	/* error() and yerr_print() both write to fd 2: keep the real one for the end. */
	stderr_fd = dup(2);
	if (stderr_fd < 0 || dup2(log_fd, 2) < 0) {
		perror("dup2");
		return 1;
	}
	plan_run(test_parse_spec);
	plan_run(test_shares);
	plan_run(test_pools_valid);
	plan_run(test_pools_skypilot);
	plan_run(test_pools_errors);
	plan_run(test_pools_hostile);
	plan_run(test_pools_load);
	plan_run(test_resolve);
	plan_run(test_pick_ssh);
	plan_run(test_pick_local);
	plan_run(test_runner_ssh);
	plan_run(test_names);
	plan_run(test_dns_label);
	plan_run(test_pod_judge);
	plan_run(test_ops_tables);
	plan_run(test_cl_open_fails);
	dup2(stderr_fd, 2); /* sanitizer reports at exit must be seen */
	close(stderr_fd);
	close(log_fd);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(pools_file);
	free(log_file);
	return done_testing();
}
