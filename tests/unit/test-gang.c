/*
 * A gang's status from its ranks', over every combination; rank codes; rank id arrays;
 * how many nodes bootstrap at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/gang.h"
#include "state/node.h"
#include "tests/unit/harness.h"

/* The rule written out again, independently of gang_status(). */
static int expected(const int *s, int n)
{
	int i, any_running = 0, lowest = 99, unknown = 0, cancelled = 0;

	if (!n)
		return -1;
	for (i = 0; i < n; i++)
		if (s[i] == JOB_FAILED_SETUP)
			return JOB_FAILED_SETUP;
	for (i = 0; i < n; i++)
		if (s[i] == JOB_FAILED)
			return JOB_FAILED;
	for (i = 0; i < n; i++)
		if (s[i] == JOB_FAILED_DRIVER)
			return JOB_FAILED_DRIVER;
	for (i = 0; i < n; i++) {
		if (s[i] == -1)
			unknown = 1;
		else if (s[i] == JOB_CANCELLED)
			cancelled = 1;
		else if (s[i] <= JOB_RUNNING) {
			any_running = 1;
			if (s[i] < lowest)
				lowest = s[i];
		}
	}
	if (any_running)
		return lowest;
	if (cancelled)
		return unknown ? JOB_FAILED_DRIVER : JOB_CANCELLED;
	return unknown ? -1 : JOB_SUCCEEDED;
}

static void test_every_combination(void)
{
	int s[4], n, total = 0, bad = 0;
	long c, combos;

	for (n = 0; n <= 4; n++) {
		combos = 1;
		for (int i = 0; i < n; i++)
			combos *= JOB_N_STATUS + 1;
		for (c = 0; c < combos; c++) {
			long x = c;

			for (int i = 0; i < n; i++) {
				s[i] = (int)(x % (JOB_N_STATUS + 1)) - 1; /* -1 .. CANCELLED */
				x /= JOB_N_STATUS + 1;
			}
			total++;
			if (gang_status(s, n) != expected(s, n)) {
				if (bad++ < 10)
					ok(0, "n %d: [%d %d %d %d] gives %d, want %d", n, s[0],
					   s[1], s[2], s[3], gang_status(s, n), expected(s, n));
			}
		}
	}
	ok(!bad, "%d combinations of up to 4 ranks, unknown ranks included", total);
}

static void test_the_cases_that_matter(void)
{
	int a[] = {JOB_RUNNING, JOB_CANCELLED};
	int b[] = {JOB_SUCCEEDED, JOB_FAILED, JOB_RUNNING};
	int c[] = {JOB_CANCELLED, -1};
	int d[] = {JOB_SUCCEEDED, -1};
	int e[] = {JOB_SUCCEEDED, JOB_SUCCEEDED};
	int f[] = {JOB_PENDING, JOB_RUNNING, JOB_SUCCEEDED};

	is_int(gang_status(a, 2), JOB_RUNNING, "a cancel under way: RUNNING until every rank ends");
	is_int(gang_status(b, 3), JOB_FAILED, "the first failure decides at once");
	is_int(gang_status(c, 2), JOB_FAILED_DRIVER, "cancelled, one rank unknown: FAILED_DRIVER");
	is_int(gang_status(d, 2), -1, "succeeded, one rank unknown: unknown");
	is_int(gang_status(e, 2), JOB_SUCCEEDED, "all succeeded");
	is_int(gang_status(f, 3), JOB_PENDING, "the least advanced rank");
	is_int(gang_status(NULL, 0), -1, "no rank at all is never judged");
}

static void test_rank_codes(void)
{
	is_int(gang_rank_code(JOB_FAILED, JOB_CANCELLED, -1), 137, "stopped for another: 137");
	is_int(gang_rank_code(JOB_FAILED, JOB_FAILED, 5), 5, "the failed rank: its code");
	is_int(gang_rank_code(JOB_CANCELLED, JOB_CANCELLED, 143), 143, "a cancel: its own code");
	is_int(gang_rank_code(JOB_RUNNING, JOB_RUNNING, -1), -1, "running: none yet");
}

static void test_ids(void)
{
	int64_t *v;

	is_int(gang_parse_ids("", &v), 0, "no rank");
	ok(!v, "and no array");
	is_int(gang_parse_ids("17,3,5", &v), 3, "three ranks");
	ok(v && v[0] == 17 && v[1] == 3 && v[2] == 5, "in rank order");
	free(v);
	is_int(gang_parse_ids("4,,9", &v), 3, "a rank never submitted");
	ok(v && v[1] == 0, "is 0");
	free(v);
	is_int(gang_parse_ids("1,x", &v), -EINVAL, "junk is refused");
	is_int(gang_parse_ids("-1", &v), -EINVAL, "a negative id is refused");
	{
		char big[300 * 8];
		size_t len = 0;
		int i;

		for (i = 0; i < 300; i++)
			len += (size_t)snprintf(big + len, sizeof(big) - len, "%s%d", i ? "," : "",
			                        i + 1);
		is_int(gang_parse_ids(big, &v), 300, "300 ranks: no limit at 64");
		ok(v && v[299] == 300, "the last one too");
		free(v);
	}
}

/*
 * The slots against the rule written out: every node's held descriptors and the starting
 * ones of the slots fit, and one more slot would not (or all n run at once).
 */
static void test_boot_slots(void)
{
	static const uint64_t limits[] = {0, 1, 63, 64, 65, 70, 256, 1024, 4096, 1 << 20};
	static const size_t ns[] = {0, 1, 2, 10, 60, 61, 62, 64, 100, 1000, 100000};
	size_t a, b, bad = 0;

	for (a = 0; a < sizeof(limits) / sizeof(*limits); a++)
		for (b = 0; b < sizeof(ns) / sizeof(*ns); b++) {
			uint64_t lim = limits[a], n = ns[b];
			size_t k = gang_boot_slots(lim, (size_t)n);
			uint64_t use = GANG_FDS_RESERVE + n * GANG_FDS_HELD + k * GANG_FDS_STARTING;

			uint64_t more = use + GANG_FDS_STARTING; /* one more slot */

			if (k > n || (k && use > lim) || (k < n && more <= lim) || (!n && k))
				bad++;
		}
	is_int((int)bad, 0, "every slot count fits its limit, and one more would not");
	is_int((int)gang_boot_slots(256, 100), 0, "100 nodes in 256 descriptors: none");
	is_int((int)gang_boot_slots(256, 60), 2, "60 nodes in 256: two at a time");
	is_int((int)gang_boot_slots(1 << 20, 1000), 1000, "1,000 nodes in 2^20: all at once");
	is_int((int)gang_boot_slots(4096, 1000), 172, "1,000 nodes in 4,096: 172 at a time");
	is_int((int)gang_boot_slots(1024, 300), 10, "300 in 1,024: 10 at a time");
	is_int((int)gang_boot_slots(1024, 320), 0, "320 in 1,024: none (1,024 held)");
	is_int((int)gang_boot_slots(1024, 100), 100, "100 in 1,024: all");
}

int main(void)
{
	plan_run(test_every_combination);
	plan_run(test_the_cases_that_matter);
	plan_run(test_rank_codes);
	plan_run(test_ids);
	plan_run(test_boot_slots);
	return done_testing();
}
