/*
 * `skiff check` without a FILE: can each infra be used from here? Each infra's ops probe
 * (in its own file) looks at what it needs, a command that answers or a file that parses,
 * with infra_probe_run() and infra_probe_set(); infra_probe_judge() says what the facts
 * mean; infra_probe_specs() runs the probes at once, a thread each, so that a dead API
 * server costs INFRA_PROBE_TIMEOUT_MS and never a hang. Nothing here prints.
 */
#include "bootstrap/infra/infra.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/infra/infra_internal.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

/* What a probe keeps of a command's output: a version, a context name, its error. */
#define PROBE_OUT_MAX ((size_t)64 << 10)

void infra_probe_init(struct infra_probe *p)
{
	size_t t;

	memset(p, 0, sizeof(*p));
	buf_init(&p->said, 0);
	for (t = 0; t < INFRA_INV_TABLES; t++)
		buf_init(&p->inv[t].said, 0);
}

static void inv_release(struct infra_inv *inv)
{
	size_t i, c;

	for (i = 0; i < inv->nrows; i++) {
		for (c = 0; c < inv->ncols; c++)
			free(inv->rows[i].cells[c]);
		free(inv->rows[i].cells);
		free(inv->rows[i].node_key);
		free(inv->rows[i].ip);
	}
	free(inv->rows);
	buf_release(&inv->said);
}

void infra_probe_release(struct infra_probe *p)
{
	size_t t;

	if (!p)
		return;
	free(p->spec);
	free(p->subject);
	buf_release(&p->said);
	yerr_release(&p->errs);
	for (t = 0; t < INFRA_INV_TABLES; t++)
		inv_release(&p->inv[t]);
	infra_probe_init(p);
}

struct infra_inv *infra_inv_table(struct infra_probe *p, const char *of, const char *const *cols,
                                  size_t ncols)
{
	size_t t;

	for (t = 0; t < INFRA_INV_TABLES; t++)
		if (!p->inv[t].of)
			break;
	if (t == INFRA_INV_TABLES) {
		/* The ops' probes list a fixed number of tables: this is a bug of theirs. */
		error("BUG: an infra's inventory has more than %d tables", INFRA_INV_TABLES);
		abort();
	}
	p->inv[t].of = of;
	p->inv[t].cols = cols;
	p->inv[t].ncols = ncols;
	return &p->inv[t];
}

int infra_inv_add(struct infra_inv *inv, const char *node_key, const char *ip, int port,
                  const char *const *cells)
{
	struct infra_inv_row *row;
	size_t c;

	if (inv->nrows == INFRA_INV_ROWS_MAX) {
		if (!inv->said.len)
			buf_addf(&inv->said, "more than %d %s: the list is cut", INFRA_INV_ROWS_MAX,
			         inv->of);
		return -ENOBUFS;
	}
	inv->rows = xgrow(inv->rows, inv->nrows, &inv->alloc, sizeof(*inv->rows));
	row = &inv->rows[inv->nrows++];
	row->cells = xcalloc(inv->ncols ? inv->ncols : 1, sizeof(*row->cells));
	for (c = 0; c < inv->ncols; c++)
		row->cells[c] = xstrdup(cells[c] ? cells[c] : "");
	row->node_key = node_key ? xstrdup(node_key) : NULL;
	row->ip = ip ? xstrdup(ip) : NULL;
	row->port = port;
	return 0;
}

size_t infra_inv_fields(char *line, char sep, char **f, size_t max)
{
	size_t n = 0;

	while (n < max) {
		char *end = n + 1 < max ? strchr(line, sep) : NULL;

		f[n++] = line;
		if (!end)
			break;
		*end = '\0';
		line = end + 1;
	}
	for (size_t i = n; i < max; i++)
		f[i] = "";
	return n;
}

int infra_inv_run(struct infra_inv *inv, const char *subject, char *const *argv, int64_t deadline,
                  struct buf *out)
{
	struct infra_probe scratch;
	int r;

