#ifndef SKIFF_AUTOSTOP_H
#define SKIFF_AUTOSTOP_H

/*
 * What the launcher makes of a cluster whose autostop may have fired, as pure logic,
 * tested over every combination in tests/unit/test-autostop.c. The head (rank 0) decides
 * for the cluster (bootstrap/infra/infra.h, idle_hook); the launcher's next look (status,
 * launch, exec) learns what it did and finishes the stop or the down on every node.
 */

/* The head as its node call autostop_state answers (cmd/node_call.c). */
enum as_head {
	AS_HEAD_RUNNING,     /* a supervisor serves there */
	AS_HEAD_FIRED,       /* autostop fired and no supervisor serves */
	AS_HEAD_STOPPED,     /* no supervisor serves, and autostop did not fire */
	AS_HEAD_UNREACHABLE, /* no answer */
};

enum as_verdict {
	AS_UP,      /* nothing happened: the cluster is as recorded */
	AS_STOPPED, /* autostop stopped it: stop what is left, record STOPPED */
	AS_DOWN,    /* autodown: tear down what is left, forget it */
	AS_UNKNOWN, /* cannot tell now: change nothing, look again next time */
};

/*
 * hook_fired is the infra's word (1: the head's hook stopped what holds it, 0: it runs,
 * < 0: the infra cannot tell, then head says); fired is what the head's node says fired
 * ("stop", "down", or NULL/"" when it said nothing), set_down the launcher's own setting,
 * no_stop 1 where nothing can be stopped (slurm: a stop is a down). A head stopped by
 * other means than autostop (by hand, a crash) is UP: its next submit starts it again.
 */
enum as_verdict autostop_verdict(int hook_fired, enum as_head head, const char *fired, int set_down,
                                 int no_stop);

#endif
