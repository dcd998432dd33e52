#include <string.h>

#include "cmd/cmd.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

const char cmd_init_usage[] =
        "usage: skiff init [-- CMD [ARGS...]]\n"
        "\n"
        "Runs as a container's entrypoint (PID 1): reaps zombies, starts the node\n"
        "supervisor for $SKIFF_HOME, and runs CMD if given, forwarding SIGTERM, SIGINT,\n"
        "SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH to it. Exits with CMD's status\n"
        "(128+N if a signal N ended it), or runs until SIGTERM when there is no CMD.\n";

int cmd_init(int argc, char **argv)
{
	int i = 1;

	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	else if (i < argc && argv[i][0] == '-')
		return usage_error("init", "unknown option '%s'", argv[i]);
	return init_main(argc - i, argv + i);
}
