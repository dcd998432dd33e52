/*
 * `skiff __verify-self SHA256`: whether this executable is the one with that sha256. The
 * self-copy bootstrap runs a freshly received binary this way on a node without
 * sha256sum, before the binary may take its final name (bootstrap/launch/install.c); so it
 * hashes its own file before it does anything else.
 */
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/banned.h"

const char cmd___verify_self_usage[] =
        "usage: skiff __verify-self SHA256\n"
        "\n"
        "Internal: exits 0 if the sha256 of this executable's file is SHA256, 1 otherwise.\n"
        "The self-copy bootstrap runs it on a received binary where the node has no\n"
        "sha256sum.\n";

int cmd___verify_self(int argc, char **argv)
{
	const char *sha;

	if (argc != 2)
		return usage_error("__verify-self", "expected one sha256");
	sha = self_sha256(NULL);
	if (!sha) {
		error("cannot hash this executable");
		return EXIT_FAIL;
	}
	if (strcmp(sha, argv[1])) {
		error("this executable's sha256 is %s, not %.64s", sha, argv[1]);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
