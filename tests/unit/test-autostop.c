/* What the launcher makes of an autostop that may have fired, over every combination. */
#include <stddef.h>
#include <string.h>

#include "bootstrap/launch/autostop.h"
#include "tests/unit/harness.h"

static const char *const verdicts[] = {"UP", "STOPPED", "DOWN", "UNKNOWN"};
static const char *const heads[] = {"running", "fired", "stopped", "unreachable"};

/* The rule written out again, as a table, independently of autostop_verdict(). */
static enum as_verdict expected(int hook, enum as_head head, const char *fired, int set_down,
                                int no_stop)
{
	int down;

	if (hook > 0)
		down = set_down; /* the infra saw it: the launcher's own setting says which */
	else if (hook == 0)
		return AS_UP;
	else if (head == AS_HEAD_UNREACHABLE)
		return AS_UNKNOWN;
	else if (head == AS_HEAD_RUNNING || head == AS_HEAD_STOPPED)
		return AS_UP;
	else if (fired && strcmp(fired, "down") == 0)
		down = 1;
	else if (fired && strcmp(fired, "stop") == 0)
		down = 0;
	else
		down = set_down;
	if (no_stop)
		return AS_DOWN;
	return down ? AS_DOWN : AS_STOPPED;
}

static void test_every_combination(void)
{
	static const int hooks[] = {-1, 0, 1};
	static const char *const fireds[] = {NULL, "", "stop", "down", "bogus"};
	size_t h, f;
	int head, d, ns;

	for (h = 0; h < sizeof(hooks) / sizeof(hooks[0]); h++)
		for (head = AS_HEAD_RUNNING; head <= AS_HEAD_UNREACHABLE; head++)
			for (f = 0; f < sizeof(fireds) / sizeof(fireds[0]); f++)
				for (d = 0; d < 2; d++)
					for (ns = 0; ns < 2; ns++) {
						enum as_verdict got = autostop_verdict(
						        hooks[h], head, fireds[f], d, ns);
						enum as_verdict want =
						        expected(hooks[h], head, fireds[f], d, ns);

						is_str(verdicts[got], verdicts[want],
						       "hook %d, head %s, fired %s, set %s%s",
						       hooks[h], heads[head],
						       fireds[f] ? fireds[f] : "(none)",
						       d ? "down" : "stop", ns ? ", no stop" : "");
					}
}

/* The cases a reader checks first, by name. */
static void test_named_cases(void)
{
	ok(autostop_verdict(-1, AS_HEAD_FIRED, "stop", 0, 0) == AS_STOPPED,
	   "ssh head stopped itself: STOPPED");
	ok(autostop_verdict(-1, AS_HEAD_FIRED, "down", 0, 0) == AS_DOWN,
	   "the head says down, the launcher's record says stop: the head wins");
	ok(autostop_verdict(-1, AS_HEAD_UNREACHABLE, NULL, 1, 0) == AS_UNKNOWN,
	   "an unreachable head is never torn down on a guess");
	ok(autostop_verdict(-1, AS_HEAD_STOPPED, NULL, 1, 0) == AS_UP,
	   "a supervisor stopped by hand is not autostop");
	ok(autostop_verdict(-1, AS_HEAD_RUNNING, "down", 1, 0) == AS_UP,
	   "fired, but a supervisor serves again: UP");
	ok(autostop_verdict(1, AS_HEAD_UNREACHABLE, NULL, 0, 0) == AS_STOPPED,
	   "container exited: STOPPED");
	ok(autostop_verdict(1, AS_HEAD_UNREACHABLE, NULL, 0, 1) == AS_DOWN,
	   "allocation released: a stop is a down on slurm");
	ok(autostop_verdict(0, AS_HEAD_FIRED, "down", 1, 0) == AS_UP,
	   "the infra says it runs: UP, whatever the node db says");
}

int main(void)
{
	plan_run(test_every_combination);
	plan_run(test_named_cases);
	return done_testing();
}
