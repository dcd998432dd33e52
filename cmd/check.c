#include "cmd/cmd.h"
#include "lib/log.h"

const char cmd_check_usage[] = "usage: skiff check [--json] FILE...\n";

int cmd_check(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return error("check: not built yet"), EXIT_FAIL;
}
