#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

const char cmd_help_usage[] =
        "usage: skiff help [-a|--all | COMMAND]\n"
        "\n"
        "Lists skiff's commands, or shows the help of one command (the same as\n"
        "'skiff COMMAND --help'). With --all, the hidden internal commands too (the\n"
        "supervisor, the job shim, test helpers), under a heading of their own.\n";

/* Prints the table's commands whose hidden flag is `hidden`, names padded to `width`. */
static void list(const struct cmd *t, size_t n, unsigned hidden, int width)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((t[i].flags & CMD_HIDDEN) == hidden)
			printf("  %-*s %s\n", width, t[i].name, t[i].summary);
}

int cmd_help(int argc, char **argv)
{
	const struct cmd *t, *c;
	size_t n, i, w;
	int all = 0;

	if (argc > 2)
		return usage_error("help", "too many arguments");
	if (argc == 2 && (!strcmp(argv[1], "--all") || !strcmp(argv[1], "-a"))) {
		all = 1;
	} else if (argc == 2 && argv[1][0] == '-') {
		return usage_error("help", "unknown option '%s'", argv[1]);
	} else if (argc == 2) {
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
	list(t, n, 0, 10);
	if (all) {
		for (w = 10, i = 0; i < n; i++)
			if (strlen(t[i].name) > w)
				w = strlen(t[i].name);
		printf("\nHidden commands (internal; not listed without --all):\n");
		list(t, n, CMD_HIDDEN, (int)w);
	}
	printf("\nSee 'skiff COMMAND --help' for the options of one command.\n");
	return EXIT_OK;
}
