/* The launcher daemons' decisions (supervisor/jobs/policy.h), over every combination. */
#include "supervisor/jobs/policy.h"

#include <stdlib.h>

#include <math.h>
#include <string.h>

#include "lib/exit.h"
#include "lib/util.h"
#include "state/jobs.h"
#include "state/node.h"
#include "supervisor/jobs/jobs.h"
#include "tests/unit/harness.h"

static void test_gang(void)
{
	ok(gang_end_stops_others("FAILED"), "a failed rank stops the others");
	ok(gang_end_stops_others("FAILED_SETUP"), "so does a failed setup");
	ok(gang_end_stops_others(""), "and a lost node (no status)");
	ok(gang_end_stops_others(NULL), "or none at all");
	ok(!gang_end_stops_others("SUCCEEDED"), "a rank that succeeded does not");
	ok(!gang_end_stops_others("CANCELLED"), "nor one that was cancelled");
	is_int(gang_retry_delay_ms(0), 5000, "first retry after 5 s");
	is_int(gang_retry_delay_ms(1), 10000, "then 10 s");
	is_int(gang_retry_delay_ms(2), 20000, "then 20 s");
	is_int(gang_retry_delay_ms(3), 30000, "then at most 30 s");
	is_int(gang_retry_delay_ms(1000), 30000, "however many tries");
}

/* Every case of a rank whose node stopped answering, against what the watcher must do. */
static void test_gang_away(void)
{
	const int64_t t0 = 1000000, L = GANG_LOST_MS;
	int64_t at;
	int tries, fails = 0;

	is_int(gang_away_decide(t0, t0, 0, 0, 0, L, &at), GANG_AWAY_RETRY,
	       "a watch that ends without a status: watched again, not lost");
	is_int(at, t0 + GANG_REWATCH_FIRST_MS, "after 1 s");
	gang_away_decide(t0, t0 + 1000, 1, 0, 0, L, &at);
	is_int(at, t0 + 1000 + 2000, "then 2 s");
	gang_away_decide(t0, t0 + 3000, 2, 0, 0, L, &at);
	is_int(at, t0 + 3000 + 4000, "then 4 s");
	gang_away_decide(t0, t0 + 7000, 3, 0, 0, L, &at);
	is_int(at, t0 + 7000 + GANG_REWATCH_MAX_MS, "then every 5 s");
	gang_away_decide(t0, t0 + 12000, 1000, 0, 0, L, &at);
	is_int(at, t0 + 12000 + GANG_REWATCH_MAX_MS, "however many tries");
	gang_away_decide(t0, t0 + L - 100, 9, 0, 0, L, &at);
	is_int(at, t0 + L, "never past the bound");
	is_int(gang_away_decide(t0, t0 + L - 1, 9, 0, 0, L, &at), GANG_AWAY_RETRY,
	       "1 ms before the bound: still watched");
	is_int(gang_away_decide(t0, t0 + L, 9, 0, 0, L, &at), GANG_AWAY_LOST, "at the bound: lost");
	is_int(at, -1, "no time to watch it again");
	is_int(gang_away_decide(t0, t0 + 10 * L, 9, 0, 0, L, &at), GANG_AWAY_LOST, "and after it");
	is_int(gang_away_decide(t0, t0, 0, 1, 0, L, &at), GANG_AWAY_LOST,
	       "a node its transport says is gone: lost at once");
	is_int(gang_away_decide(t0, t0, 0, 0, 1, L, &at), GANG_AWAY_LOST,
	       "a gang being stopped: not watched again (stopped once back)");
	is_int(gang_lost_at(t0, L), t0 + L, "lost at away + bound");
	is_int(gang_lost_at(INT64_MAX - 5, L), INT64_MAX, "no overflow");
	/* Exhaustively over the first minute: a retry is always in the future and in bound. */
	for (int64_t now = t0; now < t0 + 2 * L; now += 250)
		for (tries = 0; tries < 12; tries++) {
			enum gang_away d = gang_away_decide(t0, now, tries, 0, 0, L, &at);

			if (d == GANG_AWAY_RETRY ? !(at > now && at <= t0 + L) : now < t0 + L)
				fails++;
		}
	ok(!fails, "every retry is after now and by the bound; lost only from the bound");
	is_int(gang_lost_ms(NULL), GANG_LOST_MS, "SKIFF_GANG_LOST_MS unset: 30 s");
	is_int(gang_lost_ms("5000"), 5000, "set: its value");
	is_int(gang_lost_ms("999"), -1, "under 1 s: refused");
	is_int(gang_lost_ms("5s"), -1, "not a number: refused");
	is_int(gang_lost_ms(""), -1, "empty: refused");
}

