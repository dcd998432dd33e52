/*
 * Autostop and autodown, on every infra. The setting goes to every node of the cluster
 * with the hooks the infra wants the head to run (bootstrap/infra/infra.h, idle_hook);
 * the head decides when the cluster is idle, by itself, whether the launcher is still
 * there or not. The launcher's next look (status, launch, exec) learns what happened
 * (autostop.h) and finishes the stop or the down on every node.
 */
#include "bootstrap/launch/autostop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/engine_internal.h"
#include "lib/lock.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/*
 * Test-only: how many milliseconds an autostop minute lasts (the nodes are told the
 * fraction of a real minute), so that tests never wait minutes. See docs/testing.md.
 */
#define AUTOSTOP_MINUTE_ENV "SKIFF_TEST_MINUTE_MS"
#define MINUTE_MS 60000.0
/* How long a look at the head may take: `status` must not hang on a lost node. */
#define LOOK_CALL_MS 10000

enum as_verdict autostop_verdict(int hook_fired, enum as_head head, const char *fired, int set_down,
                                 int no_stop)
{
	int down = set_down;

	if (hook_fired == 0)
		return AS_UP;
	if (hook_fired < 0) {
		if (head == AS_HEAD_UNREACHABLE)
			return AS_UNKNOWN;
		if (head != AS_HEAD_FIRED)
			return AS_UP;
		/* What the head did, when it says so, over what the launcher last set. */
		if (fired && !strcmp(fired, "down"))
			down = 1;
		else if (fired && !strcmp(fired, "stop"))
			down = 0;
	}
	return down || no_stop ? AS_DOWN : AS_STOPPED;
}

static double minute_scale(void)
{
	const char *v = getenv(AUTOSTOP_MINUTE_ENV);
	long ms;

	/* Never longer than a real minute: the nodes refuse over TASK_AUTOSTOP_MINUTES_MAX. */
	if (!v || parse_long(v, 1, (long)MINUTE_MS, &ms))
		return 1.0;
	return (double)ms / MINUTE_MS;
}

int eng_set_autostop(struct st_db *ldb, struct clive *cl, int minutes, int down,
                     const char *wait_for)
{
	struct msg req, rep;
	char *hook[2] = {NULL, NULL};
	size_t i;
	int r = 0;

	if (minutes >= 0 && cl->ops->idle_hook && cl->n) {
		hook[0] = cl->ops->idle_hook(cl, 0);
		hook[1] = cl->ops->idle_hook(cl, 1);
	}
	for (i = 0; i < cl->n && !r; i++) {
		msg_init(&req);
		msg_add(&req, "op", "autostop");
		if (minutes >= 0) {
			msg_addf(&req, "idle_minutes", "%.6g", minutes * minute_scale());
			msg_add(&req, "down", down ? "1" : "0");
			if (wait_for && *wait_for)
				msg_add(&req, "wait_for", wait_for);
		} else {
			msg_add(&req, "cancel", "1");
		}
		/* The head's hooks; the others stop themselves (their default). */
		msg_add(&req, "hooks", "1");
		msg_add(&req, "hook_stop", i == 0 && hook[0] ? hook[0] : "");
		msg_add(&req, "hook_down", i == 0 && hook[1] ? hook[1] : "");
		r = cl_call(&cl->nodes[i], &req, &rep, CL_NODE_CALL_MS);
		msg_release(&rep);
		msg_release(&req);
	}
	free(hook[0]);
	free(hook[1]);
	if (!r)
		r = st_cluster_set_autostop(ldb, cl->name, minutes, minutes >= 0 && down, wait_for);
	return r;
}

int eng_autostop(struct st_db *ldb, const char *name, int minutes, int down, const char *wait_for)
{
	struct cluster c;
	struct clive cl;
	int lock_fd, r;

	lock_fd = eng_lock_cluster(name, "skiff autostop");
	if (lock_fd < 0)
		return lock_fd;
	r = eng_open(ldb, name, &c, &cl);
	if (!r) {
		r = eng_set_autostop(ldb, &cl, minutes, down, wait_for);
		cluster_free(&c);
		cl_close(&cl);
	}
	lock_release(lock_fd);
	return r;
}

/* What the head's node says (without starting a supervisor there); *fired is malloc'd. */
static enum as_head ask_head(struct cnode *head, char **fired)
{
	struct msg req, rep;
	enum as_head h = AS_HEAD_UNREACHABLE;
	const char *v;

	*fired = NULL;
	msg_init(&req);
	msg_add(&req, "op", "autostop_state");
	if (!cl_call(head, &req, &rep, LOOK_CALL_MS)) {
		v = msg_get(&rep, "fired");
		*fired = v && *v ? xstrdup(v) : NULL;
		v = msg_get(&rep, "running");
		h = v && !strcmp(v, "1") ? AS_HEAD_RUNNING
		    : *fired             ? AS_HEAD_FIRED
		                         : AS_HEAD_STOPPED;
	}
	msg_release(&rep);
	msg_release(&req);
	return h;
}

int eng_autostop_look_locked(struct st_db *ldb, const char *name)
{
	struct cluster c;
	struct clive cl;
	enum as_verdict v = AS_UP;
	enum as_head head = AS_HEAD_UNREACHABLE;
	char *fired = NULL;
	int hook, r = 0;

	if (st_cluster_get(ldb, name, &c))
		return 0;
	if (c.status != CLUSTER_UP || c.autostop_minutes < 0 || !c.num_nodes) {
		cluster_free(&c);
		return 0;
	}
	if (eng_open_cluster(ldb, &c, &cl)) {
		cluster_free(&c);
		return 0; /* printed; nothing is decided on what cannot be opened */
	}
	hook = cl.ops->hook_fired ? cl.ops->hook_fired(ldb, &cl) : -1;
	if (hook < 0 && cl.n)
		head = ask_head(&cl.nodes[0], &fired);
	v = autostop_verdict(hook, head, fired, c.autostop_down,
	                     (cl.ops->flags & INFRA_NO_STOP) != 0);
	cl_close(&cl);
	if (v == AS_STOPPED) {
		r = eng_down_locked(ldb, name, ENG_DL_KEEP | ENG_DL_HEAD_STOPPED);
		if (!r)
			info("cluster %s was stopped by autostop (idle %d minute(s)); 'skiff start "
			     "%s' starts it again",
			     name, c.autostop_minutes, name);
	} else if (v == AS_DOWN) {
		r = eng_down_locked(ldb, name, ENG_DL_HEAD_STOPPED);
		if (!r)
			info("cluster %s was torn down by autodown (idle %d minute(s))", name,
			     c.autostop_minutes);
	}
	free(fired);
	cluster_free(&c);
	return r;
}

int eng_autostop_look(struct st_db *ldb, const char *name)
{
	int lock_fd = eng_trylock_cluster(name, "skiff status");
	int r;

	/* Held: a command is using the cluster right now, so it is not idle. */
	if (lock_fd < 0)
		return lock_fd == -EBUSY ? 0 : lock_fd;
	r = eng_autostop_look_locked(ldb, name);
	lock_release(lock_fd);
	return r;
}
