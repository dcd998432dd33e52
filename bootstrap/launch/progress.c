#include "bootstrap/launch/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

void step_begin(struct step *s, const char *what)
{
	s->t0 = now_ms();
	xsnprintf(s->what, sizeof(s->what), "%.63s", what);
	s->live = isatty(2) && log_get_level() >= LOG_INFO;
	if (s->live)
		fprintf(stderr, "  %-10s ...", s->what);
}

void step_done(struct step *s, const char *fmt, ...)
{
	char detail[256];
	va_list ap;

	if (log_get_level() < LOG_INFO)
		return;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s  %-10s %-52s %6.2fs\n", s->live ? "\r\033[K" : "", s->what, detail,
	        (double)(now_ms() - s->t0) / 1000.0);
}

void step_fail(struct step *s)
{
	if (s->live)
		fprintf(stderr, "\r\033[K");
}
