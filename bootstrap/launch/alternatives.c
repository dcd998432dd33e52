/*
 * The launch's resource alternatives (a task's `any_of`/`ordered` list, or its one set of
 * resources): which one, on which infra, whether a cluster's nodes fit it, why each was
 * not taken, and the wait between --retry-until-up attempts. Declared in
 * engine_internal.h; launch.c tries them.
 */
#include "bootstrap/launch/engine_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/launch/cluster.h"
#include "bootstrap/launch/resources.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

/* --retry-until-up waits this long after the first failed attempt, doubling up to the max. */
#define RETRY_UP_FIRST_S 5
#define RETRY_UP_MAX_S 60

int eng_retry_wait_s(int attempt)
{
	int s = RETRY_UP_FIRST_S;

	while (--attempt > 0 && s < RETRY_UP_MAX_S)
		s *= 2;
	return s < RETRY_UP_MAX_S ? s : RETRY_UP_MAX_S;
}

/*
 * Why each alternative was not taken, for the summary when none is: one buf each (a node's
 * name or an infra string is the user's, of any length).
 */
struct buf *eng_whys_new(size_t n)
{
	struct buf *why = xcalloc(n, sizeof(*why));
	size_t k;

	for (k = 0; k < n; k++)
		buf_init(&why[k], 0);
	return why;
}

void eng_whys_free(struct buf *why, size_t n)
{
	size_t k;

	for (k = 0; why && k < n; k++)
		buf_release(&why[k]);
	free(why);
}

/* The last error printed, as why. */
void eng_why_last_error(struct buf *why)
{
	char m[512];

	log_last_error(m, sizeof(m));
	buf_reset(why);
	buf_adds(why, m);
}

const struct task_resources *eng_alternative(const struct task *t, size_t k)
{
	return t->nres ? &t->res[k] : NULL;
}

size_t eng_n_alternatives(const struct task *t)
{
	return t->nres ? t->nres : 1;
}

/* The infra alternative res launches on: --infra over what it names, else local. */
const char *eng_alternative_infra(const struct eng_launch *req, const struct task_resources *res)
{
	return req->infra ? req->infra : res && res->infra ? res->infra : INFRA_DEFAULT;
}

/* Each of the first n nodes' capacity, from its supervisor; -errno (printed) otherwise. */
static int node_capacities(struct clive *cl, size_t n, struct eng_res *caps)
{
	struct msg req, rep;
	size_t i;
	int r = 0;

	msg_init(&req);
	msg_add(&req, "op", "status");
	for (i = 0; i < n && !r; i++) {
		r = cl_call(&cl->nodes[i], &req, &rep, CL_NODE_CALL_MS);
		if (!r && (msg_get_double(&rep, "cpus", &caps[i].cpus) ||
		           msg_get_double(&rep, "memory", &caps[i].memory)))
			r = error("node %s: its supervisor did not say its capacity",
			          cl->nodes[i].name);
		if (!r) {
			int64_t g = 0;

			msg_get_int(&rep, "gpus", &g);
			caps[i].gpus = (int)g;
		}
		msg_release(&rep);
	}
	msg_release(&req);
	return r;
}

/* 0 when alternative res fits the ranks' nodes, else -ENOSPC with *why said. */
int eng_check_fit(struct clive *cl, const struct eng_launch *req, const struct task_resources *res,
                  struct buf *why)
{
	const struct task *t = req->task;
	size_t n = t->num_nodes > 0 ? (size_t)t->num_nodes : 1;
	struct eng_res *caps, ask = eng_job_ask(res, req->no_default_cpus ? 0 : ENG_DEFAULT_CPUS);
	int bad, r;

	if (n > cl->n) {
		buf_addf(why, "the task wants %zu nodes, the cluster has %zu", n, cl->n);
		return -ENOSPC;
	}
	caps = xcalloc(n, sizeof(*caps));
	r = node_capacities(cl, n, caps);
	if (r) {
		eng_why_last_error(why);
	} else if ((bad = eng_res_misfit(&ask, caps, n)) >= 0) {
		buf_addf(why,
		         "it asks each node for %g CPUs, %g GiB and %d GPUs, but node %s has %g "
		         "CPUs, %.1f GiB and %d GPUs",
		         ask.cpus, ask.memory, ask.gpus, cl->nodes[bad].name, caps[bad].cpus,
		         caps[bad].memory, caps[bad].gpus);
		r = -ENOSPC;
	}
	free(caps);
	return r;
}

/* The one error when no alternative could be taken: each, and why. */
int eng_none_taken(const struct eng_launch *req, const struct buf *why)
{
	const struct task *t = req->task;
	struct buf b = BUF_INIT(0);
	char text[128];
	size_t k;

	if (eng_n_alternatives(t) == 1) {
		eng_resources_text(eng_alternative(t, 0), t->num_nodes > 0 ? (int)t->num_nodes : 1,
		                   text, sizeof(text));
		return error("the task's resources (%s on %s) cannot run: %s", text,
		             eng_alternative_infra(req, eng_alternative(t, 0)), why[0].p),
		       -ENOSPC;
	}
	buf_addf(&b,
	         "none of the task's %zu resource alternatives can run:", eng_n_alternatives(t));
	for (k = 0; k < eng_n_alternatives(t); k++) {
		eng_resources_text(eng_alternative(t, k), t->num_nodes > 0 ? (int)t->num_nodes : 1,
		                   text, sizeof(text));
		buf_addf(&b, "\n  %zu. %s on %s: %s", k + 1, text,
		         eng_alternative_infra(req, eng_alternative(t, k)),
		         why[k].len ? why[k].p : "refused");
	}
	error("%s", b.p);
	buf_release(&b);
	return -ENOSPC;
}
