#include "supervisor/jobs/policy.h"

#include <string.h>

#include "lib/banned.h"

int gang_end_stops_others(const char *status)
{
	return !status || !*status || (strcmp(status, "SUCCEEDED") && strcmp(status, "CANCELLED"));
}

int64_t gang_retry_delay_ms(int tries)
{
	int64_t d = 5000;

	while (tries-- > 0 && d < 30000)
		d *= 2;
	return d > 30000 ? 30000 : d;
}