static void test_backoff(void)
{
	ok(jobs_backoff_s(60, 1, 0) == 60, "first retry: the base");
	ok(fabs(jobs_backoff_s(60, 2, 0) - 96) < 1e-9, "then 1.6 times more");
	ok(fabs(jobs_backoff_s(60, 3, 0) - 153.6) < 1e-9, "and again");
	ok(jobs_backoff_s(60, 4, 0) == 245.76 || fabs(jobs_backoff_s(60, 4, 0) - 245.76) < 1e-9,
	   "and again");
	ok(jobs_backoff_s(60, 5, 0) == 300, "capped at 300 s");
	ok(jobs_backoff_s(60, 1000, 0) == 300, "however many attempts");
	ok(jobs_backoff_s(600, 3, 0) == 600, "a base above the cap is kept as it is");
	ok(jobs_backoff_s(0, 3, 0) == 0, "a zero base (tests) stays zero");
	ok(fabs(jobs_backoff_s(100, 1, 1) - 140) < 1e-9, "jitter +1: 40%% more");
	ok(fabs(jobs_backoff_s(100, 1, -1) - 60) < 1e-9, "jitter -1: 40%% less");
	ok(fabs(jobs_backoff_s(100, 1, 9) - 140) < 1e-9, "jitter is clamped");
	is_int(jobs_code_listed("1,137,3", "3,4"), 3, "the first listed code");
	is_int(jobs_code_listed("5", "3,4"), -1, "none listed");
	is_int(jobs_code_listed("", "3"), -1, "no codes");
	is_int(jobs_code_listed("3", ""), -1, "an empty list");
	is_int(jobs_code_listed("x", "3"), -1, "garbage is no code");
	is_int(jobs_code_listed(NULL, NULL), -1, "nothing at all");
}

static void test_launch_decide(void)
{
	static const int codes[] = {-1,           EXIT_OK,          EXIT_FAIL, EXIT_USAGE,
	                            EXIT_INVALID, EXIT_UNAVAILABLE, 100};
	struct mjob j;
	int launching, cancel, attempts, c, want;

	memset(&j, 0, sizeof(j));
	for (launching = 0; launching < 2; launching++)
		for (cancel = 0; cancel < 2; cancel++)
			for (attempts = 0; attempts < 4; attempts++)
				for (c = 0; c < (int)(sizeof(codes) / sizeof(codes[0])); c++) {
					j.cancel_requested = cancel;
					j.attempts = attempts;
					want = !launching ? JL_NONE
					       : cancel   ? JL_CANCEL
					       : codes[c] == EXIT_INVALID || codes[c] == EXIT_USAGE
					               ? JL_FAIL_PRECHECKS
					       : codes[c] == EXIT_UNAVAILABLE ? JL_OFFLINE
					       : attempts + 1 >= 3            ? JL_FAIL_NO_RESOURCE
					                                      : JL_BACKOFF;
					is_int(jobs_launch_decide(&j, launching, codes[c], 3), want,
					       "launching %d cancel %d attempts %d code %d",
					       launching, cancel, attempts, codes[c]);
				}
}

/* The rule written out again, independently of jobs_probe_decide(). */
static struct jobs_probe_decision probe_expected(const struct mjob *j, int probe_max, long lost_ms,
                                                 double now)
{
	struct jobs_probe_decision d = {JP_NONE, -1, -1, 0};
	int st = j->node_status, last = j->task_index + 1 >= j->ntasks;
	int listed = -1;

	if (j->status == MJ_CANCELLING)
		return d;
	if (st == JOB_FAILED)
		d.status = MJ_FAILED;
	if (st == JOB_FAILED_SETUP)
		d.status = MJ_FAILED_SETUP;
	if (j->cancel_requested) {
		d.before_cancel = 1;
		if (st == JOB_SUCCEEDED && last)
			d.act = JP_SUCCEED;
		if (st == JOB_FAILED || st == JOB_FAILED_SETUP)
			d.act = JP_FAIL;
		return d;
	}
	if (strstr(j->exit_codes, "3") && strstr(j->recover_codes, "3"))
		listed = 3;
	if (st == JOB_SUCCEEDED)
		d.act = last ? JP_SUCCEED : JP_NEXT_TASK;
	else if (st == JOB_FAILED || st == JOB_FAILED_SETUP) {
		d.code = listed;
		d.act = listed >= 0                     ? JP_RECOVER
		        : j->restarts < j->max_restarts ? JP_RESTART
		                                        : JP_FAIL;
	} else if (st == JOB_CANCELLED)
		d.act = JP_CANCELLED;
	else if (st == JOB_FAILED_DRIVER)
		d.act = JP_RECOVER;
	else if (*j->probe_error && j->probe_gone)
		d.act = JP_RECOVER; /* a node gone: lost at its first look */
	else if (*j->probe_error && j->probe_failures >= probe_max &&
	         j->probe_since + (double)lost_ms / 1000 <= now)
		d.act = JP_RECOVER;
	return d;
}

