/*
 * The local runner: a "node" that is a directory on this machine. The script is the
 * argument of `/bin/sh -c` as is: no shell parses it before that one, so it needs no
 * quoting here; a program with its arguments (runner_open_argv()) runs with no shell at
 * all. The node's home is HOME and the working directory. The environment is a login's
 * (runner.h): what a job on the node sees must not hang on which launcher process happened
 * to start the node's supervisor, and SKIFF_HOME is removed so that the node's skiff uses
 * the node's own ~/.skiff, not the launcher's.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/runner.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

struct local {
	char *home;
};

static int local_build_argv(struct runner *r, const char *script, int interactive, struct argv *out)
{
	(void)r;
	argv_push(out, "/bin/sh");
	if (!script) {
		if (!interactive)
			return -EINVAL;
		argv_push(out, "-i");
		return 0;
	}
	argv_push(out, "-c");
	argv_push(out, script);
	return 0;
}

static int local_build_exec(struct runner *r, char *const *cmd, struct argv *out)
{
	(void)r;
	for (; *cmd; cmd++)
		argv_push(out, *cmd);
	return 0;
}

extern char **environ;

int runner_local_env_kept(const char *kv)
{
	if (starts_with(kv, "SKIFF_HOME="))
		return 0;
	return starts_with(kv, "SKIFF_") || starts_with(kv, "LANG=");
}

static void local_build_env(struct runner *r, struct argv *env_kv)
{
	struct local *l = r->priv;
	const struct account *me = own_account();
	size_t i;

	for (i = 0; environ && environ[i]; i++) {
		size_t n = strcspn(environ[i], "=");
		char *name;

		if (runner_local_env_kept(environ[i]))
			continue;
		name = xstrndup(environ[i], n);
		argv_push(env_kv, name);
		free(name);
	}
	argv_pushf(env_kv, "HOME=%s", l->home);
	argv_pushf(env_kv, "PWD=%s", l->home);
	argv_push(env_kv, "PATH=" RUNNER_LOCAL_PATH);
	if (*me->name) {
		argv_pushf(env_kv, "USER=%s", me->name);
		argv_pushf(env_kv, "LOGNAME=%s", me->name);
	}
	argv_pushf(env_kv, "SHELL=%s", *me->shell ? me->shell : "/bin/sh");
}

static const char *local_cwd(struct runner *r)
{
	return ((struct local *)r->priv)->home;
}

static void local_release(struct runner *r)
{
	struct local *l = r->priv;

	if (l)
		free(l->home);
	free(l);
	r->priv = NULL;
}

static const struct runner_ops local_ops = {
        .kind = "local",
        .build_argv = local_build_argv,
        .build_exec = local_build_exec,
        .build_env = local_build_env,
        .release = local_release,
        .cwd = local_cwd,
        .home_here = local_cwd,
        .transport_status = 0,
};

struct runner *runner_local_new(const char *name, const char *node_home)
{
	char abs[PATH_MAX];
	const char *home = abs;
	struct runner *r;
	struct local *l;

	if (!node_home || !*node_home) {
		error("node %s: no home directory given for the local node", name);
		return NULL;
	}
	/*
	 * HOME and PWD must name the directory itself, whatever our cwd is later. A directory
	 * that is gone is the node gone (runner_node_gone()): the runner is made all the same,
	 * so that its calls fail and say so, and nothing makes the directory again here.
	 */
	if (!realpath(node_home, abs)) {
		if (errno != ENOENT || *node_home != '/') {
			error_errno("node %s: cannot resolve '%s'", name, node_home);
			return NULL;
		}
		home = node_home;
	}
	r = runner_new(&local_ops, name, "127.0.0.1");
	l = xcalloc(1, sizeof(*l));
	l->home = xstrdup(home);
	r->priv = l;
	return r;
}
