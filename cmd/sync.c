/*
 * Hidden commands for file sync (bootstrap/sync/sync.h, docs/sync.md). On the node:
 * __sync-serve answers a launcher's session on stdin/stdout, __sync-manifest prints what
 * DST holds, __sync-recv applies a one-way stream from stdin. On the launcher:
 * __sync-send writes a one-way stream for SRC to stdout, __sync-push runs a session
 * against node commands of the caller's, and __sync-cluster syncs to every node of a
 * cluster at once as a launch does (tests and benchmarks drive both ends with these).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/launch/cl_sync.h"
#include "bootstrap/launch/engine.h"
#include "bootstrap/sync/sync.h"
#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/lock.h"
#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "state/launcher.h"
#include "lib/banned.h"

const char cmd___sync_manifest_usage[] =
        "usage: skiff __sync-manifest [--file] DST\n"
        "\n"
        "Internal: prints the manifest of what earlier syncs put in DST (checked against the\n"
        "disk) on stdout. DST may start with '~/'.\n"
        "\n"
        "  --file    DST is a single file, not a directory\n";

const char cmd___sync_recv_usage[] =
        "usage: skiff __sync-recv [--file] [--max-bytes N] DST\n"
        "\n"
        "Internal: reads a one-way sync stream on stdin and applies it to DST, then prints one\n"
        "line: 'skiff-sync-recv files=N dirs=N links=N bytes=N deleted=N skipped=N unchanged=0'.\n"
        "\n"
        "  --file           DST is a single file, not a directory\n"
        "  --max-bytes N    refuse a sync with more than N bytes of file data (default 4 GiB)\n";

const char cmd___sync_serve_usage[] =
        "usage: skiff __sync-serve [--file] [--max-bytes N] DST\n"
        "\n"
        "Internal: the node's side of a launcher's sync session: records on stdin, answers on\n"
        "stdout (docs/sync.md).\n"
        "\n"
        "  --file           DST is a single file, not a directory\n"
        "  --max-bytes N    refuse a sync with more than N bytes of file data (default 4 GiB)\n";

const char cmd___sync_send_usage[] =
        "usage: skiff __sync-send [--file] [--compress] [--no-ignore] [--manifest FILE] [--stats]\n"
        "                         SRC\n"
        "\n"
        "Internal: writes to stdout the one-way sync stream that brings a node holding the\n"
        "manifest in FILE ('-' for stdin; none: an empty node) up to date with SRC.\n"
        "\n"
        "  --file          SRC is a single file, not a directory\n"
        "  --compress      compress what compresses (zstd)\n"
        "  --no-ignore     send everything but .git (no .skyignore / .gitignore rules)\n"
        "  --manifest FILE the node's manifest, as printed by 'skiff __sync-manifest'\n"
        "  --stats         print what was sent on stderr\n";

const char cmd___sync_push_usage[] =
        "usage: skiff __sync-push [--file] [--no-ignore] [--cache KEY] [--stats] SRC\n"
        "                         --node 'COMMAND' [--node 'COMMAND']...\n"
        "\n"
        "Internal: syncs SRC through a session with each COMMAND (run with /bin/sh -c; it must\n"
        "run 'skiff __sync-serve DST' on a node), all from one read of SRC, as the launcher\n"
        "does. Prints one line per node: 'skiff-sync-push node=I wire=N files=N ...'.\n"
        "\n"
        "  --file          SRC is a single file, not a directory\n"
        "  --no-ignore     send everything but .git (no .skyignore / .gitignore rules)\n"
        "  --cache KEY     the launcher's cache of what the nodes hold, under KEY/I (none: no\n"
        "                  cache)\n"
        "  --stats         print the timing and bytes of the push on stderr\n";

const char cmd___sync_cluster_usage[] =
        "usage: skiff __sync-cluster [--file] CLUSTER SRC DST\n"
        "\n"
        "Internal: syncs SRC to DST on every node of CLUSTER at once, with one read of SRC\n"
        "(cl_sync_many(), as a launch's sync step), and prints 'skiff-sync-cluster nodes=N\n"
        "ms=T'. DST may start with '~/'.\n"
        "\n"
        "  --file    SRC is a single file, not a directory\n";

/* Options shared by the commands; returns the index of the first operand or -1. */
static int parse_opts(const char *name, int argc, char **argv, unsigned allowed, unsigned *flags,
                      const char **manifest, uint64_t *max_bytes, int *stats)
{
	long v;
	int i;

	*flags = 0;
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "--file")) {
			*flags |= SYNC_FILE;
		} else if (!strcmp(a, "--compress") && (allowed & SYNC_COMPRESS)) {
			*flags |= SYNC_COMPRESS;
		} else if (!strcmp(a, "--no-ignore") && (allowed & SYNC_NO_IGNORE)) {
			*flags |= SYNC_NO_IGNORE;
		} else if (!strcmp(a, "--stats") && stats) {
			*stats = 1;
		} else if (!strcmp(a, "--manifest") && manifest && i + 1 < argc) {
			*manifest = argv[++i];
		} else if (!strcmp(a, "--max-bytes") && max_bytes && i + 1 < argc) {
			if (parse_long(argv[++i], 1, LONG_MAX, &v)) {
				usage_error(name, "bad --max-bytes '%s'", argv[i]);
				return -1;
			}
			*max_bytes = (uint64_t)v;
		} else {
			usage_error(name, "unknown option '%s'", a);
			return -1;
		}
	}
	if (i != argc - 1) {
		usage_error(name, "expected one path");
		return -1;
	}
	return i;
}

