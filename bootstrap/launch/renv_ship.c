/*
 * The launcher's side of runtime envs: the spec is made once per job (requirement files
 * read, wheels hashed, dirs packed into the local store), and each rank's node gets the
 * store files it lacks through the sync protocol (a file already there with the same size
 * and time is not sent again; its name is its sha256, so it never changes).
 */
#include "bootstrap/launch/renv_ship.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/cluster.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

int renv_launch_prepare(struct renv_launch *rl, const struct task *t)
{
	const char *home = skiff_home();

	memset(rl, 0, sizeof(*rl));
	if (!t->runtime_env.set)
		return 0;
	if (!home)
		return -ENOENT;
	rl->store = xasprintf("%s/pkgs", home);
	return renv_spec_from_task(t, rl->store, &rl->spec, &rl->ship);
}

int renv_launch_node(struct renv_launch *rl, struct cnode *nd, struct msg *m)
{
	size_t i;
	int r;

	if (!rl->spec.set)
		return 0;
	for (i = 0; i < rl->ship.n; i++) {
		char *src = xasprintf("%s/%s", rl->store, rl->ship.v[i]);
		char *dst = xasprintf("~/.skiff/pkgs/%s", rl->ship.v[i]);

		r = cl_sync(nd, src, dst, 1);
		free(src);
		free(dst);
		if (r)
			return error("runtime_env: cannot ship '%s' to node %s", rl->ship.v[i],
			             nd->name);
	}
	return renv_spec_to_msg(&rl->spec, m);
}

void renv_launch_release(struct renv_launch *rl)
{
	renv_spec_release(&rl->spec);
	renv_strv_release(&rl->ship);
	free(rl->store);
	rl->store = NULL;
}
