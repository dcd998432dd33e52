#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

const char cmd_help_usage[] =
        "usage: skiff help [COMMAND]\n"
        "\n"
        "Lists skiff's commands, or shows the help of one command (the same as\n"
        "'skiff COMMAND --help').\n";

int cmd_help(int argc, char **argv)
{
	const struct cmd *t, *c;
	size_t n, i;

	if (argc > 2)
		return usage_error("help", "too many arguments");
	if (argc == 2) {
		c = cmd_find(argv[1]);
		if (!c) {
			char *sub[] = {argv[1], NULL};

			/* Let dispatch print the did-you-mean. */
			t = cmd_table(&n);
			return cmd_dispatch(NULL, t, n, 1, sub);
		}
		fputs(c->usage, stdout);
		return EXIT_OK;
	}
	t = cmd_table(&n);
	printf("usage: skiff [-q] COMMAND [ARGS]\n"
	       "\n"
	       "skiff runs SkyPilot-style task YAMLs on local processes, SSH node pools,\n"
	       "containers and Slurm allocations, with one static binary on every node.\n"
	       "\n"
	       "Commands:\n");
	for (i = 0; i < n; i++) {
		if (t[i].flags & CMD_HIDDEN)
			continue;
		printf("  %-10s %s\n", t[i].name, t[i].summary);
	}
	printf("\nSee 'skiff COMMAND --help' for the options of one command.\n");
	return EXIT_OK;
}
