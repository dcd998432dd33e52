#include "supervisor/policy.h"

#include <math.h>

#include "state/node.h"
#include "lib/banned.h"

enum job_fate job_fate(const struct job_facts *f)
{
	if (job_status_terminal(f->status) || !f->dispatched)
		return FATE_KEEP;
	if (f->status == JOB_PENDING) {
		/* Nothing of the job ran: only its shim's own life is at stake. */
		if (f->same_boot && f->shim_alive != 0)
			return FATE_ADOPT;
		if (f->cancel_requested)
			return FATE_CANCEL;
		return f->failed_starts >= JOB_MAX_FAILED_STARTS ? FATE_FAIL_DRIVER : FATE_REQUEUE;
	}
	if (!f->same_boot)
		return FATE_FAIL_REBOOTED;
	if (f->shim_alive != 0)
		return FATE_ADOPT;
	/* A cancel that killed the shim before it could block signals: what the user asked. */
	return f->cancel_requested ? FATE_CANCEL : FATE_FAIL_DRIVER;
}

static size_t at_least_one(size_t n)
{
	return n ? n : 1;
}

void fd_budget(uint64_t nofile, struct fd_budget *b)
{
	uint64_t avail = nofile > FD_RESERVE ? nofile - FD_RESERVE : 0;

	b->conns = at_least_one((size_t)(avail / 2 < MAX_CONNS ? avail / 2 : MAX_CONNS));
	b->pidfds = at_least_one((size_t)(avail / 4));
	b->dispatch = at_least_one((size_t)(avail / 4));
}

int64_t down_grace_ms(double cancel_grace_s)
{
	double ms;

	/* NaN and anything past the cap alike: the cap. */
	if (isnan(cancel_grace_s))
		return DOWN_GRACE_MAX_MS;
	ms = cancel_grace_s > 0 ? cancel_grace_s * 1000 : 0;
	if (!(ms < DOWN_GRACE_MAX_MS - DOWN_SLACK_MS))
		return DOWN_GRACE_MAX_MS;
	return (int64_t)ms + DOWN_SLACK_MS;
}

enum down_step down_step(int64_t elapsed_ms, int64_t grace_ms, int left)
{
	if (left <= 0)
		return DOWN_DONE;
	if (elapsed_ms < grace_ms)
		return DOWN_WAIT;
	if (elapsed_ms < grace_ms + DOWN_TERM_MS)
		return DOWN_TERM;
	if (elapsed_ms < grace_ms + DOWN_TERM_MS + DOWN_KILL_MS)
		return DOWN_KILL;
	return DOWN_GIVE_UP;
}
