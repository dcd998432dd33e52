/* Resource alternatives against nodes: see resources.h. */
#include "bootstrap/launch/resources.h"

#include <math.h>
#include <stdio.h>

#include "lib/buf.h"
#include "lib/util.h"
#include "lib/banned.h"

/* Capacities are measured (GiB of memory as a fraction): a hair's breadth is a fit. */
#define FIT_EPS 1e-9

struct eng_res eng_job_ask(const struct task_resources *res, double default_cpus)
{
	struct eng_res a = {default_cpus, 0, 0};

	if (res && res->cpus.text)
		a.cpus = res->cpus.value;
	if (res && res->memory.text)
		a.memory = res->memory.mode == TASK_PER_CPU ? res->memory.value * a.cpus
		                                            : res->memory.value;
	if (res && res->accel.name)
		a.gpus = (int)ceil(res->accel.count);
	return a;
}

int eng_res_misfit(const struct eng_res *ask, const struct eng_res *nodes, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ask->cpus > nodes[i].cpus + FIT_EPS ||
		    ask->memory > nodes[i].memory + FIT_EPS || ask->gpus > nodes[i].gpus)
			return (int)i;
	return -1;
}

void eng_resources_text(const struct task_resources *r, int nodes, char *out, size_t size)
{
	struct buf b = BUF_INIT(0);

	buf_addf(&b, "%dx[", nodes);
	buf_addf(&b, "cpus=%s", r && r->cpus.text ? r->cpus.text : "0.5");
	if (r && r->memory.text)
		buf_addf(&b, ", mem=%s", r->memory.text);
	if (r && r->accel.name)
		buf_addf(&b, ", %s:%g", r->accel.name, r->accel.count);
	buf_addch(&b, ']');
	xsnprintf(out, size, "%.*s", (int)(size - 1), b.p);
	buf_release(&b);
}