/* The links' states, "name=state,name=state". */
static const char *link_state(const char *iface, void *arg)
{
	static char st[32];
	const char *p = strstr(arg, iface);
	size_t n = strlen(iface);

	if (!p || p[n] != '=')
		return NULL;
	p += n + 1;
	n = strcspn(p, ",");
	memcpy(st, p, n);
	st[n] = '\0';
	return st;
}

static void test_cut_off(void)
{
	static const char head[] = "Iface\tDestination\tGateway \tFlags\n";
	static const struct {
		const char *routes, *states;
		int want;
	} cases[] = {
	        {"", "", 0}, /* no routes: nothing known */
	        {"lo\t0000007F\n", "lo=down", 0},
	        {"eth0\t00000000\t0100C80A\neth0\t0000C80A\n", "eth0=up", 0},
	        {"eth0\t0000C80A\n", "eth0=lowerlayerdown", 1}, /* a veth whose peer is down */
	        {"eth0\t0000C80A\n", "eth0=down", 1},
	        {"eth0\t0000C80A\n", "eth0=dormant", 1},
	        {"tun0\t00000000\n", "tun0=unknown", 0},
	        {"eth0\t0000C80A\neth1\t0000A8C0\n", "eth0=down,eth1=up", 0},
	        {"eth0\t0000C80A\neth1\t0000A8C0\n", "eth0=down,eth1=down", 1},
	        {"eth0\t0000C80A\n", "", 0},        /* a state that cannot be read: assume up */
	        {"eth0\t0000C80A", "eth0=down", 1}, /* no final newline */
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char routes[256];

		snprintf(routes, sizeof(routes), "%s%s", head, cases[i].routes);
		is_int(jobs_host_cut_off(routes, link_state, (void *)cases[i].states),
		       cases[i].want, "routes via %s: cut off %d", cases[i].states, cases[i].want);
	}
	is_int(jobs_host_cut_off("", link_state, ""), 0, "an empty table");
}

static void test_probe_decide(void)
{
	static const char *const codes[] = {"", "1", "1,3"};
	static const char *const recover[] = {"", "3"};
	static const char *const perr[] = {"", "node gone"};
	/* Failing since: just now, a moment before the bound, the bound. */
	static const double since[] = {0, 29.999, 30};
	const double now = 1e9;
	/* Every combination, one mixed-radix counter: digit i counts to radix[i]. */
	static const int radix[] = {JOB_N_STATUS + 1, 2, 2, 2, 3, 2, 3, 2, 4, 2, 3};
	struct mjob j;
	int v[11], n = 0, bad = 0, i, k, total = 1;

	memset(&j, 0, sizeof(j));
	for (i = 0; i < 11; i++)
		total *= radix[i];
	for (k = 0; k < total; k++) {
		struct jobs_probe_decision got, want;
		int rest = k;

		for (i = 0; i < 11; i++) {
			v[i] = rest % radix[i];
			rest /= radix[i];
		}
		j.node_status = v[0] - 1; /* -1: unknown */
		j.status = v[1] ? MJ_CANCELLING : MJ_RUNNING;
		j.cancel_requested = v[2];
		j.ntasks = 2;
		j.task_index = v[3];
		j.exit_codes = (char *)codes[v[4]];
		j.recover_codes = (char *)recover[v[5]];
		j.restarts = v[6];
		j.max_restarts = 1;
		j.probe_error = (char *)perr[v[7]];
		j.probe_failures = v[8];
		j.probe_gone = v[9];
		j.probe_since = now - since[v[10]];
		got = jobs_probe_decide(&j, 3, JOBS_LOST_MS, now);
		want = probe_expected(&j, 3, JOBS_LOST_MS, now);
		n++;
		if (got.act == want.act && got.status == want.status && got.code == want.code &&
		    got.before_cancel == want.before_cancel)
			continue;
		bad++;
		ok(0,
		   "node status %d, %s, cancel %d, task %d of 2, codes '%s', recover '%s', restarts "
		   "%d of 1, probe '%s' x%d gone %d for %.3f s: got %d/%d/%d/%d, want %d/%d/%d/%d",
		   j.node_status, v[1] ? "CANCELLING" : "RUNNING", j.cancel_requested,
		   j.task_index + 1, j.exit_codes, j.recover_codes, j.restarts, j.probe_error,
		   j.probe_failures, j.probe_gone, since[v[10]], got.act, got.status, got.code,
		   got.before_cancel, want.act, want.status, want.code, want.before_cancel);
	}
	ok(!bad, "%d combinations of a probe decided as the rule says", n);
	/* The cases a reader checks first, by name. */
	j.status = MJ_RUNNING;
	j.cancel_requested = 0;
	j.ntasks = 1;
	j.task_index = 0;
	j.exit_codes = "137";
	j.recover_codes = "137";
	j.restarts = 0;
	j.max_restarts = 0;
	j.probe_error = "";
	j.probe_failures = 0;
	j.probe_gone = 0;
	j.node_status = JOB_FAILED;
	ok(jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).act == JP_RECOVER &&
	           jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).code == 137,
	   "a listed exit code recovers, restarts untouched");
	j.recover_codes = "";
	ok(jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).act == JP_FAIL &&
	           jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).status == MJ_FAILED,
	   "an unlisted failure with no restarts left fails");
	j.max_restarts = 2;
	ok(jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).act == JP_RESTART,
	   "with restarts left it restarts");
	j.node_status = JOB_RUNNING;
	j.probe_error = "unreachable";
	j.probe_failures = 2;
	j.probe_since = 1e9 - 60;
	ok(jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).act == JP_NONE, "two failed looks: wait");
	j.probe_failures = 3;
	ok(jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).act == JP_RECOVER,
	   "the third, the first a minute ago: the node is lost");
	j.probe_since = 1e9 - 5;
	ok(jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).act == JP_NONE,
	   "the third within 5 s (an API server restarting): wait for 30 s");
	ok(jobs_probe_decide(&j, 3, 0, 1e9).act == JP_RECOVER, "unless no time is asked for");
	j.probe_failures = 1;
	j.probe_since = 1e9;
	j.probe_gone = 1;
	ok(jobs_probe_decide(&j, 3, JOBS_LOST_MS, 1e9).act == JP_RECOVER,
	   "a node its transport says is gone: lost at the first look");
}

