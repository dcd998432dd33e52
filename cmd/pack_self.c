/*
 * `skiff __pack-self SHA256`: the smaller pack of this executable for the self-copy, made
 * in the background when a launch first packs it (bootstrap/launch/install.h,
 * boot_self_pack_best()). It runs at the lowest CPU priority: the launch that started it,
 * and everything else on the machine, come first.
 */
#include <sys/resource.h>

#include "bootstrap/launch/install.h"
#include "bootstrap/launch/selfimage.h"
#include "cmd/cmd.h"
#include "lib/banned.h"

const char cmd___pack_self_usage[] =
        "usage: skiff __pack-self SHA256\n"
        "\n"
        "Internal: packs this executable (whose sha256 must be SHA256) at zstd's high level\n"
        "into $SKIFF_HOME/cache, for launches to send to new nodes. A launch starts it.\n";

int cmd___pack_self(int argc, char **argv)
{
	if (argc != 2)
		return usage_error("__pack-self", "expected one sha256");
	setpriority(PRIO_PROCESS, 0, 19);
	return boot_self_pack_best(argv[1]) ? EXIT_FAIL : EXIT_OK;
}
