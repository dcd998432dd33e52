#include "bootstrap/launch/gang.h"

#include <errno.h>
#include <stdlib.h>

#include "lib/util.h"
#include "state/node.h"
#include "lib/banned.h"

int gang_status(const int *status, int n)
{
	static const int failures[] = {JOB_FAILED_SETUP, JOB_FAILED, JOB_FAILED_DRIVER};
	int i, k, lowest = -1, unknown = 0, cancelled = 0;

	if (n <= 0)
		return -1;
	for (k = 0; k < (int)ARRAY_SIZE(failures); k++)
		for (i = 0; i < n; i++)
			if (status[i] == failures[k])
				return failures[k];
	for (i = 0; i < n; i++) {
		if (status[i] < 0)
			unknown++;
		else if (status[i] == JOB_CANCELLED)
			cancelled++;
		else if (!job_status_terminal(status[i]) && (lowest < 0 || status[i] < lowest))
			lowest = status[i];
	}
	if (lowest >= 0)
		return lowest;
	if (cancelled)
		return unknown ? JOB_FAILED_DRIVER : JOB_CANCELLED;
	return unknown ? -1 : JOB_SUCCEEDED;
}

int gang_rank_code(int gang, int status, int code)
{
	int failed = gang == JOB_FAILED || gang == JOB_FAILED_SETUP || gang == JOB_FAILED_DRIVER;

	if (failed && status == JOB_CANCELLED)
		return 137; /* stopped because another rank failed */
	return code >= 0 ? code : -1;
}

int gang_parse_ids(const char *text, int64_t **ids)
{
	size_t n = 0, alloc = 0;
	int64_t *v = NULL;
	const char *p = text;

	*ids = NULL;
	if (!*text)
		return 0;
	for (;;) {
		char *end;
		long long id = 0;

		if (*p != ',' && *p) {
			if (*p < '0' || *p > '9')
				goto bad;
			id = strtoll(p, &end, 10);
			if (id < 0)
				goto bad;
			p = end;
		}
		v = xgrow(v, n, &alloc, sizeof(*v));
		v[n++] = id;
		if (!*p)
			break;
		if (*p != ',' || n >= (size_t)INT32_MAX)
			goto bad;
		p++;
	}
	*ids = v;
	return (int)n;
bad:
	free(v);
	return -EINVAL;
}

size_t gang_boot_slots(uint64_t nofile, size_t n)
{
	uint64_t need = GANG_FDS_RESERVE + (uint64_t)n * GANG_FDS_HELD, room;

	if (!n)
		return 0;
	if (nofile < need)
		return 0;
	room = (nofile - need) / GANG_FDS_STARTING;
	return room >= n ? n : (size_t)room;
}