/* n codes: code (or, with every > 0, rank % every) per rank, comma-separated. */
static char *codes_list(int n, int code, int every)
{
	struct buf b = BUF_INIT(0);
	int i;

	for (i = 0; i < n; i++)
		buf_addf(&b, "%s%d", i ? "," : "", every > 0 ? i % every : code);
	return buf_detach(&b, NULL);
}

static void test_codes_summary(void)
{
	struct buf b = BUF_INIT(0);
	char *s;

	jobs_codes_summary(&b, "", 256);
	is_str(b.p, "-", "no codes: -");
	buf_reset(&b);
	jobs_codes_summary(&b, "100,0,100", 256);
	is_str(b.p, "100,0,100", "a list that fits is kept as it is");
	buf_reset(&b);
	s = codes_list(64, 100, 0);
	jobs_codes_summary(&b, s, JOBS_REASON_CODES_MAX);
	is_str(b.p, s, "64 ranks' 3-digit codes are listed");
	free(s);
	buf_reset(&b);
	s = codes_list(121, 100, 0);
	jobs_codes_summary(&b, s, JOBS_REASON_CODES_MAX);
	is_str(b.p, "100 x 121", "121 ranks of one code: counted");
	free(s);
	buf_reset(&b);
	s = codes_list(100000, 100, 0);
	s[strlen(s) - 3] = '1';
	s[strlen(s) - 2] = '\0'; /* the last rank: 1 */
	jobs_codes_summary(&b, s, JOBS_REASON_CODES_MAX);
	is_str(b.p, "100 x 99999, 1 x 1", "the most common first");
	free(s);
	buf_reset(&b);
	s = codes_list(1000, 0, 250);
	jobs_codes_summary(&b, s, JOBS_REASON_CODES_MAX);
	ok(b.len <= JOBS_REASON_CODES_MAX, "250 codes: within the bound (%zu bytes)", b.len);
	ok(starts_with(b.p, "0 x 4, 1 x 4, 2 x 4, "), "counted, lowest code first on a tie: %s",
	   b.p);
	ok(strstr(b.p, " more codes (") && ends_with(b.p, " ranks)"), "the rest said: %s", b.p);
	{
		/* Every code said is whole, and the counts add up to the ranks. */
		const char *p = b.p;
		long total = 0, more = 0, mranks = 0;
		int whole = 1;

		while (*p && strncmp(p, "... ", 4)) {
			long code, n;
			int used = 0;

			if (sscanf(p, "%ld x %ld%n", &code, &n, &used) != 2 || code < 0 ||
			    code >= 250 || n != 4) {
				whole = 0;
				break;
			}
			total += n;
			p += used;
			if (!strncmp(p, ", ", 2))
				p += 2;
		}
		ok(whole, "each item is a whole code and its count");
		whole = sscanf(p, "... %ld more codes (%ld ranks)", &more, &mranks) == 2;
		ok(whole && total + mranks == 1000 && more * 4 == mranks,
		   "the ranks add up: %ld listed, %ld in %ld more codes", total, mranks, more);
	}
	free(s);
	buf_reset(&b);
	s = codes_list(200, 7, 0);
	buf_addf(&b, "%s,x,1", s);
	free(s);
	s = buf_detach(&b, NULL);
	jobs_codes_summary(&b, s, JOBS_REASON_CODES_MAX);
	is_str(b.p, "7 x 200", "what is not a number ends the list");
	free(s);
	buf_release(&b);
}