	infra_probe_init(&scratch);
	r = infra_probe_run(&scratch, subject, argv, deadline, out);
	if (r) {
		buf_reset(&inv->said);
		infra_probe_judge(&scratch, &inv->said);
	}
	infra_probe_release(&scratch);
	return r;
}

void infra_probe_set(struct infra_probe *p, enum infra_probe_outcome outcome, const char *subject)
{
	p->outcome = outcome;
	free(p->subject);
	p->subject = subject ? xstrdup(subject) : NULL;
}

/* text[0..len) as one line: control bytes as spaces, cut (on a UTF-8 boundary) with "...". */
static void say_line(struct buf *said, const char *text, size_t len)
{
	size_t i, n = len;

	buf_reset(said);
	if (n > INFRA_PROBE_LINE_MAX) {
		n = INFRA_PROBE_LINE_MAX;
		while (n && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];

		buf_addch(said, c < 0x20 || c == 0x7f ? ' ' : (char)c);
	}
	if (n < len)
		buf_adds(said, "...");
}

void infra_probe_say(struct infra_probe *p, const char *fmt, ...)
{
	struct buf b = BUF_INIT(0);
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	say_line(&p->said, b.p, b.len);
	buf_release(&b);
}

/* The last non-empty line of b (b is trimmed), into said; 0 if there is none. */
static int say_last_line(struct buf *said, struct buf *b)
{
	const char *line;

	buf_rtrim(b);
	if (!b->len)
		return 0;
	line = strrchr(b->p, '\n');
	line = line ? line + 1 : b->p;
	say_line(said, line, strlen(line));
	return 1;
}

int infra_probe_run(struct infra_probe *p, const char *subject, char *const *argv, int64_t deadline,
                    struct buf *out)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf dummy = BUF_INIT(PROBE_OUT_MAX), err = BUF_INIT(PROBE_OUT_MAX);
	struct spawn_io io = {0};
	int64_t left = deadline - now_ms();
	int status = 0, r;

	infra_probe_set(p, INFRA_PROBE_OK, subject);
	buf_reset(&p->said);
	if (left <= 0) {
		/* The commands before it took the probe's time. */
		p->outcome = INFRA_PROBE_TIMEOUT;
		p->timeout_ms = INFRA_PROBE_TIMEOUT_MS;
		return -1;
	}
	o.argv = argv;
	/* What it started dies with it on a timeout, and with us on Ctrl-C. */
	o.pgrp = SPAWN_PGRP_NEW;
	o.death_sig = SIGKILL;
	io.out = out ? out : &dummy;
	io.err = &err;
	io.timeout_ms = left > INFRA_PROBE_TIMEOUT_MS ? INFRA_PROBE_TIMEOUT_MS : (int)left;
	r = spawn_run(&o, &io, &status);
	if (r == -ENOENT) {
		p->outcome = INFRA_PROBE_MISSING;
	} else if (r == -ETIMEDOUT) {
		p->outcome = INFRA_PROBE_TIMEOUT;
		p->timeout_ms = io.timeout_ms;
	} else if (r && r != -ENOBUFS) {
		p->outcome = INFRA_PROBE_CANNOT_RUN;
		p->code = -r;
	} else if (status_to_code(status)) {
		/* -ENOBUFS (a flood of output) ends here too: what it said is cut. */
		p->outcome = INFRA_PROBE_EXIT;
		p->code = status_to_code(status);
		if (!say_last_line(&p->said, &err) && io.out)
			say_last_line(&p->said, io.out);
	}
	buf_release(&dummy);
	buf_release(&err);
	return p->outcome == INFRA_PROBE_OK ? 0 : -1;
}