int cmd___sync_manifest(int argc, char **argv)
{
	struct buf out = BUF_INIT(SYNC_MANIFEST_MAX + 64);
	struct sync_manifest m;
	unsigned flags;
	char *dst;
	int i, r;

	i = parse_opts("__sync-manifest", argc, argv, 0, &flags, NULL, NULL, NULL);
	if (i < 0)
		return EXIT_USAGE;
	dst = sync_expand_dst(argv[i]);
	if (!dst)
		return EXIT_FAIL;
	sync_manifest_init(&m);
	r = sync_remote_manifest(dst, flags, &m);
	if (!r && sync_manifest_format(&m, &out))
		r = error("the manifest of '%s' is too large", dst);
	if (!r)
		r = print_out(out.p, out.len);
	sync_manifest_release(&m);
	buf_release(&out);
	free(dst);
	return r ? EXIT_FAIL : EXIT_OK;
}

static int recv_or_serve(const char *name, int serve, int argc, char **argv)
{
	struct buf out = BUF_INIT(0);
	uint64_t max_bytes = 0;
	struct sync_stats st;
	unsigned flags;
	char *dst;
	int i, r;

	i = parse_opts(name, argc, argv, 0, &flags, NULL, &max_bytes, NULL);
	if (i < 0)
		return EXIT_USAGE;
	dst = sync_expand_dst(argv[i]);
	if (!dst)
		return EXIT_FAIL;
	if (serve) {
		r = sync_serve(0, 1, dst, flags | SYNC_LATE_FREE, max_bytes, &st);
	} else {
		/* A node's command: what comes in is the launcher's, and may be compressed. */
		r = sync_unpack(0, dst, flags | SYNC_COMPRESS | SYNC_LATE_FREE, max_bytes, &st);
		if (!r) {
			buf_adds(&out, "skiff-sync-recv ");
			sync_stats_format(&st, &out);
			buf_addch(&out, '\n');
			r = print_out(out.p, out.len);
		}
	}
	sync_free_late();
	buf_release(&out);
	free(dst);
	return r ? EXIT_FAIL : EXIT_OK;
}

int cmd___sync_recv(int argc, char **argv)
{
	return recv_or_serve("__sync-recv", 0, argc, argv);
}

int cmd___sync_serve(int argc, char **argv)
{
	return recv_or_serve("__sync-serve", 1, argc, argv);
}

int cmd___sync_send(int argc, char **argv)
{
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX);
	const char *manifest = NULL;
	struct sync_manifest remote;
	struct sync_stats st;
	unsigned flags;
	int i, r = 0, stats = 0;

	i = parse_opts("__sync-send", argc, argv, SYNC_COMPRESS | SYNC_NO_IGNORE, &flags, &manifest,
	               NULL, &stats);
	if (i < 0)
		return EXIT_USAGE;
	if (isatty(1)) {
		error("refusing to write a sync stream to a terminal");
		return EXIT_USAGE;
	}
	sync_manifest_init(&remote);
	if (manifest && !strcmp(manifest, "-")) {
		r = sync_manifest_read_fd(&remote, 0, "the manifest on stdin");
	} else if (manifest) {
		r = buf_read_file(&text, manifest);
		if (r) {
			errno = -r;
			r = error_errno("cannot read the manifest '%s'", manifest);
		} else {
			r = sync_manifest_parse(&remote, text.p, text.len, manifest);
		}
	}
	if (!r)
		r = sync_pack(argv[i], &remote, 1, flags, &st);
	if (!r && stats) {
		buf_reset(&text);
		buf_adds(&text, "skiff-sync-send ");
		sync_stats_format(&st, &text);
		fprintf(stderr, "%s\n", text.p);
	}
	sync_manifest_release(&remote);
	buf_release(&text);
	return r ? EXIT_FAIL : EXIT_OK;
}

/* One node command of __sync-push: /bin/sh -c COMMAND with our pipes. */
struct push_node {
	pid_t pid;
	int to[2], from[2];
	char *name, *key;
};