static void test_task_ids(void)
{
	char *t = jobs_task_id(86400.0 * 365 + 3661.5, "pipe", 7, 1), *l;

	is_str(t, "sky-managed-1971-01-01-01-01-01_pipe_7-1", "a task id: the submit time, UTC");
	free(t);
	t = jobs_task_id(0, "", 3, 0);
	is_str(t, "sky-managed-1970-01-01-00-00-00_job_3-0", "no name: job");
	free(t);
	l = jobs_task_ids(0, "p", 9, 3, 1, NULL);
	is_str(l,
	       "sky-managed-1970-01-01-00-00-00_p_9-0\nsky-managed-1970-01-01-00-00-00_p_9-1\n"
	       "sky-managed-1970-01-01-00-00-00_p_9-2",
	       "SKYPILOT_TASK_IDS: every task's, one per line");
	free(l);
	l = jobs_task_ids(0, "p", 9, 2, 1, "stored-id");
	is_str(l, "sky-managed-1970-01-01-00-00-00_p_9-0\nstored-id",
	       "the current task's id as it was recorded");
	free(l);
	l = jobs_task_ids(0, "p", 9, 1, 0, NULL);
	is_str(l, "sky-managed-1970-01-01-00-00-00_p_9-0", "one task: no newline");
	free(l);
}

static void test_run_ended(void)
{
	struct mjob j;

	memset(&j, 0, sizeof(j));
	j.status = MJ_RUNNING;
	j.cluster_job = 7;
	j.node_status = JOB_RUNNING;
	ok(jobs_run_ended(&j, 0, 2, 3), "a run with a later one has ended (a recovery)");
	ok(!jobs_run_ended(&j, 1, 2, 7), "the one the job runs as now has not");
	j.node_status = JOB_SUCCEEDED;
	ok(jobs_run_ended(&j, 1, 2, 7), "unless its node said it ended (a pipeline's next task)");
	j.node_status = -1;
	ok(!jobs_run_ended(&j, 1, 2, 7), "nothing known: not ended");
	j.cluster_job = 0;
	ok(jobs_run_ended(&j, 1, 2, 7), "the job moved on (it waits for its next launch)");
	j.cluster_job = 7;
	j.status = MJ_SUCCEEDED;
	ok(jobs_run_ended(&j, 1, 2, 7), "an ended job's runs have all ended");
	j.status = MJ_CANCELLING;
	ok(!jobs_run_ended(&j, 1, 2, 7), "CANCELLING has not ended yet");
}

static uint64_t kept_total(const struct jobs_kept *v, size_t n)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < n; i++)
		t += v[i].gc == JOBS_GC_KEEP ? v[i].bytes : 0;
	return t;
}

