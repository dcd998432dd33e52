/*
 * `skiff __pack-self SHA256`: the smaller pack of this executable for the self-copy, made
 * in the background when a launch first packs it (bootstrap/launch/install.h,
 * boot_self_pack_best()). It runs at the lowest CPU priority: the launch that started it,
 * and everything else on the machine, come first.
 */
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bootstrap/launch/install.h"
#include "bootstrap/launch/selfimage.h"
#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/banned.h"

const char cmd___pack_self_usage[] =
        "usage: skiff __pack-self SHA256\n"
        "\n"
        "Internal: packs this executable (whose sha256 must be SHA256) at zstd's high level\n"
        "into $SKIFF_HOME/cache, for launches to send to new nodes. A launch starts it.\n";

/*
 * Nice 19, for this process and for its autogroup. The launch starts it in a session of
 * its own, and where the kernel groups each session's processes (sched_autogroup, on by
 * default in Debian's kernels) the CPU is shared between the groups first: a process's
 * nice then only ranks it within its own group, where it is alone, and the packer would
 * take a group's whole share beside the launch and the user's work. The group's nice ranks
 * the group. Neither needs a privilege (this lowers it); a kernel without autogroups has
 * no such file.
 */
static void lowest_priority(void)
{
	int fd;

	setpriority(PRIO_PROCESS, 0, 19);
	fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "19", 2) < 0)
			debug("cannot lower this process's autogroup");
		close(fd);
	}
}

int cmd___pack_self(int argc, char **argv)
{
	if (argc != 2)
		return usage_error("__pack-self", "expected one sha256");
	lowest_priority();
	return boot_self_pack_best(argv[1]) ? EXIT_FAIL : EXIT_OK;
}
