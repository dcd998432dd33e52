/*
 * SkyPilot's prefixes of a gang rank's log lines (logprefix.h).
 */
#include <string.h>

#include "supervisor/logprefix.h"
#include "lib/banned.h"

int logprefix_format(struct buf *out, int rank, long pid, const char *ip)
{
	int r;

	if (rank == 0)
		r = buf_adds(out, "(head, rank=0");
	else
		r = buf_addf(out, "(worker%d, rank=%d", rank, rank);
	if (!r && pid > 0)
		r = buf_addf(out, ", pid=%ld", pid);
	if (!r && rank != 0 && ip && *ip)
		r = buf_addf(out, ", ip=%s", ip);
	if (!r)
		r = buf_adds(out, ") ");
	return r;
}

int logprefix_lines(struct buf *out, const char *in, size_t n, const char *prefix, size_t plen,
                    int *bol)
{
	while (n) {
		const char *nl = memchr(in, '\n', n);
		size_t len = nl ? (size_t)(nl - in) + 1 : n;
		int r;

		if (*bol && (r = buf_add(out, prefix, plen)))
			return r;
		if ((r = buf_add(out, in, len)))
			return r;
		*bol = nl != NULL;
		in += len;
		n -= len;
	}
	return 0;
}