static void test_kept_gc(void)
{
	struct jobs_kept v[5];
	size_t i, n = ARRAY_SIZE(v), gone;
	int round, bad = 0;

	/* ids 1..5 ended at 100, 300, 200, never (running), 400; 10 bytes each. */
	memset(v, 0, sizeof(v));
	for (i = 0; i < n; i++) {
		v[i].id = (int64_t)i + 1;
		v[i].ended = i != 3;
		v[i].ended_at = i == 0 ? 100 : i == 1 ? 300 : i == 2 ? 200 : i == 3 ? 0 : 400;
		v[i].bytes = 10;
	}
	gone = jobs_kept_gc_decide(v, n, 1000, -1, 0);
	is_int(gone, 0, "no age limit, no cap: nothing goes");
	gone = jobs_kept_gc_decide(v, n, 1000, 750, 0);
	is_int(gone, 2, "retention 750 s at t=1000: the jobs that ended at 100 and 200");
	is_int(v[0].gc, JOBS_GC_AGE, "job 1 by age");
	is_int(v[2].gc, JOBS_GC_AGE, "job 3 by age");
	is_int(v[1].gc, JOBS_GC_KEEP, "job 2 (ended at 300) stays");
	is_int(v[3].gc, JOBS_GC_KEEP, "the running job stays");
	gone = jobs_kept_gc_decide(v, n, 1e9, 0, 0);
	is_int(gone, 4, "retention 0: every ended job goes");
	is_int(v[3].gc, JOBS_GC_KEEP, "never the running one");
	gone = jobs_kept_gc_decide(v, n, 1000, -1, 25);
	is_int(gone, 3, "a 25-byte cap over 50 bytes: three go");
	is_int(v[0].gc, JOBS_GC_SIZE, "the oldest end first (100)");
	is_int(v[2].gc, JOBS_GC_SIZE, "then 200");
	is_int(v[1].gc, JOBS_GC_SIZE, "then 300");
	is_int(v[4].gc, JOBS_GC_KEEP, "the newest stays");
	is_int(kept_total(v, n), 20, "20 bytes left, under the cap");
	gone = jobs_kept_gc_decide(v, n, 1000, -1, 5);
	is_int(gone, 4, "a cap the running job alone exceeds: every ended job goes");
	is_int(v[3].gc, JOBS_GC_KEEP, "and the running one stays over the cap");
	v[2].ended_at = 100;
	gone = jobs_kept_gc_decide(v, n, 1000, -1, 45);
	is_int(v[0].gc, JOBS_GC_SIZE, "the same end: the lower id first");
	is_int(v[2].gc, JOBS_GC_KEEP, "and only it");
	is_int(gone, 1, "one goes");
	gone = jobs_kept_gc_decide(v, n, 1000, 850, 45);
	is_int(v[0].gc, JOBS_GC_AGE, "age first (two ended at 100)");
	is_int(v[2].gc, JOBS_GC_AGE, "both by age");
	is_int(gone, 2, "and the cap is then met");
	gone = jobs_kept_gc_decide(NULL, 0, 1000, 0, 1);
	is_int(gone, 0, "no kept logs: nothing to do");

	/* Random sets: the invariants hold whatever the mix. */
	srandom(7);
	for (round = 0; round < 2000 && !bad; round++) {
		struct jobs_kept r[12];
		size_t m = (size_t)(random() % 12) + 1, a, b;
		double now = 10000, ret = random() % 3 ? (double)(random() % 10000) : -1;
		uint64_t cap = random() % 3 ? (uint64_t)(random() % 600) : 0;

		for (a = 0; a < m; a++) {
			r[a].id = (int64_t)a + 1;
			r[a].ended = random() % 4 != 0;
			r[a].ended_at = r[a].ended ? (double)(random() % 10000) : 0;
			r[a].bytes = (uint64_t)(random() % 100);
		}
		gone = jobs_kept_gc_decide(r, m, now, ret, cap);
		for (a = 0, i = 0; a < m; a++) {
			i += r[a].gc != JOBS_GC_KEEP;
			if (!r[a].ended && r[a].gc != JOBS_GC_KEEP)
				bad = 1; /* a job that has not ended lost its logs */
			if (r[a].ended && ret >= 0 &&
			    (now - r[a].ended_at >= ret) != (r[a].gc == JOBS_GC_AGE))
				bad = 2; /* age decides exactly the AGE ones */
			for (b = 0; b < m; b++)
				if (r[a].gc == JOBS_GC_SIZE && r[b].ended &&
				    r[b].gc == JOBS_GC_KEEP && r[b].ended_at < r[a].ended_at)
					bad = 3; /* a newer end went before an older one */
		}
		if (i != gone)
			bad = 4;
		if (cap && kept_total(r, m) > cap) {
			for (a = 0; a < m; a++)
				if (r[a].ended && r[a].gc == JOBS_GC_KEEP)
					bad = 5; /* over the cap with an ended job still kept */
		}
		if (cap) {
			/* The last to go for size (the newest end) was needed to meet the cap. */
			struct jobs_kept *last = NULL;

			for (a = 0; a < m; a++)
				if (r[a].gc == JOBS_GC_SIZE &&
				    (!last || r[a].ended_at > last->ended_at ||
				     (r[a].ended_at == last->ended_at && r[a].id > last->id)))
					last = &r[a];
			if (last && kept_total(r, m) + last->bytes <= cap)
				bad = 6;
		}
	}
	is_int(bad, 0, "2000 random sets: the running kept, age exact, oldest first, cap met");
}

/* The upload decision, exhaustively over the cases that matter (grace 100 s, now 1000). */
static void test_files_gc(void)
{
	static const double ages[] = {0, 99, 100, 5000};
	int jobs, live;
	size_t a;

	for (jobs = 0; jobs <= 3; jobs++)
		for (live = 0; live <= jobs; live++)
			for (a = 0; a < ARRAY_SIZE(ages); a++) {
				struct jobs_files f = {1000 - ages[a], jobs, live};
				int want = !live && (jobs || ages[a] >= 100);

				ok(jobs_files_gc_decide(&f, 1000, 100) == want,
				   "%d job(s), %d live, uploaded %gs ago: %s", jobs, live, ages[a],
				   want ? "removed" : "kept");
			}
	/* The cases by name. */
	ok(!jobs_files_gc_decide(&(struct jobs_files){1000, 0, 0}, 1000, JOBS_FILES_GRACE_S),
	   "an upload no job names yet (its launch between upload and submit) stays");
	ok(jobs_files_gc_decide(&(struct jobs_files){0, 0, 0}, JOBS_FILES_GRACE_S,
	                        JOBS_FILES_GRACE_S),
	   "one no job named within the grace (a failed launch) goes");
	ok(!jobs_files_gc_decide(&(struct jobs_files){0, 3, 1}, 1e9, JOBS_FILES_GRACE_S),
	   "one a live job needs stays, however old (a job PENDING for days)");
	ok(jobs_files_gc_decide(&(struct jobs_files){1000, 3, 0}, 1000, JOBS_FILES_GRACE_S),
	   "one whose jobs have all ended goes at once");
}

