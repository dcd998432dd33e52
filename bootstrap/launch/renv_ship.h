#ifndef SKIFF_LAUNCH_RENV_SHIP_H
#define SKIFF_LAUNCH_RENV_SHIP_H

/*
 * The launcher's side of runtime envs (bootstrap/launch/renv_ship.c): the spec is made
 * once per job (bootstrap/renv/ builds it and the node side), and each rank's node gets
 * the store files it lacks through the cluster's sync.
 */

#include "bootstrap/renv/renv.h"
#include "lib/proto.h"
#include "lib/task.h"

/*
 * The launcher's whole part (bootstrap/launch/renv_ship.c): prepare once per job (the local
 * store is $SKIFF_HOME/pkgs), then for each rank ship what its node lacks and add the
 * spec to its submit message. A task without runtime_env makes both no-ops.
 */
struct cnode;
struct renv_launch {
	struct renv_spec spec;
	struct renv_strv ship;
	char *store;
};
int renv_launch_prepare(struct renv_launch *rl, const struct task *t);
int renv_launch_node(struct renv_launch *rl, struct cnode *nd, struct msg *m);
void renv_launch_release(struct renv_launch *rl);

#endif
