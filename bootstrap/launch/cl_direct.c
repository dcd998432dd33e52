/* A node's supervisor on its own socket: see cl_direct.h. */
#include "bootstrap/launch/cl_direct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/live.h"
#include "bootstrap/infra/runner.h"
#include "bootstrap/infra/ssh_mux.h"
#include "bootstrap/launch/install.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "supervisor/node.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

/* Hex digits of the node's skiff home in a forward's name: one master, several homes. */
#define FWD_HOME_HEX 8

/*
 * A node that is a directory here (the local runner) has its supervisor's socket here
 * too: its path (malloc'd), or NULL when the node is elsewhere or its skiff is gone (a
 * `node call` says so: 127).
 */
static char *local_sock(const struct cnode *nd)
{
	const char *home = nd->r->ops->home_here ? nd->r->ops->home_here(nd->r) : NULL;
	char *exe;
	int r;

	if (!home || !nd->exe)
		return NULL;
	exe = boot_exe_path_here(nd->exe, home);
	r = exe && !access(exe, X_OK);
	free(exe);
	return r ? xasprintf("%s/" SKIFF_HOME_DIR "/" SUP_SOCK_NAME, home) : NULL;
}

/*
 * Where an ssh node's forward listens here: beside its master's socket, named after the
 * node's skiff home (nd->exe up to its "/bin/": "$HOME/.skiff", or a share's own home).
 * NULL for a node that is not reached over ssh, or whose skiff is not known.
 */
static char *fwd_path(const struct cnode *nd)
{
	const char *control = runner_ssh_control(nd->r), *bin;
	char hex[SHA256_HEX_LEN + 1];

	if (!control || !nd->exe || !(bin = strstr(nd->exe, "/bin/")))
		return NULL;
	while (strstr(bin + 1, "/bin/"))
		bin = strstr(bin + 1, "/bin/");
	sha256_hex(nd->exe, (size_t)(bin - nd->exe), hex);
	return xasprintf("%s.%.*s", control, FWD_HOME_HEX, hex);
}

char *cl_direct_sock(const struct cnode *nd, int *fwd)
{
	struct stat st;
	char *path = local_sock(nd);

	*fwd = 0;
	if (path)
		return path;
	path = fwd_path(nd);
	if (path && !stat(path, &st) && S_ISSOCK(st.st_mode)) {
		*fwd = 1;
		return path;
	}
	free(path);
	return NULL;
}

int cl_direct_fwd_may(const struct msg *req)
{
	const char *op = msg_get(req, "op");

	if (!op)
		return 0;
	if (!strcmp(op, "submit"))
		return msg_get(req, "submit_key") != NULL;
	return !strcmp(op, "watch") || !strcmp(op, "cancel") || !strcmp(op, "status") ||
	       !strcmp(op, "ping");
}

void cl_direct_learn(const struct cnode *nd, const struct msg *rep)
{
	const char *sock = msg_get(rep, "sock"), *control = runner_ssh_control(nd->r);
	struct buf why = BUF_INIT(1024);
	char *path;
	int fd, r;

	if (!sock || sock[0] != '/' || str_control(sock) || !(path = fwd_path(nd)))
		return;
	fd = unix_connect(path);
	if (fd >= 0) {
		close(fd); /* there already (another launcher's, or a race of ours) */
		free(path);
		return;
	}
	/* A master that ended left its listener's file: ours to remove (our control dir). */
	if (unlink(path) < 0 && errno != ENOENT) {
		debug("node %s: cannot remove '%s': %s", nd->name, path, strerror(errno));
		free(path);
		return;
	}
	r = ssh_mux_forward(control, path, sock, &why);
	if (r)
		debug("node %s: no forward to its supervisor's socket: %.*s", nd->name,
		      (int)why.len, why.p);
	else
		debug("node %s: its supervisor's socket %s is forwarded to %s", nd->name, sock,
		      path);
	buf_release(&why);
	free(path);
}

void cl_direct_forget(const struct cnode *nd)
{
	char *path = fwd_path(nd);

	if (path && unlink(path) < 0 && errno != ENOENT)
		debug("node %s: cannot remove '%s': %s", nd->name, path, strerror(errno));
	free(path);
}