/* Stopping the host: only the watcher and the keeper are signalled; a launch or cleanup
 * worker, which books and releases clusters, is left to end. */
static void test_host_stop_action(void)
{
	ok(jobs_host_stop_action(MJ_HOLDER_WATCH) == JOBS_STOP_SIGNAL,
	   "the gang watcher is told to stop");
	ok(jobs_host_stop_action(MJ_HOLDER_KEEP) == JOBS_STOP_SIGNAL,
	   "the log keeper is told to stop");
	ok(jobs_host_stop_action(MJ_HOLDER_CLEANUP) == JOBS_STOP_WAIT,
	   "a cleanup worker (it releases clusters) is waited for");
	ok(jobs_host_stop_action(1) == JOBS_STOP_WAIT, "job 1's launch worker is waited for");
	ok(jobs_host_stop_action(INT64_MAX) == JOBS_STOP_WAIT,
	   "any job's launch worker is waited for");
}

/* A recovery relaunches at once only when the node said the old copy ended. */
static void test_old_copy_gone(void)
{
	/* Each node status, and whether it is the job's end there. */
	static const struct {
		int status, ended;
	} statuses[] = {{-1, 0},
	                {JOB_INIT, 0},
	                {JOB_PENDING, 0},
	                {JOB_SETTING_UP, 0},
	                {JOB_RUNNING, 0},
	                {JOB_FAILED_DRIVER, 1},
	                {JOB_SUCCEEDED, 1},
	                {JOB_FAILED, 1},
	                {JOB_FAILED_SETUP, 1},
	                {JOB_CANCELLED, 1}};
	static const char *const errs[] = {"", NULL, "the node of rank 1 is unreachable",
	                                   "cluster skiff-job-3 cannot be opened"};
	struct mjob j;
	size_t s, e;
	int bad = 0, n = 0;

	memset(&j, 0, sizeof(j));
	for (s = 0; s < ARRAY_SIZE(statuses); s++)
		for (e = 0; e < ARRAY_SIZE(errs); e++) {
			int want;

			j.node_status = statuses[s].status;
			j.probe_error = (char *)errs[e];
			/* Every node asked (no error) and the job ended there. */
			want = statuses[s].ended && e < 2;
			n++;
			if (jobs_old_copy_gone(&j) != want) {
				bad++;
				ok(0, "node status %d, probe error '%s': got %d", j.node_status,
				   errs[e] ? errs[e] : "(null)", !want);
			}
		}
	ok(!bad, "%d combinations of a last probe told gone as the rule says", n);
	j.node_status = JOB_FAILED_DRIVER;
	j.probe_error = "";
	ok(jobs_old_copy_gone(&j), "the node answered that it lost the job: gone");
	j.node_status = JOB_FAILED;
	j.probe_error = "the node of rank 1 is unreachable";
	ok(!jobs_old_copy_gone(&j),
	   "a gang's rank failed while another rank's node was away: may still run");
	j.node_status = -1;
	j.probe_error = "the node of rank 0 is unreachable";
	ok(!jobs_old_copy_gone(&j), "a node that cannot be asked has not lost the job");
	j.probe_error = "";
	ok(!jobs_old_copy_gone(&j), "nor one not looked at yet");
}

static void test_backoff_over(void)
{
	struct mj_cleanup cu[3] = {{1, 7, "skiff-job-7", 0, 0},
	                           {2, 8, "skiff-job-8-0-1", -1, 0},
	                           {3, 9, "skiff-jobs", 42, 0}};
	struct mjob j;

	memset(&j, 0, sizeof(j));
	j.id = 5;
	j.next_try_at = 100;
	ok(!jobs_backoff_over(&j, NULL, 0, 99), "a backoff still running holds the job");
	ok(jobs_backoff_over(&j, NULL, 0, 100), "one that ran out lets it go");
	ok(jobs_backoff_over(&j, cu, 3, 100), "others' releases do not hold it");
	j.id = 7;
	ok(!jobs_backoff_over(&j, cu, 3, 1000), "its cluster still to be torn down holds it");
	j.id = 9;
	ok(!jobs_backoff_over(&j, cu, 3, 1000), "so does its pool job still to be stopped");
	j.id = 8;
	ok(jobs_backoff_over(&j, cu, 3, 1000),
	   "a release deferred until the relaunch is over (EAGER_NEXT_REGION) does not");
	j.id = 7;
	ok(!jobs_backoff_over(&j, cu, 1, 0) && jobs_backoff_over(&j, cu + 1, 2, 1000),
	   "and once the release is done, it may go");
}

static void member(struct jobs_group_member *m, int primary, int ended, double ended_at,
                   double delay_s)
{
	memset(m, 0, sizeof(*m));
	m->primary = primary;
	m->ended = ended;
	m->ended_at = ended_at;
	m->delay_s = delay_s;
}

