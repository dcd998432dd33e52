/*
 * skiff __fetch: the download manager (bootstrap/fetch/fetch.h, docs/fetch.md) from the command
 * line, for tests and scripts on a node. Prints the cached file's path.
 */
#include <limits.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bootstrap/fetch/fetch.h"
#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

const char cmd___fetch_usage[] =
        "usage: skiff __fetch [options] URL CACHE_DIR\n"
        "\n"
        "Internal: downloads an https:// URL into the content-addressed cache CACHE_DIR (one\n"
        "download per URL across processes) and prints the absolute path of the file.\n"
        "\n"
        "  --ca FILE           trusted CAs, PEM (default: $SSL_CERT_FILE, else the system bundle)\n"
        "  --sha256 HEX        refuse content with another sha256\n"
        "  --max-bytes N       refuse a body over N bytes (default 1 GiB)\n"
        "  --retries N         attempts after the first on transient errors (default 3)\n"
        "  --timeout-ms N      give up an attempt after N ms without progress (default 30000)\n"
        "  --max-parallel N    downloads at once on this node (default 4)\n";

int cmd___fetch(int argc, char **argv)
{
	struct fetch_opts o = FETCH_OPTS_INIT;
	struct buf err = BUF_INIT(4096);
	char *path = NULL;
	long v;
	int i, rc;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (i + 1 >= argc)
			return usage_error("__fetch", "unknown option or missing value: '%s'", a);
		if (!strcmp(a, "--ca")) {
			o.ca_file = argv[++i];
		} else if (!strcmp(a, "--sha256")) {
			o.sha256 = argv[++i];
		} else if (!strcmp(a, "--max-bytes")) {
			if (parse_long(argv[++i], 1, LONG_MAX, &v))
				return usage_error("__fetch", "bad --max-bytes '%s'", argv[i]);
			o.max_bytes = (uint64_t)v;
		} else if (!strcmp(a, "--retries")) {
			if (parse_long(argv[++i], 0, 100, &v))
				return usage_error("__fetch", "bad --retries '%s'", argv[i]);
			o.retries = (int)v;
		} else if (!strcmp(a, "--timeout-ms")) {
			if (parse_long(argv[++i], 1, INT_MAX, &v))
				return usage_error("__fetch", "bad --timeout-ms '%s'", argv[i]);
			o.timeout_ms = (int)v;
		} else if (!strcmp(a, "--max-parallel")) {
			if (parse_long(argv[++i], 1, 1024, &v))
				return usage_error("__fetch", "bad --max-parallel '%s'", argv[i]);
			o.max_parallel = (int)v;
		} else {
			return usage_error("__fetch", "unknown option '%s'", a);
		}
	}
	if (argc - i != 2)
		return usage_error("__fetch", "expected URL and CACHE_DIR");
	rc = fetch_url(argv[i], argv[i + 1], &o, &path, &err);
	if (rc) {
		error("cannot fetch '%s': %s", argv[i], err.p);
		buf_release(&err);
		return EXIT_FAIL;
	}
	buf_release(&err);
	buf_addf(&err, "%s\n", path);
	free(path);
	rc = print_out(err.p, err.len);
	buf_release(&err);
	return rc ? EXIT_FAIL : EXIT_OK;
}
