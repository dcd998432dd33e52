/* The supervisor's decisions about a job whose shim is found gone or alive, and its fds. */
#include <string.h>

#include "state/node.h"
#include "supervisor/policy.h"
#include "tests/unit/harness.h"

/* The fate every combination must have, written out independently of job_fate(). */
static enum job_fate expected(const struct job_facts *f)
{
	int gone = f->shim_alive == 0;

	if (f->status >= JOB_FAILED_DRIVER || !f->dispatched)
		return FATE_KEEP;
	if (f->status == JOB_PENDING) {
		if (!f->same_boot || gone)
			return f->cancel_requested ? FATE_CANCEL : FATE_REQUEUE;
		return FATE_ADOPT;
	}
	if (!f->same_boot)
		return FATE_FAIL_REBOOTED;
	if (!gone)
		return FATE_ADOPT;
	return f->cancel_requested ? FATE_CANCEL : FATE_FAIL_DRIVER;
}

static void test_every_combination(void)
{
	static const int alive[] = {1, 0, -24 /* -EMFILE */};
	int status, d, b, a, c, n = 0, bad = 0;

	for (status = 0; status < JOB_N_STATUS; status++)
		for (d = 0; d < 2; d++)
			for (b = 0; b < 2; b++)
				for (a = 0; a < 3; a++)
					for (c = 0; c < 2; c++) {
						struct job_facts f = {status, d, b, alive[a], c};

						n++;
						if (job_fate(&f) != expected(&f)) {
							bad++;
							ok(0,
							   "status %d dispatched %d boot %d alive %d "
							   "cancel %d: fate %d, want %d",
							   status, d, b, alive[a], c, job_fate(&f),
							   expected(&f));
						}
					}
	ok(!bad, "all %d combinations of status, dispatch, boot, liveness and cancel", n);
}

static void test_the_cases_that_matter(void)
{
	struct job_facts f = {JOB_PENDING, 1, 1, 0, 0};

	is_int(job_fate(&f), FATE_REQUEUE,
	       "a dispatched PENDING job whose shim is gone runs again");
	f.shim_alive = -24;
	is_int(job_fate(&f), FATE_ADOPT, "... but one whose shim cannot be told dead is watched");
	f = (struct job_facts){JOB_RUNNING, 1, 1, -24, 0};
	is_int(job_fate(&f), FATE_ADOPT, "a RUNNING job whose shim cannot be told dead: adopted");
	f.shim_alive = 0;
	is_int(job_fate(&f), FATE_FAIL_DRIVER, "a RUNNING job whose shim is gone: FAILED_DRIVER");
	f.cancel_requested = 1;
	is_int(job_fate(&f), FATE_CANCEL, "... unless its cancel was asked for");
	f = (struct job_facts){JOB_PENDING, 1, 0, 1, 0};
	is_int(job_fate(&f), FATE_REQUEUE, "dispatched before a reboot and never started: again");
	f = (struct job_facts){JOB_SETTING_UP, 1, 0, 1, 0};
	is_int(job_fate(&f), FATE_FAIL_REBOOTED, "setting up before a reboot: FAILED_DRIVER");
	f = (struct job_facts){JOB_PENDING, 0, 1, 0, 0};
	is_int(job_fate(&f), FATE_KEEP, "never dispatched: the scheduler's");
	f = (struct job_facts){JOB_SUCCEEDED, 1, 1, 0, 0};
	is_int(job_fate(&f), FATE_KEEP, "a final status stands");
}

static void test_fd_budget(void)
{
	static const uint64_t limits[] = {
	        0, 1, 16, 32, 33, 40, 128, 256, 1024, 4096, 65536, 1048576, (uint64_t)1 << 40};
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct fd_budget b;
		uint64_t n = limits[i];

		fd_budget(n, &b);
		ok(b.conns >= 1 && b.pidfds >= 1 && b.dispatch >= 1,
		   "limit %llu: at least one each", (unsigned long long)n);
		ok(b.conns <= MAX_CONNS, "limit %llu: at most MAX_CONNS connections",
		   (unsigned long long)n);
		if (n >= FD_RESERVE + 8)
			ok(FD_RESERVE + b.conns + b.pidfds + b.dispatch <= n,
			   "limit %llu: the reserve and the three shares fit",
			   (unsigned long long)n);
	}
	{
		struct fd_budget b;

		fd_budget(128, &b);
		is_int(b.conns, 48, "128 fds: 48 connections");
		is_int(b.pidfds, 24, "128 fds: 24 pidfds (the other adopted shims are polled)");
		is_int(b.dispatch, 24, "128 fds: a dispatch round of at most 24 shims");
	}
}

static void test_down_steps(void)
{
	int64_t g = down_grace_ms(10);

	is_int((int)g, 10000 + DOWN_SLACK_MS, "a 10 s cancel grace: 10 s and the slack");
	is_int((int)down_grace_ms(0), DOWN_SLACK_MS, "no grace: the slack alone");
	is_int((int)down_grace_ms(-1), DOWN_SLACK_MS, "a negative grace: the slack alone");
	is_int((int)down_grace_ms(1e9), DOWN_GRACE_MAX_MS, "a huge grace: the cap");
	is_int((int)down_grace_ms(0.0 / 0.0), DOWN_GRACE_MAX_MS, "NaN: the cap");
	is_int(down_step(0, g, 0), DOWN_DONE, "nothing left at once: done");
	is_int(down_step(999999, g, 0), DOWN_DONE, "nothing left late: done");
	is_int(down_step(0, g, 3), DOWN_WAIT, "at first the shims end their jobs");
	is_int(down_step(g - 1, g, 1), DOWN_WAIT, "up to the grace: wait");
	is_int(down_step(g, g, 1), DOWN_TERM, "at the grace: SIGTERM");
	is_int(down_step(g + DOWN_TERM_MS - 1, g, 1), DOWN_TERM, "then still SIGTERM");
	is_int(down_step(g + DOWN_TERM_MS, g, 1), DOWN_KILL, "then SIGKILL");
	is_int(down_step(g + DOWN_TERM_MS + DOWN_KILL_MS - 1, g, 1), DOWN_KILL, "still SIGKILL");
	is_int(down_step(g + DOWN_TERM_MS + DOWN_KILL_MS, g, 1), DOWN_GIVE_UP,
	       "what survives SIGKILL is reported");
	is_int(down_step(INT64_MAX / 2, g, 1), DOWN_GIVE_UP, "never waited for longer");
}

int main(void)
{
	plan_run(test_every_combination);
	plan_run(test_the_cases_that_matter);
	plan_run(test_fd_budget);
	plan_run(test_down_steps);
	return done_testing();
}
