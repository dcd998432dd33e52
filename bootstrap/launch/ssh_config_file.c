/*
 * The files of `ssh CLUSTER` (ssh_config.h): a cluster's own ssh_config under
 * $SKIFF_HOME/generated/ssh, and the Include line at the top of ~/.ssh/config. The text
 * comes from ssh_config_text.c; here are only reads, writes and renames.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/cluster.h"
#include "bootstrap/launch/ssh_config.h"
#include "lib/lock.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/* The most of ~/.ssh/config skiff reads: a bigger file is left as it is, with a warning. */
#define SSH_USER_CONFIG_MAX ((size_t)16 << 20)

static char *generated_dir(void)
{
	const char *home = skiff_home();

	return home ? xasprintf("%s/%s", home, SSH_CONFIG_DIR) : NULL;
}

/* $HOME/.ssh/config gets the Include line for dir, once, at its top. */
static int ensure_include(const char *dir)
{
	const char *home = getenv("HOME");
	const char *pw_home = *own_account()->home ? own_account()->home : NULL;
	struct buf old = BUF_INIT(SSH_USER_CONFIG_MAX), out = BUF_INIT(0);
	char *line = NULL, *sshdir = NULL, *cfg = NULL, *lockp = NULL, *real = NULL;
	struct stat st;
	int r, lock_fd = -1, exists;

	if (!home || *home != '/')
		home = pw_home;
	if (!home || *home != '/')
		return error("cannot find your home directory for ~/.ssh/config"), -ENOENT;
	line = ssh_config_include_line(dir, home, pw_home);
	if (!line) {
		r = error("'%s' cannot be named in an Include line of ~/.ssh/config", dir);
		goto out;
	}
	/* Two launches at once: one reads and writes, then the other. */
	lockp = xasprintf("%s/locks/ssh-config.lock", skiff_home());
	lock_fd = lock_take(lockp, "~/.ssh/config", "skiff launch", LOCK_TAKE_WAIT);
	if (lock_fd < 0) {
		r = lock_fd;
		goto out;
	}
	sshdir = xasprintf("%s/.ssh", home);
	if (mkdir(sshdir, 0700) < 0 && errno != EEXIST) {
		r = error_errno("cannot create '%s'", sshdir);
		goto out;
	}
	cfg = xasprintf("%s/config", sshdir);
	/* A config that is a link (a dotfiles checkout) stays one: its target is rewritten. */
	real = realpath(cfg, NULL);
	exists = real && !stat(real, &st);
	if (!exists && lstat(cfg, &st) == 0) {
		r = error("'%s' is a link to nothing: left as it is", cfg);
		goto out;
	}
	if (exists && (r = buf_read_file(&old, real))) {
		r = error("cannot read '%s': %s", real, buf_read_strerror(r));
		goto out;
	}
	r = ssh_config_with_include(exists ? old.p : NULL, old.len, line, &out);
	if (r <= 0)
		goto out;
	r = write_file_atomic(exists ? real : cfg, out.p, out.len,
	                      exists ? st.st_mode & 07777 : 0600);
	if (r) {
		errno = -r;
		r = error_errno("cannot write '%s'", exists ? real : cfg);
		goto out;
	}
	/* Root writing another's file: it stays theirs (ssh refuses a config others own). */
	if (exists && (st.st_uid != geteuid() || st.st_gid != getegid()) &&
	    chown(real, st.st_uid, st.st_gid) < 0)
		warning("cannot give '%s' back to uid %ld: %s", real, (long)st.st_uid,
		        strerror(errno));
	debug("%s: added '%s' at the top", exists ? real : cfg, line);
out:
	lock_release(lock_fd);
	buf_release(&old);
	buf_release(&out);
	free(line);
	free(sshdir);
	free(cfg);
	free(lockp);
	free(real);
	return r < 0 ? r : 0;
}

int eng_ssh_config_write(const struct clive *cl)
{
	struct ssh_conn *v = NULL;
	struct buf text = BUF_INIT(0);
	char *dir = NULL, *path = NULL;
	const char *optout;
	size_t i;
	int r = -EINVAL;

	if (!cl->ops || !(cl->ops->flags & INFRA_SSH_CONFIG) || !cl->n)
		return 0;
	v = xcalloc(cl->n, sizeof(*v));
	for (i = 0; i < cl->n; i++) {
		const struct cnode *nd = &cl->nodes[i];

		if (nd->rank < 0 || (size_t)nd->rank >= cl->n ||
		    runner_ssh_conn(nd->r, &v[nd->rank])) {
			error("cluster %s: node %d is not an ssh node", cl->name, nd->rank);
			goto out;
		}
	}
	if (ssh_config_text(&text, cl->name, v, cl->n))
		goto out;
	dir = generated_dir();
	if (!dir) {
		r = -ENOENT;
		goto out;
	}
	r = mkdir_p(dir, 0700);
	if (!r)
		r = ensure_private_dir(dir);
	if (r) {
		errno = -r;
		error_errno("cannot create '%s'", dir);
		goto out;
	}
	path = xasprintf("%s/%s", dir, cl->name);
	r = write_file_atomic(path, text.p, text.len, 0600);
	if (r) {
		errno = -r;
		error_errno("cannot write '%s'", path);
		goto out;
	}
	optout = getenv(SSH_CONFIG_OPT_OUT_ENV);
	if (!optout || strcmp(optout, "1"))
		r = ensure_include(dir);
out:
	if (r)
		warning("cluster %s: no ssh config for 'ssh %s' ('skiff ssh %s' works)", cl->name,
		        cl->name, cl->name);
	free(v);
	buf_release(&text);
	free(dir);
	free(path);
	return r;
}

int eng_ssh_config_remove(const char *cluster)
{
	char *dir = generated_dir(), *path;
	int r = 0;

	if (!dir)
		return -ENOENT;
	path = xasprintf("%s/%s", dir, cluster);
	if (unlink(path) < 0 && errno != ENOENT)
		r = error_errno("cannot remove '%s'", path);
	free(path);
	free(dir);
	return r;
}
