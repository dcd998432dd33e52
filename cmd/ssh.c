/* `skiff ssh`: a shell or a command on a cluster's head, as SkyPilot's `ssh CLUSTER`. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/launch/engine.h"
#include "cmd/cmd.h"
#include "lib/banned.h"

/* What reads the commands of `skiff ssh C` when they come on a pipe. */
#define SSH_STDIN_SHELL "exec sh -s"

const char cmd_ssh_usage[] =
        "usage: skiff ssh CLUSTER [--] [COMMAND...]\n"
        "\n"
        "An interactive shell on the cluster's head node (or runs COMMAND there). With no\n"
        "COMMAND and no terminal on stdin, a shell there reads the commands from stdin\n"
        "(echo CMD | skiff ssh CLUSTER), as ssh does.\n";

int cmd_ssh(int argc, char **argv)
{
	struct st_db *ldb;
	struct buf cmd = BUF_INIT(0);
	int a, rc, interactive;

	if (argc < 2 || argv[1][0] == '-')
		return usage_error("ssh", "expected a cluster name");
	if (cmd_cluster_arg(argv[1]))
		return EXIT_USAGE;
	/* ssh's own `ssh HOST -- CMD`: the -- ends the options, it is not the command's. */
	a = argc > 2 && !strcmp(argv[2], "--") ? 3 : 2;
	for (int first = a; a < argc; a++)
		buf_addf(&cmd, "%s%s", a > first ? " " : "", argv[a]);
	interactive = !cmd.len && isatty(0);
	/* Commands on a pipe (echo CMD | skiff ssh C), as ssh runs them: a shell reads them. */
	if (!cmd.len && !interactive)
		buf_adds(&cmd, SSH_STDIN_SHELL);
	if (cmd_open_ldb(&ldb)) {
		buf_release(&cmd);
		return EXIT_FAIL;
	}
	rc = eng_ssh(ldb, argv[1], interactive ? NULL : cmd.p, interactive);
	if (rc < 0)
		rc = rc == -ENOENT ? EXIT_FAIL : EXIT_UNAVAILABLE;
	buf_release(&cmd);
	st_close(ldb);
	return rc;
}
