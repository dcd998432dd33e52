/*
 * Hidden commands for file sync (bootstrap/sync/sync.h, docs/sync.md). On the node:
 * __sync-manifest prints what DST holds, __sync-recv applies a stream from stdin. On the
 * launcher: __sync-send writes the stream for SRC to stdout (the launcher pipes it into
 * the runner; tests drive both ends with it).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/sync/sync.h"
#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

const char cmd___sync_manifest_usage[] =
        "usage: skiff __sync-manifest [--file] DST\n"
        "\n"
        "Internal: prints the manifest of what earlier syncs put in DST (checked against the\n"
        "disk) on stdout, for the launcher to diff against. DST may start with '~/'.\n"
        "\n"
        "  --file    DST is a single file, not a directory\n";

const char cmd___sync_recv_usage[] =
        "usage: skiff __sync-recv [--file] [--max-bytes N] DST\n"
        "\n"
        "Internal: reads a sync stream on stdin and applies it to DST, then prints one line:\n"
        "'skiff-sync-recv files=N dirs=N links=N bytes=N deleted=N skipped=N unchanged=0'.\n"
        "\n"
        "  --file           DST is a single file, not a directory\n"
        "  --max-bytes N    refuse a sync with more than N bytes of file data (default 4 GiB)\n";

const char cmd___sync_send_usage[] =
        "usage: skiff __sync-send [--file] [--gzip] [--no-ignore] [--manifest FILE] [--stats] SRC\n"
        "\n"
        "Internal: writes to stdout the sync stream that brings a node holding the manifest in\n"
        "FILE ('-' for stdin; none: an empty node) up to date with SRC.\n"
        "\n"
        "  --file          SRC is a single file, not a directory\n"
        "  --gzip          compress the stream\n"
        "  --no-ignore     send everything but .git (no .skyignore / .gitignore rules)\n"
        "  --manifest FILE the node's manifest, as printed by 'skiff __sync-manifest'\n"
        "  --stats         print what was sent on stderr\n";

/* Options shared by the three commands; returns the index of the first operand or -1. */
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
		} else if (!strcmp(a, "--gzip") && (allowed & SYNC_GZIP)) {
			*flags |= SYNC_GZIP;
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

int cmd___sync_recv(int argc, char **argv)
{
	struct buf out = BUF_INIT(0);
	uint64_t max_bytes = 0;
	struct sync_stats st;
	unsigned flags;
	char *dst;
	int i, r;

	i = parse_opts("__sync-recv", argc, argv, 0, &flags, NULL, &max_bytes, NULL);
	if (i < 0)
		return EXIT_USAGE;
	dst = sync_expand_dst(argv[i]);
	if (!dst)
		return EXIT_FAIL;
	r = sync_unpack(0, dst, flags, max_bytes, &st);
	if (!r) {
		buf_adds(&out, "skiff-sync-recv ");
		sync_stats_format(&st, &out);
		buf_addch(&out, '\n');
		r = print_out(out.p, out.len);
	}
	buf_release(&out);
	free(dst);
	return r ? EXIT_FAIL : EXIT_OK;
}

int cmd___sync_send(int argc, char **argv)
{
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX);
	const char *manifest = NULL;
	struct sync_manifest remote;
	struct sync_stats st;
	unsigned flags;
	int i, r = 0, stats = 0;

	i = parse_opts("__sync-send", argc, argv, SYNC_GZIP | SYNC_NO_IGNORE, &flags, &manifest,
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
