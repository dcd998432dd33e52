/*
 * Hidden commands the binary runs on itself: the supervisor daemon and the job shim.
 * They are in the command table (marked hidden) so that `ps` shows what they are.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/util.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

const char cmd___supervisor_usage[] =
        "usage: skiff __supervisor\n"
        "\n"
        "Internal: the node supervisor daemon. Started by 'skiff node up'.\n";

const char cmd___shim_usage[] =
        "usage: skiff __shim JOB_ID\n"
        "\n"
        "Internal: runs one job under supervision. Started by the supervisor.\n";

int cmd___supervisor(int argc, char **argv)
{
	(void)argv;
	if (argc != 1)
		return usage_error("__supervisor", "takes no arguments");
	return sup_main();
}

int cmd___shim(int argc, char **argv)
{
	long id;

	if (argc != 2 || parse_long(argv[1], 1, INT64_MAX, &id))
		return usage_error("__shim", "expected a job id");
	return shim_main(id);
}