static void test_group_decide(void)
{
	struct jobs_group_member v[4];
	static const double ats[] = {100, 200}, delays[] = {0, 30, 100},
	                    nows[] = {50, 150, 230, 400};
	int combos = 0, wrong = 0;
	unsigned c;

	member(&v[0], 1, 0, 0, 0);
	member(&v[1], 0, 0, 0, 30);
	ok(jobs_group_decide(v, 2, 1000) == 0 && !v[1].cancel, "a primary runs: nothing");
	member(&v[0], 1, 1, 100, 0);
	ok(jobs_group_decide(v, 2, 110) == 130 && !v[1].cancel,
	   "the primary ended at 100, a 30 s delay: due at 130, not before");
	ok(jobs_group_decide(v, 2, 130) == 0 && v[1].cancel, "  cancelled at 130");
	member(&v[2], 1, 1, 120, 0);
	ok(jobs_group_decide(v, 3, 140) == 150 && !v[1].cancel,
	   "the last primary's end counts (120 + 30)");
	member(&v[2], 1, 0, 0, 0);
	ok(jobs_group_decide(v, 3, 1e9) == 0 && !v[1].cancel, "  and one still running holds it");
	member(&v[0], 0, 0, 0, 0);
	member(&v[1], 0, 0, 0, 0);
	ok(jobs_group_decide(v, 2, 1e9) == 0 && !v[0].cancel && !v[1].cancel,
	   "no primary at all: never");
	member(&v[0], 1, 1, 100, 0);
	member(&v[1], 0, 1, 90, 0);
	member(&v[2], 0, 0, 0, 0);
	v[2].cancel_asked = 1;
	ok(jobs_group_decide(v, 3, 1e9) == 0 && !v[1].cancel && !v[2].cancel,
	   "an ended or already cancelled auxiliary is left alone");
	member(&v[0], 1, 1, 100, 0);
	member(&v[1], 0, 0, 0, 10);
	member(&v[2], 0, 0, 0, 60);
	member(&v[3], 0, 0, 0, 0);
	ok(jobs_group_decide(v, 4, 115) == 160 && v[1].cancel && !v[2].cancel && v[3].cancel,
	   "per-task delays: each at its own time, the next one reported");
	ok(jobs_group_decide(v, 0, 0) == 0, "an empty group");

	/*
	 * Every combination of three members (primary, ended, cancel asked, when it ended,
	 * its delay) at several times, against the rule as the header states it.
	 */
	for (c = 0; c < (1u << 9) * 2 * 2 * 2 * 3 * 3 * 3; c++) {
		unsigned x = c;
		size_t k, n = 3, nt;
		double end = 0, next = 0, got;
		int all_ended = 1, primaries = 0;

		for (k = 0; k < n; k++) {
			member(&v[k], x & 1, (x >> 1) & 1, 0, 0);
			v[k].cancel_asked = (x >> 2) & 1;
			x >>= 3;
		}
		for (k = 0; k < n; k++) {
			v[k].ended_at = v[k].ended ? ats[x % 2] : 0;
			x /= 2;
		}
		for (k = 0; k < n; k++) {
			v[k].delay_s = delays[x % 3];
			x /= 3;
		}
		for (nt = 0; nt < ARRAY_SIZE(nows); nt++) {
			double now = nows[nt];

			combos++;
			got = jobs_group_decide(v, n, now);
			end = next = 0;
			all_ended = 1;
			primaries = 0;
			for (k = 0; k < n; k++) {
				if (!v[k].primary)
					continue;
				primaries++;
				all_ended &= v[k].ended;
				if (v[k].ended_at > end)
					end = v[k].ended_at;
			}
			for (k = 0; k < n; k++) {
				int want = 0;

				if (primaries && all_ended && !v[k].primary && !v[k].ended &&
				    !v[k].cancel_asked) {
					if (end + v[k].delay_s <= now)
						want = 1;
					else if (!next || end + v[k].delay_s < next)
						next = end + v[k].delay_s;
				}
				if (want != v[k].cancel)
					wrong++;
			}
			if (got != next)
				wrong++;
		}
	}
	ok(combos > 10000, "every combination tried (%d)", combos);
	is_int(wrong, 0, "  each decided as the rule says");
}

int main(void)
{
	plan_run(test_cut_off);
	plan_run(test_task_ids);
	plan_run(test_codes_summary);
	plan_run(test_gang);
	plan_run(test_gang_away);
	plan_run(test_backoff);
	plan_run(test_launch_decide);
	plan_run(test_probe_decide);
	plan_run(test_old_copy_gone);
	plan_run(test_backoff_over);
	plan_run(test_run_ended);
	plan_run(test_kept_gc);
	plan_run(test_files_gc);
	plan_run(test_host_stop_action);
	plan_run(test_group_decide);
	return done_testing();
}
