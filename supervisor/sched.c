#include "supervisor/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/banned.h"

/* Slack for fractional CPU sums (0.1 + 0.2 must fit in 0.3). */
#define EPS 1e-9

static int cmp_job(const void *a, const void *b)
{
	const struct sched_job *x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void sched_sort(struct sched_job *jobs, size_t n)
{
	qsort(jobs, n, sizeof(*jobs), cmp_job);
}

int sched_fits(const struct sched_res *cap, const struct sched_res *req)
{
	return req->cpus <= cap->cpus + EPS && req->memory <= cap->memory + EPS &&
	       req->gpus <= cap->gpus;
}

size_t sched_pick(struct sched_res *free, struct sched_job *jobs, size_t n, int max_bypass)
{
	size_t i, k, started = 0;
	size_t first_waiting = n;

	for (i = 0; i < n; i++) {
		jobs[i].start = 0;
		jobs[i].bypass_add = 0;
	}
	for (i = 0; i < n; i++) {
		struct sched_job *j = &jobs[i];

		if (!sched_fits(free, &j->req)) {
			if (first_waiting == n)
				first_waiting = i;
			/* A starving job blocks everything behind it. */
			if (j->bypassed + j->bypass_add >= max_bypass)
				break;
			continue;
		}
		/* Starting j bypasses every job ahead of it that waits; may one more do so? */
		for (k = first_waiting; k < i; k++)
			if (!jobs[k].start && jobs[k].bypassed + jobs[k].bypass_add >= max_bypass)
				break;
		if (k < i)
			break;
		for (k = first_waiting; k < i; k++)
			if (!jobs[k].start)
				jobs[k].bypass_add++;
		j->start = 1;
		free->cpus -= j->req.cpus;
		free->memory -= j->req.memory;
		free->gpus -= j->req.gpus;
		started++;
	}
	return started;
}

uint64_t sched_take_gpus(uint64_t *free_mask, int n)
{
	uint64_t got = 0;
	int i;

	if (n <= 0)
		return 0;
	for (i = 0; i < SCHED_MAX_GPUS && n; i++) {
		if (*free_mask & ((uint64_t)1 << i)) {
			got |= (uint64_t)1 << i;
			n--;
		}
	}
	if (n)
		return 0;
	*free_mask &= ~got;
	return got;
}

void sched_gpu_list(uint64_t mask, char *out, size_t size)
{
	size_t len = 0;
	int i;

	if (size)
		out[0] = '\0';
	for (i = 0; i < SCHED_MAX_GPUS; i++) {
		int w;

		if (!(mask & ((uint64_t)1 << i)))
			continue;
		w = snprintf(out + len, size - len, "%s%d", len ? "," : "", i);
		if (w < 0 || (size_t)w >= size - len)
			return;
		len += (size_t)w;
	}
}

uint64_t sched_gpu_parse(const char *s)
{
	uint64_t mask = 0;

	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || v >= SCHED_MAX_GPUS)
			return 0;
		mask |= (uint64_t)1 << v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return 0;
	}
	return mask;
}
