/* The launcher daemons' decisions (supervisor/jobs/policy.h). */
#include "supervisor/jobs/policy.h"
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

int main(void)
{
	plan_run(test_gang);
	return done_testing();
}