static int start_node(struct push_node *nd, const char *command)
{
	char *argv[] = {"/bin/sh", "-c", (char *)command, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	int r;

	if (pipe2(nd->to, O_CLOEXEC) < 0 || pipe2(nd->from, O_CLOEXEC) < 0)
		return error_errno("pipe");
	o.argv = argv;
	o.fd_in = nd->to[0];
	o.fd_out = nd->from[1];
	o.fd_err = fcntl(2, F_GETFD) < 0 ? -1 : 2; /* the node says why it failed: ours */
	r = spawn(&o, &nd->pid);
	close(nd->to[0]);
	close(nd->from[1]);
	if (r)
		return error("cannot run '%s': %s", command, strerror(-r));
	return 0;
}

int cmd___sync_push(int argc, char **argv)
{
	const char *cache = NULL, *src = NULL, *commands[64];
	struct push_node nodes[64];
	struct sync_peer peers[64];
	unsigned flags = 0;
	size_t n = 0, i;
	int64_t t0;
	int k, r = 0, stats = 0, status;

	for (k = 1; k < argc; k++) {
		const char *a = argv[k];

		if (!strcmp(a, "--file")) {
			flags |= SYNC_FILE;
		} else if (!strcmp(a, "--no-ignore")) {
			flags |= SYNC_NO_IGNORE;
		} else if (!strcmp(a, "--stats")) {
			stats = 1;
		} else if (!strcmp(a, "--cache") && k + 1 < argc) {
			cache = argv[++k];
		} else if (!strcmp(a, "--node") && k + 1 < argc) {
			if (n == 64)
				return usage_error("__sync-push", "at most 64 nodes");
			commands[n++] = argv[++k];
		} else if (a[0] != '-' && !src) {
			src = a;
		} else {
			return usage_error("__sync-push", "unknown option '%s'", a);
		}
	}
	if (!src || !n)
		return usage_error("__sync-push", "expected SRC and at least one --node");
	memset(nodes, 0, sizeof(nodes));
	memset(peers, 0, sizeof(peers));
	t0 = now_ms();
	for (i = 0; i < n && !r; i++) {
		nodes[i].name = xasprintf("node %zu", i + 1);
		nodes[i].key = cache ? xasprintf("%s/%zu", cache, i + 1) : NULL;
		r = start_node(&nodes[i], commands[i]);
		peers[i].name = nodes[i].name;
		peers[i].to_fd = nodes[i].to[1];
		peers[i].from_fd = nodes[i].from[0];
		peers[i].cache_key = nodes[i].key;
	}
	if (!r)
		r = sync_push(src, flags, peers, n);
	for (i = 0; i < n; i++) {
		struct buf line = BUF_INIT(0);

		if (nodes[i].pid > 0 && spawn_wait(nodes[i].pid, &status) == 0 && status && !r)
			r = error("%s: '%s' exited %d", nodes[i].name, commands[i], status);
		if (peers[i].rc)
			error("%s: the sync failed", nodes[i].name);
		if (nodes[i].from[0] > 0)
			close(nodes[i].from[0]);
		buf_addf(&line, "skiff-sync-push node=%zu wire=%" PRIu64 " ", i + 1,
		         peers[i].wire_bytes);
		sync_stats_format(&peers[i].st, &line);
		if (!r)
			printf("%s\n", line.p);
		buf_release(&line);
		free(nodes[i].name);
		free(nodes[i].key);
	}
	if (stats)
		fprintf(stderr, "skiff-sync-push ms=%lld nodes=%zu\n", (long long)(now_ms() - t0),
		        n);
	fflush(stdout);
	return r ? EXIT_FAIL : EXIT_OK;
}

int cmd___sync_cluster(int argc, char **argv)
{
	struct st_db *ldb = NULL;
	struct cnode **nodes = NULL;
	struct clive cl = {0};
	struct cluster c = {0};
	int is_file = 0, i = 1, r = EXIT_FAIL, lock = -1, open = 0;
	int64_t t0;
	size_t k;

	if (i < argc && !strcmp(argv[i], "--file")) {
		is_file = 1;
		i++;
	}
	if (argc - i != 3)
		return usage_error("__sync-cluster", "expected CLUSTER SRC DST");
	if (st_launcher_open(0, &ldb))
		goto out;
	/* As a launch: no other command changes the cluster meanwhile. */
	lock = eng_lock_cluster(argv[i], "skiff __sync-cluster");
	if (lock < 0)
		goto out;
	if (eng_open(ldb, argv[i], &c, &cl))
		goto out;
	open = 1;
	nodes = xcalloc(cl.n ? cl.n : 1, sizeof(*nodes));
	for (k = 0; k < cl.n; k++)
		nodes[k] = &cl.nodes[k];
	t0 = now_ms();
	if (!cl_sync_many(nodes, cl.n, argv[i + 1], argv[i + 2], is_file)) {
		printf("skiff-sync-cluster nodes=%zu ms=%lld\n", cl.n, (long long)(now_ms() - t0));
		r = EXIT_OK;
	}
out:
	free(nodes);
	if (open) {
		cl_close(&cl);
		cluster_free(&c);
	}
	lock_release(lock);
	st_close(ldb);
	return r;
}
