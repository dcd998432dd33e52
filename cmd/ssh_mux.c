/*
 * skiff __ssh-mux: a command over a running ssh ControlMaster without starting ssh
 * (bootstrap/infra/ssh_mux.h). The ssh runner runs it in place of ssh once a master is up.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/ssh_mux.h"
#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

const char cmd___ssh_mux_usage[] =
        "usage: skiff __ssh-mux [-E FILE] SOCKET COMMAND -- SSH-ARGV...\n"
        "\n"
        "Internal: runs COMMAND on the ssh ControlMaster listening at SOCKET, with our stdin,\n"
        "stdout and stderr, and exits with its status. When no session can be started there\n"
        "(no master, a stale socket), runs SSH-ARGV instead. A session the master drops\n"
        "exits 255 with a line in FILE (as ssh -E FILE does).\n";

/* Appends one line to the diag file, as ssh -E would log it; stderr without one. */
static void diag(const char *file, const char *msg)
{
	int fd = file ? open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : 2;
	struct buf b = BUF_INIT(0);

	buf_addf(&b, "skiff: %s\n", msg);
	if (fd >= 0)
		write_all(fd, b.p, b.len);
	if (fd > 2)
		close(fd);
	buf_release(&b);
}

int cmd___ssh_mux(int argc, char **argv)
{
	struct buf why = BUF_INIT(4096);
	const char *diag_file = NULL;
	int i = 1, r, status;

	if (i + 1 < argc && !strcmp(argv[i], "-E")) {
		diag_file = argv[i + 1];
		i += 2;
	}
	if (argc - i < 4 || strcmp(argv[i + 2], "--"))
		return usage_error("__ssh-mux", "expected SOCKET COMMAND -- SSH-ARGV...");
	r = ssh_mux_run(argv[i], argv[i + 1], &status, &why);
	if (r == SSH_MUX_NO_SESSION) {
		debug("ssh: no shared session (%s): running ssh", why.p);
		buf_release(&why);
		r = spawn_replace(argv + i + 3);
		errno = -r;
		error_errno("cannot run '%s'", argv[i + 3]);
		return 255;
	}
	if (r) {
		diag(diag_file, why.p);
		status = 255;
	}
	buf_release(&why);
	return status;
}