int infra_probe_judge(const struct infra_probe *p, struct buf *reason)
{
	const char *subject = p->subject ? p->subject : "?";
	const char *said = p->said.len ? p->said.p : NULL;
	int prog = (int)strcspn(subject, " ");
	size_t n = p->errs.nerrors;

	switch (p->outcome) {
	case INFRA_PROBE_OK: buf_adds(reason, said ? said : "nothing to check"); return 1;
	case INFRA_PROBE_MISSING:
		if (p->is_file)
			buf_addf(reason, "no file '%s'", subject);
		else
			buf_addf(reason, "'%.*s' is not in PATH", prog, subject);
		if (said)
			buf_addf(reason, "; %s", said);
		break;
	case INFRA_PROBE_CANNOT_RUN:
		buf_addf(reason, "cannot %s '%s': %s", p->is_file ? "read" : "run", subject,
		         strerror(p->code));
		break;
	case INFRA_PROBE_EXIT:
		buf_addf(reason, "'%s' failed (exit %d)%s%s", subject, p->code, said ? ": " : "",
		         said ? said : "");
		break;
	case INFRA_PROBE_TIMEOUT:
		buf_addf(reason, "'%s' did not answer within %d s", subject,
		         (p->timeout_ms + 999) / 1000);
		break;
	case INFRA_PROBE_INVALID:
		buf_addf(reason, "'%s' is not valid (%zu error%s)", subject, n, n == 1 ? "" : "s");
		break;
	case INFRA_PROBE_UNUSABLE: buf_adds(reason, said ? said : "not usable"); break;
	default: buf_adds(reason, "not usable"); break;
	}
	return 0;
}

/* One infra's probe, in a thread of its own. */
struct probe_job {
	struct infra inf;
	int parsed, started;
	int64_t deadline;
	struct infra_probe *out;
	pthread_t th;
};

static void *probe_main(void *arg)
{
	struct probe_job *job = arg;

	job->inf.ops->probe(&job->inf, job->deadline, job->out);
	return NULL;
}

int infra_probe_specs(const char *const *specs, size_t n, struct infra_probe *out)
{
	struct probe_job *jobs = xcalloc(n ? n : 1, sizeof(*jobs));
	struct buf why = BUF_INIT(0);
	int64_t deadline;
	size_t i;
	int r = 0;

	for (i = 0; i < n; i++)
		infra_probe_init(&out[i]);
	for (i = 0; i < n && !r; i++) {
		buf_reset(&why);
		r = infra_parse_quiet(specs[i], &jobs[i].inf, &why);
		if (r == -ENOTSUP) {
			/* A cloud: skiff provisions none, so it is never usable here. */
			out[i].spec = xstrdup(specs[i]);
			out[i].outcome = INFRA_PROBE_UNUSABLE;
			say_line(&out[i].said, why.p, why.len);
			r = 0;
		} else if (!r) {
			jobs[i].parsed = 1;
			out[i].spec = xstrdup(jobs[i].inf.spec);
		}
	}
	if (r) {
		for (i = 0; i < n; i++)
			infra_probe_release(&out[i]);
		if (n)
			say_line(&out[0].said, why.p, why.len);
		r = -EINVAL;
		goto out;
	}
	/* Found once here, before the threads look. */
	skiff_home();
	deadline = now_ms() + INFRA_PROBE_TIMEOUT_MS;
	for (i = 0; i < n; i++) {
		if (!jobs[i].parsed || !jobs[i].inf.ops->probe)
			continue;
		jobs[i].deadline = deadline;
		jobs[i].out = &out[i];
		jobs[i].started = !pthread_create(&jobs[i].th, NULL, probe_main, &jobs[i]);
		if (!jobs[i].started)
			probe_main(&jobs[i]); /* no thread: still bounded by the deadline */
	}
	for (i = 0; i < n; i++)
		if (jobs[i].started)
			pthread_join(jobs[i].th, NULL);
out:
	for (i = 0; i < n; i++)
		if (jobs[i].parsed)
			infra_release(&jobs[i].inf);
	free(jobs);
	buf_release(&why);
	return r;
}
